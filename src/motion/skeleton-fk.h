// forward kinematics of upstream motion_rep.inverse (joint_positions_from =
// "global_rot_data"): 6D global rotations → local rotations (parent⁻¹ · global) →
// FK over the neutral joints, plus the global root position. float32 throughout.
#pragma once

#include "format/bundle.h"

#include <array>
#include <cstdint>

namespace mb {

struct skeleton_fk {
    std::array<int32_t, k_n_joints>   parents{};    // −1 for the root, else < index
    std::array<float, k_n_joints * 3> offsets{};    // [34, 3] neutral[j] − neutral[parent] (float32), root: neutral[0]

    // validates the tree (root first, parents before children); throws mb::error (incompatible_model)
    static skeleton_fk from_support(const model_support & sup);

    // per frame of global features [n, 414]: joint positions [n, 34, 3] (world, m), local
    // rotations as quaternions (x, y, z, w) [n, 34, 4] and global rotation matrices
    // [n, 34, 3, 3] row-major; any output may be null
    void run(const float * global, int64_t n, float * positions, float * local_xyzw, float * global_rots) const;
};

} // namespace mb
