// the motion representation the backend's motion ops (root_conditions, motion_finish) compute
// on: motion/motion-rep.h's k_local_dim, k_global_dim, k_global_rot6d, k_motion_fps and
// format/bundle.h's k_n_joints, written again here because the backend sits below the motion layer
// (predict.cpp asserts that they agree); and the host's versions of the two ops. Plain C++17, so
// that the CUDA kernels include it too
#pragma once

#include <cstdint>

namespace mb {

constexpr int k_finish_local_dim  = 413;    // local features: rot vel, vx, vz, y, body (409)
constexpr int k_finish_global_dim = 414;    // global features: x, y, z, cos h, sin h, body (409)
constexpr int k_finish_rot6d      = 104;    // first 6D global rotation in the global features
constexpr int k_finish_joints     = 34;     // skeleton joints
constexpr int k_finish_fps        = 30;     // frames per second of the root integration

// backend::root_conditions and backend::motion_finish over host arrays, the same meanings: the
// CPU backend's motion ops. Declared here and defined in the motion layer (motion/motion-ops.cpp),
// since they are the motion layer's own functions (motion_stats, global_root_to_local,
// local_to_global, reapply_start_transform, skeleton_fk) run on plain arrays. host_motion_finish's
// scratch: frames × k_finish_local_dim floats (one lane's unnormalised features)
void host_root_conditions(const float * y, int64_t n_batch, int64_t frames, const float * stats, const float * last,
                          const uint8_t * has_last, float * root_cond, float * ext);
void host_motion_finish(const float * x, int64_t n_batch, int64_t frames, const float * scale, const float * mean,
                        const float * ref, const int32_t * parents, const float * offsets, float * global,
                        float * positions, float * local_xyzw, float * scratch);

} // namespace mb
