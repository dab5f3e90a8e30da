// the reference timeline against upstream's formulas worked by hand: localmotion_kplanner.hpp:395-518
// (30 → 50 Hz), g1_deploy_onnx_ref.cpp:3150-3310 (replacement blend, rebase, advance), :555-602
// (heading), gear_sonic_deploy at 1983e88
#include "physics/timeline.h"
#include "physics-test-clip.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

using namespace mb::physics;
using mb::physics::test::constant_clip;
using mb::physics::test::make_clip;

namespace {

double yaw_of(const ref_frame & r) { return 2 * std::atan2(r.root_quat[3], r.root_quat[0]); }

timeline make_timeline(int64_t capacity) {
    timeline t;
    timeline_init(t, capacity);
    return t;
}

}  // namespace

// :450-454 floor(frames / 30 · 50)
TEST(physics_timeline, resampled_count) {
    EXPECT_EQ(resampled_count(2), 3);     // 3.33
    EXPECT_EQ(resampled_count(3), 5);
    EXPECT_EQ(resampled_count(4), 6);     // 6.67
    EXPECT_EQ(resampled_count(64), 106);  // 106.67: the planner's longest clip
    EXPECT_EQ(resampled_count(30 * 600), 50 * 600);
}

// :456-498: frame f samples f/50·30 with floor (f0) and min(f0 + 1, last) (f1); joints and root
// position linear, root by slerp; joints re-ordered to Isaac (qpos[7 + mujoco_to_isaaclab[i]])
TEST(physics_timeline, resample_lerp_slerp_and_index_rounding) {
    const int F = 4;
    // MuJoCo joint m = 0.01 · (m + 1) · f: linear, so the resampled value is exact at any f30
    const auto clip = make_clip(F, [](int f) { return 0.3 * f; }, [](int f, int m) { return 0.01 * (m + 1) * f; });
    ref_frame out[6];
    resample_30_to_50(clip.data(), F, out);
    for (int f = 0; f < 6; ++f) {
        // f = 5: t = 0.1, f30 = 3.0000000000000004 → f0 = 3, f1 = min(4, 3) = 3: the last frame
        const double f30 = std::min(f * 0.6, 3.0);
        for (int i = 0; i < k_body_joints; ++i)
            EXPECT_NEAR(out[f].q[i], double(float(0.01 * (k_mujoco_of_isaac[i] + 1))) * f30, 2e-7) << f << " " << i;
        EXPECT_NEAR(out[f].root_pos[0], 0.01 * f30, 1e-7);
        // constant yaw rate: slerp of two frames 0.3 rad apart lands on the yaw in between
        EXPECT_NEAR(yaw_of(out[f]), 0.3 * f30, 2e-7) << f;
    }
    // Isaac joint 1 is MuJoCo joint 6 (right hip pitch)
    EXPECT_NEAR(out[3].q[1], double(float(0.07)) * 1.8, 1e-7);
    // :500-516 forward differences · 50, the last repeating the one before
    for (int i = 0; i < k_body_joints; ++i) {
        EXPECT_NEAR(out[0].dq[i], (out[1].q[i] - out[0].q[i]) * 50.0, 1e-12);
        EXPECT_EQ(out[5].dq[i], out[4].dq[i]);
        EXPECT_EQ(out[4].dq[i], (out[5].q[i] - out[4].q[i]) * 50.0);   // frames 4, 5 are 2.4 and 3: nonzero
    }
}

// quat_slerp_d takes the short way: q and −q are the same rotation
TEST(physics_timeline, resample_takes_the_short_way) {
    auto clip = constant_clip(2, 0.0, 0.0);
    const double a = 0.2;   // frame 1: yaw 0.2 stored with a negative w
    clip[36 + 3] = float(-std::cos(a / 2));
    clip[36 + 6] = float(-std::sin(a / 2));
    ref_frame out[3];
    resample_30_to_50(clip.data(), 2, out);
    EXPECT_NEAR(std::fabs(yaw_of(out[1])), 0.6 * a, 1e-6);   // not 2π − …
}

