// upstream DoubleCondDecoder (vqvae/neural_modules/encdec_double_cond.py) with its
// Resnet1D stages, nearest ×2 upsampling and token masks, cond_fusion_last_layer = False.
// Used twice: the pose VQ decoder ("decoder.") and the root planner's conv output
// ("_conv_output."). Every size comes from the tensor shapes; only the dilation
// growth rate (3 upstream) is not visible in the weights and comes from the caller.
#pragma once

#include "backend/backend.h"
#include "format/tensor.h"
#include "model/layers.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace mb {

// the kernel of every k3 conv (the resnet blocks' second conv is k1); state scratch is sized by it
inline constexpr int64_t k_conv_kernel = 3;

struct cond_decoder_hparams {
    int64_t c_in            = 0;    // input channels per token position (code_dim / E_root)
    int64_t width           = 0;    // hidden channels (512 upstream)
    int64_t c_out           = 0;    // output channels per frame (413 / 5)
    int64_t down_t          = 0;    // upsampling stages; frames per position = 2^down_t
    int64_t depth           = 0;    // ResConv1DBlocks per Resnet1D
    int64_t dilation_growth = 0;    // block il of a Resnet1D has dilation growth^(depth-1-il)
    int64_t ext_dim         = 0;    // external condition width per frame (0 = no external blocks)
    int64_t tgt_dim         = 0;    // target condition width per frame (0 = no target blocks)

    int64_t frames_per_pos() const { return int64_t(1) << down_t; }
};

struct cond_decoder_stage {
    // model.<2+i>.0.model.<il>, applied in order: conv1 k3 (padding = dilation), conv2 k1
    std::vector<backend::res_block> res;
    conv_weights                   conv;    // model.<2+i>.2, k3, after the ×2 upsample
    linear_weights                 ext;     // external_cond_blocks.<2i>: [width, n·ext_dim + width]
    linear_weights                 tgt;     // target_cond_blocks.<2i>: [width/n, tgt_dim], n = 2^(down_t-i)
};

// activations, sized once for at most max_pos token positions (max_pos·2^down_t frames) of all
// lanes together
struct cond_decoder_state {
    int64_t                         max_pos = 0;    // lanes × positions per lane
    bptr<float>                     h;      // [width, frames] NCW hidden state
    bptr<float>                     t0;     // [width, frames] scratch
    bptr<float>                     t1;     // [width, frames] scratch
    bptr<float>                     rows;   // [frames, width + ext_dim] row-major scratch (≥ [P, width + n·ext_dim])
    bptr<float>                     tc;     // [frames, width] target condition embeddings
    std::unique_ptr<backend_buffer> mem;    // holds the arrays above

    cond_decoder_state() = default;
    cond_decoder_state(backend & be, const cond_decoder_hparams & hp, int64_t max_pos);
};

struct cond_decoder {
    cond_decoder_hparams            hp;
    conv_weights                    conv_in;    // model.0: c_in → width, k3
    std::vector<cond_decoder_stage> stages;     // down_t entries
    conv_weights                    conv_mid;   // model.<2+down_t>: width → width, k3 (ReLU after)
    conv_weights                    conv_out;   // model.<4+down_t>: width → c_out, k3

    // reads `<prefix>model.*`, `<prefix>external_cond_blocks.*`, `<prefix>target_cond_blocks.*`;
    // throws mb::error (incompatible_model) naming the tensor on anything missing or inconsistent
    static cond_decoder load(weight_loader & wl, const std::string & prefix, int64_t dilation_growth);

    // x[n_pos, c_in] position-major (upstream's decoder input transposed);
    // ext[n_pos·F, ext_dim] and tgt[n_pos·F, tgt_dim] per frame (F = 2^down_t; null when the
    // decoder has no such blocks); has_tgt[n_pos·F] nonzero = replace the hidden state by the
    // target embedding (null = none); positions ≥ n_valid are masked exactly like upstream's
    // token_mask (computing on n_pos = n_valid gives the same valid frames);
    // y[n_pos·F, c_out] frame-major (upstream's output transposed); frames ≥ n_valid·F are 0.
    // Every array is backend memory. n_batch lanes: every array holds n_batch lanes back to back
    // (x [n_batch, n_pos, c_in], …, y [n_batch, n_pos·F, c_out]), each computed on its own
    void forward(backend & be, bptr<const float> x, int64_t n_pos, int64_t n_valid, bptr<const float> ext,
                 bptr<const float> tgt, bptr<const uint8_t> has_tgt, bptr<float> y, cond_decoder_state & st,
                 int64_t n_batch = 1) const;
};

} // namespace mb
