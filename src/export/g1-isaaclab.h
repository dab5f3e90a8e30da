// the G1 joint and body orders of upstream's robot stack (gear_sonic_deploy): the IsaacLab joint
// order its policy and reference motions use, its index maps to MuJoCo (MJCF document) order, and
// the 14 tracked bodies of its reference-motion folders
#pragma once

#include "motion/g1.h"

namespace mb {

// policy_parameters.hpp:100-104 (commit 1983e88): joint_isaaclab[j] = qpos_hinge[k_mujoco_of_isaaclab[j]]
// and qpos_hinge[k] = joint_isaaclab[k_isaaclab_of_mujoco[k]] (upstream calls them mujoco_to_isaaclab
// and isaaclab_to_mujoco)
inline constexpr int k_mujoco_of_isaaclab[k_qpos_hinges] = {0,  6,  12, 1,  7,  13, 2,  8,  14, 3,
                                                            9,  15, 22, 4,  10, 16, 23, 5,  11, 17,
                                                            24, 18, 25, 19, 26, 20, 27, 21, 28};
inline constexpr int k_isaaclab_of_mujoco[k_qpos_hinges] = {0,  3,  6,  9,  13, 17, 1,  4,  7,  10,
                                                            14, 18, 2,  5,  8,  11, 15, 19, 21, 23,
                                                            25, 27, 12, 16, 20, 22, 24, 26, 28};

// the reference folders' "Body part indexes" (reference/example/*/metadata.txt): IsaacLab body
// indices (0 = pelvis, i = the child body of IsaacLab joint i - 1)
inline constexpr int k_sonic_bodies                        = 14;
inline constexpr int k_sonic_body_indexes[k_sonic_bodies] = {0, 4, 10, 18, 5, 11, 19, 9, 16, 22, 28, 17, 23, 29};

// MuJoCo body (0 = floating base, k + 1 = the body of hinge k) of IsaacLab body i, as
// motion_data_reader.hpp:151-158 maps it
constexpr int mujoco_body_of_isaaclab_body(int i) {
    return i == 0 ? 0 : k_mujoco_of_isaaclab[i - 1] + 1;
}

} // namespace mb
