// CUDA kernels of the backend ops, on device pointers and one stream. Row-major
// float32 throughout; every launcher checks its launch and throws
// std::runtime_error naming the kernel and the CUDA error.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace mb::cuda {

// rows up to which linear runs the own skinny kernel (weights streamed once per 16 rows);
// above it cuBLAS SGEMM runs
constexpr int64_t k_skinny_max_rows = 64;

// y[n, n_out] = x[n, n_in]·w[n_out, n_in]ᵀ + b (b may be null); skinny kernel, any n
void linear_skinny(const float * x, int64_t n, int64_t n_in, const float * w, const float * b, int64_t n_out,
                   float * y, cudaStream_t s);

// y[n, d] += b[d] broadcast over rows
void add_bias_rows(float * y, int64_t n, int64_t d, const float * b, cudaStream_t s);

// x[n, d] ← LayerNorm(x + r)·g + b (r may be null), mean and variance accumulated in double
void add_layer_norm(float * x, const float * r, int64_t n, int64_t d, const float * g, const float * b, float eps,
                    cudaStream_t s);

// attention core of backend::attention: qkv[n, 3d] → out[n, d]; key_mask[n] may be null
void attention(const float * qkv, int64_t n, int64_t d, int64_t n_head, const uint8_t * key_mask, float * out,
               cudaStream_t s);

// col[t, c_in·k]: row i holds x[c, i + (kk − (k−1)/2)·dilation] at c·k + kk (0 outside)
void im2col_t(const float * x, int64_t c_in, int64_t t, int64_t k, int64_t dilation, float * col, cudaStream_t s);

// y[cols, rows] = xᵀ for x[rows, cols]
void transpose(const float * x, int64_t rows, int64_t cols, float * y, cudaStream_t s);

} // namespace mb::cuda
