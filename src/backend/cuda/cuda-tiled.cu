// F32 products of many rows (fused batches) in the skinny kernel's summation order, so that a
// lane of a batch gets the bits it gets alone, whatever the batch's row count.
//
// The skinny kernel (cuda-kernels.cu) sums one output as follows: its 256 threads t = 32·w + l
// each accumulate a leaf P[t], the chunks k = CW·t + 256·CW·j (CW = 4 with 16-byte loads,
// else 1) for j = 0, 1, … in order, one fmaf per element; the 32 leaves of warp w meet in a
// butterfly (lanes paired by bit 4 of l first, then bits 3, 2, 1, 0); the 8 warp sums are
// added in order to 0.0f; the bias is added last. Here a block owns a 64 × 64 (or 32 × 64)
// tile of outputs and walks the leaves in that order: warp w's lanes in bit-reversed order
// l = rev5(i), so that leaves i and i ^ 1 are butterfly partners and a binary counter over i
// (one pending sum per tree level, s0..s4) forms every pair exactly as the shuffles do.
// Float addition is commutative bit for bit, so which partner comes first does not matter.
#include "backend/cuda/cuda-kernels.h"

#include <cstdlib>

namespace mb::cuda {
namespace {

constexpr int k_slots = 8;    // leaf chunks per shared-memory stage
constexpr int k_bn    = 64;   // output columns per block (16 threads × 4)

// chunks of the longest leaf, and the bytes of the kernel's slot table for it
int tiled_chunks(int64_t K, int cw) {
    return (int) ((K + 256 * cw - 1) / (256 * cw));
}
size_t tab_bytes(int nj) {
    return size_t(2) * 256 * nj * sizeof(int);
}
// the table stays under the default 48 KiB of shared memory with the tiles (≤ 16 KiB)
constexpr int k_max_chunks = 8;

__device__ __forceinline__ int rev5(int i) {
    return (int) (__brev((unsigned) i) >> 27);
}

// f(i, jj) for each of a thread's TM × 4 outputs (unrolled: the arrays stay in registers)
template <int TM, class F>
__device__ __forceinline__ void each(F f) {
#pragma unroll
    for (int i = 0; i < TM; ++i) {
#pragma unroll
        for (int jj = 0; jj < 4; ++jj) f(i, jj);
    }
}

// TM rows × 4 columns per thread, 16 × 16 threads. CW: 4 (16-byte loads, K % 4 == 0) or 1.
// nj: chunks of the longest leaf; slot s of the walk is chunk s mod nj of leaf s / nj.
// Dynamic shared memory: per slot its k (−1: past K, the leaf has fewer chunks) and the leaf's
// lane position when the slot ends the leaf (−1 otherwise)
template <int TM, int CW>
__global__ void __launch_bounds__(256) linear_tiled_kernel(const float * __restrict__ x, int n, int K,
                                                          const float * __restrict__ w, const float * __restrict__ b,
                                                          int N, float * __restrict__ y, int nj) {
    constexpr int BM = 16 * TM, KS = k_slots * CW;
    constexpr int XL = BM * k_slots / 256, WL = k_bn * k_slots / 256;    // chunks each thread loads
    static_assert(XL >= 1 && WL >= 1, "every thread loads");
    __shared__ __align__(16) float xs[KS][BM];
    __shared__ __align__(16) float ws[KS][k_bn];
    extern __shared__ int slot_tab[];
    const int n_slot = 256 * nj, n_stage = n_slot / k_slots;
    int *     ktab   = slot_tab;
    int *     ltab   = slot_tab + n_slot;
    for (int s = threadIdx.x; s < n_slot; s += 256) {
        const int q = s / nj, j = s - q * nj;
        const int k = CW * ((q & ~31) | rev5(q & 31)) + 256 * CW * j;
        ktab[s]     = k < K ? k : -1;
        ltab[s]     = j == nj - 1 ? (q & 31) : -1;
    }
    __syncthreads();

    const int tx = threadIdx.x & 15, ty = threadIdx.x >> 4;
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * k_bn;

    float xr[XL][CW], wr[WL][CW];
    auto  load = [&](int st) {
#pragma unroll
        for (int u = 0; u < XL; ++u) {
            const int c = threadIdx.x + 256 * u, m = c % BM, slot = c / BM;
            const int k = ktab[st * k_slots + slot], r = row0 + m;
            if (k >= 0 && r < n) {
                if constexpr (CW == 4) {
                    const float4 v = __ldg(reinterpret_cast<const float4 *>(x + (size_t) r * K + k));
                    xr[u][0] = v.x, xr[u][1] = v.y, xr[u][2] = v.z, xr[u][3] = v.w;
                } else {
                    xr[u][0] = __ldg(x + (size_t) r * K + k);
                }
            } else {
#pragma unroll
                for (int e = 0; e < CW; ++e) xr[u][e] = 0.0f;
            }
        }
#pragma unroll
        for (int u = 0; u < WL; ++u) {
            const int c = threadIdx.x + 256 * u, m = c % k_bn, slot = c / k_bn;
            const int k = ktab[st * k_slots + slot], o = min(col0 + m, N - 1);    // past N: computed, not stored
            if (k >= 0) {
                if constexpr (CW == 4) {
                    const float4 v = __ldg(reinterpret_cast<const float4 *>(w + (size_t) o * K + k));
                    wr[u][0] = v.x, wr[u][1] = v.y, wr[u][2] = v.z, wr[u][3] = v.w;
                } else {
                    wr[u][0] = __ldg(w + (size_t) o * K + k);
                }
            } else {
#pragma unroll
                for (int e = 0; e < CW; ++e) wr[u][e] = 0.0f;
            }
        }
    };
    auto store = [&]() {
#pragma unroll
        for (int u = 0; u < XL; ++u) {
            const int c = threadIdx.x + 256 * u, m = c % BM, slot = c / BM;
#pragma unroll
            for (int e = 0; e < CW; ++e) xs[slot * CW + e][m] = xr[u][e];
        }
#pragma unroll
        for (int u = 0; u < WL; ++u) {
            const int c = threadIdx.x + 256 * u, m = c % k_bn, slot = c / k_bn;
#pragma unroll
            for (int e = 0; e < CW; ++e) ws[slot * CW + e][m] = wr[u][e];
        }
    };

    // per output: the open leaf p, the pending sums of tree levels 0..4, the running sum of
    // the warps' sums
    float p[TM][4], s0[TM][4], s1[TM][4], s2[TM][4], s3[TM][4], s4[TM][4], tot[TM][4];
    each<TM>([&](int i, int jj) { p[i][jj] = tot[i][jj] = s0[i][jj] = s1[i][jj] = s2[i][jj] = s3[i][jj] = s4[i][jj] = 0.0f; });

    load(0);
    store();
    __syncthreads();
    for (int st = 0; st < n_stage; ++st) {
        if (st + 1 < n_stage) load(st + 1);
#pragma unroll 1
        for (int slot = 0; slot < k_slots; ++slot) {
            // both the same for the whole block, so these branches never diverge
            if (ktab[st * k_slots + slot] >= 0) {
#pragma unroll
                for (int e = 0; e < CW; ++e) {
                    const int kk = slot * CW + e;
                    float     a[TM], bw[4];
                    if constexpr (TM == 4) {
                        const float4 v = *reinterpret_cast<const float4 *>(&xs[kk][ty * 4]);
                        a[0] = v.x, a[1] = v.y, a[2] = v.z, a[3] = v.w;
                    } else {
                        const float2 v = *reinterpret_cast<const float2 *>(&xs[kk][ty * 2]);
                        a[0] = v.x, a[1] = v.y;
                    }
                    const float4 bv = *reinterpret_cast<const float4 *>(&ws[kk][tx * 4]);
                    bw[0] = bv.x, bw[1] = bv.y, bw[2] = bv.z, bw[3] = bv.w;
                    each<TM>([&](int i, int jj) { p[i][jj] = fmaf(a[i], bw[jj], p[i][jj]); });
                }
            }
            // leaf complete (li: its place in the bit-reversed walk of its warp's lanes): the
            // butterfly pairs it closes are added now, L = the trailing ones of li of them; the
            // 32nd leaf closes the warp, whose sum joins tot in warp order
            const int li = ltab[st * k_slots + slot];
            if (li >= 0) {
                const int L = __ffs(~li) - 1;
                // one branch for all outputs; each case is the pairs' chain v = s_l + v, l < L
                if (L == 0) {
                    each<TM>([&](int i, int jj) { s0[i][jj] = p[i][jj]; });
                } else if (L == 1) {
                    each<TM>([&](int i, int jj) { s1[i][jj] = s0[i][jj] + p[i][jj]; });
                } else if (L == 2) {
                    each<TM>([&](int i, int jj) { s2[i][jj] = s1[i][jj] + (s0[i][jj] + p[i][jj]); });
                } else if (L == 3) {
                    each<TM>([&](int i, int jj) { s3[i][jj] = s2[i][jj] + (s1[i][jj] + (s0[i][jj] + p[i][jj])); });
                } else if (L == 4) {
                    each<TM>([&](int i, int jj) {
                        s4[i][jj] = s3[i][jj] + (s2[i][jj] + (s1[i][jj] + (s0[i][jj] + p[i][jj])));
                    });
                } else {
                    each<TM>([&](int i, int jj) {
                        const float warp = s4[i][jj] + (s3[i][jj] + (s2[i][jj] + (s1[i][jj] + (s0[i][jj] + p[i][jj]))));
                        tot[i][jj]       = tot[i][jj] + warp;
                    });
                }
                each<TM>([&](int i, int jj) { p[i][jj] = 0.0f; });
            }
        }
        __syncthreads();
        if (st + 1 < n_stage) {
            store();
            __syncthreads();
        }
    }

#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int r = row0 + ty * TM + i;
        if (r >= n) continue;
#pragma unroll
        for (int jj = 0; jj < 4; ++jj) {
            const int o = col0 + tx * 4 + jj;
            if (o >= N) continue;
            y[(size_t) r * N + o] = tot[i][jj] + (b ? b[o] : 0.0f);
        }
    }
}

template <int TM, int CW>
void launch_tiled(const float * x, int64_t n, int64_t K, const float * w, const float * b, int64_t N, float * y,
                  cudaStream_t s) {
    const int  nj = tiled_chunks(K, CW);
    const dim3 grid((unsigned) ((N + k_bn - 1) / k_bn), (unsigned) ((n + 16 * TM - 1) / (16 * TM)));
    linear_tiled_kernel<TM, CW><<<grid, 256, tab_bytes(nj), s>>>(x, (int) n, (int) K, w, b, (int) N, y, nj);
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

bool linear_tiled_fits(int64_t n, int64_t K, const float * x, const float * w) {
    return n >= tiled_min_rows() && tiled_chunks(K, skinny_vectorised(K, x, w) ? 4 : 1) <= k_max_chunks;
}

void linear_tiled(const float * x, int64_t n, int64_t K, const float * w, const float * b, int64_t N, float * y,
                  cudaStream_t s) {
    if (n <= 0 || N <= 0) return;
    // 64-row tiles where they fill the H200's 132 multiprocessors twice, else 32-row tiles
    const bool big = ((n + 63) / 64) * ((N + k_bn - 1) / k_bn) >= 264;
    if (skinny_vectorised(K, x, w)) {
        big ? launch_tiled<4, 4>(x, n, K, w, b, N, y, s) : launch_tiled<2, 4>(x, n, K, w, b, N, y, s);
    } else {
        big ? launch_tiled<4, 1>(x, n, K, w, b, N, y, s) : launch_tiled<2, 1>(x, n, K, w, b, N, y, s);
    }
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) fail("linear_tiled", e);
}

} // namespace mb::cuda
