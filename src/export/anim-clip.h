// one G1 animation clip as the interchange formats (BVH, GLB) carry it: the pelvis's world
// position and the 34 local rotations per frame, motion space (Y up, metres), 30 fps. The
// limits are the reference runtime's for Kimodo clips (≤ 18,000 frames = 10 min, ≤ 16 MiB)
#pragma once

#include "format/bundle.h"   // k_n_joints

#include <cstdint>
#include <string>
#include <vector>

namespace mb {

constexpr int64_t  k_clip_max_frames   = 18000;              // 10 min at 30 fps
constexpr double   k_clip_fps          = 30.0;
constexpr uint64_t k_glb_max_bytes     = uint64_t(16) << 20; // a GLB file (upload and --clips)
constexpr uint64_t k_bvh_max_bytes     = uint64_t(64) << 20; // a BVH file (text: ~110 numbers a frame)
constexpr double   k_clip_max_coord    = 1.0e4;              // |root component| (m)
constexpr double   k_quat_norm_min     = 0.9;                // a stored quaternion's norm, else rejected
constexpr double   k_quat_norm_max     = 1.1;

struct anim_clip {
    int64_t            frames = 0;    // F, 1..k_clip_max_frames
    std::vector<float> root;          // [F, 3] pelvis world position (m, motion space)
    std::vector<float> local_xyzw;    // [F, 34, 4] local rotations x y z w (joint 0: global)
};

// shapes, frame count, finite values, |root| ≤ 1e4 m, quaternion norms within 0.9..1.1; the
// quaternions are normalised. Throws mb::error(invalid_format) naming `what`, the frame and joint
void clip_check_normalise(anim_clip & clip, const std::string & what);

// the rest offset of joint j from its parent (neutral[j] − neutral[parent]; the root: 0), m
void joint_offset(int j, double * out);

// FK over the neutral offsets: world joint positions [F, 34, 3] and row-major global
// rotations [F, 34, 9] (either may be null)
void clip_forward_kinematics(const anim_clip & clip, float * positions, double * rotations);

// quaternion x y z w → row-major 3×3 (normalising)
void quat_xyzw_to_matrix(const float * q, double * m);

} // namespace mb
