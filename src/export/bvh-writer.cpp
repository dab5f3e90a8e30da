// the BVH writer (bvh.h)
#include "export/bvh.h"

#include "format/error.h"
#include "motion/g1.h"
#include "motion/rotation.h"

#include <algorithm>
#include <cmath>
#include <vector>
#include <cstdio>
#include <numbers>

namespace mb {

namespace {

constexpr double k_deg = 180.0 / std::numbers::pi;

void appendf(std::string & s, const char * fmt, double a, double b, double c) {
    char buf[128];
    std::snprintf(buf, sizeof buf, fmt, a, b, c);
    s += buf;
}

// R = Ry(a) Rx(b) Rz(c) → (a, b, c) in degrees
void matrix_to_yxz(const double * r, double * out) {
    const double sb = std::clamp(-r[5], -1.0, 1.0);
    const double b  = std::asin(sb);
    double       a = 0, c = 0;
    if (std::sqrt(r[3] * r[3] + r[4] * r[4]) > 1e-9) {
        a = std::atan2(r[2], r[8]);
        c = std::atan2(r[3], r[4]);
    } else {
        a = std::atan2(-r[6], r[0]);   // gimbal pole: all the turn on the heading
    }
    out[0] = a * k_deg;
    out[1] = b * k_deg;
    out[2] = c * k_deg;
}

void joint_text(std::string & s, int j, int depth, double scale) {
    const std::string pad(size_t(depth) * 2, ' ');
    double            off[3];
    joint_offset(j, off);
    s += pad + (j == 0 ? "ROOT " : "JOINT ") + k_g1_joint_names[j] + "\n" + pad + "{\n";
    appendf(s, (pad + "  OFFSET %.6f %.6f %.6f\n").c_str(), off[0] * scale, off[1] * scale, off[2] * scale);
    s += pad + (j == 0 ? "  CHANNELS 6 Xposition Yposition Zposition Yrotation Xrotation Zrotation\n"
                       : "  CHANNELS 3 Yrotation Xrotation Zrotation\n");
    bool leaf = true;
    for (int c = 0; c < k_n_joints; ++c) {
        if (k_g1_parents[c] == j) {
            leaf = false;
            joint_text(s, c, depth + 1, scale);
        }
    }
    if (leaf) {
        const double n = std::sqrt(off[0] * off[0] + off[1] * off[1] + off[2] * off[2]);
        const double k = n > 0 ? 0.03 / n * scale : 0;
        s += pad + "  End Site\n" + pad + "  {\n";
        appendf(s, (pad + "    OFFSET %.6f %.6f %.6f\n").c_str(), off[0] * k, off[1] * k, off[2] * k);
        s += pad + "  }\n";
    }
    s += pad + "}\n";
}

// the joints in the order the hierarchy lists them (depth first, children by index)
void order(int j, std::vector<int> & out) {
    out.push_back(j);
    for (int c = 0; c < k_n_joints; ++c) {
        if (k_g1_parents[c] == j) order(c, out);
    }
}

} // namespace

std::string bvh_write(const anim_clip & in, double scale) {
    if (!(scale > 0 && scale <= 1000)) fail(status::invalid_argument, "BVH units per metre must be in (0, 1000]");
    anim_clip clip = in;
    clip_check_normalise(clip, "bvh");
    std::string s = "HIERARCHY\n";
    joint_text(s, 0, 0, scale);
    std::vector<int> joints;
    order(0, joints);
    s += "MOTION\nFrames: " + std::to_string(clip.frames) + "\nFrame Time: 0.0333333\n";
    for (int64_t f = 0; f < clip.frames; ++f) {
        const float * r = &clip.root[size_t(f) * 3];
        appendf(s, "%.6f %.6f %.6f", r[0] * scale, r[1] * scale, r[2] * scale);
        for (int j : joints) {
            double m[9], e[3];
            quat_xyzw_to_matrix(&clip.local_xyzw[(size_t(f) * k_n_joints + size_t(j)) * 4], m);
            matrix_to_yxz(m, e);
            appendf(s, " %.6f %.6f %.6f", e[0], e[1], e[2]);
        }
        s += '\n';
    }
    return s;
}

} // namespace mb
