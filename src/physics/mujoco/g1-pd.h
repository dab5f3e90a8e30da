// what the simulator adds to the release's joint tables (physics/g1-joints.h: gains, default pose,
// torque limits, each with its upstream source): the actuator of each body joint
#pragma once

#include "physics/g1-joints.h"

namespace mb::physics {

constexpr int k_actuators = k_scene_joints;   // the scene's motors: body joints and both hands

// the body hinges' names in MuJoCo order are those of the qpos converter's G1 MJCF (mjcf_g1(), motion/mjcf.h),
// whose 29 hinges are the scene's without the hands

// actuator of body joint i: the hands sit after each arm's 7 joints
constexpr int body_actuator(int i) {
    return k_scene_of_body[i];
}

} // namespace mb::physics
