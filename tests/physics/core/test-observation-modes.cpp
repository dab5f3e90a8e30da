// the teleop (mode 1) and SMPL (mode 2) encoder observations slice by slice: by hand from
// gear_sonic_deploy's gatherers (g1_deploy_onnx_ref.cpp at 1983e88: :612-690 anchor orientation,
// :736-903 joint positions / velocities with index lists, :906-964 SMPL joints, :1102-1260 VR
// 3-point, :1687-1693 mode, :2011 zero fill; policy_parameters.hpp:88 wrists, :92 lower body;
// observation_config.yaml encoder_modes), and against fixtures/sonic (8 teleop samples, the 15
// mode-2 samples of sonic_ref): every slice rebuilt from the sample's own inputs lands where
// upstream's modules read it
#include "physics/observation-modes.h"
#include "physics-test-clip.h"
#include "support/test-paths.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <vector>

using namespace mb::physics;

namespace {

// joint m (MuJoCo order) at 0.01 m + 0.001 f in frame f of a 30 FPS clip, no yaw
std::vector<float> ramp_clip(int frames) {
    return test::make_clip(frames, [](int) { return 0.0; }, [](int f, int m) { return 0.01 * m + 0.001 * f; });
}

// the first two columns of R row-wise → the rotation's quaternion (w x y z): c2 = c0 × c1, then
// Shepperd's method on the trace
quat quat_from_6d(const float * s) {
    const double c0[3] = {s[0], s[2], s[4]}, c1[3] = {s[1], s[3], s[5]};
    const double c2[3] = {c0[1] * c1[2] - c0[2] * c1[1], c0[2] * c1[0] - c0[0] * c1[2], c0[0] * c1[1] - c0[1] * c1[0]};
    const double R[3][3] = {{c0[0], c1[0], c2[0]}, {c0[1], c1[1], c2[1]}, {c0[2], c1[2], c2[2]}};
    const double tr = R[0][0] + R[1][1] + R[2][2];
    quat q;
    if (tr > 0) {
        const double w = std::sqrt(1 + tr) * 2;
        q = {w / 4, (R[2][1] - R[1][2]) / w, (R[0][2] - R[2][0]) / w, (R[1][0] - R[0][1]) / w};
    } else if (R[0][0] > R[1][1] && R[0][0] > R[2][2]) {
        const double w = std::sqrt(1 + R[0][0] - R[1][1] - R[2][2]) * 2;
        q = {(R[2][1] - R[1][2]) / w, w / 4, (R[0][1] + R[1][0]) / w, (R[0][2] + R[2][0]) / w};
    } else if (R[1][1] > R[2][2]) {
        const double w = std::sqrt(1 + R[1][1] - R[0][0] - R[2][2]) * 2;
        q = {(R[0][2] - R[2][0]) / w, (R[0][1] + R[1][0]) / w, w / 4, (R[1][2] + R[2][1]) / w};
    } else {
        const double w = std::sqrt(1 + R[2][2] - R[0][0] - R[1][1]) * 2;
        q = {(R[1][0] - R[0][1]) / w, (R[0][2] + R[2][0]) / w, (R[1][2] + R[2][1]) / w, w / 4};
    }
    return quat_unit(q);
}

// enc_obs [1762] of every sample in a .mbsonic v1 file (README layout)
std::vector<std::vector<float>> read_enc_obs(const std::string & path) {
    std::ifstream f(path, std::ios::binary);
    char          magic[8];
    uint32_t      n = 0;
    f.read(magic, 8);
    f.read(reinterpret_cast<char *>(&n), 4);
    std::vector<std::vector<float>> out;
    for (uint32_t i = 0; f && i < n; ++i) {
        std::vector<float> e(k_encoder_obs);
        f.seekg(12 + std::streamoff(i) * 56940);
        f.read(reinterpret_cast<char *>(e.data()), k_encoder_obs * 4);
        if (f) out.push_back(std::move(e));
    }
    return out;
}

// a playing timeline of `length` zero frames at the cursor 0, heading aligned to identity
void blank_timeline(timeline & t, int64_t length) {
    timeline_init(t, length + 2);
    t.length = length;
    for (ref_frame & r : t.ring) r.root_quat[0] = 1;
}

bool all_zero(const float * v, int n) {
    for (int i = 0; i < n; ++i)
        if (v[i] != 0.0f) return false;
    return true;
}

}  // namespace

