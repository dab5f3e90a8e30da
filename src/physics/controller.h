// from SONIC's actions to joint torques, as gear_sonic_deploy commands the G1 and gear_sonic's MuJoCo
// bridge applies the command: targets = default + scale · action through the Isaac → MuJoCo map
// (g1_deploy_onnx_ref.cpp:3104-3133 CreatePolicyCommand), PD torques clipped at the motor limits
// (gear_sonic/utils/mujoco_sim/base_sim.py:258-288, :423), hands held by PD (dex3_hands.hpp:309 gains),
// and the fall test (base_sim.py:508-512, pelvis below 0.2 m), sticky until reset
#pragma once

#include "physics/g1-joints.h"

namespace mb::physics {

constexpr double k_fall_height = 0.2;    // m, pelvis (free joint) z

// motor targets [29], MuJoCo order: default_angles[m] + action[isaac_of_mujoco[m]] · scale[m], rounded to
// float as the deploy's MotorCommand stores it
void action_to_targets(const float * action /* [29], Isaac order */, float * q_target /* [29], MuJoCo order */);

// PD torques for the 43 scene joints from the 43-DoF qpos [50] and qvel [49]: body joints
// kp·(target − q) − kd·dq with the release gains, hand joints the same toward hand_target [14] (left
// then right, scene order) with kp 1.5, kd 0.1; every torque clipped to ±k_torque_limit (N·m)
void pd_torques(const float * q_target /* [29] */, const double * hand_target /* [14] */, const double * qpos,
                const double * qvel, double * tau /* [43], scene order */);

// the real robot's safety stop (g1_deploy_onnx_ref.cpp:2826-2836, GatherRobotStateToLogger): a body
// joint faster than 35 rad/s stops the control loop before the state is logged. Signed, as upstream
// compares (body_dq[i] > 35: a joint at −40 rad/s passes); deploy.sh:384-386 disables it in simulation
constexpr double k_velocity_stop = 35.0;   // rad/s

// the Isaac index of the first joint (Isaac order, as the deploy loops) whose velocity in dq_mujoco
// [29] (MuJoCo order) exceeds 35 rad/s, or −1
inline int velocity_stop_joint(const double * dq_mujoco) {
    for (int i = 0; i < k_body_joints; ++i)
        if (dq_mujoco[k_mujoco_of_isaac[i]] > k_velocity_stop) return i;
    return -1;
}

// fall detection: sticky, true once the pelvis has been below 0.2 m since the last reset (false)
inline bool fall_update(bool & fallen, double pelvis_z) {
    if (pelvis_z < k_fall_height) fallen = true;   // NaN leaves it as is; the sim reports instability itself
    return fallen;
}

}  // namespace mb::physics
