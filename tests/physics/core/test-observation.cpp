// the observations slice by slice against gear_sonic_deploy's gatherers worked by hand
// (g1_deploy_onnx_ref.cpp:612-690 anchor orientation, :736-903 joint positions / velocities,
// :1449-1630 histories, :1687-1693 mode, state_logger.cpp:180-235 / :474-505 padding, 1983e88), and
// against the start-up samples of fixtures/sonic (an independent reading of the same code)
#include "physics/observation.h"
#include "physics-test-clip.h"
#include "support/test-paths.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <vector>

using namespace mb::physics;
using mb::physics::test::constant_clip;
using mb::physics::test::make_clip;

namespace {

robot_state standing(const quat & base = {1, 0, 0, 0}) {
    robot_state s{};
    for (int i = 0; i < 4; ++i) s.base_quat[i] = base[i];
    for (int m = 0; m < k_body_joints; ++m) s.q[m] = k_default_angles[m];
    return s;
}

// a 30 FPS clip of the default pose, yaw `yaw`
std::vector<float> standing_clip(int frames, double yaw = 0) {
    return make_clip(frames, [=](int) { return yaw; }, [](int, int m) { return k_default_angles[m]; });
}

}  // namespace

// state_logger.cpp:199-235: the newest entries oldest first, the missing ones zero entries in front;
// a zero entry's quaternion is 0, whose "rotation" of (0, 0, −1) is (0, −0, 1) (math_utils:132-150)
TEST(physics_observation, decoder_history_startup_padding_and_order) {
    history h;
    history_reset(h);
    float tokens[k_tokens];
    for (int i = 0; i < k_tokens; ++i) tokens[i] = float(i) / 16;
    float obs[k_decoder_obs];
    robot_state s = standing();
    s.base_ang_vel[0] = 0.5;
    s.q[6] = -0.312 + 0.25;   // MuJoCo 6 = Isaac 1
    s.dq[1] = 3.0;            // MuJoCo 1 = Isaac 3
    history_push(h, s);
    build_decoder_obs(h, tokens, obs);
    for (int i = 0; i < k_tokens; ++i) EXPECT_EQ(obs[i], tokens[i]);
    for (int k = 0; k < 9; ++k) {
        EXPECT_EQ(obs[k_dec_ang_vel + 3 * k], 0.0f);
        for (int i = 0; i < k_body_joints; ++i) {
            EXPECT_EQ(obs[k_dec_q + 29 * k + i], 0.0f);
            EXPECT_EQ(obs[k_dec_dq + 29 * k + i], 0.0f);
            EXPECT_EQ(obs[k_dec_action + 29 * k + i], 0.0f);
        }
        EXPECT_EQ(obs[k_dec_gravity + 3 * k + 0], 0.0f);
        EXPECT_EQ(obs[k_dec_gravity + 3 * k + 1], 0.0f);
        EXPECT_TRUE(std::signbit(obs[k_dec_gravity + 3 * k + 1]));
        EXPECT_EQ(obs[k_dec_gravity + 3 * k + 2], 1.0f);
    }
    EXPECT_EQ(obs[k_dec_ang_vel + 27], 0.5f);
    EXPECT_FLOAT_EQ(obs[k_dec_q + 29 * 9 + 1], 0.25f);     // q − default, Isaac order
    EXPECT_EQ(obs[k_dec_q + 29 * 9 + 0], 0.0f);
    EXPECT_EQ(obs[k_dec_dq + 29 * 9 + 3], 3.0f);
    EXPECT_EQ(obs[k_dec_gravity + 27 + 2], -1.0f);          // upright: (0, 0, −1)
}