// :1102-1260 by hand: root at (1, 2, 0.8) turned 90° left; the left wrist body 0.3 m to the root's
// world +y with no rotation, the torso 0.2 m above the root turned like it
TEST(physics_observation_modes, vr3_from_bodies_by_hand) {
    const double h = std::sqrt(0.5);
    const quat   root = {h, 0, 0, h};
    const double root_pos[3] = {1, 2, 0.8};
    const double pos[3][3] = {{1, 2.3, 0.8}, {1, 1.7, 0.8}, {1, 2, 1.0}};
    const double rot[3][4] = {{1, 0, 0, 0}, {1, 0, 0, 0}, {h, 0, 0, h}};
    const vr3_points v = vr3_from_bodies(pos, rot, root_pos, root);
    // left: (0.18, −0.025, 0) + (0, 0.3, 0) in world, seen from the turned root: (x, y) → (y, −x)
    EXPECT_NEAR(v.position[0], 0.275, 1e-12);
    EXPECT_NEAR(v.position[1], -0.18, 1e-12);
    EXPECT_NEAR(v.position[2], 0.0, 1e-12);
    // right: (0.18, 0.025, 0) + (0, −0.3, 0) → (−0.275, −0.18, 0)
    EXPECT_NEAR(v.position[3], -0.275, 1e-12);
    EXPECT_NEAR(v.position[4], -0.18, 1e-12);
    // head: the torso's (0, 0, 0.35) offset on top of its 0.2 m
    EXPECT_NEAR(v.position[6], 0.0, 1e-12);
    EXPECT_NEAR(v.position[8], 0.55, 1e-12);
    // conj(root) · q: the unrotated wrist is turned −90° in the root's frame, the torso not at all
    EXPECT_NEAR(v.orientation[0], h, 1e-12);
    EXPECT_NEAR(v.orientation[3], -h, 1e-12);
    EXPECT_NEAR(v.orientation[8], 1.0, 1e-12);
    EXPECT_NEAR(v.orientation[11], 0.0, 1e-12);
}

// mode 1 by hand: the leg joints of frames 0, 5, … in MuJoCo order (lower_body_joint_mujoco_order_in_
// isaaclab_index = isaaclab_to_mujoco[0..12)), velocities 0 while paused, the current anchor, the VR
// points as given; nothing else
TEST(physics_observation_modes, teleop_slices_by_hand) {
    const int lower_body_mujoco_order[12] = {0, 3, 6, 9, 13, 17, 1, 4, 7, 10, 14, 18};
    for (int m = 0; m < 12; ++m) EXPECT_EQ(k_isaac_of_mujoco[m], lower_body_mujoco_order[m]);
    timeline t;
    timeline_init(t, 256);
    const std::vector<float> clip = ramp_clip(60);
    ASSERT_EQ(timeline_replace(t, clip.data(), clip.size(), 60, 0), "");
    timeline_update_heading(t, {1, 0, 0, 0});
    vr3_points vr{};
    for (int i = 0; i < 9; ++i) vr.position[i] = 0.1 * (i + 1);
    for (int i = 0; i < 12; ++i) vr.orientation[i] = -0.05 * (i + 1);
    float obs[k_encoder_obs];
    build_teleop_encoder_obs(t, {1, 0, 0, 0}, vr, obs);
    EXPECT_EQ(obs[0], 1.0f);
    const float identity[6] = {1, 0, 0, 1, 0, 0};
    for (int i = 0; i < 6; ++i) EXPECT_NEAR(obs[k_enc_anchor1 + i], identity[i], 1e-7) << i;
    for (int k = 0; k < 10; ++k) {
        for (int m = 0; m < 12; ++m) {
            // 50 Hz frame 5k samples 30 FPS frame 3k exactly: 0.01 m + 0.003 k; dq = 0.001 · 30
            EXPECT_NEAR(obs[k_enc_lower_q + 12 * k + m], 0.01 * m + 0.003 * k, 1e-6) << k << " " << m;
            EXPECT_NEAR(obs[k_enc_lower_dq + 12 * k + m], 0.03, 1e-4) << k << " " << m;
        }
    }
    for (int i = 0; i < 9; ++i) EXPECT_EQ(obs[k_enc_vr_pos + i], float(0.1 * (i + 1)));
    for (int i = 0; i < 12; ++i) EXPECT_EQ(obs[k_enc_vr_orn + i], float(-0.05 * (i + 1)));
    for (int i = 1; i < k_enc_anchor1; ++i) EXPECT_EQ(obs[i], 0.0f) << i;
    for (int i = k_enc_anchor1 + 6; i < k_enc_lower_q; ++i) EXPECT_EQ(obs[i], 0.0f) << i;
    for (int i = k_enc_vr_orn + 12; i < k_encoder_obs; ++i) EXPECT_EQ(obs[i], 0.0f) << i;
    t.play = false;
    build_teleop_encoder_obs(t, {1, 0, 0, 0}, vr, obs);
    for (int k = 0; k < 10; ++k) {
        EXPECT_NEAR(obs[k_enc_lower_q + 12 * k + 5], 0.05, 1e-6);   // every frame the current one
        EXPECT_EQ(obs[k_enc_lower_dq + 12 * k + 5], 0.0f);
    }
}

