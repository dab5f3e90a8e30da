// An F32 GEMV of 5–64 rows (batch one: the networks' 10-row linears, the convs' 10–40-row
// products on their im2col), in the one summation order of every product (cuda-kernels.h,
// k_sum_slice): lane l of a warp sums slice l of a 1,024-long segment of k with fmaf from 0, and
// the slice sums are added in order to a running total from 0, the bias last.
//
// Against the older skinny kernel (cuda-kernels.cu; a warp one weight row against 8-row tiles,
// so a 10-row product streams its weights twice), here:
// - one tile holds up to 16 rows (the 10-row products stream their weights once; above 16 rows
//   the rows are split into equal tiles);
// - a warp owns O weight rows (1, 2 or 4), so each x value read from shared memory serves O outputs
//   (the chunked kernel's blocks have 8, 4 or 2 warps: MB_CUDA_GEMV=OxW, MB_CUDA_GEMV_WARPS);
// - weights go to shared memory with cp.async (16 bytes, coalesced, no registers held): for K up to
//   2,048 (gemv_chunks_kernel, the default there) all of x and the weights at once, in two groups a
//   segment; above (gemv_rows_kernel) the first segment before x is staged and the next segment's into
//   a second buffer while this one is summed;
// - staged segments are swizzled (float4 i of slice j at slot i ^ (j mod 8)) instead of padded:
//   the lanes of a quarter warp read 8 distinct float4 slots.
//
// The default for linear products since the eighth session's final call (MB_CUDA_GEMV, read on
// every call: unset or "new", this one for linear products, 2 outputs a warp from 3,072 outputs on, else 1, convs keep the
// older kernel unless MB_CUDA_GEMV_CONV names a shape; "old", the older kernel everywhere; "1x8" / "2x8" / any
// "OxW" of parse_shape, this one with that shape for linear and conv alike, the convs' epilogues included).
// H200, cuda_speed.gemv_at_batch_one (µs, older / 1x8 / 2x8): 10 × 1,024 → 3,072 14.3 / 10.0 /
// 8.2, → 2,048 10.1 / 7.0 / 8.0, → 1,024 6.2 / 5.7 / 6.5, 10 × 2,048 → 1,024 10.3 / 10.2 / 10.9,
// 9 × 512 → 512 4.7 / 3.6 / 5.6, conv 512 × 3 → 512 at 10 frames 10.1 / 11.0 / 11.9: faster on
// every linear shape, but a 10-token plan with this kernel on every product at 2 outputs a warp
// (4 warps a block, 2 below 1,024 outputs; since deleted) ran 2.26 against 2.09 ms. The choice
// above, H100, same call, two rounds: 2.068 / 2.042 ms against 2.153 / 2.155 with the older
// kernel (docs/BACKEND.md, eighth session).
#include "backend/cuda/cuda-launch.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>

namespace mb::cuda {
namespace {

constexpr int k_gseg      = 32 * k_sum_slice;    // k of one pass: a slice per lane
constexpr int k_sums_pad  = k_sum_slice + 4;     // slice sums of a chain 36 floats apart
constexpr int k_rows_tile = 16;                  // rows of x a block holds at most
constexpr int k_rows_warps = 8;                  // warps a block

__device__ __forceinline__ void cp_async16(float * dst, const float * src, bool valid) {
    const unsigned d = (unsigned) __cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src), "r"(valid ? 16 : 0) : "memory");
}
__device__ __forceinline__ void cp_async_commit() {
    asm volatile("cp.async.commit_group;\n" ::: "memory");
}
template <int N>
__device__ __forceinline__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// cp_async_wait with a count known once loops are unrolled (≤ 3: two segments of two chunks)
__device__ __forceinline__ void cp_async_wait_n(int n) {
    switch (n) {
    case 0: cp_async_wait<0>(); break;
    case 1: cp_async_wait<1>(); break;
    case 2: cp_async_wait<2>(); break;
    default: cp_async_wait<3>(); break;
    }
}

// float offset of the float4 c (elements 4c…4c+3) of a staged segment: slice j = c / 8 at 32·j,
// its float4s at slots (c mod 8) xor (j mod 8)
__device__ __forceinline__ int swz(int c) {
    const int j = c >> 3;
    return 32 * j + 4 * ((c & 7) ^ (j & 7));
}

