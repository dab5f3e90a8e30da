// F32 products of many rows (fused batches): a shared-memory tiled SGEMM that sums every output
// in the order of the GEMV (cuda-kernels.cu; k_sum_slice in cuda-kernels.h): slices of 32 k
// summed with fmaf from 0, their sums added in order to a running total from 0, the bias last.
// So a lane of a batch gets the bits it gets alone, whatever the batch's row count.
//
// A block of TY × TX threads owns BM × BN outputs (TM × TN a thread, taken as two halves of
// TM/2 rows and TN/2 columns so that the fragment reads from shared memory are conflict-free)
// and walks k in tiles of BK (16: two tiles make a slice; 32: one), held twice in shared memory
// so that the next tile's global loads are in flight during the current tile's products. A
// slice's end adds its sums to the outputs' totals: one extra register per output.
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

// VEC: K % 4 == 0 and 16-byte aligned x and w (16-byte loads), else scalar loads
template <int TM, int TN, int TY, int TX, int BK, int MINB, bool VEC>
__global__ void __launch_bounds__(TY * TX, MINB) linear_tiled_kernel(const float * __restrict__ x, int n, int K,
                                                                    const float * __restrict__ w,
                                                                    const float * __restrict__ b, int N,
                                                                    float * __restrict__ y) {
    constexpr int NT = TY * TX, BM = TY * TM, BN = TX * TN, HM = TM / 2, HN = TN / 2;
    constexpr int CW = VEC ? 4 : 1, CPR = BK / CW;             // loads per row of a tile
    constexpr int AL = BM * CPR / NT, BL = BN * CPR / NT;      // loads per thread
    constexpr int TPS = k_sum_slice / BK;                      // tiles per slice
    static_assert(AL >= 1 && BL >= 1 && AL * NT == BM * CPR && BL * NT == BN * CPR, "every thread loads alike");
    static_assert(TPS * BK == k_sum_slice, "a slice is whole tiles");
    // [k][row], rows 16 bytes apart per k; dynamic: tiles of 32 k take more than 48 KiB
    extern __shared__ float4 tiled_smem[];
    auto as = reinterpret_cast<float (*)[BK][BM + 4]>(tiled_smem);
    auto bs = reinterpret_cast<float (*)[BK][BN + 4]>(reinterpret_cast<float *>(tiled_smem) + 2 * BK * (BM + 4));

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

    const int nk = (K + BK - 1) / BK;
    load(0);
    store(0);
    __syncthreads();
    for (int kt = 0; kt < nk; ++kt) {
        const int cur = kt & 1;
        if (kt + 1 < nk) load((kt + 1) * BK);
#pragma unroll
        for (int kk = 0; kk < BK; ++kk) {
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
        if (kt % TPS == TPS - 1 || kt + 1 == nk) {    // a slice ends: the same for the whole block
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

// 16-byte copies global → shared that do not wait (cp.async, sm_80+; a plain copy elsewhere);
// pred false fills zeros
__device__ __forceinline__ void copy16(float * dst, const float * src, bool pred) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    const unsigned d = (unsigned) __cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src), "r"(pred ? 16 : 0));
#else
    *reinterpret_cast<float4 *>(dst) = pred ? __ldg(reinterpret_cast<const float4 *>(src)) : make_float4(0, 0, 0, 0);
#endif
}
__device__ __forceinline__ void copy_commit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.commit_group;\n" ::);
#endif
}
template <int N> __device__ __forceinline__ void copy_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
#endif
}

