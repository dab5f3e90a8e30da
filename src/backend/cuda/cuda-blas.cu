#include "backend/cuda/cuda-blas.h"

#include "backend/cuda/cuda-kernels.h"
#include "format/error.h"

#include <cublasLt.h>
#include <cublas_v2.h>
#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <type_traits>
#include <string>

namespace mb::cuda {
namespace {

// the library's .so.13, else its unversioned .so (null when neither opens)
void * open_library(const char * name) {
    void * lib = dlopen((std::string(name) + ".so.13").c_str(), RTLD_NOW | RTLD_LOCAL);
    return lib ? lib : dlopen((std::string(name) + ".so").c_str(), RTLD_NOW | RTLD_LOCAL);
}

// fn ← the symbol `name` of lib; false when lib lacks it
template <class F> bool resolve(void * lib, F & fn, const char * name) {
    fn = reinterpret_cast<F>(dlsym(lib, name));
    return fn != nullptr;
}

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
        void * lib = open_library("libcublas");
        if (!lib) {
            a.problem = std::string("cannot open libcublas: ") + dlerror();
            return;
        }
        auto get = [&](auto & fn, const char * name) {
            if (!resolve(lib, fn, name) && a.problem.empty()) a.problem = std::string("libcublas lacks ") + name;
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

// the cuBLASLt entry points used (its own library, libcublasLt.so.13)
struct lt_api {
    cublasStatus_t (*create)(cublasLtHandle_t *)                                                          = nullptr;
    cublasStatus_t (*destroy)(cublasLtHandle_t)                                                           = nullptr;
    cublasStatus_t (*desc_create)(cublasLtMatmulDesc_t *, cublasComputeType_t, cudaDataType_t)            = nullptr;
    cublasStatus_t (*desc_destroy)(cublasLtMatmulDesc_t)                                                  = nullptr;
    cublasStatus_t (*desc_set)(cublasLtMatmulDesc_t, cublasLtMatmulDescAttributes_t, const void *, size_t) = nullptr;
    cublasStatus_t (*layout_create)(cublasLtMatrixLayout_t *, cudaDataType, uint64_t, uint64_t, int64_t)  = nullptr;
    cublasStatus_t (*layout_destroy)(cublasLtMatrixLayout_t)                                              = nullptr;
    cublasStatus_t (*pref_create)(cublasLtMatmulPreference_t *)                                           = nullptr;
    cublasStatus_t (*pref_destroy)(cublasLtMatmulPreference_t)                                            = nullptr;
    cublasStatus_t (*pref_set)(cublasLtMatmulPreference_t, cublasLtMatmulPreferenceAttributes_t, const void *,
                               size_t)                                                                    = nullptr;
    cublasStatus_t (*heuristic)(cublasLtHandle_t, cublasLtMatmulDesc_t, cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,
                                cublasLtMatrixLayout_t, cublasLtMatrixLayout_t, cublasLtMatmulPreference_t, int,
                                cublasLtMatmulHeuristicResult_t *, int *)                                 = nullptr;
    cublasStatus_t (*matmul)(cublasLtHandle_t, cublasLtMatmulDesc_t, const void *, const void *, cublasLtMatrixLayout_t,
                             const void *, cublasLtMatrixLayout_t, const void *, const void *, cublasLtMatrixLayout_t,
                             void *, cublasLtMatrixLayout_t, const cublasLtMatmulAlgo_t *, void *, size_t,
                             cudaStream_t)                                                                = nullptr;
    bool ok = false;
};

const lt_api & lt() {
    static lt_api         a;
    static std::once_flag once;
    std::call_once(once, [] {
        void * lib = open_library("libcublasLt");
        if (!lib) return;
        bool all = true;
        auto get = [&](auto & fn, const char * name) { all = resolve(lib, fn, name) && all; };
        get(a.create, "cublasLtCreate");
        get(a.destroy, "cublasLtDestroy");
        get(a.desc_create, "cublasLtMatmulDescCreate");
        get(a.desc_destroy, "cublasLtMatmulDescDestroy");
        get(a.desc_set, "cublasLtMatmulDescSetAttribute");
        get(a.layout_create, "cublasLtMatrixLayoutCreate");
        get(a.layout_destroy, "cublasLtMatrixLayoutDestroy");
        get(a.pref_create, "cublasLtMatmulPreferenceCreate");
        get(a.pref_destroy, "cublasLtMatmulPreferenceDestroy");
        get(a.pref_set, "cublasLtMatmulPreferenceSetAttribute");
        get(a.heuristic, "cublasLtMatmulAlgoGetHeuristic");
        get(a.matmul, "cublasLtMatmul");
        a.ok = all;
    });
    return a;
}

static_assert(sizeof(cublasLtMatmulAlgo_t) <= 64, "lt_plan::algo holds a cublasLtMatmulAlgo_t");

// the largest power of two (≤ 256) dividing an address: the alignment a cuBLASLt kernel may assume
int align_of(const void * p) {
    const uintptr_t v = uintptr_t(p);
    int             a = 1;
    while (a < 256 && v % uintptr_t(a * 2) == 0) a *= 2;
    return a;
}

constexpr size_t k_workspace_bytes = size_t(32) << 20;

__global__ void add_bias_rows_kernel(float * y, const float * __restrict__ b, int64_t total, int N) {
    for (int64_t i = blockIdx.x * (int64_t) blockDim.x + threadIdx.x; i < total; i += (int64_t) gridDim.x * blockDim.x) {
        y[i] += b[i % N];
    }
}

} // namespace

void blas::use_stream(cudaStream_t stream) {
    if (stream == stream_) return;
    if (handle_ && api().set_stream(static_cast<cublasHandle_t>(handle_), stream) != CUBLAS_STATUS_SUCCESS) {
        throw mb::error(mb::status::compute_failed, "cublas: cublasSetStream failed");
    }
    stream_ = stream;
}

const char * blas::open_problem() {
    return api().problem.c_str();
}

blas::blas(cudaStream_t stream, bool tf32) : stream_(stream), tf32_(tf32) {
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
    cublasLtHandle_t l = nullptr;
    if (lt().ok && lt().create(&l) == CUBLAS_STATUS_SUCCESS) lt_ = l;
}

blas::~blas() {
    const lt_api & l = lt();
    for (auto & kv : plans_) {
        lt_plan & p = kv.second;
        if (p.desc) l.desc_destroy(static_cast<cublasLtMatmulDesc_t>(p.desc));
        for (void * m : {p.a, p.b, p.d}) {
            if (m) l.layout_destroy(static_cast<cublasLtMatrixLayout_t>(m));
        }
    }
    if (lt_) l.destroy(static_cast<cublasLtHandle_t>(lt_));
    if (handle_) api().destroy(static_cast<cublasHandle_t>(handle_));
    if (workspace_) cudaFree(workspace_);
}

blas::lt_plan & blas::plan_for(const lt_key & key) {
    auto it = plans_.find(key);
    if (it != plans_.end()) return it->second;
    lt_plan &      p = plans_[key];
    const lt_api & l = lt();
    const auto [n, K, N, bf16, al_w, al_x, al_y, al_b, relu] = key;
    // row-major y[n, N] = x·wᵀ + b is column-major D[N, n] = (w as K×N)ᵀ · (x as K×n) + b (per row of D)
    const cudaDataType        in  = bf16 ? CUDA_R_16BF : CUDA_R_32F;
    const cublasComputeType_t ct  = bf16 ? CUBLAS_COMPUTE_32F : CUBLAS_COMPUTE_32F_FAST_TF32;
    cublasLtMatmulDesc_t      d   = nullptr;
    cublasLtMatrixLayout_t    la = nullptr, lb = nullptr, ld = nullptr;
    if (l.desc_create(&d, ct, CUDA_R_32F) != CUBLAS_STATUS_SUCCESS) return p;
    p.desc = d;
    const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    const cublasLtEpilogue_t epi = relu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS;
    // any pointer of the key's alignment: the heuristic reads the bias pointer's alignment only
    const void * bias = reinterpret_cast<const void *>(uintptr_t(al_b));
    if (l.desc_set(d, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)) != CUBLAS_STATUS_SUCCESS ||
        l.desc_set(d, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)) != CUBLAS_STATUS_SUCCESS ||
        l.desc_set(d, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof(epi)) != CUBLAS_STATUS_SUCCESS ||
        l.desc_set(d, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)) != CUBLAS_STATUS_SUCCESS) {
        return p;
    }
    if (l.layout_create(&la, in, uint64_t(K), uint64_t(N), K) != CUBLAS_STATUS_SUCCESS) return p;
    p.a = la;
    if (l.layout_create(&lb, in, uint64_t(K), uint64_t(n), K) != CUBLAS_STATUS_SUCCESS) return p;
    p.b = lb;
    if (l.layout_create(&ld, CUDA_R_32F, uint64_t(N), uint64_t(n), N) != CUBLAS_STATUS_SUCCESS) return p;
    p.d = ld;
    cublasLtMatmulPreference_t pref = nullptr;
    if (l.pref_create(&pref) != CUBLAS_STATUS_SUCCESS) return p;
    const uint64_t ws = k_workspace_bytes;
    const uint32_t aw = uint32_t(al_w), ax = uint32_t(al_x), ay = uint32_t(al_y);
    cublasLtMatmulHeuristicResult_t r{};
    int                             found = 0;
    if (l.pref_set(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)) == CUBLAS_STATUS_SUCCESS &&
        l.pref_set(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &aw, sizeof(aw)) == CUBLAS_STATUS_SUCCESS &&
        l.pref_set(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &ax, sizeof(ax)) == CUBLAS_STATUS_SUCCESS &&
        l.pref_set(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &ay, sizeof(ay)) == CUBLAS_STATUS_SUCCESS &&
        l.pref_set(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &ay, sizeof(ay)) == CUBLAS_STATUS_SUCCESS &&
        l.heuristic(static_cast<cublasLtHandle_t>(lt_), d, la, lb, ld, ld, pref, 1, &r, &found) == CUBLAS_STATUS_SUCCESS &&
        found > 0 && r.state == CUBLAS_STATUS_SUCCESS) {
        std::memcpy(p.algo, &r.algo, sizeof(r.algo));
        p.ok = true;
    }
    l.pref_destroy(pref);
    return p;
}