// mode 2 by hand: SMPL joints copied frame by frame, wrists Isaac 23..28 (MuJoCo 19, 26, 20, 27, 21,
// 28) of frames 0..9, anchors at step 1 relative to a robot turned 0.5 rad
TEST(physics_observation_modes, smpl_slices_by_hand) {
    timeline t;
    timeline_init(t, 256);
    const std::vector<float> clip = ramp_clip(60);
    ASSERT_EQ(timeline_replace(t, clip.data(), clip.size(), 60, 0), "");
    timeline_update_heading(t, {1, 0, 0, 0});
    std::vector<float> smpl(10 * 72);
    for (size_t i = 0; i < smpl.size(); ++i) smpl[i] = 0.001f * float(i);
    const quat base = {std::cos(0.25), 0, 0, std::sin(0.25)};
    float obs[k_encoder_obs];
    build_smpl_encoder_obs(t, base, smpl.data(), obs);
    EXPECT_EQ(obs[0], 2.0f);
    for (int i = 0; i < 720; ++i) EXPECT_EQ(obs[k_enc_smpl + i], smpl[size_t(i)]);
    const int wrist_mujoco[6] = {19, 26, 20, 27, 21, 28};
    for (int k = 0; k < 10; ++k) {
        for (int w = 0; w < 6; ++w) EXPECT_NEAR(obs[k_enc_wrists + 6 * k + w], 0.01 * wrist_mujoco[w] + 0.0006 * k, 1e-6) << k << " " << w;
        // the reference faces +x; the robot 0.5 rad left of it sees it turned −0.5 rad
        const double c = std::cos(-0.5), s = std::sin(-0.5);
        const double want[6] = {c, -s, s, c, 0, 0};
        for (int i = 0; i < 6; ++i) EXPECT_NEAR(obs[k_enc_smpl_anchor + 6 * k + i], want[i], 1e-6) << k << " " << i;
    }
    for (int i = 1; i < k_enc_smpl; ++i) EXPECT_EQ(obs[i], 0.0f) << i;
}

