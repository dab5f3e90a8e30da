// cuBLAS for products of many rows (fused batches), opened with dlopen on first use: linking
// it would map ~600 MB of libraries into every program of a CUDA build, and batch-one plans
// never need it (no op of theirs has more than 64 rows)
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace mb::cuda {

// one cuBLAS handle on one stream, with its own workspace (so that calls can be recorded in
// CUDA graphs). Creating it opens the library once per process
class blas {
public:
    // "" when libcublas could be opened and a handle made, else why not (then every call is
    // refused and callers keep their own kernels)
    static const char * open_problem();

    blas(cudaStream_t stream, bool tf32);
    ~blas();
    blas(const blas &)             = delete;
    blas & operator=(const blas &) = delete;

    bool ok() const { return handle_ != nullptr; }

    // y[n, N] = x[n, K]·w[N, K]ᵀ (row-major, no bias); w_bf16 (may be null) is the bfloat16
    // copy of w, used with x rounded to bfloat16 in x_bf16 (room for n·K values)
    void linear(const float * x, int64_t n, int64_t K, const float * w, const void * w_bf16, void * x_bf16,
                int64_t N, float * y);

private:
    cudaStream_t stream_    = nullptr;
    void *       handle_    = nullptr;
    void *       workspace_ = nullptr;
};

// y[i, j] += b[j] for i < n, j < N
void add_bias_rows(float * y, const float * b, int64_t n, int64_t N, cudaStream_t s);

} // namespace mb::cuda