bool blas::lt_linear(const float * x, int64_t n, int64_t K, const float * w, const void * w_bf16, void * x_bf16,
                     int64_t N, const float * b, float * y, bool relu) {
    const bool bf16 = w_bf16 && x_bf16;
    if (!lt_ || !b || (!bf16 && !tf32_) || (!x && !bf16)) return false;
    const void * xa = bf16 ? x_bf16 : static_cast<const void *>(x);
    const void * wa = bf16 ? w_bf16 : static_cast<const void *>(w);
    lt_plan &    p  = plan_for({n, K, N, bf16, align_of(wa), align_of(xa), align_of(y), align_of(b), relu});
    if (!p.ok) return false;
    const lt_api & l = lt();
    auto *         d = static_cast<cublasLtMatmulDesc_t>(p.desc);
    if (l.desc_set(d, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &b, sizeof(b)) != CUBLAS_STATUS_SUCCESS) return false;
    if (bf16 && x) f32_to_bf16(x, n * K, x_bf16, stream_);
    const float          one = 1.0f, zero = 0.0f;
    const cublasStatus_t st =
        l.matmul(static_cast<cublasLtHandle_t>(lt_), d, &one, wa, static_cast<cublasLtMatrixLayout_t>(p.a), xa,
                 static_cast<cublasLtMatrixLayout_t>(p.b), &zero, y, static_cast<cublasLtMatrixLayout_t>(p.d), y,
                 static_cast<cublasLtMatrixLayout_t>(p.d), reinterpret_cast<const cublasLtMatmulAlgo_t *>(p.algo),
                 workspace_, k_workspace_bytes, stream_);
    if (st != CUBLAS_STATUS_SUCCESS) {
        p.ok = false;     // this shape keeps the two-step path from now on (which rounds x again, or reads
                          // the rounded x left in x_bf16: same bits)
        return false;
    }
    return true;
}

