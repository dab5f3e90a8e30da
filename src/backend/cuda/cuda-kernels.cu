// kernels of the CUDA backend. At batch one the networks multiply 1–64 rows by
// large weight matrices, so linear is bound by reading the weights once: the
// skinny kernel (a GEMV) gives each warp a weight row, streams it with coalesced
// 16-byte loads, and sums 32-long slices of k per lane against up to 16 input rows
// staged in shared memory (the one F32 order of every product; see below). LayerNorm
// accumulates in double like the CPU.
#include "backend/cuda/cuda-kernels.h"
#include "backend/cuda/cuda-launch.h"

#include "format/error.h"

#include <cuda_bf16.h>
#include <mma.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace mb::cuda {

void fail(const char * what, cudaError_t e) {
    // sticky errors: the context is corrupt and every later call fails the same way
    const bool lost = e == cudaErrorIllegalAddress || e == cudaErrorLaunchFailure || e == cudaErrorIllegalInstruction ||
                      e == cudaErrorMisalignedAddress || e == cudaErrorInvalidAddressSpace || e == cudaErrorInvalidPc ||
                      e == cudaErrorHardwareStackError || e == cudaErrorECCUncorrectable || e == cudaErrorAssert;
    cudaGetLastError();    // clear a non-sticky error so that the next call starts clean
    throw mb::error(mb::status::compute_failed,
                    std::string("cuda: ") + what + ": " + cudaGetErrorString(e) +
                        (lost ? " (the GPU context is lost: free the model; this process cannot use the GPU again)"
                              : " (the model can still be used)"));
}

bool env_is(const char * name, const char * value) {
    const char * v = std::getenv(name);
    return v && std::strcmp(v, value) == 0;
}

namespace {

constexpr unsigned k_full = 0xffffffffu;

void check_launch(const char * what) {
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) fail(what, e);
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(k_full, v, off);
    return v;
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) v = fmaxf(v, __shfl_xor_sync(k_full, v, off));
    return v;
}

__device__ __forceinline__ double warp_sum_d(double v) {
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(k_full, v, off);
    return v;
}

// ---- the F32 summation order of every product (linear and conv1d, at any row count):
// y[r, o] = (((0 + S_0) + S_1) + … + S_{J−1}) + b[o], where S_j sums x[r, k]·w[o, k] over the
// slice k ∈ [32j, 32j + 32) with fmaf from 0 in ascending k (J = ⌈K/32⌉; past K the products
// are 0·0). The GEMV below and the tiled GEMM (cuda-tiled.cu) both follow it, so an output's
// bits do not depend on the row count and a lane of a batch equals its request alone. (Zero
// pads can only turn a slice sum of −0 into +0, and the running total, which starts at +0 and
// so is never −0, absorbs either the same way.)

// CONV: rows are the t positions of x[c_in, t] read through an implicit im2col
// (K = c_in·k, column c·k + kk is x[c, row + (kk − (k−1)/2)·dilation], 0 outside), and
// the output is y[N, t] (NCW) instead of y[n, N]
// Rows of several lanes, act and the epilogues: conv_geom (cuda-kernels.h)

// how the skinny kernel reads x and writes y
enum skinny_mode : int {
    SKINNY_LINEAR   = 0,    // x[n, K] row-major, y[n, N]
    SKINNY_CONV     = 1,    // x[c_in, t] through an implicit im2col, y[N, t] (NCW)
    SKINNY_CONV_COL = 2,    // x the explicit im2col [t, K] row-major, y[N, t] (NCW)
};

template <int MODE>
__device__ __forceinline__ float load_x(const float * __restrict__ x, int row, int K, int kidx, conv_geom g) {
    if constexpr (MODE != SKINNY_CONV) {
        return __ldg(x + (size_t) row * K + kidx);
    } else {
        const int lane = row / g.t, pos = row - lane * g.t;
        const int c = kidx / g.k, kk = kidx - c * g.k;
        const int src = pos + (kk - (g.k - 1) / 2) * g.dilation;
        return (src >= 0 && src < g.t) ? __ldg(x + (size_t) lane * K / g.k * g.t + (size_t) c * g.t + src) : 0.0f;
    }
}

template <int MODE>
__device__ __forceinline__ float4 load_x4(const float * __restrict__ x, int row, int K, int kidx, conv_geom g) {
    if constexpr (MODE != SKINNY_CONV) {
        return __ldg(reinterpret_cast<const float4 *>(x + (size_t) row * K + kidx));
    } else {
        return make_float4(load_x<MODE>(x, row, K, kidx, g), load_x<MODE>(x, row, K, kidx + 1, g),
                           load_x<MODE>(x, row, K, kidx + 2, g), load_x<MODE>(x, row, K, kidx + 3, g));
    }
}

// weights as float32, or as bfloat16 (MB_PRECISION_BF16: half the bytes to stream); either
// way the sums are float32
__device__ __forceinline__ float load_w(const float * w, int k) { return __ldg(w + k); }
__device__ __forceinline__ float load_w(const __nv_bfloat16 * w, int k) { return __bfloat162float(w[k]); }
__device__ __forceinline__ float4 load_w4(const float * w, int k) {
    return __ldg(reinterpret_cast<const float4 *>(w + k));
}
__device__ __forceinline__ float4 load_w4(const __nv_bfloat16 * w, int k) {
    const uint2 u = __ldg(reinterpret_cast<const uint2 *>(w + k));    // 4 bf16: the high halves of 4 floats
    return make_float4(__uint_as_float(u.x << 16), __uint_as_float(u.x & 0xffff0000u), __uint_as_float(u.y << 16),
                       __uint_as_float(u.y & 0xffff0000u));
}

constexpr int k_seg       = 32 * k_sum_slice;          // k of one warp pass: a slice per lane
constexpr int k_slice_pad = k_sum_slice + 4;           // staged slices 36 floats apart: no bank conflicts
constexpr int k_seg_pad   = 32 * k_slice_pad;
constexpr int k_gemv_outs = 8;                         // outputs per block, one per warp

constexpr size_t gemv_smem_bytes(int R) {
    return size_t(R + k_gemv_outs) * k_seg_pad * sizeof(float);
}

