// the deploy's idle re-adaptation and 35 rad/s stop, and the timeline mark a failed tick restores,
// against values worked out by hand from gear_sonic_deploy (g1_deploy_onnx_ref.cpp at 1983e88:
// :241-243 thresholds, :3306-3367 the state machine and blend, :2826-2836 the velocity stop;
// policy_parameters.hpp:96 the lower-body joints)
#include "physics/controller.h"
#include "physics/idle-readapt.h"
#include "physics/timeline.h"
#include "physics-test-clip.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace mb::physics;

namespace {

// a frame whose 29 Isaac joints are all `v`, and a robot whose MuJoCo joints are all `q`
ref_frame frame_of(double v) {
    ref_frame f{};
    for (double & q : f.q) q = v;
    return f;
}

}  // namespace

// :3324-3329: the mean |frame − robot| over the 12 lower-body joints only; Isaac 2 (waist yaw) is not
// one of them, and Isaac 13 (left ankle pitch... per the Isaac order) is
TEST(physics_idle_readapt, lower_body_joints_are_the_deploys) {
    const int expect[12] = {0, 1, 3, 4, 6, 7, 9, 10, 13, 14, 17, 18};
    for (int i = 0; i < 12; ++i) EXPECT_EQ(k_lower_body_isaac[i], expect[i]);
    // an error on the upper body alone never triggers
    idle_readapt r;
    ref_frame    f = frame_of(0.0);
    double       robot[k_body_joints] = {};
    for (int m = 12; m < k_body_joints; ++m) robot[m] = 1.0;   // MuJoCo 12.. are waist and arms
    idle_readapt_step(r, f, robot);
    EXPECT_EQ(r.state, readapt_state::recovering);   // mean lower-body error 0 < 0.045
    for (double q : f.q) EXPECT_EQ(q, 0.0);          // recovering toward the stored 0: unchanged
}

// IDLE → ADAPTING above 0.10: 0.98 · target + 0.02 · robot on the 12 joints, the others untouched
TEST(physics_idle_readapt, adapts_toward_the_robot_by_hand) {
    idle_readapt r;
    ref_frame    f = frame_of(0.3);
    double       robot[k_body_joints];
    for (double & q : robot) q = 0.1;   // error 0.2 > 0.10
    idle_readapt_step(r, f, robot);
    EXPECT_TRUE(r.stored);
    EXPECT_EQ(r.original[0], 0.3);
    EXPECT_EQ(r.state, readapt_state::adapting);
    EXPECT_EQ(f.q[0], 0.98 * 0.3 + 0.02 * 0.1);   // 0.296
    EXPECT_EQ(f.q[18], 0.98 * 0.3 + 0.02 * 0.1);
    EXPECT_EQ(f.q[2], 0.3);                        // waist yaw: not lower body
    EXPECT_EQ(f.q[28], 0.3);
    // the error shrinks 2 % a tick: 0.2 · 0.98^k < 0.05 first at k = 69 → IDLE on the 70th step
    int steps = 1;
    while (r.state == readapt_state::adapting && steps < 200) {
        idle_readapt_step(r, f, robot);
        ++steps;
    }
    EXPECT_EQ(r.state, readapt_state::idle);
    EXPECT_EQ(steps, 70);
    // in IDLE between 0.045 and 0.10 nothing moves
    const double held = f.q[0];
    idle_readapt_step(r, f, robot);
    EXPECT_EQ(r.state, readapt_state::idle);
    EXPECT_EQ(f.q[0], held);
}

