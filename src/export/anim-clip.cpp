// the G1 clip's checks and FK (anim-clip.h)
#include "export/anim-clip.h"

#include "format/error.h"
#include "motion/g1.h"
#include "motion/rotation.h"

#include <cmath>

namespace mb {

void clip_check_normalise(anim_clip & c, const std::string & what) {
    if (c.frames < 1 || c.frames > k_clip_max_frames) {
        fail(status::invalid_format, what + ": " + std::to_string(c.frames) + " frames, a clip holds 1.." +
                                         std::to_string(k_clip_max_frames) + " (10 min at 30 fps)");
    }
    if (c.root.size() != size_t(c.frames) * 3 || c.local_xyzw.size() != size_t(c.frames) * k_n_joints * 4) {
        fail(status::internal, what + ": clip arrays do not match the frame count");
    }
    for (int64_t f = 0; f < c.frames; ++f) {
        for (int k = 0; k < 3; ++k) {
            const float v = c.root[size_t(f) * 3 + size_t(k)];
            if (!std::isfinite(v) || std::fabs(v) > k_clip_max_coord) {
                fail(status::invalid_format, what + ": root translation of frame " + std::to_string(f) +
                                                 " is not finite or beyond 1e4 m");
            }
        }
        for (int j = 0; j < k_n_joints; ++j) {
            float * q = &c.local_xyzw[(size_t(f) * k_n_joints + size_t(j)) * 4];
            double  n = 0;
            for (int k = 0; k < 4; ++k) {
                if (!std::isfinite(q[k])) {
                    fail(status::invalid_format, what + ": rotation of joint " + k_g1_joint_names[j] + " at frame " +
                                                     std::to_string(f) + " is not finite");
                }
                n += double(q[k]) * q[k];
            }
            n = std::sqrt(n);
            if (n < k_quat_norm_min || n > k_quat_norm_max) {
                fail(status::invalid_format, what + ": rotation of joint " + k_g1_joint_names[j] + " at frame " +
                                                 std::to_string(f) + " has norm " + std::to_string(n) +
                                                 ", outside 0.9..1.1");
            }
            // unit within float32 rounding is left as stored, so a re-read clip is bitwise the same
            if (std::fabs(n - 1.0) > 1e-6) {
                for (int k = 0; k < 4; ++k) q[k] = float(q[k] / n);
            }
        }
    }
}

void joint_offset(int j, double * out) {
    const int p = k_g1_parents[j];
    for (int k = 0; k < 3; ++k) out[k] = p < 0 ? 0.0 : k_g1_neutral[j][k] - k_g1_neutral[p][k];
}

void quat_xyzw_to_matrix(const float * q, double * m) {
    const double wxyz[4] = {q[3], q[0], q[1], q[2]};
    quat_to_matrix(wxyz, m);
}

void clip_forward_kinematics(const anim_clip & c, float * positions, double * rotations) {
    for (int64_t f = 0; f < c.frames; ++f) {
        double g[k_n_joints][9];
        double p[k_n_joints][3];
        for (int j = 0; j < k_n_joints; ++j) {
            double l[9];
            quat_xyzw_to_matrix(&c.local_xyzw[(size_t(f) * k_n_joints + size_t(j)) * 4], l);
            const int parent = k_g1_parents[j];
            if (parent < 0) {
                for (int k = 0; k < 9; ++k) g[j][k] = l[k];
                for (int k = 0; k < 3; ++k) p[j][k] = c.root[size_t(f) * 3 + size_t(k)];
                continue;
            }
            double off[3], moved[3];
            joint_offset(j, off);
            mat_vec(g[parent], off, moved);
            for (int k = 0; k < 3; ++k) p[j][k] = p[parent][k] + moved[k];
            mat_mul(g[parent], l, g[j]);
        }
        for (int j = 0; j < k_n_joints; ++j) {
            const size_t o = size_t(f) * k_n_joints + size_t(j);
            if (positions) {
                for (int k = 0; k < 3; ++k) positions[o * 3 + size_t(k)] = float(p[j][k]);
            }
            if (rotations) {
                for (int k = 0; k < 9; ++k) rotations[o * 9 + size_t(k)] = g[j][k];
            }
        }
    }
}

} // namespace mb
