// An F32 GEMV of 5–64 rows (batch one: the networks' 10-row linears, the convs' 10–40-row
// products on their im2col), in the one summation order of every product (cuda-kernels.h,
// k_sum_slice): lane l of a warp sums slice l of a 1,024-long segment of k with fmaf from 0, and
// the slice sums are added in order to a running total from 0, the bias last.
//
// Against the older skinny kernel (cuda-kernels.cu; a warp one weight row against 8-row tiles,
// so a 10-row product streams its weights twice), here:
// - one tile holds up to 16 rows (the 10-row products stream their weights once; above 16 rows
//   the rows are split into equal tiles);
// - a warp owns O weight rows (1 or 2), so each x value read from shared memory serves O outputs;
// - weights go to shared memory with cp.async (16 bytes, coalesced, no registers held), the first
//   segment before pdl_wait (weights are constants), and for K above 1,024 the next segment's
//   into a second buffer while this one is summed;
// - staged segments are swizzled (float4 i of slice j at slot i ^ (j mod 8)) instead of padded:
//   the lanes of a quarter warp read 8 distinct float4 slots.
//
// The default for linear products since the eighth session's final call (MB_CUDA_GEMV, read on
// every call: unset or "new", this one for linear products, 2 outputs a warp from 3,072 outputs on, else 1, convs keep the
// older kernel; "old", the older kernel everywhere; "1x8" / "2x8", this one with that many outputs a warp for linear and conv alike).
// H200, cuda_speed.gemv_at_batch_one (µs, older / 1x8 / 2x8): 10 × 1,024 → 3,072 14.3 / 10.0 /
// 8.2, → 2,048 10.1 / 7.0 / 8.0, → 1,024 6.2 / 5.7 / 6.5, 10 × 2,048 → 1,024 10.3 / 10.2 / 10.9,
// 9 × 512 → 512 4.7 / 3.6 / 5.6, conv 512 × 3 → 512 at 10 frames 10.1 / 11.0 / 11.9: faster on
// every linear shape, but a 10-token plan with this kernel on every product at 2 outputs a warp
// (4 warps a block, 2 below 1,024 outputs; since deleted) ran 2.26 against 2.09 ms. The choice
// above, H100, same call, two rounds: 2.068 / 2.042 ms against 2.153 / 2.155 with the older
// kernel (docs/BACKEND.md, eighth session).
#include "backend/cuda/cuda-launch.h"

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

// float offset of the float4 c (elements 4c…4c+3) of a staged segment: slice j = c / 8 at 32·j,
// its float4s at slots (c mod 8) xor (j mod 8)
__device__ __forceinline__ int swz(int c) {
    const int j = c >> 3;
    return 32 * j + 4 * ((c & 7) ^ (j & 7));
}

// y = x·wᵀ + b for the rows [r0, r0 + nr) of this block's tile (blockIdx.y) and the O·8 outputs
// of this block (warp w: outputs (blockIdx.x·8 + w)·O + u). t_ncw > 0: y is NCW per lane
// (conv1d on its im2col: row r is position r mod t of lane r / t); act: leaky_relu(slope)
template <int R, int O>
__global__ void __launch_bounds__(32 * k_rows_warps, 2)
    gemv_rows_kernel(const float * __restrict__ x, int n, int K, const float * __restrict__ w,
                     const float * __restrict__ b, int N, float * __restrict__ y, int rows, int nbuf, int t_ncw,
                     int act, float slope) {
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

    pdl_trigger();
    load_w(0);    // weights are constants: in flight while the kernel before finishes
    float bias[2];    // chain c's bias (c = lane, lane + 32), loaded now rather than after the sums
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        const int o = o0 + (lane + 32 * h) % O;
        bias[h]     = b && o < N ? __ldg(b + o) : 0.0f;
    }
    cp_async_commit();
    pdl_wait();    // x is the previous kernel's output

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
        for (int i = 0; i < 8; ++i) {
            const int at = swz(8 * lane + i);    // float4 i of slice `lane`
            float4    wq[O];
#pragma unroll
            for (int u = 0; u < O; ++u) wq[u] = *reinterpret_cast<const float4 *>(wb + u * k_gseg + at);
#pragma unroll
            for (int r = 0; r < R; ++r) {
                if (r < nr) {    // the same for the whole block
                    const float4 xq = *reinterpret_cast<const float4 *>(xs + r * k_gseg + at);
#pragma unroll
                    for (int u = 0; u < O; ++u) {
                        s[r][u] = fma4(xq, wq[u], s[r][u]);
                    }
                }
            }
        }
        // the slice sums in order, as the older kernel adds them (slices past K are +0, which the
        // total, never −0, absorbs): chain c reads its 32 sums from the warp's buffer
        __syncwarp();    // every lane has read its weights: the buffer takes the slice sums
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
        __syncwarp();    // the chains have read the sums: the buffer takes weights again
    }

