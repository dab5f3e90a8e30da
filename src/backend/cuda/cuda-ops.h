// the two composite backend ops on device pointers and one stream: what the CUDA backend
// runs for linear and conv1d in F32. The skinny kernel and, above 64 rows, the tiled kernel
// cover every row count with one summation order, so F32 needs no cuBLAS (opened with dlopen
// for TF32 / BF16 only: linking it would map ~600 MB of libraries into every program of a
// CUDA build)
#pragma once

#include "backend/cuda/cuda-kernels.h"

#include <cuda_runtime.h>

#include <cstdint>

namespace mb::cuda {

class device_ops {
public:
    // creates a non-blocking stream on the current device; throws std::runtime_error
    device_ops();
    ~device_ops();
    device_ops(const device_ops &)             = delete;
    device_ops & operator=(const device_ops &) = delete;

    cudaStream_t stream() const { return stream_; }

    // y[n, n_out] = x[n, n_in]·wᵀ + b (linear_f32)
    void linear(const float * x, int64_t n, int64_t n_in, const float * w, const float * b, int64_t n_out, float * y);

    // conv1d "same" in NCW (n_batch lanes) through the skinny kernel on an implicit im2col
    void conv1d(const float * x, int64_t c_in, int64_t t, const float * w, const float * b, int64_t c_out, int64_t k,
                int64_t dilation, float * y, int64_t n_batch);

private:
    cudaStream_t stream_ = nullptr;
};

} // namespace mb::cuda
