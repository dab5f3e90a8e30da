// PD gains, default pose and torque limits of the release, MuJoCo joint order (= the scene's
// actuator order with the hands left out). Until the controller tables of src/physics land, the
// simulator keeps its own copy here; each table names its upstream source
#pragma once

#include <array>
#include <cstddef>

namespace mb::physics {

constexpr int k_body_joints = 29;   // hinges driven by the policy (legs, waist, arms)
constexpr int k_hand_joints = 14;   // 7 per hand, PD-held at 0
constexpr int k_actuators   = k_body_joints + k_hand_joints;

// the scene's hinge names in MuJoCo order (g1_29dof_with_hand.xml document order without the hands)
inline constexpr const char * k_body_joint_names[k_body_joints] = {
    "left_hip_pitch_joint",      "left_hip_roll_joint",      "left_hip_yaw_joint",      "left_knee_joint",
    "left_ankle_pitch_joint",    "left_ankle_roll_joint",    "right_hip_pitch_joint",   "right_hip_roll_joint",
    "right_hip_yaw_joint",       "right_knee_joint",         "right_ankle_pitch_joint", "right_ankle_roll_joint",
    "waist_yaw_joint",           "waist_roll_joint",         "waist_pitch_joint",       "left_shoulder_pitch_joint",
    "left_shoulder_roll_joint",  "left_shoulder_yaw_joint",  "left_elbow_joint",        "left_wrist_roll_joint",
    "left_wrist_pitch_joint",    "left_wrist_yaw_joint",     "right_shoulder_pitch_joint", "right_shoulder_roll_joint",
    "right_shoulder_yaw_joint",  "right_elbow_joint",        "right_wrist_roll_joint",  "right_wrist_pitch_joint",
    "right_wrist_yaw_joint",
};

// gear_sonic_deploy/src/g1/g1_deploy_onnx_ref/include/policy_parameters.hpp lines 39-59:
// stiffness = armature · ω², damping = 2 · ζ · armature · ω with ω = 10 Hz · 2π, ζ = 2
namespace detail {
constexpr double k_omega = 10 * 2.0 * 3.1415926535;
constexpr double k_arm_5020 = 0.003609725, k_arm_7520_14 = 0.010177520, k_arm_7520_22 = 0.025101925, k_arm_4010 = 0.00425;
constexpr double kp(double a) { return a * k_omega * k_omega; }
constexpr double kd(double a) { return 2.0 * 2.0 * a * k_omega; }
} // namespace detail

// policy_parameters.hpp lines 144-175 (kps) and 179-210 (kds); the header stores them as float
inline constexpr std::array<float, k_body_joints> k_kp = [] {
    using namespace detail;
    const double leg[6] = {kp(k_arm_7520_22), kp(k_arm_7520_22), kp(k_arm_7520_14), kp(k_arm_7520_22),
                           2.0 * kp(k_arm_5020), 2.0 * kp(k_arm_5020)};
    const double arm[7] = {kp(k_arm_5020), kp(k_arm_5020), kp(k_arm_5020), kp(k_arm_5020),
                           kp(k_arm_5020), kp(k_arm_4010), kp(k_arm_4010)};
    std::array<float, k_body_joints> v{};
    for (int i = 0; i < 6; ++i) v[i] = v[6 + i] = float(leg[i]);
    v[12] = float(kp(k_arm_7520_14));
    v[13] = v[14] = float(2.0 * kp(k_arm_5020));
    for (int i = 0; i < 7; ++i) v[15 + i] = v[22 + i] = float(arm[i]);
    return v;
}();
inline constexpr std::array<float, k_body_joints> k_kd = [] {
    using namespace detail;
    const double leg[6] = {kd(k_arm_7520_22), kd(k_arm_7520_22), kd(k_arm_7520_14), kd(k_arm_7520_22),
                           2.0 * kd(k_arm_5020), 2.0 * kd(k_arm_5020)};
    const double arm[7] = {kd(k_arm_5020), kd(k_arm_5020), kd(k_arm_5020), kd(k_arm_5020),
                           kd(k_arm_5020), kd(k_arm_4010), kd(k_arm_4010)};
    std::array<float, k_body_joints> v{};
    for (int i = 0; i < 6; ++i) v[i] = v[6 + i] = float(leg[i]);
    v[12] = float(kd(k_arm_7520_14));
    v[13] = v[14] = float(2.0 * kd(k_arm_5020));
    for (int i = 0; i < 7; ++i) v[15 + i] = v[22 + i] = float(arm[i]);
    return v;
}();

// policy_parameters.hpp lines 109-140: action_scale = 0.25 · effort limit / stiffness of the motor type
// (5020: 25 N·m, 7520_14: 88, 7520_22: 139, 4010: 5; lines 62-65)
inline constexpr std::array<double, k_body_joints> k_action_scale = [] {
    using namespace detail;
    const double m5020 = 0.25 * 25.0 / kp(k_arm_5020), m7520_14 = 0.25 * 88.0 / kp(k_arm_7520_14);
    const double m7520_22 = 0.25 * 139.0 / kp(k_arm_7520_22), m4010 = 0.25 * 5.0 / kp(k_arm_4010);
    const double leg[6] = {m7520_22, m7520_22, m7520_14, m7520_22, m5020, m5020};
    const double arm[7] = {m5020, m5020, m5020, m5020, m5020, m4010, m4010};
    std::array<double, k_body_joints> v{};
    for (int i = 0; i < 6; ++i) v[std::size_t(i)] = v[std::size_t(6 + i)] = leg[i];
    v[12] = m7520_14;
    v[13] = v[14] = m5020;
    for (int i = 0; i < 7; ++i) v[std::size_t(15 + i)] = v[std::size_t(22 + i)] = arm[i];
    return v;
}();

// policy_parameters.hpp lines 214-244 (default_angles, standing pose)
inline constexpr std::array<double, k_body_joints> k_default_angles = {
    -0.312, 0.0, 0.0, 0.669, -0.363, 0.0,  -0.312, 0.0, 0.0, 0.669, -0.363, 0.0,  0.0, 0.0, 0.0,
    0.2, 0.2, 0.0, 0.6, 0.0, 0.0, 0.0,     0.2, -0.2, 0.0, 0.6, 0.0, 0.0, 0.0,
};

// torque limits (N·m) per actuator in the scene's actuator order (left leg, right leg, waist, left arm,
// left hand, right arm, right hand): gear_sonic/utils/mujoco_sim/wbc_configs/g1_29dof_sonic_model12.yaml
// lines 241-249 (motor_effort_limit_list; base_sim.py line 423 clips the PD torques to it)
inline constexpr std::array<double, k_actuators> k_torque_limit = {
    88.0, 88.0, 88.0, 139.0, 50.0, 50.0,  88.0, 88.0, 88.0, 139.0, 50.0, 50.0,  88.0, 50.0, 50.0,
    25.0, 25.0, 25.0, 25.0, 25.0, 5.0, 5.0,  2.45, 0.7, 0.7, 0.7, 0.7, 0.7, 0.7,
    25.0, 25.0, 25.0, 25.0, 25.0, 5.0, 5.0,  2.45, 0.7, 0.7, 0.7, 0.7, 0.7, 0.7,
};

// hand hold gains: upstream has none (the reference leaves the hands limp); ours, soft enough for
// the 0.7 N·m fingers and stable at 200 Hz with the scene's 0.01 armature
constexpr double k_hand_kp = 2.0;
constexpr double k_hand_kd = 0.05;

// actuator of body joint i: the hands sit after each arm's 7 joints
constexpr int body_actuator(int i) {
    return i < 22 ? i : i + 7;
}

} // namespace mb::physics