// the product's one step: float4 i of slice `lane` (slot swz(8·lane + i)) of the warp's O staged weight
// rows (wb) against the nr staged rows of x (xb), into the slice sums s[r][u] (fma4: ascending k)
template <int R, int O>
__device__ __forceinline__ void sum_float4(const float * wb, const float * xb, int i, int lane, int nr,
                                           float (&s)[R][O]) {
    const int at = swz(8 * lane + i);
    float4    wq[O];
#pragma unroll
    for (int u = 0; u < O; ++u) wq[u] = *reinterpret_cast<const float4 *>(wb + u * k_gseg + at);
#pragma unroll
    for (int r = 0; r < R; ++r) {
        if (r < nr) {    // the same for the whole block
            const float4 xq = *reinterpret_cast<const float4 *>(xb + r * k_gseg + at);
#pragma unroll
            for (int u = 0; u < O; ++u) s[r][u] = fma4(xq, wq[u], s[r][u]);
        }
    }
}

// a segment's slice sums s[r][u] (lane l: slice l) added in order to the totals of chains c = lane
// and lane + 32 (row c / O, output c mod O), through the warp's buffer wb, whose weights every lane
// has read (slices past K are +0, which the total, never −0, absorbs)
template <int R, int O>
__device__ __forceinline__ void add_slice_sums(const float (&s)[R][O], float * wb, int nr, int lane, float (&tot)[2]) {
    __syncwarp();
#pragma unroll
    for (int r = 0; r < R; ++r) {
        if (r < nr) {
#pragma unroll
            for (int u = 0; u < O; ++u) wb[(r * O + u) * k_sums_pad + lane] = s[r][u];
        }
    }
    __syncwarp();
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        const int c = lane + 32 * h;
        if (c < nr * O) {
            float4 p[8];
#pragma unroll
            for (int q = 0; q < 8; ++q) p[q] = *reinterpret_cast<const float4 *>(wb + c * k_sums_pad + 4 * q);
            float t = tot[h];
#pragma unroll
            for (int q = 0; q < 8; ++q) t = (((t + p[q].x) + p[q].y) + p[q].z) + p[q].w;
            tot[h] = t;
        }
    }
    __syncwarp();    // the chains have read the sums: the buffer may take weights again
}

// a conv's output a (activated) at position i of lane ln: + the residual (read before y[at] is
// written: res may be y), then the next conv's im2col. Not inlined: the linears' kernels keep their
// registers for the sums
__device__ __noinline__ void store_conv(const conv_geom & g, int N, int ln, int i, int o, size_t at, float a, float * y) {
    const float v2 = g.res ? a + g.res[at] : a;
    y[at]          = v2;
    if (g.ncol) store_next_col(g.ncol, g.nk, g.ndil, g.nrelu, g.t, N, ln, i, o, v2);
}

// chains c = lane, lane + 32: y = total + bias, then the activation and, on a conv (g.t > 0: y NCW per
// lane), the residual and the next conv's im2col: the skinny kernel's epilogue, the same floats
template <int O>
__device__ __forceinline__ void store_chains(const float (&tot)[2], const float (&bias)[2], int lane, int nr, int r0,
                                             int o0, int N, float * y, const conv_geom & g) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        const int c = lane + 32 * h;
        const int o = o0 + c % O;
        if (c < nr * O && o < N) {
            const int    r  = r0 + c / O;
            const int    ln = g.t ? r / g.t : 0;
            const size_t at = g.t ? ((size_t) ln * N + o) * g.t + (r - ln * g.t) : (size_t) r * N + o;
            const float  v  = tot[h] + bias[h];
            const float  a  = g.act ? leaky(v, g.slope) : v;
            if (g.t && (g.res || g.ncol)) store_conv(g, N, ln, r - ln * g.t, o, at, a, y);
            else y[at] = a;
        }
    }
}

