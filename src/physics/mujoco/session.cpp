#include "physics/mujoco/session.h"

#include "format/error.h"
#include "motion/g1.h"
#include "motion/mjcf.h"
#include "motion/qpos.h"
#include "motion/rotation.h"

#include <algorithm>
#include <cmath>
#include <cstring>
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
        mb::quat_to_matrix(q, local);
        const int p = k_g1_parents[j];
        if (p < 0) {
            std::copy(local, local + 9, global + 9 * j);
        } else {
            mb::mat_mul(global + 9 * p, local, global + 9 * j);
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
            mb::mat_tmul(parent, g, local);   // parentᵀ · global
        }
        mb::matrix_to_quat_wxyz(local, q);
        const double s = q[0] < 0 ? -1.0 : 1.0;   // w ≥ 0
        local_xyzw[4 * j + 0] = float(s * q[1]);
        local_xyzw[4 * j + 1] = float(s * q[2]);
        local_xyzw[4 * j + 2] = float(s * q[3]);
        local_xyzw[4 * j + 3] = float(s * q[0]);
    }
}

uint64_t clip_hash(const float * data, uint64_t n, uint64_t seed) {
    // the whole clip is hashed every tick (a caller may change it in place): a word at a time
    uint64_t h    = seed ^ (n * 0x9e3779b97f4a7c15ull);
    auto     step = [&h](uint64_t w) {
        h ^= w;
        h *= 0x100000001b3ull | (1ull << 63);
        h ^= h >> 29;
    };
    uint64_t i = 0;
    for (; i + 2 <= n; i += 2) {
        uint64_t w;
        std::memcpy(&w, data + i, sizeof w);
        step(w);
    }
    if (i < n) {
        uint32_t w;
        std::memcpy(&w, data + i, sizeof w);
        step(w);
    }
    return h;
}

session::session(const std::string & scene_xml, const physics_config & config, policy * pol)
    : robot_(std::make_unique<robot>(scene_compile(scene_xml, {}))), config_(config), pol_(pol) {
    if (pol_) timeline_init(timeline_, k_ring_frames);
    robot_->set_gains(config_.kp.data(), config_.kd.data(), config_.torque_limit.data());
    full_.resize(size_t(robot_->nq()));
    pre_.reserve(65);
    reset();
}

void session::reset() {
    robot_->reset(config_.default_angle.data());
    started_ = fallen_ = false;
    if (pol_) timeline_reset(timeline_);
    history_reset(history_);
    idle_readapt_reset(idle_);
    has_clip_ = false;
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
    const bool clip = pol_ && !override_on_ && frames >= 1 && frames <= k_max_ref_frames;
    step(qpos, frames, source_time, clip ? clip_hash(qpos, frames * k_qpos36, frames) : 0);
}

void session::step(const float * qpos, uint64_t frames, double source_time, uint64_t clip_id) {
    // a failed tick leaves the controller as it was (the robot restores itself)
    const controller_mark before = controller_save();
    try {
        if (prepare(qpos, frames, source_time, clip_id)) {
            pol_->encode(enc_.data(), 1, tokens_.data());
            with_tokens(tokens_.data());
            float actions[k_body_joints];
            pol_->decode(dec_.data(), 1, actions);
            simulate(actions);
        } else {
            simulate(nullptr);
        }
    } catch (...) {
        controller_restore(before);
        throw;
    }
    commit();
}

session::controller_mark session::controller_save() const {
    return {history_, timeline_save(timeline_), has_clip_, clip_id_};
}

void session::controller_restore(const controller_mark & m) {
    history_ = m.hist;
    timeline_restore(timeline_, m.line);
    has_clip_ = m.has_clip;
    clip_id_  = m.clip_id;
}

