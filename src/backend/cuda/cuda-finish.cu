// predict's step 5 on the GPU (backend::motion_finish): the host functions of
// motion/motion-rep.cpp (unnormalize, local_to_global, reapply_start_transform) and
// motion/skeleton-fk.cpp (skeleton_fk::run) written again over device arrays, one operation
// for each of the host's in its order. Compiled with -fmad=false (src/backend/CMakeLists.txt),
// so no a·b + c becomes an FMA the host does not round alike; the cos, sin and atan2 of float
// arguments run in double and round to float, as the host's correctly rounded float functions
// give. Two kernels:
//   1. one block a lane: thread 0 integrates the root over the lane's frames (a sequential
//      scan, double sums as the host's) and re-applies the start transform; the others
//      unnormalise and copy the 409 body features of every frame
//   2. one thread a frame: FK down the joint chain (parents before children)
#include "backend/cuda/cuda-kernels.h"
#include "backend/cuda/cuda-launch.h"
#include "backend/motion-finish.h"

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

// one block a lane: x[F, 413] → global[F, 414]
__global__ void finish_global_kernel(const float * x, int64_t frames, const float * scale, const float * mean,
                                     const float * ref, float * global) {
    pdl_trigger();
    pdl_wait();
    const int64_t l  = blockIdx.x;
    const float * xl = x + l * frames * k_ld;
    float *       gl = global + l * frames * k_gd;
    if (threadIdx.x == 0) {
        // local_to_global on the root: cumulative sums in double (torch's CPU cumsum), the last
        // frame's velocity unused; then reapply_start_transform
        const float fps = float(k_finish_fps);
        const float rx = ref[l * 3 + 0], rz = ref[l * 3 + 1], rh = ref[l * 3 + 2];
        double      a = 0.0, px = 0.0, pz = 0.0;
        float       lp[3] = {0.0f, 0.0f, 0.0f};     // the previous frame's unnormalised dh/dt, vx, vz
        for (int64_t t = 0; t < frames; ++t) {
            const float * r = xl + t * k_ld;
            if (t > 0) {
                a += double(lp[0] / fps);
                px += double(lp[1] / fps);
                pz += double(lp[2] / fps);
            }
            float u[4];
            for (int i = 0; i < 4; ++i) {
                const float v = r[i] * scale[i];
                u[i]          = v + mean[i];
            }
            const float af = float(a);
            const float qw = cos_f(af / 2.0f);
            const float qy = sin_f(af / 2.0f);
            const float h  = atan2_f(qy, qw) * 2.0f;
            float       o0 = float(px), o2 = float(pz);
            float       o3 = cos_f(h), o4 = sin_f(h);
            const float ah = atan2_f(o4, o3) + rh;
            o3             = cos_f(ah);
            o4             = sin_f(ah);
            o0 += rx;
            o2 += rz;
            float * o = gl + t * k_gd;
            o[0]      = o0;
            o[1]      = u[3];
            o[2]      = o2;
            o[3]      = o3;
            o[4]      = o4;
            for (int i = 0; i < 3; ++i) lp[i] = u[i];
        }
        return;
    }
    // the body: global[t, 5 + i] = x[t, 4 + i]·scale + mean
    for (int64_t e = threadIdx.x - 1; e < frames * k_body; e += blockDim.x - 1) {
        const int64_t t = e / k_body;
        const int     i = int(e - t * k_body);
        const float   v = xl[t * k_ld + 4 + i] * scale[4 + i];
        gl[t * k_gd + 5 + i] = v + mean[4 + i];
    }
}

// one thread a frame (of every lane): skeleton_fk::run on global[n, 414]
__global__ void finish_fk_kernel(const float * global, int64_t n, const int32_t * parents, const float * offsets,
                                 float * positions, float * local_xyzw) {
    __shared__ int32_t s_par[k_nj];
    __shared__ float   s_off[k_nj * 3];
    // parents and offsets are constants (uploaded with the model): read before the wait
    for (int i = threadIdx.x; i < k_nj * 3; i += blockDim.x) {
        if (i < k_nj) s_par[i] = parents[i];
        s_off[i] = offsets[i];
    }
    __syncthreads();
    pdl_trigger();
    pdl_wait();
    const int64_t t = blockIdx.x * (int64_t) blockDim.x + threadIdx.x;
    if (t >= n) return;
    float         g[k_nj][9];     // global rotations from the 6D features
    float         rg[k_nj][9];    // global rotations recomposed by FK
    float         tg[k_nj][3];    // FK translations (root at the origin)
    const float * f = global + t * k_gd;
    for (int j = 0; j < k_nj; ++j) cont6d_to_matrix(f + k_finish_rot6d + 6 * j, g[j]);
    for (int j = 0; j < k_nj; ++j) {
        // local = parentᵀ · global (the root's parent is the identity)
        float     lr[9];
        const int p = s_par[j];
        if (p < 0) {
            for (int k = 0; k < 9; ++k) lr[k] = g[j][k];
        } else {
            for (int r = 0; r < 3; ++r) {
                for (int c = 0; c < 3; ++c) {
                    lr[r * 3 + c] = g[p][0 * 3 + r] * g[j][0 * 3 + c] + g[p][1 * 3 + r] * g[j][1 * 3 + c] +
                                    g[p][2 * 3 + r] * g[j][2 * 3 + c];
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
        // 4x4 chain: [Rp tp; 0 1] · [Rl off; 0 1]
        const float * off = s_off + 3 * j;
        if (p < 0) {
            for (int k = 0; k < 9; ++k) rg[j][k] = lr[k];
            for (int i = 0; i < 3; ++i) tg[j][i] = off[i];
        } else {
            for (int r = 0; r < 3; ++r) {
                for (int c = 0; c < 3; ++c) {
                    rg[j][r * 3 + c] = rg[p][r * 3 + 0] * lr[0 * 3 + c] + rg[p][r * 3 + 1] * lr[1 * 3 + c] +
                                       rg[p][r * 3 + 2] * lr[2 * 3 + c];
                }
                tg[j][r] = rg[p][r * 3 + 0] * off[0] + rg[p][r * 3 + 1] * off[1] + rg[p][r * 3 + 2] * off[2] + tg[p][r];
            }
        }
        for (int i = 0; i < 3; ++i) positions[(t * k_nj + j) * 3 + i] = tg[j][i] + f[i];
    }
}

} // namespace

void motion_finish(const float * x, int64_t n_batch, int64_t frames, const float * scale, const float * mean,
                   const float * ref, const int32_t * parents, const float * offsets, float * global,
                   float * positions, float * local_xyzw, cudaStream_t s) {
    if (n_batch <= 0 || frames <= 0) return;
    launch("motion_finish (global)", finish_global_kernel, dim3(unsigned(n_batch)), dim3(256), 0, s, x, frames,
           scale, mean, ref, global);
    const int64_t n = n_batch * frames;
    launch("motion_finish (fk)", finish_fk_kernel, dim3(unsigned((n + 63) / 64)), dim3(64), 0, s, global, n, parents,
           offsets, positions, local_xyzw);
}

} // namespace mb::cuda