// the GEMV: a block owns 8 weight rows (one per warp) against R input rows. K goes by in
// segments of 1,024: the block stages the segment of its R rows of x in shared memory, each warp
// reads its weight row's segment with coalesced loads (the next segment's in flight during the
// sums) and stages it too, so that lane l then sums slice l of every row from shared memory;
// the 32 slice sums of a row are added to its total in order by lane r. VEC: K % 4 == 0 and
// 16-byte aligned rows (8-byte for bfloat16 weights)
template <int R, bool VEC, int MODE, class WT>
__global__ void __launch_bounds__(256) linear_skinny_kernel(const float * __restrict__ x, int n, int K,
                                                           const WT * __restrict__ w,
                                                           const float * __restrict__ b, int N,
                                                           float * __restrict__ y, conv_geom g) {
    extern __shared__ float4 gemv_smem[];
    float *   xs   = reinterpret_cast<float *>(gemv_smem);    // [R][k_seg_pad]: x's rows, this segment
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    float *   ws   = xs + (R + warp) * k_seg_pad;              // this warp's weights, then its slice sums
    const int o    = blockIdx.x * k_gemv_outs + warp;
    const int r0   = blockIdx.y * R;
    const int nr   = min(R, n - r0);
    const WT * wr  = w + (size_t) min(o, N - 1) * K;          // past N: computed, not stored

    float4 wv[8];
    auto   load_seg = [&](int seg0) {
#pragma unroll
        for (int i = 0; i < 8; ++i) {
            const int k = seg0 + 128 * i + 4 * lane;
            wv[i]       = k < K ? load_w4(wr, k) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        }
    };
    if constexpr (VEC) load_seg(0);    // weights are constants: they stream before x is ready
    const float bias = b && o < N ? __ldg(b + o) : 0.0f;    // loaded now rather than after the sums

    float tot = 0.0f;    // lane r < R: the running total of row r0 + r
    for (int seg0 = 0; seg0 < K; seg0 += k_seg) {
        __syncthreads();    // the previous segment's reads of xs and ws are done
        // x: every load in flight before the first store (R round trips to L2 otherwise)
        if constexpr (VEC) {
            float4 xv[R];    // thread t loads chunk t of row u, u < R
#pragma unroll
            for (int u = 0; u < R; ++u) {
                const int k = seg0 + 4 * threadIdx.x;
                xv[u]       = u < nr && k < K ? load_x4<MODE>(x, r0 + u, K, k, g) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            }
            const int kl = 4 * threadIdx.x;
#pragma unroll
            for (int u = 0; u < R; ++u) {
                *reinterpret_cast<float4 *>(xs + u * k_seg_pad + (kl / k_sum_slice) * k_slice_pad + kl % k_sum_slice) = xv[u];
            }
            // element 128·i + 4·lane of the segment: slice 4·i + lane / 8, at 4·(lane mod 8)
#pragma unroll
            for (int i = 0; i < 8; ++i) {
                *reinterpret_cast<float4 *>(ws + (4 * i + (lane >> 3)) * k_slice_pad + 4 * (lane & 7)) = wv[i];
            }
            if (seg0 + k_seg < K) load_seg(seg0 + k_seg);
        } else {
            float xv[R][4];    // thread t loads k = t + 256·q of row u
#pragma unroll
            for (int u = 0; u < R; ++u) {
#pragma unroll
                for (int q = 0; q < 4; ++q) {
                    const int k = seg0 + threadIdx.x + 256 * q;
                    xv[u][q]    = u < nr && k < K ? load_x<MODE>(x, r0 + u, K, k, g) : 0.0f;
                }
            }
#pragma unroll
            for (int u = 0; u < R; ++u) {
#pragma unroll
                for (int q = 0; q < 4; ++q) {
                    const int kl = threadIdx.x + 256 * q;
                    xs[u * k_seg_pad + (kl / k_sum_slice) * k_slice_pad + kl % k_sum_slice] = xv[u][q];
                }
            }
            for (int i = 0; i < 32; ++i) {
                const int k = seg0 + 32 * i + lane;
                ws[i * k_slice_pad + lane] = k < K ? load_w(wr, k) : 0.0f;
            }
        }
        __syncthreads();

        float s[R];
#pragma unroll
        for (int r = 0; r < R; ++r) s[r] = 0.0f;
        const float * wl = ws + lane * k_slice_pad;
#pragma unroll
        for (int i = 0; i < k_sum_slice / 4; ++i) {
            const float4 wq = *reinterpret_cast<const float4 *>(wl + 4 * i);
#pragma unroll
            for (int r = 0; r < R; ++r) {
                if (r < nr) {    // the same for the whole block
                    const float4 xq = *reinterpret_cast<const float4 *>(xs + r * k_seg_pad + lane * k_slice_pad + 4 * i);
                    s[r] = fma4(xq, wq, s[r]);
                }
            }
        }
        // the slice sums in order; those of slices past K are +0 (0·0 only), and the total, never
        // −0, stays itself when one is added: so all 32 are, in 8 loads and a chain of 32 adds
        __syncwarp();    // every lane has read its weights: ws takes the slice sums
#pragma unroll
        for (int r = 0; r < R; ++r) ws[r * k_slice_pad + lane] = s[r];
        __syncwarp();
        if (lane < nr) {
            float4 p[8];
#pragma unroll
            for (int q = 0; q < 8; ++q) p[q] = *reinterpret_cast<const float4 *>(ws + lane * k_slice_pad + 4 * q);
#pragma unroll
            for (int q = 0; q < 8; ++q) tot = (((tot + p[q].x) + p[q].y) + p[q].z) + p[q].w;
        }
    }

    if (lane < nr && o < N) {
        const int    r  = r0 + lane;
        const int    ln = MODE != SKINNY_LINEAR ? r / g.t : 0;    // lane of the row (NCW per lane)
        const size_t at = MODE != SKINNY_LINEAR ? ((size_t) ln * N + o) * g.t + (r - ln * g.t) : (size_t) r * N + o;
        const float  v  = tot + bias;
        const float  a  = g.act ? leaky(v, g.slope) : v;
        // the add kernel's sum (the product's value first), read before y[at] is written
        const float  v2 = MODE != SKINNY_LINEAR && g.res ? a + g.res[at] : a;
        y[at]           = v2;
        if (MODE == SKINNY_CONV_COL && g.ncol) store_next_col(g.ncol, g.nk, g.ndil, g.nrelu, g.t, N, ln, r - ln * g.t, o, v2);
    }
}

template <int R, int MODE, class WT>
void launch_skinny(const float * x, int64_t n, int64_t K, const WT * w, const float * b, int64_t N, float * y,
                   conv_geom g, cudaStream_t s) {
    const dim3   grid((unsigned) ((N + k_gemv_outs - 1) / k_gemv_outs), (unsigned) ((n + R - 1) / R));
    const bool   vec = K % 4 == 0 && (MODE == SKINNY_CONV || (reinterpret_cast<uintptr_t>(x) % 16) == 0) &&
                     (reinterpret_cast<uintptr_t>(w) % (4 * sizeof(WT))) == 0;
    auto         kernel = vec ? linear_skinny_kernel<R, true, MODE, WT> : linear_skinny_kernel<R, false, MODE, WT>;
    const size_t smem   = gemv_smem_bytes(R);
    allow_shared("linear_skinny (shared memory size)", kernel, smem);
    launch("linear_skinny", kernel, grid, dim3(256), smem, s, x, (int) n, (int) K, w, b, (int) N, y, g);
}

// MB_CUDA_SKINNY_ROWS=4|8|16: that row tile (from 5 rows on), to compare speeds (a tile's
// shape does not change any output's sums). Read on every call, so a test can force each
int forced_skinny_rows() {
    const char * v = std::getenv("MB_CUDA_SKINNY_ROWS");
    const int    i = v ? std::atoi(v) : 0;
    return i == 4 || i == 8 || i == 16 ? i : 0;
}

template <int MODE, class WT>
void skinny(const float * x, int64_t n, int64_t K, const WT * w, const float * b, int64_t N, float * y,
            conv_geom g, cudaStream_t s) {
    const int forced = forced_skinny_rows();
    // F32 weights on row-major x (linear, conv1d on its im2col), 5–64 rows: cuda-gemv.cu where
    // MB_CUDA_GEMV asks for it
    if constexpr (std::is_same_v<WT, float> && MODE != SKINNY_CONV) {
        conv_geom gg = g;
        if (MODE == SKINNY_LINEAR) gg.t = 0;    // row-major y
        if (!forced && gemv_rows(x, n, K, w, b, N, y, gg, s)) {
            return;
        }
    }
    // (16-row tiles for the 20- and 40-frame chained convs were slower: 1.655–1.665 against
    // 1.589–1.640 ms a 10-token plan, H100, twentieth session)
    const int rows = n <= 4 ? 4 : forced ? forced : 8;
    if (rows == 4) {
        launch_skinny<4, MODE>(x, n, K, w, b, N, y, g, s);
    } else if (rows == 8) {
        launch_skinny<8, MODE>(x, n, K, w, b, N, y, g, s);
    } else {
        launch_skinny<16, MODE>(x, n, K, w, b, N, y, g, s);
    }
}

