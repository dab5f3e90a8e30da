// a stack of PyTorch nn.TransformerEncoderLayer (batch_first, post-LN, ReLU FFN,
// LayerNorm eps 1e-5, no final norm), weights borrowed from a tensor_source.
// Runs on the valid length only: upstream's key-padding mask hides padded keys,
// and padded queries never reach a valid output, so n valid rows suffice.
#pragma once

#include "backend/backend.h"
#include "format/tensor.h"
#include "model/layers.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace mb {

struct transformer_hparams {
    int64_t n_embd  = 0;    // model width d_model
    int64_t n_head  = 0;    // attention heads (head dim = n_embd / n_head)
    int64_t n_ff    = 0;    // FFN width (dim_feedforward, 2048 upstream)
    int64_t n_layer = 0;    // number of encoder layers
};

// one encoder layer; every array is in the weight buffers of the owning network
struct transformer_layer {
    bweight           in_proj_weight;     // [3·n_embd, n_embd] rows q | k | v (F32, BF16 or Q8_0)
    bptr<const float> in_proj_bias;       // [3·n_embd]
    bweight           out_proj_weight;    // [n_embd, n_embd]
    bptr<const float> out_proj_bias;      // [n_embd]
    bweight           linear1_weight;     // [n_ff, n_embd]
    bptr<const float> linear1_bias;       // [n_ff]
    bweight           linear2_weight;     // [n_embd, n_ff]
    bptr<const float> linear2_bias;       // [n_embd]
    bptr<const float> norm1_weight;       // [n_embd]
    bptr<const float> norm1_bias;         // [n_embd]
    bptr<const float> norm2_weight;       // [n_embd]
    bptr<const float> norm2_bias;         // [n_embd]
};

// activations of one forward pass, sized once for at most n_max rows (all lanes together)
struct transformer_state {
    int64_t                         n_max = 0;  // rows the buffers hold (lanes × rows per lane)
    bptr<float>                     qkv;        // [n_max, 3·n_embd]
    bptr<float>                     att;        // [n_max, n_embd] attention heads, concatenated
    bptr<float>                     proj;       // [n_max, n_embd] out_proj / linear2 output
    bptr<float>                     ff;         // [n_max, n_ff]
    std::unique_ptr<backend_buffer> mem;        // holds the arrays above

    transformer_state() = default;
    transformer_state(backend & be, const transformer_hparams & hp, int64_t n_max);
};

struct transformer {
    transformer_hparams            hp;
    std::vector<transformer_layer> layers;

    // reads `<prefix>layers.<il>.…` for il = 0, 1, … until absent (at least one layer);
    // sizes come from the tensor shapes, n_head from the caller (metadata);
    // throws mb::error (incompatible_model) naming the tensor on any missing or ill-shaped tensor
    static transformer load(weight_loader & wl, const std::string & prefix, int64_t n_head);

    // x[n, n_embd] ← encoder stack(x), in place (no key padding mask: callers run on the
    // valid rows); for n_batch lanes x is [n_batch, n, n_embd] and attention stays inside a lane;
    // n·n_batch must be in [1, st.n_max]
    void forward(backend & be, bptr<float> x, int64_t n, transformer_state & st, int64_t n_batch = 1) const;
};

} // namespace mb