// fixtures/sonic/teleop: each sample's used slices, fed back as the builder's inputs (reference frames
// 0, 5, …, 45, the VR points, the anchor's rotation), come out where the sample has them: bit for bit,
// the anchor within its float round trip; the unused slots 0 as in the samples
TEST(physics_observation_modes, teleop_matches_the_fixture_layout) {
    MB_REQUIRE_SHARED(path, "fixtures/sonic/teleop/sonic_ref_teleop_mode1.mbsonic");
    const std::vector<std::vector<float>> samples = read_enc_obs(path);
    ASSERT_EQ(samples.size(), 8u);
    int anchors = 0;
    for (size_t s = 0; s < samples.size(); ++s) {
        const float * want = samples[s].data();
        ASSERT_EQ(want[0], 1.0f);
        timeline t;
        blank_timeline(t, 50);
        for (int k = 0; k < 10; ++k) {
            ref_frame & r = t.ring[size_t(5 * k)];
            for (int m = 0; m < 12; ++m) {
                r.q[k_isaac_of_mujoco[m]]  = want[k_enc_lower_q + 12 * k + m];
                r.dq[k_isaac_of_mujoco[m]] = want[k_enc_lower_dq + 12 * k + m];
            }
        }
        const bool has_anchor = !all_zero(want + k_enc_anchor1, 6);
        if (has_anchor) {
            const quat q = quat_from_6d(want + k_enc_anchor1);
            for (int i = 0; i < 4; ++i) t.ring[0].root_quat[i] = q[i];
            ++anchors;
        }
        vr3_points vr{};
        for (int i = 0; i < 9; ++i) vr.position[i] = want[k_enc_vr_pos + i];
        for (int i = 0; i < 12; ++i) vr.orientation[i] = want[k_enc_vr_orn + i];
        float obs[k_encoder_obs];
        build_teleop_encoder_obs(t, {1, 0, 0, 0}, vr, obs);
        for (int i = 0; i < k_encoder_obs; ++i) {
            if (i >= k_enc_anchor1 && i < k_enc_anchor1 + 6) {
                if (has_anchor) {
                    EXPECT_NEAR(obs[i], want[i], 2e-6) << "sample " << s << " " << i;
                }
            } else {
                EXPECT_EQ(obs[i], want[i]) << "sample " << s << " " << i;
            }
        }
    }
    EXPECT_EQ(anchors, 7);   // sample 0 is the all-zero one
}

// fixtures/sonic sonic_ref: the same for its mode-2 samples (SMPL joints, anchors and wrists of frames 0..9)
TEST(physics_observation_modes, smpl_matches_the_fixture_layout) {
    MB_REQUIRE_SHARED(path, "fixtures/sonic/sonic_ref.mbsonic");
    const std::vector<std::vector<float>> samples = read_enc_obs(path);
    ASSERT_EQ(samples.size(), 48u);
    int checked = 0;
    for (size_t s = 0; s < samples.size(); ++s) {
        const float * want = samples[s].data();
        // mode 2 and zero-filled unused slots (the junk twin 47 fills them on purpose)
        if (want[0] != 2.0f || !all_zero(want + 1, k_enc_smpl - 1)) continue;
        timeline t;
        blank_timeline(t, 10);
        bool has_anchor = true;
        for (int k = 0; k < 10; ++k) {
            ref_frame & r = t.ring[size_t(k)];
            for (int w = 0; w < 6; ++w) r.q[k_wrist_isaac[w]] = want[k_enc_wrists + 6 * k + w];
            has_anchor = has_anchor && !all_zero(want + k_enc_smpl_anchor + 6 * k, 6);
            if (has_anchor) {
                const quat q = quat_from_6d(want + k_enc_smpl_anchor + 6 * k);
                for (int i = 0; i < 4; ++i) r.root_quat[i] = q[i];
            }
        }
        float obs[k_encoder_obs];
        build_smpl_encoder_obs(t, {1, 0, 0, 0}, want + k_enc_smpl, obs);
        for (int i = 0; i < k_encoder_obs; ++i) {
            if (i >= k_enc_smpl_anchor && i < k_enc_wrists) {
                if (has_anchor) {
                    EXPECT_NEAR(obs[i], want[i], 2e-6) << "sample " << s << " " << i;
                }
            } else {
                EXPECT_EQ(obs[i], want[i]) << "sample " << s << " " << i;
            }
        }
        ++checked;
    }
    EXPECT_EQ(checked, 14);   // 15 mode-2 samples less the junk twin
}