// the cursor reads the deploy's future frames: min(current + 5k, length − 1)
TEST(physics_timeline, future_frames_clamp_at_the_end) {
    timeline t = make_timeline(64);
    const auto clip = constant_clip(30, 0, 0);
    ASSERT_EQ(timeline_replace(t, clip.data(), clip.size(), 30, 0), "");
    EXPECT_EQ(t.length, 50);
    EXPECT_EQ(timeline_future(t, 0, 5), 0);
    EXPECT_EQ(timeline_future(t, 9, 5), 45);
    for (int i = 0; i < 10; ++i) timeline_advance(t);
    EXPECT_EQ(t.current, 10);
    EXPECT_EQ(timeline_future(t, 7, 5), 45);
    EXPECT_EQ(timeline_future(t, 8, 5), 49);
    for (int i = 0; i < 100; ++i) timeline_advance(t);
    EXPECT_EQ(t.current, 49);   // holds the last frame
    t.play = false;
    EXPECT_EQ(timeline_future(t, 9, 5), 49);
}

// :3196-3256 replacement: new frame f blends old frame cf + f with the clip's frame cf + f − gen at
// w_new = clamp((f − max(0, gen − cf)) / 8, 0, 1); rebased to frame 0, then advanced by one
TEST(physics_timeline, blend_on_replacement) {
    timeline t = make_timeline(256);
    const auto a = constant_clip(60, 0.0, 0.0);   // 100 frames of zeros, yaw 0
    ASSERT_EQ(timeline_replace(t, a.data(), a.size(), 60, 0), "");
    for (int i = 0; i < 7; ++i) timeline_advance(t);
    ASSERT_EQ(t.current, 7);
    const auto b = constant_clip(30, 0.8, 1.0);   // 50 frames of ones, yaw 0.8
    ASSERT_EQ(timeline_replace(t, b.data(), b.size(), 30, 9), "");   // belongs at frame 9: blend starts at 2
    EXPECT_EQ(t.length, 100);                     // pending until the tick ends
    timeline_advance(t);
    EXPECT_EQ(t.length, 9 - 7 + 50);
    EXPECT_EQ(t.current, 1);
    for (int f = 0; f < t.length; ++f) {
        const double w = std::clamp((f - 2) / 8.0, 0.0, 1.0);
        const ref_frame & r = timeline_frame(t, f);
        EXPECT_NEAR(r.q[5], w, 1e-7) << f;
        EXPECT_NEAR(r.dq[5], 0.0, 1e-9);
        EXPECT_NEAR(yaw_of(r), 0.8 * w, 1e-6) << f;   // slerp of the root between yaw 0 and 0.8
        EXPECT_NEAR(r.root_pos[0], (1 - w) * (0.01 * (7 + f) * 0.6) + w * (0.01 * std::min(std::max(0, f - 2) * 0.6, 29.0)), 1e-6) << f;
    }
}

// the deploy blends in place: past the old motion's end its clamped last frame has already been
// overwritten by the blend, so later frames mix with that blended value (w 5/8 at f = 5 over an
// old end of 0.5: 5/8 + 3/8 · 0.5 = 0.8125, not 0.625)
TEST(physics_timeline, blend_reads_in_place_like_the_deploy) {
    timeline t = make_timeline(64);
    const auto a = constant_clip(3, 0.0, 0.0);    // 5 frames
    ASSERT_EQ(timeline_replace(t, a.data(), a.size(), 3, 0), "");
    ASSERT_EQ(t.length, 5);
    const auto b = constant_clip(12, 0.0, 1.0);   // 20 frames
    ASSERT_EQ(timeline_replace(t, b.data(), b.size(), 12, 0), "");
    timeline_advance(t);
    EXPECT_NEAR(timeline_frame(t, 4).q[0], 0.5, 1e-12);
    EXPECT_NEAR(timeline_frame(t, 5).q[0], 0.8125, 1e-12);
    EXPECT_NEAR(timeline_frame(t, 6).q[0], 0.75 + 0.25 * 0.5, 1e-12);
    EXPECT_NEAR(timeline_frame(t, 8).q[0], 1.0, 1e-12);
}

namespace {

// a plain vector model of the deploy's planner motion (copy, in-place blend, erase-free rebase)
struct naive_motion {
    std::vector<ref_frame> frames;
    int64_t current = 0;
    void replace(const std::vector<ref_frame> & gen, int64_t fgen) {
        const int64_t cf = current, n = int64_t(gen.size()), len = fgen - cf + n;
        std::vector<ref_frame> out = frames;
        if (int64_t(out.size()) < len) out.resize(size_t(len));
        for (int64_t f = 0; f < len; ++f) {
            const int64_t fo = std::clamp<int64_t>(f + cf, 0, int64_t(frames.size()) - 1);
            const int64_t fn = std::clamp<int64_t>(f + cf - fgen, 0, n - 1);
            const double w = std::clamp(double(f - std::max<int64_t>(0, fgen - cf)) / 8, 0.0, 1.0);
            // the deploy reads and writes the same array
            const ref_frame o = out[size_t(fo)];
            for (int j = 0; j < k_body_joints; ++j) out[size_t(f)].q[j] = (1 - w) * o.q[j] + w * gen[size_t(fn)].q[j];
        }
        out.resize(size_t(len));
        frames = out;
        current = 0;
    }
};

}  // namespace

