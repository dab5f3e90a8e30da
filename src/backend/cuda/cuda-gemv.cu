// the batch-one GEMV for F32 weights (rows ≤ 64): the same slice order as linear_skinny
// (cuda-kernels.cu) and the tiled kernel, so every output keeps its bits, but laid out for
// bytes in flight. A block stages all of K of its x rows in shared memory once, through cp.async
// (no registers, every load in flight at once, zero past K), instead of once per 1,024-long
// segment with a barrier each; a warp owns O weight rows (O = 2 reads each staged x value once
// for two outputs: shared-memory reads per product halve) and streams them a segment ahead in
// registers; a block covers up to 16 rows, so the 10-row products of a plan read their weights
// once (linear_skinny's 8-row tiles read them twice). A conv1d's im2col is built in the staging
// (no im2col kernel), and the epilogue may apply the activation of linear_act / conv1d_act to the
// biased total.
#include "backend/cuda/cuda-kernels.h"

#include <cstdlib>
#include <string>

namespace mb::cuda {
namespace {

constexpr int k_g2_warps = 8;                    // warps a block
constexpr int k_g2_pad   = k_sum_slice + 4;      // staged slices 36 floats apart: no bank conflicts
constexpr int k_g2_rowf  = 32 * k_g2_pad;        // floats of one staged 1,024-long weight segment

__device__ __forceinline__ void g2_copy16(float * dst, const float * src, bool in) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    // src-size 0 fills the 16 bytes with zeros and reads nothing
    const unsigned d = (unsigned) __cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src), "r"(in ? 16 : 0) : "memory");
#else
    *reinterpret_cast<float4 *>(dst) = in ? __ldg(reinterpret_cast<const float4 *>(src)) : make_float4(0.f, 0.f, 0.f, 0.f);
#endif
}

__device__ __forceinline__ void g2_copy4(float * dst, const float * src, bool in) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    const unsigned d = (unsigned) __cvta_generic_to_shared(dst);
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(d), "l"(src), "r"(in ? 4 : 0) : "memory");
#else
    *dst = in ? __ldg(src) : 0.0f;
#endif
}

__device__ __forceinline__ void g2_copy_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.commit_group;\ncp.async.wait_group 0;\n" ::: "memory");
#endif
}

__device__ __forceinline__ void g2_pdl_trigger() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;");
#endif
}

// how x is read and y written
enum g2_mode : int {
    G2_LINEAR = 0,    // x[n, K], y[n, N]
    G2_COL    = 1,    // x the explicit im2col [n, K] of lanes of t rows, y [lane, N, t] (NCW)
    G2_CONV   = 2,    // x [lane, K / ck, t] read through the im2col (kernel ck, dilation dil), y as G2_COL
};

// staged x rows lie J·36 + 4 floats apart: the 4-byte copies of G2_CONV, 16 rows a warp at once,
// then meet at most two to a bank
__host__ __device__ constexpr int g2_xrow(int J) {
    return J * k_g2_pad + 4;
}

