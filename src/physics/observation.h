// SONIC's two observations for one robot, slice by slice as gear_sonic_deploy builds them
// (g1_deploy_onnx_ref.cpp, the release observation_config.yaml): the 1762-value encoder observation
// of mode 0 (G1 reference motion) from the timeline, and the 994-value decoder observation from the
// tokens and a 10-tick proprioceptive history, oldest first, zero-padded at start-up
#pragma once

#include "physics/timeline.h"

namespace mb::physics {

constexpr int k_encoder_obs  = 1762;
constexpr int k_decoder_obs  = 994;
constexpr int k_tokens       = 64;
constexpr int k_history      = 10;   // ticks of the decoder's histories
constexpr int k_future       = 10;   // reference frames of the encoder's look-ahead
constexpr int k_future_step  = 5;    // frames between them (0.1 s at 50 Hz)

// encoder slices of the release config (observation_config.yaml encoder_observations order); mode 0
// fills mode, joint positions, joint velocities and anchor orientations, every other slice stays 0
// (GatherEncoderObservations zero-fills terms the mode does not require)
constexpr int k_enc_mode = 0;          // [4]  mode, 0, 0, 0
constexpr int k_enc_q    = 4;          // [10 × 29] reference joint angles, Isaac order
constexpr int k_enc_dq   = 294;        // [10 × 29] reference joint velocities
constexpr int k_enc_root_z = 584;      // [10] + [1] root heights (not used by mode 0)
constexpr int k_enc_anchor = 601;      // [10 × 6] pelvis → heading-aligned reference root, R[:, :2] row-wise
// decoder slices (observation_config.yaml observations order)
constexpr int k_dec_tokens  = 0;       // [64]
constexpr int k_dec_ang_vel = 64;      // [10 × 3] pelvis angular velocity, body frame
constexpr int k_dec_q       = 94;      // [10 × 29] joint angles − default, Isaac order
constexpr int k_dec_dq      = 384;     // [10 × 29] joint velocities, Isaac order
constexpr int k_dec_action  = 674;     // [10 × 29] previous raw actions, Isaac order
constexpr int k_dec_gravity = 964;     // [10 × 3] rotate(conj(pelvis quat), (0, 0, −1))

// what the simulator (or robot) reports for one robot at the start of a tick
struct robot_state {
    double base_quat[4];               // pelvis IMU orientation (w, x, y, z): qpos[3..7)
    double base_ang_vel[3];            // pelvis IMU gyroscope, body frame (rad/s): qvel[3..6)
    double q[k_body_joints];           // body joint angles, MuJoCo order (rad)
    double dq[k_body_joints];          // body joint velocities, MuJoCo order (rad/s)
};

// the robot state of the 43-DoF scene's qpos [50] and qvel [49] (free joint first; the body joints
// through k_scene_of_body, the hands skipped), as gear_sonic's unitree_sdk2py_bridge.py:175-192 fills
// LowState: IMU quaternion qpos[3..7), gyroscope qvel[3..6), every field rounded to float32 as the
// DDS message carries it to the deploy
void robot_state_from_scene(const double * qpos, const double * qvel, robot_state & out);

// one tick of StateLogger history (state_logger.cpp:85-137 as GatherRobotStateToLogger fills it)
struct history_entry {
    double base_quat[4];               // pelvis orientation (w, x, y, z); 0 in a padding entry
    double base_ang_vel[3];            // rad/s, body frame
    double q[k_body_joints];           // joint angles − default, Isaac order
    double dq[k_body_joints];          // joint velocities, Isaac order
    double last_action[k_body_joints]; // the action of the tick before, Isaac order
};

// the last 10 ticks and the most recent action; plain data, one per robot
struct history {
    history_entry e[k_history];        // ring, e[(head + i) % 10] the i-th oldest of `count`
    int    head  = 0;
    int    count = 0;                  // entries logged since reset (≤ 10)
    double last_action[k_body_joints] = {};   // the action the next logged entry records (0 at reset)
};

// empties the history and the previous action (deploy: last_action {0.0} at start)
void history_reset(history & h);

// logs this tick's robot state with the previous tick's action (GatherRobotStateToLogger runs before
// the policy, so the entry of tick t carries the action of tick t − 1)
void history_push(history & h, const robot_state & s);

// records the policy's raw action for the next history_push (CreatePolicyCommand: last_action = action)
void history_set_action(history & h, const float * action /* [29], Isaac order */);

// the decoder observation [994]: tokens, then per term the 10 newest entries oldest first, missing
// ones zero entries (StateLogger::GetLatest pads with makeZeroEntry_, whose zero quaternion gives the
// gravity (0, −0, 1)); computed in double and rounded to float once, as the deploy does
void build_decoder_obs(const history & h, const float * tokens /* [64] */, float * out /* [994] */);

// the anchor orientation of reference frame r for a robot at base_quat, heading offset `offset`:
// R(conj(base) · offset · r.root)[:, :2] row-wise, 6 floats (GatherMotionAnchorOrientationMutiFrame
// mode 0, g1_deploy_onnx_ref.cpp:612-690)
void anchor_orientation_6d(const ref_frame & r, const quat & offset, const quat & base_quat, float * out /* [6] */);

// the encoder observation [1762] of mode 0 at the timeline's cursor for a robot whose pelvis is at
// base_quat; the caller ran timeline_update_heading this tick. Needs a reference (t.length > 0)
void build_encoder_obs(const timeline & t, const quat & base_quat, float * out /* [1762] */);

}  // namespace mb::physics
