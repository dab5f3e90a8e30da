// small building blocks shared by the networks: borrowed Linear / Conv1d weights
// with their loaders, upstream's FCBlock ("mlp"), and elementwise activations
#pragma once

#include "backend/backend.h"
#include "format/tensor.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mb {

struct linear_weights {
    const float * weight = nullptr;     // [n_out, n_in]
    const float * bias   = nullptr;     // [n_out]
    int64_t       n_in = 0, n_out = 0;
};

struct conv_weights {
    const float * weight = nullptr;     // [c_out, c_in, k]
    const float * bias   = nullptr;     // [c_out]
    int64_t       c_in = 0, c_out = 0, k = 0;
};

// `<name>.weight` [n_out, n_in] and `<name>.bias` [n_out]; a size ≤ 0 is taken from the tensor;
// throws std::runtime_error naming the tensor on a missing tensor or wrong shape
linear_weights load_linear(const tensor_source & src, const std::string & name, int64_t n_out, int64_t n_in);

// `<name>.weight` [c_out, c_in, k] and `<name>.bias` [c_out]; c_out / c_in ≤ 0 are taken from the tensor
conv_weights load_conv(const tensor_source & src, const std::string & name, int64_t c_out, int64_t c_in, int64_t k);

// upstream FCBlock "mlp": h = LeakyReLU_0.01(fc_layers.i(h)) for each i, then forward_projection
struct fc_block_weights {
    std::vector<linear_weights> fc;     // fc_layers.<i>: n_in → width, then width → width
    linear_weights              out;    // forward_projection: width → n_out

    int64_t n_in() const { return fc.empty() ? 0 : fc[0].n_in; }
    int64_t width() const { return out.n_in; }
    int64_t n_out() const { return out.n_out; }
};

// reads `<prefix>fc_layers.<i>` for i = 0, 1, … until absent, and `<prefix>forward_projection`;
// n_in / n_out ≤ 0 are taken from the tensors
fc_block_weights load_fc_block(const tensor_source & src, const std::string & prefix, int64_t n_in, int64_t n_out);

// y[n, n_out] ← FCBlock(x[n, n_in]); tmp_a and tmp_b hold n·width floats each; y may alias neither
void fc_block_forward(backend & be, const fc_block_weights & w, const float * x, int64_t n, float * tmp_a,
                      float * tmp_b, float * y);

void relu_inplace(float * x, int64_t n);
void leaky_relu_inplace(float * x, int64_t n, float slope);     // PyTorch LeakyReLU: x < 0 ? slope·x : x

} // namespace mb