bool session::prepare(const float * qpos, uint64_t frames, double source_time, uint64_t clip_id) {
    if (!started_) fail(status::invalid_argument, "the session has not started (mb_physics_start first)");
    if (frames < 1 || frames > k_max_ref_frames) {
        fail(status::invalid_argument, "frames " + std::to_string(frames) + " is outside 1.." + std::to_string(k_max_ref_frames));
    }
    if (!std::isfinite(source_time) || source_time < 0) fail(status::invalid_argument, "source_time must be finite and >= 0");
    if (!override_on_ && !pol_) {
        fail(status::not_implemented, "this session has no SONIC handle: set an action override (mb_physics_set_action_override)");
    }
    const bool new_clip = !override_on_ && (!has_clip_ || clip_id != clip_id_);
    if (new_clip) {
        // the whole clip: the controller's timeline resamples it
        const std::string problem = check_qpos30(qpos, frames * k_qpos36, k_ring_frames);
        if (!problem.empty()) fail(status::invalid_argument, "reference clip: " + problem);
    }
    check_qpos_clip(qpos, frames);

    // the reference at source_time (the reference_xyz output): linear in position and hinges,
    // normalised lerp of the root quaternion; past the end the last frame holds
    const double u = source_time * k_reference_fps;
    if (u >= double(frames - 1)) {
        std::copy(qpos + (frames - 1) * k_qpos36, qpos + frames * k_qpos36, ref_);
    } else {
        const uint64_t i   = uint64_t(u);
        const double   a   = u - double(i);
        const float *  q0  = qpos + i * k_qpos36;
        const float *  q1  = q0 + k_qpos36;
        double         dot = 0;
        for (int k = 3; k < 7; ++k) dot += double(q0[k]) * q1[k];
        const double s = dot < 0 ? -1.0 : 1.0;
        for (int k = 0; k < k_qpos36; ++k) {
            const double b = (k >= 3 && k < 7) ? s * q1[k] : q1[k];
            ref_[k]        = float((1 - a) * q0[k] + a * b);
        }
        const double n = std::sqrt(double(ref_[3]) * ref_[3] + double(ref_[4]) * ref_[4] + double(ref_[5]) * ref_[5] + double(ref_[6]) * ref_[6]);
        for (int k = 3; k < 7; ++k) ref_[k] = float(ref_[k] / n);
    }
    policy_tick_ = !override_on_;
    if (!policy_tick_) return false;

    // the controller, as gear_sonic_deploy's tick: a new clip replaces the reference from the current
    // frame; the state is logged (with the previous action), the heading updated, the encoder
    // observation built
    if (new_clip) {
        const std::string problem = timeline_replace(timeline_, qpos, frames * k_qpos36, int64_t(frames),
                                                     timeline_.length > 0 ? timeline_.current : 0);
        if (!problem.empty()) fail(status::invalid_argument, "reference clip: " + problem);
        has_clip_ = true;
        clip_id_  = clip_id;
    }
    robot_state & st = state_;
    robot_state_from_scene(robot_->qpos(), robot_->qvel(), st);
    if (flags_ & k_control_velocity_stop) {
        // before the state is logged, as GatherRobotStateToLogger returns
        if (const int j = velocity_stop_joint(st.dq); j >= 0) {
            fail(status::compute_failed, "safety stop: Isaac joint " + std::to_string(j) + " moves at " +
                                             std::to_string(st.dq[k_mujoco_of_isaac[j]]) + " rad/s (> 35, the deploy's limit)");
        }
    }
    history_push(history_, st);
    const quat base = {st.base_quat[0], st.base_quat[1], st.base_quat[2], st.base_quat[3]};
    timeline_update_heading(timeline_, base);
    build_encoder_obs(timeline_, base, enc_.data());
    return true;
}

void session::with_tokens(const float * tokens) {
    std::copy(tokens, tokens + k_tokens, tokens_.begin());
    build_decoder_obs(history_, tokens, dec_.data());
}

