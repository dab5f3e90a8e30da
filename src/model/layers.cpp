#include "model/layers.h"

#include <algorithm>
#include <stdexcept>

namespace mb {
namespace {

std::string dim_text(int64_t v, const char * name) {
    return v > 0 ? std::to_string(v) : std::string(name);
}

} // namespace

linear_weights load_linear(const tensor_source & src, const std::string & name, int64_t n_out, int64_t n_in) {
    const tensor_view & w = require_any_f32(src, name + ".weight");
    if (w.n_dims != 2 || (n_in > 0 && w.ne[0] != n_in) || (n_out > 0 && w.ne[1] != n_out)) {
        throw std::runtime_error(src.origin() + ": tensor '" + name + ".weight' has shape " + torch_shape_string(w) +
                                 ", expected [" + dim_text(n_out, "n_out") + ", " + dim_text(n_in, "n_in") + "]");
    }
    linear_weights l;
    l.n_out  = w.ne[1];
    l.n_in   = w.ne[0];
    l.weight = w.f32();
    l.bias   = require_f32(src, name + ".bias", {l.n_out}).f32();
    return l;
}

conv_weights load_conv(const tensor_source & src, const std::string & name, int64_t c_out, int64_t c_in, int64_t k) {
    const tensor_view & w = require_any_f32(src, name + ".weight");
    if (w.n_dims != 3 || w.ne[0] != k || (c_in > 0 && w.ne[1] != c_in) || (c_out > 0 && w.ne[2] != c_out)) {
        throw std::runtime_error(src.origin() + ": tensor '" + name + ".weight' has shape " + torch_shape_string(w) +
                                 ", expected [" + dim_text(c_out, "c_out") + ", " + dim_text(c_in, "c_in") + ", " +
                                 std::to_string(k) + "]");
    }
    conv_weights c;
    c.c_out  = w.ne[2];
    c.c_in   = w.ne[1];
    c.k      = k;
    c.weight = w.f32();
    c.bias   = require_f32(src, name + ".bias", {c.c_out}).f32();
    return c;
}

fc_block_weights load_fc_block(const tensor_source & src, const std::string & prefix, int64_t n_in, int64_t n_out) {
    fc_block_weights b;
    for (int i = 0;; ++i) {
        const std::string name = prefix + "fc_layers." + std::to_string(i);
        if (i > 0 && !src.find(name + ".weight")) break;
        const int64_t in = i == 0 ? n_in : b.fc[0].n_out;
        const int64_t out = i == 0 ? 0 : b.fc[0].n_out;
        b.fc.push_back(load_linear(src, name, out, in));
        if (i >= 64) throw std::runtime_error(src.origin() + ": '" + prefix + "' has more than 64 fc layers");
    }
    b.out = load_linear(src, prefix + "forward_projection", n_out, b.fc[0].n_out);
    return b;
}

void fc_block_forward(backend & be, const fc_block_weights & w, const float * x, int64_t n, float * tmp_a,
                      float * tmp_b, float * y) {
    const float * h = x;
    float *       bufs[2] = {tmp_a, tmp_b};
    for (size_t i = 0; i < w.fc.size(); ++i) {
        const linear_weights & l = w.fc[i];
        float *                o = bufs[i % 2];
        be.linear(h, n, l.n_in, l.weight, l.bias, l.n_out, o);
        leaky_relu_inplace(o, n * l.n_out, 0.01f);
        h = o;
    }
    be.linear(h, n, w.out.n_in, w.out.weight, w.out.bias, w.out.n_out, y);
}

void relu_inplace(float * x, int64_t n) {
    for (int64_t i = 0; i < n; ++i) x[i] = std::max(x[i], 0.0f);
}

void leaky_relu_inplace(float * x, int64_t n, float slope) {
    for (int64_t i = 0; i < n; ++i) x[i] = x[i] < 0.0f ? x[i] * slope : x[i];
}

} // namespace mb
