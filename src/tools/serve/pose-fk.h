// forward kinematics of local x, y, z, w rotations over a skeleton (parents, neutral joint
// positions): what the recorder (replay-recorder) and the parity programs compute joint world
// positions with, as upstream's FK (position = root + T_global.translation)
#pragma once

#include <cstdint>
#include <vector>

namespace mb::serve {

// positions [frames, joints, 3] from roots [frames, 3] and local rotations [frames, joints, 4]
// (parent before child; neutral [joints, 3]; quaternions normalised here)
std::vector<float> skeleton_fk(const int32_t * parents, const float * neutral, int joints, const float * roots,
                               const float * local_xyzw, int frames);

} // namespace mb::serve
