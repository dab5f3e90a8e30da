// the physics C ABI (physics.h) through the shared library: the scene as compiled, start/step rules,
// the fall flag, batched = sequential bit for bit, state and pose out, collision geometry, and
// hostile step inputs leaving the session unchanged; the C++ wrappers (motionbricks.hpp) at the end
#include <motionbricks/motionbricks.hpp>
#include <motionbricks/physics.h>
#include <motionbricks/sonic.h>

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

namespace {

std::string scene_path() {
    return std::string(MB_SHARED) + "/data/upstream/mjcf/scene_43dof.xml";
}

struct session {
    mb_physics * p = nullptr;
    ~session() { mb_physics_free(p); }
};

bool available() {
    char v[32];
    return mb_physics_engine_version(v, sizeof v, nullptr, 0) == MB_OK;
}

#define NEED_SCENE()                                                                                          \
    do {                                                                                                      \
        if (!available()) GTEST_SKIP() << "this build has no MuJoCo";                                         \
        if (!std::filesystem::exists(scene_path())) GTEST_SKIP() << scene_path() << " is absent (../shared)"; \
    } while (0)

void create(session & s) {
    char error[512];
    ASSERT_EQ(mb_physics_create(nullptr, scene_path().c_str(), nullptr, &s.p, error, sizeof error), MB_OK) << error;
}

// a started session under an override of the default pose; gain_scale multiplies the release's kp
void start_holding(session & s, float gain_scale) {
    create(s);
    char  error[512];
    float root[3], local[136];
    ASSERT_EQ(mb_physics_get_pose(s.p, root, 3, local, 136, error, sizeof error), MB_OK) << error;
    ASSERT_EQ(mb_physics_start(s.p, root, 3, local, 136, error, sizeof error), MB_OK) << error;
    float kp[29], kd[29], pose[29];
    ASSERT_EQ(mb_physics_get_table(s.p, kp, kd, pose, nullptr, 29, error, sizeof error), MB_OK) << error;
    ASSERT_EQ(mb_physics_set_action_override(s.p, pose, 29, error, sizeof error), MB_OK) << error;
    for (int i = 0; i < 29; ++i) kp[i] *= gain_scale;
    ASSERT_EQ(mb_physics_set_gains(s.p, kp, kd, 29, error, sizeof error), MB_OK) << error;
}

// the table's default pose
std::array<float, 29> default_pose(const session & s) {
    std::array<float, 29> pose{};
    EXPECT_EQ(mb_physics_get_table(s.p, nullptr, nullptr, pose.data(), nullptr, 29, nullptr, 0), MB_OK);
    return pose;
}

std::vector<float> standing_qpos(const session & s) {
    std::vector<float> q(36);
    EXPECT_EQ(mb_physics_get_mujoco_qpos(s.p, q.data(), 36, nullptr, 0), MB_OK);
    return q;
}

} // namespace

TEST(PhysicsCapi, EngineVersionOrUnavailable) {
    char       v[32];
    char       error[256];
    const auto st = mb_physics_engine_version(v, sizeof v, error, sizeof error);
    if (st == MB_BACKEND_UNAVAILABLE) {
        mb_physics * p = nullptr;
        EXPECT_EQ(mb_physics_create(nullptr, "x.xml", nullptr, &p, nullptr, 0), MB_BACKEND_UNAVAILABLE);
        EXPECT_EQ(p, nullptr);
        return;
    }
    ASSERT_EQ(st, MB_OK) << error;
    EXPECT_EQ(v[0] >= '2', true) << v;
    EXPECT_EQ(mb_physics_engine_version(v, 2, nullptr, 0), MB_INVALID_ARGUMENT);
}