#pragma unroll
    for (int h = 0; h < 2; ++h) {
        const int c = lane + 32 * h;
        const int o = o0 + c % O;
        if (c < nr * O && o < N) {
            const int    r  = r0 + c / O;
            const int    ln = t_ncw ? r / t_ncw : 0;
            const size_t at = t_ncw ? ((size_t) ln * N + o) * t_ncw + (r - ln * t_ncw) : (size_t) r * N + o;
            const float  v  = tot[h] + bias[h];
            y[at]           = act ? leaky(v, slope) : v;
        }
    }
}

template <int R, int O>
void launch_rows(const float * x, int n, int K, const float * w, const float * b, int N, float * y, int rows, int tiles,
                 int nbuf, int t_ncw, int act, float slope, cudaStream_t s) {
    static_assert(R * k_sums_pad <= k_gseg, "a warp's buffer holds its chains' slice sums");
    auto         kernel = gemv_rows_kernel<R, O>;
    const size_t smem   = size_t(rows + nbuf * O * k_rows_warps) * k_gseg * sizeof(float);
    allow_shared("gemv_rows (shared memory size)", kernel, size_t(R + 2 * O * k_rows_warps) * k_gseg * sizeof(float));
    const dim3 grid((unsigned) ((N + O * k_rows_warps - 1) / (O * k_rows_warps)), (unsigned) tiles);
    launch_product("gemv_rows", kernel, grid, dim3(32 * k_rows_warps), smem, s, x, n, K, w, b, N, y, rows, nbuf, t_ncw,
                   act, slope);
}

// The split GEMV, for K of 2–8 segments. gemv_rows's warp sums its segments one after another,
// staging x a segment at a time, so each segment past the first adds a round trip to memory and
// block barriers to the chain (H200: 10 × 2,048 → 1,024 took 10.3 µs against 5.7 for 10 × 1,024
// → 1,024). Here a block stages all its rows of x at once and gives each (output, segment) pair a
// warp: every weight the block reads is in flight at once. The slice sums meet in shared memory,
// where one thread a chain adds them in order (the one summation order, so the same bits).
constexpr int k_split_warps  = 8;     // warps a block: outputs a block = 8 / segments
constexpr int k_split_segs   = 8;     // segments at most (K ≤ 8,192)
constexpr int k_split_x_segs = 40;    // rows × segments of x a block stages at most (160 KiB)

// in_k > 0: the rows [r0, r0 + nr) of conv1d's im2col (what the im2col kernel would write) built
// in shared memory from x [lanes][in_c][t] itself. A thread reads the x of one position i in
// coalesced order (consecutive threads, consecutive positions) and stores it at every row whose
// tap reads it, and 0 at this row's taps that fall outside the lane, so every entry is written
// once; k past K is 0 (its weights are 0 too, but x·0 must not meet an Inf or NaN left there)
// where k of a staged row lies: swizzled segments (SWZ, gemv_split) or in order (gemv_bcast)
template <bool SWZ>
__device__ __forceinline__ int col_at(int k) {
    return SWZ ? (k & ~(k_gseg - 1)) + swz((k & (k_gseg - 1)) >> 2) + (k & 3) : k;
}

// the biased total v of row r, output o, through gemv_io's epilogue (the older kernel's arithmetic)
__device__ __forceinline__ void store_output(float * __restrict__ y, int N, int r, int o, float v, const gemv_io & e) {
    const int    ln = e.t_ncw ? r / e.t_ncw : 0;    // lane of the row (NCW per lane)
    const size_t at = e.t_ncw ? ((size_t) ln * N + o) * e.t_ncw + (r - ln * e.t_ncw) : (size_t) r * N + o;
    const float  a  = e.act ? leaky(v, e.slope) : v;
    const float  v2 = e.res ? a + e.res[at] : a;    // read before y[at] is written (res may be y)
    y[at]           = v2;
    if (e.ncol) store_next_col(e.ncol, e.nk, e.ndil, e.nrelu, e.t_ncw, N, ln, r - ln * e.t_ncw, o, v2);
}

