// predict's glue after the root planner (backend::root_conditions) and its step 5 on the GPU
// (backend::motion_finish): the host functions of
// motion/motion-rep.cpp (unnormalize, local_to_global, reapply_start_transform) and
// motion/skeleton-fk.cpp (skeleton_fk::run) written again over device arrays, one operation
// for each of the host's in its order. Compiled with -fmad=false (src/backend/CMakeLists.txt),
// so no a·b + c becomes an FMA the host does not round alike; the cos, sin and atan2 of float
// arguments run in double and round to float, as the host's correctly rounded float functions
// give. Two kernels:
//   1. one block a lane: thread 0 adds up the root's velocities over the lane's frames (double
//      sums as the host's), then a thread a frame turns them into the heading and re-applies the
//      start transform, and all unnormalise and copy the 409 body features of every frame
//   2. a warp a frame: a lane a joint for the local rotations, then FK down the joint chain
//      (parents before children) a lane an entry of [R | t]
#include "backend/cuda/cuda-kernels.h"
#include "backend/cuda/cuda-launch.h"
#include "backend/motion-finish.h"

#include <stdexcept>

namespace mb::cuda {

namespace {

constexpr int k_ld    = k_finish_local_dim;
constexpr int k_gd    = k_finish_global_dim;
constexpr int k_nj    = k_finish_joints;
constexpr int k_body  = k_gd - 5;     // features after the global root, copied from local 4..
static_assert(k_ld - 4 == k_body, "the local and global features share the body");

__device__ __forceinline__ float cos_f(float v) {
    return (float) cos((double) v);
}
__device__ __forceinline__ float sin_f(float v) {
    return (float) sin((double) v);
}
__device__ __forceinline__ float atan2_f(float y, float x) {
    return (float) atan2((double) y, (double) x);
}

__device__ __forceinline__ void cross3(const float * a, const float * b, float * c) {
    c[0] = a[1] * b[2] - a[2] * b[1];
    c[1] = a[2] * b[0] - a[0] * b[2];
    c[2] = a[0] * b[1] - a[1] * b[0];
}

__device__ __forceinline__ float norm3(const float * v) {
    return sqrtf(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
}

// rotation.h's cont6d_to_matrix: Gram–Schmidt, columns x, y, z of a row-major m[9]
__device__ void cont6d_to_matrix(const float * six, float * m) {
    float x[3], z[3], y[3];
    const float nx = norm3(six);
    for (int i = 0; i < 3; ++i) x[i] = six[i] / nx;
    cross3(x, six + 3, z);
    const float nz = norm3(z);
    for (int i = 0; i < 3; ++i) z[i] /= nz;
    cross3(z, x, y);
    for (int i = 0; i < 3; ++i) {
        m[i * 3 + 0] = x[i];
        m[i * 3 + 1] = y[i];
        m[i * 3 + 2] = z[i];
    }
}

// rotation.h's matrix_to_quat_wxyz (pytorch3d's rule: max(q_abs, 0.1), first max wins)
__device__ void matrix_to_quat_wxyz(const float * m, float * q) {
    const float m00 = m[0], m01 = m[1], m02 = m[2];
    const float m10 = m[3], m11 = m[4], m12 = m[5];
    const float m20 = m[6], m21 = m[7], m22 = m[8];
    const float arg[4] = {
        1.0f + m00 + m11 + m22,
        1.0f + m00 - m11 - m22,
        1.0f - m00 + m11 - m22,
        1.0f - m00 - m11 + m22,
    };
    float q_abs[4];
    for (int i = 0; i < 4; ++i) q_abs[i] = arg[i] > 0.0f ? sqrtf(arg[i]) : 0.0f;
    int best = 0;
    for (int i = 1; i < 4; ++i) {
        if (q_abs[i] > q_abs[best]) best = i;
    }
    float cand[4];
    switch (best) {
        case 0:  cand[0] = q_abs[0] * q_abs[0]; cand[1] = m21 - m12; cand[2] = m02 - m20; cand[3] = m10 - m01; break;
        case 1:  cand[0] = m21 - m12; cand[1] = q_abs[1] * q_abs[1]; cand[2] = m10 + m01; cand[3] = m02 + m20; break;
        case 2:  cand[0] = m02 - m20; cand[1] = m10 + m01; cand[2] = q_abs[2] * q_abs[2]; cand[3] = m12 + m21; break;
        default: cand[0] = m10 - m01; cand[1] = m20 + m02; cand[2] = m21 + m12; cand[3] = q_abs[3] * q_abs[3]; break;
    }
    const float den = 2.0f * (q_abs[best] > 0.1f ? q_abs[best] : 0.1f);
    for (int i = 0; i < 4; ++i) q[i] = cand[i] / den;
}

// blocks (lane, 0): x[F, 413] → global[F, 414]'s root. Only the root's running sums are serial (thread 0
// adds the frames' velocities in order, in double as the host does); the trigonometry runs a thread a
// frame. Blocks (lane, y) for every y: a share of the body, a thread four features at once (one block
// looping over a lane's 16,000 body values, a load at a time, took 23 µs of a plan). Dynamic shared
// memory: 6 floats a frame
__global__ void finish_global_kernel(const float * __restrict__ x, int64_t frames, const float * __restrict__ scale,
                                     const float * __restrict__ mean, const float * __restrict__ ref,
                                     float * __restrict__ global) {
    extern __shared__ float s_root[];
    const int64_t l  = blockIdx.x;
    const float * xl = x + l * frames * k_ld;
    float *       gl = global + l * frames * k_gd;
    // the body: global[t, 5 + i] = x[t, 4 + i]·scale + mean
    const int64_t nb = frames * k_body, per = (nb + gridDim.y - 1) / gridDim.y;
    const int64_t e_lo = blockIdx.y * per, e_hi = min(nb, e_lo + per);
    for (int64_t e0 = e_lo + threadIdx.x; e0 < e_hi; e0 += 4 * (int64_t) blockDim.x) {
        float v[4];
#pragma unroll
        for (int u = 0; u < 4; ++u) {
            const int64_t e = e0 + u * (int64_t) blockDim.x, t = e / k_body;
            v[u]            = e < e_hi ? xl[t * k_ld + 4 + (e - t * k_body)] : 0.0f;
        }
#pragma unroll
        for (int u = 0; u < 4; ++u) {
            const int64_t e = e0 + u * (int64_t) blockDim.x, t = e / k_body;
            const int     i = int(e - t * k_body);
            if (e < e_hi) {
                const float w        = v[u] * scale[4 + i];
                gl[t * k_gd + 5 + i] = w + mean[4 + i];
            }
        }
    }
    if (blockIdx.y != 0) return;    // the whole block: no barrier of the root's is left waiting
    float *     s_step = s_root;                  // [F, 3] unnormalised dh/dt, vx, vz of each frame, / fps
    float *     s_sum  = s_root + 3 * frames;     // [F, 3] heading and x, z integrated up to each frame
    const float fps    = float(k_finish_fps);
    for (int64_t t = threadIdx.x; t < frames; t += blockDim.x) {
        for (int i = 0; i < 3; ++i) {
            const float v = xl[t * k_ld + i] * scale[i];
            s_step[t * 3 + i] = (v + mean[i]) / fps;
        }
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        // local_to_global on the root: cumulative sums in double (torch's CPU cumsum), the last
        // frame's velocity unused
        double a = 0.0, px = 0.0, pz = 0.0;
        for (int64_t t = 0; t < frames; ++t) {
            if (t > 0) {
                a += double(s_step[(t - 1) * 3 + 0]);
                px += double(s_step[(t - 1) * 3 + 1]);
                pz += double(s_step[(t - 1) * 3 + 2]);
            }
            s_sum[t * 3 + 0] = float(a);
            s_sum[t * 3 + 1] = float(px);
            s_sum[t * 3 + 2] = float(pz);
        }
    }
    __syncthreads();
    // then each frame: heading from its quaternion, reapply_start_transform
    const float rx = ref[l * 3 + 0], rz = ref[l * 3 + 1], rh = ref[l * 3 + 2];
    for (int64_t t = threadIdx.x; t < frames; t += blockDim.x) {
        const float af = s_sum[t * 3 + 0];
        const float qw = cos_f(af / 2.0f);
        const float qy = sin_f(af / 2.0f);
        const float h  = atan2_f(qy, qw) * 2.0f;
        const float ah = atan2_f(sin_f(h), cos_f(h)) + rh;
        const float v  = xl[t * k_ld + 3] * scale[3];
        float *     o  = gl + t * k_gd;
        o[0]           = s_sum[t * 3 + 1] + rx;
        o[1]           = v + mean[3];
        o[2]           = s_sum[t * 3 + 2] + rz;
        o[3]           = cos_f(ah);
        o[4]           = sin_f(ah);
    }
}

constexpr int k_fk_warps = 4;     // frames a block of the FK kernel (a warp a frame)

// a warp a frame (of every lane): skeleton_fk::run on global[n, 414]. Every joint's local rotation
// (parentᵀ · global) and quaternion is independent, one lane a joint; the chain that recomposes the
// global rotations and translations runs joint by joint, one lane an entry of [R | t]
__global__ void finish_fk_kernel(const float * global, int64_t n, const int32_t * parents, const float * offsets,
                                 float * positions, float * local_xyzw) {
    __shared__ int32_t s_par[k_nj];
    __shared__ float   s_off[k_nj * 3];
    __shared__ float   s_lr[k_fk_warps][k_nj][9];     // local rotations
    __shared__ float   s_rg[k_fk_warps][k_nj][12];    // recomposed [R (row-major) | t]
    // parents and offsets are constants (uploaded with the model): read first
    for (int i = threadIdx.x; i < k_nj * 3; i += blockDim.x) {
        if (i < k_nj) s_par[i] = parents[i];
        s_off[i] = offsets[i];
    }
    __syncthreads();
    const int     w = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int64_t t = blockIdx.x * (int64_t) k_fk_warps + w;
    if (t >= n) return;     // whole warps leave: no block-wide barrier follows
    const float * f  = global + t * k_gd;
    float (*lrs)[9]  = s_lr[w];
    float (*rgs)[12] = s_rg[w];
    for (int j = lane; j < k_nj; j += 32) {
        float     g[9], lr[9];
        const int p = s_par[j];
        cont6d_to_matrix(f + k_finish_rot6d + 6 * j, g);
        if (p < 0) {
            for (int k = 0; k < 9; ++k) lr[k] = g[k];
        } else {
            float gp[9];
            cont6d_to_matrix(f + k_finish_rot6d + 6 * p, gp);
            for (int r = 0; r < 3; ++r) {
                for (int c = 0; c < 3; ++c) {
                    lr[r * 3 + c] = gp[0 * 3 + r] * g[0 * 3 + c] + gp[1 * 3 + r] * g[1 * 3 + c] + gp[2 * 3 + r] * g[2 * 3 + c];
                }
            }
        }
        float q[4];
        matrix_to_quat_wxyz(lr, q);
        float * o = local_xyzw + (t * k_nj + j) * 4;
        o[0]      = q[1];
        o[1]      = q[2];
        o[2]      = q[3];
        o[3]      = q[0];
        for (int k = 0; k < 9; ++k) lrs[j][k] = lr[k];
    }
    __syncwarp();
    // 4x4 chain: [Rp tp; 0 1] · [Rl off; 0 1], parents before children
    for (int j = 0; j < k_nj; ++j) {
        const int p = s_par[j];
        if (lane < 12) {
            const float * off = s_off + 3 * j;
            const int     r = lane < 9 ? lane / 3 : lane - 9;
            float         v;
            if (p < 0) {
                v = lane < 9 ? lrs[j][lane] : off[r];
            } else if (lane < 9) {
                const int c = lane % 3;
                v = rgs[p][r * 3 + 0] * lrs[j][0 * 3 + c] + rgs[p][r * 3 + 1] * lrs[j][1 * 3 + c] +
                    rgs[p][r * 3 + 2] * lrs[j][2 * 3 + c];
            } else {
                v = rgs[p][r * 3 + 0] * off[0] + rgs[p][r * 3 + 1] * off[1] + rgs[p][r * 3 + 2] * off[2] + rgs[p][9 + r];
            }
            rgs[j][lane] = v;
        }
        __syncwarp();
    }
    for (int e = lane; e < k_nj * 3; e += 32) {
        const int j = e / 3, i = e % 3;
        positions[(t * k_nj + j) * 3 + i] = rgs[j][9 + i] + f[i];
    }
}

// a thread a frame (of every lane): the root condition and the external condition of
// backend::root_conditions
__global__ void root_conditions_kernel(const float * y, int64_t lanes, int64_t frames, const float * stats,
                                       const float * last, const uint8_t * has_last, float * root_cond, float * ext) {
    const int64_t e = blockIdx.x * (int64_t) blockDim.x + threadIdx.x;
    if (e >= lanes * frames) return;
    const int64_t l = e / frames, t = e - l * frames;
    const float * r = y + e * 5;
    float *       c = root_cond + e * 4;
    c[0]            = r[0];
    c[1]            = r[2];
    c[2]            = r[3];
    c[3]            = r[4];
    if (t == frames - 1 && has_last[l]) {
        ext[e * 2 + 0] = last[l * 2 + 0];
        ext[e * 2 + 1] = last[l * 2 + 1];
        return;
    }
    // the last frame repeats the velocity into it
    const float * a   = t == frames - 1 ? r - 5 : r;
    const float   fps = float(k_finish_fps);
    for (int i = 0; i < 2; ++i) {
        const int   k  = 2 * i;     // x, then z
        const float v0 = a[k] * stats[i], v1 = a[5 + k] * stats[i];
        const float g0 = v0 + stats[2 + i], g1 = v1 + stats[2 + i];
        const float v  = fps * (g1 - g0);
        ext[e * 2 + i] = (v - stats[6 + i]) / stats[4 + i];
    }
}

} // namespace

void root_conditions(const float * y, int64_t n_batch, int64_t frames, const float * stats, const float * last,
                     const uint8_t * has_last, float * root_cond, float * ext, cudaStream_t s) {
    if (n_batch <= 0 || frames <= 0) return;
    if (frames < 2) throw std::runtime_error("CUDA root_conditions: fewer than 2 frames a lane");
    const int64_t n = n_batch * frames;
    launch("root_conditions", root_conditions_kernel, dim3(unsigned((n + 127) / 128)), dim3(128), 0, s, y, n_batch,
           frames, stats, last, has_last, root_cond, ext);
}

void motion_finish(const float * x, int64_t n_batch, int64_t frames, const float * scale, const float * mean,
                   const float * ref, const int32_t * parents, const float * offsets, float * global,
                   float * positions, float * local_xyzw, cudaStream_t s) {
    if (n_batch <= 0 || frames <= 0) return;
    // the root scan's shared memory: 24 bytes a frame within the default 48 KB (predict: ≤ 64 frames)
    if (frames > 2048) throw std::runtime_error("CUDA motion_finish: more than 2,048 frames a lane");
    // the body in shares of about 2,048 values a block
    const unsigned ys = unsigned(std::min<int64_t>(16, (frames * k_body + 2047) / 2048));
    launch("motion_finish (global)", finish_global_kernel, dim3(unsigned(n_batch), ys), dim3(256),
           size_t(6 * frames) * sizeof(float), s, x, frames, scale, mean, ref, global);
    const int64_t n = n_batch * frames;
    launch("motion_finish (fk)", finish_fk_kernel, dim3(unsigned((n + k_fk_warps - 1) / k_fk_warps)),
           dim3(32 * k_fk_warps), 0, s, global, n, parents, offsets, positions, local_xyzw);
}

} // namespace mb::cuda