// the ring wraps many times over 400 ticks of replacements every 7 ticks and stays equal to the
// vector model
TEST(physics_timeline, ring_wraps_like_the_vector_model) {
    timeline t = make_timeline(40);
    naive_motion m;
    auto clip_at = [](int k) {
        return make_clip(20, [](int) { return 0.0; }, [k](int f, int j) { return std::sin(0.1 * f + k + 0.01 * j); });
    };
    auto first = clip_at(0);
    ASSERT_EQ(timeline_replace(t, first.data(), first.size(), 20, 0), "");
    m.frames.resize(size_t(resampled_count(20)));
    resample_30_to_50(first.data(), 20, m.frames.data());
    int64_t wraps = 0, last_origin = 0;
    for (int tick = 1; tick <= 400; ++tick) {
        if (tick % 7 == 0) {
            auto c = clip_at(tick);
            const int64_t gen = t.current + (tick % 3);
            ASSERT_EQ(timeline_replace(t, c.data(), c.size(), 20, gen), "") << tick;
            std::vector<ref_frame> g(size_t(resampled_count(20)));
            resample_30_to_50(c.data(), 20, g.data());
            m.replace(g, gen);
        }
        timeline_advance(t);
        m.current = std::min<int64_t>(m.current + 1, int64_t(m.frames.size()) - 1);
        if (t.origin < last_origin) ++wraps;
        last_origin = t.origin;
        ASSERT_EQ(t.length, int64_t(m.frames.size()));
        ASSERT_EQ(t.current, m.current);
        for (int64_t f = t.current; f < t.length; ++f)
            for (int j = 0; j < k_body_joints; ++j)
                ASSERT_EQ(timeline_frame(t, f).q[j], m.frames[size_t(f)].q[j]) << tick << " " << f;
    }
    EXPECT_GT(wraps, 5);
}

// :555-602: the first reference captures the robot's heading on the next tick; the offset maps the
// reference heading onto it: about_z(δ) · heading(base) · heading⁻¹(ref)
TEST(physics_timeline, heading_alignment) {
    timeline t = make_timeline(64);
    const auto clip = make_clip(30, [](int f) { return 1.0 + 0.01 * f; }, [](int, int) { return 0.0; });
    ASSERT_EQ(timeline_replace(t, clip.data(), clip.size(), 30, 0), "");
    EXPECT_TRUE(t.reinit_heading);
    // robot yawed 0.3 and pitched 0.2: only its yaw counts
    const quat yaw = quat_about_z(0.3);
    const quat pitch = {std::cos(0.1), 0, std::sin(0.1), 0};
    const quat base = quat_mul(yaw, pitch);
    timeline_update_heading(t, base);
    EXPECT_FALSE(t.reinit_heading);
    quat off = timeline_heading_offset(t);
    EXPECT_NEAR(2 * std::atan2(off[3], off[0]), 0.3 - 1.0, 1e-6);
    EXPECT_NEAR(off[1], 0, 1e-15);
    EXPECT_NEAR(off[2], 0, 1e-15);
    t.delta_heading = 0.25;
    off = timeline_heading_offset(t);
    EXPECT_NEAR(2 * std::atan2(off[3], off[0]), 0.3 - 1.0 + 0.25, 1e-6);
    // away from frame 0 the reference anchor stays; back on frame 0 (after a rebase) it re-anchors
    timeline_advance(t);
    timeline_update_heading(t, quat_about_z(2.0));
    EXPECT_NEAR(2 * std::atan2(t.init_ref_quat[3], t.init_ref_quat[0]), 1.0, 1e-6);
    EXPECT_NEAR(2 * std::atan2(t.init_base_quat[3], t.init_base_quat[0]), 2 * std::atan2(base[3], base[0]), 1e-12);
}

namespace {

bool same_state(const timeline & a, const timeline & b) {
    return a.origin == b.origin && a.length == b.length && a.current == b.current &&
           a.pending_length == b.pending_length && a.pending_gen == b.pending_gen &&
           std::memcmp(a.ring.data(), b.ring.data(), a.ring.size() * sizeof(ref_frame)) == 0;
}

}  // namespace

