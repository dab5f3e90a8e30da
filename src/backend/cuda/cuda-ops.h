// the backend ops on device pointers, on one stream and one cuBLAS handle: what the CUDA
// backend runs between its copies, and what a benchmark replays without any copy
#pragma once

#include "backend/cuda/cuda-kernels.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace mb::cuda {

class device_ops {
public:
    // creates a non-blocking stream and a cuBLAS handle on the current device (FP32 math, no TF32);
    // throws std::runtime_error
    device_ops();
    ~device_ops();
    device_ops(const device_ops &)             = delete;
    device_ops & operator=(const device_ops &) = delete;

    cudaStream_t stream() const { return stream_; }

    // y[n, n_out] = x[n, n_in]·wᵀ + b: skinny kernel up to k_skinny_max_rows rows, cuBLAS above
    void linear(const float * x, int64_t n, int64_t n_in, const float * w, const float * b, int64_t n_out, float * y);

    // conv1d "same" in NCW: the skinny kernel on an implicit im2col up to k_skinny_max_rows
    // frames; above, im2col + cuBLAS into col[t, c_in·k] and yt[t, c_out], scratch the caller
    // provides (unused, may be null, for t ≤ k_skinny_max_rows)
    void conv1d(const float * x, int64_t c_in, int64_t t, const float * w, const float * b, int64_t c_out, int64_t k,
                int64_t dilation, float * y, float * col, float * yt);

private:
    cudaStream_t   stream_ = nullptr;
    cublasHandle_t blas_   = nullptr;
};

} // namespace mb::cuda
