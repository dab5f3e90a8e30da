#include "physics/observation.h"

#include <cstring>

namespace mb::physics {

void robot_state_from_scene(const double * qpos, const double * qvel, robot_state & out) {
    // the bridge's LowState fields are float32, so the deploy reads float-rounded values
    auto f32 = [](double v) { return static_cast<double>(static_cast<float>(v)); };
    for (int i = 0; i < 4; ++i) out.base_quat[i] = f32(qpos[3 + i]);
    for (int i = 0; i < 3; ++i) out.base_ang_vel[i] = f32(qvel[3 + i]);
    for (int m = 0; m < k_body_joints; ++m) {
        out.q[m]  = f32(qpos[7 + k_scene_of_body[m]]);
        out.dq[m] = f32(qvel[6 + k_scene_of_body[m]]);
    }
}

void history_reset(history & h) {
    std::memset(h.e, 0, sizeof h.e);
    h.head = h.count = 0;
    std::memset(h.last_action, 0, sizeof h.last_action);
}

void history_push(history & h, const robot_state & s) {
    // the slot after the newest; once full it is the oldest, which this overwrites
    const int slot = (h.head + h.count) % k_history;
    history_entry & e = h.e[slot];
    for (int i = 0; i < 4; ++i) e.base_quat[i] = s.base_quat[i];
    for (int i = 0; i < 3; ++i) e.base_ang_vel[i] = s.base_ang_vel[i];
    // g1_deploy_onnx_ref.cpp:2829-2831: Isaac joint i reads MuJoCo joint mujoco_to_isaaclab[i]
    for (int i = 0; i < k_body_joints; ++i) {
        const int m = k_mujoco_of_isaac[i];
        e.q[i]  = s.q[m] - k_default_angles[m];
        e.dq[i] = s.dq[m];
        e.last_action[i] = h.last_action[i];
    }
    if (h.count < k_history) ++h.count;
    else h.head = (h.head + 1) % k_history;
}

void history_set_action(history & h, const float * action) {
    for (int i = 0; i < k_body_joints; ++i) h.last_action[i] = static_cast<double>(action[i]);
}

void build_decoder_obs(const history & h, const float * tokens, float * out) {
    for (int i = 0; i < k_tokens; ++i) out[k_dec_tokens + i] = tokens[i];
    const int pad = k_history - h.count;
    static const history_entry zero{};
    for (int k = 0; k < k_history; ++k) {
        // oldest first: the padding, then the logged entries from the oldest
        const history_entry & e = k < pad ? zero : h.e[(h.head + k - pad) % k_history];
        for (int i = 0; i < 3; ++i) out[k_dec_ang_vel + 3 * k + i] = static_cast<float>(e.base_ang_vel[i]);
        for (int i = 0; i < k_body_joints; ++i) {
            out[k_dec_q + k_body_joints * k + i]      = static_cast<float>(e.q[i]);
            out[k_dec_dq + k_body_joints * k + i]     = static_cast<float>(e.dq[i]);
            out[k_dec_action + k_body_joints * k + i] = static_cast<float>(e.last_action[i]);
        }
        // GatherHisGravityDir (g1_deploy_onnx_ref.cpp:1609-1630)
        const vec3 g = quat_rotate(quat_conjugate({e.base_quat[0], e.base_quat[1], e.base_quat[2], e.base_quat[3]}),
                                   {0.0, 0.0, -1.0});
        for (int i = 0; i < 3; ++i) out[k_dec_gravity + 3 * k + i] = static_cast<float>(g[i]);
    }
}

void build_encoder_obs(const timeline & t, const quat & base_quat, float * out) {
    std::memset(out, 0, sizeof(float) * k_encoder_obs);
    // GatherEncoderMode: the mode, then zeros (g1_deploy_onnx_ref.cpp:1687-1693)
    out[k_enc_mode] = 0.0f;
    const quat offset = timeline_heading_offset(t);
    for (int k = 0; k < k_future; ++k) {
        const ref_frame & r = timeline_frame(t, timeline_future(t, k, k_future_step));
        // GatherMotionJointPositionsMultiFrame / VelocitiesMultiFrame (:736-903): velocities 0 when paused
        for (int j = 0; j < k_body_joints; ++j) {
            out[k_enc_q + k_body_joints * k + j]  = static_cast<float>(r.q[j]);
            out[k_enc_dq + k_body_joints * k + j] = t.play ? static_cast<float>(r.dq[j]) : 0.0f;
        }
        anchor_orientation_6d(r, offset, base_quat, out + k_enc_anchor + 6 * k);
    }
}

void anchor_orientation_6d(const ref_frame & r, const quat & offset, const quat & base_quat, float * out) {
    // GatherMotionAnchorOrientationMutiFrame mode 0 (:612-690): conj(base) · offset · ref root
    const quat ref = quat_mul(offset, {r.root_quat[0], r.root_quat[1], r.root_quat[2], r.root_quat[3]});
    const std::array<double, 9> R = quat_to_matrix(quat_mul(quat_conjugate(base_quat), ref));
    const double six[6] = {R[0], R[1], R[3], R[4], R[6], R[7]};
    for (int i = 0; i < 6; ++i) out[i] = static_cast<float>(six[i]);
}

}  // namespace mb::physics
