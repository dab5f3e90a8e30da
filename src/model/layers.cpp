#include "model/layers.h"

#include "format/error.h"

#include <algorithm>

namespace mb {
namespace {

std::string dim_text(int64_t v, const char * name) {
    return v > 0 ? std::to_string(v) : std::string(name);
}

int64_t count_of(std::initializer_list<int64_t> shape) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
}

} // namespace

void fail_incompatible(const tensor_source & src, const std::string & what) {
    throw error(status::incompatible_model, src.origin() + ": " + what);
}

void tap_f32(const tap_fn & tap, backend & be, std::string_view name, bptr<const float> x,
             std::initializer_list<int64_t> shape) {
    if (!tap) return;
    std::vector<float> host((size_t) count_of(shape));
    be.get(x, host.data(), (int64_t) host.size());
    tap(name, host.data(), std::vector<int64_t>(shape));
}

void tap_i32(const tap_fn & tap, backend & be, std::string_view name, bptr<const int32_t> x,
             std::initializer_list<int64_t> shape) {
    if (!tap) return;
    std::vector<int32_t> host((size_t) count_of(shape));
    be.get(x, host.data(), (int64_t) host.size());
    const std::vector<float> f(host.begin(), host.end());
    tap(name, f.data(), std::vector<int64_t>(shape));
}

void tap_host(const tap_fn & tap, std::string_view name, const float * x, std::initializer_list<int64_t> shape) {
    if (tap) tap(name, x, std::vector<int64_t>(shape));
}

void tap_host(const tap_fn & tap, std::string_view name, const uint8_t * x, std::initializer_list<int64_t> shape) {
    if (!tap) return;
    const std::vector<float> f(x, x + count_of(shape));
    tap(name, f.data(), std::vector<int64_t>(shape));
}

void tap_host(const tap_fn & tap, std::string_view name, const int32_t * x, std::initializer_list<int64_t> shape) {
    if (!tap) return;
    const std::vector<float> f(x, x + count_of(shape));
    tap(name, f.data(), std::vector<int64_t>(shape));
}

bptr<const float> weight_loader::upload(const tensor_view & t) {
    bufs.push_back(be.alloc_from_host(t.f32(), size_t(t.n_bytes)));
    return bufs.back()->as<const float>();
}

bweight weight_loader::upload_matrix(const tensor_view & t) {
    const auto type = static_cast<weight_type>(t.type);
    if (!be.supports_weight_type(type)) {
        throw error(status::incompatible_model, src.origin() + ": tensor '" + std::string(t.name) + "' is " +
                                                    weight_type_name(type) + ", which the " + be.name() +
                                                    " backend cannot run (use an F32 bundle)");
    }
    bufs.push_back(be.alloc_from_host(t.data, size_t(t.n_bytes)));
    return bweight(bufs.back()->base(), type);
}

linear_weights load_linear(weight_loader & wl, const std::string & name, int64_t n_out, int64_t n_in) {
    const tensor_source & src = wl.src;
    const tensor_view &   w   = require_any_matrix(src, name + ".weight");
    if (w.n_dims != 2 || (n_in > 0 && w.ne[0] != n_in) || (n_out > 0 && w.ne[1] != n_out)) {
        fail_incompatible(src, "tensor '" + name + ".weight' has shape " + torch_shape_string(w) +
                               ", expected [" + dim_text(n_out, "n_out") + ", " + dim_text(n_in, "n_in") + "]");
    }
    linear_weights l;
    l.n_out  = w.ne[1];
    l.n_in   = w.ne[0];
    l.weight = wl.upload_matrix(w);
    l.bias   = wl.upload(require_f32(src, name + ".bias", {l.n_out}));
    return l;
}

