// SONIC reference-motion folders (see sonic-folder.h)
#include "export/sonic-folder.h"

#include "export/g1-isaaclab.h"
#include "export/qpos-file.h"
#include "export/qpos-resample.h"
#include "format/error.h"
#include "motion/g1.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

namespace mb {

namespace {

constexpr int    k_rate   = 50;
constexpr int    k_bodies = k_qpos_hinges + 1;

void qmul(const double * a, const double * b, double * out) {
    const double r[4] = {a[0] * b[0] - a[1] * b[1] - a[2] * b[2] - a[3] * b[3],
                         a[0] * b[1] + a[1] * b[0] + a[2] * b[3] - a[3] * b[2],
                         a[0] * b[2] - a[1] * b[3] + a[2] * b[0] + a[3] * b[1],
                         a[0] * b[3] + a[1] * b[2] - a[2] * b[1] + a[3] * b[0]};
    for (int i = 0; i < 4; ++i) out[i] = r[i];
}

// v rotated by unit q
void qrot(const double * q, const double * v, double * out) {
    const double p[4] = {0, v[0], v[1], v[2]}, c[4] = {q[0], -q[1], -q[2], -q[3]};
    double       t[4], r[4];
    qmul(q, p, t);
    qmul(t, c, r);
    out[0] = r[1];
    out[1] = r[2];
    out[2] = r[3];
}

void qnormalise(double * q) {
    const double n = std::sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
    for (int i = 0; i < 4; ++i) q[i] /= n;
}

// gaussian_filter1d(sigma = 2, mode = "nearest") along frames, as motion_data_reader.hpp:200-249
void gaussian_nearest(std::vector<double> & v, int64_t frames, int width) {
    const double sigma = 2.0;
    const int    lw    = int(4.0 * sigma + 0.5);
    double       sum   = 0;
    for (int dx = -lw; dx <= lw; ++dx) sum += std::exp(-0.5 / (sigma * sigma) * dx * dx);
    std::vector<double> out(v.size(), 0.0);
    for (int64_t f = 0; f < frames; ++f) {
        for (int dx = -lw; dx <= lw; ++dx) {
            const int64_t g = std::clamp<int64_t>(f + dx, 0, frames - 1);
            const double  w = std::exp(-0.5 / (sigma * sigma) * dx * dx) / sum;
            for (int c = 0; c < width; ++c) out[size_t(f * width + c)] += w * v[size_t(g * width + c)];
        }
    }
    v.swap(out);
}

void put_csv(const std::string & path, const std::vector<std::string> & names, const std::vector<double> & v, int64_t frames) {
    std::string s;
    for (size_t c = 0; c < names.size(); ++c) s += (c ? "," : "") + names[c];
    s += '\n';
    const size_t width = names.size();
    char         buf[48];
    for (int64_t f = 0; f < frames; ++f) {
        for (size_t c = 0; c < width; ++c) {
            // 9 decimals, as the deploy's MotionRecorder writes (motion_data_reader.hpp:431)
            std::snprintf(buf, sizeof buf, c ? ",%.9f" : "%.9f", v[size_t(f) * width + c]);
            s += buf;
        }
        s += '\n';
    }
    write_file_atomic(path, s);
}

std::vector<std::string> body_names(int coords, const char * infix, const char * axes) {
    std::vector<std::string> n;
    for (int b = 0; b < k_sonic_bodies; ++b) {
        for (int c = 0; c < coords; ++c) n.push_back("body_" + std::to_string(b) + "_" + infix + std::string(1, axes[c]));
    }
    return n;
}

std::string summary_line(const char * name, const std::string & shape) {
    return std::string("  ") + name + ": " + shape + " (float64)\n";
}

// one info.txt block in the layout of upstream's convert_motions.py:179-197
std::string info_block(const char * name, const std::string & shape, const std::vector<double> & v) {
    double lo = v.empty() ? 0 : *std::min_element(v.begin(), v.end()), hi = v.empty() ? 0 : *std::max_element(v.begin(), v.end());
    char   buf[96];
    std::string s = std::string(name) + ":\n  Shape: " + shape + "\n  Dtype: float64\n";
    std::snprintf(buf, sizeof buf, "  Range: [%.3f, %.3f]\n  Sample: [", lo, hi);
    s += buf;
    for (size_t i = 0; i < 5 && i < v.size(); ++i) {
        std::snprintf(buf, sizeof buf, i ? " %.8g" : "%.8g", v[i]);
        s += buf;
    }
    return s + "]\n\n";
}

} // namespace

void mujoco_body_fk(const mjcf_model & model, const double * qpos, double * p, double * q) {
    MB_ASSERT(model.hinges.size() == size_t(k_qpos_hinges), "the G1 MJCF has 29 hinges");
    for (int c = 0; c < 3; ++c) p[c] = qpos[c];
    for (int c = 0; c < 4; ++c) q[c] = qpos[3 + c];
    qnormalise(q);
    for (int k = 0; k < k_qpos_hinges; ++k) {
        const mjcf_hinge & h  = model.hinges[size_t(k)];
        const double *     pp = p + h.parent * 3, * pq = q + h.parent * 4;
        double *           bp = p + (k + 1) * 3, * bq = q + (k + 1) * 4;
        double             off[3];
        qrot(pq, h.pos.data(), off);
        for (int c = 0; c < 3; ++c) bp[c] = pp[c] + off[c];
        // parent * body quat * rotation about the hinge axis (the deploy's fk.cpp:143-159)
        double hinge[4] = {std::cos(qpos[k_qpos_root + k] / 2), 0, 0, 0};
        hinge[1 + h.axis] = std::sin(qpos[k_qpos_root + k] / 2);
        double rest[4] = {h.quat[0], h.quat[1], h.quat[2], h.quat[3]}, t[4];
        qnormalise(rest);
        qmul(pq, rest, t);
        qmul(t, hinge, bq);
    }
}

sonic_motion sonic_from_qpos(const float * qpos, int64_t frames, const mjcf_model & model) {
    if (!qpos || frames < 2) fail(status::invalid_argument, "a reference motion needs at least 2 frames at 30 fps");
    for (int64_t i = 0; i < frames * k_qpos_dim; ++i) {
        if (!std::isfinite(qpos[i])) fail(status::invalid_argument, "qpos frame " + std::to_string(i / k_qpos_dim) + ": non-finite value");
    }
    sonic_motion m;
    const std::vector<double> q50 = qpos_resample(qpos, frames, k_rate);
    const int64_t             T   = int64_t(q50.size() / k_qpos_dim);
    m.frames = T;
    m.joint_pos.resize(size_t(T) * k_qpos_hinges);
    m.joint_vel.resize(m.joint_pos.size());
    m.body_pos.resize(size_t(T) * k_sonic_bodies * 3);
    m.body_quat.resize(size_t(T) * k_sonic_bodies * 4);
    m.body_lin_vel.resize(m.body_pos.size());
    m.body_ang_vel.resize(m.body_pos.size());
    double bp[k_bodies * 3], bq[k_bodies * 4];
    for (int64_t t = 0; t < T; ++t) {
        const double * r = &q50[size_t(t) * k_qpos_dim];
        if (std::sqrt(r[3] * r[3] + r[4] * r[4] + r[5] * r[5] + r[6] * r[6]) < 1e-6) {
            fail(status::invalid_argument, "50 Hz frame " + std::to_string(t) + ": zero root quaternion");
        }
        for (int j = 0; j < k_qpos_hinges; ++j) m.joint_pos[size_t(t * k_qpos_hinges + j)] = r[k_qpos_root + k_mujoco_of_isaaclab[j]];
        mujoco_body_fk(model, r, bp, bq);
        for (int b = 0; b < k_sonic_bodies; ++b) {
            const int mj = mujoco_body_of_isaaclab_body(k_sonic_body_indexes[b]);
            for (int c = 0; c < 3; ++c) m.body_pos[size_t((t * k_sonic_bodies + b) * 3 + c)] = bp[mj * 3 + c];
            for (int c = 0; c < 4; ++c) m.body_quat[size_t((t * k_sonic_bodies + b) * 4 + c)] = bq[mj * 4 + c];
        }
    }
    // joint velocities: forward differences, the last frame repeats the one before (kplanner.hpp:501-516)
    for (int64_t t = 0; t < T; ++t) {
        const int64_t a = t + 1 < T ? t : t - 1;
        for (int j = 0; j < k_qpos_hinges; ++j) {
            m.joint_vel[size_t(t * k_qpos_hinges + j)] =
                (m.joint_pos[size_t((a + 1) * k_qpos_hinges + j)] - m.joint_pos[size_t(a * k_qpos_hinges + j)]) * k_rate;
        }
    }
    // body velocities: ComputeGlobalVelocities (motion_data_reader.hpp:168-250): central differences
    // of positions, the rotation from frame f1 - 1 to f1 as angle·axis, then the Gaussian filter.
    // One change: the rotation is taken in the w >= 0 hemisphere, so a quaternion sign flip between
    // frames does not read as a turn of nearly 2π
    for (int64_t f = 0; f < T; ++f) {
        const int64_t f0 = std::max<int64_t>(f - 1, 0), f1 = std::min<int64_t>(T - 1, f + 1), qf0 = std::max<int64_t>(0, f1 - 1);
        const double  dt = double(std::max<int64_t>(1, f1 - f0));
        for (int b = 0; b < k_sonic_bodies; ++b) {
            for (int c = 0; c < 3; ++c) {
                m.body_lin_vel[size_t((f * k_sonic_bodies + b) * 3 + c)] =
                    (m.body_pos[size_t((f1 * k_sonic_bodies + b) * 3 + c)] - m.body_pos[size_t((f0 * k_sonic_bodies + b) * 3 + c)]) * k_rate / dt;
            }
            const double * q1 = &m.body_quat[size_t((f1 * k_sonic_bodies + b) * 4)];
            const double * q0 = &m.body_quat[size_t((qf0 * k_sonic_bodies + b) * 4)];
            const double   c0[4] = {q0[0], -q0[1], -q0[2], -q0[3]};
            double         dq[4];
            qmul(q1, c0, dq);
            if (dq[0] < 0) {
                for (double & v : dq) v = -v;
            }
            const double s     = std::sqrt(dq[1] * dq[1] + dq[2] * dq[2] + dq[3] * dq[3]);
            const double angle = 2 * std::asin(std::min(1.0, s));
            for (int c = 0; c < 3; ++c) m.body_ang_vel[size_t((f * k_sonic_bodies + b) * 3 + c)] = s > 0 ? dq[1 + c] / s * angle * k_rate : 0.0;
        }
    }
    gaussian_nearest(m.body_lin_vel, T, k_sonic_bodies * 3);
    gaussian_nearest(m.body_ang_vel, T, k_sonic_bodies * 3);
    return m;
}

void write_sonic_folder(const std::string & dir, const sonic_motion & m) {
    namespace fs = std::filesystem;
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (!fs::is_directory(dir)) fail(status::io_error, "cannot create the directory '" + dir + "'" + (ec ? ": " + ec.message() : ""));
    std::string name = fs::path(dir).filename().string();
    if (name.empty()) name = fs::path(dir).parent_path().filename().string();
    const int64_t T = m.frames;

    std::vector<std::string> jp, jv;
    for (int j = 0; j < k_qpos_hinges; ++j) {
        jp.push_back("joint_" + std::to_string(j));
        jv.push_back("joint_vel_" + std::to_string(j));
    }
    const std::string base = dir + "/";
    put_csv(base + "joint_pos.csv", jp, m.joint_pos, T);
    put_csv(base + "joint_vel.csv", jv, m.joint_vel, T);
    put_csv(base + "body_pos.csv", body_names(3, "", "xyz"), m.body_pos, T);
    put_csv(base + "body_quat.csv", body_names(4, "", "wxyz"), m.body_quat, T);
    put_csv(base + "body_lin_vel.csv", body_names(3, "vel_", "xyz"), m.body_lin_vel, T);
    put_csv(base + "body_ang_vel.csv", body_names(3, "angvel_", "xyz"), m.body_ang_vel, T);

    // metadata.txt: the lines ReadMetadata parses (motion_data_reader.hpp:933-958) in the layout
    // of convert_motions.py:157-177
    const std::string t  = std::to_string(T);
    const std::string jt = "(" + t + ", 29)", b3 = "(" + t + ", 14, 3)", b4 = "(" + t + ", 14, 4)";
    std::string       idx = "[";
    for (int b = 0; b < k_sonic_bodies; ++b) {
        char buf[8];
        std::snprintf(buf, sizeof buf, b ? " %2d" : "%2d", k_sonic_body_indexes[b]);
        idx += buf;
    }
    idx += "]";
    std::string meta = "Metadata for: " + name + "\n" + std::string(30, '=') + "\n\nBody part indexes:\n" + idx +
                       "\n\nTotal timesteps: " + t + "\n\nData arrays summary:\n";
    meta += summary_line("joint_pos", jt) + summary_line("joint_vel", jt) + summary_line("body_pos_w", b3) +
            summary_line("body_quat_w", b4) + summary_line("body_lin_vel_w", b3) + summary_line("body_ang_vel_w", b3);
    meta += "  _body_indexes: (14,) (int64)\n  time_step_total: () (int64)\n";
    write_file_atomic(base + "metadata.txt", meta);

    std::string info = "Motion Information: " + name + "\n" + std::string(50, '=') + "\n\n";
    info += info_block("joint_pos", jt, m.joint_pos) + info_block("joint_vel", jt, m.joint_vel) +
            info_block("body_pos_w", b3, m.body_pos) + info_block("body_quat_w", b4, m.body_quat) +
            info_block("body_lin_vel_w", b3, m.body_lin_vel) + info_block("body_ang_vel_w", b3, m.body_ang_vel);
    info += "_body_indexes:\n  Shape: (14,)\n  Dtype: int64\n  Sample: " + idx + "\n\ntime_step_total:\n  Shape: ()\n  Dtype: int64\n  Value: " + t + "\n\n";
    write_file_atomic(base + "info.txt", info);
}

} // namespace mb