// the same products and sums with k tiles of one slice (32) copied into ST shared-memory stages
// without passing through registers (ST − 1 tiles in flight during a tile's products). Tiles
// stay [row][k] as in memory; a row's eight 16-byte chunks are stored swizzled (chunk q at
// q ^ (row / 4 mod 8)) so that a warp's reads of 4 k of its rows are conflict-free. A thread
// reads 4 k of each of its TM rows, then of each of its TN columns in turn, and adds the 4
// products to every output in ascending k. Needs K % 4 == 0 and 16-byte aligned x and w
template <int TM, int TN, int TY, int TX, int ST, int MINB>
__global__ void __launch_bounds__(TY * TX, MINB) linear_tiled_async_kernel(const float * __restrict__ x, int n, int K,
                                                                          const float * __restrict__ w,
                                                                          const float * __restrict__ b, int N,
                                                                          float * __restrict__ y) {
    constexpr int NT = TY * TX, BM = TY * TM, BN = TX * TN, HM = TM / 2, HN = TN / 2, BK = k_sum_slice;
    constexpr int CPR = BK / 4, AL = BM * CPR / NT, BL = BN * CPR / NT;    // 16-byte chunks
    static_assert(HM == 4 && HN == 4, "4-row groups share a swizzle");
    static_assert(AL * NT == BM * CPR && BL * NT == BN * CPR, "every thread copies alike");
    extern __shared__ float4 tiled_smem[];
    float * const as = reinterpret_cast<float *>(tiled_smem);    // [ST][BM][BK]
    float * const bs = as + ST * BM * BK;                        // [ST][BN][BK]

    const int tid = threadIdx.x, tx = tid % TX, ty = tid / TX;
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    const int nk   = (K + BK - 1) / BK;

    auto issue = [&](int kt) {
        if (kt < nk) {
            const int k0 = kt * BK, st = kt % ST;
#pragma unroll
            for (int u = 0; u < AL; ++u) {
                const int  c = tid + NT * u, m = c / CPR, q = c % CPR, r = row0 + m, k = k0 + 4 * q;
                const bool in = r < n && k < K;
                copy16(as + (st * BM + m) * BK + 4 * (q ^ ((m >> 2) & 7)), in ? x + (size_t) r * K + k : x, in);
            }
#pragma unroll
            for (int u = 0; u < BL; ++u) {
                const int  c = tid + NT * u, m = c / CPR, q = c % CPR, o = col0 + m, k = k0 + 4 * q;
                const bool in = o < N && k < K;
                copy16(bs + (st * BN + m) * BK + 4 * (q ^ ((m >> 2) & 7)), in ? w + (size_t) o * K + k : w, in);
            }
        }
        copy_commit();    // empty past nk: the groups still count one a tile
    };

    float acc[TM][TN], tot[TM][TN];    // the open slice's sums, the totals
#pragma unroll
    for (int i = 0; i < TM; ++i) {
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = tot[i][j] = 0.0f;
    }
    // rows i < 4 of a thread are ty·4 + i, the others BM/2 + ty·4 + i − 4 (columns alike): a
    // group of 4 shares its swizzle
    const int sa0 = ty & 7, sa1 = (BM / 8 + ty) & 7, sb0 = tx & 7, sb1 = (BN / 8 + tx) & 7;

#pragma unroll
    for (int s = 0; s < ST - 1; ++s) issue(s);
    for (int kt = 0; kt < nk; ++kt) {
        copy_wait<ST - 2>();    // this thread's copies of tile kt are done
        __syncthreads();        // everyone's; and tile kt − 1's stage is read by all
        issue(kt + ST - 1);     // into that stage
        const float * A = as + (kt % ST) * BM * BK;
        const float * B = bs + (kt % ST) * BN * BK;
#pragma unroll
        for (int q = 0; q < CPR; ++q) {
            float4 a[TM];
#pragma unroll
            for (int i = 0; i < TM; ++i) {
                const int r = i < HM ? ty * HM + i : BM / 2 + ty * HM + i - HM;
                a[i]        = *reinterpret_cast<const float4 *>(A + r * BK + 4 * (q ^ (i < HM ? sa0 : sa1)));
            }
#pragma unroll
            for (int j = 0; j < TN; ++j) {
                const int    c  = j < HN ? tx * HN + j : BN / 2 + tx * HN + j - HN;
                const float4 bq = *reinterpret_cast<const float4 *>(B + c * BK + 4 * (q ^ (j < HN ? sb0 : sb1)));
#pragma unroll
                for (int i = 0; i < TM; ++i) acc[i][j] = fmaf(a[i].x, bq.x, acc[i][j]);
#pragma unroll
                for (int i = 0; i < TM; ++i) acc[i][j] = fmaf(a[i].y, bq.y, acc[i][j]);
#pragma unroll
                for (int i = 0; i < TM; ++i) acc[i][j] = fmaf(a[i].z, bq.z, acc[i][j]);
#pragma unroll
                for (int i = 0; i < TM; ++i) acc[i][j] = fmaf(a[i].w, bq.w, acc[i][j]);
            }
        }
#pragma unroll
        for (int i = 0; i < TM; ++i) {    // the slice ends
#pragma unroll
            for (int j = 0; j < TN; ++j) {
                tot[i][j] = tot[i][j] + acc[i][j];
                acc[i][j] = 0.0f;
            }
        }
    }
    copy_wait<0>();    // no copy outlives the block (those past nk are empty)

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

// the async kernel where 16-byte copies work (K % 4 == 0, aligned x and w), else the register
// kernel of the same thread tile (the same bits)
template <int TM, int TN, int TY, int TX, int ST, int MINB>
void launch_tiled_async(const float * x, int64_t n, int64_t K, const float * w, const float * b, int64_t N, float * y,
                        cudaStream_t s) {
    constexpr int BM = TY * TM, BN = TX * TN;
    const bool vec = K % 4 == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0 && reinterpret_cast<uintptr_t>(w) % 16 == 0;
    if (!vec) {
        linear_tiled_kernel<TM, TN, TY, TX, 16, MINB, false><<<dim3((unsigned) ((N + BN - 1) / BN), (unsigned) ((n + BM - 1) / BM)),
                                                             TY * TX, 2 * 16 * (BM + 4 + BN + 4) * sizeof(float), s>>>(
            x, (int) n, (int) K, w, b, (int) N, y);
        return;
    }
    const dim3       grid((unsigned) ((N + BN - 1) / BN), (unsigned) ((n + BM - 1) / BM));
    auto             kernel = linear_tiled_async_kernel<TM, TN, TY, TX, ST, MINB>;
    constexpr size_t smem   = (size_t) ST * (BM + BN) * k_sum_slice * sizeof(float);
    if constexpr (smem > 48 * 1024) {    // set on every launch, since the setting is per device
        const cudaError_t a = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int) smem);
        if (a != cudaSuccess) fail("linear_tiled (shared memory size)", a);
    }
    kernel<<<grid, TY * TX, smem, s>>>(x, (int) n, (int) K, w, b, (int) N, y);
}