TEST(PhysicsCapi, SceneAsCompiled) {
    NEED_SCENE();
    session s;
    create(s);
    uint32_t nq = 0, nv = 0, nu = 0;
    uint64_t length = 0;
    ASSERT_EQ(mb_physics_get_scene(s.p, &nq, &nv, &nu, nullptr, 0, &length, nullptr, 0), MB_OK);
    EXPECT_EQ(nq, 50u);
    EXPECT_EQ(nv, 49u);
    EXPECT_EQ(nu, 43u);
    std::string names(length + 1, '\0');
    ASSERT_EQ(mb_physics_get_scene(s.p, nullptr, nullptr, nullptr, names.data(), names.size(), &length, nullptr, 0), MB_OK);
    EXPECT_NE(names.find("head_link.STL"), std::string::npos);
    // the release's table: policy_parameters.hpp (knee: 7520_22 armature · ω², default 0.669)
    float kp[29], pose[29], limit[29];
    ASSERT_EQ(mb_physics_get_table(s.p, kp, nullptr, pose, limit, 29, nullptr, 0), MB_OK);
    EXPECT_NEAR(kp[3], 99.098, 1e-3);
    EXPECT_FLOAT_EQ(pose[3], 0.669f);
    EXPECT_FLOAT_EQ(limit[3], 139.0f);
    int32_t parents[30];
    ASSERT_EQ(mb_physics_skeleton(s.p, parents, 30, nullptr, 0), MB_OK);
    EXPECT_EQ(parents[0], -1);
    for (int b = 1; b < 30; ++b) EXPECT_TRUE(parents[b] >= 0 && parents[b] < b) << b;
    EXPECT_EQ(mb_physics_skeleton(s.p, parents, 29, nullptr, 0), MB_INVALID_ARGUMENT);
}

// a .mbphysics table written by hand (reference-runtime §3(c)): kp 50 everywhere; a broken one is refused
TEST(PhysicsCapi, ConfigFile) {
    NEED_SCENE();
    const int   skel[29] = {1, 2, 3, 4, 5, 6, 8, 9, 10, 11, 12, 13, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 26, 27, 28, 29, 30, 31, 32};
    std::string bytes    = "MBSPHY01";
    for (int j : skel) {
        const uint32_t u     = uint32_t(j);
        const double   v[17] = {0, 1, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0.1, 0.25, 50.0, 2.0, 60.0};
        bytes.append(reinterpret_cast<const char *>(&u), 4);
        bytes.append(reinterpret_cast<const char *>(v), sizeof v);
    }
    const std::string path = testing::TempDir() + "/table.mbphysics";
    std::FILE *       f    = std::fopen(path.c_str(), "wb");
    ASSERT_TRUE(f);
    std::fwrite(bytes.data(), 1, bytes.size(), f);
    std::fclose(f);
    session s;
    char    error[512];
    ASSERT_EQ(mb_physics_create(nullptr, scene_path().c_str(), path.c_str(), &s.p, error, sizeof error), MB_OK) << error;
    float kp[29], limit[29];
    ASSERT_EQ(mb_physics_get_table(s.p, kp, nullptr, nullptr, limit, 29, nullptr, 0), MB_OK);
    EXPECT_EQ(kp[10], 50.0f);
    EXPECT_EQ(limit[28], 60.0f);
    f = std::fopen(path.c_str(), "ab");
    std::fputc(0, f);   // a trailing byte
    std::fclose(f);
    mb_physics * bad = nullptr;
    EXPECT_EQ(mb_physics_create(nullptr, scene_path().c_str(), path.c_str(), &bad, error, sizeof error), MB_INVALID_FORMAT);
    EXPECT_EQ(bad, nullptr);
}