// y = x·wᵀ + b for the rows [r0, r0 + nr) of this block's tile (blockIdx.y) and the O·8 outputs
// of this block (warp w: outputs (blockIdx.x·8 + w)·O + u); g: a conv's rows and the epilogue
template <int R, int O>
__global__ void __launch_bounds__(32 * k_rows_warps, 2)
    gemv_rows_kernel(const float * __restrict__ x, int n, int K, const float * __restrict__ w,
                     const float * __restrict__ b, int N, float * __restrict__ y, int rows, int nbuf, conv_geom g) {
    extern __shared__ float4 gemv_rows_smem[];
    float *   xs   = reinterpret_cast<float *>(gemv_rows_smem);    // [rows][k_gseg]: a segment of x
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    float *   ws   = xs + rows * k_gseg + warp * nbuf * O * k_gseg;    // the warp's nbuf buffers of O rows
    const int r0 = blockIdx.y * rows, nr = min(rows, n - r0);
    const int o0 = (blockIdx.x * k_rows_warps + warp) * O;
    const int nseg = (K + k_gseg - 1) / k_gseg;
    const float * wr[O];
#pragma unroll
    for (int u = 0; u < O; ++u) wr[u] = w + (size_t) min(o0 + u, N - 1) * K;    // past N: computed, not stored

    auto load_w = [&](int seg) {    // this warp's O rows, k in segment seg (0 past K)
        float * buf = ws + (seg % nbuf) * O * k_gseg;
#pragma unroll
        for (int u = 0; u < O; ++u) {
#pragma unroll
            for (int i = 0; i < 8; ++i) {
                const int c = 32 * i + lane, k = seg * k_gseg + 4 * c;
                cp_async16(buf + u * k_gseg + swz(c), wr[u] + (k < K ? k : 0), k < K);
            }
        }
    };
    auto load_x = [&](int seg) {    // the block's nr rows
        for (int e = threadIdx.x; e < nr * (k_gseg / 4); e += 32 * k_rows_warps) {
            const int r = e / (k_gseg / 4), c = e % (k_gseg / 4), k = seg * k_gseg + 4 * c;
            cp_async16(xs + r * k_gseg + swz(c), x + (size_t) (r0 + r) * K + (k < K ? k : 0), k < K);
        }
    };

    load_w(0);    // weights first: they stream while x is staged
    float bias[2];    // chain c's bias (c = lane, lane + 32), loaded now rather than after the sums
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        const int o = o0 + (lane + 32 * h) % O;
        bias[h]     = b && o < N ? __ldg(b + o) : 0.0f;
    }
    cp_async_commit();

    float tot[2] = {0.0f, 0.0f};    // chains c = lane and lane + 32 (row c / O, output c mod O)
    for (int seg = 0; seg < nseg; ++seg) {
        if (seg > 0) {
            if (nbuf == 1) {    // the warp has read its buffer (the previous segment's chains)
                load_w(seg);
                cp_async_commit();
            }
            __syncthreads();    // every warp has read the previous segment of x
        }
        load_x(seg);
        cp_async_commit();
        if (nbuf == 2) {
            // groups in order: W(seg) (committed earlier), X(seg), W(seg + 1) into the other
            // buffer (read by this warp two segments ago), which may stay in flight
            if (seg + 1 < nseg) load_w(seg + 1);
            cp_async_commit();
            cp_async_wait<1>();
        } else {
            cp_async_wait<0>();
        }
        __syncthreads();    // every thread's copies are visible to the block

        float * wb = ws + (seg % nbuf) * O * k_gseg;
        float   s[R][O];
#pragma unroll
        for (int r = 0; r < R; ++r) {
#pragma unroll
            for (int u = 0; u < O; ++u) s[r][u] = 0.0f;
        }
#pragma unroll
        for (int i = 0; i < 8; ++i) sum_float4<R, O>(wb, xs, i, lane, nr, s);
        add_slice_sums<R, O>(s, wb, nr, lane, tot);
    }

    store_chains<O>(tot, bias, lane, nr, r0, o0, N, y, g);
}

