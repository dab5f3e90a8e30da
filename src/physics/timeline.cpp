#include "physics/timeline.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace mb::physics {

int64_t resampled_count(int64_t frames30) {
    // localmotion_kplanner.hpp:450-454, the same double expression
    const double seconds = double(frames30) / 30.0;
    return static_cast<int64_t>(std::floor(seconds * 50));
}

void resample_30_to_50(const float * qpos30, int64_t frames30, ref_frame * out) {
    constexpr int w = k_qpos30_width;
    const int64_t n = resampled_count(frames30);
    // localmotion_kplanner.hpp:456-498: lerp of position and joints, slerp of the root
    for (int64_t f = 0; f < n; ++f) {
        const double t   = double(f) / 50.0;
        const double f30 = t * 30;
        const int64_t f0 = static_cast<int64_t>(std::floor(f30));
        const int64_t f1 = std::min(f0 + 1, frames30 - 1);
        const double w0 = 1.0 - (f30 - double(f0));
        const double w1 = 1.0 - w0;
        const float * a = qpos30 + f0 * w;
        const float * b = qpos30 + f1 * w;
        ref_frame & r = out[f];
        for (int i = 0; i < 3; ++i) r.root_pos[i] = w0 * a[i] + w1 * b[i];
        const quat q = quat_slerp({a[3], a[4], a[5], a[6]}, {b[3], b[4], b[5], b[6]}, f30 - double(f0));
        for (int i = 0; i < 4; ++i) r.root_quat[i] = q[i];
        for (int j = 0; j < k_body_joints; ++j)
            r.q[j] = w0 * a[7 + k_mujoco_of_isaac[j]] + w1 * b[7 + k_mujoco_of_isaac[j]];
    }
    // localmotion_kplanner.hpp:500-516 forward differences, the last frame repeating the one before
    for (int64_t f = 0; f + 1 < n; ++f)
        for (int j = 0; j < k_body_joints; ++j) out[f].dq[j] = (out[f + 1].q[j] - out[f].q[j]) * 50.0;
    for (int j = 0; j < k_body_joints; ++j) out[n - 1].dq[j] = out[n - 2].dq[j];
}

std::string check_qpos30(const float * qpos30, uint64_t values_count, int64_t max_frames50) {
    char m[160];
    if (!qpos30) return "reference qpos is NULL";
    if (values_count % k_qpos30_width != 0) {
        std::snprintf(m, sizeof m, "reference qpos has %llu values, not a multiple of 36",
                      static_cast<unsigned long long>(values_count));
        return m;
    }
    const uint64_t frames = values_count / k_qpos30_width;
    if (frames < 2) return "reference qpos needs at least 2 frames";
    // bounded before anything is resampled: a huge count never reaches the buffers
    if (frames > static_cast<uint64_t>(max_frames50) || resampled_count(static_cast<int64_t>(frames)) > max_frames50) {
        std::snprintf(m, sizeof m, "reference of %llu frames at 30 FPS exceeds the timeline's %lld frames at 50 Hz",
                      static_cast<unsigned long long>(frames), static_cast<long long>(max_frames50));
        return m;
    }
    for (uint64_t f = 0; f < frames; ++f) {
        const float * r = qpos30 + f * k_qpos30_width;
        for (int i = 0; i < k_qpos30_width; ++i)
            if (!std::isfinite(r[i]) || std::fabs(r[i]) > 1e6f) {
                std::snprintf(m, sizeof m, "reference frame %llu value %d is not finite or exceeds 1e6",
                              static_cast<unsigned long long>(f), i);
                return m;
            }
        const double n = std::sqrt(double(r[3]) * r[3] + double(r[4]) * r[4] + double(r[5]) * r[5] + double(r[6]) * r[6]);
        if (!(n >= 0.5 && n <= 2.0)) {
            std::snprintf(m, sizeof m, "reference frame %llu root quaternion has norm %g",
                          static_cast<unsigned long long>(f), n);
            return m;
        }
    }
    return "";
}

void timeline_init(timeline & t, int64_t capacity) {
    t.capacity = std::max<int64_t>(capacity, 2);
    t.ring.assign(static_cast<size_t>(t.capacity), ref_frame{});
    t.pending.assign(static_cast<size_t>(t.capacity), ref_frame{});
    timeline_reset(t);
}

void timeline_reset(timeline & t) {
    t.origin = t.length = t.current = t.pending_length = t.pending_gen = 0;
    t.play = true;
    t.reinit_heading = false;
    t.init_base_quat = t.init_ref_quat = {1, 0, 0, 0};
    t.delta_heading = 0;
}

timeline_mark timeline_save(const timeline & t) {
    return {t.origin, t.length, t.current, t.pending_length, t.pending_gen, t.play, t.reinit_heading,
            t.init_base_quat, t.init_ref_quat, t.delta_heading};
}

void timeline_restore(timeline & t, const timeline_mark & m) {
    t.origin = m.origin;
    t.length = m.length;
    t.current = m.current;
    t.pending_length = m.pending_length;
    t.pending_gen = m.pending_gen;
    t.play = m.play;
    t.reinit_heading = m.reinit_heading;
    t.init_base_quat = m.init_base_quat;
    t.init_ref_quat = m.init_ref_quat;
    t.delta_heading = m.delta_heading;
}

