// the quaternion arithmetic of gear_sonic_deploy's math_utils.hpp (wxyz, double), written from its
// formulas so the observation rounds as the deploy's does (quat_mul in particular uses its factored
// 8-multiplication form, which rounds differently from the textbook product). Lines cite
// gear_sonic_deploy/src/g1/g1_deploy_onnx_ref/include/math_utils.hpp at 1983e88
#pragma once

#include <algorithm>
#include <array>
#include <cmath>

namespace mb::physics {

using quat = std::array<double, 4>;   // w, x, y, z
using vec3 = std::array<double, 3>;

// math_utils:132-150 v·(2w² − 1) + 2w·(q⃗ × v) + 2·q⃗·(q⃗ · v); not normalised, so the zero quaternion
// maps v to −v (the deploy's zero-padded history entries rely on that)
inline vec3 quat_rotate(const quat & q, const vec3 & v) {
    const double w = q[0], x = q[1], y = q[2], z = q[3];
    const double sa = 2.0 * w * w - 1.0;
    const vec3 cr = {y * v[2] - z * v[1], z * v[0] - x * v[2], x * v[1] - y * v[0]};
    const double d = x * v[0] + y * v[1] + z * v[2];
    return {v[0] * sa + cr[0] * w * 2.0 + x * d * 2.0, v[1] * sa + cr[1] * w * 2.0 + y * d * 2.0,
            v[2] * sa + cr[2] * w * 2.0 + z * d * 2.0};
}

// math_utils:174-191, the factored product
inline quat quat_mul(const quat & a, const quat & b) {
    const double w1 = a[0], x1 = a[1], y1 = a[2], z1 = a[3];
    const double w2 = b[0], x2 = b[1], y2 = b[2], z2 = b[3];
    const double ww = (z1 + x1) * (x2 + y2);
    const double yy = (w1 - y1) * (w2 + z2);
    const double zz = (w1 + y1) * (w2 - z2);
    const double xx = ww + yy + zz;
    const double qq = 0.5 * (xx + (z1 - x1) * (x2 - y2));
    return {qq - ww + (z1 - y1) * (y2 - z2), qq - xx + (x1 + w1) * (x2 + w2),
            qq - yy + (w1 - x1) * (y2 + z2), qq - zz + (z1 + y1) * (w2 - x2)};
}

inline quat quat_conjugate(const quat & q) { return {q[0], -q[1], -q[2], -q[3]}; }

// math_utils:255-259 with eps 1e-12
inline quat quat_unit(const quat & q) {
    const double n = std::max(std::sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]), 1e-12);
    return {q[0] / n, q[1] / n, q[2] / n, q[3] / n};
}

// math_utils:206-213 and 278-303: yaw of the rotated x axis, as a unit quaternion about z
inline double heading_angle(const quat & q) {
    const vec3 d = quat_rotate(q, {1.0, 0.0, 0.0});
    return std::atan2(d[1], d[0]);
}
inline quat quat_about_z(double angle) {
    // the axis (0, 0, 1) is already unit, so normalize_vector_d leaves it exact; 0 · sin keeps the
    // deploy's signed zeros
    const double s = std::sin(angle / 2.0);
    return quat_unit({std::cos(angle / 2.0), 0.0 * s, 0.0 * s, 1.0 * s});
}
inline quat heading_quat(const quat & q)     { return quat_about_z(heading_angle(q)); }
inline quat heading_quat_inv(const quat & q) { return quat_about_z(-heading_angle(q)); }

// math_utils:343-366: shortest path; normalised lerp above dot 0.9995, else slerp (not renormalised)
inline quat quat_slerp(const quat & q0, const quat & q1, double t) {
    double dot = q0[0] * q1[0] + q0[1] * q1[1] + q0[2] * q1[2] + q0[3] * q1[3];
    quat b = q1;
    if (dot < 0.0) {
        b = {-q1[0], -q1[1], -q1[2], -q1[3]};
        dot = -dot;
    }
    if (dot > 0.9995)
        return quat_unit({q0[0] + t * (b[0] - q0[0]), q0[1] + t * (b[1] - q0[1]), q0[2] + t * (b[2] - q0[2]),
                          q0[3] + t * (b[3] - q0[3])});
    const double theta = std::acos(std::abs(dot));
    const double s = std::sin(theta);
    const double f0 = std::sin((1.0 - t) * theta) / s, f1 = std::sin(t * theta) / s;
    return {f0 * q0[0] + f1 * b[0], f0 * q0[1] + f1 * b[1], f0 * q0[2] + f1 * b[2], f0 * q0[3] + f1 * b[3]};
}

// math_utils:410-436, normalising first; R row-major
inline std::array<double, 9> quat_to_matrix(const quat & q) {
    const double n = std::sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
    const double w = q[0] / n, x = q[1] / n, y = q[2] / n, z = q[3] / n;
    return {1 - 2 * (y * y + z * z), 2 * (x * y - w * z),     2 * (x * z + w * y),
            2 * (x * y + w * z),     1 - 2 * (x * x + z * z), 2 * (y * z - w * x),
            2 * (x * z - w * y),     2 * (y * z + w * x),     1 - 2 * (x * x + y * y)};
}

}  // namespace mb::physics