// the default for K ≤ S·1,024 (S segments, all staged at once): gemv_rows_kernel with each
// segment's copies in k_chunks groups. Group q holds float4s [q·8/k_chunks, (q + 1)·8/k_chunks) of
// every slice, of the weights and of x, so a lane sums the first half of its slices while the rest
// lands. The same fmaf chains and slice sums in the same order as gemv_rows_kernel: the same bits.
// A 10-token plan: 1.561–1.611 against 1.589–1.640 ms, predicted 1.951–2.049 against 2.054–2.127
// (H100, three alternated rounds, twentieth session); no shape was faster alone (cuda_speed), and 4
// or 8 chunks were 0.14 and 0.46 ms slower in a plan (more code: see docs/BACKEND.md)
constexpr int k_chunks = 2;
// W warps a block (8; MB_CUDA_GEMV_WARPS / "OxW" try 4 and 2 with O·W outputs a block kept): every warp reads
// all of the staged x from shared memory, 4 wavefronts a float4 a row, so at 10 rows a block's x reads
// (W × 40 KB a segment) and not its weights or FMAs bound the product; fewer warps of more outputs
// each read x fewer times for the same outputs (not yet run on a GPU)
template <int R, int O, int S, int U, int W>    // U: 1 rolls the loops over segments, chunks and float4s (code size)
__global__ void __launch_bounds__(32 * W, S == 1 ? 2 : 1)    // one segment: 2 blocks an SM
    gemv_chunks_kernel(const float * __restrict__ x, int n, int K, const float * __restrict__ w,
                       const float * __restrict__ b, int N, float * __restrict__ y, int rows, conv_geom g) {
    constexpr int C = k_chunks, P = 8 / C;    // float4s of a slice a chunk
    static_assert(8 % C == 0 && S * C <= 4, "chunks divide a slice's 8 float4s; ≤ 4 groups");
    extern __shared__ float4 gemv_rows_smem[];
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    float *   xs   = reinterpret_cast<float *>(gemv_rows_smem);          // [S][rows][k_gseg]
    float *   ws   = xs + S * rows * k_gseg + warp * S * O * k_gseg;    // the warp's [S][O][k_gseg]
    const int r0 = blockIdx.y * rows, nr = min(rows, n - r0);
    const int o0 = (blockIdx.x * W + warp) * O;
    const float * wr[O];
#pragma unroll
    for (int u = 0; u < O; ++u) wr[u] = w + (size_t) min(o0 + u, N - 1) * K;

#pragma unroll
    for (int sg = 0; sg < S; ++sg) {
#pragma unroll
        for (int q = 0; q < C; ++q) {
#pragma unroll
            for (int u = 0; u < O; ++u) {
#pragma unroll
                for (int m = 0; m < P; ++m) {
                    const int e = 32 * m + lane, c = 8 * (e / P) + q * P + e % P, k = sg * k_gseg + 4 * c;
                    cp_async16(ws + (sg * O + u) * k_gseg + swz(c), wr[u] + (k < K ? k : 0), k < K);
                }
            }
            for (int e = threadIdx.x; e < nr * 32 * P; e += 32 * W) {
                const int r = e / (32 * P), f = e % (32 * P), c = 8 * (f / P) + q * P + f % P, k = sg * k_gseg + 4 * c;
                cp_async16(xs + (sg * rows + r) * k_gseg + swz(c), x + (size_t) (r0 + r) * K + (k < K ? k : 0), k < K);
            }
            cp_async_commit();
        }
    }
    float bias[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        const int o = o0 + (lane + 32 * h) % O;
        bias[h]     = b && o < N ? __ldg(b + o) : 0.0f;
    }

    float tot[2] = {0.0f, 0.0f};    // chains c = lane and lane + 32 (row c / O, output c mod O)
#pragma unroll U
    for (int sg = 0; sg < S; ++sg) {
        float * wb = ws + sg * O * k_gseg;
        float * xb = xs + sg * rows * k_gseg;
        float   s[R][O];
#pragma unroll
        for (int r = 0; r < R; ++r) {
#pragma unroll
            for (int u = 0; u < O; ++u) s[r][u] = 0.0f;
        }
#pragma unroll U
        for (int q = 0; q < C; ++q) {
            cp_async_wait_n(S * C - 1 - (sg * C + q));    // groups up to (sg, q) of this thread have landed
            __syncthreads();                              // and every thread's (x is the block's)
#pragma unroll U
            for (int i = q * P; i < (q + 1) * P; ++i) sum_float4<R, O>(wb, xb, i, lane, nr, s);
        }
        add_slice_sums<R, O>(s, wb, nr, lane, tot);
    }

    store_chains<O>(tot, bias, lane, nr, r0, o0, N, y, g);
}

