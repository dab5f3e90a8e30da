// the controller's side of a physics tick through mb::physics::session with a scripted policy: a
// batch in which one robot fails leaves every robot's robot and controller state (history, previous
// action, timeline, clip) as before the call, and the run then continues bit for bit like one that
// never failed; the deploy's 35 rad/s stop and idle re-adaptation inside a session
#include "format/error.h"
#include "physics/mujoco/batch.h"
#include "physics/mujoco/session.h"
#include "physics-test-scene.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace ph = mb::physics;

namespace {

using mb::physics::test::scene_path;

// small actions that depend on every observation value (so history and timeline matter); row
// `nan_row` of a decode gets a NaN action while armed
struct scripted_policy final : ph::policy {
    int nan_row = -1;
    void encode(const float * obs, int batch, float * tokens) override {
        for (int r = 0; r < batch; ++r) {
            double s = 0;
            for (int i = 0; i < ph::k_encoder_obs; ++i) s += obs[r * ph::k_encoder_obs + i] * (1 + i % 7);
            for (int k = 0; k < ph::k_tokens; ++k) tokens[r * ph::k_tokens + k] = float(std::round(8 * std::sin(s + k)) / 16);
        }
    }
    void decode(const float * obs, int batch, float * actions) override {
        for (int r = 0; r < batch; ++r) {
            double s = 0;
            for (int i = 0; i < ph::k_decoder_obs; ++i) s += obs[r * ph::k_decoder_obs + i] * (1 + i % 5);
            for (int j = 0; j < ph::k_body_joints; ++j) actions[r * ph::k_body_joints + j] = float(0.05 * std::sin(1e-2 * s + j));
            if (r == nan_row) actions[r * ph::k_body_joints + 3] = NAN;
        }
    }
};

std::unique_ptr<ph::session> started(ph::policy * pol) {
    auto  s = std::make_unique<ph::session>(scene_path(), ph::physics_config_release(), pol);
    float q[ph::k_qpos36];
    s->qpos36(q);
    s->start(q);
    return s;
}

// the standing pose with a knee bend of amplitude a, `frames` frames at 30 FPS
std::vector<float> knee_clip(const ph::session & s, int frames, float a) {
    float stand[ph::k_qpos36];
    s.qpos36(stand);
    std::vector<float> c;
    for (int f = 0; f < frames; ++f) {
        float q[ph::k_qpos36];
        std::memcpy(q, stand, sizeof q);
        q[7 + 3] += a * std::sin(0.1f * float(f));
        c.insert(c.end(), q, q + ph::k_qpos36);
    }
    return c;
}

void expect_same_controller(const ph::session & a, const ph::session & b, const std::string & what) {
    const ph::history & ha = a.controller_history();
    const ph::history & hb = b.controller_history();
    EXPECT_EQ(ha.count, hb.count) << what;
    EXPECT_EQ(ha.head, hb.head) << what;
    EXPECT_EQ(0, std::memcmp(ha.e, hb.e, sizeof ha.e)) << what << ": history entries";
    EXPECT_EQ(0, std::memcmp(ha.last_action, hb.last_action, sizeof ha.last_action)) << what << ": previous action";
    EXPECT_TRUE(ph::timeline_save(a.controller_timeline()) == ph::timeline_save(b.controller_timeline())) << what << ": timeline";
    const ph::robot & ra = a.mujoco();
    const ph::robot & rb = b.mujoco();
    EXPECT_EQ(0, std::memcmp(ra.qpos(), rb.qpos(), sizeof(double) * size_t(ra.nq()))) << what << ": robot qpos";
    EXPECT_EQ(0, std::memcmp(ra.qvel(), rb.qvel(), sizeof(double) * size_t(ra.nv()))) << what << ": robot qvel";
    EXPECT_EQ(a.time(), b.time()) << what;
}

} // namespace