// deploy tick order: log state (with last_action of the tick before), policy, last_action = action;
// so the entry of tick t carries a_{t−1}, the first one 0. After 12 ticks the oldest 2 are gone
TEST(physics_observation, previous_action_timing_and_wrap) {
    history h;
    history_reset(h);
    float tokens[k_tokens] = {};
    float obs[k_decoder_obs];
    for (int tick = 0; tick < 12; ++tick) {
        robot_state s = standing();
        s.base_ang_vel[2] = tick;
        history_push(h, s);
        float action[k_body_joints];
        for (int i = 0; i < k_body_joints; ++i) action[i] = float(100 * tick + i);
        history_set_action(h, action);
    }
    build_decoder_obs(h, tokens, obs);
    for (int k = 0; k < k_history; ++k) {
        const int tick = k + 2;   // oldest first: ticks 2..11
        EXPECT_EQ(obs[k_dec_ang_vel + 3 * k + 2], float(tick));
        EXPECT_EQ(obs[k_dec_action + 29 * k + 5], float(100 * (tick - 1) + 5));
    }
    // a gravity of a tilted pelvis: rotate(conj(q), (0, 0, −1)) for a 0.4 rad pitch about y
    history_reset(h);
    robot_state s = standing({std::cos(0.2), 0, std::sin(0.2), 0});
    history_push(h, s);
    build_decoder_obs(h, tokens, obs);
    EXPECT_NEAR(obs[k_dec_gravity + 27 + 0], std::sin(0.4), 1e-7);
    EXPECT_NEAR(obs[k_dec_gravity + 27 + 1], 0.0, 1e-7);
    EXPECT_NEAR(obs[k_dec_gravity + 27 + 2], -std::cos(0.4), 1e-7);
    EXPECT_EQ(obs[k_dec_action + 29 * 9], 0.0f);   // reset cleared the previous action
}

// robot_state_from_scene: IMU from the free joint, body joints through the 43-DoF order
TEST(physics_observation, state_from_scene_skips_the_hands) {
    std::vector<double> qpos(k_scene_nq), qvel(k_scene_nv);
    for (int i = 0; i < k_scene_nq; ++i) qpos[size_t(i)] = i;
    for (int i = 0; i < k_scene_nv; ++i) qvel[size_t(i)] = 100 + i;
    robot_state s;
    robot_state_from_scene(qpos.data(), qvel.data(), s);
    EXPECT_EQ(s.base_quat[0], 3);
    EXPECT_EQ(s.base_ang_vel[0], 103);
    EXPECT_EQ(s.q[21], 7 + 21);      // left wrist yaw
    EXPECT_EQ(s.q[22], 7 + 29);      // right shoulder pitch, after the 7 left-hand joints
    EXPECT_EQ(s.dq[28], 100 + 6 + 35);
    qpos[7] = 0.1;   // LowState is float32: the deploy reads float(0.1)
    robot_state_from_scene(qpos.data(), qvel.data(), s);
    EXPECT_EQ(s.q[0], double(0.1f));
}

// :736-903 10 future frames, 5 apart, Isaac order; velocities of those frames; paused: the current
// frame held and velocities 0
TEST(physics_observation, encoder_future_frames_and_pause) {
    timeline t;
    timeline_init(t, 256);
    // MuJoCo joint m = 0.002·m·f30: 50 Hz frame f is 0.0012·m·f, velocity 0.06·m
    const auto clip = make_clip(90, [](int) { return 0.0; }, [](int f, int m) { return 0.002 * m * f; });
    ASSERT_EQ(timeline_replace(t, clip.data(), clip.size(), 90, 0), "");
    for (int i = 0; i < 100; ++i) timeline_advance(t);   // frame 100 of 150
    timeline_update_heading(t, {1, 0, 0, 0});
    float obs[k_encoder_obs];
    build_encoder_obs(t, {1, 0, 0, 0}, obs);
    for (int k = 0; k < 10; ++k) {
        const int f = std::min(100 + 5 * k, 149);
        for (int i = 0; i < k_body_joints; ++i) {
            const double per_frame = double(float(0.002 * k_mujoco_of_isaac[i] * 3)) / 3 * 0.6;   // clip holds floats
            EXPECT_NEAR(obs[k_enc_q + 29 * k + i], per_frame * f, 2e-5) << k << " " << i;
            EXPECT_NEAR(obs[k_enc_dq + 29 * k + i], 0.06 * k_mujoco_of_isaac[i], 2e-4) << k << " " << i;
        }
    }
    t.play = false;
    build_encoder_obs(t, {1, 0, 0, 0}, obs);
    for (int k = 0; k < 10; ++k) {
        EXPECT_EQ(obs[k_enc_q + 29 * k + 28], obs[k_enc_q + 28]);
        EXPECT_EQ(obs[k_enc_dq + 29 * k + 28], 0.0f);
    }
}