// MB_PRECISION_TF32, y[n, N] = x[n, K]·w[N, K]ᵀ + b for n % 16 == 0, N % 16 == 0, K % 8 == 0:
// x is matrix A (row-major), w read as Bᵀ (column-major with ld K), so neither is copied.
// A warp owns 16 output columns against up to 64 rows (4 accumulators), so each weight
// fragment is read once per 64 rows; 4 warps a block
constexpr int k_tc_rows = 64;

__global__ void __launch_bounds__(128) linear_tf32_kernel(const float * __restrict__ x, int n, int K,
                                                          const float * __restrict__ w, const float * __restrict__ b,
                                                          int N, float * __restrict__ y) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
    __trap();    // TF32 tensor cores start with compute capability 8.0; the backend never launches this there
#else
    using namespace nvcuda;
    const int warp = threadIdx.x >> 5;
    const int o0   = (blockIdx.x * 4 + warp) * 16;
    const int r0   = blockIdx.y * k_tc_rows;
    if (o0 >= N) return;
    const int m_tiles = min(k_tc_rows, n - r0) / 16;

    wmma::fragment<wmma::accumulator, 16, 16, 8, float> acc[k_tc_rows / 16];
#pragma unroll
    for (int i = 0; i < k_tc_rows / 16; ++i) wmma::fill_fragment(acc[i], 0.0f);
    for (int k = 0; k < K; k += 8) {
        wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::col_major> bf;
        wmma::load_matrix_sync(bf, w + (size_t) o0 * K + k, K);
#pragma unroll
        for (int e = 0; e < bf.num_elements; ++e) bf.x[e] = wmma::__float_to_tf32(bf.x[e]);
#pragma unroll
        for (int i = 0; i < k_tc_rows / 16; ++i) {
            if (i < m_tiles) {
                wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> af;
                wmma::load_matrix_sync(af, x + (size_t) (r0 + 16 * i) * K + k, K);
#pragma unroll
                for (int e = 0; e < af.num_elements; ++e) af.x[e] = wmma::__float_to_tf32(af.x[e]);
                wmma::mma_sync(acc[i], af, bf, acc[i]);
            }
        }
    }
#pragma unroll
    for (int i = 0; i < k_tc_rows / 16; ++i) {
        if (i < m_tiles) wmma::store_matrix_sync(y + (size_t) (r0 + 16 * i) * N + o0, acc[i], N, wmma::mem_row_major);
    }
    if (b) {
        __syncwarp();
        const int lane = threadIdx.x & 31;
        for (int r = 0; r < m_tiles * 16; ++r) {
            if (lane < 16) y[(size_t) (r0 + r) * N + o0 + lane] += b[o0 + lane];
        }
    }
#endif
}

// sum over the block (blockDim.x a multiple of 32, ≤ 1024); every thread gets the result
__device__ double block_sum_d(double v, double * scratch) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, n_warp = blockDim.x >> 5;
    v = warp_sum_d(v);
    __syncthreads();    // scratch may still be read from a previous call
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    double t = 0.0;
    for (int i = 0; i < n_warp; ++i) t += scratch[i];
    return t;
}

// one warp a row for d ≤ 512: the row stays in registers and the sums meet in shuffles, with
// no block barrier (the root planner's and decoder's rows: 0.72 → 0.59 ms and 0.45 → 0.28 ms per
// stage on the H200, with the decoder's im2col). Wider rows keep the block kernel: a warp of
// 1024-wide rows made the pose planner 0.2 ms slower
constexpr int k_ln_warp_max = 16;    // values per lane

__global__ void __launch_bounds__(128) add_layer_norm_warp_kernel(float * x, const float * __restrict__ r, int n,
                                                                  int d, const float * __restrict__ g,
                                                                  const float * __restrict__ b, float eps) {
    const int row = blockIdx.x * 4 + (threadIdx.x >> 5), lane = threadIdx.x & 31;
    if (row >= n) return;
    float *       xr = x + (size_t) row * d;
    const float * rr = r ? r + (size_t) row * d : nullptr;
    float         v[k_ln_warp_max], gv[k_ln_warp_max], bv[k_ln_warp_max];
    double        s = 0.0;
#pragma unroll
    for (int i = 0; i < k_ln_warp_max; ++i) {    // g and b too: their loads wait beside x's, not after the sums
        const int j = lane + 32 * i;
        v[i]        = j < d ? (rr ? xr[j] + rr[j] : xr[j]) : 0.0f;
        gv[i]       = j < d ? g[j] : 0.0f;
        bv[i]       = j < d ? b[j] : 0.0f;
    }
#pragma unroll
    for (int i = 0; i < k_ln_warp_max; ++i) s += v[i];
    const double mean = warp_sum_d(s) / (double) d;
    double       q    = 0.0;
#pragma unroll
    for (int i = 0; i < k_ln_warp_max; ++i) {
        const double c = (double) v[i] - mean;
        if (lane + 32 * i < d) q += c * c;
    }
    const double var = warp_sum_d(q) / (double) d;
    const float  inv = (float) (1.0 / sqrt(var + (double) eps));
    const float  mf  = (float) mean;
#pragma unroll
    for (int i = 0; i < k_ln_warp_max; ++i) {
        const int j = lane + 32 * i;
        if (j < d) xr[j] = ((v[i] - mf) * inv) * gv[i] + bv[i];
    }
}

// one block a row (wider rows); the row (x + r) is kept in shared memory
__global__ void add_layer_norm_kernel(float * x, const float * __restrict__ r, int d, const float * __restrict__ g,
                                      const float * __restrict__ b, float eps) {
    extern __shared__ float row[];
    __shared__ double scratch[32];
    float *       xr = x + (size_t) blockIdx.x * d;
    const float * rr = r ? r + (size_t) blockIdx.x * d : nullptr;
    // rows of up to 4 values a thread (the pose planner's 1,024): g and b in registers, their loads
    // beside x's instead of after the two sums
    constexpr int k_held = 4;
    const bool    held   = d <= k_held * (int) blockDim.x;
    float         gv[k_held], bv[k_held];
    if (held) {
#pragma unroll
        for (int i = 0; i < k_held; ++i) {
            const int j = threadIdx.x + i * blockDim.x;
            gv[i]       = j < d ? g[j] : 0.0f;
            bv[i]       = j < d ? b[j] : 0.0f;
        }
    }
    double s = 0.0;
    for (int j = threadIdx.x; j < d; j += blockDim.x) {
        const float v = rr ? xr[j] + rr[j] : xr[j];
        row[j]        = v;
        s += v;
    }
    const double mean = block_sum_d(s, scratch) / (double) d;
    double q = 0.0;
    for (int j = threadIdx.x; j < d; j += blockDim.x) {
        const double c = (double) row[j] - mean;
        q += c * c;
    }
    const double var = block_sum_d(q, scratch) / (double) d;
    const float  inv = (float) (1.0 / sqrt(var + (double) eps));
    const float  mf  = (float) mean;
    if (held) {
#pragma unroll
        for (int i = 0; i < k_held; ++i) {
            const int j = threadIdx.x + i * blockDim.x;
            if (j < d) xr[j] = ((row[j] - mf) * inv) * gv[i] + bv[i];
        }
    } else {
        for (int j = threadIdx.x; j < d; j += blockDim.x) xr[j] = ((row[j] - mf) * inv) * g[j] + b[j];
    }
}

