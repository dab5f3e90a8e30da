// the host's versions of the backend's motion ops (backend/motion-finish.h): predict's glue after
// the root planner and its step 5, the motion layer's own arithmetic on plain arrays, lane by lane.
// The CPU backend runs them; the CUDA kernels (backend/cuda/cuda-finish.cu) are held to them
#include "backend/motion-finish.h"
#include "motion/motion-rep.h"
#include "motion/skeleton-fk.h"

#include <algorithm>

namespace mb {

void host_root_conditions(const float * y, int64_t n_batch, int64_t frames, const float * stats, const float * last,
                          const uint8_t * has_last, float * root_cond, float * ext) {
    // motion_stats::unnormalize of x and z, global_root_to_local's velocities, then
    // motion_stats::normalize, written out for the two columns the decoder reads
    const float fps = float(k_motion_fps);
    for (int64_t l = 0; l < n_batch; ++l) {
        const float * r = y + l * frames * 5;
        float *       c = root_cond + l * frames * 4;
        float *       e = ext + l * frames * 2;
        for (int64_t t = 0; t < frames; ++t) {
            c[t * 4 + 0] = r[t * 5 + 0];
            c[t * 4 + 1] = r[t * 5 + 2];
            c[t * 4 + 2] = r[t * 5 + 3];
            c[t * 4 + 3] = r[t * 5 + 4];
        }
        for (int64_t t = 0; t + 1 < frames; ++t) {
            for (int i = 0; i < 2; ++i) {
                const int   k  = 2 * i;     // x, then z
                const float v0 = r[t * 5 + k] * stats[i], v1 = r[(t + 1) * 5 + k] * stats[i];
                const float g0 = v0 + stats[2 + i], g1 = v1 + stats[2 + i];
                const float v  = fps * (g1 - g0);
                e[t * 2 + i]   = (v - stats[6 + i]) / stats[4 + i];
            }
        }
        // the last frame repeats the velocity into it, or takes the given one
        const int64_t t = frames - 1;
        e[t * 2 + 0]    = has_last[l] ? last[l * 2 + 0] : e[(t - 1) * 2 + 0];
        e[t * 2 + 1]    = has_last[l] ? last[l * 2 + 1] : e[(t - 1) * 2 + 1];
    }
}

void host_motion_finish(const float * x, int64_t n_batch, int64_t frames, const float * scale, const float * mean,
                        const float * ref, const int32_t * parents, const float * offsets, float * global,
                        float * positions, float * local_xyzw, float * scratch) {
    skeleton_fk fk;
    std::copy(parents, parents + k_n_joints, fk.parents.begin());
    std::copy(offsets, offsets + k_n_joints * 3, fk.offsets.begin());
    float * local = scratch;
    for (int64_t l = 0; l < n_batch; ++l) {
        // motion_stats::unnormalize on the LOCAL subset
        const float * xl = x + l * frames * k_local_dim;
        for (int64_t i = 0; i < frames * k_local_dim; ++i) {
            const int64_t k = i % k_local_dim;
            const float   v = xl[i] * scale[k];
            local[i] = v + mean[k];
        }
        float * g = global + l * frames * k_global_dim;
        local_to_global(local, frames, g);
        reapply_start_transform(g, frames, ref[l * 3 + 0], ref[l * 3 + 1], ref[l * 3 + 2]);
        fk.run(g, frames, positions + l * frames * k_n_joints * 3, local_xyzw + l * frames * k_n_joints * 4, nullptr);
    }
}

} // namespace mb
