#include "motion/motion-rep.h"

#include "format/error.h"

#include <cmath>

namespace mb {

namespace {

struct subset_tables {
    std::array<int, 5>   global_root{};
    std::array<int, 4>   local_root{};
    std::array<int, 304> pose{};
    std::array<int, 414> global{};
    std::array<int, 413> local{};

    subset_tables() {
        for (int i = 0; i < 5; ++i) global_root[i] = i;
        for (int i = 0; i < 4; ++i) local_root[i] = 5 + i;
        // root height (dual 8 = global_root_y) then ric_data and global_rot_data (dual 9..311)
        for (int i = 0; i < 304; ++i) pose[i] = 8 + i;
        for (int i = 0; i < 5; ++i) global[i] = i;
        for (int i = 5; i < 414; ++i) global[i] = i + 4;
        for (int i = 0; i < 413; ++i) local[i] = 5 + i;
    }
};

const subset_tables & tables() {
    static const subset_tables t;
    return t;
}

template <typename T>
void cross3(const T * a, const T * b, T * c) {
    c[0] = a[1] * b[2] - a[2] * b[1];
    c[1] = a[2] * b[0] - a[0] * b[2];
    c[2] = a[0] * b[1] - a[1] * b[0];
}

template <typename T>
T norm3(const T * v) {
    return std::sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
}

} // namespace

std::span<const int> feature_subset_indices(feature_subset s) {
    const subset_tables & t = tables();
    switch (s) {
        case feature_subset::FEATURE_SUBSET_GLOBAL_ROOT: return t.global_root;
        case feature_subset::FEATURE_SUBSET_LOCAL_ROOT:  return t.local_root;
        case feature_subset::FEATURE_SUBSET_POSE:        return t.pose;
        case feature_subset::FEATURE_SUBSET_GLOBAL:      return t.global;
        case feature_subset::FEATURE_SUBSET_LOCAL:       return t.local;
    }
    throw mb::error(mb::status::invalid_argument, "unknown feature subset");
}

motion_stats motion_stats::from_f32(const float * mean, const float * std) {
    motion_stats s;
    for (int i = 0; i < k_n_features; ++i) {
        if (!std::isfinite(mean[i]) || !std::isfinite(std[i]) || std[i] < 0.0f) {
            throw mb::error(mb::status::incompatible_model,
                            "motion statistics: entry " + std::to_string(i) + " is not finite or std < 0");
        }
        s.mean[i] = mean[i];
        // float32 like upstream: std**2 + eps, then sqrt
        const float var = std[i] * std[i];
        s.scale[i] = std::sqrt(var + k_stats_eps);
    }
    return s;
}

motion_stats motion_stats::from_support(const model_support & sup) {
    return from_f32(sup.mean.data(), sup.std.data());
}

void motion_stats::normalize(const float * x, int64_t n_rows, feature_subset s, float * y) const {
    const std::span<const int> idx = feature_subset_indices(s);
    const int64_t d = int64_t(idx.size());
    for (int64_t r = 0; r < n_rows; ++r) {
        for (int64_t i = 0; i < d; ++i) {
            const int k = idx[i];
            y[r * d + i] = (x[r * d + i] - mean[k]) / scale[k];
        }
    }
}

void motion_stats::unnormalize(const float * x, int64_t n_rows, feature_subset s, float * y) const {
    const std::span<const int> idx = feature_subset_indices(s);
    const int64_t d = int64_t(idx.size());
    for (int64_t r = 0; r < n_rows; ++r) {
        for (int64_t i = 0; i < d; ++i) {
            const int k = idx[i];
            const float v = x[r * d + i] * scale[k];
            y[r * d + i] = v + mean[k];
        }
    }
}

void global_root_to_local(const float * g, int64_t n, float * l) {
    if (n < 2) throw mb::error(mb::status::invalid_argument, "global_root_to_local needs at least 2 frames");
    const float fps = float(k_motion_fps);
    // heading a = atan2(sin, cos), through the half-angle quaternion and back like upstream
    auto heading = [&](int64_t t) {
        const float a  = std::atan2(g[t * 5 + 4], g[t * 5 + 3]);
        const float qw = std::cos(a / 2.0f);
        const float qy = std::sin(a / 2.0f);
        return std::atan2(qy, qw) * 2.0f;
    };
    float a_prev = heading(0);
    for (int64_t t = 0; t + 1 < n; ++t) {
        const float a_next = heading(t + 1);
        // diff_angles: wrap-safe difference through cos/sin products
        const float c0 = std::cos(a_prev), s0 = std::sin(a_prev);
        const float c1 = std::cos(a_next), s1 = std::sin(a_next);
        const float cos_diff = c1 * c0 + s1 * s0;
        const float sin_diff = s1 * c0 - c1 * s0;
        l[t * 4 + 0] = fps * std::atan2(sin_diff, cos_diff);
        // world-frame xz velocity (removing_heading = False)
        l[t * 4 + 1] = fps * (g[(t + 1) * 5 + 0] - g[t * 5 + 0]);
        l[t * 4 + 2] = fps * (g[(t + 1) * 5 + 2] - g[t * 5 + 2]);
        l[t * 4 + 3] = g[t * 5 + 1];
        a_prev = a_next;
    }
    // the last valid frame repeats the previous velocity
    const int64_t t = n - 1;
    l[t * 4 + 0] = l[(t - 1) * 4 + 0];
    l[t * 4 + 1] = l[(t - 1) * 4 + 1];
    l[t * 4 + 2] = l[(t - 1) * 4 + 2];
    l[t * 4 + 3] = g[t * 5 + 1];
}

void local_to_global(const float * local, int64_t n, float * global) {
    const float fps = float(k_motion_fps);
    // cumulative sums: torch's CPU cumsum accumulates float32 in double
    double a = 0.0, x = 0.0, z = 0.0;
    for (int64_t t = 0; t < n; ++t) {
        const float * l = local + t * k_local_dim;
        float * o = global + t * k_global_dim;
        if (t > 0) {
            const float * lp = local + (t - 1) * k_local_dim;
            a += double(lp[0] / fps);
            x += double(lp[1] / fps);
            z += double(lp[2] / fps);
        }
        const float af = float(a);
        const float qw = std::cos(af / 2.0f);
        const float qy = std::sin(af / 2.0f);
        const float h  = std::atan2(qy, qw) * 2.0f;
        o[0] = float(x);
        o[1] = l[3];
        o[2] = float(z);
        o[3] = std::cos(h);
        o[4] = std::sin(h);
        for (int i = 0; i < k_global_dim - 5; ++i) o[5 + i] = l[4 + i];
    }
}

void reapply_start_transform(float * global, int64_t n, float ref_x, float ref_z, float ref_heading) {
    for (int64_t t = 0; t < n; ++t) {
        float * o = global + t * k_global_dim;
        const float a = std::atan2(o[4], o[3]) + ref_heading;
        o[3] = std::cos(a);
        o[4] = std::sin(a);
        o[0] += ref_x;
        o[2] += ref_z;
    }
}

template <typename T>
void cont6d_to_matrix_t(const T * six, T * m) {
    T x[3], z[3], y[3];
    const T nx = norm3(six);
    for (int i = 0; i < 3; ++i) x[i] = six[i] / nx;
    cross3(x, six + 3, z);
    const T nz = norm3(z);
    for (int i = 0; i < 3; ++i) z[i] /= nz;
    cross3(z, x, y);
    // columns x, y, z
    for (int i = 0; i < 3; ++i) {
        m[i * 3 + 0] = x[i];
        m[i * 3 + 1] = y[i];
        m[i * 3 + 2] = z[i];
    }
}

template <typename T>
void matrix_to_quat_wxyz_t(const T * m, T * q) {
    const T m00 = m[0], m01 = m[1], m02 = m[2];
    const T m10 = m[3], m11 = m[4], m12 = m[5];
    const T m20 = m[6], m21 = m[7], m22 = m[8];
    const T arg[4] = {
        T(1) + m00 + m11 + m22,
        T(1) + m00 - m11 - m22,
        T(1) - m00 + m11 - m22,
        T(1) - m00 - m11 + m22,
    };
    T q_abs[4];
    for (int i = 0; i < 4; ++i) q_abs[i] = arg[i] > T(0) ? std::sqrt(arg[i]) : T(0);
    int best = 0;
    for (int i = 1; i < 4; ++i) {
        if (q_abs[i] > q_abs[best]) best = i;
    }
    T cand[4];
    switch (best) {
        case 0:  cand[0] = q_abs[0] * q_abs[0]; cand[1] = m21 - m12; cand[2] = m02 - m20; cand[3] = m10 - m01; break;
        case 1:  cand[0] = m21 - m12; cand[1] = q_abs[1] * q_abs[1]; cand[2] = m10 + m01; cand[3] = m02 + m20; break;
        case 2:  cand[0] = m02 - m20; cand[1] = m10 + m01; cand[2] = q_abs[2] * q_abs[2]; cand[3] = m12 + m21; break;
        default: cand[0] = m10 - m01; cand[1] = m20 + m02; cand[2] = m21 + m12; cand[3] = q_abs[3] * q_abs[3]; break;
    }
    const T flr = T(0.1);
    const T den = T(2) * (q_abs[best] > flr ? q_abs[best] : flr);
    for (int i = 0; i < 4; ++i) q[i] = cand[i] / den;
}

void cont6d_to_matrix(const float * six, float * m) {
    cont6d_to_matrix_t(six, m);
}
void cont6d_to_matrix(const double * six, double * m) {
    cont6d_to_matrix_t(six, m);
}
void matrix_to_quat_wxyz(const float * m, float * q) {
    matrix_to_quat_wxyz_t(m, q);
}
void matrix_to_quat_wxyz(const double * m, double * q) {
    matrix_to_quat_wxyz_t(m, q);
}

} // namespace mb
