// the upstream demo agent, one replan at a time (spec §7.4; full_agent.py
// generate_new_frames with the demo's settings: force_canonicalization, target and
// source root realignment, seam blend, speed scale [1, 1], argmax, 1 step)
#include "agent/agent.h"

#include "format/error.h"
#include "motion/rotation.h"

#include <cmath>
#include <numbers>

namespace mb {

namespace {

constexpr double k_pi    = std::numbers::pi;
constexpr double k_ln2   = 0.69314718056;
constexpr double k_eps   = 1e-5;
constexpr double k_fps   = 30.0;
constexpr double k_pos_halflife     = 0.8;    // s
constexpr double k_heading_halflife = 0.17;   // s
constexpr int    k_j     = k_n_joints;
constexpr float  k_max_direction    = 1e6f;   // |component| of a movement or facing direction

double neg_exp(double x) {
    return 1.0 / (1.0 + x + 0.48 * x * x + 0.235 * x * x * x);
}

// rotates (rot ← R·rot, pos ← R·pos) one frame of 34 joints in place
void rotate_frame(const double * r, float * pos, float * rot) {
    for (int j = 0; j < k_j; ++j) {
        double p[3] = {pos[j * 3], pos[j * 3 + 1], pos[j * 3 + 2]};
        mat_vec(r, p, p);
        double g[9];
        for (int i = 0; i < 9; ++i) g[i] = rot[j * 9 + i];
        mat_mul(r, g, g);
        for (int i = 0; i < 3; ++i) pos[j * 3 + i] = (float) p[i];
        for (int i = 0; i < 9; ++i) rot[j * 9 + i] = (float) g[i];
    }
}

// 6D of a row-major rotation: column 0 then column 1
void put_6d(const float * r, float * out) {
    out[0] = r[0];
    out[1] = r[3];
    out[2] = r[6];
    out[3] = r[1];
    out[4] = r[4];
    out[5] = r[7];
}

// yaw about MuJoCo z of a qpos quaternion (w first): atan2(R10, R00), NaN → 0
double qpos_yaw(const float * q) {
    const double qd[4] = {q[0], q[1], q[2], q[3]};
    double       r[9];
    quat_to_matrix(qd, r);
    const double a = std::atan2(r[3], r[0]);
    return std::isnan(a) ? 0.0 : a;
}

// one qpos frame turned about MuJoCo z: root position r·(p − before) and quaternion of r·R(q)
// (pytorch3d branch rule); hinges copied. The position is returned before any offset is added
void turn_qpos(const double * r, const float * q, const double * before, double * pos, float * out) {
    double p[3] = {q[0] - before[0], q[1] - before[1], q[2] - before[2]};
    mat_vec(r, p, pos);
    const double qd[4] = {q[3], q[4], q[5], q[6]};
    double       m[9];
    quat_to_matrix(qd, m);
    mat_mul(r, m, m);
    double qr[4];
    matrix_to_quat_wxyz(m, qr);
    for (int i = 0; i < 4; ++i) out[3 + i] = (float) qr[i];
    for (int i = k_qpos_root; i < k_qpos_dim; ++i) out[i] = q[i];
}

// predict input rows of one frame: global root [5], local root y slot, pose [303]
void pose_row(const float * pos, const float * rot, bool subtract_root_xz, float * pose) {
    for (int j = 1; j < k_j; ++j) {
        pose[(j - 1) * 3 + 0] = subtract_root_xz ? pos[j * 3 + 0] - pos[0] : pos[j * 3 + 0];
        pose[(j - 1) * 3 + 1] = pos[j * 3 + 1];
        pose[(j - 1) * 3 + 2] = subtract_root_xz ? pos[j * 3 + 2] - pos[2] : pos[j * 3 + 2];
    }
    for (int j = 0; j < k_j; ++j) put_6d(&rot[j * 9], &pose[(k_j - 1) * 3 + j * 6]);
}

// (checks) everything the command and the context bring in; nothing from a caller reaches the maths
// unchecked. Directions are directions: |component| <= 1e6 (a huge one would overflow once squared)
void check_inputs(const float * context, const agent_command & cmd) {
    if (cmd.style == nullptr) throw mb::error(mb::status::invalid_argument, "agent: the command has no style");
    if ((cmd.sidestep_left == nullptr) != (cmd.sidestep_right == nullptr)) {
        throw mb::error(mb::status::invalid_argument, "agent: side-step styles come in pairs (left and right)");
    }
    for (int i = 0; i < 3; ++i) {
        if (!std::isfinite(cmd.movement[i]) || !std::isfinite(cmd.facing[i])) {
            throw mb::error(mb::status::invalid_argument, "agent: movement and facing must be finite");
        }
        if (std::fabs(cmd.movement[i]) > k_max_direction || std::fabs(cmd.facing[i]) > k_max_direction) {
            throw mb::error(mb::status::invalid_argument, "agent: movement and facing components must be within 1e6");
        }
    }
    if (cmd.has_target && (!std::isfinite(cmd.target[0]) || !std::isfinite(cmd.target[1]) ||
                           !std::isfinite(cmd.target[2]) || !std::isfinite(cmd.target_heading))) {
        throw mb::error(mb::status::invalid_argument, "agent: the world target must be finite");
    }
    if (!std::isfinite(cmd.target_speed) || cmd.target_speed < -1.0f) {
        throw mb::error(mb::status::invalid_argument, "agent: target speed must be finite and >= -1");
    }
    for (int i = 0; i < k_agent_context * k_qpos_dim; ++i) {
        if (!std::isfinite(context[i])) throw mb::error(mb::status::invalid_argument, "agent: context qpos is not finite");
    }
}

// (a) canonicalise the context: frame 0 at the origin (z kept), yaw 0; the command's motion-space
// vectors become MuJoCo here, the one place they are converted
void canonicalise(const float * context, const agent_command & cmd, agent_trace & t, double * rzt) {
    for (int i = 0; i < k_agent_context * k_qpos_dim; ++i) t.context_raw[i] = context[i];
    t.yaw0  = qpos_yaw(&context[3]);
    t.p0[0] = context[0];
    t.p0[1] = context[1];
    t.p0[2] = 0;
    double rz[9];
    rot_z(t.yaw0, rz);
    mat_transpose(rz, rzt);
    for (int f = 0; f < k_agent_context; ++f) {
        float * out = &t.context_canon[f * k_qpos_dim];
        double  p[3];
        turn_qpos(rzt, &context[f * k_qpos_dim], t.p0, p, out);
        for (int i = 0; i < 3; ++i) out[i] = (float) p[i];
    }
    // ground-plane directions (the vertical is ignored); they go through float32 as upstream's .float() does
    const double mv_motion[3] = {cmd.movement[0], 0, cmd.movement[2]};
    const double fc_motion[3] = {cmd.facing[0], 0, cmd.facing[2]};
    double       mv[3], fc[3];
    motion_to_mujoco_vec(mv_motion, mv);
    motion_to_mujoco_vec(fc_motion, fc);
    mat_vec(rzt, mv, t.movement_canon);
    mat_vec(rzt, fc, t.facing_canon);
}

// a motion-space ground point (x, z) of the world → canonical motion (x, z)
void world_to_canonical_xz(const agent_trace & t, const double * rzt, const float * motion, double * out) {
    const double m[3] = {motion[0], motion[1], motion[2]};
    double       mj[3];
    motion_to_mujoco_vec(m, mj);
    double p[3] = {mj[0] - t.p0[0], mj[1] - t.p0[1], 0};
    mat_vec(rzt, p, p);
    out[0] = p[1];   // canonical MuJoCo (x, y) → motion (x, z) = (y, x)
    out[1] = p[0];
}

// spring times: context frames 0..3 and target frames 1 s later
void spring_times(float * dts) {
    for (int i = 0; i < 4; ++i) {
        dts[i]     = (float) i * (1.0f / 30.0f);
        dts[4 + i] = 1.0f + (float) i * (1.0f / 30.0f);
    }
}

// (c) the position and heading springs from the canonical context transforms; returns the
// ground-plane travel direction (motion x, z) the remap looks at
void springs(const agent_command & cmd, const double * rzt, agent_trace & t, double * dir) {
    const float * P = t.context_pos.data();
    const float * G = t.context_rot.data();
    float         dts[8];
    spring_times(dts);

    // position spring
    const double pos0[2] = {P[0], P[2]};
    const double vel0[2] = {k_fps * ((double) P[k_j * 3 + 0] - P[0]), k_fps * ((double) P[k_j * 3 + 2] - P[2])};
    double dist;
    if (cmd.idle) {
        dist = std::sqrt(vel0[0] * vel0[0] + vel0[1] * vel0[1]) / 2.0;
    } else {
        // upstream's avg_root_vel is twice the configured speed (the spring covers about half)
        const double speed = cmd.target_speed >= 0 ? cmd.target_speed : cmd.style->speed;
        dist = 2.0 * speed;
    }
    if (!(dist > 0.1)) dist = 0;
    dir[0] = t.movement_canon[1];   // MuJoCo (y, x) = motion (x, z)
    dir[1] = t.movement_canon[0];
    const double len = std::sqrt(dir[0] * dir[0] + dir[1] * dir[1]);
    if (!(len > 1e-5)) {
        dir[0] = t.facing_canon[1] * 0.1;
        dir[1] = t.facing_canon[0] * 0.1;
    } else if (std::fabs(len - 1.0) > 1e-6) {
        // upstream's controllers only ever send unit directions: a longer one does not move farther
        // (one already unit to float32 rounding is left as it is, so plans match upstream's bit for bit)
        dir[0] /= len;
        dir[1] /= len;
    }
    double target[2] = {pos0[0] + dist * dir[0], pos0[1] + dist * dir[1]};
    if (cmd.has_target) world_to_canonical_xz(t, rzt, cmd.target, target);
    {
        const double y = (4.0 * k_ln2) / (k_pos_halflife + k_eps) / 2.0;
        for (int c = 0; c < 2; ++c) {
            const double j0 = pos0[c] - target[c];
            const double j1 = vel0[c] + j0 * y;
            for (int i = 0; i < 4; ++i) {
                t.start_pos[i][c]  = (j0 + j1 * dts[i]) * neg_exp(y * dts[i]) + target[c];
                t.target_pos[i][c] = (j0 + j1 * dts[4 + i]) * neg_exp(y * dts[4 + i]) + target[c];
            }
        }
        if (cmd.idle) {
            for (int i = 1; i < 4; ++i) {
                t.target_pos[i][0] = t.target_pos[0][0];
                t.target_pos[i][1] = t.target_pos[0][1];
            }
        }
    }

    // heading spring
    const double h0   = y_heading(&G[0]);
    const double h1   = y_heading(&G[k_j * 9]);
    const double hvel = wrap_pi(h1 - h0) * k_fps;
    double       ht   = std::atan2(t.facing_canon[1], t.facing_canon[0]);
    if (cmd.has_target) ht = wrap_pi((double) cmd.target_heading - t.yaw0);
    if (std::isnan(ht)) ht = 0;
    if (h0 - ht > k_pi) ht += 2 * k_pi;
    if (h0 - ht < -k_pi) ht -= 2 * k_pi;
    const double y  = (4.0 * k_ln2) / (k_heading_halflife + k_eps) / 2.0;
    const double j0 = h0 - ht;
    const double j1 = hvel + j0 * y;
    for (int i = 0; i < 4; ++i) {
        t.start_heading[i]  = (j0 + j1 * dts[i]) * neg_exp(y * dts[i]) + ht;
        t.target_heading[i] = (j0 + j1 * dts[4 + i]) * neg_exp(y * dts[4 + i]) + ht;
    }
}

// blend-space remap: walking sideways takes the targets from the side-step styles
const style_asset * remap(const agent_command & cmd, const double * dir, const agent_trace & t) {
    if (cmd.sidestep_left == nullptr) return cmd.style;
    const double d = wrap_pi(std::atan2(dir[0], dir[1]) - t.target_heading[0]);
    if (d < -k_pi / 4 && d > -3 * k_pi / 4) return cmd.sidestep_right;
    if (d > k_pi / 4 && d < 3 * k_pi / 4) return cmd.sidestep_left;
    return cmd.style;
}

// (d) target keyframes: clip frames k..k+3 turned to the spring headings, placed on the spring
void targets(const agent_command & cmd, agent_trace & t) {
    const style_asset & fs   = *t.style_final;
    const uint64_t      span = fs.frames > (uint32_t) k_agent_context ? fs.frames - k_agent_context : 1;
    t.clip_frame = (int) (cmd.seed % span);
    t.target_joint_pos.assign(k_agent_context * k_j * 3, 0.0f);
    t.target_joint_rot.assign(k_agent_context * k_j * 9, 0.0f);
    t.target_root.assign(k_agent_context * 3, 0.0f);
    for (int i = 0; i < k_agent_context; ++i) {
        const size_t f = (size_t) t.clip_frame + i;
        for (int c = 0; c < k_j * 3; ++c) t.target_joint_pos[i * k_j * 3 + c] = fs.joint_positions[f * k_j * 3 + c];
        for (int c = 0; c < k_j * 9; ++c) t.target_joint_rot[i * k_j * 9 + c] = fs.joint_rotations[f * k_j * 9 + c];
        double ry[9];
        rot_y(wrap_pi(t.target_heading[i] - (double) fs.headings[f]), ry);
        rotate_frame(ry, &t.target_joint_pos[i * k_j * 3], &t.target_joint_rot[i * k_j * 9]);
        t.target_root[i * 3 + 0] = (float) t.target_pos[i][0];
        t.target_root[i * 3 + 1] = fs.root_positions[f * 3 + 1];
        t.target_root[i * 3 + 2] = (float) t.target_pos[i][1];
    }
}

// source realignment: context frames turned to the start headings, moved to the start positions
void realign(agent_trace & t) {
    t.context_pos_realigned = t.context_pos;
    t.context_rot_realigned = t.context_rot;
    for (int i = 0; i < k_agent_context; ++i) {
        float * pos = &t.context_pos_realigned[i * k_j * 3];
        float * rot = &t.context_rot_realigned[i * k_j * 9];
        double  ry[9];
        rot_y(t.start_heading[i] - y_heading(rot), ry);
        rotate_frame(ry, pos, rot);
        const float rx = pos[0], rzv = pos[2];
        for (int j = 0; j < k_j; ++j) {
            pos[j * 3 + 0] = (float) ((double) (pos[j * 3 + 0] - rx) + t.start_pos[i][0]);
            pos[j * 3 + 2] = (float) ((double) (pos[j * 3 + 2] - rzv) + t.start_pos[i][1]);
        }
    }
}

// (e) predict inputs: 4 context + 4 target frames
void request(const agent_command & cmd, agent_trace & t) {
    predict_request & r = t.request;
    r = predict_request();
    double h[8], gx[8], gy[8], gz[8];
    for (int i = 0; i < k_agent_context; ++i) {
        const float * pos = &t.context_pos_realigned[i * k_j * 3];
        const float * rot = &t.context_rot_realigned[i * k_j * 9];
        h[i]  = y_heading(rot);
        gx[i] = pos[0];
        gy[i] = pos[1];
        gz[i] = pos[2];
        pose_row(pos, rot, true, &r.poses[i * k_pose_dim]);
    }
    for (int i = 0; i < k_agent_context; ++i) {
        const float * pos = &t.target_joint_pos[i * k_j * 3];
        const float * rot = &t.target_joint_rot[i * k_j * 9];
        const int     s   = k_agent_context + i;
        h[s]  = (double) (float) t.target_heading[i];
        gx[s] = (double) (t.target_root[i * 3 + 0] + pos[0]);
        gy[s] = (double) (t.target_root[i * 3 + 1] + pos[1]);
        gz[s] = (double) (t.target_root[i * 3 + 2] + pos[2]);
        pose_row(pos, rot, false, &r.poses[s * k_pose_dim]);
    }
    for (int s = 0; s < k_constraint_frames; ++s) {
        r.global_root[s * 5 + 0] = (float) gx[s];
        r.global_root[s * 5 + 1] = (float) gy[s];
        r.global_root[s * 5 + 2] = (float) gz[s];
        r.global_root[s * 5 + 3] = (float) std::cos(h[s]);
        r.global_root[s * 5 + 4] = (float) std::sin(h[s]);
    }
    for (int half = 0; half < 2; ++half) {
        const int b = half * k_agent_context;
        for (int i = 0; i < k_agent_context - 1; ++i) {
            r.local_root[(b + i) * 4 + 0] = (float) (wrap_pi(h[b + i + 1] - h[b + i]) * k_fps);
            r.local_root[(b + i) * 4 + 1] = (float) ((gx[b + i + 1] - gx[b + i]) * k_fps);
            r.local_root[(b + i) * 4 + 2] = (float) ((gz[b + i + 1] - gz[b + i]) * k_fps);
            r.local_root[(b + i) * 4 + 3] = (float) gy[b + i];
        }
        const int last = b + k_agent_context - 1;
        if (half == 1) {
            // the target's last velocity repeats the previous one; its height is its own
            for (int c = 0; c < 3; ++c) r.local_root[last * 4 + c] = r.local_root[(last - 1) * 4 + c];
            r.local_root[last * 4 + 3] = (float) gy[last];
        }
    }
    r.global_root_mask.fill(1);
    r.local_root_mask.fill(1);
    r.pose_mask.fill(1);
    r.local_root_mask[k_agent_context - 1] = 0;   // the context's last velocity is unknown
    r.num_tokens = 0;
    for (int i = 0; i < k_duration_choices; ++i) r.allowed_num_tokens[i] = (uint8_t) (cmd.style->allowed_tokens[i] != 0);
    r.sampling                = cmd.argmax ? sampling_mode::SAMPLING_MODE_ARGMAX : sampling_mode::SAMPLING_MODE_GUMBEL;
    r.seed                    = cmd.seed;
    r.num_inference_steps     = 1;
    r.skip_ending_target_cond = false;
    r.allow_out_of_reach      = false;
}

} // namespace

void agent_prepare(const qpos_converter & conv, const float * context, const agent_command & cmd, agent_trace & t) {
    check_inputs(context, cmd);
    double rzt[9];
    canonicalise(context, cmd, t, rzt);
    // (b) context qpos → motion transforms
    t.context_pos.assign(k_agent_context * k_j * 3, 0.0f);
    t.context_rot.assign(k_agent_context * k_j * 9, 0.0f);
    conv.qpos_to_transforms(t.context_canon.data(), k_agent_context, t.context_pos.data(), t.context_rot.data());
    double dir[2];
    springs(cmd, rzt, t, dir);
    t.style_final = remap(cmd, dir, t);
    targets(cmd, t);
    realign(t);
    request(cmd, t);
}

agent_plan agent_finish(const qpos_converter & conv, agent_trace & t) {
    const predict_result & res = t.result;
    const int              n   = res.frames;
    if (n <= 0 || (int64_t) res.global_features.size() != (int64_t) n * k_global_dim) {
        throw mb::error(mb::status::compute_failed, "agent: predict returned no frames");
    }

    // (f) features → canonical qpos → world: turn by yaw0 − yaw(generated frame 0), put frame 0 at p0
    t.qpos_canon.assign((size_t) n * k_qpos_dim, 0.0f);
    for (int f = 0; f < n; ++f) conv.features_to_qpos(&res.global_features[(size_t) f * k_global_dim], &t.qpos_canon[f * k_qpos_dim]);
    const double yawg = qpos_yaw(&t.qpos_canon[3]);
    double rz0[9], rzg[9], rzgt[9], rg[9];
    rot_z(t.yaw0, rz0);
    rot_z(yawg, rzg);
    mat_transpose(rzg, rzgt);
    mat_mul(rz0, rzgt, rg);
    t.qpos_uncanon.assign((size_t) n * k_qpos_dim, 0.0f);
    double first[3] = {0, 0, 0};
    for (int f = 0; f < n; ++f) {
        float *      out       = &t.qpos_uncanon[f * k_qpos_dim];
        const double origin[3] = {0, 0, 0};
        double       p[3];
        turn_qpos(rg, &t.qpos_canon[f * k_qpos_dim], origin, p, out);
        if (f == 0) {
            first[0] = p[0];
            first[1] = p[1];
        }
        for (int i = 0; i < 3; ++i) out[i] = (float) (p[i] - first[i] + t.p0[i]);
    }

    // (g) seam blend of frames 0..3 with the raw context (positions and hinges; not the quaternion)
    agent_plan plan;
    plan.frames     = n;
    plan.style      = t.style_final;
    plan.num_tokens = res.num_tokens;
    plan.tokens     = res.tokens;
    plan.timings    = res.timings;
    plan.qpos       = t.qpos_uncanon;
    const float blend[4] = {0.3f, 0.43333334f, 0.56666666f, 0.7f};   // linspace(0.3, 0.7, 4) in float32
    for (int f = 0; f < std::min(n, k_agent_context); ++f) {
        const float   b   = blend[f];
        const float * ctx = &t.context_raw[f * k_qpos_dim];
        float *       q   = &plan.qpos[f * k_qpos_dim];
        for (int i = 0; i < k_qpos_dim; ++i) {
            if (i >= 3 && i < 7) continue;
            q[i] = ctx[i] * (1 - b) + q[i] * b;
        }
    }

    // world transforms of the plan, and the targets placed with the same canonical → world map
    plan.joint_positions.assign((size_t) n * k_j * 3, 0.0f);
    plan.joint_rotations.assign((size_t) n * k_j * 9, 0.0f);
    conv.qpos_to_transforms(plan.qpos.data(), n, plan.joint_positions.data(), plan.joint_rotations.data());
    plan.root_translations.assign((size_t) n * 3, 0.0f);
    for (int f = 0; f < n; ++f) {
        for (int c = 0; c < 3; ++c) plan.root_translations[f * 3 + c] = plan.joint_positions[(size_t) f * k_j * 3 + c];
    }
    plan.local_rotations_xyzw.assign((size_t) n * k_j * 4, 0.0f);
    local_rotations_xyzw(plan.joint_rotations.data(), n, plan.local_rotations_xyzw.data());
    // canonical motion space → world motion space: R = M rg Mᵀ, x ← R x + d
    double rm[9];
    rot_mujoco_to_motion(rg, rm);
    double d_mj[3] = {t.p0[0] - first[0], t.p0[1] - first[1], 0};
    double d[3];
    mujoco_to_motion_vec(d_mj, d);
    std::copy(rm, rm + 9, t.world_rotation);
    std::copy(d, d + 3, t.world_offset);
    plan.target_positions.assign(k_agent_context * k_j * 3, 0.0f);
    plan.target_rotations = t.target_joint_rot;
    for (int i = 0; i < k_agent_context; ++i) {
        float * pos = &plan.target_positions[i * k_j * 3];
        for (int j = 0; j < k_j; ++j) {
            for (int c = 0; c < 3; ++c) pos[j * 3 + c] = t.target_joint_pos[(i * k_j + j) * 3 + c] + t.target_root[i * 3 + c];
        }
        rotate_frame(rm, pos, &plan.target_rotations[i * k_j * 9]);
        for (int j = 0; j < k_j; ++j) {
            for (int c = 0; c < 3; ++c) pos[j * 3 + c] = (float) (pos[j * 3 + c] + d[c]);
        }
    }
    plan.target_local_rotations_xyzw.assign(k_agent_context * k_j * 4, 0.0f);
    local_rotations_xyzw(plan.target_rotations.data(), k_agent_context, plan.target_local_rotations_xyzw.data());
    return plan;
}

void local_rotations_xyzw(const float * global_rotations, int64_t frames, float * out) {
    for (int64_t f = 0; f < frames; ++f) {
        const float * g = &global_rotations[f * k_j * 9];
        for (int j = 0; j < k_j; ++j) {
            double gj[9], l[9];
            for (int i = 0; i < 9; ++i) gj[i] = g[j * 9 + i];
            const int p = k_g1_parents[j];
            if (p < 0) {
                for (int i = 0; i < 9; ++i) l[i] = gj[i];
            } else {
                double gp[9];
                for (int i = 0; i < 9; ++i) gp[i] = g[p * 9 + i];
                mat_tmul(gp, gj, l);   // local = parentᵀ · global
            }
            double q[4];
            matrix_to_quat_wxyz(l, q);
            float * o = &out[(f * k_j + j) * 4];
            o[0]      = (float) q[1];
            o[1]      = (float) q[2];
            o[2]      = (float) q[3];
            o[3]      = (float) q[0];
        }
    }
}

agent::agent(const motion_model & model) : model_(model) {}

void agent::clear() {
    buffer_.clear();
    cursor_    = 0;
    last_idle_ = false;
}

void agent::reset(const style_asset & s) {
    // upstream: the idle clip as qpos, padded to 64 frames with its last frame
    const int n = std::max<int>(64, (int) s.frames);
    buffer_.assign((size_t) n * k_qpos_dim, 0.0f);
    for (uint32_t f = 0; f < s.frames; ++f) {
        double rot[k_j * 9];
        for (int i = 0; i < k_j * 9; ++i) rot[i] = s.joint_rotations[(size_t) f * k_j * 9 + i];
        const float root[3] = {s.root_positions[f * 3 + 0] + s.joint_positions[(size_t) f * k_j * 3 + 0],
                               s.root_positions[f * 3 + 1] + s.joint_positions[(size_t) f * k_j * 3 + 1],
                               s.root_positions[f * 3 + 2] + s.joint_positions[(size_t) f * k_j * 3 + 2]};
        conv_.global_rotations_to_qpos(root, rot, &buffer_[(size_t) f * k_qpos_dim]);
    }
    for (int f = (int) s.frames; f < n; ++f) {
        for (int i = 0; i < k_qpos_dim; ++i) buffer_[(size_t) f * k_qpos_dim + i] = buffer_[(size_t) (s.frames - 1) * k_qpos_dim + i];
    }
    cursor_    = 0;
    last_idle_ = false;
}

void agent::set_context(const float * qpos, int frames) {
    if (frames < k_agent_context) throw mb::error(mb::status::invalid_argument, "agent: a context needs at least 4 frames");
    for (int64_t i = 0; i < (int64_t) frames * k_qpos_dim; ++i) {
        if (!std::isfinite(qpos[i])) throw mb::error(mb::status::invalid_argument, "agent: context qpos is not finite");
    }
    buffer_.assign(qpos, qpos + (size_t) frames * k_qpos_dim);
    cursor_    = 0;
    last_idle_ = false;
}

agent_plan agent::plan(const agent_command & cmd, agent_trace * trace, const trace_fn & tap) {
    agent_trace   local;
    agent_trace & t = trace ? *trace : local;
    begin_plan(cmd, t);
    t.result = state_ ? model_.predict(*state_, t.request, tap) : model_.predict(t.request, tap);
    return finish_plan(cmd, t);
}

void agent::begin_plan(const agent_command & cmd, agent_trace & t) {
    if (cmd.style == nullptr) throw mb::error(mb::status::invalid_argument, "agent: the command has no style");
    if (buffer_.empty()) reset(*cmd.style);   // no history yet: start from the style's clip
    const int     n = (int) (buffer_.size() / k_qpos_dim);
    float         ctx[k_agent_context * k_qpos_dim];
    for (int i = 0; i < k_agent_context; ++i) {
        const int f = std::min(cursor_ + i, n - 1);
        for (int c = 0; c < k_qpos_dim; ++c) ctx[i * k_qpos_dim + c] = buffer_[(size_t) f * k_qpos_dim + c];
    }
    agent_prepare(conv_, ctx, cmd, t);
    // the command and context are checked, so inputs out of range come from the style (its speed or
    // clip) or from a far world target: say so rather than blame the request predict sees
    const std::string problem = model_.validate(t.request);
    if (!problem.empty()) {
        throw mb::error(mb::status::invalid_argument, "agent: style '" + t.style_final->name + "'" +
                                    (cmd.has_target ? " or the world target" : "") +
                                    " puts the plan's inputs out of range: " + problem);
    }
}

agent_plan agent::finish_plan(const agent_command & cmd, agent_trace & t) {
    agent_plan plan = agent_finish(conv_, t);
    buffer_         = plan.qpos;
    cursor_         = 0;
    last_idle_      = cmd.idle;
    return plan;
}

bool agent::replan_due(const agent_command & cmd) const {
    const int n = (int) (buffer_.size() / k_qpos_dim);
    if (cursor_ < k_agent_replan && cursor_ < n - 1) return false;
    return !(last_idle_ && cmd.idle);
}

void agent::advance(int frames) {
    if (frames < 0) throw mb::error(mb::status::invalid_argument, "agent: cannot advance by a negative count");
    const int n = (int) (buffer_.size() / k_qpos_dim);
    cursor_     = std::min(cursor_ + frames, n - 1);
}

void agent::facing(float * out) const {
    out[0] = 0;
    out[1] = 0;
    out[2] = 1;
    if (buffer_.empty()) return;
    // the pelvis x axis of the frame at the cursor on the MuJoCo ground plane, as upstream's idle controller
    const float * q     = &buffer_[(size_t) cursor_ * k_qpos_dim + 3];
    const double  qd[4] = {q[0], q[1], q[2], q[3]};
    double        r[9];
    quat_to_matrix(qd, r);
    const double n     = std::hypot(r[0], r[3]) + 1e-5;
    const double mj[3] = {float(r[0] / n), float(r[3] / n), 0};
    if (mj[0] == 0 && mj[1] == 0) return;
    double motion[3];
    mujoco_to_motion_vec(mj, motion);
    for (int i = 0; i < 3; ++i) out[i] = float(motion[i]);
}

} // namespace mb
