// a control tick allocates nothing: history, timeline (with a pending replacement), both
// observations, targets and torques for 8 robots, with operator new counted over 200 ticks
#include "physics/controller.h"
#include "physics/observation.h"
#include "physics-test-clip.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <vector>

namespace {
std::atomic<long> g_news{0};
}  // namespace

void * operator new(std::size_t n) {
    g_news.fetch_add(1, std::memory_order_relaxed);
    if (void * p = std::malloc(n ? n : 1)) return p;
    throw std::bad_alloc();
}
void operator delete(void * p) noexcept { std::free(p); }
void operator delete(void * p, std::size_t) noexcept { std::free(p); }

using namespace mb::physics;

TEST(physics_tick, allocates_nothing) {
    constexpr int N = 8;
    std::vector<timeline> tl(N);
    std::vector<history> hist(N);
    const auto clip = test::make_clip(40, [](int f) { return 0.01 * f; }, [](int f, int m) { return 0.001 * f * m; });
    for (int r = 0; r < N; ++r) {
        timeline_init(tl[size_t(r)], 256);
        ASSERT_EQ(timeline_replace(tl[size_t(r)], clip.data(), clip.size(), 40, 0), "");
        history_reset(hist[size_t(r)]);
    }
    std::vector<double> qpos(k_scene_nq, 0.0), qvel(k_scene_nv, 0.0);
    qpos[2] = 0.79;
    qpos[3] = 1;
    std::vector<float> enc(k_encoder_obs), dec(k_decoder_obs), tokens(k_tokens, 0.0f), action(k_body_joints, 0.1f);
    float target[k_body_joints];
    double hands[14] = {}, tau[k_scene_joints];
    bool fallen = false;
    int rejected = 0;
    const long before = g_news.load();
    for (int tick = 0; tick < 200; ++tick) {
        for (int r = 0; r < N; ++r) {
            timeline & t = tl[size_t(r)];
            history & h = hist[size_t(r)];
            robot_state s;
            robot_state_from_scene(qpos.data(), qvel.data(), s);
            history_push(h, s);
            timeline_update_heading(t, {s.base_quat[0], s.base_quat[1], s.base_quat[2], s.base_quat[3]});
            build_encoder_obs(t, {1, 0, 0, 0}, enc.data());
            build_decoder_obs(h, tokens.data(), dec.data());
            history_set_action(h, action.data());
            action_to_targets(action.data(), target);
            for (int sub = 0; sub < 4; ++sub) pd_torques(target, hands, qpos.data(), qvel.data(), tau);
            fall_update(fallen, qpos[2]);
            if (tick % 25 == 0 && !timeline_replace(t, clip.data(), clip.size(), 40, t.current + 3).empty()) ++rejected;
            timeline_advance(t);
        }
    }
    EXPECT_EQ(g_news.load() - before, 0);
    EXPECT_EQ(rejected, 0);
}
