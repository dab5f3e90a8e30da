// CUDA backend over the host-pointer op interface. Weights registered at load live
// in device memory for the backend's lifetime; every other operand is staged
// through one pinned host buffer and one device arena per op (both grown to the
// largest op once, then reused), and each op waits for its outputs. Linear runs
// the skinny kernel up to k_skinny_max_rows rows and cuBLAS SGEMM above (plain
// FP32: TF32 stays off); conv1d is im2col, linear and a transpose (cuda-ops.h).
#include "backend/cuda/cuda-backend.h"

#include "backend/cuda/cuda-ops.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

namespace mb {
namespace {

[[noreturn]] void fail(const char * what, cudaError_t e) {
    throw std::runtime_error(std::string("cuda: ") + what + ": " + cudaGetErrorString(e));
}

void check(cudaError_t e, const char * what) {
    if (e != cudaSuccess) fail(what, e);
}

constexpr size_t k_align = 256;

size_t aligned(size_t bytes) {
    return (bytes + k_align - 1) / k_align * k_align;
}

class cuda_backend final : public backend {
public:
    explicit cuda_backend(int ordinal) : ordinal_(ordinal), ops_(set_device(ordinal)), stream_(ops_->stream()) {}

    ~cuda_backend() override {
        cudaSetDevice(ordinal_);
        ops_.reset();
        for (region & r : regions_) cudaFree(r.dev);
        cudaFree(arena_);
        cudaFreeHost(pinned_);
    }

    const char * name() const override { return "cuda"; }
    int          n_threads() const override { return 1; }

    void weights_register(const void * data, size_t bytes) override {
        if (!data || bytes == 0 || lookup(data, bytes)) return;
        check(cudaSetDevice(ordinal_), "cudaSetDevice");
        region r{static_cast<const char *>(data), bytes, nullptr};
        const cudaError_t e = cudaMalloc(&r.dev, bytes);
        if (e == cudaErrorMemoryAllocation) {
            cudaGetLastError();
            throw std::bad_alloc();
        }
        check(e, "cudaMalloc (weights)");
        const cudaError_t c = cudaMemcpy(r.dev, data, bytes, cudaMemcpyHostToDevice);
        if (c != cudaSuccess) {
            cudaFree(r.dev);
            fail("cudaMemcpy (weights)", c);
        }
        regions_.insert(std::upper_bound(regions_.begin(), regions_.end(), r,
                                         [](const region & a, const region & b) { return a.host < b.host; }),
                        r);
    }

    void linear(const float * x, int64_t n, int64_t n_in, const float * w, const float * b, int64_t n_out,
                float * y) override {
        begin({n * n_in, n_out * n_in, n_out, n * n_out});
        const float * dx = in(x, n * n_in);
        const float * dw = in(w, n_out * n_in);
        const float * db = b ? in(b, n_out) : nullptr;
        float *       dy = scratch(n * n_out);
        ops_->linear(dx, n, n_in, dw, db, n_out, dy);
        out(dy, y, n * n_out);
        finish();
    }

    void add_layer_norm(float * x, const float * r, int64_t n, int64_t d, const float * g, const float * b,
                        float eps) override {
        begin({n * d, n * d, d, d});
        float *       dx = const_cast<float *>(in(x, n * d, true));
        const float * dr = r ? in(r, n * d) : nullptr;
        cuda::add_layer_norm(dx, dr, n, d, in(g, d), in(b, d), eps, stream_);
        out(dx, x, n * d);
        finish();
    }

    void attention(const float * qkv, int64_t n, int64_t d, int64_t n_head, const uint8_t * key_mask,
                   float * o) override {
        begin({n * 3 * d, (n + 3) / 4, n * d});
        const float *   dq = in(qkv, n * 3 * d);
        const uint8_t * dm = key_mask ? static_cast<const uint8_t *>(in_bytes(key_mask, (size_t) n)) : nullptr;
        float *         dout = scratch(n * d);
        cuda::attention(dq, n, d, n_head, dm, dout, stream_);
        out(dout, o, n * d);
        finish();
    }

    void conv1d(const float * x, int64_t c_in, int64_t t, const float * w, const float * b, int64_t c_out,
                int64_t k, int64_t dilation, float * y) override {
        const int64_t ck = c_in * k;
        const bool    big = t > cuda::k_skinny_max_rows;    // im2col scratch only then
        begin({c_in * t, c_out * ck, c_out, big ? t * ck : 0, big ? t * c_out : 0, c_out * t});
        const float * dx = in(x, c_in * t);
        const float * dw = in(w, c_out * ck);
        const float * db = b ? in(b, c_out) : nullptr;
        float * col = big ? scratch(t * ck) : nullptr;
        float * yt  = big ? scratch(t * c_out) : nullptr;
        float * dy  = scratch(c_out * t);
        ops_->conv1d(dx, c_in, t, dw, db, c_out, k, dilation, dy, col, yt);
        out(dy, y, c_out * t);
        finish();
    }

private:
    struct region {
        const char * host;  // registered host range [host, host + bytes)
        size_t       bytes;
        void *       dev;   // its device copy
    };
    struct pending {
        void *       host;  // where an output goes after the op
        size_t       off;   // its place in the pinned buffer
        size_t       bytes;
    };