TEST(PhysicsCapi, StartAndStepRules) {
    NEED_SCENE();
    session s;
    create(s);
    char               error[512];
    std::vector<float> q = standing_qpos(s);
    float              actual[90], reference[90];
    EXPECT_EQ(mb_physics_step_qpos(s.p, q.data(), 36, 1, 0.0, actual, 90, reference, 90, error, sizeof error), MB_INVALID_ARGUMENT);
    float root[3], local[136];
    ASSERT_EQ(mb_physics_get_pose(s.p, root, 3, local, 136, nullptr, 0), MB_OK);
    ASSERT_EQ(mb_physics_start(s.p, root, 3, local, 136, error, sizeof error), MB_OK) << error;
    EXPECT_EQ(mb_physics_start(s.p, root, 3, local, 136, nullptr, 0), MB_INVALID_ARGUMENT);   // once per reset
    // no controller yet: an override is needed
    EXPECT_EQ(mb_physics_step(s.p, root, 3, local, 136, 1, 0.0, actual, 90, reference, 90, error, sizeof error), MB_NOT_IMPLEMENTED);
    ASSERT_EQ(mb_physics_set_action_override(s.p, default_pose(s).data(), 29, nullptr, 0), MB_OK);
    ASSERT_EQ(mb_physics_step(s.p, root, 3, local, 136, 1, 0.0, actual, 90, reference, 90, error, sizeof error), MB_OK) << error;
    double time = 0;
    ASSERT_EQ(mb_physics_status(s.p, &time, nullptr, nullptr, nullptr, 0), MB_OK);
    EXPECT_NEAR(time, 0.02, 1e-12);
    // the reference bodies of the start pose are where the robot started: within a tick's motion
    for (int k = 0; k < 90; ++k) EXPECT_NEAR(actual[k], reference[k], 0.02) << k;
    // traces: targets 29, state 65, substeps 348; no policy fields under an override
    uint64_t n = 1;
    ASSERT_EQ(mb_physics_trace(s.p, MB_PHYSICS_TRACE_TARGETS, nullptr, 0, &n, nullptr, 0), MB_OK);
    EXPECT_EQ(n, 29u);
    ASSERT_EQ(mb_physics_trace(s.p, MB_PHYSICS_TRACE_STATE, nullptr, 0, &n, nullptr, 0), MB_OK);
    EXPECT_EQ(n, 65u);
    ASSERT_EQ(mb_physics_trace(s.p, MB_PHYSICS_TRACE_SUBSTEPS, nullptr, 0, &n, nullptr, 0), MB_OK);
    EXPECT_EQ(n, 348u);
    ASSERT_EQ(mb_physics_trace(s.p, MB_PHYSICS_TRACE_ACTIONS, nullptr, 0, &n, nullptr, 0), MB_OK);
    EXPECT_EQ(n, 0u);
    EXPECT_EQ(mb_physics_trace(s.p, 6, nullptr, 0, &n, nullptr, 0), MB_INVALID_ARGUMENT);
    // reset: not started, time 0
    ASSERT_EQ(mb_physics_reset(s.p, nullptr, 0), MB_OK);
    ASSERT_EQ(mb_physics_status(s.p, &time, nullptr, nullptr, nullptr, 0), MB_OK);
    EXPECT_EQ(time, 0.0);
    EXPECT_EQ(mb_physics_start(s.p, root, 3, local, 136, nullptr, 0), MB_OK);
}

TEST(PhysicsCapi, PoseRoundTrip) {
    NEED_SCENE();
    session s;
    create(s);
    float root[3], local[136], root2[3], local2[136];
    ASSERT_EQ(mb_physics_get_pose(s.p, root, 3, local, 136, nullptr, 0), MB_OK);
    ASSERT_EQ(mb_physics_start(s.p, root, 3, local, 136, nullptr, 0), MB_OK);
    ASSERT_EQ(mb_physics_get_pose(s.p, root2, 3, local2, 136, nullptr, 0), MB_OK);
    for (int k = 0; k < 3; ++k) EXPECT_NEAR(root[k], root2[k], 1e-5);
    for (int k = 0; k < 136; ++k) EXPECT_NEAR(local[k], local2[k], 1e-4) << k;
}

TEST(PhysicsCapi, FallIsStickyUntilReset) {
    NEED_SCENE();
    session s;
    start_holding(s, 1.0f);   // the release's gains cannot hold the pose without the policy
    std::vector<float> q = standing_qpos(s);
    uint32_t fallen = 0;
    int      k      = 0;
    for (; k < 150 && !fallen; ++k) {
        ASSERT_EQ(mb_physics_step_qpos(s.p, q.data(), 36, 1, 0.0, nullptr, 0, nullptr, 0, nullptr, 0), MB_OK);
        ASSERT_EQ(mb_physics_status(s.p, nullptr, &fallen, nullptr, nullptr, 0), MB_OK);
    }
    ASSERT_EQ(fallen, 1u);
    // sticky: lift the robot back up by the override? no: it stays flagged whatever follows
    for (int j = 0; j < 5; ++j) ASSERT_EQ(mb_physics_step_qpos(s.p, q.data(), 36, 1, 0.0, nullptr, 0, nullptr, 0, nullptr, 0), MB_OK);
    ASSERT_EQ(mb_physics_status(s.p, nullptr, &fallen, nullptr, nullptr, 0), MB_OK);
    EXPECT_EQ(fallen, 1u);
    ASSERT_EQ(mb_physics_reset(s.p, nullptr, 0), MB_OK);
    ASSERT_EQ(mb_physics_status(s.p, nullptr, &fallen, nullptr, nullptr, 0), MB_OK);
    EXPECT_EQ(fallen, 0u);
}

