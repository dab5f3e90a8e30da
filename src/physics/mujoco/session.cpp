#include "physics/mujoco/session.h"

#include "format/error.h"
#include "motion/g1.h"
#include "motion/mjcf.h"
#include "motion/qpos.h"
#include "motion/rotation.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace mb::physics {

namespace {

constexpr double k_quat_tol = 0.01;

const qpos_converter & converter() {
    static const qpos_converter c;
    return c;
}

// motion (x, y, z) = MuJoCo (y, z, x)
void to_motion(const double * mj, float * motion) {
    motion[0] = float(mj[1]);
    motion[1] = float(mj[2]);
    motion[2] = float(mj[0]);
}

} // namespace

void check_qpos_clip(const float * qpos, uint64_t frames) {
    for (uint64_t f = 0; f < frames; ++f) {
        const float * q = qpos + f * k_qpos36;
        for (int c = 0; c < k_qpos36; ++c) {
            if (!std::isfinite(q[c]) || std::fabs(q[c]) > 1e6f) {
                fail(status::invalid_argument, "qpos[" + std::to_string(f) + "][" + std::to_string(c) + "] is not finite or exceeds 1e6");
            }
        }
        const double n = std::sqrt(double(q[3]) * q[3] + double(q[4]) * q[4] + double(q[5]) * q[5] + double(q[6]) * q[6]);
        if (std::fabs(n - 1.0) > k_quat_tol) {
            fail(status::invalid_argument, "the root quaternion of qpos frame " + std::to_string(f) + " has norm " + std::to_string(n) +
                                               " (needs 1 +- 0.01)");
        }
    }
}

void pose_to_qpos(const float * root_xyz, const float * local_xyzw, float * qpos36) {
    double global[k_n_joints * 9];
    for (int j = 0; j < k_n_joints; ++j) {
        const float * l    = local_xyzw + 4 * j;
        const double  q[4] = {l[3], l[0], l[1], l[2]};
        double        local[9];
        quat_to_matrix(q, local);
        const int p = k_g1_parents[j];
        if (p < 0) {
            std::copy(local, local + 9, global + 9 * j);
        } else {
            mat_mul(global + 9 * p, local, global + 9 * j);
        }
    }
    converter().global_rotations_to_qpos(root_xyz, global, qpos36);
}

void qpos_to_pose(const float * qpos36, float * root_xyz, float * local_xyzw) {
    float positions[k_n_joints * 3], rotations[k_n_joints * 9];
    converter().qpos_to_transforms(qpos36, positions, rotations);
    std::copy(positions, positions + 3, root_xyz);
    for (int j = 0; j < k_n_joints; ++j) {
        double g[9], local[9], q[4];
        for (int k = 0; k < 9; ++k) g[k] = rotations[9 * j + k];
        const int p = k_g1_parents[j];
        if (p < 0) {
            std::copy(g, g + 9, local);
        } else {
            double parent[9];
            for (int k = 0; k < 9; ++k) parent[k] = rotations[9 * p + k];
            mat_tmul(parent, g, local);   // parentᵀ · global
        }
        matrix_to_quat_wxyz(local, q);
        const double s = q[0] < 0 ? -1.0 : 1.0;   // w ≥ 0
        local_xyzw[4 * j + 0] = float(s * q[1]);
        local_xyzw[4 * j + 1] = float(s * q[2]);
        local_xyzw[4 * j + 2] = float(s * q[3]);
        local_xyzw[4 * j + 3] = float(s * q[0]);
    }
}

session::session(const std::string & scene_xml, const physics_config & config)
    : robot_(std::make_unique<robot>(scene_compile(scene_xml, {}))), config_(config) {
    const mjcf_model & g1 = mjcf_g1();
    for (int i = 0; i < k_body_joints; ++i) {
        MB_ASSERT(g1.hinges[size_t(i)].joint == k_body_joint_names[i], "the qpos hinge order differs from the scene's");
    }
    robot_->set_gains(config_.kp.data(), config_.kd.data(), config_.torque_limit.data());
    full_.resize(size_t(robot_->nq()));
    reset();
}