TEST(PhysicsBatch, FailedBatchRollsBackEveryController) {
    NEED_SCENE();
    constexpr int   n = 3;
    scripted_policy pol;
    std::unique_ptr<ph::session> a[n], b[n];   // a fails once, b never
    std::vector<std::vector<float>> clips(n);
    for (int i = 0; i < n; ++i) {
        a[i] = started(&pol);
        b[i] = started(&pol);
        clips[size_t(i)] = knee_clip(*a[i], 60, 0.05f * float(i + 1));
    }
    ph::session * pa[n], * pb[n];
    const float * cp[n];
    uint64_t      frames[n];
    double        times[n];
    auto tick = [&](ph::session * const * s) { ph::step_batch(s, n, cp, frames, times); };
    for (int i = 0; i < n; ++i) {
        pa[i]     = a[i].get();
        pb[i]     = b[i].get();
        cp[i]     = clips[size_t(i)].data();
        frames[i] = 60;
    }
    for (int t = 0; t < 5; ++t) {
        for (int i = 0; i < n; ++i) times[i] = t / 50.0;
        tick(pa);
        tick(pb);
    }
    // tick 5: session 0 gets a new clip (a pending replacement), session 2's action is NaN
    const std::vector<float> replacement = knee_clip(*a[0], 45, -0.1f);
    cp[0]       = replacement.data();
    frames[0]   = 45;
    pol.nan_row = 2;
    try {
        tick(pa);
        FAIL() << "the batch should fail";
    } catch (const mb::error & e) {
        EXPECT_EQ(e.code(), mb::status::compute_failed);
        EXPECT_NE(std::string(e.what()).find("session 2: SONIC action 3 is not finite"), std::string::npos) << e.what();
    }
    pol.nan_row = -1;
    for (int i = 0; i < n; ++i) expect_same_controller(*a[i], *b[i], "after the failed batch, session " + std::to_string(i));
    // and the run goes on exactly as the one that never failed (replacement and all)
    for (int t = 5; t < 12; ++t) {
        for (int i = 0; i < n; ++i) times[i] = t / 50.0;
        tick(pa);
        tick(pb);
        for (int i = 0; i < n; ++i) {
            const std::string at = "tick " + std::to_string(t) + " session " + std::to_string(i);
            expect_same_controller(*a[i], *b[i], at);
            for (int f = 0; f < 2; ++f) EXPECT_EQ(a[i]->trace(f), b[i]->trace(f)) << at << " trace " << f;
        }
    }
}

// the same for one session: a failed policy tick (here the encoder's NaN-free but the decoder's NaN)
// leaves history and timeline as they were
TEST(PhysicsBatch, FailedSingleStepRollsBackTheController) {
    NEED_SCENE();
    scripted_policy pol;
    auto a = started(&pol), b = started(&pol);
    const std::vector<float> clip = knee_clip(*a, 60, 0.1f);
    for (int t = 0; t < 3; ++t) {
        a->step(clip.data(), 60, t / 50.0);
        b->step(clip.data(), 60, t / 50.0);
    }
    pol.nan_row = 0;
    const std::vector<float> other = knee_clip(*a, 30, -0.1f);
    EXPECT_THROW(a->step(other.data(), 30, 0.06), mb::error);
    pol.nan_row = -1;
    expect_same_controller(*a, *b, "after the failed step");
    a->step(other.data(), 30, 0.06);
    b->step(other.data(), 30, 0.06);
    expect_same_controller(*a, *b, "the next step");
}

