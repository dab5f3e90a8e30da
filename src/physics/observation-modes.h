// the encoder observations of SONIC's other two encoders, slice by slice as gear_sonic_deploy builds
// them (g1_deploy_onnx_ref.cpp at 1983e88; the release observation_config.yaml's encoder_modes):
// mode 1, teleop (the lower body from the reference, hands and head from three VR points), and
// mode 2, SMPL (human joint positions, the root orientation and the wrists). Every slice a mode does
// not require stays 0 (GatherEncoderObservations zero-fills the buffer first, :2011)
#pragma once

#include "physics/observation.h"

namespace mb::physics {

// teleop slices (observation_config.yaml encoder_observations order)
constexpr int k_enc_anchor1   = 595;   // [6] motion_anchor_orientation: the current frame's anchor
constexpr int k_enc_lower_q   = 661;   // [10 × 12] motion_joint_positions_lowerbody_10frame_step5
constexpr int k_enc_lower_dq  = 781;   // [10 × 12] motion_joint_velocities_lowerbody_10frame_step5
constexpr int k_enc_vr_pos    = 901;   // [9] vr_3point_local_target
constexpr int k_enc_vr_orn    = 910;   // [12] vr_3point_local_orn_target
// SMPL slices
constexpr int k_smpl_joints   = 24;
constexpr int k_enc_smpl      = 922;   // [10 × 24 × 3] smpl_joints_10frame_step1
constexpr int k_enc_smpl_anchor = 1642;  // [10 × 6] smpl_anchor_orientation_10frame_step1
constexpr int k_enc_wrists    = 1702;  // [10 × 6] motion_joint_positions_wrists_10frame_step1

// the three VR points (left wrist, right wrist, head) relative to the reference root, in its frame,
// as the deploy's VR input interfaces send them (already normalised: GatherVR3PointPosition copies them)
struct vr3_points {
    double position[9];      // x y z per point (m)
    double orientation[12];  // w x y z per point
};

// the deploy's fallback when no VR input arrives (GatherVR3PointPosition / Orientation, :1102-1260):
// body_pos [3][3] and body_quat [3][4] (w x y z) of the left wrist, right wrist and torso bodies of the
// current reference frame, the offsets (0.18, ∓0.025, 0) and (0, 0, 0.35) rotated by each body, then
// relative to the root: rotate(conj(root), p − root_pos) and conj(root) · q
vr3_points vr3_from_bodies(const double (&body_pos)[3][3], const double (&body_quat)[3][4], const double (&root_pos)[3],
                           const quat & root_quat);

// mode 1 [1762] at the timeline's cursor for a robot at base_quat (timeline_update_heading ran this
// tick): mode 1; the current frame's heading-aligned anchor; lower-body angles and velocities of
// frames min(cur + 5k, last), k < 10, in lower_body_joint_mujoco_order_in_isaaclab_index order
// (policy_parameters.hpp:92: the MuJoCo order of the 12 leg joints, velocities 0 while paused); vr
void build_teleop_encoder_obs(const timeline & t, const quat & base_quat, const vr3_points & vr, float * out /* [1762] */);

// mode 2 [1762]: mode 2; smpl_joints [10][24][3], the SMPL joint positions of frames min(cur + k, last),
// k < 10 (the motion's SmplJoints, which the timeline does not carry); the heading-aligned anchors and
// the wrist angles (Isaac 23..28) of the same frames
void build_smpl_encoder_obs(const timeline & t, const quat & base_quat, const float * smpl_joints /* [10 × 24 × 3] */,
                            float * out /* [1762] */);

}  // namespace mb::physics