// hostile input: every rejection names the problem and leaves the timeline as it was
TEST(physics_timeline, rejects_bad_input_unchanged) {
    timeline t = make_timeline(100);
    const auto good = constant_clip(30, 0, 0.1);
    ASSERT_EQ(timeline_replace(t, good.data(), good.size(), 30, 0), "");
    const timeline before = t;
    auto expect_rejected = [&](const std::vector<float> & q, uint64_t values, int64_t frames, int64_t gen) {
        const std::string e = timeline_replace(t, q.empty() ? nullptr : q.data(), values, frames, gen);
        EXPECT_FALSE(e.empty()) << frames << " " << gen;
        EXPECT_TRUE(same_state(t, before)) << e;
    };
    auto nan = good;
    nan[36 * 7 + 12] = std::numeric_limits<float>::quiet_NaN();
    expect_rejected(nan, nan.size(), 30, 0);
    auto inf = good;
    inf[2] = std::numeric_limits<float>::infinity();
    expect_rejected(inf, inf.size(), 30, 0);
    auto big = good;
    big[40] = 2e6f;
    expect_rejected(big, big.size(), 30, 0);
    auto zero_quat = good;
    std::fill(zero_quat.begin() + 36 * 3 + 3, zero_quat.begin() + 36 * 3 + 7, 0.0f);
    expect_rejected(zero_quat, zero_quat.size(), 30, 0);
    expect_rejected(good, good.size() - 1, 30, 0);                       // count ≠ frames · 36
    expect_rejected(good, good.size(), 29, 0);
    expect_rejected(good, good.size(), 30 + (int64_t(1) << 62), 0);      // frames · 36 wraps to the buffer's count (fuzzer)
    expect_rejected(good, 36, 1, 0);                                     // one frame
    expect_rejected({}, 0, 0, 0);
    expect_rejected(good, good.size(), -1, 0);
    expect_rejected(good, good.size(), 30, -1);                          // gen_frame before 0
    expect_rejected(good, good.size(), 30, std::numeric_limits<int64_t>::max());
    expect_rejected(good, good.size(), 30, 200);                         // does not fit from there
    const uint64_t huge = uint64_t(1) << 62;                             // huge counts: refused before any read
    EXPECT_FALSE(timeline_replace(t, good.data(), huge * 36, int64_t(huge), 0).empty());
    EXPECT_FALSE(timeline_replace(t, good.data(), std::numeric_limits<uint64_t>::max(), 30, 0).empty());
    EXPECT_TRUE(same_state(t, before));
    auto long_clip = constant_clip(61, 0, 0);                            // 101 frames > 100
    expect_rejected(long_clip, long_clip.size(), 61, 0);
}

// random clips, counts and frames, NaNs sprinkled in: never a crash, the state always consistent
TEST(physics_timeline, fuzz_replace_and_advance) {
    std::mt19937_64 rng(15);
    timeline t = make_timeline(128);
    std::uniform_real_distribution<float> u(-4, 4);
    int accepted = 0;
    for (int it = 0; it < 3000; ++it) {
        const int frames = int(rng() % 90);
        std::vector<float> q(size_t(frames) * 36 + 8);
        for (float & v : q) v = u(rng);
        for (int f = 0; f < frames; ++f) {                            // mostly valid quaternions
            q[size_t(f) * 36 + 3] = 1;
            for (int i = 4; i < 7; ++i) q[size_t(f) * 36 + i] /= 8;
        }
        if (rng() % 4 == 0 && !q.empty()) q[rng() % q.size()] = std::numeric_limits<float>::quiet_NaN();
        const uint64_t values = rng() % 8 == 0 ? q.size() : uint64_t(frames) * 36;
        const int64_t gen = int64_t(rng() % 200) - 20;
        if (timeline_replace(t, q.data(), values, frames, gen).empty()) ++accepted;
        for (int k = int(rng() % 4); k > 0; --k) timeline_advance(t);
        ASSERT_LE(t.length, t.capacity);
        ASSERT_TRUE(t.length == 0 || (t.current >= 0 && t.current < t.length));
        for (int64_t f = t.current; f < t.length; ++f)
            for (int j = 0; j < k_body_joints; ++j) ASSERT_TRUE(std::isfinite(timeline_frame(t, f).q[j]));
        if (rng() % 500 == 0) timeline_reset(t);
    }
    EXPECT_GT(accepted, 300);
}