template <int R, int O, int S, int W>
void launch_chunks(const float * x, int n, int K, const float * w, const float * b, int N, float * y, int rows,
                   int tiles, const conv_geom & g, cudaStream_t s) {
    static_assert(S * (R + O * W) * k_gseg * sizeof(float) <= 227 * 1024, "fits an SM's shared memory");
    static_assert(R * O <= 64 && R * k_sums_pad <= k_gseg, "two chains a lane; a warp's buffer holds their slice sums");
    // MB_CUDA_GEMV_ROLLED=1: the loops rolled (about half the code; whether a plan's chain of different
    // kernels pays for code size: not yet run on a GPU)
    auto kernel = env_is("MB_CUDA_GEMV_ROLLED", "1") ? gemv_chunks_kernel<R, O, S, 1, W> : gemv_chunks_kernel<R, O, S, 8, W>;
    const size_t smem = size_t(S * (rows + O * W)) * k_gseg * sizeof(float);
    allow_shared("gemv_chunks (shared memory size)", kernel, size_t(S * (R + O * W)) * k_gseg * sizeof(float));
    const dim3 grid((unsigned) ((N + O * W - 1) / (O * W)), (unsigned) tiles);
    launch("gemv_chunks", kernel, grid, dim3(32 * W), smem, s, x, n, K, w, b, N, y, rows, g);
}

template <int R, int O>
void launch_rows(const float * x, int n, int K, const float * w, const float * b, int N, float * y, int rows, int tiles,
                 int nbuf, const conv_geom & g, cudaStream_t s) {
    static_assert(R * k_sums_pad <= k_gseg, "a warp's buffer holds its chains' slice sums");
    auto         kernel = gemv_rows_kernel<R, O>;
    const size_t smem   = size_t(rows + nbuf * O * k_rows_warps) * k_gseg * sizeof(float);
    allow_shared("gemv_rows (shared memory size)", kernel, size_t(R + 2 * O * k_rows_warps) * k_gseg * sizeof(float));
    const dim3 grid((unsigned) ((N + O * k_rows_warps - 1) / (O * k_rows_warps)), (unsigned) tiles);
    launch("gemv_rows", kernel, grid, dim3(32 * k_rows_warps), smem, s, x, n, K, w, b, N, y, rows, nbuf, g);
}

// the chunked kernel's shapes: O outputs a warp, W warps a block
struct gemv_shape {
    int o = 0, w = k_rows_warps;    // o = 0: the older kernel
};

// "OxW": O = 1, 2, 4 outputs a warp, W = 2, 4, 8 warps, O·W ≤ 16 (1x8, 2x8, 1x4, 2x4, 4x4, 4x2, …)
gemv_shape parse_shape(const char * v) {
    if (!v || std::strlen(v) != 3 || v[1] != 'x') return {};
    const gemv_shape g{v[0] - '0', v[2] - '0'};
    const bool ok = (g.o == 1 || g.o == 2 || g.o == 4) && (g.w == 2 || g.w == 4 || g.w == 8) && g.o * g.w <= 16;
    return ok ? g : gemv_shape{};
}

// MB_CUDA_GEMV: unset or "new" chooses (linear products: 2 outputs a warp from 3,072 outputs on, else 1,
// 8 warps; MB_CUDA_GEMV_WARPS = 4 or 2 keeps the outputs a block with that many warps, at most 4
// outputs a warp; convs keep the older kernel unless MB_CUDA_GEMV_CONV names a shape, for convs of at
// most MB_CUDA_GEMV_CONV_ROWS rows where that is set: a 40-frame conv stages 14-row tiles of both
// segments, 176 KB a block, one block a multiprocessor, where the older kernel fits three); "old" the
// older kernel; "OxW" that shape for linear and conv alike
gemv_shape choose_shape(int64_t N, bool conv, int64_t n) {
    const char * v = std::getenv("MB_CUDA_GEMV");
    if (!v || std::strcmp(v, "new") == 0) {
        if (conv) {
            const char * rows = std::getenv("MB_CUDA_GEMV_CONV_ROWS");
            if (rows && n > std::atoi(rows)) return {};
            return parse_shape(std::getenv("MB_CUDA_GEMV_CONV"));
        }
        gemv_shape g{N >= 3072 ? 2 : 1, k_rows_warps};
        const int  w = env_is("MB_CUDA_GEMV_WARPS", "4") ? 4 : env_is("MB_CUDA_GEMV_WARPS", "2") ? 2 : k_rows_warps;
        g.o = std::min(4, g.o * g.w / w), g.w = w;
        return g;
    }
    return parse_shape(v);
}