// one block per (head, lane, group of queries), one warp per query row (rows 4z + warp, then
// 4·gridDim.z further): the warp keeps its query's n scores in shared memory, so a block reads its
// lane's keys and values for several queries (a block per query made 65,536 tiny blocks per
// layer at 256 lanes of 16 tokens). Small batches split the queries over more blocks (z); a
// query's arithmetic is the same either way
constexpr int k_attn_warps = 4;

// the attention arithmetic of one query, shared by both kernels so that they give the same bits:
// a score is a serial fmaf over the head in ascending channel order (four at a time where the
// rows allow 16-byte loads: the same order), scaled; the softmax keeps exp(s − max) (0 for masked
// keys) in sc and returns the warp's sum
__device__ __forceinline__ float attn_dot4(float a, float4 qv, float4 kv) {
    return fmaf(qv.w, kv.w, fmaf(qv.z, kv.z, fmaf(qv.y, kv.y, fmaf(qv.x, kv.x, a))));
}

// a block's lane (blockIdx.y): its qkv rows, output rows and key mask
__device__ __forceinline__ void attn_to_lane(const float * __restrict__ & qkv, float * __restrict__ & out,
                                             const uint8_t * __restrict__ & key_mask, int n, int d) {
    const size_t l = blockIdx.y;
    qkv += l * n * 3 * d;
    out += l * n * d;
    if (key_mask) key_mask += l * n;
}

__device__ __forceinline__ float attn_exp_scores(float * sc, int n, int lane) {
    float mx = -INFINITY;
    for (int j = lane; j < n; j += 32) mx = fmaxf(mx, sc[j]);
    mx        = warp_max(mx);
    float sum = 0.0f;
    for (int j = lane; j < n; j += 32) {
        const float e = sc[j] == -INFINITY ? 0.0f : expf(sc[j] - mx);
        sc[j]         = e;
        sum += e;
    }
    return warp_sum(sum);
}

__global__ void __launch_bounds__(32 * k_attn_warps) attention_kernel(const float * __restrict__ qkv, int n, int d,
                                                                      int dh, const uint8_t * __restrict__ key_mask,
                                                                      float * __restrict__ out) {
    extern __shared__ float sc_all[];
    const int h = blockIdx.x;
    attn_to_lane(qkv, out, key_mask, n, d);
    const int   lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    float *     sc    = sc_all + warp * n;
    const float scale = 1.0f / sqrtf((float) dh);
    const bool  vec   = dh % 4 == 0 && d % 4 == 0 && reinterpret_cast<uintptr_t>(qkv) % 16 == 0;
    for (int i = blockIdx.z * k_attn_warps + warp; i < n; i += k_attn_warps * gridDim.z) {
        const float * q = qkv + (size_t) i * 3 * d + h * dh;
        // lane j scores keys j, j + 32, …: each a serial fmaf dot product over the head (16-byte
        // loads where aligned), so the scores take one round trip to memory (a warp per key, a
        // strided product and a shuffle tree, took 11.9 µs a call at batch one, this 8.1; H200, ncu)
        for (int j = lane; j < n; j += 32) {
            float acc = -INFINITY;
            if (!(key_mask && key_mask[j])) {
                const float * k = qkv + (size_t) j * 3 * d + d + h * dh;
                float         a = 0.0f;
                if (vec) {
#pragma unroll 4
                    for (int c = 0; c < dh; c += 4) {
                        a = attn_dot4(a, __ldg(reinterpret_cast<const float4 *>(q + c)),
                                      __ldg(reinterpret_cast<const float4 *>(k + c)));
                    }
                } else {
                    for (int c = 0; c < dh; ++c) a = fmaf(__ldg(q + c), __ldg(k + c), a);
                }
                acc = a * scale;
            }
            sc[j] = acc;
        }
        __syncwarp();
        const float sum = attn_exp_scores(sc, n, lane);
        __syncwarp();
        for (int c = lane; c < dh; c += 32) {
            float o = 0.0f;
            // unrolled so that 8 values' loads are in flight at once (the same sums in the same order)
#pragma unroll 8
            for (int j = 0; j < n; ++j) o += (sc[j] / sum) * qkv[(size_t) j * 3 * d + 2 * d + h * dh + c];
            out[(size_t) i * d + h * dh + c] = o;
        }
        __syncwarp();    // the next query's scores overwrite sc
    }
}

// the same arithmetic per query (every score a serial fmaf over the head in ascending channel
// order, the same max, exps, sum and quotients, each output summed over keys in ascending order),
// with the lane's keys and values for the head staged once per block in shared memory by all
// its threads (coalesced 16-byte loads; rows padded to dh + 4 floats so that lanes reading
// different keys hit different banks) and each key's weight sc[j] / sum computed once per query
// instead of once per output channel. attention_kernel reads every key row from global memory
// per warp with only n lanes active (n ≈ 10 of 32) and divides inside the value loop: 84-92 µs
// a call at 256 lanes, this one 42-44 µs (H100, ncu). Needs dh % 4 == 0, d % 4 == 0 and
// 16-byte aligned qkv
constexpr int k_attn_pad = 4;

