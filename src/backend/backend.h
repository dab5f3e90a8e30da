// the compute interface the networks run on. Networks call these ops on
// row-major float buffers and never know which implementation runs them.
// The CPU backend lands first; a GPU backend is another implementation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace mb {

class backend {
public:
    virtual ~backend() = default;

    virtual const char * name() const = 0;
    virtual int          n_threads() const = 0;

    // optional: data[0, bytes) holds weights that stay unchanged and alive as long as this
    // backend. A device backend copies them into its own memory now (throws std::bad_alloc
    // when that memory is exhausted), and ops given pointers into the range read the copy.
    // Default: nothing (a host backend reads weights in place)
    virtual void weights_register(const void * data, size_t bytes) {
        (void) data;
        (void) bytes;
    }

    // y[n, n_out] = x[n, n_in] · w[n_out, n_in]ᵀ + b[n_out]
    // (PyTorch nn.Linear; b may be null; y must not alias x)
    virtual void linear(const float * x, int64_t n, int64_t n_in, const float * w, const float * b,
                        int64_t n_out, float * y) = 0;

    // x[n, d] ← LayerNorm(x + r)·g + b, biased variance, eps inside the sqrt (r may be null)
    virtual void add_layer_norm(float * x, const float * r, int64_t n, int64_t d, const float * g,
                                const float * b, float eps) = 0;

    // multi-head self-attention core (before out_proj):
    // qkv[n, 3·d] holds rows [q | k | v]; head h uses dims [h·d/n_head, (h+1)·d/n_head);
    // scores q·kᵀ/sqrt(d/n_head); keys with key_mask[j] != 0 are ignored (key_mask may be null);
    // out[n, d] is the concatenation of the heads
    virtual void attention(const float * qkv, int64_t n, int64_t d, int64_t n_head, const uint8_t * key_mask,
                           float * out) = 0;

    // Conv1d in NCW layout with "same" zero padding (dilation·(k−1)/2 on each side, odd k):
    // x[c_in, t] → y[c_out, t], w[c_out, c_in, k], b[c_out] (b may be null; y must not alias x)
    virtual void conv1d(const float * x, int64_t c_in, int64_t t, const float * w, const float * b, int64_t c_out,
                        int64_t k, int64_t dilation, float * y) = 0;
};

// n_threads <= 0 selects the number of hardware threads
std::unique_ptr<backend> backend_cpu_create(int n_threads);

} // namespace mb