template <bool SWZ>
__device__ __forceinline__ void stage_im2col(const float * __restrict__ x, float * xs, int xrs, int K, int r0, int nr,
                                             const gemv_io & e) {
    const int t = e.t_ncw, ks = e.in_k, half = (ks - 1) / 2, dil = e.in_dil;
    const int pad = xrs - 4 - K;    // k from K to the end of the last segment (SWZ) or slice
    for (int i = threadIdx.x; i < nr * pad; i += (int) blockDim.x) {
        const int r = i / pad, k = K + i % pad;
        xs[(size_t) r * xrs + col_at<SWZ>(k)] = 0.0f;
    }
    const int per = (int) blockDim.x / t;    // channels a pass; threads past per·t idle
    if (threadIdx.x >= per * t) return;
    const int i = threadIdx.x % t, c0 = threadIdx.x / t;
    const int l0 = r0 / t, l1 = (r0 + nr - 1) / t;
    for (int ln = l0; ln <= l1; ++ln) {
        const float * xl  = x + (size_t) ln * e.in_c * t + i;
        const int     row = ln * t + i - r0;    // this position's row in the tile (may be outside it)
        for (int c = c0; c < e.in_c; c += 4 * per) {
            float v[4];    // four loads in flight before the stores
#pragma unroll
            for (int q = 0; q < 4; ++q) v[q] = c + q * per < e.in_c ? xl[(size_t) (c + q * per) * t] : 0.0f;
#pragma unroll
            for (int q = 0; q < 4; ++q) {
                const int cq = c + q * per;
                if (cq >= e.in_c) break;
                const float val = e.in_relu ? leaky(v[q], 0.0f) : v[q];
                for (int kk = 0; kk < ks; ++kk) {
                    const int off = (kk - half) * dil, k = cq * ks + kk;
                    const int at  = col_at<SWZ>(k);
                    const int rr  = row - off;    // the row whose tap kk reads position i
                    if (i - off >= 0 && i - off < t && rr >= 0 && rr < nr) xs[(size_t) rr * xrs + at] = val;
                    if ((i + off < 0 || i + off >= t) && row >= 0 && row < nr) xs[(size_t) row * xrs + at] = 0.0f;
                }
            }
        }
    }
}

// the rows [r0, r0 + nr) of x into shared memory (rows xrs floats apart, the last 4 padding, 0
// past K): an im2col built from conv1d's input where in_k, else copied with cp.async (the caller
// commits the group)
template <bool SWZ>
__device__ __forceinline__ void stage_x(const float * __restrict__ x, float * xs, int xrs, int K, int r0, int nr,
                                        const gemv_io & e) {
    if (e.in_k) {
        stage_im2col<SWZ>(x, xs, xrs, K, r0, nr, e);
        return;
    }
    const int per_row = (xrs - 4) / 4;
    for (int i = threadIdx.x; i < nr * per_row; i += blockDim.x) {
        const int r = i / per_row, k = 4 * (i % per_row);
        cp_async16(xs + (size_t) r * xrs + col_at<SWZ>(k), x + (size_t) (r0 + r) * K + (k < K ? k : 0), k < K);
    }
}