// stage_q (where the block has one query a warp: gridDim.z · k_attn_warps ≥ n): the block's query
// rows staged with the keys and values, and every staging load issued four at a time before the
// stores (a load, its store, then the next load: a round trip to L2 each), so that the whole
// kernel waits on memory once. The same values reach the same arithmetic: the same bits
__global__ void __launch_bounds__(32 * k_attn_warps) attention_staged_kernel(const float * __restrict__ qkv, int n,
                                                                             int d, int dh,
                                                                             const uint8_t * __restrict__ key_mask,
                                                                             float * __restrict__ out, int stage_q) {
    extern __shared__ float4 attn_smem[];
    const int h = blockIdx.x;
    attn_to_lane(qkv, out, key_mask, n, d);
    const int ld = dh + k_attn_pad;
    float *   ks = reinterpret_cast<float *>(attn_smem);     // [n, ld]
    float *   vs = ks + (size_t) n * ld;                      // [n, ld]
    float *   qs = vs + (size_t) n * ld + k_attn_warps * n;   // stage_q: [k_attn_warps, ld], query z·warps + w
    const int q4 = dh / 4, i0 = blockIdx.z * k_attn_warps;
    const int nq = stage_q ? min(k_attn_warps, n - i0) : 0, kv = 2 * n * q4;
    // element e (a float4): keys and values (e < kv), then the block's queries; where it is read
    // and where it goes
    struct place {
        const float * from;
        float *       to;
    };
    auto at = [&](int e) {
        if (e < kv) {
            const int which = e / (n * q4), r = e - which * n * q4, j = r / q4, c = (r - j * q4) * 4;
            return place{qkv + (size_t) j * 3 * d + (1 + which) * d + h * dh + c, (which ? vs : ks) + j * ld + c};
        }
        const int r = (e - kv) / q4, c = (e - kv - r * q4) * 4;
        return place{qkv + (size_t) (i0 + r) * 3 * d + h * dh + c, qs + r * ld + c};
    };
    const int total = kv + nq * q4;    // nq = 0 without stage_q: keys and values alone
    constexpr int B = 4;
    for (int e0 = threadIdx.x; e0 < total; e0 += B * blockDim.x) {
        float4  v[B];
        float * to[B];
#pragma unroll
        for (int b = 0; b < B; ++b) {
            const int e = e0 + b * blockDim.x;
            if (e < total) {
                const place p = at(e);
                v[b]          = __ldg(reinterpret_cast<const float4 *>(p.from));
                to[b]         = p.to;
            }
        }
#pragma unroll
        for (int b = 0; b < B; ++b) {
            if (e0 + b * blockDim.x < total) *reinterpret_cast<float4 *>(to[b]) = v[b];
        }
    }
    __syncthreads();
    const int   lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    float *     sc    = vs + (size_t) n * ld + warp * n;
    const float scale = 1.0f / sqrtf((float) dh);
    for (int i = blockIdx.z * k_attn_warps + warp; i < n; i += k_attn_warps * gridDim.z) {
        const float * q = qkv + (size_t) i * 3 * d + h * dh;
        for (int j = lane; j < n; j += 32) {
            float acc = -INFINITY;
            if (!(key_mask && key_mask[j])) {
                const float * k = ks + j * ld;
                float         a = 0.0f;
                if (stage_q) {
                    const float * qw = qs + (i - i0) * ld;
#pragma unroll 4
                    for (int c = 0; c < dh; c += 4) {
                        a = attn_dot4(a, *reinterpret_cast<const float4 *>(qw + c), *reinterpret_cast<const float4 *>(k + c));
                    }
                } else {
#pragma unroll 4
                    for (int c = 0; c < dh; c += 4) {
                        a = attn_dot4(a, __ldg(reinterpret_cast<const float4 *>(q + c)),
                                      *reinterpret_cast<const float4 *>(k + c));
                    }
                }
                acc = a * scale;
            }
            sc[j] = acc;
        }
        __syncwarp();
        const float sum = attn_exp_scores(sc, n, lane);
        for (int j = lane; j < n; j += 32) sc[j] = sc[j] / sum;     // the weight attention_kernel forms per use
        __syncwarp();
        for (int c = lane; c < dh; c += 32) {
            float o = 0.0f;
#pragma unroll 8
            for (int j = 0; j < n; ++j) o += sc[j] * vs[j * ld + c];
            out[(size_t) i * d + h * dh + c] = o;
        }
        __syncwarp();    // the next query's scores overwrite sc
    }
}

__global__ void transpose_kernel(const float * __restrict__ x, int rows, int cols, int ldx, float * __restrict__ y,
                                 int ldy, int act, float slope) {
    __shared__ float tile[32][33];
    x += (size_t) blockIdx.z * rows * ldx;
    y += (size_t) blockIdx.z * cols * ldy;
    const int c0 = blockIdx.x * 32, r0 = blockIdx.y * 32;
    for (int j = threadIdx.y; j < 32; j += blockDim.y) {
        const int r = r0 + j, c = c0 + threadIdx.x;
        if (r < rows && c < cols) tile[j][threadIdx.x] = x[(size_t) r * ldx + c];
    }
    __syncthreads();
    for (int j = threadIdx.y; j < 32; j += blockDim.y) {
        const int c = c0 + j, r = r0 + threadIdx.x;
        if (r < rows && c < cols) {
            const float v             = tile[threadIdx.x][j];
            y[(size_t) c * ldy + r]  = act ? leaky(v, slope) : v;
        }
    }
}

// grid-stride loop over i < n
#define MB_FOR_EACH(i, n) \
    for (int64_t i = blockIdx.x * (int64_t) blockDim.x + threadIdx.x; i < (n); i += (int64_t) gridDim.x * blockDim.x)

template <class T>
__global__ void fill_kernel(int64_t n, T v, T * y) {
    MB_FOR_EACH(i, n) y[i] = v;
}

__global__ void add_kernel(const float * a, const float * b, int64_t n, int64_t n_b, float * y) {
    MB_FOR_EACH(i, n) y[i] = a[i] + b[i % n_b];
}

__global__ void silu_kernel(const float * x, int64_t n, float * y) {
    MB_FOR_EACH(i, n) y[i] = x[i] / (1.0f + expf(-x[i]));
}

__global__ void leaky_relu_kernel(const float * x, int64_t n, float slope, float * y) {
    MB_FOR_EACH(i, n) y[i] = leaky(x[i], slope);
}

__global__ void copy_rows_kernel(const float * x, int64_t ldx, int64_t n, int64_t d, float * y, int64_t ldy) {
    MB_FOR_EACH(e, n * d) {
        const int64_t i = e / d, j = e % d;
        y[i * ldy + j]  = x[i * ldx + j];
    }
}

__global__ void scatter_rows_kernel(const float * x, const int32_t * idx, int64_t k, int64_t d, float * y) {
    MB_FOR_EACH(e, k * d) {
        const int64_t i = e / d, j = e % d;
        y[int64_t(idx[i]) * d + j] = x[e];
    }
}

__global__ void where_rows_kernel(const uint8_t * sel, const float * a, int64_t lda, const float * b, int64_t ldb,
                                  int64_t n, int64_t d, float * y, int64_t ldy) {
    MB_FOR_EACH(e, n * d) {
        const int64_t i = e / d, j = e % d;
        y[i * ldy + j]  = sel[i] ? a[i * lda + j] : b[i * ldb + j];
    }
}

__global__ void mask_cols_kernel(int64_t c, int64_t t, int64_t n_valid, float * x) {
    const int64_t w = t - n_valid;
    MB_FOR_EACH(e, c * w) x[(e / w) * t + n_valid + e % w] = 0.0f;
}

__global__ void upsample2_kernel(const float * x, int64_t c, int64_t t, float * y) {
    MB_FOR_EACH(e, c * 2 * t) y[e] = x[(e / (2 * t)) * t + (e % (2 * t)) / 2];
}

__global__ void embed_heads_kernel(const float * table, int64_t n_head, int64_t rows_per_head, int64_t d,
                                   const int32_t * idx, int64_t n, float * y) {
    MB_FOR_EACH(e, n * d) {
        const int64_t i = e / d, k = e % d;
        y[e]            = table[((i % n_head) * rows_per_head + idx[i]) * d + k];
    }
}

__global__ void replace_frames_kernel(const float * src, const uint8_t * sel, int64_t t, int64_t f, int64_t w,
                                      float * h, int64_t n_batch) {
    const int64_t per = t * f * w;      // elements of one lane of h and of src
    MB_FOR_EACH(e, n_batch * per) {
        const int64_t g = e / w, k = e % w;     // frame over all lanes
        if (!sel[g]) continue;
        const int64_t l = g / (t * f), gl = g - l * t * f;
        const int64_t p = gl / f, j = gl % f;
        h[l * per + (j * w + k) * t + p] = src[e];
    }
}

// correctly rounded float log and exp (through double), as the host's logf / expf
__device__ __forceinline__ float log_f(float v) {
    return (float) log((double) v);
}
__device__ __forceinline__ float exp_f(float v) {
    return (float) exp((double) v);
}