void session::reset() {
    robot_->reset(config_.default_angle.data());
    started_ = fallen_ = false;
    for (auto & t : trace_) t.clear();
    double xyz[k_bodies * 3], quat[k_bodies * 4];
    robot_->bodies(xyz, quat);
    for (int b = 0; b < k_bodies; ++b) to_motion(xyz + 3 * b, actual_.data() + 3 * b);
    reference_ = actual_;
}

void session::full_qpos(const float * q36, double * full) const {
    std::fill(full, full + robot_->nq(), 0.0);
    for (int k = 0; k < k_qpos_hinge0; ++k) full[k] = q36[k];
    for (int i = 0; i < k_body_joints; ++i) full[robot_->hinge_address(i)] = q36[k_qpos_hinge0 + i];
}

void session::start(const float * qpos36) {
    if (started_) fail(status::invalid_argument, "the session has started already (mb_physics_reset first)");
    check_qpos_clip(qpos36, 1);
    full_qpos(qpos36, full_.data());
    robot_->set_state(full_.data(), nullptr);
    started_ = true;
    double xyz[k_bodies * 3], quat[k_bodies * 4];
    robot_->bodies(xyz, quat);
    for (int b = 0; b < k_bodies; ++b) to_motion(xyz + 3 * b, actual_.data() + 3 * b);
    reference_ = actual_;
}

void session::set_override(const double * targets) {
    if (!targets) {
        override_on_ = false;
        return;
    }
    for (int i = 0; i < k_body_joints; ++i) {
        if (!std::isfinite(targets[i]) || std::fabs(targets[i]) > 6.4) {
            fail(status::invalid_argument, "override target " + std::to_string(i) + " is not finite or exceeds 6.4 rad");
        }
    }
    std::copy(targets, targets + k_body_joints, override_.begin());
    override_on_ = true;
}

void session::step(const float * qpos, uint64_t frames, double source_time) {
    if (!started_) fail(status::invalid_argument, "the session has not started (mb_physics_start first)");
    if (frames < 1 || frames > k_max_ref_frames) {
        fail(status::invalid_argument, "frames " + std::to_string(frames) + " is outside 1.." + std::to_string(k_max_ref_frames));
    }
    if (!std::isfinite(source_time) || source_time < 0) fail(status::invalid_argument, "source_time must be finite and >= 0");
    check_qpos_clip(qpos, frames);
    if (!override_on_) {
        fail(status::not_implemented, "the SONIC controller (observation builder, src/physics) is not in this build yet: "
                                      "set an action override (mb_physics_set_action_override)");
    }

    // the reference at source_time: linear in position and hinges, normalised lerp of the root
    // quaternion; past the end the last frame holds
    float        ref[k_qpos36];
    const double u = source_time * k_reference_fps;
    if (u >= double(frames - 1)) {
        std::copy(qpos + (frames - 1) * k_qpos36, qpos + frames * k_qpos36, ref);
    } else {
        const uint64_t i  = uint64_t(u);
        const double   a  = u - double(i);
        const float *  q0 = qpos + i * k_qpos36;
        const float *  q1 = q0 + k_qpos36;
        double         dot = 0;
        for (int k = 3; k < 7; ++k) dot += double(q0[k]) * q1[k];
        const double s = dot < 0 ? -1.0 : 1.0;
        for (int k = 0; k < k_qpos36; ++k) {
            const double b = (k >= 3 && k < 7) ? s * q1[k] : q1[k];
            ref[k]         = float((1 - a) * q0[k] + a * b);
        }
        const double n = std::sqrt(double(ref[3]) * ref[3] + double(ref[4]) * ref[4] + double(ref[5]) * ref[5] + double(ref[6]) * ref[6]);
        for (int k = 3; k < 7; ++k) ref[k] = float(ref[k] / n);
    }

    // pre-controller state (trace 4): q29, dq29, base w x y z, base angular velocity (body frame)
    std::vector<double> pre;
    pre.reserve(65);
    const double * q  = robot_->qpos();
    const double * dq = robot_->qvel();
    for (int i = 0; i < k_body_joints; ++i) pre.push_back(q[robot_->hinge_address(i)]);
    for (int i = 0; i < k_body_joints; ++i) pre.push_back(dq[robot_->hinge_address(i) - 1]);
    for (int k = 3; k < 7; ++k) pre.push_back(q[k]);
    for (int k = 3; k < 6; ++k) pre.push_back(dq[k]);

    // control, then 4 substeps
    tick_record record;
    robot_->tick(override_.data(), &record);

    // outputs: nothing above can fail now
    for (int f = 0; f < 3; ++f) trace_[size_t(f)].clear();   // policy fields: not run
    trace_[3].assign(override_.begin(), override_.end());
    trace_[4] = std::move(pre);
    trace_[5].clear();
    for (int s = 0; s < k_substeps; ++s) {
        const size_t o = size_t(s * k_body_joints);
        trace_[5].insert(trace_[5].end(), record.q.begin() + o, record.q.begin() + o + k_body_joints);
        trace_[5].insert(trace_[5].end(), record.dq.begin() + o, record.dq.begin() + o + k_body_joints);
        trace_[5].insert(trace_[5].end(), record.torque.begin() + o, record.torque.begin() + o + k_body_joints);
    }
    double xyz[k_bodies * 3], quat[k_bodies * 4];
    robot_->bodies(xyz, quat);
    for (int b = 0; b < k_bodies; ++b) to_motion(xyz + 3 * b, actual_.data() + 3 * b);
    full_qpos(ref, full_.data());
    robot_->kinematics(full_.data(), xyz);
    for (int b = 0; b < k_bodies; ++b) to_motion(xyz + 3 * b, reference_.data() + 3 * b);
    if (robot_->pelvis_height() < k_fall_height) fallen_ = true;
}