template <int R>
__global__ void __launch_bounds__(32 * k_split_warps)
    gemv_split_kernel(const float * __restrict__ x, int n, int K, const float * __restrict__ w,
                      const float * __restrict__ b, int N, float * __restrict__ y, int rows, gemv_io e) {
    extern __shared__ float4 gemv_split_smem[];
    const int nseg = (K + k_gseg - 1) / k_gseg, ob = k_split_warps / nseg;
    // x's rows, each nseg swizzled segments and 4 floats of padding (the im2col's scattered stores
    // to several rows at one k then fall in different banks)
    const int xrs  = nseg * k_gseg + 4;
    float *   xs   = reinterpret_cast<float *>(gemv_split_smem);    // [rows][xrs]
    float *   ws   = xs + (size_t) rows * xrs;                       // [warps][k_gseg]: weights, then slice sums
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int u = warp / nseg, sg = warp % nseg;                    // this warp's output and segment
    const bool pair = u < ob;                                        // (warps past ob·nseg only stage)
    const int o0 = blockIdx.x * ob, r0 = blockIdx.y * rows, nr = min(rows, n - r0);
    float *   wb = ws + warp * k_gseg;

    pdl_trigger();
    if (pair) {    // weights are constants: in flight while the kernel before finishes
        const float * wr = w + (size_t) min(o0 + u, N - 1) * K;    // past N: computed, not stored
#pragma unroll
        for (int i = 0; i < 8; ++i) {
            const int c = 32 * i + lane, k = sg * k_gseg + 4 * c;
            cp_async16(wb + swz(c), wr + (k < K ? k : 0), k < K);
        }
    }
    cp_async_commit();
    // chain c = threadIdx.x: output c / rows, row c mod rows; its bias loaded now
    const int  cu = threadIdx.x / rows, cr = threadIdx.x % rows, co = o0 + cu;
    const bool chain = cu < ob && cr < nr && co < N;
    const float bias = chain && b ? __ldg(b + co) : 0.0f;
    pdl_wait();    // x is the previous kernel's output
    stage_x<true>(x, xs, xrs, K, r0, nr, e);
    cp_async_commit();
    cp_async_wait<0>();
    __syncthreads();

    float s[R];
#pragma unroll
    for (int r = 0; r < R; ++r) s[r] = 0.0f;
    if (pair) {
#pragma unroll
        for (int i = 0; i < 8; ++i) {
            const int    at = swz(8 * lane + i);    // float4 i of slice `lane`
            const float4 wq = *reinterpret_cast<const float4 *>(wb + at);
#pragma unroll
            for (int r = 0; r < R; ++r) {
                if (r < nr) {    // the same for the whole block
                    const float4 xq = *reinterpret_cast<const float4 *>(xs + (size_t) r * xrs + sg * k_gseg + at);
                    s[r] = fma4(xq, wq, s[r]);
                }
            }
        }
    }
    __syncthreads();    // every warp has read its weights: ws takes the slice sums
    const int sp   = nseg * 32 + 4;    // a chain's sums, 4 floats of padding (float4 reads without conflicts)
    float *   sums = ws;               // [ob][rows][sp]
    if (pair) {
#pragma unroll
        for (int r = 0; r < R; ++r) {
            if (r < nr) sums[((size_t) u * rows + r) * sp + sg * 32 + lane] = s[r];
        }
    }
    __syncthreads();
    if (!chain) return;
    // the slice sums in order (those of slices past K are +0, which the total, never −0, absorbs)
    const float4 * p   = reinterpret_cast<const float4 *>(sums + ((size_t) cu * rows + cr) * sp);
    float          tot = 0.0f;
    for (int j = 0; j < nseg * 8; ++j) {
        const float4 q = p[j];
        tot            = (((tot + q.x) + q.y) + q.z) + q.w;
    }
    store_output(y, N, r0 + cr, co, tot + bias, e);
}

// The broadcast GEMV (MB_CUDA_BCAST=1). gemv_rows and gemv_split give a warp one or two output rows
// and a lane one slice, so each warp reads all of x from shared memory, its 32 lanes 32 different
// float4s an instruction: at 10 rows, 10 such reads (40 cycles of the shared-memory pipe) for each
// float4 of weights, and the products wait on shared memory rather than on HBM (the ninth session
// found L2-resident weights no faster). Here a lane owns one output (u = lane mod OB) and a group
// of rows (g = lane / OB: rows g, g + 32/OB, …), and the 8 warps of a block split the slices: an x
// read is a broadcast of 32/OB float4s (one cycle), a weight read OB float4s of rows padded apart
// (one or two). Each warp copies its own slices' weights for the block's OB outputs, a cp.async
// group a slice, all in flight at once, and sums a slice as soon as it has landed; each slice sum
// then goes where that slice's weights were, and one thread a (row, output) adds them in order:
// the same bits as every other F32 product.
constexpr int k_bcast_warps = 8;
constexpr int k_bcast_rows  = 16;    // rows a tile holds at most

