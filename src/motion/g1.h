// the one home of the Unitree G1's constants: the g1skel34 skeleton (joint count, names,
// parents, neutral pose, virtual joints) and the layout of one MuJoCo qpos frame
#pragma once

#include "format/bundle.h"   // k_n_joints = 34: the bundle and style readers, a layer below, check it too

namespace mb {

constexpr int k_g1_joints   = k_n_joints;   // g1skel34
constexpr int k_qpos_dim    = 36;           // root xyz (m, Z up), root quaternion w x y z, 29 hinges (rad)
constexpr int k_qpos_root   = 7;            // where the hinges start
constexpr int k_qpos_hinges = k_qpos_dim - k_qpos_root;   // 29, in MJCF document order
static_assert(k_qpos_hinges == 29);

// joints without a hinge (toes and hands): identity rotation, position from the skeleton offset
constexpr int k_g1_virtual_joints[4] = {7, 14, 25, 33};

constexpr bool g1_is_virtual(int joint) {
    for (int v : k_g1_virtual_joints) {
        if (v == joint) return true;
    }
    return false;
}

// g1skel34: names, parents and neutral ("capture" T-pose, motion space, m) joint positions
extern const char * const k_g1_joint_names[k_n_joints];
extern const int          k_g1_parents[k_n_joints];
extern const double       k_g1_neutral[k_n_joints][3];

} // namespace mb
