// MuJoCo qpos ↔ motion space, after upstream mujoco_qpos_converter (math in double;
// upstream runs float32, the difference stays below 1e-6 on well-conditioned poses)
#include "motion/qpos.h"

#include "format/error.h"
#include "motion/rotation.h"

#include <cmath>
#include <string>

namespace mb {

namespace {

// motion axis a reads MuJoCo axis k_sigma[a]: motion (x, y, z) = (mj y, mj z, mj x)
constexpr int k_sigma[3]     = {1, 2, 0};
constexpr int k_sigma_inv[3] = {2, 0, 1};

// MuJoCo hinge axis → the same axis in motion space (x → z, y → x, z → y)
constexpr int k_axis_to_motion[3] = {2, 0, 1};


// Mᵀ R M
void rot_motion_to_mujoco(const double * motion, double * mj) {
    for (int i = 0; i < 3; ++i) {
        for (int j = 0; j < 3; ++j) mj[i * 3 + j] = motion[k_sigma_inv[i] * 3 + k_sigma_inv[j]];
    }
}

} // namespace

void rot_mujoco_to_motion(const double * mj, double * motion) {
    for (int a = 0; a < 3; ++a) {
        for (int b = 0; b < 3; ++b) motion[a * 3 + b] = mj[k_sigma[a] * 3 + k_sigma[b]];
    }
}

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


qpos_converter::qpos_converter(const mjcf_model & model) {
    if ((int) model.hinges.size() != k_qpos_hinges) {
        throw mb::error(mb::status::invalid_argument, "qpos converter: the MJCF model has " + std::to_string(model.hinges.size()) +
                                    " hinges, expected " + std::to_string(k_qpos_hinges));
    }
    joint_body_.fill(-1);
    joint_body_[0] = 0;
    body_parent_.fill(-1);
    for (int j = 0; j < k_n_joints; ++j) mat_identity(&q2t_[j * 9]);
    for (int j = 0; j < k_n_joints; ++j) mat_identity(&f2q_[j * 9]);
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
        const bool is_virtual = g1_is_virtual(j);
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
        mat_identity(out_rot[j]);
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
        if (joint_body_[j] < 0) continue;     // virtual: no hinge reads it (see below)
        double c6[6];
        for (int c = 0; c < 6; ++c) c6[c] = features[k_global_rot6d + j * 6 + c];
        cont6d_to_matrix(c6, &rot[j * 9]);
    }
    global_rotations_to_qpos(features, rot, qpos, hinge_radius);
}

void qpos_converter::global_rotations_to_qpos(const float * root_position, const double * rotations, float * qpos,
                                              float * hinge_radius) const {
    // local rotations (parent of the root = identity), then the body-quat offsets
    // virtual joints (no hinge) are skipped: the constructor makes every hinge's parent the root
    // or another hinge joint, so nothing below reads them (4 of 34 joints, ~10 % of a frame)
    double lh[k_n_joints][9];
    for (int j = 0; j < k_n_joints; ++j) {
        if (joint_body_[j] < 0) continue;
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