void session::simulate(const float * actions) {
    if (actions) {
        for (int i = 0; i < k_body_joints; ++i) {
            if (!std::isfinite(actions[i])) fail(status::compute_failed, "SONIC action " + std::to_string(i) + " is not finite");
        }
        float t[k_body_joints];
        action_to_targets(actions, t);
        for (int i = 0; i < k_body_joints; ++i) targets_[i] = t[i];
        std::copy(actions, actions + k_body_joints, actions_.begin());
    } else {
        std::copy(override_.begin(), override_.end(), targets_);
    }
    simulated_policy_ = actions != nullptr;

    // pre-controller state (trace 4): q29, dq29, base w x y z, base angular velocity (body frame)
    pre_.clear();
    const double * q  = robot_->qpos();
    const double * dq = robot_->qvel();
    for (int i = 0; i < k_body_joints; ++i) pre_.push_back(q[robot_->hinge_address(i)]);
    for (int i = 0; i < k_body_joints; ++i) pre_.push_back(dq[robot_->hinge_address(i) - 1]);
    for (int k = 3; k < 7; ++k) pre_.push_back(q[k]);
    for (int k = 3; k < 6; ++k) pre_.push_back(dq[k]);

    // 4 substeps; on failure the robot is back at the tick's start
    robot_->tick(targets_, &record_);
}

void session::commit() {
    const bool policy = simulated_policy_;
    if (policy) {
        history_set_action(history_, actions_.data());
        bool       replaced = false;
        const bool held     = timeline_advance(timeline_, &replaced);
        if (replaced) idle_readapt_reset(idle_);
        // CurrentFrameAdvancement: the held frame re-adapts while the planner idles, with the LowState
        // read at the tick's start
        if (held && (flags_ & k_control_idle_readapt)) {
            idle_readapt_step(idle_, timeline_frame_mut(timeline_, timeline_.current), state_.q);
        }
    }

    // outputs: nothing below can fail
    if (policy) {
        trace_[0].assign(enc_.begin(), enc_.end());
        trace_[1].assign(dec_.begin(), dec_.end());
        trace_[2].assign(actions_.begin(), actions_.end());
    } else {
        for (int f = 0; f < 3; ++f) trace_[size_t(f)].clear();
    }
    trace_[3].assign(targets_, targets_ + k_body_joints);
    trace_[4].assign(pre_.begin(), pre_.end());
    trace_[5].clear();
    for (int s = 0; s < k_substeps; ++s) {
        const size_t o = size_t(s * k_body_joints);
        trace_[5].insert(trace_[5].end(), record_.q.begin() + o, record_.q.begin() + o + k_body_joints);
        trace_[5].insert(trace_[5].end(), record_.dq.begin() + o, record_.dq.begin() + o + k_body_joints);
        trace_[5].insert(trace_[5].end(), record_.torque.begin() + o, record_.torque.begin() + o + k_body_joints);
    }
    double xyz[k_bodies * 3], quat_wxyz[k_bodies * 4];
    robot_->bodies(xyz, quat_wxyz);
    for (int b = 0; b < k_bodies; ++b) to_motion(xyz + 3 * b, actual_.data() + 3 * b);
    full_qpos(ref_, full_.data());
    robot_->kinematics(full_.data(), xyz);
    for (int b = 0; b < k_bodies; ++b) to_motion(xyz + 3 * b, reference_.data() + 3 * b);
    fall_update(fallen_, robot_->pelvis_height());
}

void session::save(saved & s) const {
    robot_->save(s.state);
    s.fallen     = fallen_;
    s.controller = controller_save();
}

void session::restore(const saved & s) {
    robot_->restore(s.state);
    fallen_ = s.fallen;
    controller_restore(s.controller);
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
        mb::matrix_to_quat_wxyz(m, q);
        const double s = q[0] < 0 ? -1.0 : 1.0;
        to_motion(xyz.data() + 3 * i, out + 7 * i);
        out[7 * i + 3] = float(s * q[1]);
        out[7 * i + 4] = float(s * q[2]);
        out[7 * i + 5] = float(s * q[3]);
        out[7 * i + 6] = float(s * q[0]);
    }
}

} // namespace mb::physics
