// the pose-level boundary adapter of stateless inference: four consecutive poses
// (root positions + local XYZW rotations) → the raw predict features of one half
// of a request (global root, local root, 303-d pose rows), as upstream's agent
// encodes its context and targets
#pragma once

#include "format/bundle.h"
#include "motion/predict.h"

#include <array>
#include <cstdint>
#include <span>

namespace mb {

constexpr int k_boundary_frames = 4;    // frames per boundary (half of the 8 constraint slots)

enum class boundary_kind : uint32_t {
    BOUNDARY_KIND_SOURCE = 0,   // slots 0..3: the context; its outgoing velocity (slot 3) is unknown
    BOUNDARY_KIND_TARGET = 1,   // slots 4..7: the end of the clip; last velocity repeats the previous
};

// the features of one boundary, in the request's raw (unnormalised) layout
struct boundary_features {
    std::array<float, k_boundary_frames * 5>          global_root{};      // [4, 5] x, y, z, cos h, sin h
    std::array<float, k_boundary_frames * 4>          local_root{};       // [4, 4] dh/dt, vx, vz, y (30 fps)
    std::array<float, k_boundary_frames * k_pose_dim> poses{};            // [4, 303] ric (99) + 6D (204)
    std::array<uint8_t, k_boundary_frames>            local_root_mask{};  // [4] source slot 3 off, else on
};

// forward kinematics of one frame over the skeleton in `sup`: local rotations as
// quaternions xyzw [34, 4] (need not be exactly unit) and the root position [3] →
// joint positions [34, 3] and row-major global rotation matrices [34, 3, 3]
void boundary_forward_kinematics(const model_support & sup, const float * root, const float * local_xyzw,
                                 double * positions, double * global_rot);

// encodes four poses: roots [4, 3], local_xyzw [4, 34, 4]. Validates everything first and
// throws mb::error (invalid_argument) naming the first problem (wrong count, non-finite or |v| > 1e4,
// quaternion norm outside 1 ± 0.01, encoded feature out of range)
boundary_features encode_boundary_poses(const model_support & sup, boundary_kind kind, std::span<const float> roots,
                                        std::span<const float> local_xyzw);

} // namespace mb
