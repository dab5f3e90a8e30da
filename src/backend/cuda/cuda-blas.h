// cuBLAS for products of many rows (fused batches), opened with dlopen on first use: linking
// it would map ~600 MB of libraries into every program of a CUDA build, and batch-one plans
// never need it (no op of theirs has more than 64 rows)
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <map>
#include <tuple>

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

    // later calls issue on `stream` (a backend's branch; see cuda-backend.cpp)
    void use_stream(cudaStream_t stream);

    // y[n, N] = x[n, K]·w[N, K]ᵀ (row-major, no bias); w_bf16 (may be null) is the bfloat16
    // copy of w, used with x rounded to bfloat16 in x_bf16 (room for n·K values). x null (with
    // w_bf16 and x_bf16): x_bf16 already holds x rounded (im2col_bf16), nothing is converted
    void linear(const float * x, int64_t n, int64_t K, const float * w, const void * w_bf16, void * x_bf16,
                int64_t N, float * y);

    // the same plus b[N] on every row (b may be null). TF32 and BF16 products add it in
    // cuBLASLt's epilogue (one pass over y fewer) where cuBLASLt has a kernel for the shape;
    // otherwise, and for F32 (MB_CUDA_F32_CUBLAS), linear + add_bias_rows.
    // relu: then max(0, ·) on every output, in the epilogue (CUBLASLT_EPILOGUE_RELU_BIAS) where
    // cuBLASLt runs the product, else as the relu kernel after it
    void linear_bias(const float * x, int64_t n, int64_t K, const float * w, const void * w_bf16, void * x_bf16,
                     int64_t N, const float * b, float * y, bool relu = false);

private:
    // one cuBLASLt product shape with its descriptors and the algorithm chosen for it (ok false:
    // cuBLASLt has none, the shape runs linear + add_bias_rows)
    struct lt_plan {
        bool  ok   = false;
        void * desc = nullptr, * a = nullptr, * b = nullptr, * d = nullptr;
        alignas(8) unsigned char algo[64] = {};     // cublasLtMatmulAlgo_t
    };
    // n, K, N, bf16, the alignments of w, x, y and b (the heuristic's choice depends on them), relu
    using lt_key = std::tuple<int64_t, int64_t, int64_t, bool, int, int, int, int, bool>;
    lt_plan & plan_for(const lt_key & key);
    // linear_bias on cuBLASLt; false when it cannot (then nothing was issued)
    bool      lt_linear(const float * x, int64_t n, int64_t K, const float * w, const void * w_bf16, void * x_bf16,
                        int64_t N, const float * b, float * y, bool relu);

    cudaStream_t stream_    = nullptr;
    void *       handle_    = nullptr;
    void *       workspace_ = nullptr;
    bool         tf32_      = false;
    void *       lt_        = nullptr;      // cublasLtHandle_t (null: cuBLASLt not opened or refused)
    std::map<lt_key, lt_plan> plans_;
};

// y[i, j] += b[j] for i < n, j < N
void add_bias_rows(float * y, const float * b, int64_t n, int64_t N, cudaStream_t s);

} // namespace mb::cuda
