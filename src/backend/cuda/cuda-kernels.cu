// kernels of the CUDA backend. At batch one the networks multiply 1–64 rows by
// large weight matrices, so linear is bound by reading the weights once: the
// skinny kernel gives each block a few weight rows, streams them with 16-byte
// loads split over its 256 threads, keeps up to 16 input rows' partial sums in
// registers and reduces the 32 sums of a warp in 31 shuffles. LayerNorm
// accumulates in double like the CPU.
#include "backend/cuda/cuda-kernels.h"

#include <cmath>
#include <stdexcept>
#include <string>

namespace mb::cuda {
namespace {

constexpr unsigned k_full = 0xffffffffu;

void check_launch(const char * what) {
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) throw std::runtime_error(std::string("cuda: ") + what + ": " + cudaGetErrorString(e));
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

// one step of warp_transpose_sum: keep CNT of 2·CNT values, trade the others with lane ^ CNT
template <int CNT>
__device__ __forceinline__ void transpose_sum_step(float (&v)[32], int lane) {
    const bool upper = (lane & CNT) != 0;
#pragma unroll
    for (int i = 0; i < CNT; ++i) {
        const float send = upper ? v[i] : v[i + CNT];
        const float keep = upper ? v[i + CNT] : v[i];
        v[i]             = keep + __shfl_xor_sync(k_full, send, CNT);
    }
}

// the 32 values v[0..32) of every lane summed over the warp: lane L returns the sum of v[L]
// (31 shuffles instead of 32·5; each step halves the values a lane keeps)
__device__ __forceinline__ float warp_transpose_sum(float (&v)[32], int lane) {
    transpose_sum_step<16>(v, lane);
    transpose_sum_step<8>(v, lane);
    transpose_sum_step<4>(v, lane);
    transpose_sum_step<2>(v, lane);
    transpose_sum_step<1>(v, lane);
    return v[0];
}

// one block: C weight rows o0..o0+C−1 against R input rows r0..r0+R−1 (R·C = 32 sums per
// thread); its 8 warps split K (thread i takes every 256th 16-byte chunk from i), so each
// thread has C weight loads in flight, then the warps' partial sums meet in shared memory.
// VEC: K % 4 == 0 and 16-byte aligned rows
template <int R, int C, bool VEC>
__global__ void __launch_bounds__(256) linear_skinny_kernel(const float * __restrict__ x, int n, int K,
                                                           const float * __restrict__ w,
                                                           const float * __restrict__ b, int N,
                                                           float * __restrict__ y) {
    static_assert(R * C == 32, "one sum per lane");
    __shared__ float part[8][32];
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int o0 = blockIdx.x * C;
    const int r0 = blockIdx.y * R;
    const int nr = min(R, n - r0);

    const float * wr[C];
#pragma unroll
    for (int c = 0; c < C; ++c) wr[c] = w + (size_t) min(o0 + c, N - 1) * K;   // past N: computed, not stored
    float acc[32];
#pragma unroll
    for (int i = 0; i < 32; ++i) acc[i] = 0.0f;

    if constexpr (VEC) {
        for (int k = threadIdx.x * 4; k < K; k += 1024) {
            float4 wv[C];
#pragma unroll
            for (int c = 0; c < C; ++c) wv[c] = __ldg(reinterpret_cast<const float4 *>(wr[c] + k));
#pragma unroll
            for (int r = 0; r < R; ++r) {
                if (r < nr) {
                    const float4 xv = __ldg(reinterpret_cast<const float4 *>(x + (size_t) (r0 + r) * K + k));
#pragma unroll
                    for (int c = 0; c < C; ++c) {
                        float a = acc[r * C + c];
                        a       = fmaf(xv.x, wv[c].x, a);
                        a       = fmaf(xv.y, wv[c].y, a);
                        a       = fmaf(xv.z, wv[c].z, a);
                        a       = fmaf(xv.w, wv[c].w, a);
                        acc[r * C + c] = a;
                    }
                }
            }
        }
    } else {
        for (int k = threadIdx.x; k < K; k += 256) {
            float wv[C];
#pragma unroll
            for (int c = 0; c < C; ++c) wv[c] = __ldg(wr[c] + k);
#pragma unroll
            for (int r = 0; r < R; ++r) {
                if (r < nr) {
                    const float xv = __ldg(x + (size_t) (r0 + r) * K + k);
#pragma unroll
                    for (int c = 0; c < C; ++c) acc[r * C + c] = fmaf(xv, wv[c], acc[r * C + c]);
                }
            }
        }
    }

    part[warp][lane] = warp_transpose_sum(acc, lane);
    __syncthreads();
    if (warp == 0) {
        float sum = 0.0f;
#pragma unroll
        for (int i = 0; i < 8; ++i) sum += part[i][lane];
        const int r = lane / C, c = lane % C;
        if (r < nr && o0 + c < N) y[(size_t) (r0 + r) * N + o0 + c] = sum + (b ? b[o0 + c] : 0.0f);
    }
}

template <int R, int C>
void launch_skinny(const float * x, int64_t n, int64_t K, const float * w, const float * b, int64_t N, float * y,
                   cudaStream_t s) {
    const dim3 grid((unsigned) ((N + C - 1) / C), (unsigned) ((n + R - 1) / R));
    const bool vec = K % 4 == 0 && (reinterpret_cast<uintptr_t>(x) % 16) == 0 &&
                     (reinterpret_cast<uintptr_t>(w) % 16) == 0;
    if (vec) {
        linear_skinny_kernel<R, C, true><<<grid, 256, 0, s>>>(x, (int) n, (int) K, w, b, (int) N, y);
    } else {
        linear_skinny_kernel<R, C, false><<<grid, 256, 0, s>>>(x, (int) n, (int) K, w, b, (int) N, y);
    }
}

__global__ void add_bias_rows_kernel(float * y, int64_t total, int d, const float * __restrict__ b) {
    for (int64_t i = blockIdx.x * (int64_t) blockDim.x + threadIdx.x; i < total; i += (int64_t) gridDim.x * blockDim.x) {
        y[i] += b[i % d];
    }
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

__device__ float block_reduce_f(float v, float * scratch, bool is_max) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, n_warp = blockDim.x >> 5;
    v = is_max ? warp_max(v) : warp_sum(v);
    __syncthreads();
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    float t = scratch[0];
    for (int i = 1; i < n_warp; ++i) t = is_max ? fmaxf(t, scratch[i]) : t + scratch[i];
    return t;
}

// one block a row; the row (x + r) is kept in shared memory
__global__ void add_layer_norm_kernel(float * x, const float * __restrict__ r, int d, const float * __restrict__ g,
                                      const float * __restrict__ b, float eps) {
    extern __shared__ float row[];
    __shared__ double scratch[32];
    float *       xr = x + (size_t) blockIdx.x * d;
    const float * rr = r ? r + (size_t) blockIdx.x * d : nullptr;
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
    for (int j = threadIdx.x; j < d; j += blockDim.x) xr[j] = ((row[j] - mf) * inv) * g[j] + b[j];
}

// one block per (head, query row); scores of all n keys in shared memory
__global__ void attention_kernel(const float * __restrict__ qkv, int n, int d, int dh,
                                 const uint8_t * __restrict__ key_mask, float * __restrict__ out) {
    extern __shared__ float sc[];
    __shared__ float scratch[32];
    const int   h = blockIdx.x, i = blockIdx.y;
    const int   lane = threadIdx.x & 31, warp = threadIdx.x >> 5, n_warp = blockDim.x >> 5;
    const float scale = 1.0f / sqrtf((float) dh);
    const float * q   = qkv + (size_t) i * 3 * d + h * dh;
    for (int j = warp; j < n; j += n_warp) {
        if (key_mask && key_mask[j]) {
            if (lane == 0) sc[j] = -INFINITY;
            continue;
        }
        const float * k   = qkv + (size_t) j * 3 * d + d + h * dh;
        float         acc = 0.0f;
        for (int c = lane; c < dh; c += 32) acc = fmaf(q[c], k[c], acc);
        acc = warp_sum(acc);
        if (lane == 0) sc[j] = acc * scale;
    }
    __syncthreads();
    float mx = -INFINITY;
    for (int j = threadIdx.x; j < n; j += blockDim.x) mx = fmaxf(mx, sc[j]);
    mx = block_reduce_f(mx, scratch, true);
    float sum = 0.0f;
    for (int j = threadIdx.x; j < n; j += blockDim.x) {
        const float e = sc[j] == -INFINITY ? 0.0f : expf(sc[j] - mx);
        sc[j]         = e;
        sum += e;
    }
    sum = block_reduce_f(sum, scratch, false);   // its barriers also publish sc
    for (int c = threadIdx.x; c < dh; c += blockDim.x) {
        float o = 0.0f;
        for (int j = 0; j < n; ++j) o += (sc[j] / sum) * qkv[(size_t) j * 3 * d + 2 * d + h * dh + c];
        out[(size_t) i * d + h * dh + c] = o;
    }
}

__global__ void im2col_t_kernel(const float * __restrict__ x, int c_in, int t, int k, int dilation,
                                float * __restrict__ col) {
    const int     ck    = c_in * k;
    const int64_t total = (int64_t) t * ck;
    const int     half  = (k - 1) / 2;
    for (int64_t e = blockIdx.x * (int64_t) blockDim.x + threadIdx.x; e < total; e += (int64_t) gridDim.x * blockDim.x) {
        const int i = (int) (e / ck), rem = (int) (e % ck);
        const int c = rem / k, kk = rem % k;
        const int src = i + (kk - half) * dilation;
        col[e]        = (src >= 0 && src < t) ? x[(size_t) c * t + src] : 0.0f;
    }
}

__global__ void transpose_kernel(const float * __restrict__ x, int rows, int cols, float * __restrict__ y) {
    __shared__ float tile[32][33];
    const int c0 = blockIdx.x * 32, r0 = blockIdx.y * 32;
    for (int j = threadIdx.y; j < 32; j += blockDim.y) {
        const int r = r0 + j, c = c0 + threadIdx.x;
        if (r < rows && c < cols) tile[j][threadIdx.x] = x[(size_t) r * cols + c];
    }
    __syncthreads();
    for (int j = threadIdx.y; j < 32; j += blockDim.y) {
        const int c = c0 + j, r = r0 + threadIdx.x;
        if (r < rows && c < cols) y[(size_t) c * rows + r] = tile[threadIdx.x][j];
    }
}

unsigned grid_for(int64_t total, int block) {
    const int64_t g = (total + block - 1) / block;
    return (unsigned) (g < 1 ? 1 : (g > 65535 ? 65535 : g));
}

} // namespace

void linear_skinny(const float * x, int64_t n, int64_t n_in, const float * w, const float * b, int64_t n_out,
                   float * y, cudaStream_t s) {
    if (n <= 4) {
        launch_skinny<4, 8>(x, n, n_in, w, b, n_out, y, s);
    } else if (n <= 8) {
        launch_skinny<8, 4>(x, n, n_in, w, b, n_out, y, s);
    } else {
        launch_skinny<16, 2>(x, n, n_in, w, b, n_out, y, s);
    }
    check_launch("linear_skinny");
}

void add_bias_rows(float * y, int64_t n, int64_t d, const float * b, cudaStream_t s) {
    add_bias_rows_kernel<<<grid_for(n * d, 256), 256, 0, s>>>(y, n * d, (int) d, b);
    check_launch("add_bias_rows");
}

void add_layer_norm(float * x, const float * r, int64_t n, int64_t d, const float * g, const float * b, float eps,
                    cudaStream_t s) {
    add_layer_norm_kernel<<<(unsigned) n, 256, (size_t) d * sizeof(float), s>>>(x, r, (int) d, g, b, eps);
    check_launch("add_layer_norm");
}

void attention(const float * qkv, int64_t n, int64_t d, int64_t n_head, const uint8_t * key_mask, float * out,
               cudaStream_t s) {
    const dim3 grid((unsigned) n_head, (unsigned) n);
    attention_kernel<<<grid, 128, (size_t) n * sizeof(float), s>>>(qkv, (int) n, (int) d, (int) (d / n_head),
                                                                   key_mask, out);
    check_launch("attention");
}

void im2col_t(const float * x, int64_t c_in, int64_t t, int64_t k, int64_t dilation, float * col, cudaStream_t s) {
    im2col_t_kernel<<<grid_for(t * c_in * k, 256), 256, 0, s>>>(x, (int) c_in, (int) t, (int) k, (int) dilation, col);
    check_launch("im2col_t");
}

void transpose(const float * x, int64_t rows, int64_t cols, float * y, cudaStream_t s) {
    const dim3 grid((unsigned) ((cols + 31) / 32), (unsigned) ((rows + 31) / 32));
    transpose_kernel<<<grid, dim3(32, 8), 0, s>>>(x, (int) rows, (int) cols, y);
    check_launch("transpose");
}

} // namespace mb::cuda
