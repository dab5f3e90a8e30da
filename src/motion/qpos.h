// MuJoCo qpos ↔ motion space for the G1 (upstream helper/mujoco_helper.py):
//   qpos [36]   = root xyz (MuJoCo world, Z up, X forward), root quat w x y z,
//                 29 hinge angles in MJCF document order
//   motion      = Y up, Z forward; 34 skeleton joints (g1skel34) as global
//                 positions [34, 3] and row-major global rotations [34, 9]
// with the "dummy" virtual-joint rule (joints 7, 14, 25, 33: identity rotation,
// position from the parent's transform and the skeleton offset) and the
// pytorch3d quaternion branch rule (argmax of q_abs, divisor max(q_abs, 0.1))
#pragma once

#include "motion/g1.h"
#include "motion/mjcf.h"
#include "motion/motion-rep.h"

#include <array>
#include <cstdint>
#include <vector>

namespace mb {

constexpr int k_mj_bodies    = k_qpos_hinges + 1;     // floating base + 29 hinge bodies

// M = mujoco_to_motion: motion (x, y, z) = (mj y, mj z, mj x)
void mujoco_to_motion_vec(const double * mj, double * motion);
void motion_to_mujoco_vec(const double * motion, double * mj);
// the same for a rotation: M R Mᵀ (row-major; mj and motion must not alias)
void rot_mujoco_to_motion(const double * mj, double * motion);


class qpos_converter {
public:
    // precomputes the transforms from a MuJoCo hinge tree whose joint names map onto g1skel34
    // ("<name>_joint" → "<name>_skel"); throws mb::error (invalid_argument) when they do not
    explicit qpos_converter(const mjcf_model & model = mjcf_g1());

    // one frame: qpos [36] (quaternion w first) → global joint positions [34, 3] (world, motion
    // space) and row-major global rotations [34, 9]
    void qpos_to_transforms(const float * qpos, float * positions, float * rotations) const;

    // the same for `frames` consecutive frames ([F, 36] → [F, 34, 3], [F, 34, 9])
    void qpos_to_transforms(const float * qpos, int64_t frames, float * positions, float * rotations) const;

    // one frame of un-normalised 414-d global features → qpos [36] (quaternion w first):
    // root xyz from features [0:3], rotations from the 6D block, hinges by atan2 about their axis;
    // hinge_radius [29], when given, receives hypot of each atan2's arguments (small = ill-conditioned)
    void features_to_qpos(const float * features, float * qpos, float * hinge_radius = nullptr) const;

    // the core of features_to_qpos: root position (motion space) and global rotations [34, 9]
    void global_rotations_to_qpos(const float * root_position, const double * rotations, float * qpos,
                                  float * hinge_radius = nullptr) const;

    // the converter's intermediate state, for tests
    const std::array<int, k_qpos_hinges> &   hinge_joint() const { return hinge_joint_; }
    const std::array<int, k_n_joints> &   joint_body() const { return joint_body_; }
    const std::array<int, k_mj_bodies> &     body_parent() const { return body_parent_; }
    const std::array<double, k_mj_bodies * 3> & body_neutral() const { return body_neutral_; }
    const std::array<double, k_n_joints * 9> & offset_q2t() const { return q2t_; }
    const std::array<double, k_n_joints * 9> & offset_f2q() const { return f2q_; }
    const std::array<int, k_qpos_hinges> &   hinge_axis_mujoco() const { return axis_mj_; }
    const std::array<int, k_qpos_hinges> &   hinge_axis_motion() const { return axis_motion_; }

private:
    std::array<int, k_qpos_hinges>         hinge_joint_{};    // skeleton joint of hinge k
    std::array<int, k_n_joints>         joint_body_{};     // MuJoCo body of skeleton joint j, -1 for virtual
    std::array<int, k_mj_bodies>           body_parent_{};    // parent body, -1 for the base
    std::array<double, k_mj_bodies * 3>    body_neutral_{};   // accumulated body pos, quats ignored (base = 0)
    std::array<double, k_n_joints * 9>  q2t_{};            // body quat as a matrix (MuJoCo frame), else identity
    std::array<double, k_n_joints * 9>  f2q_{};            // (M q2t Mᵀ)ᵀ
    std::array<int, k_qpos_hinges>         axis_mj_{};        // 0/1/2 = MuJoCo x/y/z
    std::array<int, k_qpos_hinges>         axis_motion_{};    // the same axis in motion space
};

} // namespace mb