TEST(PhysicsCapi, BatchedEqualsSequentialBitForBit) {
    NEED_SCENE();
    constexpr int n = 3;
    session       batched[n], sequential[n];
    for (int i = 0; i < n; ++i) {
        start_holding(batched[i], 8.0f);
        start_holding(sequential[i], 8.0f);
        float t[29];
        const auto pose = default_pose(batched[i]);
        for (int j = 0; j < 29; ++j) t[j] = pose[size_t(j)] + 0.05f * float(i) * std::sin(float(j));
        ASSERT_EQ(mb_physics_set_action_override(batched[i].p, t, 29, nullptr, 0), MB_OK);
        ASSERT_EQ(mb_physics_set_action_override(sequential[i].p, t, 29, nullptr, 0), MB_OK);
    }
    std::vector<float> q = standing_qpos(batched[0]);
    mb_physics *       ps[n];
    const float *      clips[n];
    uint64_t           frames[n];
    double             times[n];
    for (int i = 0; i < n; ++i) {
        ps[i]     = batched[i].p;
        clips[i]  = q.data();
        frames[i] = 1;
        times[i]  = 0.1 * i;
    }
    float out[90 * n], one[90];
    for (int tick = 0; tick < 25; ++tick) {
        char error[512];
        ASSERT_EQ(mb_physics_step_batch(ps, n, clips, frames, times, out, sizeof out / sizeof *out, error, sizeof error), MB_OK) << error;
        for (int i = 0; i < n; ++i) {
            ASSERT_EQ(mb_physics_step_qpos(sequential[i].p, q.data(), 36, 1, times[i], one, 90, nullptr, 0, nullptr, 0), MB_OK);
            ASSERT_EQ(0, std::memcmp(one, out + 90 * i, sizeof one)) << "tick " << tick << " session " << i;
        }
    }
    for (int i = 0; i < n; ++i) {
        double   a[50], b[50], va[49], vb[49];
        uint64_t nq, nv;
        ASSERT_EQ(mb_physics_get_state(batched[i].p, a, 50, &nq, va, 49, &nv, nullptr, 0), MB_OK);
        ASSERT_EQ(mb_physics_get_state(sequential[i].p, b, 50, &nq, vb, 49, &nv, nullptr, 0), MB_OK);
        EXPECT_EQ(0, std::memcmp(a, b, sizeof a));
        EXPECT_EQ(0, std::memcmp(va, vb, sizeof va));
    }
    // a bad lane: nothing moves
    double before = 0, after = 0;
    ASSERT_EQ(mb_physics_status(ps[0], &before, nullptr, nullptr, nullptr, 0), MB_OK);
    std::vector<float> bad = q;
    bad[10]                = NAN;
    clips[2]               = bad.data();
    EXPECT_EQ(mb_physics_step_batch(ps, n, clips, frames, times, out, sizeof out / sizeof *out, nullptr, 0), MB_INVALID_ARGUMENT);
    ASSERT_EQ(mb_physics_status(ps[0], &after, nullptr, nullptr, nullptr, 0), MB_OK);
    EXPECT_EQ(before, after);
    ps[1] = ps[0];
    clips[2] = q.data();
    EXPECT_EQ(mb_physics_step_batch(ps, n, clips, frames, times, out, sizeof out / sizeof *out, nullptr, 0), MB_INVALID_ARGUMENT);
    EXPECT_EQ(mb_physics_step_batch(ps, 65, clips, frames, times, out, sizeof out / sizeof *out, nullptr, 0), MB_INVALID_ARGUMENT);
}

