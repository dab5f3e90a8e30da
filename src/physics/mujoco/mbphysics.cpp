#include "physics/mujoco/mbphysics.h"

#include "format/error.h"
#include "format/regular-file.h"
#include "motion/g1.h"
#include "motion/mjcf.h"

#include <cmath>
#include <cstring>

namespace mb::physics {

namespace {

constexpr char k_magic[8] = {'M', 'B', 'S', 'P', 'H', 'Y', '0', '1'};

// MuJoCo body joint index of a G1Skeleton34 joint ("left_knee_skel" → "left_knee_joint"), -1 when none
int mujoco_joint_of(int skel) {
    std::string name = k_g1_joint_names[skel];
    const size_t p   = name.rfind("_skel");
    if (p == std::string::npos || p + 5 != name.size()) return -1;
    name = name.substr(0, p) + "_joint";
    for (int i = 0; i < k_body_joints; ++i) {
        if (name == mjcf_g1().hinges[size_t(i)].joint) return i;
    }
    return -1;
}

int skel_of(int mujoco) {
    for (int j = 0; j < k_n_joints; ++j) {
        if (mujoco_joint_of(j) == mujoco) return j;
    }
    MB_ASSERT(false, "no skeleton joint for " + mjcf_g1().hinges[size_t(mujoco)].joint);
}

} // namespace

physics_config physics_config_release() {
    physics_config c{};
    const mjcf_model & g1 = mjcf_g1();
    for (int i = 0; i < k_body_joints; ++i) {
        c.axis[size_t(i)]                                    = {0, 0, 0};
        c.axis[size_t(i)][size_t(g1.hinges[size_t(i)].axis)] = 1;
        c.rest[size_t(i)]                                    = {1, 0, 0, 0, 1, 0, 0, 0, 1};
        c.default_angle[size_t(i)]                           = k_default_angles[size_t(i)];
        c.kp[size_t(i)]                                      = k_kp[size_t(i)];
        c.kd[size_t(i)]                                      = k_kd[size_t(i)];
        c.torque_limit[size_t(i)]                            = k_torque_limit[size_t(body_actuator(i))];
        c.action_scale[size_t(i)]                            = k_action_scale[size_t(i)];
    }
    return c;
}

physics_config mbphysics_parse(const std::string & bytes, const std::string & origin) {
    auto bad = [&](size_t offset, const std::string & what) {
        fail(status::invalid_format, origin + ": " + what + " (byte " + std::to_string(offset) + ")");
    };
    if (bytes.size() < 8 || std::memcmp(bytes.data(), k_magic, 8) != 0) bad(0, "not a .mbphysics file (magic MBSPHY01)");
    if (bytes.size() != k_mbphysics_size) {
        bad(std::min(bytes.size(), k_mbphysics_size), "size " + std::to_string(bytes.size()) + " bytes, the format has exactly " +
                                                           std::to_string(k_mbphysics_size));
    }
    physics_config c{};
    std::array<bool, k_body_joints> seen{};
    for (int r = 0; r < k_body_joints; ++r) {
        const size_t base = 8 + size_t(r) * k_mbphysics_record;
        const std::string rec = "record " + std::to_string(r);
        uint32_t joint;
        std::memcpy(&joint, bytes.data() + base, 4);
        double v[17];
        std::memcpy(v, bytes.data() + base + 4, sizeof v);
        for (int k = 0; k < 17; ++k) {
            if (!std::isfinite(v[k])) bad(base + 4 + 8 * size_t(k), rec + ": value " + std::to_string(k) + " is not finite");
        }
        if (joint < 1 || joint > 33) bad(base, rec + ": joint index " + std::to_string(joint) + " is outside 1..33");
        const int i = mujoco_joint_of(int(joint));
        if (i < 0) bad(base, rec + ": joint " + std::to_string(joint) + " (" + k_g1_joint_names[joint] + ") has no hinge");
        if (seen[size_t(i)]) bad(base, rec + ": joint " + std::to_string(joint) + " appears twice");
        seen[size_t(i)] = true;
        // axis: one-hot
        int ones = 0;
        for (int k = 0; k < 3; ++k) {
            if (v[k] != 0.0 && v[k] != 1.0) bad(base + 4 + 8 * size_t(k), rec + ": axis components must be 0 or 1");
            ones += v[k] == 1.0;
        }
        if (ones != 1) bad(base + 4, rec + ": the axis is not a unit vector");
        // rest rotation: orthonormal, det +1
        const double * R = v + 3;
        for (int a = 0; a < 3; ++a) {
            for (int b = 0; b < 3; ++b) {
                double dot = 0;
                for (int k = 0; k < 3; ++k) dot += R[3 * a + k] * R[3 * b + k];
                if (std::fabs(dot - (a == b ? 1.0 : 0.0)) > 1e-6) bad(base + 28, rec + ": the rest rotation is not orthonormal");
            }
        }
        const double det = R[0] * (R[4] * R[8] - R[5] * R[7]) - R[1] * (R[3] * R[8] - R[5] * R[6]) + R[2] * (R[3] * R[7] - R[4] * R[6]);
        if (det < 0) bad(base + 28, rec + ": the rest rotation is a reflection (det " + std::to_string(det) + ")");
        const size_t f = base + 4;
        if (std::fabs(v[12]) > 6.4) bad(f + 96, rec + ": default angle " + std::to_string(v[12]) + " outside ±6.4 rad");
        if (!(v[13] > 0 && v[13] <= 10)) bad(f + 104, rec + ": action scale outside (0, 10]");
        if (!(v[14] > 0 && v[14] <= 1000)) bad(f + 112, rec + ": Kp outside (0, 1000]");
        if (!(v[15] >= 0 && v[15] <= 100)) bad(f + 120, rec + ": Kd outside [0, 100]");
        if (!(v[16] > 0 && v[16] <= 1000)) bad(f + 128, rec + ": torque limit outside (0, 1000]");
        for (int k = 0; k < 3; ++k) c.axis[size_t(i)][size_t(k)] = v[k];
        for (int k = 0; k < 9; ++k) c.rest[size_t(i)][size_t(k)] = R[k];
        c.default_angle[size_t(i)] = v[12];
        c.action_scale[size_t(i)]  = v[13];
        c.kp[size_t(i)]            = v[14];
        c.kd[size_t(i)]            = v[15];
        c.torque_limit[size_t(i)]  = v[16];
    }
    return c;   // 29 distinct hinges of 29 records: every hinge is present
}

physics_config mbphysics_read(const std::string & path) {
    return mbphysics_parse(read_regular_file(path, k_mbphysics_size + 1), path);
}

std::string mbphysics_write(const physics_config & c) {
    std::string out(k_magic, 8);
    for (int i = 0; i < k_body_joints; ++i) {
        const uint32_t joint = uint32_t(skel_of(i));
        out.append(reinterpret_cast<const char *>(&joint), 4);
        double v[17];
        for (int k = 0; k < 3; ++k) v[k] = c.axis[size_t(i)][size_t(k)];
        for (int k = 0; k < 9; ++k) v[3 + k] = c.rest[size_t(i)][size_t(k)];
        v[12] = c.default_angle[size_t(i)];
        v[13] = c.action_scale[size_t(i)];
        v[14] = c.kp[size_t(i)];
        v[15] = c.kd[size_t(i)];
        v[16] = c.torque_limit[size_t(i)];
        out.append(reinterpret_cast<const char *>(v), sizeof v);
    }
    return out;
}

} // namespace mb::physics
