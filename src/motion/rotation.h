// the rotation helpers of the motion layer, in one place: row-major 3×3 matrices, quaternions
// w x y z with upstream's (pytorch3d) conventions, 6D rotations, the heading about +Y and angle
// wrapping. Every helper may be called with out aliasing an input
#pragma once

#include <cmath>
#include <numbers>

namespace mb {

// out = a b
inline void mat_mul(const double * a, const double * b, double * out) {
    double r[9];
    for (int i = 0; i < 3; ++i) {
        for (int j = 0; j < 3; ++j) {
            r[i * 3 + j] = a[i * 3 + 0] * b[0 * 3 + j] + a[i * 3 + 1] * b[1 * 3 + j] + a[i * 3 + 2] * b[2 * 3 + j];
        }
    }
    for (int i = 0; i < 9; ++i) out[i] = r[i];
}

// out = aᵀ b (also: a parent's global rotation and a child's global → the child's local rotation)
template <class T> void mat_tmul(const T * a, const T * b, T * out) {
    T r[9];
    for (int i = 0; i < 3; ++i) {
        for (int j = 0; j < 3; ++j) {
            r[i * 3 + j] = a[0 * 3 + i] * b[0 * 3 + j] + a[1 * 3 + i] * b[1 * 3 + j] + a[2 * 3 + i] * b[2 * 3 + j];
        }
    }
    for (int i = 0; i < 9; ++i) out[i] = r[i];
}

// out = m v
inline void mat_vec(const double * m, const double * v, double * out) {
    double r[3];
    for (int i = 0; i < 3; ++i) r[i] = m[i * 3 + 0] * v[0] + m[i * 3 + 1] * v[1] + m[i * 3 + 2] * v[2];
    out[0] = r[0];
    out[1] = r[1];
    out[2] = r[2];
}

inline void mat_transpose(const double * m, double * out) {
    const double r[9] = {m[0], m[3], m[6], m[1], m[4], m[7], m[2], m[5], m[8]};
    for (int i = 0; i < 9; ++i) out[i] = r[i];
}

inline void mat_identity(double * m) {
    for (int i = 0; i < 9; ++i) m[i] = (i % 4 == 0) ? 1.0 : 0.0;
}

// about +Y (motion space): rows [[c, 0, s], [0, 1, 0], [−s, 0, c]]
inline void rot_y(double a, double * m) {
    const double c = std::cos(a), s = std::sin(a);
    const double r[9] = {c, 0, s, 0, 1, 0, -s, 0, c};
    for (int i = 0; i < 9; ++i) m[i] = r[i];
}

// about +Z (MuJoCo): rows [[c, −s, 0], [s, c, 0], [0, 0, 1]]
inline void rot_z(double a, double * m) {
    const double c = std::cos(a), s = std::sin(a);
    const double r[9] = {c, -s, 0, s, c, 0, 0, 0, 1};
    for (int i = 0; i < 9; ++i) m[i] = r[i];
}

// heading about +Y of a row-major rotation: atan2(R02, R22)
inline double y_heading(const float * r) {
    return std::atan2((double) r[2], (double) r[8]);
}

// floored modulo, as python/torch: the angle in [−π, π)
inline double wrap_pi(double a) {
    constexpr double pi = std::numbers::pi;
    double           r  = std::fmod(a + pi, 2 * pi);
    if (r < 0) r += 2 * pi;
    return r - pi;
}

// upstream quaternion_to_matrix (w x y z → row-major 3×3); divides by |q|², so tolerates non-unit q
inline void quat_to_matrix(const double * q, double * m) {
    const double r = q[0], i = q[1], j = q[2], k = q[3];
    const double s = 2.0 / (r * r + i * i + j * j + k * k);
    m[0] = 1 - s * (j * j + k * k);
    m[1] = s * (i * j - k * r);
    m[2] = s * (i * k + j * r);
    m[3] = s * (i * j + k * r);
    m[4] = 1 - s * (i * i + k * k);
    m[5] = s * (j * k - i * r);
    m[6] = s * (i * k - j * r);
    m[7] = s * (j * k + i * r);
    m[8] = 1 - s * (i * i + j * j);
}

// upstream cont6d_to_matrix (Gram–Schmidt, no epsilon): six = (R00, R10, R20, R01, R11, R21)
// → row-major m[9] (float reproduces upstream's float32 rounding, double serves the encoders)
void cont6d_to_matrix(const float * six, float * m);
void cont6d_to_matrix(const double * six, double * m);

// upstream matrix_to_quaternion (pytorch3d rule, max(q_abs, 0.1), first max wins, no sign
// canonicalisation): row-major m[9] → q = (w, x, y, z)
void matrix_to_quat_wxyz(const float * m, float * q);
void matrix_to_quat_wxyz(const double * m, double * q);

} // namespace mb