TEST(PhysicsCapi, HostileStepInputsChangeNothing) {
    NEED_SCENE();
    session s;
    start_holding(s, 8.0f);
    float root[3], local[136];
    ASSERT_EQ(mb_physics_get_pose(s.p, root, 3, local, 136, nullptr, 0), MB_OK);
    std::vector<float> q = standing_qpos(s);
    float              a[90];
    auto time_now = [&] {
        double t = -1;
        mb_physics_status(s.p, &t, nullptr, nullptr, nullptr, 0);
        return t;
    };
    // wrong counts, huge frame counts (never read), NaN, bad quaternions, bad times, small buffers
    EXPECT_EQ(mb_physics_step(s.p, root, 2, local, 136, 1, 0.0, a, 90, nullptr, 0, nullptr, 0), MB_INVALID_ARGUMENT);
    EXPECT_EQ(mb_physics_step(s.p, root, 3, local, 135, 1, 0.0, a, 90, nullptr, 0, nullptr, 0), MB_INVALID_ARGUMENT);
    EXPECT_EQ(mb_physics_step(s.p, root, 3ull << 40, local, 136ull << 40, 1ull << 40, 0.0, a, 90, nullptr, 0, nullptr, 0), MB_INVALID_ARGUMENT);
    EXPECT_EQ(mb_physics_step(s.p, root, 0, local, 0, 0, 0.0, a, 90, nullptr, 0, nullptr, 0), MB_INVALID_ARGUMENT);
    EXPECT_EQ(mb_physics_step_qpos(s.p, q.data(), 36ull << 30, 1ull << 30, 0.0, a, 90, nullptr, 0, nullptr, 0), MB_INVALID_ARGUMENT);
    EXPECT_EQ(mb_physics_step(s.p, root, 3, local, 136, 1, NAN, a, 90, nullptr, 0, nullptr, 0), MB_INVALID_ARGUMENT);
    EXPECT_EQ(mb_physics_step(s.p, root, 3, local, 136, 1, -1.0, a, 90, nullptr, 0, nullptr, 0), MB_INVALID_ARGUMENT);
    EXPECT_EQ(mb_physics_step(s.p, root, 3, local, 136, 1, 0.0, a, 89, nullptr, 0, nullptr, 0), MB_INVALID_ARGUMENT);
    float bad_root[3] = {root[0], NAN, root[2]};
    EXPECT_EQ(mb_physics_step(s.p, bad_root, 3, local, 136, 1, 0.0, a, 90, nullptr, 0, nullptr, 0), MB_INVALID_ARGUMENT);
    float bad_local[136];
    std::memcpy(bad_local, local, sizeof bad_local);
    bad_local[20] = 3.0f;
    EXPECT_EQ(mb_physics_step(s.p, root, 3, bad_local, 136, 1, 0.0, a, 90, nullptr, 0, nullptr, 0), MB_INVALID_ARGUMENT);
    std::vector<float> bq = q;
    bq[3]                 = 2.0f;
    EXPECT_EQ(mb_physics_step_qpos(s.p, bq.data(), 36, 1, 0.0, a, 90, nullptr, 0, nullptr, 0), MB_INVALID_ARGUMENT);
    bq    = q;
    bq[8] = INFINITY;
    EXPECT_EQ(mb_physics_step_qpos(s.p, bq.data(), 36, 1, 0.0, a, 90, nullptr, 0, nullptr, 0), MB_INVALID_ARGUMENT);
    auto t = default_pose(s);
    EXPECT_EQ(mb_physics_set_action_override(s.p, t.data(), 28, nullptr, 0), MB_INVALID_ARGUMENT);
    t[3] = NAN;
    EXPECT_EQ(mb_physics_set_action_override(s.p, t.data(), 29, nullptr, 0), MB_INVALID_ARGUMENT);
    EXPECT_EQ(time_now(), 0.0);
    // and the session still works
    EXPECT_EQ(mb_physics_step(s.p, root, 3, local, 136, 1, 5.0, a, 90, nullptr, 0, nullptr, 0), MB_OK);
    EXPECT_NEAR(time_now(), 0.02, 1e-12);
}