template <int TM, int TN, int TY, int TX, int BK, int MINB>
void launch_tiled(const float * x, int64_t n, int64_t K, const float * w, const float * b, int64_t N, float * y,
                  cudaStream_t s) {
    constexpr int BM = TY * TM, BN = TX * TN;
    const dim3    grid((unsigned) ((N + BN - 1) / BN), (unsigned) ((n + BM - 1) / BM));
    const bool vec = K % 4 == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0 && reinterpret_cast<uintptr_t>(w) % 16 == 0;
    auto       kernel = vec ? linear_tiled_kernel<TM, TN, TY, TX, BK, MINB, true>
                            : linear_tiled_kernel<TM, TN, TY, TX, BK, MINB, false>;
    constexpr size_t smem = 2 * BK * (BM + 4 + BN + 4) * sizeof(float);
    if constexpr (smem > 48 * 1024) {    // set on every launch, since the setting is per device
        const cudaError_t a = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int) smem);
        if (a != cudaSuccess) fail("linear_tiled (shared memory size)", a);
    }
    kernel<<<grid, TY * TX, smem, s>>>(x, (int) n, (int) K, w, b, (int) N, y);
}

using launcher = void (*)(const float *, int64_t, int64_t, const float *, const float *, int64_t, float *, cudaStream_t);

// the tiles: block rows × outputs, blocks a multiprocessor holds, speed relative to "84" at full
// waves (H200, cuda_speed.f32_products_of_many_rows)
struct tile {
    const char * name;
    int          bm, bn, per_sm;
    double       speed;
    launcher     run;
};
const tile k_tiles[] = {
    {"88", 128, 128, 1, 0.92, launch_tiled<8, 8, 16, 16, 16, 1>},     // 256 threads, 201 registers
    {"84", 128, 64, 1, 1.0, launch_tiled<8, 4, 16, 16, 16, 2>},       // 256 threads, 127 registers
    {"44", 64, 64, 1, 0.855, launch_tiled<4, 4, 16, 16, 16, 2>},
    {"88h", 128, 64, 2, 0, launch_tiled<8, 8, 16, 8, 16, 2>},         // 128 threads
    {"88w", 64, 128, 2, 0, launch_tiled<8, 8, 8, 16, 16, 2>},         // 128 threads
    {"a88w", 64, 128, 2, 0, launch_tiled_async<8, 8, 8, 16, 3, 2>},   // k tiles of 32 in 3 stages
    {"a88h", 128, 64, 2, 0, launch_tiled_async<8, 8, 16, 8, 3, 2>},
    {"a88w4", 64, 128, 2, 0, launch_tiled_async<8, 8, 8, 16, 4, 2>},
    {"a88h4", 128, 64, 2, 0, launch_tiled_async<8, 8, 16, 8, 4, 2>},
};

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

// the estimated time of a product on a tile: the waves of blocks the multiprocessors take in
// turn, each wave per_sm blocks of bm × bn outputs a multiprocessor at the tile's speed
double tile_cost(int64_t n, int64_t N, const tile & t) {
    const int64_t nb = ((n + t.bm - 1) / t.bm) * ((N + t.bn - 1) / t.bn), slots = (int64_t) multiprocessors() * t.per_sm;
    return double((nb + slots - 1) / slots) * t.per_sm * t.bm * t.bn / t.speed;
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
    t->run(x, n, K, w, b, N, y, s);
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
