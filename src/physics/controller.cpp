#include "physics/controller.h"

#include <algorithm>

namespace mb::physics {

void action_to_targets(const float * action, float * q_target) {
    for (int m = 0; m < k_body_joints; ++m) {
        const double a = static_cast<double>(action[k_isaac_of_mujoco[m]]) * k_action_scale[m];
        q_target[m] = static_cast<float>(k_default_angles[m] + a);
    }
}

void pd_torques(const float * q_target, const double * hand_target, const double * qpos, const double * qvel,
                double * tau) {
    // base_sim.py:274-286: tau_ff 0 + kp·(q_des − q) + kd·(dq_des 0 − dq), kp/kd/q_des the float32 LowCmd fields
    for (int m = 0; m < k_body_joints; ++m) {
        const int s = k_scene_of_body[m];
        tau[s] = double(k_kp[m]) * (double(q_target[m]) - qpos[7 + s]) + double(k_kd[m]) * (0.0 - qvel[6 + s]);
    }
    for (int h = 0; h < 2 * k_hand_joints; ++h) {
        const int s = k_scene_of_hand[h];
        tau[s] = k_hand_kp * (hand_target[h] - qpos[7 + s]) + k_hand_kd * (0.0 - qvel[6 + s]);
    }
    for (int s = 0; s < k_scene_joints; ++s) tau[s] = std::clamp(tau[s], -k_torque_limit[s], k_torque_limit[s]);
}

}  // namespace mb::physics
