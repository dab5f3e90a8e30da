// the G1's joint tables of the SONIC release: the Isaac Lab ↔ MuJoCo joint maps, the standing pose,
// action scales, PD gains and torque limits. Every group cites the upstream file and lines it
// restates (NVlabs/GR00T-WholeBodyControl at 1983e88): deploy = gear_sonic_deploy/src/g1/
// g1_deploy_onnx_ref/include/policy_parameters.hpp, sim = gear_sonic/utils/mujoco_sim/
#pragma once

#include <array>
#include <cstdint>

namespace mb::physics {

constexpr int k_body_joints  = 29;    // hinge joints the policy drives
constexpr int k_hand_joints  = 7;     // per Dex3 hand
constexpr int k_scene_joints = 43;    // body + both hands, the 43-DoF scene's joint order
constexpr int k_scene_nq     = 50;    // free joint (xyz + wxyz) + 43 hinges
constexpr int k_scene_nv     = 49;    // free joint (linear + angular) + 43 hinges
constexpr int k_qpos30_width = 36;    // a reference frame as mb_motion_get_mujoco_qpos gives it

// deploy:100-102 isaaclab_to_mujoco: entry m is the Isaac Lab index of MuJoCo joint m
constexpr int k_isaac_of_mujoco[k_body_joints] = {0,  3,  6,  9,  13, 17, 1,  4,  7,  10, 14, 18, 2,  5, 8,
                                                  11, 15, 19, 21, 23, 25, 27, 12, 16, 20, 22, 24, 26, 28};
// deploy:103-105 mujoco_to_isaaclab: entry i is the MuJoCo index of Isaac Lab joint i
constexpr int k_mujoco_of_isaac[k_body_joints] = {0,  6,  12, 1,  7,  13, 2,  8,  14, 3,  9,  15, 22, 4, 10,
                                                  16, 23, 5,  11, 17, 24, 18, 25, 19, 26, 20, 27, 21, 28};

// the 43-DoF scene (g1_29dof_with_hand.xml): legs 12, waist 3, left arm 7, left hand 7, right arm 7,
// right hand 7; entry m is the scene joint of MuJoCo body joint m
constexpr int k_scene_of_body[k_body_joints] = {0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14,
                                                15, 16, 17, 18, 19, 20, 21, 29, 30, 31, 32, 33, 34, 35};
constexpr int k_scene_of_hand[2 * k_hand_joints] = {22, 23, 24, 25, 26, 27, 28, 36, 37, 38, 39, 40, 41, 42};

// deploy:40-65 motor constants; gains from a critically damped 10 Hz model
constexpr double k_armature_5020    = 0.003609725;
constexpr double k_armature_7520_14 = 0.010177520;
constexpr double k_armature_7520_22 = 0.025101925;
constexpr double k_armature_4010    = 0.00425;
constexpr double k_natural_freq     = 10 * 2.0 * 3.1415926535;   // upstream's own π
constexpr double k_damping_ratio    = 2;
constexpr double k_effort_5020 = 25.0, k_effort_7520_14 = 88.0, k_effort_7520_22 = 139.0, k_effort_4010 = 5.0;

enum class motor : uint8_t { M5020, M7520_14, M7520_22, M4010 };

constexpr double motor_armature(motor m) {
    return m == motor::M5020 ? k_armature_5020 : m == motor::M7520_14 ? k_armature_7520_14
         : m == motor::M7520_22 ? k_armature_7520_22 : k_armature_4010;
}
constexpr double motor_effort(motor m) {
    return m == motor::M5020 ? k_effort_5020 : m == motor::M7520_14 ? k_effort_7520_14
         : m == motor::M7520_22 ? k_effort_7520_22 : k_effort_4010;
}
// deploy:50-59 stiffness = armature · ω², damping = 2 · ζ · armature · ω
constexpr double motor_stiffness(motor m) { return motor_armature(m) * k_natural_freq * k_natural_freq; }
constexpr double motor_damping(motor m)   { return 2.0 * k_damping_ratio * motor_armature(m) * k_natural_freq; }

// deploy:109-207 (the per-joint comments) per MuJoCo body joint: hip pitch/roll and knee 7520-22, hip yaw and waist yaw 7520-14,
// wrist pitch/yaw 4010, the rest 5020
constexpr motor k_motor[k_body_joints] = {
    motor::M7520_22, motor::M7520_22, motor::M7520_14, motor::M7520_22, motor::M5020, motor::M5020,   // left leg
    motor::M7520_22, motor::M7520_22, motor::M7520_14, motor::M7520_22, motor::M5020, motor::M5020,   // right leg
    motor::M7520_14, motor::M5020,    motor::M5020,                                                   // waist
    motor::M5020,    motor::M5020,    motor::M5020,    motor::M5020,    motor::M5020,                 // left arm
    motor::M4010,    motor::M4010,
    motor::M5020,    motor::M5020,    motor::M5020,    motor::M5020,    motor::M5020,                 // right arm
    motor::M4010,    motor::M4010,
};
// deploy:148-158 and 182-192: ankles and waist roll/pitch have twice the gains (their action scale is unchanged)
constexpr double k_gain_factor[k_body_joints] = {1, 1, 1, 1, 2, 2, 1, 1, 1, 1, 2, 2, 1, 2, 2,
                                                 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};

// deploy:210-240 default_angles, MuJoCo order (rad)
constexpr double k_default_angles[k_body_joints] = {
    -0.312, 0.0, 0.0, 0.669, -0.363, 0.0,    // left leg
    -0.312, 0.0, 0.0, 0.669, -0.363, 0.0,    // right leg
    0.0, 0.0, 0.0,                           // waist
    0.2, 0.2, 0.0, 0.6, 0.0, 0.0, 0.0,       // left arm
    0.2, -0.2, 0.0, 0.6, 0.0, 0.0, 0.0,      // right arm
};

template <typename T, typename F> constexpr std::array<T, k_body_joints> per_joint(F f) {
    std::array<T, k_body_joints> v{};
    for (int m = 0; m < k_body_joints; ++m) v[m] = static_cast<T>(f(m));
    return v;
}

// deploy:109-139 g1_action_scale = 0.25 · effort / stiffness, MuJoCo order (rad per unit action)
constexpr auto k_action_scale = per_joint<double>([](int m) {
    return 0.25 * motor_effort(k_motor[m]) / motor_stiffness(k_motor[m]); });

// deploy:143-173 kps, 177-207 kds, MuJoCo order; upstream stores them as float and the sim's PD law reads that
// float (LowCmd kp/kd are float32)
constexpr auto k_kp = per_joint<float>([](int m) { return k_gain_factor[m] * motor_stiffness(k_motor[m]); });
constexpr auto k_kd = per_joint<float>([](int m) { return k_gain_factor[m] * motor_damping(k_motor[m]); });

// sim/wbc_configs/g1_29dof_sonic_model12.yaml:241-249 motor_effort_limit_list, the 43 scene joints
// (N·m); sim/base_sim.py:423 clips every PD torque to ±limit
constexpr double k_torque_limit[k_scene_joints] = {
    88.0, 88.0, 88.0, 139.0, 50.0, 50.0,  88.0, 88.0, 88.0, 139.0, 50.0, 50.0,   // legs
    88.0, 50.0, 50.0,                                                           // waist
    25.0, 25.0, 25.0, 25.0, 25.0, 5.0, 5.0,  2.45, 0.7, 0.7, 0.7, 0.7, 0.7, 0.7,  // left arm, left hand
    25.0, 25.0, 25.0, 25.0, 25.0, 5.0, 5.0,  2.45, 0.7, 0.7, 0.7, 0.7, 0.7, 0.7,  // right arm, right hand
};

// Dex3 hold gains: deploy dex3_hands.hpp:309 hold(kp = 1.5, kd = 0.1). The reference runtime leaves the
// hands limp; we hold them at a target with these gains
constexpr double k_hand_kp = 1.5;
constexpr double k_hand_kd = 0.1;

// deploy:88 and :96: wrist and lower-body joints, Isaac order in Isaac indices
constexpr int k_wrist_isaac[6]       = {23, 24, 25, 26, 27, 28};
constexpr int k_lower_body_isaac[12] = {0, 1, 3, 4, 6, 7, 9, 10, 13, 14, 17, 18};

}  // namespace mb::physics
