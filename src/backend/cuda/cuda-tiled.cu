// F32 products of many rows (fused batches): a shared-memory tiled SGEMM that sums every output
// in the order of the GEMV (cuda-kernels.cu; k_sum_slice in cuda-kernels.h): slices of 32 k
// summed with fmaf from 0, their sums added in order to a running total from 0, the bias last.
// So a lane of a batch gets the bits it gets alone, whatever the batch's row count.
//
// A block owns BM × BN outputs (256 threads, TM × TN each, taken as two halves of TM/2 rows and
// TN/2 columns so that the fragment reads from shared memory are conflict-free) and walks k in
// tiles of 16, held twice in shared memory so that the next tile's global loads are in flight
// during the current tile's products. Every second tile (and the last) closes a slice: its sum
// joins the output's total, one extra register per output.
#include "backend/cuda/cuda-kernels.h"

#include <cstdlib>

namespace mb::cuda {
namespace {

constexpr int k_bk = 16;    // k per shared-memory tile: two tiles make a slice
// the tiles' speeds relative to 128 × 64 at full waves (H200: 32.5, 35.3 and 30.2 TFLOP/s on
// the large shapes of cuda_speed.f32_products_of_many_rows; cuBLAS's pedantic F32 46–50). 128 × 128
// holds one block per multiprocessor (201 registers); with its totals in shared memory instead
// (two blocks, 128 registers) it ran at 33.1–33.8, so that variant is gone
constexpr double k_speed_88 = 0.92, k_speed_84 = 1.0, k_speed_44 = 0.855;
static_assert(2 * k_bk == k_sum_slice, "a slice is two tiles");

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

// VEC: K % 4 == 0 and 16-byte aligned x and w (16-byte loads), else scalar loads
template <int TM, int TN, bool VEC>
__global__ void __launch_bounds__(256) linear_tiled_kernel(const float * __restrict__ x, int n, int K,
                                                          const float * __restrict__ w, const float * __restrict__ b,
                                                          int N, float * __restrict__ y) {
    constexpr int BM = 16 * TM, BN = 16 * TN, HM = TM / 2, HN = TN / 2;
    constexpr int CW = VEC ? 4 : 1, CPR = k_bk / CW;            // loads per row of a tile
    constexpr int AL = BM * CPR / 256, BL = BN * CPR / 256;     // loads per thread
    static_assert(AL >= 1 && BL >= 1, "every thread loads");
    __shared__ __align__(16) float as[2][k_bk][BM + 4];        // [k][row]: rows 16 bytes apart per k
    __shared__ __align__(16) float bs[2][k_bk][BN + 4];

    const int tid = threadIdx.x, tx = tid & 15, ty = tid >> 4;
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;

    float ar[AL][CW], br[BL][CW];
    auto  load = [&](int k0) {
#pragma unroll
        for (int u = 0; u < AL; ++u) {
            const int c = tid + 256 * u, m = c / CPR, k = k0 + (c % CPR) * CW, r = row0 + m;
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
            const int c = tid + 256 * u, m = c / CPR, k = k0 + (c % CPR) * CW, o = col0 + m;
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
            const int c = tid + 256 * u, m = c / CPR, kq = (c % CPR) * CW;
#pragma unroll
            for (int e = 0; e < CW; ++e) as[buf][kq + e][m] = ar[u][e];
        }
#pragma unroll
        for (int u = 0; u < BL; ++u) {
            const int c = tid + 256 * u, m = c / CPR, kq = (c % CPR) * CW;
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
            if (o < N) y[(size_t) r * N + o] = tot[i][j] + (b ? b[o] : 0.0f);
        }
    }
}

template <int TM, int TN>
void launch_tiled(const float * x, int64_t n, int64_t K, const float * w, const float * b, int64_t N, float * y,
                  cudaStream_t s) {
    const dim3 grid((unsigned) ((N + 16 * TN - 1) / (16 * TN)), (unsigned) ((n + 16 * TM - 1) / (16 * TM)));
    const bool vec = K % 4 == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0 && reinterpret_cast<uintptr_t>(w) % 16 == 0;
    auto       kernel = vec ? linear_tiled_kernel<TM, TN, true> : linear_tiled_kernel<TM, TN, false>;
    kernel<<<grid, 256, 0, s>>>(x, (int) n, (int) K, w, b, (int) N, y);
}

int multiprocessors() {
    static const int m = [] {
        int dev = 0, c = 0;
        if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&c, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess) {
            cudaGetLastError();
            return 132;
        }
        return c > 0 ? c : 132;
    }();
    return m;
}

// the estimated time of a product on a tile: the blocks each multiprocessor takes in turn, each
// of bm × bn outputs at the tile's speed (matched the best tile of the nine shapes of
// cuda_speed.f32_products_of_many_rows on the H200)
double tile_cost(int64_t n, int64_t N, int bm, int bn, double speed) {
    const int64_t nb = ((n + bm - 1) / bm) * ((N + bn - 1) / bn);
    return double((nb + multiprocessors() - 1) / multiprocessors()) * bm * bn / speed;
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
                  cudaStream_t s) {
    if (n <= 0 || N <= 0) return;
    // MB_CUDA_TILED_TILE=88|84|44 forces a thread tile (read on every call, for timings; the bits
    // are the same for every tile), else the one of least tile_cost
    const char * f    = std::getenv("MB_CUDA_TILED_TILE");
    int          tile = f ? std::atoi(f) : 0;
    if (tile != 88 && tile != 84 && tile != 44) {
        const double c88 = tile_cost(n, N, 128, 128, k_speed_88), c84 = tile_cost(n, N, 128, 64, k_speed_84),
                     c44 = tile_cost(n, N, 64, 64, k_speed_44);
        tile = c84 <= c88 && c84 <= c44 ? 84 : c44 <= c88 ? 44 : 88;
    }
    if (tile == 88) {
        launch_tiled<8, 8>(x, n, K, w, b, N, y, s);
    } else if (tile == 84) {
        launch_tiled<8, 4>(x, n, K, w, b, N, y, s);
    } else {
        launch_tiled<4, 4>(x, n, K, w, b, N, y, s);
    }
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) fail("linear_tiled", e);
}

} // namespace mb::cuda