std::string timeline_replace(timeline & t, const float * qpos30, uint64_t values_count, int64_t frames30,
                             int64_t gen_frame) {
    // divided, not multiplied: frames · 36 wraps for a huge frame count and could match a small buffer
    if (frames30 < 0 || values_count % k_qpos30_width != 0 ||
        values_count / k_qpos30_width != static_cast<uint64_t>(frames30))
        return "reference frame count does not match its value count (frames · 36)";
    if (std::string e = check_qpos30(qpos30, values_count, t.capacity); !e.empty()) return e;
    const int64_t n = resampled_count(frames30);
    if (t.length == 0) {
        // first reference: copied as is (CurrentFrameAdvancement's first-time branch); heading captured next tick
        resample_30_to_50(qpos30, frames30, t.ring.data());
        t.origin = 0;
        t.length = n;
        t.current = 0;
        t.pending_length = 0;
        t.reinit_heading = true;
        return "";
    }
    if (gen_frame < 0 || gen_frame > t.current + t.capacity) return "reference gen_frame out of range";
    const int64_t new_length = gen_frame - t.current + n;
    if (new_length <= 0) return "reference ends before the current frame";
    if (new_length > t.capacity) return "reference does not fit the timeline from its gen_frame on";
    resample_30_to_50(qpos30, frames30, t.pending.data());
    t.pending_length = n;
    t.pending_gen = gen_frame;
    return "";
}

namespace {

// g1_deploy_onnx_ref.cpp:3196-3256: in place, frame f of the new motion at ring slot origin + cf + f,
// blended from the old motion's frame cf + f (clamped to its last, which by then holds the already
// blended value, as the deploy's in-place loop reads it) and the new clip's frame cf + f − gen
void apply_pending(timeline & t) {
    const int64_t cf = t.current, gen = t.pending_gen, n = t.pending_length;
    const int64_t new_length = gen - cf + n;
    const int64_t blend_start = std::max<int64_t>(0, gen - cf);
    for (int64_t f = 0; f < new_length; ++f) {
        const int64_t f_old = std::clamp<int64_t>(f + cf, 0, t.length - 1);
        const int64_t f_new = std::clamp<int64_t>(f + cf - gen, 0, n - 1);
        const double w_new = std::clamp(double(f - blend_start) / k_blend_frames, 0.0, 1.0);
        const double w_old = 1.0 - w_new;
        const ref_frame & o = t.ring[static_cast<size_t>((t.origin + f_old) % t.capacity)];
        const ref_frame & g = t.pending[static_cast<size_t>(f_new)];
        ref_frame & d = t.ring[static_cast<size_t>((t.origin + cf + f) % t.capacity)];
        const quat q = quat_slerp({o.root_quat[0], o.root_quat[1], o.root_quat[2], o.root_quat[3]},
                                  {g.root_quat[0], g.root_quat[1], g.root_quat[2], g.root_quat[3]}, w_new);
        for (int j = 0; j < k_body_joints; ++j) {
            d.q[j]  = w_old * o.q[j] + w_new * g.q[j];
            d.dq[j] = w_old * o.dq[j] + w_new * g.dq[j];
        }
        for (int i = 0; i < 3; ++i) d.root_pos[i] = w_old * o.root_pos[i] + w_new * g.root_pos[i];
        for (int i = 0; i < 4; ++i) d.root_quat[i] = q[i];
    }
    t.origin = (t.origin + cf) % t.capacity;
    t.length = new_length;
    t.current = 0;
    t.pending_length = 0;
}

}  // namespace

bool timeline_advance(timeline & t, bool * replaced) {
    if (replaced) *replaced = t.pending_length > 0;
    if (t.length == 0) return false;
    if (t.pending_length > 0) apply_pending(t);
    if (!t.play) return false;
    // g1_deploy_onnx_ref.cpp:3301-3305 (planner motion): one frame on, holding at the last
    const bool held = t.current + 1 >= t.length;
    t.current = std::min(t.current + 1, t.length - 1);
    return held;
}

void timeline_update_heading(timeline & t, const quat & base_quat) {
    if (t.length == 0) return;
    // g1_deploy_onnx_ref.cpp:555-581
    if (t.reinit_heading) {
        t.init_base_quat = base_quat;
        t.delta_heading = 0;
        const ref_frame & r = timeline_frame(t, t.current);
        t.init_ref_quat = {r.root_quat[0], r.root_quat[1], r.root_quat[2], r.root_quat[3]};
        t.reinit_heading = false;
    }
    if (t.current == 0) {
        const ref_frame & r = timeline_frame(t, 0);
        t.init_ref_quat = {r.root_quat[0], r.root_quat[1], r.root_quat[2], r.root_quat[3]};
    }
}

quat timeline_heading_offset(const timeline & t) {
    // g1_deploy_onnx_ref.cpp:589-602
    quat a = quat_mul(heading_quat(t.init_base_quat), heading_quat_inv(t.init_ref_quat));
    if (t.delta_heading != 0.0) a = quat_mul(quat_about_z(t.delta_heading), a);
    return a;
}

int64_t timeline_future(const timeline & t, int k, int step) {
    if (!t.play) return t.current;
    return std::min(t.current + int64_t(k) * step, t.length - 1);
}

}  // namespace mb::physics
