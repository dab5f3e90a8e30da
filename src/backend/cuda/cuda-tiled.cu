// F32 products of many rows (fused batches): a shared-memory tiled SGEMM that sums every output
// in the order of the GEMV (cuda-kernels.cu; k_sum_slice in cuda-kernels.h): slices of 32 k
// summed with fmaf from 0, their sums added in order to a running total from 0, the bias last.
// So a lane of a batch gets the bits it gets alone, whatever the batch's row count.
//
// A block of TY × TX threads owns BM × BN outputs (TM × TN a thread, taken as two halves of
// TM/2 rows and TN/2 columns so that the fragment reads from shared memory are conflict-free)
// and walks k in tiles of 16, held twice in shared memory so that the next tile's global loads
// are in flight during the current tile's products. Every second tile (and the last) closes a
// slice: its sums join the outputs' totals, one extra register per output. The epilogue adds the
// bias and, for linear_act / conv1d_act, applies leaky_relu to that float (cuda::leaky).
//
// Measured on the H200 (cuda_speed.f32_products_of_many_rows, docs/BACKEND.md): 8 × 8 a thread
// in blocks of 128 threads, two blocks a multiprocessor, beat 256-thread blocks of 8 × 4 or
// 8 × 8 by 5–10 %; k tiles of 32 (one slice a tile) were slower (255 registers), and copying
// the tiles with cp.async into 3 or 4 stages, untransposed and swizzled, gave the same speed.
#include "backend/cuda/cuda-kernels.h"

#include <cstdlib>
#include <cstring>

