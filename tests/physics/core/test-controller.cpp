// the G1 tables and the controller against values worked out by hand from upstream's formulas
// (gear_sonic_deploy/.../include/policy_parameters.hpp, g1_deploy_onnx_ref.cpp CreatePolicyCommand,
// gear_sonic/utils/mujoco_sim/base_sim.py compute_body_torques / check_fall, 1983e88)
#include "physics/controller.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

using namespace mb::physics;

// policy_parameters.hpp:100-105: the two maps are inverse permutations; Isaac order interleaves
// left leg, right leg, waist (Isaac 1 is right hip pitch = MuJoCo 6, Isaac 3 left hip roll = MuJoCo 1)
TEST(physics_tables, joint_maps_are_inverse) {
    bool seen[k_body_joints] = {};
    for (int m = 0; m < k_body_joints; ++m) {
        EXPECT_EQ(k_mujoco_of_isaac[k_isaac_of_mujoco[m]], m);
        seen[k_isaac_of_mujoco[m]] = true;
    }
    for (bool s : seen) EXPECT_TRUE(s);
    EXPECT_EQ(k_mujoco_of_isaac[1], 6);
    EXPECT_EQ(k_isaac_of_mujoco[1], 3);
    EXPECT_EQ(k_mujoco_of_isaac[2], 12);   // Isaac 2: waist yaw
    // the 43-DoF scene: right shoulder pitch (MuJoCo 22) follows the 7 left-hand joints
    EXPECT_EQ(k_scene_of_body[21], 21);
    EXPECT_EQ(k_scene_of_body[22], 29);
    EXPECT_EQ(k_scene_of_hand[7], 36);
}

// policy_parameters.hpp:40-59 and 109-207, evaluated by hand: ω = 20 · 3.1415926535,
// kp = armature · ω², kd = 4 · armature · ω, scale = 0.25 · effort / kp
TEST(physics_tables, gains_and_scales_by_hand) {
    EXPECT_FLOAT_EQ(k_kp[0], 99.0984278f);        // left hip pitch, 7520-22
    EXPECT_FLOAT_EQ(k_kp[2], 40.1792385f);        // left hip yaw, 7520-14
    EXPECT_FLOAT_EQ(k_kp[4], 2 * 14.2506231f);    // left ankle pitch, 2 × 5020
    EXPECT_FLOAT_EQ(k_kp[13], 2 * 14.2506231f);   // waist roll
    EXPECT_FLOAT_EQ(k_kp[12], 40.1792385f);       // waist yaw
    EXPECT_FLOAT_EQ(k_kp[15], 14.2506231f);       // left shoulder pitch
    EXPECT_FLOAT_EQ(k_kp[20], 16.7783275f);       // left wrist pitch, 4010
    EXPECT_FLOAT_EQ(k_kd[0], 6.30880185f);
    EXPECT_FLOAT_EQ(k_kd[10], 2 * 0.907222843f);  // right ankle pitch
    EXPECT_FLOAT_EQ(k_kd[28], 1.0681415f);
    EXPECT_NEAR(k_action_scale[0], 0.350661466379, 1e-12);   // 0.25 · 139 / kp(7520-22)
    EXPECT_NEAR(k_action_scale[4], 0.438577313923, 1e-12);   // ankle: the doubled gain does not enter
    EXPECT_NEAR(k_action_scale[27], 0.0745008703295, 1e-12); // right wrist pitch, 0.25 · 5 / kp(4010)
    // upstream stores kps as float: the table is the float rounding of the double
    EXPECT_EQ(k_kp[0], static_cast<float>(0.025101925 * (10 * 2.0 * 3.1415926535) * (10 * 2.0 * 3.1415926535)));
    EXPECT_DOUBLE_EQ(k_default_angles[3], 0.669);
    EXPECT_DOUBLE_EQ(k_default_angles[23], -0.2);
    EXPECT_DOUBLE_EQ(k_torque_limit[3], 139.0);
    EXPECT_DOUBLE_EQ(k_torque_limit[22], 2.45);   // left hand thumb 0
    EXPECT_DOUBLE_EQ(k_torque_limit[35], 5.0);    // right wrist yaw
}

// CreatePolicyCommand (g1_deploy_onnx_ref.cpp:3120-3128): MuJoCo joint m takes Isaac action
// isaaclab_to_mujoco[m], scaled by the MuJoCo-order scale, on top of the default
TEST(physics_controller, action_to_targets_through_the_map) {
    float action[k_body_joints] = {};
    float target[k_body_joints];
    action_to_targets(action, target);
    for (int m = 0; m < k_body_joints; ++m) EXPECT_EQ(target[m], static_cast<float>(k_default_angles[m]));
    action[3] = 1.0f;    // Isaac 3: left hip roll = MuJoCo 1
    action[1] = -2.0f;   // Isaac 1: right hip pitch = MuJoCo 6
    action_to_targets(action, target);
    EXPECT_EQ(target[1], static_cast<float>(0.0 + 0.350661466379));
    EXPECT_NEAR(target[6], -0.312 - 2 * 0.350661466379, 1e-7);
    EXPECT_EQ(target[0], -0.312f);
}

// base_sim.py:274-286 and :423: kp·(q_des − q) + kd·(0 − dq), then ±limit; hands toward their
// target with dex3 hold gains 1.5 / 0.1
TEST(physics_controller, pd_torques_clip_and_hands) {
    std::vector<double> qpos(k_scene_nq, 0.0), qvel(k_scene_nv, 0.0);
    qpos[3] = 1;
    float target[k_body_joints] = {};
    double hands[14] = {};
    double tau[k_scene_joints];
    target[0] = 0.1f;            // left hip pitch: 0.1 rad error
    qvel[6 + 0] = 0.5;           // and 0.5 rad/s
    target[4] = 10.0f;           // left ankle pitch: far away, clipped at 50 N·m
    target[22] = 0.01f;          // right shoulder pitch, scene joint 29
    hands[0] = 0.2;              // left thumb 0, scene joint 22
    qpos[7 + 36] = 0.1;          // right thumb 0 at 0.1, target 0
    pd_torques(target, hands, qpos.data(), qvel.data(), tau);
    EXPECT_NEAR(tau[0], double(k_kp[0]) * double(0.1f) - double(k_kd[0]) * 0.5, 1e-12);
    EXPECT_NEAR(tau[0], 99.0984278 * 0.1 - 6.30880185 * 0.5, 1e-5);
    EXPECT_EQ(tau[4], 50.0);
    EXPECT_NEAR(tau[29], double(k_kp[22]) * double(0.01f), 1e-12);
    EXPECT_NEAR(tau[22], 1.5 * 0.2, 1e-15);
    EXPECT_NEAR(tau[36], -1.5 * 0.1, 1e-15);
    qvel[6 + 23] = -1e3;         // left thumb 1 spinning: damping clipped at 0.7
    pd_torques(target, hands, qpos.data(), qvel.data(), tau);
    EXPECT_EQ(tau[23], 0.7);
}

// base_sim.py:508-512 fall = qpos[2] < 0.2; ours stays set until the caller resets it
TEST(physics_controller, fall_is_sticky) {
    bool fallen = false;
    EXPECT_FALSE(fall_update(fallen, 0.79));
    EXPECT_FALSE(fall_update(fallen, 0.2));
    EXPECT_TRUE(fall_update(fallen, 0.1999));
    EXPECT_TRUE(fall_update(fallen, 0.8));
    fallen = false;
    EXPECT_FALSE(fall_update(fallen, std::nan("")));
}
