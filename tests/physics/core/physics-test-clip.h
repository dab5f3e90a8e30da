// test-only: 30 FPS MuJoCo qpos clips [frames, 36] built from closed-form functions
#pragma once

#include "physics/g1-joints.h"

#include <cmath>
#include <functional>
#include <vector>

namespace mb::physics::test {

// root at (0.01 f, 0, 0.79), yaw(f) about z, MuJoCo joint m at joint(f, m)
inline std::vector<float> make_clip(int frames, const std::function<double(int)> & yaw,
                                    const std::function<double(int, int)> & joint) {
    std::vector<float> q(size_t(frames) * k_qpos30_width);
    for (int f = 0; f < frames; ++f) {
        float * r = q.data() + size_t(f) * k_qpos30_width;
        r[0] = float(0.01 * f);
        r[1] = 0;
        r[2] = 0.79f;
        r[3] = float(std::cos(yaw(f) / 2));
        r[4] = r[5] = 0;
        r[6] = float(std::sin(yaw(f) / 2));
        for (int m = 0; m < k_body_joints; ++m) r[7 + m] = float(joint(f, m));
    }
    return q;
}

inline std::vector<float> constant_clip(int frames, double yaw, double value) {
    return make_clip(frames, [=](int) { return yaw; }, [=](int, int) { return value; });
}

}  // namespace mb::physics::test