// :612-690 mode 0: R(conj(base) · offset · ref_root)[:, :2] row-wise; with the heading captured from
// a robot yawed 0.3 over a reference at yaw 1.0, a reference turning 0.05 rad a frame appears as its
// turn since capture, about z: [cos, −sin, sin, cos, 0, 0]
TEST(physics_observation, encoder_anchor_orientation_heading_aligned) {
    timeline t;
    timeline_init(t, 256);
    const auto clip = make_clip(60, [](int f) { return 1.0 + 0.05 * f; }, [](int, int m) { return k_default_angles[m]; });
    ASSERT_EQ(timeline_replace(t, clip.data(), clip.size(), 60, 0), "");
    const quat base = quat_about_z(0.3);
    timeline_update_heading(t, base);
    float obs[k_encoder_obs];
    build_encoder_obs(t, base, obs);
    for (int k = 0; k < 10; ++k) {
        const double a = 0.05 * (5 * k) * 0.6;   // 30 FPS turn over 5k frames at 50 Hz
        const double want[6] = {std::cos(a), -std::sin(a), std::sin(a), std::cos(a), 0, 0};
        for (int i = 0; i < 6; ++i) EXPECT_NEAR(obs[k_enc_anchor + 6 * k + i], want[i], 2e-6) << k << " " << i;
    }
    // a pitched robot of the same heading: conj(pitch) · ref; frame 0 is the rotation about y by −0.4
    const quat tilted = quat_mul(base, {std::cos(0.2), 0, std::sin(0.2), 0});
    build_encoder_obs(t, tilted, obs);
    const double c = std::cos(0.4), s = std::sin(0.4);
    const double want[6] = {c, 0, 0, 1, s, 0};   // R_y(−0.4) = [[c, 0, −s], [0, 1, 0], [s, 0, c]]
    for (int i = 0; i < 6; ++i) EXPECT_NEAR(obs[k_enc_anchor + i], want[i], 2e-6) << i;
    // the slices mode 0 does not use stay 0 (GatherEncoderObservations zero-fills them)
    for (int i = 1; i < 4; ++i) EXPECT_EQ(obs[i], 0.0f);
    for (int i = k_enc_root_z; i < k_enc_anchor; ++i) EXPECT_EQ(obs[i], 0.0f);
    for (int i = 661; i < k_encoder_obs; ++i) EXPECT_EQ(obs[i], 0.0f);
}

namespace {

// sample i's enc_obs [1762] and dec_obs [994] from fixtures/sonic/sonic_ref.mbsonic (README layout)
bool read_fixture_sample(const std::string & path, int i, std::vector<float> & enc, std::vector<float> & dec) {
    std::ifstream f(path, std::ios::binary);
    if (!f) return false;
    f.seekg(12 + std::streamoff(i) * 56940);
    enc.resize(k_encoder_obs);
    dec.resize(k_decoder_obs);
    f.read(reinterpret_cast<char *>(enc.data()), k_encoder_obs * 4);
    f.read(reinterpret_cast<char *>(dec.data()), k_decoder_obs * 4);
    return bool(f);
}

}  // namespace

// fixture samples 2 (first tick standing: 9 padding entries) and 4 (10 standing entries): a robot at
// the default pose over a standing reference builds them exactly, the token slot aside
TEST(physics_observation, matches_fixture_startup_samples) {
    MB_REQUIRE_SHARED(path, "fixtures/sonic/sonic_ref.mbsonic");
    std::vector<float> enc2, dec2, enc4, dec4;
    ASSERT_TRUE(read_fixture_sample(path, 2, enc2, dec2));
    ASSERT_TRUE(read_fixture_sample(path, 4, enc4, dec4));
    timeline t;
    timeline_init(t, 128);
    const auto clip = standing_clip(30);
    ASSERT_EQ(timeline_replace(t, clip.data(), clip.size(), 30, 0), "");
    history h;
    history_reset(h);
    float enc[k_encoder_obs], dec[k_decoder_obs];
    for (int tick = 0; tick < 10; ++tick) {
        const robot_state s = standing();
        history_push(h, s);
        timeline_update_heading(t, {1, 0, 0, 0});
        build_encoder_obs(t, {1, 0, 0, 0}, enc);
        build_decoder_obs(h, dec2.data(), dec);
        const std::vector<float> & want_enc = tick == 0 ? enc2 : enc4;
        const std::vector<float> & want_dec = tick == 0 ? dec2 : dec4;
        if (tick == 0 || tick == 9) {
            for (int i = 0; i < k_encoder_obs; ++i) EXPECT_EQ(enc[i], want_enc[i]) << tick << " enc " << i;
            for (int i = k_tokens; i < k_decoder_obs; ++i) EXPECT_EQ(dec[i], want_dec[i]) << tick << " dec " << i;
        }
        float zero[k_body_joints] = {};
        history_set_action(h, zero);
        timeline_advance(t);
    }
}
