// the batch-one GEMV for F32 weights (rows ≤ 64): the same slice order as linear_skinny
// (cuda-kernels.cu) and the tiled kernel, so every output keeps its bits, but laid out for
// bytes in flight. A block stages all of K of its x rows in shared memory once, through cp.async
// (no registers, every load in flight at once, zero past K), instead of once per 1,024-long
// segment with a barrier each; a warp owns O weight rows (O = 2 reads each staged x value once
// for two outputs: shared-memory reads per product halve) and streams them a segment ahead in
// registers; a block covers up to 16 or 32 rows, so the 10-row products of a plan read their
// weights once (linear_skinny's 8-row tiles read them twice). The epilogue may apply the
// activation of linear_act / conv1d_act to the biased total.
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

// y[r, o] = act(Σ_slices + b[o]) for rows r0 + r, r < min(R, n − r0), and outputs O·warp + o of
// the block. NCW: y is [lane, N, t] per lane of t rows (conv1d on an explicit im2col), else
// [n, N]. act: 0 none, 1 leaky ReLU with `slope` (slope 0: ReLU, NaN passes)
template <int R, int O, bool NCW>
__global__ void __launch_bounds__(32 * k_g2_warps) gemv_kernel(const float * __restrict__ x, int n, int K,
                                                               const float * __restrict__ w,
                                                               const float * __restrict__ b, int N,
                                                               float * __restrict__ y, int t, int act, float slope) {
    static_assert(O * R <= 32, "a lane holds one total");
    extern __shared__ float4 g2_smem[];
    const int J    = (K + k_sum_slice - 1) / k_sum_slice;    // slices of K
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int r0 = blockIdx.y * R, nr = min(R, n - r0);
    float *   xs = reinterpret_cast<float *>(g2_smem);               // [nr][J][36]
    float *   ws = xs + (size_t) nr * J * k_g2_pad + warp * (O * k_g2_rowf);    // [O][32][36], then slice sums
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
    {
        // x: every row's K (to the end of its last slice), 16 bytes a copy, all in flight
        const int J8 = J * 8;
        for (int u = threadIdx.x; u < nr * J8; u += 32 * k_g2_warps) {
            const int  r = u / J8, q = u - r * J8;
            const bool in = 4 * q < K;
            g2_copy16(xs + (r * J + (q >> 3)) * k_g2_pad + 4 * (q & 7), in ? x + (size_t) (r0 + r) * K + 4 * q : x, in);
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
                        const float4 xq = *reinterpret_cast<const float4 *>(xl + (size_t) r * J * k_g2_pad + 4 * i);
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
        const int    ln = NCW ? rr / t : 0;
        const size_t at = NCW ? ((size_t) ln * N + o) * t + (rr - ln * t) : (size_t) rr * N + o;
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

template <int R, int O, bool NCW>
bool launch_gemv(const float * x, int64_t n, int64_t K, const float * w, const float * b, int64_t N, float * y,
                 int64_t t, int act, float slope, cudaStream_t s) {
    const int64_t J    = (K + k_sum_slice - 1) / k_sum_slice;
    const int64_t rows = n < R ? n : R;
    const size_t  smem = (size_t) (rows * J * k_g2_pad + (int64_t) k_g2_warps * O * k_g2_rowf) * sizeof(float);
    if (smem > 227 * 1024) return false;
    auto kernel = gemv_kernel<R, O, NCW>;
    const cudaError_t a = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int) smem);
    if (a != cudaSuccess) fail("gemv (shared memory size)", a);
    const dim3 grid((unsigned) ((N + k_g2_warps * O - 1) / (k_g2_warps * O)), (unsigned) ((n + R - 1) / R));
    kernel<<<grid, 32 * k_g2_warps, smem, s>>>(x, (int) n, (int) K, w, b, (int) N, y, (int) t, act, slope);
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) fail("gemv", e);
    return true;
}

template <bool NCW>
bool gemv_rows(const float * x, int64_t n, int64_t K, const float * w, const float * b, int64_t N, float * y,
               int64_t t, int act, float slope, cudaStream_t s) {
    // two rows a warp where that still gives every multiprocessor a block
    static const int sms = sm_count();
    const int forced = gemv_forced();
    const int O      = forced > 0 ? forced : (N + 15) / 16 * ((n + 15) / 16) >= sms ? 2 : 1;
    if (n <= 4) {
        return O == 2 ? launch_gemv<4, 2, NCW>(x, n, K, w, b, N, y, t, act, slope, s)
                      : launch_gemv<4, 1, NCW>(x, n, K, w, b, N, y, t, act, slope, s);
    }
    if (n <= 8) {
        return O == 2 ? launch_gemv<8, 2, NCW>(x, n, K, w, b, N, y, t, act, slope, s)
                      : launch_gemv<8, 1, NCW>(x, n, K, w, b, N, y, t, act, slope, s);
    }
    return O == 2 ? launch_gemv<16, 2, NCW>(x, n, K, w, b, N, y, t, act, slope, s)
                  : launch_gemv<16, 1, NCW>(x, n, K, w, b, N, y, t, act, slope, s);
}

} // namespace

bool gemv_f32(const float * x, int64_t n, int64_t K, const float * w, const float * b, int64_t N, float * y,
              int64_t t, int act, float slope, cudaStream_t s) {
    if (gemv_forced() < 0 || n < 1 || n > k_skinny_max_rows || N < 1 || K < 1 || K % 4 != 0 ||
        reinterpret_cast<uintptr_t>(x) % 16 != 0 || reinterpret_cast<uintptr_t>(w) % 16 != 0) {
        return false;
    }
    return t > 0 ? gemv_rows<true>(x, n, K, w, b, N, y, t, act, slope, s)
                 : gemv_rows<false>(x, n, K, w, b, N, y, 0, act, slope, s);
}

} // namespace mb::cuda