void session::save(saved & s) const {
    robot_->save(s.state);
    s.fallen = fallen_;
}

void session::restore(const saved & s) {
    robot_->restore(s.state);
    fallen_ = s.fallen;
}

void session::bodies(float * out) const {
    double xyz[k_bodies * 3], quat[k_bodies * 4];
    robot_->bodies(xyz, quat);
    for (int b = 0; b < k_bodies; ++b) to_motion(xyz + 3 * b, out + 3 * b);
}

void session::qpos36(float * out) const {
    const double * q = robot_->qpos();
    for (int k = 0; k < k_qpos_hinge0; ++k) out[k] = float(q[k]);
    for (int i = 0; i < k_body_joints; ++i) out[k_qpos_hinge0 + i] = float(q[robot_->hinge_address(i)]);
}

void session::pose(float * root_xyz, float * local_xyzw) const {
    float q[k_qpos36];
    qpos36(q);
    qpos_to_pose(q, root_xyz, local_xyzw);
}

void session::collision_transforms(float * out) const {
    const size_t        n = scene_collision(model()).size();
    std::vector<double> xyz(n * 3), rot(n * 9);
    robot_->collision_poses(xyz.data(), rot.data());
    // M maps MuJoCo to motion axes: rows (0 1 0), (0 0 1), (1 0 0)
    for (size_t i = 0; i < n; ++i) {
        const double * r = rot.data() + 9 * i;
        const double   m[9] = {r[3], r[4], r[5], r[6], r[7], r[8], r[0], r[1], r[2]};
        double         q[4];
        matrix_to_quat_wxyz(m, q);
        const double s = q[0] < 0 ? -1.0 : 1.0;
        to_motion(xyz.data() + 3 * i, out + 7 * i);
        out[7 * i + 3] = float(s * q[1]);
        out[7 * i + 4] = float(s * q[2]);
        out[7 * i + 5] = float(s * q[3]);
        out[7 * i + 6] = float(s * q[0]);
    }
}

} // namespace mb::physics