// one thread per row, the host's loops in the host's order (sampling.cpp, pose-planner.cpp)
__global__ void sample_codes_kernel(const float * logits, int64_t m, int64_t n_code, const float * u, int32_t * tokens,
                                    float * prob) {
    MB_FOR_EACH(r, m) {
        const float * l  = logits + r * n_code;
        int32_t       t  = 0;
        if (!u) {
            for (int64_t c = 1; c < n_code; ++c) {
                if (l[c] > l[t] || (isnan(l[t]) && !isnan(l[c]))) t = (int32_t) c;
            }
        } else {
            const float * ur   = u + r * n_code;
            auto          gumb = [](float v) { return -log_f(fmaxf(-log_f(fmaxf(v, 1e-20f)), 1e-20f)); };
            float         best = l[0] + gumb(ur[0]);
            for (int64_t c = 1; c < n_code; ++c) {
                const float v = l[c] + gumb(ur[c]);
                if (v > best || (isnan(best) && !isnan(v))) {
                    t    = (int32_t) c;
                    best = v;
                }
            }
        }
        float mx = l[0];
        for (int64_t c = 1; c < n_code; ++c) mx = fmaxf(mx, l[c]);
        float sum = 0.0f;
        for (int64_t c = 0; c < n_code; ++c) sum += exp_f(l[c] - mx);
        tokens[r] = t;
        prob[r]   = exp_f(l[t] - mx) * (1.0f / sum);
    }
}

__global__ void remask_lowest_kernel(const float * prob, int64_t m, int64_t n_mask, int32_t mask_id, int32_t * tokens,
                                     int64_t n_batch) {
    MB_FOR_EACH(e, n_batch * m) {
        const int64_t l = e / m, i = e - l * m;     // ranked within lane l
        const float * p    = prob + l * m;
        auto          key  = [&](int64_t j) { return isnan(p[j]) ? INFINITY : p[j]; };
        const float   ki   = key(i);
        int64_t       rank = 0;
        for (int64_t j = 0; j < m; ++j) {
            const float kj = key(j);
            rank += (kj < ki || (kj == ki && j < i)) ? 1 : 0;
        }
        if (rank < n_mask) tokens[e] = mask_id;
    }
}

unsigned grid_for(int64_t total, int block) {
    const int64_t g = (total + block - 1) / block;
    return (unsigned) (g < 1 ? 1 : (g > 65535 ? 65535 : g));
}

} // namespace

void linear_skinny(const float * x, int64_t n, int64_t n_in, const float * w, const float * b, int64_t n_out,
                   float * y, cudaStream_t s) {
    skinny<SKINNY_LINEAR>(x, n, n_in, w, b, n_out, y, conv_geom{}, s);
    check_launch("linear_skinny");
}

void linear_f32(const float * x, int64_t n, int64_t n_in, const float * w, const float * b, int64_t n_out, float * y,
                cudaStream_t s, int act, float slope) {
    if (linear_tiled_fits(n)) {
        linear_tiled(x, n, n_in, w, b, n_out, y, s, act, slope);
    } else {
        skinny<SKINNY_LINEAR>(x, n, n_in, w, b, n_out, y, conv_geom{0, 1, 1, act, slope}, s);
        check_launch("linear_skinny");
    }
}

void linear_skinny_bf16(const float * x, int64_t n, int64_t n_in, const void * w, const float * b, int64_t n_out,
                        float * y, cudaStream_t s) {
    skinny<SKINNY_LINEAR>(x, n, n_in, static_cast<const __nv_bfloat16 *>(w), b, n_out, y, conv_geom{}, s);
    check_launch("linear_skinny_bf16");
}

bool linear_tf32_fits(int64_t n, int64_t n_in, int64_t n_out, const float * x, const float * w) {
    // fragment loads need 32-byte aligned tiles: rows of 8-float multiples from aligned bases
    return n % 16 == 0 && n_out % 16 == 0 && n_in % 8 == 0 && reinterpret_cast<uintptr_t>(x) % 32 == 0 &&
           reinterpret_cast<uintptr_t>(w) % 32 == 0;
}

void linear_tf32(const float * x, int64_t n, int64_t n_in, const float * w, const float * b, int64_t n_out, float * y,
                 cudaStream_t s) {
    const dim3 grid((unsigned) ((n_out / 16 + 3) / 4), (unsigned) ((n + k_tc_rows - 1) / k_tc_rows));
    launch("linear_tf32", linear_tf32_kernel, grid, dim3(128), 0, s, x, (int) n, (int) n_in, w, b, (int) n_out, y);
}

void conv1d_skinny(const float * x, int64_t c_in, int64_t t, const float * w, const float * b, int64_t c_out,
                   int64_t k, int64_t dilation, float * y, int64_t n_batch, cudaStream_t s) {
    skinny<SKINNY_CONV>(x, n_batch * t, c_in * k, w, b, c_out, y, conv_geom{(int) t, (int) k, (int) dilation}, s);
    check_launch("conv1d_skinny");
}

// col[n_batch·t, K]: row r is position r mod t of lane r / t. T = __nv_bfloat16: rounded as it
// is stored (what a BF16 product of the im2col reads; one pass instead of im2col followed by
// f32_to_bf16, half the bytes written)
__device__ __forceinline__ void im2col_store(float * p, float v) { *p = v; }
__device__ __forceinline__ void im2col_store(__nv_bfloat16 * p, float v) { *p = __float2bfloat16_rn(v); }

template <class T>
__global__ void im2col_kernel(const float * __restrict__ x, int c_in, int t, int k, int dilation, T * __restrict__ col,
                              int n_batch, int relu) {
    const int K = c_in * k, total = n_batch * t * K;
    for (int e = blockIdx.x * blockDim.x + threadIdx.x; e < total; e += gridDim.x * blockDim.x) {
        const int r = e / K, ck = e - r * K, c = ck / k, kk = ck - c * k;
        const int l = r / t, i = r - l * t;
        const int src = i + (kk - (k - 1) / 2) * dilation;
        const float v = (src >= 0 && src < t) ? __ldg(x + ((size_t) l * c_in + c) * t + src) : 0.0f;
        im2col_store(col + e, relu ? leaky(v, 0.0f) : v);
    }
}

// the same values, a block per (32 channels, lane): the block reads its channels' rows of x once,
// coalesced, into shared memory (row stride t | 1: lanes reading different channels hit different
// banks), then thread (j, y) writes column j = c·k + kk of the tile for positions y, y + blockDim.y,
// … (no divisions per value; a warp stores 32 consecutive columns). im2col_kernel divides three
// times per value: 27 µs for a 256-lane conv whether it stores floats or bfloat16 (H100, ncu), so
// it was bound by those instructions, not by the bytes; this one 14.6 µs storing bfloat16
constexpr int k_im2col_tile = 32;

template <class T>
__global__ void im2col_tiled_kernel(const float * __restrict__ x, int c_in, int t, int k, int dilation,
                                    T * __restrict__ col, int relu) {
    extern __shared__ float im2col_xs[];
    const int l = blockIdx.y, c0 = blockIdx.x * k_im2col_tile, nc = min(k_im2col_tile, c_in - c0), ts = t | 1;
    const float * xl = x + ((size_t) l * c_in + c0) * t;
    for (int e = threadIdx.y * blockDim.x + threadIdx.x; e < nc * t; e += blockDim.x * blockDim.y) {
        const int c = e / t;
        const float v                   = __ldg(xl + e);
        im2col_xs[c * ts + (e - c * t)] = relu ? leaky(v, 0.0f) : v;
    }
    __syncthreads();
    const int j = threadIdx.x;
    if (j >= nc * k) return;
    const int K = c_in * k, c = j / k, kk = j - c * k, off = (kk - (k - 1) / 2) * dilation;
    const float * xr = im2col_xs + c * ts;
    T *           cl = col + (size_t) l * t * K + (size_t) c0 * k + j;
    for (int i = threadIdx.y; i < t; i += blockDim.y) {
        const int src = i + off;
        im2col_store(cl + (size_t) i * K, (src >= 0 && src < t) ? xr[src] : 0.0f);
    }
}