TEST(PhysicsCapi, CollisionGeometry) {
    NEED_SCENE();
    session s;
    create(s);
    uint32_t n = 0;
    ASSERT_EQ(mb_physics_collision_count(s.p, &n, nullptr, 0), MB_OK);
    ASSERT_GT(n, 10u);
    int placeholders = 0;
    for (uint32_t i = 0; i < n; ++i) {
        uint32_t type = 0;
        float    size[3];
        char     name[128];
        ASSERT_EQ(mb_physics_collision_shape(s.p, i, &type, size, 3, name, sizeof name, nullptr, 0), MB_OK);
        EXPECT_TRUE(type >= 2 && type <= 7) << name;
        placeholders += std::strncmp(name, "placeholder:", 12) == 0;
        uint64_t count = 0;
        ASSERT_EQ(mb_physics_collision_triangles(s.p, i, nullptr, 0, &count, nullptr, 0), MB_OK);
        EXPECT_EQ(count % 9, 0u);
        EXPECT_EQ(type == 7, count > 0) << name;
    }
    EXPECT_GT(placeholders, 0);
    std::vector<float> tr(7 * n);
    ASSERT_EQ(mb_physics_collision_transforms(s.p, tr.data(), tr.size(), nullptr, 0), MB_OK);
    for (uint32_t i = 0; i < n; ++i) {
        double qn = 0;
        for (int k = 3; k < 7; ++k) qn += double(tr[7 * i + k]) * tr[7 * i + k];
        EXPECT_NEAR(qn, 1.0, 1e-5);
    }
    EXPECT_EQ(mb_physics_collision_transforms(s.p, tr.data(), tr.size() - 1, nullptr, 0), MB_INVALID_ARGUMENT);
    uint32_t type;
    float    size[3];
    EXPECT_EQ(mb_physics_collision_shape(s.p, n, &type, size, 3, nullptr, 0, nullptr, 0), MB_INVALID_ARGUMENT);
}

// ---- the SONIC controller in the loop (random weights: the motion is meaningless, the plumbing is not)

namespace {

std::string random_sonic_file() {
    static std::string path;
    if (!path.empty()) return path;
    const std::string p   = testing::TempDir() + "/physics-capi-sonic.gguf";
    const std::string cmd = std::string("'") + MB_PYTHON + "' '" + MB_SRC + "/tools/convert.py' random-sonic --seed 5 --out '" + p +
                            "' > /dev/null 2>&1";
    if (std::system(cmd.c_str()) != 0) return "";
    path = p;
    return path;
}

struct sonic_handle {
    mb_sonic * s = nullptr;
    ~sonic_handle() { mb_sonic_free(s); }
};

} // namespace