// cp.async.wait_group n for a run-time n (more than 7: all, which is never wrong)
__device__ __forceinline__ void cp_async_wait_at_most(int n) {
    switch (n) {
    case 0: cp_async_wait<0>(); break;
    case 1: cp_async_wait<1>(); break;
    case 2: cp_async_wait<2>(); break;
    case 3: cp_async_wait<3>(); break;
    case 4: cp_async_wait<4>(); break;
    case 5: cp_async_wait<5>(); break;
    case 6: cp_async_wait<6>(); break;
    case 7: cp_async_wait<7>(); break;
    default: cp_async_wait<0>(); break;
    }
}

template <int OB>    // outputs a block
__global__ void __launch_bounds__(32 * k_bcast_warps)
    gemv_bcast_kernel(const float * __restrict__ x, int n, int K, const float * __restrict__ w,
                      const float * __restrict__ b, int N, float * __restrict__ y, int rows, gemv_io e) {
    constexpr int G = 32 / OB, RL = (k_bcast_rows + G - 1) / G;    // row groups, rows a lane at most
    extern __shared__ float4 gemv_bcast_smem[];
    const int nsl = (K + k_sum_slice - 1) / k_sum_slice, S = (nsl + k_bcast_warps - 1) / k_bcast_warps;
    // rows of weights and of x: the slices, 4 floats of padding (rows read together in different banks)
    const int ld   = nsl * k_sum_slice + 4;
    float *   ws   = reinterpret_cast<float *>(gemv_bcast_smem);    // [OB][ld]: weights, then slice sums
    float *   xs   = ws + (size_t) OB * ld;                          // [rows][ld]
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, u = lane % OB, g = lane / OB;
    const int o0 = blockIdx.x * OB, r0 = blockIdx.y * rows, nr = min(rows, n - r0);
    const int j0 = warp * S, j1 = min(nsl, j0 + S), nj = max(0, j1 - j0);    // this warp's slices

    auto load_w = [&](int j) {    // slice j of the block's OB weight rows (0 past K): one group
        for (int i = lane; i < OB * 8; i += 32) {
            const int uu = i / 8, k = j * k_sum_slice + 4 * (i % 8);
            cp_async16(ws + (size_t) uu * ld + k, w + (size_t) min(o0 + uu, N - 1) * K + (k < K ? k : 0), k < K);
        }
        cp_async_commit();
    };
    pdl_trigger();
    if (nj > 0) load_w(j0);    // weights are constants: in flight while the kernel before finishes
    pdl_wait();                // x is the previous kernel's output
    stage_x<false>(x, xs, ld, K, r0, nr, e);
    cp_async_commit();
    for (int jj = 1; jj < nj; ++jj) load_w(j0 + jj);
    // groups in order: W(j0), X, W(j0 + 1) … W(j1 − 1); X may be waited for with the later W pending
    cp_async_wait_at_most(max(0, nj - 1));
    __syncthreads();    // x (and the first slice) visible to the block

    for (int jj = 0; jj < nj; ++jj) {
        const int j = j0 + jj;
        if (jj > 0) {
            cp_async_wait_at_most(nj - 1 - jj);
            __syncwarp();    // the warp's copies of slice j visible to its lanes
        }
        float sl[RL];
#pragma unroll
        for (int i = 0; i < RL; ++i) sl[i] = 0.0f;
#pragma unroll
        for (int q = 0; q < 8; ++q) {
            const float4 wq = *reinterpret_cast<const float4 *>(ws + (size_t) u * ld + j * k_sum_slice + 4 * q);
#pragma unroll
            for (int i = 0; i < RL; ++i) {
                const int r = g + i * G;
                if (r < nr) {
                    const float4 xq = *reinterpret_cast<const float4 *>(xs + (size_t) r * ld + j * k_sum_slice + 4 * q);
                    sl[i]           = fma4(xq, wq, sl[i]);
                }
            }
        }
        __syncwarp();    // every lane has read slice j's weights: their place takes its sums
#pragma unroll
        for (int i = 0; i < RL; ++i) {
            const int r = g + i * G, f = r * OB + u;    // (row, output) f at cell f of the slice's 32·OB
            if (r < nr) ws[(size_t) (f / k_sum_slice) * ld + j * k_sum_slice + f % k_sum_slice] = sl[i];
        }
    }
    __syncthreads();
    // (row, output) chains: the slice sums in order, the bias last
    for (int f = threadIdx.x; f < nr * OB; f += 32 * k_bcast_warps) {
        const int o = o0 + f % OB;
        if (o >= N) continue;
        const float * p   = ws + (size_t) (f / k_sum_slice) * ld + f % k_sum_slice;
        float         tot = 0.0f;
        for (int j = 0; j < nsl; ++j) tot += p[j * k_sum_slice];
        store_output(y, N, r0 + f / OB, o, tot + (b ? __ldg(b + o) : 0.0f), e);
    }
}