template <class T>
void launch_im2col(const float * x, int64_t c_in, int64_t t, int64_t k, int64_t dilation, T * col, int64_t n_batch,
                   cudaStream_t s, int relu) {
    const size_t smem = (size_t) k_im2col_tile * (size_t) (t | 1) * sizeof(float);
    if (k <= 8 && smem <= 48 * 1024 && n_batch <= 65535) {
        const int  w = k_im2col_tile * (int) k;     // columns of a tile: one thread each
        const dim3 block((unsigned) w, (unsigned) std::max(1, 256 / w));
        const dim3 grid((unsigned) ((c_in + k_im2col_tile - 1) / k_im2col_tile), (unsigned) n_batch);
        im2col_tiled_kernel<T><<<grid, block, smem, s>>>(x, (int) c_in, (int) t, (int) k, (int) dilation, col, relu);
    } else {
        const int64_t total = n_batch * t * c_in * k;
        im2col_kernel<T><<<(unsigned) std::min<int64_t>((total + 255) / 256, 8192), 256, 0, s>>>(
            x, (int) c_in, (int) t, (int) k, (int) dilation, col, (int) n_batch, relu);
    }
    check_launch("im2col");
}

bool conv1d_col_fits(int64_t c_in, int64_t t, int64_t k, int64_t capacity) {
    return c_in * k % 4 == 0 && t * c_in * k <= capacity;
}

void im2col(const float * x, int64_t c_in, int64_t t, int64_t k, int64_t dilation, float * col, int64_t n_batch,
            cudaStream_t s, int relu) {
    launch_im2col(x, c_in, t, k, dilation, col, n_batch, s, relu);
}

void im2col_bf16(const float * x, int64_t c_in, int64_t t, int64_t k, int64_t dilation, void * col, int64_t n_batch,
                 cudaStream_t s) {
    launch_im2col(x, c_in, t, k, dilation, static_cast<__nv_bfloat16 *>(col), n_batch, s, 0);
}

void conv1d_col(const float * x, int64_t c_in, int64_t t, const float * w, const void * w_bf16, const float * b,
                int64_t c_out, int64_t k, int64_t dilation, float * y, float * col, int64_t n_batch, cudaStream_t s,
                int act, float slope, int relu_in, const float * res) {
    im2col(x, c_in, t, k, dilation, col, n_batch, s, relu_in);
    conv1d_on_col(col, c_in, t, k, w, w_bf16, b, c_out, y, n_batch, s, act, slope, res);
}

void conv1d_on_col(const float * col, int64_t c_in, int64_t t, int64_t k, const float * w, const void * w_bf16,
                   const float * b, int64_t c_out, float * y, int64_t n_batch, cudaStream_t s, int act, float slope,
                   const float * res, float * ncol, int64_t nk, int64_t ndil, int nrelu) {
    conv_geom g{(int) t, (int) k, 1, act, slope, res};
    g.ncol = ncol, g.nk = (int) nk, g.ndil = (int) ndil, g.nrelu = nrelu;
    if (w_bf16) {
        skinny<SKINNY_CONV_COL>(col, n_batch * t, c_in * k, static_cast<const __nv_bfloat16 *>(w_bf16), b, c_out, y,
                                g, s);
    } else {
        skinny<SKINNY_CONV_COL>(col, n_batch * t, c_in * k, w, b, c_out, y, g, s);
    }
    check_launch("conv1d_col");
}

void conv1d_skinny_bf16(const float * x, int64_t c_in, int64_t t, const void * w, const float * b, int64_t c_out,
                        int64_t k, int64_t dilation, float * y, int64_t n_batch, cudaStream_t s) {
    skinny<SKINNY_CONV>(x, n_batch * t, c_in * k, static_cast<const __nv_bfloat16 *>(w), b, c_out, y,
                 conv_geom{(int) t, (int) k, (int) dilation}, s);
    check_launch("conv1d_skinny_bf16");
}

__global__ void f32_to_bf16_kernel(const float * __restrict__ x, int64_t n, __nv_bfloat16 * __restrict__ y) {
    for (int64_t i = blockIdx.x * (int64_t) blockDim.x + threadIdx.x; i < n; i += (int64_t) gridDim.x * blockDim.x) {
        y[i] = __float2bfloat16_rn(x[i]);
    }
}

// the same four values a thread: 16-byte loads, 8-byte stores (x 16-, y 8-byte aligned, n4 = n / 4)
__global__ void f32_to_bf16_x4_kernel(const float4 * __restrict__ x, int64_t n4, uint2 * __restrict__ y) {
    for (int64_t i = blockIdx.x * (int64_t) blockDim.x + threadIdx.x; i < n4; i += (int64_t) gridDim.x * blockDim.x) {
        const float4         v  = __ldg(x + i);
        const __nv_bfloat162 lo = __floats2bfloat162_rn(v.x, v.y), hi = __floats2bfloat162_rn(v.z, v.w);
        y[i] = make_uint2(*reinterpret_cast<const unsigned *>(&lo), *reinterpret_cast<const unsigned *>(&hi));
    }
}

void f32_to_bf16(const float * x, int64_t n, void * y, cudaStream_t s) {
    if (n <= 0) return;
    // the activations rounded before every BF16 product (cuda-blas.cu): 163 calls of 10.4 µs a
    // 256-lane chunk (H100, ncu) one value a thread
    if (n % 4 == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0 && reinterpret_cast<uintptr_t>(y) % 8 == 0) {
        const int64_t n4 = n / 4;
        f32_to_bf16_x4_kernel<<<(unsigned) std::min<int64_t>((n4 + 255) / 256, 8192), 256, 0, s>>>(
            reinterpret_cast<const float4 *>(x), n4, static_cast<uint2 *>(y));
    } else {
        f32_to_bf16_kernel<<<(unsigned) std::min<int64_t>((n + 255) / 256, 4096), 256, 0, s>>>(
            x, n, static_cast<__nv_bfloat16 *>(y));
    }
    check_launch("f32_to_bf16");
}

void add_layer_norm(float * x, const float * r, int64_t n, int64_t d, const float * g, const float * b, float eps,
                    cudaStream_t s) {
    if (d <= 32 * k_ln_warp_max) {
        launch("add_layer_norm_warp", add_layer_norm_warp_kernel, dim3((unsigned) ((n + 3) / 4)), dim3(128), 0, s, x,
            r, (int) n, (int) d, g, b, eps);
    } else {
        launch("add_layer_norm", add_layer_norm_kernel, dim3((unsigned) n), dim3(256), (size_t) d * sizeof(float), s,
            x, r, (int) d, g, b, eps);
    }
}

