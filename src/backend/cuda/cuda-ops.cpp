#include "backend/cuda/cuda-ops.h"

#include <stdexcept>
#include <string>

namespace mb::cuda {

device_ops::device_ops() {
    const cudaError_t e = cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking);
    if (e != cudaSuccess) throw std::runtime_error(std::string("cuda: cudaStreamCreate: ") + cudaGetErrorString(e));
    if (cublasCreate(&blas_) != CUBLAS_STATUS_SUCCESS) {
        cudaStreamDestroy(stream_);
        throw std::runtime_error("cublas: cublasCreate failed");
    }
    cublasSetStream(blas_, stream_);
    cublasSetMathMode(blas_, CUBLAS_DEFAULT_MATH);     // FP32 arithmetic, no TF32
}

device_ops::~device_ops() {
    cudaStreamSynchronize(stream_);
    cublasDestroy(blas_);
    cudaStreamDestroy(stream_);
}

void device_ops::linear(const float * x, int64_t n, int64_t n_in, const float * w, const float * b, int64_t n_out,
                        float * y) {
    if (n <= k_skinny_max_rows) {
        linear_skinny(x, n, n_in, w, b, n_out, y, stream_);
        return;
    }
    // column-major view: yᵀ[n_out, n] = w[n_out, n_in] · xᵀ[n_in, n]
    const float          one = 1.0f, zero = 0.0f;
    const cublasStatus_t st  = cublasSgemm(blas_, CUBLAS_OP_T, CUBLAS_OP_N, (int) n_out, (int) n, (int) n_in, &one, w,
                                           (int) n_in, x, (int) n_in, &zero, y, (int) n_out);
    if (st != CUBLAS_STATUS_SUCCESS) throw std::runtime_error("cublas: cublasSgemm: status " + std::to_string((int) st));
    if (b) add_bias_rows(y, n, n_out, b, stream_);
}

void device_ops::conv1d(const float * x, int64_t c_in, int64_t t, const float * w, const float * b, int64_t c_out,
                        int64_t k, int64_t dilation, float * y, float * col, float * yt) {
    if (t <= k_skinny_max_rows) {
        conv1d_skinny(x, c_in, t, w, b, c_out, k, dilation, y, stream_);
        return;
    }
    // yᵀ[t, c_out] = colᵀ[t, c_in·k]·wᵀ + b, then y = (yᵀ)ᵀ
    im2col_t(x, c_in, t, k, dilation, col, stream_);
    linear(col, t, c_in * k, w, b, c_out, yt);
    transpose(yt, t, c_out, y, stream_);
}

} // namespace mb::cuda