// IDLE → RECOVERING below 0.045: the frame moves back toward the stored planner targets; a new motion
// (reset) stores again
TEST(physics_idle_readapt, recovers_toward_the_planner_and_resets) {
    idle_readapt r;
    ref_frame    f = frame_of(0.3);
    double       robot[k_body_joints];
    for (double & q : robot) q = 0.3;
    idle_readapt_step(r, f, robot);   // stores 0.3, error 0 → RECOVERING, blend toward 0.3: unchanged
    EXPECT_EQ(r.state, readapt_state::recovering);
    f.q[0] = 0.31;                   // the frame drifted (error 0.01/12, still recovering)
    idle_readapt_step(r, f, robot);
    EXPECT_EQ(f.q[0], 0.98 * 0.31 + 0.02 * 0.3);
    // RECOVERING → ADAPTING above 0.10 (not via IDLE)
    for (double & q : robot) q = 0.0;
    idle_readapt_step(r, f, robot);
    EXPECT_EQ(r.state, readapt_state::adapting);
    idle_readapt_reset(r);
    EXPECT_FALSE(r.stored);
    f = frame_of(0.5);
    idle_readapt_step(r, f, robot);
    EXPECT_EQ(r.original[0], 0.5);
    EXPECT_EQ(r.state, readapt_state::adapting);     // the reset also restarts from IDLE
}

// :2832 `body_dq[i] > 35`: signed, Isaac order (body_dq[i] reads MuJoCo joint mujoco_to_isaaclab[i])
TEST(physics_velocity_stop, signed_35_rad_s_in_isaac_order) {
    double dq[k_body_joints] = {};
    EXPECT_EQ(velocity_stop_joint(dq), -1);
    dq[6] = 35.0;                                   // exactly 35 passes
    EXPECT_EQ(velocity_stop_joint(dq), -1);
    dq[6] = -80.0;                                  // negative passes, as upstream compares
    EXPECT_EQ(velocity_stop_joint(dq), -1);
    dq[6] = 35.5;                                   // MuJoCo 6 (right hip pitch) is Isaac 1
    EXPECT_EQ(velocity_stop_joint(dq), 1);
    dq[0] = 40.0;                                   // Isaac 0 comes first
    EXPECT_EQ(velocity_stop_joint(dq), 0);
}

// timeline_advance reports the hold the idle re-adaptation waits for; a mark taken before
// timeline_replace / timeline_update_heading undoes them
TEST(physics_timeline_mark, held_and_restore) {
    timeline t;
    timeline_init(t, 64);
    const timeline_mark empty = timeline_save(t);
    const std::vector<float> clip = test::constant_clip(4, 0.3, 0.1);   // 4 frames at 30 FPS → 6 at 50 Hz
    ASSERT_EQ(timeline_replace(t, clip.data(), clip.size(), 4, 0), "");
    timeline_update_heading(t, {1, 0, 0, 0});
    timeline_restore(t, empty);
    EXPECT_TRUE(timeline_save(t) == empty);
    EXPECT_EQ(t.length, 0);

    ASSERT_EQ(timeline_replace(t, clip.data(), clip.size(), 4, 0), "");
    timeline_update_heading(t, {1, 0, 0, 0});
    int held_at = -1;
    for (int k = 0; k < 8 && held_at < 0; ++k) {
        bool replaced = true;
        if (timeline_advance(t, &replaced)) held_at = k;
        EXPECT_FALSE(replaced);
    }
    EXPECT_EQ(held_at, 5);   // frames 0..5: the 6th advance would pass frame 5
    EXPECT_EQ(t.current, 5);
    // a replacement waits in `pending`: the mark undoes it, and an advance then replaces nothing
    const timeline_mark before = timeline_save(t);
    const std::vector<float> other = test::constant_clip(4, 0.0, 0.2);
    ASSERT_EQ(timeline_replace(t, other.data(), other.size(), 4, t.current), "");
    timeline_restore(t, before);
    bool replaced = true;
    EXPECT_TRUE(timeline_advance(t, &replaced));
    EXPECT_FALSE(replaced);
    EXPECT_EQ(timeline_frame(t, t.current).q[0], 0.1f);
    ASSERT_EQ(timeline_replace(t, other.data(), other.size(), 4, t.current), "");
    EXPECT_FALSE(timeline_advance(t, &replaced));
    EXPECT_TRUE(replaced);
}