void attention(const float * qkv, int64_t n, int64_t d, int64_t n_head, const uint8_t * key_mask, float * out,
               int64_t n_batch, cudaStream_t s, int kernel) {
    // one warp per query where heads × lanes give fewer than 512 blocks (batch one)
    const int64_t groups = n_head * n_batch >= 512 ? 1 : (n + k_attn_warps - 1) / k_attn_warps;
    const dim3    grid((unsigned) n_head, (unsigned) n_batch, (unsigned) groups);
    const int64_t dh = d / n_head;
    // the staged kernel where its keys and values fit 48 KB of shared memory (n ≤ 88 at dh = 64)
    // its query rows staged too where a block has one query a warp (batch one), but with kernel 2:
    // a 10-token plan 1.710 / 1.717 ms against 1.753 / 1.735 (H100, nineteenth session)
    const int stage_q = kernel != 2 && groups * k_attn_warps >= n ? 1 : 0;
    const size_t staged_bytes =
        (size_t) (2 * n * (dh + k_attn_pad) + k_attn_warps * n + stage_q * k_attn_warps * (dh + k_attn_pad)) * sizeof(float);
    if (kernel != 1 && dh % 4 == 0 && d % 4 == 0 && reinterpret_cast<uintptr_t>(qkv) % 16 == 0 &&
        staged_bytes <= 48 * 1024) {
        attention_staged_kernel<<<grid, 32 * k_attn_warps, staged_bytes, s>>>(qkv, (int) n, (int) d, (int) dh, key_mask,
                                                                               out, stage_q);
    } else {
        attention_kernel<<<grid, 32 * k_attn_warps, (size_t) k_attn_warps * n * sizeof(float), s>>>(
            qkv, (int) n, (int) d, (int) dh, key_mask, out);
    }
    check_launch("attention");
}

void transpose(const float * x, int64_t rows, int64_t cols, float * y, int64_t n_batch, cudaStream_t s, int act,
               float slope, int64_t ldx, int64_t ldy) {
    const dim3 grid((unsigned) ((cols + 31) / 32), (unsigned) ((rows + 31) / 32), (unsigned) n_batch);
    transpose_kernel<<<grid, dim3(32, 8), 0, s>>>(x, (int) rows, (int) cols, (int) (ldx > 0 ? ldx : cols), y,
                                                  (int) (ldy > 0 ? ldy : rows), act, slope);
    check_launch("transpose");
}

void fill_f32(int64_t n, float v, float * y, cudaStream_t s) {
    if (n <= 0) return;
    launch("fill_f32", fill_kernel<float>, dim3(grid_for(n, 256)), dim3(256), 0, s, n, v, y);
}

void fill_i32(int64_t n, int32_t v, int32_t * y, cudaStream_t s) {
    if (n <= 0) return;
    launch("fill_i32", fill_kernel<int32_t>, dim3(grid_for(n, 256)), dim3(256), 0, s, n, v, y);
}

void add(const float * a, const float * b, int64_t n, float * y, int64_t n_b, cudaStream_t s) {
    if (n <= 0) return;
    launch("add", add_kernel, dim3(grid_for(n, 256)), dim3(256), 0, s, a, b, n, n_b > 0 ? n_b : n, y);
}

void relu(const float * x, int64_t n, float * y, cudaStream_t s) {
    leaky_relu(x, n, 0.0f, y, s);
}

void silu(const float * x, int64_t n, float * y, cudaStream_t s) {
    if (n <= 0) return;
    launch("silu", silu_kernel, dim3(grid_for(n, 256)), dim3(256), 0, s, x, n, y);
}

void leaky_relu(const float * x, int64_t n, float slope, float * y, cudaStream_t s) {
    if (n <= 0) return;
    launch("leaky_relu", leaky_relu_kernel, dim3(grid_for(n, 256)), dim3(256), 0, s, x, n, slope, y);
}

void copy_rows(const float * x, int64_t ldx, int64_t n, int64_t d, float * y, int64_t ldy, cudaStream_t s) {
    if (n <= 0 || d <= 0) return;
    launch("copy_rows", copy_rows_kernel, dim3(grid_for(n * d, 256)), dim3(256), 0, s, x, ldx, n, d, y, ldy);
}

void where_rows(const uint8_t * sel, const float * a, int64_t lda, const float * b, int64_t ldb, int64_t n, int64_t d,
                float * y, int64_t ldy, cudaStream_t s) {
    if (n <= 0 || d <= 0) return;
    launch("where_rows", where_rows_kernel, dim3(grid_for(n * d, 256)), dim3(256), 0, s, sel, a, lda, b, ldb, n, d,
        y, ldy);
}

void scatter_rows(const float * x, const int32_t * idx, int64_t k, int64_t d, float * y, cudaStream_t s) {
    if (k <= 0 || d <= 0) return;
    launch("scatter_rows", scatter_rows_kernel, dim3(grid_for(k * d, 256)), dim3(256), 0, s, x, idx, k, d, y);
}

void mask_cols(int64_t c, int64_t t, int64_t n_valid, float * x, cudaStream_t s) {
    if (n_valid >= t || c <= 0) return;
    n_valid = n_valid < 0 ? 0 : n_valid;
    launch("mask_cols", mask_cols_kernel, dim3(grid_for(c * (t - n_valid), 256)), dim3(256), 0, s, c, t, n_valid, x);
}

void upsample2(const float * x, int64_t c, int64_t t, float * y, cudaStream_t s) {
    if (c <= 0 || t <= 0) return;
    launch("upsample2", upsample2_kernel, dim3(grid_for(c * 2 * t, 256)), dim3(256), 0, s, x, c, t, y);
}

void embed_heads(const float * table, int64_t n_head, int64_t rows_per_head, int64_t d, const int32_t * idx,
                 int64_t n, float * y, cudaStream_t s) {
    if (n <= 0 || d <= 0) return;
    launch("embed_heads", embed_heads_kernel, dim3(grid_for(n * d, 256)), dim3(256), 0, s, table, n_head,
        rows_per_head, d, idx, n, y);
}

void replace_frames(const float * src, const uint8_t * sel, int64_t t, int64_t f, int64_t w, float * h,
                    int64_t n_batch, cudaStream_t s) {
    if (t <= 0 || f <= 0 || w <= 0 || n_batch <= 0) return;
    launch("replace_frames", replace_frames_kernel, dim3(grid_for(n_batch * t * f * w, 256)), dim3(256), 0, s, src,
        sel, t, f, w, h, n_batch);
}

void sample_codes(const float * logits, int64_t m, int64_t n_code, const float * u, int32_t * tokens, float * prob,
                  cudaStream_t s) {
    if (m <= 0) return;
    launch("sample_codes", sample_codes_kernel, dim3(grid_for(m, 128)), dim3(128), 0, s, logits, m, n_code, u,
        tokens, prob);
}

void remask_lowest(const float * prob, int64_t m, int64_t n_mask, int32_t mask_id, int32_t * tokens, int64_t n_batch,
                   cudaStream_t s) {
    if (m <= 0 || n_mask <= 0 || n_batch <= 0) return;
    launch("remask_lowest", remask_lowest_kernel, dim3(grid_for(n_batch * m, 128)), dim3(128), 0, s, prob, m, n_mask,
        mask_id, tokens, n_batch);
}

__global__ void stream_floor_kernel(const float4 * __restrict__ w, int64_t n4, float * __restrict__ sink) {
    constexpr int U    = 8;
    const int64_t step = (int64_t) gridDim.x * blockDim.x;
    float         acc  = 0.0f;
    for (int64_t i = (int64_t) blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += U * step) {
        float4 v[U];
#pragma unroll
        for (int u = 0; u < U; ++u) v[u] = i + u * step < n4 ? __ldcs(w + i + u * step) : make_float4(0, 0, 0, 0);
#pragma unroll
        for (int u = 0; u < U; ++u) acc += v[u].x + v[u].y + v[u].z + v[u].w;
    }
    if (acc == 1234.5f) sink[0] = acc;    // never in practice: keeps the loads
}

void stream_floor(const float * w, int64_t n, int blocks, float * sink, cudaStream_t s) {
    launch("stream_floor", stream_floor_kernel, dim3((unsigned) std::max(blocks, 1)), dim3(256), 0, s,
        reinterpret_cast<const float4 *>(w), n / 4, sink);
}

} // namespace mb::cuda