namespace mb::cuda {
namespace {

template <int H>
__device__ __forceinline__ void read_frag(const float * p, float * v) {
    if constexpr (H == 4) {
        const float4 q = *reinterpret_cast<const float4 *>(p);
        v[0] = q.x, v[1] = q.y, v[2] = q.z, v[3] = q.w;
    } else {
        static_assert(H == 2, "halves of 2 or 4");
        const float2 q = *reinterpret_cast<const float2 *>(p);
        v[0] = q.x, v[1] = q.y;
    }
}

constexpr int k_bk = 16;    // k per shared-memory tile: two tiles make a slice
static_assert(2 * k_bk == k_sum_slice, "a slice is two tiles");

// VEC: K % 4 == 0 and 16-byte aligned x and w (16-byte loads), else scalar loads
template <int TM, int TN, int TY, int TX, int MINB, bool VEC>
__global__ void __launch_bounds__(TY * TX, MINB) linear_tiled_kernel(const float * __restrict__ x, int n, int K,
                                                                    const float * __restrict__ w,
                                                                    const float * __restrict__ b, int N,
                                                                    float * __restrict__ y, int act, float slope) {
    constexpr int NT = TY * TX, BM = TY * TM, BN = TX * TN, HM = TM / 2, HN = TN / 2;
    constexpr int CW = VEC ? 4 : 1, CPR = k_bk / CW;           // loads per row of a tile
    constexpr int AL = BM * CPR / NT, BL = BN * CPR / NT;      // loads per thread
    static_assert(AL >= 1 && BL >= 1 && AL * NT == BM * CPR && BL * NT == BN * CPR, "every thread loads alike");
    __shared__ __align__(16) float as[2][k_bk][BM + 4];        // [k][row]: rows 16 bytes apart per k
    __shared__ __align__(16) float bs[2][k_bk][BN + 4];

    const int tid = threadIdx.x, tx = tid % TX, ty = tid / TX;
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;

    float ar[AL][CW], br[BL][CW];
    auto  load = [&](int k0) {
#pragma unroll
        for (int u = 0; u < AL; ++u) {
            const int c = tid + NT * u, m = c / CPR, k = k0 + (c % CPR) * CW, r = row0 + m;
            if (r < n && k < K) {
                if constexpr (VEC) {
                    const float4 v = __ldg(reinterpret_cast<const float4 *>(x + (size_t) r * K + k));
                    ar[u][0] = v.x, ar[u][1] = v.y, ar[u][2] = v.z, ar[u][3] = v.w;
                } else {
                    ar[u][0] = __ldg(x + (size_t) r * K + k);
                }
            } else {
#pragma unroll
                for (int e = 0; e < CW; ++e) ar[u][e] = 0.0f;
            }
        }
#pragma unroll
        for (int u = 0; u < BL; ++u) {
            const int c = tid + NT * u, m = c / CPR, k = k0 + (c % CPR) * CW, o = col0 + m;
            if (o < N && k < K) {
                if constexpr (VEC) {
                    const float4 v = __ldg(reinterpret_cast<const float4 *>(w + (size_t) o * K + k));
                    br[u][0] = v.x, br[u][1] = v.y, br[u][2] = v.z, br[u][3] = v.w;
                } else {
                    br[u][0] = __ldg(w + (size_t) o * K + k);
                }
            } else {
#pragma unroll
                for (int e = 0; e < CW; ++e) br[u][e] = 0.0f;
            }
        }
    };
    auto store = [&](int buf) {
#pragma unroll
        for (int u = 0; u < AL; ++u) {
            const int c = tid + NT * u, m = c / CPR, kq = (c % CPR) * CW;
#pragma unroll
            for (int e = 0; e < CW; ++e) as[buf][kq + e][m] = ar[u][e];
        }
#pragma unroll
        for (int u = 0; u < BL; ++u) {
            const int c = tid + NT * u, m = c / CPR, kq = (c % CPR) * CW;
#pragma unroll
            for (int e = 0; e < CW; ++e) bs[buf][kq + e][m] = br[u][e];
        }
    };

    float acc[TM][TN], tot[TM][TN];    // the open slice's sums, the totals
#pragma unroll
    for (int i = 0; i < TM; ++i) {
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = tot[i][j] = 0.0f;
    }

    const int nk = (K + k_bk - 1) / k_bk;
    load(0);
    store(0);
    __syncthreads();
    for (int kt = 0; kt < nk; ++kt) {
        const int cur = kt & 1;
        if (kt + 1 < nk) load((kt + 1) * k_bk);
#pragma unroll
        for (int kk = 0; kk < k_bk; ++kk) {
            float a[TM], bv[TN];
            read_frag<HM>(&as[cur][kk][ty * HM], a);
            read_frag<HM>(&as[cur][kk][BM / 2 + ty * HM], a + HM);
            read_frag<HN>(&bs[cur][kk][tx * HN], bv);
            read_frag<HN>(&bs[cur][kk][BN / 2 + tx * HN], bv + HN);
#pragma unroll
            for (int i = 0; i < TM; ++i) {
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i], bv[j], acc[i][j]);
            }
        }
        if ((kt & 1) || kt + 1 == nk) {    // a slice ends: the same for the whole block
#pragma unroll
            for (int i = 0; i < TM; ++i) {
#pragma unroll
                for (int j = 0; j < TN; ++j) {
                    tot[i][j] = tot[i][j] + acc[i][j];
                    acc[i][j] = 0.0f;
                }
            }
        }
        if (kt + 1 < nk) store(cur ^ 1);    // its last reads were before the previous barrier
        __syncthreads();
    }

#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int r = row0 + (i < HM ? ty * HM + i : BM / 2 + ty * HM + i - HM);
        if (r >= n) continue;
#pragma unroll
        for (int j = 0; j < TN; ++j) {
            const int o = col0 + (j < HN ? tx * HN + j : BN / 2 + tx * HN + j - HN);
            if (o < N) {
                const float v            = tot[i][j] + (b ? b[o] : 0.0f);
                y[(size_t) r * N + o] = act ? leaky(v, slope) : v;
            }
        }
    }
}

