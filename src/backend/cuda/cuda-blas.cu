#include "backend/cuda/cuda-blas.h"

#include "backend/cuda/cuda-kernels.h"
#include "format/error.h"

#include <cublas_v2.h>
#include <dlfcn.h>

#include <algorithm>
#include <mutex>
#include <type_traits>
#include <string>

namespace mb::cuda {
namespace {

// the few entry points used, resolved from libcublas.so.13 (or .so)
struct blas_api {
    cublasStatus_t (*create)(cublasHandle_t *)                           = nullptr;
    cublasStatus_t (*destroy)(cublasHandle_t)                            = nullptr;
    cublasStatus_t (*set_stream)(cublasHandle_t, cudaStream_t)           = nullptr;
    cublasStatus_t (*set_math_mode)(cublasHandle_t, cublasMath_t)        = nullptr;
    cublasStatus_t (*set_workspace)(cublasHandle_t, void *, size_t)      = nullptr;
    cublasStatus_t (*gemm_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void *,
                              const void *, cudaDataType, int, const void *, cudaDataType, int, const void *, void *,
                              cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t) = nullptr;
    std::string problem;
};

const blas_api & api() {
    static blas_api      a;
    static std::once_flag once;
    std::call_once(once, [] {
        void * lib = dlopen("libcublas.so.13", RTLD_NOW | RTLD_LOCAL);
        if (!lib) lib = dlopen("libcublas.so", RTLD_NOW | RTLD_LOCAL);
        if (!lib) {
            a.problem = std::string("cannot open libcublas: ") + dlerror();
            return;
        }
        auto get = [&](auto & fn, const char * name) {
            fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
            if (!fn && a.problem.empty()) a.problem = std::string("libcublas lacks ") + name;
        };
        get(a.create, "cublasCreate_v2");
        get(a.destroy, "cublasDestroy_v2");
        get(a.set_stream, "cublasSetStream_v2");
        get(a.set_math_mode, "cublasSetMathMode");
        get(a.set_workspace, "cublasSetWorkspace_v2");
        get(a.gemm_ex, "cublasGemmEx");
    });
    return a;
}

constexpr size_t k_workspace_bytes = size_t(32) << 20;

__global__ void add_bias_rows_kernel(float * y, const float * __restrict__ b, int64_t total, int N) {
    for (int64_t i = blockIdx.x * (int64_t) blockDim.x + threadIdx.x; i < total; i += (int64_t) gridDim.x * blockDim.x) {
        y[i] += b[i % N];
    }
}

} // namespace

const char * blas::open_problem() {
    return api().problem.c_str();
}

blas::blas(cudaStream_t stream, bool tf32) : stream_(stream) {
    const blas_api & a = api();
    if (!a.problem.empty()) return;
    cublasHandle_t h = nullptr;
    if (a.create(&h) != CUBLAS_STATUS_SUCCESS) return;
    if (cudaMalloc(&workspace_, k_workspace_bytes) != cudaSuccess) {
        cudaGetLastError();
        a.destroy(h);
        workspace_ = nullptr;
        return;
    }
    // F32: no tensor-core rounding; TF32 only when asked for
    if (a.set_stream(h, stream) != CUBLAS_STATUS_SUCCESS ||
        a.set_workspace(h, workspace_, k_workspace_bytes) != CUBLAS_STATUS_SUCCESS ||
        a.set_math_mode(h, tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_PEDANTIC_MATH) != CUBLAS_STATUS_SUCCESS) {
        a.destroy(h);
        cudaFree(workspace_);
        workspace_ = nullptr;
        return;
    }
    handle_ = h;
}

blas::~blas() {
    if (handle_) api().destroy(static_cast<cublasHandle_t>(handle_));
    if (workspace_) cudaFree(workspace_);
}

void blas::linear(const float * x, int64_t n, int64_t K, const float * w, const void * w_bf16, void * x_bf16,
                  int64_t N, float * y) {
    // row-major y[n, N] = x·wᵀ is column-major yᵀ[N, n] = (w as K×N)ᵀ · (x as K×n)
    const float one = 1.0f, zero = 0.0f;
    cublasStatus_t st;
    if (w_bf16 && x_bf16) {
        f32_to_bf16(x, n * K, x_bf16, stream_);
        st = api().gemm_ex(static_cast<cublasHandle_t>(handle_), CUBLAS_OP_T, CUBLAS_OP_N, int(N), int(n), int(K), &one,
                           w_bf16, CUDA_R_16BF, int(K), x_bf16, CUDA_R_16BF, int(K), &zero, y, CUDA_R_32F, int(N),
                           CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    } else {
        st = api().gemm_ex(static_cast<cublasHandle_t>(handle_), CUBLAS_OP_T, CUBLAS_OP_N, int(N), int(n), int(K), &one,
                           w, CUDA_R_32F, int(K), x, CUDA_R_32F, int(K), &zero, y, CUDA_R_32F, int(N),
                           CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    }
    if (st != CUBLAS_STATUS_SUCCESS) {
        throw mb::error(mb::status::compute_failed,
                        "cublas: gemm failed with status " + std::to_string(int(st)) + " (the model can still be used)");
    }
}

void add_bias_rows(float * y, const float * b, int64_t n, int64_t N, cudaStream_t s) {
    const int64_t total = n * N;
    if (total <= 0) return;
    add_bias_rows_kernel<<<(unsigned) std::min<int64_t>((total + 255) / 256, 4096), 256, 0, s>>>(y, b, total, int(N));
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) fail("add_bias_rows", e);
}

} // namespace mb::cuda
