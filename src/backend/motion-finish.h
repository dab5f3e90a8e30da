// the motion representation backend::motion_finish computes on: motion/motion-rep.h's
// k_local_dim, k_global_dim, k_global_rot6d, k_motion_fps and format/bundle.h's k_n_joints,
// written again here because the backend sits below the motion layer (predict.cpp asserts
// that they agree). Plain C++17, so that the CUDA kernels include it too
#pragma once

namespace mb {

constexpr int k_finish_local_dim  = 413;    // local features: rot vel, vx, vz, y, body (409)
constexpr int k_finish_global_dim = 414;    // global features: x, y, z, cos h, sin h, body (409)
constexpr int k_finish_rot6d      = 104;    // first 6D global rotation in the global features
constexpr int k_finish_joints     = 34;     // skeleton joints
constexpr int k_finish_fps        = 30;     // frames per second of the root integration

} // namespace mb