// g1_deploy_onnx_ref.cpp:2832: with the real robot's stop on, a policy tick from a state with a joint
// above +35 rad/s fails and changes nothing; −40 rad/s and the flag off pass
TEST(PhysicsBatch, VelocityStopRefusesTheTick) {
    NEED_SCENE();
    scripted_policy pol;
    auto s = started(&pol);
    const std::vector<float> clip = knee_clip(*s, 60, 0.0f);
    std::vector<double> qpos(s->mujoco().qpos(), s->mujoco().qpos() + s->mujoco().nq());
    std::vector<double> qvel(size_t(s->mujoco().nv()), 0.0);
    const int dof = s->mujoco().hinge_address(6) - 1;   // MuJoCo joint 6 = Isaac 1 (right hip pitch)
    qvel[size_t(dof)] = 36.0;
    s->mujoco().set_state(qpos.data(), qvel.data());
    s->set_controller_flags(ph::k_control_velocity_stop);
    const ph::session::controller_mark before = s->controller_save();
    try {
        s->step(clip.data(), 60, 0.0);
        FAIL() << "the stop should refuse the tick";
    } catch (const mb::error & e) {
        EXPECT_EQ(e.code(), mb::status::compute_failed);
        EXPECT_NE(std::string(e.what()).find("Isaac joint 1"), std::string::npos) << e.what();
    }
    EXPECT_EQ(s->time(), 0.0);
    EXPECT_EQ(s->controller_history().count, before.hist.count);
    EXPECT_EQ(s->controller_timeline().length, before.line.length);
    qvel[size_t(dof)] = -40.0;
    s->mujoco().set_state(qpos.data(), qvel.data());
    EXPECT_NO_THROW(s->step(clip.data(), 60, 0.0));
    qvel[size_t(dof)] = 36.0;
    s->mujoco().set_state(qpos.data(), qvel.data());
    s->set_controller_flags(0);
    EXPECT_NO_THROW(s->step(clip.data(), 60, 0.02));
}

// the held last frame re-adapts only with the flag, only once the clip has ended
TEST(PhysicsBatch, IdleReadaptEditsTheHeldFrame) {
    NEED_SCENE();
    scripted_policy pol;
    auto on = started(&pol), off = started(&pol);
    on->set_controller_flags(ph::k_control_idle_readapt);
    // 3 frames at 30 FPS → 5 at 50 Hz, knees 0.3 rad beyond the standing pose: mean lower-body error
    // 0.3 · 2 / 12 = 0.05 rad ... plus the hips below
    std::vector<float> clip = knee_clip(*on, 3, 0.0f);
    for (int f = 0; f < 3; ++f) {
        for (int m : {0, 3, 6, 9}) clip[size_t(f * ph::k_qpos36 + 7 + m)] += 0.6f;   // hip pitch, knee: error 0.2
    }
    double last_on = 0, last_off = 0;
    for (int t = 0; t < 8; ++t) {
        on->step(clip.data(), 3, t / 50.0);
        off->step(clip.data(), 3, t / 50.0);
        const ph::timeline & a = on->controller_timeline();
        const ph::timeline & b = off->controller_timeline();
        last_on  = ph::timeline_frame(a, a.current).q[0];
        last_off = ph::timeline_frame(b, b.current).q[0];
        if (t < 4) {
            EXPECT_EQ(last_on, last_off) << "tick " << t << ": not held yet";
        }
    }
    EXPECT_EQ(on->controller_timeline().current, 4);
    EXPECT_LT(last_on, last_off);   // Isaac 0 (left hip pitch) drifts toward the robot's smaller angle
    EXPECT_GT(last_on, last_off - 0.6 * 0.02 * 4 - 1e-9);
}

// a clip's identity: any one changed value, two sign flips that would cancel in a plain xor-multiply
// hash, an odd tail value and the length all change it; the same floats give the same id
TEST(PhysicsClipHash, SeesEveryChange) {
    std::vector<float> a(36 * 3);
    for (size_t i = 0; i < a.size(); ++i) a[i] = float(std::sin(0.3 * double(i)));
    const uint64_t h = ph::clip_hash(a.data(), a.size());
    EXPECT_EQ(h, ph::clip_hash(std::vector<float>(a).data(), a.size()));
    for (size_t i = 0; i < a.size(); ++i) {
        auto b = a;
        b[i]   = std::nextafter(b[i], 2.0f);
        EXPECT_NE(h, ph::clip_hash(b.data(), b.size())) << "value " << i;
    }
    auto b = a;
    b[1]   = -b[1];   // bit 63 of words 0 and 3
    b[7]   = -b[7];
    EXPECT_NE(h, ph::clip_hash(b.data(), b.size()));
    EXPECT_NE(ph::clip_hash(a.data(), 35), ph::clip_hash(a.data(), 34));
    EXPECT_NE(h, ph::clip_hash(a.data(), a.size() - 1));
}