    const void * lookup(const void * p, size_t bytes) const {
        const char * c  = static_cast<const char *>(p);
        auto         it = std::upper_bound(regions_.begin(), regions_.end(), c,
                                           [](const char * v, const region & r) { return v < r.host; });
        if (it == regions_.begin()) return nullptr;
        --it;
        if (c + bytes > it->host + it->bytes) return nullptr;
        return static_cast<const char *>(it->dev) + (c - it->host);
    }

    // sizes every operand of one op could need (in floats) so the buffers grow before use
    void begin(std::initializer_list<int64_t> floats) {
        check(cudaSetDevice(ordinal_), "cudaSetDevice");
        size_t need = 0;
        for (int64_t f : floats) need += aligned((size_t) f * sizeof(float));
        if (need > cap_) {
            cudaFree(arena_);
            cudaFreeHost(pinned_);
            arena_ = nullptr;
            pinned_ = nullptr;
            cap_ = 0;
            check(cudaMalloc(&arena_, need), "cudaMalloc (staging)");
            check(cudaHostAlloc(&pinned_, need, cudaHostAllocDefault), "cudaHostAlloc (staging)");
            cap_ = need;
        }
        used_ = 0;
        pending_.clear();
    }

    size_t take(size_t bytes) {
        const size_t off = used_;
        used_ += aligned(bytes);
        if (used_ > cap_) throw std::logic_error("cuda backend: staging buffer sized too small");
        return off;
    }

    float * scratch(int64_t floats) {
        return reinterpret_cast<float *>(static_cast<char *>(arena_) + take((size_t) floats * sizeof(float)));
    }

    // a device pointer holding host[0, bytes): the registered copy, else staged now
    const void * in_bytes(const void * host, size_t bytes, bool writable = false) {
        if (!writable) {
            if (const void * d = lookup(host, bytes)) return d;
        }
        const size_t off = take(bytes);
        std::memcpy(static_cast<char *>(pinned_) + off, host, bytes);
        check(cudaMemcpyAsync(static_cast<char *>(arena_) + off, static_cast<char *>(pinned_) + off, bytes,
                              cudaMemcpyHostToDevice, stream_),
              "cudaMemcpyAsync (operand)");
        return static_cast<char *>(arena_) + off;
    }

    const float * in(const float * host, int64_t floats, bool writable = false) {
        return static_cast<const float *>(in_bytes(host, (size_t) floats * sizeof(float), writable));
    }

    // copies a device result to its pinned place (the op's last step moves it to host)
    void out(const float * dev, float * host, int64_t floats) {
        const size_t bytes = (size_t) floats * sizeof(float);
        const size_t off   = (size_t) (reinterpret_cast<const char *>(dev) - static_cast<char *>(arena_));
        check(cudaMemcpyAsync(static_cast<char *>(pinned_) + off, dev, bytes, cudaMemcpyDeviceToHost, stream_),
              "cudaMemcpyAsync (result)");
        pending_.push_back({host, off, bytes});
    }

    void finish() {
        check(cudaStreamSynchronize(stream_), "op");
        for (const pending & p : pending_) std::memcpy(p.host, static_cast<char *>(pinned_) + p.off, p.bytes);
        pending_.clear();
    }

    // makes the device current before the members that live on it are created
    static std::unique_ptr<cuda::device_ops> set_device(int ordinal) {
        check(cudaSetDevice(ordinal), "cudaSetDevice");
        return std::make_unique<cuda::device_ops>();
    }

    int                               ordinal_;
    std::unique_ptr<cuda::device_ops> ops_;
    cudaStream_t                      stream_;
    std::vector<region>  regions_;          // registered weights, sorted by host address
    void *               arena_  = nullptr; // device operands of one op
    void *               pinned_ = nullptr; // their host staging, same offsets
    size_t               cap_    = 0;       // bytes of each
    size_t               used_   = 0;
    std::vector<pending> pending_;          // outputs of the op in flight
};

} // namespace

std::string cuda_device_problem(int ordinal) {
    int               count = 0;
    const cudaError_t e     = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
        cudaGetLastError();
        return std::string("no usable CUDA driver or GPU (") + cudaGetErrorString(e) + ")";
    }
    if (count == 0) return "no CUDA GPU is present";
    if (ordinal < 0 || ordinal >= count) {
        return "GPU ordinal " + std::to_string(ordinal) + " is not present (" + std::to_string(count) + " GPUs)";
    }
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, ordinal) != cudaSuccess) {
        cudaGetLastError();
        return "cannot read the properties of GPU " + std::to_string(ordinal);
    }
    if (p.major * 10 + p.minor < 75) {
        return std::string("GPU ") + std::to_string(ordinal) + " (" + p.name + ") has compute capability " +
               std::to_string(p.major) + "." + std::to_string(p.minor) + "; the CUDA backend needs 7.5 or newer";
    }
    return "";
}

std::unique_ptr<backend> backend_cuda_create(int ordinal) {
    const std::string problem = cuda_device_problem(ordinal);
    if (!problem.empty()) throw std::runtime_error(problem);
    return std::make_unique<cuda_backend>(ordinal);
}

} // namespace mb