// MB_CUDA_GEMV: 0 the older kernel, else the outputs a warp; unset or "new" chooses
int rows_outputs(int64_t N, int t_ncw) {
    const char * v = std::getenv("MB_CUDA_GEMV");
    if (!v || std::strcmp(v, "new") == 0) return t_ncw ? 0 : N >= 3072 ? 2 : 1;
    if (std::strcmp(v, "old") == 0) return 0;
    if (std::strcmp(v, "1x8") == 0) return 1;
    if (std::strcmp(v, "2x8") == 0) return 2;
    return 0;
}

} // namespace

bool gemv_rows(const float * x, int64_t n, int64_t K, const float * w, const float * b, int64_t N, float * y, int t_ncw,
               int act, float slope, cudaStream_t s) {
    if (n < k_gemv_rows_min || n > k_skinny_max_rows || K % 4 != 0 || reinterpret_cast<uintptr_t>(x) % 16 != 0 ||
        reinterpret_cast<uintptr_t>(w) % 16 != 0 || K > (int64_t) 1 << 30 || N > (int64_t) 1 << 30) {
        return false;
    }
    const int o = rows_outputs(N, t_ncw);
    if (o == 0) return false;
    const int tiles = (int) ((n + k_rows_tile - 1) / k_rows_tile), rows = (int) ((n + tiles - 1) / tiles);
    const int nbuf  = K > k_gseg ? 2 : 1;
    using launcher  = void (*)(const float *, int, int, const float *, const float *, int, float *, int, int, int, int,
                              int, float, cudaStream_t);
    const launcher go = rows <= 8 ? (o == 1 ? launch_rows<8, 1> : launch_rows<8, 2>)
                                  : (o == 1 ? launch_rows<k_rows_tile, 1> : launch_rows<k_rows_tile, 2>);
    go(x, (int) n, (int) K, w, b, (int) N, y, rows, tiles, nbuf, t_ncw, act, slope, s);
    return true;
}

