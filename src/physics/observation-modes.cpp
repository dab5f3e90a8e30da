#include "physics/observation-modes.h"

#include <cstring>

namespace mb::physics {

namespace {

// GatherEncoderMode (:1687-1693): the mode, then zeros; everything else 0 (:2011)
void clear_with_mode(float * out, int mode) {
    std::memset(out, 0, sizeof(float) * k_encoder_obs);
    out[k_enc_mode] = static_cast<float>(mode);
}

// the VR points' offsets in each body's frame (:1136-1140)
constexpr double k_vr_offset[3][3] = {{0.18, -0.025, 0.0}, {0.18, +0.025, 0.0}, {0.0, 0.0, 0.35}};

}  // namespace

vr3_points vr3_from_bodies(const double (&body_pos)[3][3], const double (&body_quat)[3][4], const double (&root_pos)[3],
                           const quat & root_quat) {
    vr3_points  v{};
    const quat  inv = quat_conjugate(root_quat);
    for (int i = 0; i < 3; ++i) {
        const quat q = {body_quat[i][0], body_quat[i][1], body_quat[i][2], body_quat[i][3]};
        const vec3 o = quat_rotate(q, {k_vr_offset[i][0], k_vr_offset[i][1], k_vr_offset[i][2]});
        const vec3 rel = {body_pos[i][0] + o[0] - root_pos[0], body_pos[i][1] + o[1] - root_pos[1], body_pos[i][2] + o[2] - root_pos[2]};
        const vec3 p = quat_rotate(inv, rel);
        const quat r = quat_mul(inv, q);
        for (int k = 0; k < 3; ++k) v.position[3 * i + k] = p[k];
        for (int k = 0; k < 4; ++k) v.orientation[4 * i + k] = r[k];
    }
    return v;
}

void build_teleop_encoder_obs(const timeline & t, const quat & base_quat, const vr3_points & vr, float * out) {
    clear_with_mode(out, 1);
    const quat offset = timeline_heading_offset(t);
    // motion_anchor_orientation: GatherMotionAnchorOrientationMutiFrame(1, 1), the current frame
    anchor_orientation_6d(timeline_frame(t, timeline_future(t, 0, 1)), offset, base_quat, out + k_enc_anchor1);
    for (int k = 0; k < k_future; ++k) {
        const ref_frame & r = timeline_frame(t, timeline_future(t, k, k_future_step));
        // GatherMotionJoint{Positions,Velocities}MultiFrame with lower_body_joint_mujoco_order_in_isaaclab_index
        // (:736-903): entry m reads Isaac joint isaaclab_to_mujoco[m] of the 12 leg joints
        for (int m = 0; m < 12; ++m) {
            const int i = k_isaac_of_mujoco[m];
            out[k_enc_lower_q + 12 * k + m]  = static_cast<float>(r.q[i]);
            out[k_enc_lower_dq + 12 * k + m] = t.play ? static_cast<float>(r.dq[i]) : 0.0f;
        }
    }
    for (int i = 0; i < 9; ++i) out[k_enc_vr_pos + i] = static_cast<float>(vr.position[i]);
    for (int i = 0; i < 12; ++i) out[k_enc_vr_orn + i] = static_cast<float>(vr.orientation[i]);
}

void build_smpl_encoder_obs(const timeline & t, const quat & base_quat, const float * smpl_joints, float * out) {
    clear_with_mode(out, 2);
    const quat offset = timeline_heading_offset(t);
    for (int k = 0; k < k_future; ++k) {
        const ref_frame & r = timeline_frame(t, timeline_future(t, k, 1));
        // GatherMotionSmplJointsMultiFrame(10, 1) (:906-964): x y z per joint
        for (int j = 0; j < 3 * k_smpl_joints; ++j) out[k_enc_smpl + 3 * k_smpl_joints * k + j] = smpl_joints[3 * k_smpl_joints * k + j];
        // smpl_anchor_orientation_10frame_step1: the anchor gatherer at step 1
        anchor_orientation_6d(r, offset, base_quat, out + k_enc_smpl_anchor + 6 * k);
        // motion_joint_positions_wrists_10frame_step1: wrist_joint_isaaclab_order_in_isaaclab_index
        for (int w = 0; w < 6; ++w) out[k_enc_wrists + 6 * k + w] = static_cast<float>(r.q[k_wrist_isaac[w]]);
    }
}

}  // namespace mb::physics