using gemv_launcher = void (*)(const float *, int, int, const float *, const float *, int, float *, int, int,
                               const conv_geom &, cudaStream_t);

// two segments keep ≤ 8 outputs a block: 16 rows and 16 outputs' weights would not fit shared memory
template <int R, int S, int O, int W>
constexpr gemv_launcher chunks_shape() {
    if constexpr (S == 2 && O * W > 8) return launch_chunks<R, O / 2, S, W>;
    else return launch_chunks<R, O, S, W>;
}

// gemv_chunks_kernel's launcher for R rows a tile, S segments and shape g
template <int R, int S>
gemv_launcher chunks_launcher(gemv_shape g) {
    switch (g.o * 10 + g.w) {
    case 12: return chunks_shape<R, S, 1, 2>();
    case 14: return chunks_shape<R, S, 1, 4>();
    case 22: return chunks_shape<R, S, 2, 2>();
    case 24: return chunks_shape<R, S, 2, 4>();
    case 28: return chunks_shape<R, S, 2, 8>();
    case 42: return chunks_shape<R, S, 4, 2>();
    case 44: return chunks_shape<R, S, 4, 4>();
    default: return chunks_shape<R, S, 1, 8>();
    }
}

std::atomic<int64_t> n_launches{0};

} // namespace

int64_t gemv_rows_launches() {
    return n_launches.load(std::memory_order_relaxed);
}

bool gemv_rows(const float * x, int64_t n, int64_t K, const float * w, const float * b, int64_t N, float * y,
               const conv_geom & cg, cudaStream_t s) {
    if (n < k_gemv_rows_min || n > k_skinny_max_rows || K % 4 != 0 || reinterpret_cast<uintptr_t>(x) % 16 != 0 ||
        reinterpret_cast<uintptr_t>(w) % 16 != 0 || K > (int64_t) 1 << 30 || N > (int64_t) 1 << 30) {
        return false;
    }
    const gemv_shape g = choose_shape(N, cg.t > 0, n);
    if (g.o == 0) return false;
    n_launches.fetch_add(1, std::memory_order_relaxed);
    const int tiles = (int) ((n + k_rows_tile - 1) / k_rows_tile), rows = (int) ((n + tiles - 1) / tiles);
    // MB_CUDA_GEMV_CHUNKS=0: gemv_rows_kernel for these too (to compare)
    if (K <= 2 * k_gseg && !env_is("MB_CUDA_GEMV_CHUNKS", "0")) {
        const gemv_launcher go = K > k_gseg ? (rows <= 8 ? chunks_launcher<8, 2>(g) : chunks_launcher<k_rows_tile, 2>(g))
                                            : (rows <= 8 ? chunks_launcher<8, 1>(g) : chunks_launcher<k_rows_tile, 1>(g));
        go(x, (int) n, (int) K, w, b, (int) N, y, rows, tiles, cg, s);
        return true;
    }
    // gemv_rows_kernel has 8 warps a block: the same outputs a block, at most 2 a warp
    const int o    = std::clamp(g.o * g.w / k_rows_warps, 1, 2);
    const int nbuf = K > k_gseg ? 2 : 1;
    using launcher = void (*)(const float *, int, int, const float *, const float *, int, float *, int, int, int,
                              const conv_geom &, cudaStream_t);
    const launcher go = rows <= 8 ? (o == 1 ? launch_rows<8, 1> : launch_rows<8, 2>)
                                  : (o == 1 ? launch_rows<k_rows_tile, 1> : launch_rows<k_rows_tile, 2>);
    go(x, (int) n, (int) K, w, b, (int) N, y, rows, tiles, nbuf, cg, s);
    return true;
}

} // namespace mb::cuda