namespace {

// the split GEMV where K has 2–8 segments (gemv_batch_one has checked the rest)
bool gemv_split(const float * x, int64_t n, int64_t K, const float * w, const float * b, int64_t N, float * y,
                const gemv_io & e, cudaStream_t s) {
    if (K <= k_gseg || K > (int64_t) k_split_segs * k_gseg) return false;
    const int nseg  = (int) ((K + k_gseg - 1) / k_gseg), ob = k_split_warps / nseg;
    const int most  = std::min(k_rows_tile, k_split_x_segs / nseg);    // rows a tile holds at most
    const int tiles = (int) ((n + most - 1) / most), rows = (int) ((n + tiles - 1) / tiles);
    auto      kernel = rows <= 8 ? gemv_split_kernel<8> : gemv_split_kernel<k_rows_tile>;
    const size_t smem = (size_t(rows) * (nseg * k_gseg + 4) + k_split_warps * k_gseg) * sizeof(float);
    allow_shared("gemv_split (shared memory size)", kernel,
                 (size_t(k_split_x_segs + k_split_warps) * k_gseg + 4 * k_rows_tile) * sizeof(float));
    const dim3 grid((unsigned) ((N + ob - 1) / ob), (unsigned) tiles);
    launch_product("gemv_split", kernel, grid, dim3(32 * k_split_warps), smem, s, x, (int) n, (int) K, w, b, (int) N, y,
                   rows, e);
    return true;
}

// the current device's multiprocessors (looked up once a device)
int multiprocessors() {
    static int count[64] = {};
    int        dev       = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= 64) {
        cudaGetLastError();
        return 1;
    }
    if (count[dev] == 0) {
        int c = 0;
        if (cudaDeviceGetAttribute(&c, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || c < 1) {
            cudaGetLastError();
            return 1;
        }
        count[dev] = c;
    }
    return count[dev];
}

// the broadcast GEMV (gemv_batch_one has checked its arguments)
bool gemv_bcast(const float * x, int64_t n, int64_t K, const float * w, const float * b, int64_t N, float * y,
                const gemv_io & e, cudaStream_t s) {
    // outputs a block: the smaller of two that still runs in one wave (so the SMs share the outputs
    // evenly: in_proj's 3,072 at 8 a block, three blocks an SM), else the larger (fewer blocks)
    const size_t ld    = size_t((K + k_sum_slice - 1) / k_sum_slice) * k_sum_slice + 4;    // floats a row of w or x takes
    const size_t limit = 200 * 1024 / sizeof(float);
    const int    sms   = multiprocessors();
    int          ob = 0, rows = 0, tiles = 0;
    void (*kernel)(const float *, int, int, const float *, const float *, int, float *, int, gemv_io) = nullptr;
    size_t smem = 0;
    // MB_CUDA_BCAST_OB=4|8|16: that many outputs a block, to compare (the bits are the same)
    const char * fo     = std::getenv("MB_CUDA_BCAST_OB");
    const int    forced = fo ? std::atoi(fo) : 0;
    const bool   force  = forced == 4 || forced == 8 || forced == 16;
    for (const int o : {force ? forced : N >= 1024 ? 8 : 4, force ? forced : N >= 1024 ? 16 : 8}) {
        if ((o + 1) * ld > limit) break;
        const int most = (int) std::min<size_t>(k_bcast_rows, limit / ld - o);
        auto      kern = o == 16 ? gemv_bcast_kernel<16> : o == 8 ? gemv_bcast_kernel<8> : gemv_bcast_kernel<4>;
        allow_shared("gemv_bcast (shared memory size)", kern, limit * sizeof(float));
        ob = o, kernel = kern;
        tiles = (int) ((n + most - 1) / most), rows = (int) ((n + tiles - 1) / tiles);
        smem  = size_t(o + rows) * ld * sizeof(float);
        int per_sm = 0;
        if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kern, 32 * k_bcast_warps, smem) != cudaSuccess) {
            cudaGetLastError();
            per_sm = 1;
        }
        if (force || (int64_t) ((N + o - 1) / o) * tiles <= (int64_t) per_sm * sms) break;
    }
    if (!kernel) return false;
    const dim3 grid((unsigned) ((N + ob - 1) / ob), (unsigned) tiles);
    launch_product("gemv_bcast", kernel, grid, dim3(32 * k_bcast_warps), smem, s, x, (int) n, (int) K, w, b, (int) N, y,
                   rows, e);
    return true;
}

} // namespace

bool gemv_batch_one(const float * x, int64_t n, int64_t K, const float * w, const float * b, int64_t N, float * y,
                    const gemv_io & e, cudaStream_t s) {
    // not yet run on a GPU: off unless asked for (docs/BACKEND.md, eighteenth session)
    const bool   bcast = env_is("MB_CUDA_BCAST", "1"), split = env_is("MB_CUDA_SPLIT", "1");
    const char * g     = std::getenv("MB_CUDA_GEMV");
    if (!(bcast || split) || (g && *g && std::strcmp(g, "new") != 0)) return false;
    static_assert(k_bcast_warps == k_split_warps, "an im2col built by a block's threads: the same block size");
    if (n < 1 || n > k_skinny_max_rows || K < 1 || K % 4 != 0 || K > (int64_t) 1 << 16 ||
        reinterpret_cast<uintptr_t>(x) % 16 != 0 || reinterpret_cast<uintptr_t>(w) % 16 != 0 || N < 1 ||
        N > (int64_t) 1 << 30 || (e.t_ncw && n % e.t_ncw != 0) ||
        (e.in_k && (!e.t_ncw || e.t_ncw > 32 * k_bcast_warps || (int64_t) e.in_c * e.in_k != K))) {
        return false;
    }
    return (bcast && gemv_bcast(x, n, K, w, b, N, y, e, s)) || (split && gemv_split(x, n, K, w, b, N, y, e, s));
}

} // namespace mb::cuda