TEST(PhysicsCapi, SonicClosedLoopAndBatch) {
    NEED_SCENE();
    const std::string gguf = random_sonic_file();
    if (gguf.empty()) GTEST_SKIP() << "convert.py random-sonic failed (numpy missing?)";
    sonic_handle sonic;
    char         error[512];
    ASSERT_EQ(mb_sonic_load(gguf.c_str(), nullptr, &sonic.s, error, sizeof error), MB_OK) << error;
    constexpr int n = 3;
    session       batched[n], sequential[n];
    for (session * group : {batched, sequential}) {
        for (int i = 0; i < n; ++i) {
            ASSERT_EQ(mb_physics_create(sonic.s, scene_path().c_str(), nullptr, &group[i].p, error, sizeof error), MB_OK) << error;
            float q[36];
            ASSERT_EQ(mb_physics_get_mujoco_qpos(group[i].p, q, 36, nullptr, 0), MB_OK);
            ASSERT_EQ(mb_physics_start_qpos(group[i].p, q, 36, error, sizeof error), MB_OK) << error;
        }
    }
    // each robot's own clip: the standing pose with a knee bend, 60 frames
    std::vector<std::vector<float>> clips(n);
    for (int i = 0; i < n; ++i) {
        const std::vector<float> stand = standing_qpos(batched[i]);
        for (int f = 0; f < 60; ++f) {
            std::vector<float> q = stand;
            q[7 + 3] += 0.1f * float(i) * std::sin(0.1f * float(f));
            clips[size_t(i)].insert(clips[size_t(i)].end(), q.begin(), q.end());
        }
    }
    mb_physics *  ps[n];
    const float * cp[n];
    uint64_t      frames[n];
    double        times[n];
    for (int tick = 0; tick < 10; ++tick) {
        for (int i = 0; i < n; ++i) {
            ps[i]     = batched[i].p;
            cp[i]     = clips[size_t(i)].data();
            frames[i] = 60;
            times[i]  = tick / 50.0;
        }
        ASSERT_EQ(mb_physics_step_batch(ps, n, cp, frames, times, nullptr, 0, error, sizeof error), MB_OK) << error;
        for (int i = 0; i < n; ++i) {
            ASSERT_EQ(mb_physics_step_qpos(sequential[i].p, cp[i], 60 * 36, 60, times[i], nullptr, 0, nullptr, 0, error, sizeof error), MB_OK)
                << error;
        }
    }
    // the policy ran: observation and action traces
    uint64_t count = 0;
    ASSERT_EQ(mb_physics_trace(batched[0].p, MB_PHYSICS_TRACE_ENCODER_OBS, nullptr, 0, &count, nullptr, 0), MB_OK);
    EXPECT_EQ(count, 1762u);
    ASSERT_EQ(mb_physics_trace(batched[0].p, MB_PHYSICS_TRACE_DECODER_OBS, nullptr, 0, &count, nullptr, 0), MB_OK);
    EXPECT_EQ(count, 994u);
    std::vector<double> actions(29);
    ASSERT_EQ(mb_physics_trace(batched[0].p, MB_PHYSICS_TRACE_ACTIONS, actions.data(), 29, &count, nullptr, 0), MB_OK);
    for (double a : actions) EXPECT_TRUE(std::isfinite(a));
    // batched (one encoder and one decoder GEMM for 3 robots) against one robot at a time
    double worst = 0;
    for (int i = 0; i < n; ++i) {
        double a[50], b[50];
        ASSERT_EQ(mb_physics_get_state(batched[i].p, a, 50, nullptr, nullptr, 0, nullptr, nullptr, 0), MB_OK);
        ASSERT_EQ(mb_physics_get_state(sequential[i].p, b, 50, nullptr, nullptr, 0, nullptr, nullptr, 0), MB_OK);
        for (int k = 0; k < 50; ++k) worst = std::max(worst, std::fabs(a[k] - b[k]));
    }
    RecordProperty("batched_vs_sequential_max_qpos_diff", std::to_string(worst));
    EXPECT_EQ(worst, 0.0) << "batched SONIC rows differ from single calls";
}

// ---- the C++ wrappers (motionbricks.hpp) over the same functions ---------------------------------