conv_weights load_conv(weight_loader & wl, const std::string & name, int64_t c_out, int64_t c_in, int64_t k) {
    const tensor_source & src = wl.src;
    const tensor_view &   w   = require_any_matrix(src, name + ".weight");
    if (w.n_dims != 3 || w.ne[0] != k || (c_in > 0 && w.ne[1] != c_in) || (c_out > 0 && w.ne[2] != c_out)) {
        fail_incompatible(src, "tensor '" + name + ".weight' has shape " + torch_shape_string(w) +
                               ", expected [" + dim_text(c_out, "c_out") + ", " + dim_text(c_in, "c_in") + ", " +
                               std::to_string(k) + "]");
    }
    conv_weights c;
    c.c_out  = w.ne[2];
    c.c_in   = w.ne[1];
    c.k      = k;
    c.weight = wl.upload_matrix(w);
    c.bias   = wl.upload(require_f32(src, name + ".bias", {c.c_out}));
    return c;
}

fc_block_weights load_fc_block(weight_loader & wl, const std::string & prefix, int64_t n_in, int64_t n_out) {
    fc_block_weights b;
    for (int i = 0;; ++i) {
        const std::string name = prefix + "fc_layers." + std::to_string(i);
        if (i > 0 && !wl.src.find(name + ".weight")) break;
        const int64_t in = i == 0 ? n_in : b.fc[0].n_out;
        const int64_t out = i == 0 ? 0 : b.fc[0].n_out;
        b.fc.push_back(load_linear(wl, name, out, in));
        if (i >= 64) fail_incompatible(wl.src, "'" + prefix + "' has more than 64 fc layers");
    }
    b.out = load_linear(wl, prefix + "forward_projection", n_out, b.fc[0].n_out);
    return b;
}

void fc_block_forward(backend & be, const fc_block_weights & w, bptr<const float> x, int64_t n, bptr<float> tmp_a,
                      bptr<float> tmp_b, bptr<float> y) {
    bptr<const float> h       = x;
    const bptr<float> bufs[2] = {tmp_a, tmp_b};
    for (size_t i = 0; i < w.fc.size(); ++i) {
        const linear_weights & l = w.fc[i];
        const bptr<float>      o = bufs[i % 2];
        be.linear_act(h, n, l.n_in, l.weight, l.bias, l.n_out, 0.01f, o);
        h = o;
    }
    be.linear(h, n, w.out.n_in, w.out.weight, w.out.bias, w.out.n_out, y);
}

void row_staging::add_to(state_arena & a, int64_t cap_rows, int64_t row_floats) {
    cap = cap_rows;
    d   = row_floats;
    a.add(rows, cap * d);
    a.add(idx, cap);
    host_rows.resize(size_t(cap * d));
    host_idx.resize(size_t(cap));
}

void upload_selected_rows(backend & be, const float * host, const uint8_t * sel, int64_t n, int64_t d, bptr<float> y,
                          row_staging & stg) {
    // below this the whole array is one small copy (batch one: 40 frames of 304 floats)
    constexpr int64_t k_dense_bytes = int64_t(1) << 20;
    const bool        sparse        = n * d * int64_t(sizeof(float)) > k_dense_bytes && d == stg.d;
    int64_t           k             = 0;
    for (int64_t i = 0; sparse && i < n && k <= stg.cap; ++i) k += sel[i] != 0;
    if (!sparse || k > stg.cap) {
        be.set(y, host, n * d);
        return;
    }
    if (k == 0) return;    // no row of y is read
    int64_t j = 0;
    for (int64_t i = 0; i < n; ++i) {
        if (!sel[i]) continue;
        std::copy_n(host + i * d, d, stg.host_rows.begin() + j * d);
        stg.host_idx[size_t(j++)] = int32_t(i);
    }
    be.set(stg.rows, stg.host_rows.data(), k * d);
    be.set(stg.idx, stg.host_idx.data(), k);
    be.scatter_rows(stg.rows, stg.idx, k, d, y);
}

std::unique_ptr<backend_buffer> state_arena::allocate(backend & be) {
    std::unique_ptr<backend_buffer> buf  = be.alloc(offset_);
    char *                          base = static_cast<char *>(buf->base());
    for (const slot & s : slots_) *s.p = base + s.offset;
    return buf;
}

} // namespace mb