// y[r, o] = act(Σ_slices + b[o]) for rows r0 + r, r < min(R, n − r0), and outputs O·warp + o of
// the block. act: 0 none, 1 leaky ReLU with `slope` (slope 0: ReLU, NaN passes)
template <int R, int O, int MODE>
__global__ void __launch_bounds__(32 * k_g2_warps) gemv_kernel(const float * __restrict__ x, int n, int K,
                                                               const float * __restrict__ w,
                                                               const float * __restrict__ b, int N,
                                                               float * __restrict__ y, int t, int ck, int dil, int act,
                                                               float slope) {
    static_assert(O * R <= 32, "a lane holds one total");
    extern __shared__ float4 g2_smem[];
    const int J    = (K + k_sum_slice - 1) / k_sum_slice;    // slices of K
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int r0 = blockIdx.y * R, nr = min(R, n - r0);
    const int xrow = g2_xrow(J);
    float *   xs = reinterpret_cast<float *>(g2_smem);                       // [nr][J][36], rows xrow apart
    float *   ws = xs + (size_t) nr * xrow + warp * (O * k_g2_rowf);         // [O][32][36], then slice sums
    const int og = (blockIdx.x * k_g2_warps + warp) * O;
    const float * wr[O];
#pragma unroll
    for (int o = 0; o < O; ++o) wr[o] = w + (size_t) min(og + o, N - 1) * K;    // past N: computed, not stored

    float4 wv[O][8];
    auto   load_seg = [&](int seg0) {
#pragma unroll
        for (int o = 0; o < O; ++o) {
#pragma unroll
            for (int i = 0; i < 8; ++i) {
                const int k = seg0 + 128 * i + 4 * lane;
                wv[o][i]    = k < K ? __ldg(reinterpret_cast<const float4 *>(wr[o] + k)) : make_float4(0.f, 0.f, 0.f, 0.f);
            }
        }
    };
    g2_pdl_trigger();
    load_seg(0);
    if constexpr (MODE != G2_CONV) {
        // x: every row's K (to the end of its last slice), 16 bytes a copy, all in flight
        const int J8 = J * 8;
        for (int u = threadIdx.x; u < nr * J8; u += 32 * k_g2_warps) {
            const int  r = u / J8, q = u - r * J8;
            const bool in = 4 * q < K;
            g2_copy16(xs + r * xrow + (q >> 3) * k_g2_pad + 4 * (q & 7), in ? x + (size_t) (r0 + r) * K + 4 * q : x, in);
        }
        g2_copy_wait();
    } else {
        // the im2col of the block's rows, built here: thread (c, r) copies x[c, pos(r) + tap] for
        // every tap of channel c (neighbouring threads: neighbouring positions of one channel)
        static_assert((32 * k_g2_warps) % R == 0, "a thread keeps its row");
        const int r = threadIdx.x % R;
        if (r < nr) {
            const int     row = r0 + r, ln = row / t, pos = row - ln * t, c_in = K / ck, half = (ck - 1) / 2;
            const float * xl  = x + (size_t) ln * c_in * t;
            float *       xr  = xs + r * xrow;
            for (int c = threadIdx.x / R; c < c_in; c += 32 * k_g2_warps / R) {
                for (int kk = 0; kk < ck; ++kk) {
                    const int  src = pos + (kk - half) * dil, kidx = c * ck + kk;
                    const bool in  = src >= 0 && src < t;
                    g2_copy4(xr + (kidx >> 5) * k_g2_pad + (kidx & 31), in ? xl + (size_t) c * t + src : x, in);
                }
            }
            for (int kidx = K + threadIdx.x / R; kidx < J * k_sum_slice; kidx += 32 * k_g2_warps / R) {
                xr[(kidx >> 5) * k_g2_pad + (kidx & 31)] = 0.0f;    // the last slice past K
            }
        }
        g2_copy_wait();
    }
    __syncthreads();

    float     tot = 0.0f;    // lane o·R + r: the running total of output og + o, row r0 + r
    const int S   = (K + 32 * k_sum_slice - 1) / (32 * k_sum_slice);
    for (int s = 0; s < S; ++s) {
        __syncwarp();    // the previous segment's slice sums are read
#pragma unroll
        for (int o = 0; o < O; ++o) {
#pragma unroll
            for (int i = 0; i < 8; ++i) {
                // element 128·i + 4·lane of the segment: slice 4·i + lane / 8, at 4·(lane mod 8)
                *reinterpret_cast<float4 *>(ws + o * k_g2_rowf + (4 * i + (lane >> 3)) * k_g2_pad + 4 * (lane & 7)) =
                    wv[o][i];
            }
        }
        __syncwarp();
        if (s + 1 < S) load_seg((s + 1) * 32 * k_sum_slice);

        float acc[O][R];
#pragma unroll
        for (int o = 0; o < O; ++o) {
#pragma unroll
            for (int r = 0; r < R; ++r) acc[o][r] = 0.0f;
        }
        const int j = s * 32 + lane;    // this lane's slice: an fmaf chain from 0 in ascending k
        if (j < J) {
            const float * xl = xs + j * k_g2_pad;
            const float * wl = ws + lane * k_g2_pad;
#pragma unroll
            for (int i = 0; i < k_sum_slice / 4; ++i) {
                float4 wq[O];
#pragma unroll
                for (int o = 0; o < O; ++o) wq[o] = *reinterpret_cast<const float4 *>(wl + o * k_g2_rowf + 4 * i);
#pragma unroll
                for (int r = 0; r < R; ++r) {
                    if (r < nr) {    // the same for the whole block
                        const float4 xq = *reinterpret_cast<const float4 *>(xl + r * xrow + 4 * i);
#pragma unroll
                        for (int o = 0; o < O; ++o) {
                            float a   = acc[o][r];
                            a         = fmaf(xq.x, wq[o].x, a);
                            a         = fmaf(xq.y, wq[o].y, a);
                            a         = fmaf(xq.z, wq[o].z, a);
                            a         = fmaf(xq.w, wq[o].w, a);
                            acc[o][r] = a;
                        }
                    }
                }
            }
        }
        // the 32 slice sums of each (output, row) in order; those past K are +0 and leave the
        // total (never −0) as it is
        __syncwarp();    // every lane has read its weights: ws takes the slice sums
#pragma unroll
        for (int o = 0; o < O; ++o) {
#pragma unroll
            for (int r = 0; r < R; ++r) ws[(o * R + r) * k_g2_pad + lane] = acc[o][r];
        }
        __syncwarp();
        if (lane < O * R) {
            float4 p[8];
#pragma unroll
            for (int q = 0; q < 8; ++q) p[q] = *reinterpret_cast<const float4 *>(ws + lane * k_g2_pad + 4 * q);
#pragma unroll
            for (int q = 0; q < 8; ++q) tot = (((tot + p[q].x) + p[q].y) + p[q].z) + p[q].w;
        }
    }

    const int o = og + lane / R, r = lane % R;
    if (lane < O * R && r < nr && o < N) {
        float v = tot + (b ? b[o] : 0.0f);
        if (act) v = v < 0.0f ? (slope == 0.0f ? 0.0f : v * slope) : v;
        const int    rr = r0 + r;
        const int    ln = MODE != G2_LINEAR ? rr / t : 0;
        const size_t at = MODE != G2_LINEAR ? ((size_t) ln * N + o) * t + (rr - ln * t) : (size_t) rr * N + o;
        y[at]           = v;
    }
}