TEST(PhysicsHpp, SessionsBatchOverrideStateAndErrors) {
    NEED_SCENE();
    namespace mbx = motionbricks;
    mbx::physics a = mbx::physics::create(nullptr, scene_path());
    mbx::physics b = mbx::physics::create(nullptr, scene_path());
    mbx::physics c = mbx::physics::create(nullptr, scene_path());   // c: a, one tick at a time
    const mbx::physics::scene_info info = a.scene();
    EXPECT_EQ(info.nq, 50u);
    EXPECT_EQ(info.nv, 49u);
    EXPECT_EQ(info.nu, 43u);
    EXPECT_NE(info.placeholders.find(".STL"), std::string::npos);
    const std::array<float, 36> stand = a.mujoco_qpos();
    const mbx::physics::table   table = a.get_table();
    std::array<float, 29>       kp = table.kp;
    for (float & k : kp) k *= 8;
    for (mbx::physics * p : {&a, &b, &c}) {
        p->start_qpos(stand);
        p->set_gains(kp, table.kd);
        p->set_action_override(table.default_angles);
    }
    // a second start is refused with the C ABI's status and message
    try {
        a.start(a.pose());
        FAIL() << "a second start should throw";
    } catch (const mbx::error & e) {
        EXPECT_EQ(e.status(), MB_INVALID_ARGUMENT);
        EXPECT_NE(std::string(e.what()).find("started already"), std::string::npos) << e.what();
    }
    std::array<float, 29> bent = table.default_angles;
    bent[3] += 0.2f;   // left knee
    b.set_action_override(bent);
    const std::vector<const float *> clips  = {stand.data(), stand.data()};
    const std::vector<uint64_t>      frames = {1, 1};
    for (int t = 0; t < 5; ++t) {
        const std::vector<float>  both = mbx::step_batch({&a, &b}, clips, frames, {0.0, 0.0});
        const mbx::physics_bodies one  = c.step_qpos(stand.data(), 1, 0.0);
        ASSERT_EQ(both.size(), 180u);
        EXPECT_TRUE(std::equal(one.begin(), one.end(), both.begin())) << "tick " << t;
    }
    EXPECT_NEAR(a.status().time, 0.1, 1e-12);
    EXPECT_FALSE(a.status().fallen);
    const mbx::physics::state sa = a.get_state(), sc = c.get_state();
    ASSERT_EQ(sa.qpos.size(), 50u);
    EXPECT_EQ(sa.qpos, sc.qpos);
    EXPECT_EQ(sa.qvel, sc.qvel);
    const std::vector<double> targets = b.trace(MB_PHYSICS_TRACE_TARGETS);
    ASSERT_EQ(targets.size(), 29u);
    EXPECT_EQ(targets[3], double(bent[3]));
    EXPECT_TRUE(b.trace(MB_PHYSICS_TRACE_ACTIONS).empty());   // no policy ran
    EXPECT_GT(b.mujoco_qpos()[7 + 3], a.mujoco_qpos()[7 + 3] + 0.05f);   // the knee followed its override
    // a failed batch throws and moves nothing
    std::vector<float> bad(stand.begin(), stand.end());
    bad[9] = NAN;
    EXPECT_THROW(mbx::step_batch({&a, &b}, {stand.data(), bad.data()}, frames, {0.0, 0.0}), mbx::error);
    EXPECT_THROW(mbx::step_batch({&a, &b}, {stand.data()}, frames, {0.0, 0.0}), mbx::error);
    EXPECT_NEAR(a.status().time, 0.1, 1e-12);
    // controller flags; unknown bits refused
    a.set_controller_flags(MB_PHYSICS_CONTROL_IDLE_READAPT | MB_PHYSICS_CONTROL_VELOCITY_STOP);
    EXPECT_EQ(a.controller_flags(), MB_PHYSICS_CONTROL_IDLE_READAPT | MB_PHYSICS_CONTROL_VELOCITY_STOP);
    EXPECT_THROW(a.set_controller_flags(4), mbx::error);
    // without an override and a policy a tick is MB_NOT_IMPLEMENTED
    a.clear_action_override();
    try {
        a.step_qpos(stand.data(), 1, 0.0);
        FAIL() << "no policy and no override";
    } catch (const mbx::error & e) {
        EXPECT_EQ(e.status(), MB_NOT_IMPLEMENTED);
    }
    a.reset();
    EXPECT_EQ(a.status().time, 0.0);
    mbx::physics moved = std::move(a);   // move-only handle
    EXPECT_EQ(moved.status().time, 0.0);
}

TEST(PhysicsHpp, SonicPolicyThroughTheWrapper) {
    NEED_SCENE();
    const std::string gguf = random_sonic_file();
    if (gguf.empty()) GTEST_SKIP() << "convert.py random-sonic failed (numpy missing?)";
    namespace mbx = motionbricks;
    mbx::sonic         policy = mbx::sonic::load(gguf);
    std::vector<float> enc(2 * 1762, 0.0f), dec(994, 0.0f);
    const std::vector<float> tokens = policy.encode(enc.data(), 2);
    ASSERT_EQ(tokens.size(), 128u);
    EXPECT_TRUE(std::equal(tokens.begin(), tokens.begin() + 64, tokens.begin() + 64));   // equal rows, equal tokens
    EXPECT_EQ(policy.layer(true, 4).size(), 128u);
    std::copy(tokens.begin(), tokens.begin() + 64, dec.begin());
    EXPECT_EQ(policy.decode(dec.data()).size(), 29u);
    enc[0] = 7;   // no such mode
    EXPECT_THROW(policy.encode(enc.data(), 1), mbx::error);
    // a session driven by the policy: the action trace is the policy's
    mbx::physics p = mbx::physics::create(&policy, scene_path());
    const std::array<float, 36> stand = p.mujoco_qpos();
    p.start_qpos(stand);
    std::vector<float> clip;
    for (int f = 0; f < 4; ++f) clip.insert(clip.end(), stand.begin(), stand.end());
    p.step_qpos(clip.data(), 4, 0.0);
    EXPECT_EQ(p.trace(MB_PHYSICS_TRACE_ACTIONS).size(), 29u);
    EXPECT_EQ(p.trace(MB_PHYSICS_TRACE_ENCODER_OBS).size(), 1762u);
}