void blas::linear_bias(const float * x, int64_t n, int64_t K, const float * w, const void * w_bf16, void * x_bf16,
                       int64_t N, const float * b, float * y, bool relu) {
    if (lt_linear(x, n, K, w, w_bf16, x_bf16, N, b, y, relu)) return;
    linear(x, n, K, w, w_bf16, x_bf16, N, y);
    if (b) add_bias_rows(y, b, n, N, stream_);
    if (relu) cuda::relu(y, n * N, y, stream_);
}

void blas::linear(const float * x, int64_t n, int64_t K, const float * w, const void * w_bf16, void * x_bf16,
                  int64_t N, float * y) {
    // row-major y[n, N] = x·wᵀ is column-major yᵀ[N, n] = (w as K×N)ᵀ · (x as K×n)
    const float one = 1.0f, zero = 0.0f;
    cublasStatus_t st;
    if (w_bf16 && x_bf16) {
        if (x) f32_to_bf16(x, n * K, x_bf16, stream_);
        st = api().gemm_ex(static_cast<cublasHandle_t>(handle_), CUBLAS_OP_T, CUBLAS_OP_N, int(N), int(n), int(K), &one,
                           w_bf16, CUDA_R_16BF, int(K), x_bf16, CUDA_R_16BF, int(K), &zero, y, CUDA_R_32F, int(N),
                           CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    } else {
        if (!x) throw mb::error(mb::status::compute_failed, "cublas: no float32 x for a float32 product");
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
