// the parts of the backend interface that are not one backend's: the defaults of the
// optional ops (alloc_from_host, typed weights, fused activations, the motion ops), and the registry of
// built-in backends
#include "backend/backend.h"

#include <stdexcept>
#include <string>

#if MB_HAVE_CUDA
#include "backend/cuda/cuda-backend.h"
#endif

namespace mb {

std::unique_ptr<backend_buffer> backend::alloc_from_host(const void * host, size_t bytes) {
    std::unique_ptr<backend_buffer> buf = alloc(bytes);
    set_bytes(buf->base(), host, bytes);
    return buf;
}

const char * weight_type_name(weight_type t) {
    switch (t) {
        case weight_type::WEIGHT_F32: return "F32";
        case weight_type::WEIGHT_Q8_0: return "Q8_0";
        case weight_type::WEIGHT_BF16: return "BF16";
    }
    return "unknown";
}

namespace {

[[noreturn]] void no_weight_type(const backend & be, weight_type t) {
    throw std::runtime_error(std::string("the ") + be.name() + " backend cannot run " + weight_type_name(t) +
                             " weights (load an F32 bundle, or run on the CPU)");
}

} // namespace

void backend::linear(bptr<const float> x, int64_t n, int64_t n_in, bweight w, bptr<const float> b, int64_t n_out,
                     bptr<float> y) {
    if (w.type != weight_type::WEIGHT_F32) no_weight_type(*this, w.type);
    linear(x, n, n_in, bptr<const float>(static_cast<const float *>(w.p)), b, n_out, y);
}

void backend::conv1d(bptr<const float> x, int64_t c_in, int64_t t, bweight w, bptr<const float> b, int64_t c_out,
                     int64_t k, int64_t dilation, bptr<float> y, int64_t n_batch) {
    if (w.type != weight_type::WEIGHT_F32) no_weight_type(*this, w.type);
    conv1d(x, c_in, t, bptr<const float>(static_cast<const float *>(w.p)), b, c_out, k, dilation, y, n_batch);
}

void backend::linear_act(bptr<const float> x, int64_t n, int64_t n_in, bweight w, bptr<const float> b,
                         int64_t n_out, float slope, bptr<float> y) {
    linear(x, n, n_in, w, b, n_out, y);
    if (slope == 0.0f) relu(y, n * n_out, y);
    else leaky_relu(y, n * n_out, slope, y);
}

void backend::conv1d_act(bptr<const float> x, int64_t c_in, int64_t t, bweight w, bptr<const float> b, int64_t c_out,
                         int64_t k, int64_t dilation, float slope, bptr<float> y, int64_t n_batch) {
    conv1d(x, c_in, t, w, b, c_out, k, dilation, y, n_batch);
    if (slope == 0.0f) relu(y, n_batch * c_out * t, y);
    else leaky_relu(y, n_batch * c_out * t, slope, y);
}

void backend::relu_conv1d_act(bptr<const float> x, bptr<float> xr, int64_t c_in, int64_t t, bweight w,
                              bptr<const float> b, int64_t c_out, int64_t k, int64_t dilation, float slope,
                              bptr<float> y, int64_t n_batch) {
    relu(x, n_batch * c_in * t, xr);
    conv1d_act(xr, c_in, t, w, b, c_out, k, dilation, slope, y, n_batch);
}

void backend::conv1d_residual(bptr<const float> x, int64_t c_in, int64_t t, bweight w, bptr<const float> b,
                              int64_t c_out, int64_t k, int64_t dilation, bptr<float> tmp, bptr<float> h,
                              int64_t n_batch) {
    conv1d(x, c_in, t, w, b, c_out, k, dilation, tmp, n_batch);
    add(tmp, h, n_batch * c_out * t, h);
}

void backend::res_blocks(bptr<float> h, bptr<float> t0, bptr<float> t1, int64_t c, int64_t t, int64_t n_valid,
                         const res_block * blocks, int64_t n_blocks, int64_t n_batch) {
    for (int64_t i = 0; i < n_blocks; ++i) {
        const res_block & rb = blocks[i];
        mask_cols(n_batch * c, t, n_valid, h);    // x = x·m; x0 = x
        // relu(x)·m needs no mask: x is masked and relu(0) = 0
        relu_conv1d_act(h, t0, c, t, rb.w1, rb.b1, c, rb.k1, rb.dilation, 0.0f, t1, n_batch);
        mask_cols(n_batch * c, t, n_valid, t1);
        conv1d_residual(t1, c, t, rb.w2, rb.b2, c, rb.k2, 1, t0, h, n_batch);    // x0 + ·
        mask_cols(n_batch * c, t, n_valid, h);
    }
}

void backend::conv_chain(bptr<const float> x, int64_t t, int64_t n_valid, const conv_step * steps, int64_t n_steps,
                         int64_t n_batch) {
    for (int64_t i = 0; i < n_steps; ++i) {
        const conv_step & c = steps[i];
        if (c.relu) conv1d_act(x, c.c_in, t, c.w, c.b, c.c_out, c.k, c.dilation, 0.0f, c.y, n_batch);
        else conv1d(x, c.c_in, t, c.w, c.b, c.c_out, c.k, c.dilation, c.y, n_batch);
        mask_cols(n_batch * c.c_out, t, n_valid, c.y);
        x = c.y;
    }
}

void backend::root_conditions(bptr<const float> y, int64_t n_batch, int64_t frames, bptr<const float> stats,
                              bptr<const float> last, bptr<const uint8_t> has_last, bptr<float> root_cond,
                              bptr<float> ext) {
    (void) y, (void) n_batch, (void) frames, (void) stats, (void) last, (void) has_last, (void) root_cond, (void) ext;
    throw std::runtime_error(std::string("the ") + name() +
                             " backend has no root_conditions (predict runs that glue on the host there)");
}

void backend::motion_finish(bptr<const float> x, int64_t n_batch, int64_t frames, bptr<const float> scale,
                            bptr<const float> mean, bptr<const float> ref, bptr<const int32_t> parents,
                            bptr<const float> offsets, bptr<float> global, bptr<float> positions,
                            bptr<float> local_xyzw) {
    (void) x, (void) n_batch, (void) frames, (void) scale, (void) mean, (void) ref, (void) parents, (void) offsets;
    (void) global, (void) positions, (void) local_xyzw;
    throw std::runtime_error(std::string("the ") + name() +
                             " backend has no motion_finish (predict finishes on the host there)");
}

const std::vector<backend_reg> & backend_registry() {
    static const std::vector<backend_reg> regs = [] {
        std::vector<backend_reg> r = {{"cpu", &backend_cpu_create}};
#if MB_HAVE_CUDA
        // listed only where it can run (GPU 0), so test-backend-ops checks it on GPU machines
        if (cuda_device_problem(0).empty()) r.push_back({"cuda", [](int) { return backend_cuda_create(0); }});
#endif
        return r;
    }();
    return regs;
}

} // namespace mb