// MB_CUDA_GEMV=old: linear_skinny's kernel everywhere (to compare); o1 / o2: that many weight
// rows a warp. Read on every call (the bits are the same on each)
int gemv_forced() {
    const char * v = std::getenv("MB_CUDA_GEMV");
    const std::string s = v ? v : "";
    return s == "old" ? -1 : s == "o1" ? 1 : s == "o2" ? 2 : 0;
}

int sm_count() {
    int dev = 0, n = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess) {
        cudaGetLastError();
        return 132;
    }
    return n;
}

struct g2_args {
    const float * x;
    int64_t       n, K;
    const float * w;
    const float * b;
    int64_t       N;
    float *       y;
    int64_t       t, ck, dil;    // rows a lane, conv kernel and dilation (G2_COL, G2_CONV)
    int           act;
    float         slope;
};

template <int R, int O, int MODE>
bool launch_gemv(const g2_args & a, cudaStream_t s) {
    const int64_t J    = (a.K + k_sum_slice - 1) / k_sum_slice;
    const int64_t rows = a.n < R ? a.n : R;
    const size_t  smem = (size_t) (rows * g2_xrow((int) J) + (int64_t) k_g2_warps * O * k_g2_rowf) * sizeof(float);
    if (smem > 227 * 1024) return false;
    auto kernel = gemv_kernel<R, O, MODE>;
    const cudaError_t e0 = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int) smem);
    if (e0 != cudaSuccess) fail("gemv (shared memory size)", e0);
    const dim3 grid((unsigned) ((a.N + k_g2_warps * O - 1) / (k_g2_warps * O)), (unsigned) ((a.n + R - 1) / R));
    kernel<<<grid, 32 * k_g2_warps, smem, s>>>(a.x, (int) a.n, (int) a.K, a.w, a.b, (int) a.N, a.y, (int) a.t,
                                                (int) a.ck, (int) a.dil, a.act, a.slope);
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) fail("gemv", e);
    return true;
}

template <int R, int MODE>
bool launch_gemv_o(const g2_args & a, int O, cudaStream_t s) {
    return O == 2 ? launch_gemv<R, 2, MODE>(a, s) : launch_gemv<R, 1, MODE>(a, s);
}

template <int MODE>
bool gemv_rows(const g2_args & a, cudaStream_t s) {
    // two rows a warp where that still gives every multiprocessor a block
    static const int sms    = sm_count();
    const int        forced = gemv_forced();
    const int        O      = forced > 0 ? forced : (a.N + 15) / 16 * ((a.n + 15) / 16) >= sms ? 2 : 1;
    if (a.n <= 4) return launch_gemv_o<4, MODE>(a, O, s);
    if (a.n <= 8) return launch_gemv_o<8, MODE>(a, O, s);
    return launch_gemv_o<16, MODE>(a, O, s);
}

bool gemv_applies(int64_t n, int64_t K, int64_t N, const float * w) {
    return gemv_forced() >= 0 && n >= 1 && n <= k_skinny_max_rows && N >= 1 && K >= 1 && K % 4 == 0 &&
           reinterpret_cast<uintptr_t>(w) % 16 == 0;
}

} // namespace

bool gemv_f32(const float * x, int64_t n, int64_t K, const float * w, const float * b, int64_t N, float * y,
              int64_t t, int act, float slope, cudaStream_t s) {
    if (!gemv_applies(n, K, N, w) || reinterpret_cast<uintptr_t>(x) % 16 != 0) return false;
    const g2_args a{x, n, K, w, b, N, y, t, 1, 1, act, slope};
    return t > 0 ? gemv_rows<G2_COL>(a, s) : gemv_rows<G2_LINEAR>(a, s);
}

bool gemv_conv_f32(const float * x, int64_t c_in, int64_t t, const float * w, const float * b, int64_t c_out,
                   int64_t k, int64_t dilation, float * y, int64_t n_batch, int act, float slope, cudaStream_t s) {
    const char * e = std::getenv("MB_CUDA_GEMV_IM2COL");    // 1: the explicit im2col (to compare)
    if ((e && std::string(e) == "1") || !gemv_applies(n_batch * t, c_in * k, c_out, w)) return false;
    const g2_args a{x, n_batch * t, c_in * k, w, b, c_out, y, t, k, dilation, act, slope};
    return gemv_rows<G2_CONV>(a, s);
}

} // namespace mb::cuda