template <int TM, int TN, int TY, int TX, int MINB>
void launch_tiled(const float * x, int64_t n, int64_t K, const float * w, const float * b, int64_t N, float * y,
                  cudaStream_t s, int act, float slope) {
    constexpr int BM = TY * TM, BN = TX * TN;
    const dim3    grid((unsigned) ((N + BN - 1) / BN), (unsigned) ((n + BM - 1) / BM));
    const bool vec = K % 4 == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0 && reinterpret_cast<uintptr_t>(w) % 16 == 0;
    auto kernel = vec ? linear_tiled_kernel<TM, TN, TY, TX, MINB, true> : linear_tiled_kernel<TM, TN, TY, TX, MINB, false>;
    kernel<<<grid, TY * TX, 0, s>>>(x, (int) n, (int) K, w, b, (int) N, y, act, slope);
}

using launcher = void (*)(const float *, int64_t, int64_t, const float *, const float *, int64_t, float *, cudaStream_t,
                          int, float);

// the tiles: block rows × outputs, throughput relative to "84" (H200,
// cuda_speed.f32_products_of_many_rows, full waves); speed 0: only where MB_CUDA_TILED_TILE
// forces it (for comparisons)
struct tile {
    const char * name;
    int          bm, bn;
    double       speed;
    launcher     run;
};
const tile k_tiles[] = {
    {"88w", 64, 128, 1.06, launch_tiled<8, 8, 8, 16, 2>},     // 128 threads, 225 registers, 2 blocks a multiprocessor
    {"44", 64, 64, 0.855, launch_tiled<4, 4, 16, 16, 2>},     // 256 threads, 85 registers, 2
    {"84", 128, 64, 0, launch_tiled<8, 4, 16, 16, 2>},        // 256 threads, 127 registers, 2 (the fifth session's)
    {"88", 128, 128, 0, launch_tiled<8, 8, 16, 16, 1>},       // 256 threads, 221 registers, 1
};

// the estimated time of a product on a tile: its blocks' outputs (padding included) at the
// tile's throughput. Idle multiprocessors and tails of partial waves are not counted: a fused
// batch runs two states on two streams, whose kernels fill them (88w forced everywhere beat a
// choice that counted whole waves by ~5 % end to end); 44 where 88w pads many outputs (N = 64, 160)
double tile_cost(int64_t n, int64_t N, const tile & t) {
    return double((n + t.bm - 1) / t.bm) * double((N + t.bn - 1) / t.bn) * t.bm * t.bn / t.speed;
}

} // namespace

// MB_CUDA_TILED_ROWS=N: the tiled kernel from N rows on (default k_skinny_max_rows + 1), to
// compare speeds (the bits are the same either way)
int64_t tiled_min_rows() {
    static const int64_t r = [] {
        const char * v = std::getenv("MB_CUDA_TILED_ROWS");
        const long   i = v ? std::atol(v) : 0;
        return i > 0 ? int64_t(i) : k_skinny_max_rows + 1;
    }();
    return r;
}

bool linear_tiled_fits(int64_t n) {
    return n >= tiled_min_rows();
}

void linear_tiled(const float * x, int64_t n, int64_t K, const float * w, const float * b, int64_t N, float * y,
                  cudaStream_t s, int act, float slope) {
    if (n <= 0 || N <= 0) return;
    // MB_CUDA_TILED_TILE=<a k_tiles name> forces that tile (read on every call, for timings and
    // tests; the bits are the same for every tile), else the one of least tile_cost
    const char * f = std::getenv("MB_CUDA_TILED_TILE");
    const tile * t = nullptr;
    for (const tile & c : k_tiles) {
        if (f && std::strcmp(f, c.name) == 0) t = &c;
    }
    if (!t) {
        for (const tile & c : k_tiles) {
            if (c.speed > 0 && (!t || tile_cost(n, N, c) < tile_cost(n, N, *t))) t = &c;
        }
    }
    t->run(x, n, K, w, b, N, y, s, act, slope);
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) fail("linear_tiled", e);
}

// the names MB_CUDA_TILED_TILE takes (for tests and timings)
std::vector<std::string> tiled_tile_names() {
    std::vector<std::string> v;
    for (const tile & c : k_tiles) v.emplace_back(c.name);
    return v;
}

} // namespace mb::cuda
