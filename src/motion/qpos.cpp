// MuJoCo qpos ↔ motion space, after upstream mujoco_qpos_converter (math in double;
// upstream runs float32, the difference stays below 1e-6 on well-conditioned poses)
#include "motion/qpos.h"

#include <cmath>
#include <stdexcept>
#include <string>

namespace mb {

const char * const k_g1_joint_names[k_n_joints] = {
    "pelvis_skel",              "left_hip_pitch_skel",      "left_hip_roll_skel",       "left_hip_yaw_skel",
    "left_knee_skel",           "left_ankle_pitch_skel",    "left_ankle_roll_skel",     "left_toe_base",
    "right_hip_pitch_skel",     "right_hip_roll_skel",      "right_hip_yaw_skel",       "right_knee_skel",
    "right_ankle_pitch_skel",   "right_ankle_roll_skel",    "right_toe_base",           "waist_yaw_skel",
    "waist_roll_skel",          "waist_pitch_skel",         "left_shoulder_pitch_skel", "left_shoulder_roll_skel",
    "left_shoulder_yaw_skel",   "left_elbow_skel",          "left_wrist_roll_skel",     "left_wrist_pitch_skel",
    "left_wrist_yaw_skel",      "left_hand_roll_skel",      "right_shoulder_pitch_skel", "right_shoulder_roll_skel",
    "right_shoulder_yaw_skel",  "right_elbow_skel",         "right_wrist_roll_skel",    "right_wrist_pitch_skel",
    "right_wrist_yaw_skel",     "right_hand_roll_skel",
};

const int k_g1_parents[k_n_joints] = {
    -1, 0, 1, 2, 3, 4, 5, 6, 0, 8, 9, 10, 11, 12, 13, 0, 15,
    16, 17, 18, 19, 20, 21, 22, 23, 24, 17, 26, 27, 28, 29, 30, 31, 32,
};

// joints.p of upstream out/*/skeleton (float64, motion space)
const double k_g1_neutral[k_n_joints][3] = {
    {0, 0, 0},
    {0.064452, -0.10269999999999996, -3.7115199802428826e-17},
    {0.116452, -0.13316499999999992, -5.542610814757153e-17},
    {0.116452, -0.2572849999999999, 0.025000999999999912},
    {0.11860089999999998, -0.43462499999999993, -0.05327200000000012},
    {0.11850645499999997, -0.7346349999999999, -0.05327200000000018},
    {0.11850645499999997, -0.7521929999999999, -0.05327200000000018},
    {0.11850645499999997, -0.7871929999999999, 0.0867279999999998},
    {-0.064452, -0.10269999999999996, -8.492762049172589e-18},
    {-0.116452, -0.13316499999999992, -3.711031482112053e-18},
    {-0.116452, -0.2572849999999999, 0.025000999999999968},
    {-0.11860090000000001, -0.43462499999999993, -0.05327200000000007},
    {-0.11850645500000001, -0.7346349999999999, -0.05327200000000014},
    {-0.11850645500000001, -0.7521929999999999, -0.05327200000000014},
    {-0.11850645500000001, -0.7871929999999999, 0.08672799999999986},
    {0, 0, 0},
    {-8.800737916203616e-19, 0.04400000000000006, -0.00396349999999999},
    {-8.800737916203616e-19, 0.04400000000000006, -0.00396349999999999},
    {0.10022, 0.2917800000000001, -7.199999999956796e-06},
    {0.13821999999999998, 0.2779490000000001, -7.199999999968305e-06},
    {0.14446, 0.17474900000000004, -7.199999999992605e-06},
    {0.14446, 0.09423100000000005, 0.01577579999999999},
    {0.14634791000000003, 0.08423100000000006, 0.1157758},
    {0.14634791000000003, 0.08423100000000006, 0.1537758},
    {0.14634791000000003, 0.08423100000000006, 0.1997758},
    {0.14634791000000003, 0.08423100000000006, 0.2997758},
    {-0.10021, 0.2917800000000001, -7.199999999912388e-06},
    {-0.13820999999999997, 0.2779490000000001, -7.199999999907021e-06},
    {-0.14445, 0.17474900000000004, -7.19999999992855e-06},
    {-0.14445, 0.09423100000000005, 0.015775800000000055},
    {-0.14633790999999996, 0.08423100000000006, 0.11577580000000005},
    {-0.14633790999999996, 0.08423100000000006, 0.15377580000000005},
    {-0.14633790999999996, 0.08423100000000006, 0.19977580000000006},
    {-0.14633790999999996, 0.08423100000000006, 0.2997758000000001},
};

namespace {

// motion axis a reads MuJoCo axis k_sigma[a]: motion (x, y, z) = (mj y, mj z, mj x)
constexpr int k_sigma[3]     = {1, 2, 0};
constexpr int k_sigma_inv[3] = {2, 0, 1};

// MuJoCo hinge axis → the same axis in motion space (x → z, y → x, z → y)
constexpr int k_axis_to_motion[3] = {2, 0, 1};

void mat_mul(const double * a, const double * b, double * out) {
    double r[9];
    for (int i = 0; i < 3; ++i) {
        for (int j = 0; j < 3; ++j) {
            r[i * 3 + j] = a[i * 3 + 0] * b[0 * 3 + j] + a[i * 3 + 1] * b[1 * 3 + j] + a[i * 3 + 2] * b[2 * 3 + j];
        }
    }
    for (int i = 0; i < 9; ++i) out[i] = r[i];
}

// aᵀ b
void mat_tmul(const double * a, const double * b, double * out) {
    double r[9];
    for (int i = 0; i < 3; ++i) {
        for (int j = 0; j < 3; ++j) {
            r[i * 3 + j] = a[0 * 3 + i] * b[0 * 3 + j] + a[1 * 3 + i] * b[1 * 3 + j] + a[2 * 3 + i] * b[2 * 3 + j];
        }
    }
    for (int i = 0; i < 9; ++i) out[i] = r[i];
}

void mat_vec(const double * m, const double * v, double * out) {
    double r[3];
    for (int i = 0; i < 3; ++i) r[i] = m[i * 3 + 0] * v[0] + m[i * 3 + 1] * v[1] + m[i * 3 + 2] * v[2];
    out[0] = r[0];
    out[1] = r[1];
    out[2] = r[2];
}

void set_identity(double * m) {
    for (int i = 0; i < 9; ++i) m[i] = (i % 4 == 0) ? 1.0 : 0.0;
}

// M R Mᵀ
void rot_mujoco_to_motion(const double * mj, double * motion) {
    for (int a = 0; a < 3; ++a) {
        for (int b = 0; b < 3; ++b) motion[a * 3 + b] = mj[k_sigma[a] * 3 + k_sigma[b]];
    }
}

// Mᵀ R M
void rot_motion_to_mujoco(const double * motion, double * mj) {
    for (int i = 0; i < 3; ++i) {
        for (int j = 0; j < 3; ++j) mj[i * 3 + j] = motion[k_sigma_inv[i] * 3 + k_sigma_inv[j]];
    }
}

} // namespace

void mujoco_to_motion_vec(const double * mj, double * motion) {
    double r[3] = {mj[1], mj[2], mj[0]};
    motion[0] = r[0];
    motion[1] = r[1];
    motion[2] = r[2];
}

void motion_to_mujoco_vec(const double * motion, double * mj) {
    double r[3] = {motion[2], motion[0], motion[1]};
    mj[0] = r[0];
    mj[1] = r[1];
    mj[2] = r[2];
}

void quat_to_matrix(const double * q, double * m) {
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

qpos_converter::qpos_converter(const mjcf_model & model) {
    if ((int) model.hinges.size() != k_qpos_hinges) {
        throw mb::error(mb::status::invalid_argument, "qpos converter: the MJCF model has " + std::to_string(model.hinges.size()) +
                                    " hinges, expected " + std::to_string(k_qpos_hinges));
    }
    joint_body_.fill(-1);
    joint_body_[0] = 0;
    body_parent_.fill(-1);
    for (int j = 0; j < k_n_joints; ++j) set_identity(&q2t_[j * 9]);
    for (int j = 0; j < k_n_joints; ++j) set_identity(&f2q_[j * 9]);
    body_neutral_.fill(0.0);

    for (int k = 0; k < k_qpos_hinges; ++k) {
        const mjcf_hinge & h = model.hinges[k];
        // "<name>_joint" → "<name>_skel"
        std::string name = h.joint;
        size_t      at   = name.find("_joint");
        if (at != std::string::npos) name.replace(at, 6, "_skel");
        int j = -1;
        for (int s = 0; s < k_n_joints; ++s) {
            if (name == k_g1_joint_names[s]) j = s;
        }
        if (j <= 0) throw mb::error(mb::status::invalid_argument, "qpos converter: hinge '" + h.joint + "' is not a g1skel34 joint");
        if (joint_body_[j] >= 0) throw mb::error(mb::status::invalid_argument, "qpos converter: joint '" + h.joint + "' appears twice");
        if (h.parent < 0 || h.parent > k) {
            throw mb::error(mb::status::invalid_argument, "qpos converter: hinge '" + h.joint + "' has a bad parent");
        }
        if (h.axis < 0 || h.axis > 2) throw mb::error(mb::status::invalid_argument, "qpos converter: hinge '" + h.joint + "' has a bad axis");
        hinge_joint_[k]     = j;
        joint_body_[j]      = k + 1;
        body_parent_[k + 1] = h.parent;
        axis_mj_[k]         = h.axis;
        axis_motion_[k]     = k_axis_to_motion[h.axis];

        // the MuJoCo parent must be the skeleton parent
        const int skel_parent = k_g1_parents[j];
        const int mj_parent_joint = h.parent == 0 ? 0 : hinge_joint_[h.parent - 1];
        if (skel_parent != mj_parent_joint) {
            throw mb::error(mb::status::invalid_argument, "qpos converter: hinge '" + h.joint + "' has parent body '" +
                                        (h.parent == 0 ? model.base_body : model.hinges[h.parent - 1].body) +
                                        "', the skeleton says '" + k_g1_joint_names[skel_parent] + "'");
        }
        // neutral: accumulated body pos, quats ignored
        for (int c = 0; c < 3; ++c) body_neutral_[(k + 1) * 3 + c] = body_neutral_[h.parent * 3 + c] + h.pos[c];

        if (h.has_quat) {
            double q[4] = {h.quat[0], h.quat[1], h.quat[2], h.quat[3]};
            const double n = std::sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
            if (!(n > 0) || !std::isfinite(n)) {
                throw mb::error(mb::status::invalid_argument, "qpos converter: body '" + h.body + "' has a zero quat");
            }
            for (double & v : q) v /= n;
            quat_to_matrix(q, &q2t_[j * 9]);
            double motion[9];
            rot_mujoco_to_motion(&q2t_[j * 9], motion);
            for (int r = 0; r < 3; ++r) {
                for (int c = 0; c < 3; ++c) f2q_[j * 9 + r * 3 + c] = motion[c * 3 + r];
            }
        }
    }
    // every non-virtual skeleton joint must have a hinge
    for (int j = 1; j < k_n_joints; ++j) {
        const bool is_virtual = j == 7 || j == 14 || j == 25 || j == 33;
        if (is_virtual != (joint_body_[j] < 0)) {
            throw mb::error(mb::status::invalid_argument, std::string("qpos converter: skeleton joint '") + k_g1_joint_names[j] +
                                        (is_virtual ? "' must not have a hinge" : "' has no hinge"));
        }
    }
}

void qpos_converter::qpos_to_transforms(const float * qpos, float * positions, float * rotations) const {
    // MuJoCo FK over the 30-body tree (rest = accumulated body pos)
    double g_rot[k_mj_bodies][9];
    double g_pos[k_mj_bodies][3];
    {
        const double q[4] = {qpos[3], qpos[4], qpos[5], qpos[6]};
        quat_to_matrix(q, g_rot[0]);
        g_pos[0][0] = g_pos[0][1] = g_pos[0][2] = 0.0;
    }
    for (int k = 0; k < k_qpos_hinges; ++k) {
        const int    b     = k + 1;
        const int    p     = body_parent_[b];
        const double theta = qpos[7 + k];
        double       hq[4] = {std::cos(theta / 2), 0, 0, 0};
        hq[1 + axis_mj_[k]] = std::sin(theta / 2);
        double local[9];
        quat_to_matrix(hq, local);
        mat_mul(&q2t_[hinge_joint_[k] * 9], local, local);
        double rel[3];
        for (int c = 0; c < 3; ++c) rel[c] = body_neutral_[b * 3 + c] - body_neutral_[p * 3 + c];
        double moved[3];
        mat_vec(g_rot[p], rel, moved);
        for (int c = 0; c < 3; ++c) g_pos[b][c] = g_pos[p][c] + moved[c];
        mat_mul(g_rot[p], local, g_rot[b]);
    }

    // to motion space, skeleton order; virtual joints: identity rotation, parent offset
    double out_rot[k_n_joints][9];
    double out_pos[k_n_joints][3];
    for (int j = 0; j < k_n_joints; ++j) {
        const int b = joint_body_[j];
        if (b < 0) continue;
        double p[3] = {g_pos[b][0] + qpos[0], g_pos[b][1] + qpos[1], g_pos[b][2] + qpos[2]};
        mujoco_to_motion_vec(p, out_pos[j]);
        rot_mujoco_to_motion(g_rot[b], out_rot[j]);
    }
    for (int j = 0; j < k_n_joints; ++j) {
        if (joint_body_[j] >= 0) continue;
        const int p = k_g1_parents[j];
        set_identity(out_rot[j]);
        // upstream casts joints.p to float32 before the difference
        double off[3];
        for (int c = 0; c < 3; ++c) off[c] = (double) (float) k_g1_neutral[j][c] - (double) (float) k_g1_neutral[p][c];
        double moved[3];
        mat_vec(out_rot[p], off, moved);
        for (int c = 0; c < 3; ++c) out_pos[j][c] = out_pos[p][c] + moved[c];
    }
    for (int j = 0; j < k_n_joints; ++j) {
        for (int c = 0; c < 3; ++c) positions[j * 3 + c] = (float) out_pos[j][c];
        for (int c = 0; c < 9; ++c) rotations[j * 9 + c] = (float) out_rot[j][c];
    }
}

void qpos_converter::qpos_to_transforms(const float * qpos, int64_t frames, float * positions,
                                        float * rotations) const {
    for (int64_t f = 0; f < frames; ++f) {
        qpos_to_transforms(qpos + f * k_qpos_dim, positions + f * k_n_joints * 3, rotations + f * k_n_joints * 9);
    }
}

void qpos_converter::features_to_qpos(const float * features, float * qpos, float * hinge_radius) const {
    double rot[k_n_joints * 9];
    for (int j = 0; j < k_n_joints; ++j) {
        double c6[6];
        for (int c = 0; c < 6; ++c) c6[c] = features[k_global_rot6d + j * 6 + c];
        cont6d_to_matrix(c6, &rot[j * 9]);
    }
    global_rotations_to_qpos(features, rot, qpos, hinge_radius);
}

void qpos_converter::global_rotations_to_qpos(const float * root_position, const double * rotations, float * qpos,
                                              float * hinge_radius) const {
    // local rotations (parent of the root = identity), then the body-quat offsets
    double lh[k_n_joints][9];
    for (int j = 0; j < k_n_joints; ++j) {
        const int p = k_g1_parents[j];
        double    local[9];
        if (p < 0) {
            for (int c = 0; c < 9; ++c) local[c] = rotations[j * 9 + c];
        } else {
            mat_tmul(&rotations[p * 9], &rotations[j * 9], local);
        }
        mat_mul(&f2q_[j * 9], local, lh[j]);
    }

    // root translation and rotation (from the pelvis rotation, not the heading feature)
    const double p_motion[3] = {root_position[0], root_position[1], root_position[2]};
    double       p_mj[3];
    motion_to_mujoco_vec(p_motion, p_mj);
    double r_mj[9];
    rot_motion_to_mujoco(lh[0], r_mj);
    double q[4];
    matrix_to_quat_wxyz(r_mj, q);
    for (int c = 0; c < 3; ++c) qpos[c] = (float) p_mj[c];
    for (int c = 0; c < 4; ++c) qpos[3 + c] = (float) q[c];

    // hinge angles: the rotation about the hinge's motion axis, other components dropped
    for (int k = 0; k < k_qpos_hinges; ++k) {
        const double * r = lh[hinge_joint_[k]];
        double         s = 0, c = 0;
        switch (axis_motion_[k]) {
        case 0: s = r[7]; c = r[8]; break;   // x: (R21, R22)
        case 1: s = r[2]; c = r[0]; break;   // y: (R02, R00)
        default: s = r[3]; c = r[4]; break;  // z: (R10, R11)
        }
        qpos[7 + k] = (float) std::atan2(s, c);
        if (hinge_radius) hinge_radius[k] = (float) std::hypot(s, c);
    }
}

} // namespace mb
