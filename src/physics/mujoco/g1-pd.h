// what the simulator adds to the release's joint tables (physics/g1-joints.h: gains, default pose,
// torque limits, each with its upstream source): the scene's hinge names and the actuator of each
// body joint
#pragma once

#include "physics/g1-joints.h"

namespace mb::physics {

constexpr int k_actuators = k_scene_joints;   // the scene's motors: body joints and both hands

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

// actuator of body joint i: the hands sit after each arm's 7 joints
constexpr int body_actuator(int i) {
    return k_scene_of_body[i];
}

} // namespace mb::physics
