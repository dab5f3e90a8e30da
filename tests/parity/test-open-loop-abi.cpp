// mb_agent_plan_open_loop (parity.h) through the shared library, on the bundle and styles the
// motionbricks-parity-agent-small test leaves: the agent is left as it was (history and cursor),
// the plan equals mb_agent_plan's in duration and tokens, its roots match past the 4 blended
// frames, the tap sees the networks' intermediates, and bad arguments are refused
#include <motionbricks/motionbricks.h>

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

namespace {

std::vector<float> history(mb_agent * a) {
    mb_motion * h = nullptr;
    char        err[256];
    EXPECT_EQ(mb_agent_get_history(a, &h, err, sizeof err), MB_OK) << err;
    const float * q = nullptr;
    uint64_t      n = 0;
    EXPECT_EQ(mb_motion_get_mujoco_qpos(h, &q, &n, err, sizeof err), MB_OK) << err;
    std::vector<float> v(q, q + n);
    mb_motion_free(h);
    return v;
}

void names(void * user, const char * name, const float *, const uint64_t *, uint32_t) {
    static_cast<std::set<std::string> *>(user)->insert(name);
}

TEST(OpenLoopAbi, LeavesTheAgentAndMatchesThePlan) {
    const std::string run = MB_PARITY_RUN;
    if (!std::filesystem::exists(run + "/bundle/manifest.json")) GTEST_SKIP() << "skipped: " << run << " not found";
    char       err[512];
    mb_model * model = nullptr;
    ASSERT_EQ(mb_model_load((run + "/bundle").c_str(), nullptr, &model, err, sizeof err), MB_OK) << err;
    mb_style * walk = nullptr;
    ASSERT_EQ(mb_style_load(model, (run + "/styles/walk.mbstyle").c_str(), &walk, err, sizeof err), MB_OK) << err;
    mb_agent *   agent = nullptr;
    mb_command * cmd   = nullptr;
    ASSERT_EQ(mb_agent_create(model, &agent, err, sizeof err), MB_OK);
    ASSERT_EQ(mb_command_create(&cmd, err, sizeof err), MB_OK);
    mb_motion * out = reinterpret_cast<mb_motion *>(&err);   // must become NULL on failure
    EXPECT_EQ(mb_agent_plan_open_loop(agent, cmd, nullptr, nullptr, &out, err, sizeof err), MB_INVALID_ARGUMENT);
    EXPECT_EQ(out, nullptr);
    EXPECT_NE(std::string(err).find("style"), std::string::npos) << err;
    EXPECT_EQ(mb_agent_plan_open_loop(nullptr, cmd, nullptr, nullptr, &out, err, sizeof err), MB_INVALID_ARGUMENT);
    EXPECT_EQ(mb_agent_plan_open_loop(agent, cmd, nullptr, nullptr, nullptr, err, sizeof err), MB_INVALID_ARGUMENT);

    ASSERT_EQ(mb_command_set_style(cmd, walk, err, sizeof err), MB_OK);
    ASSERT_EQ(mb_command_set_movement_direction(cmd, 0.3f, 0, 1, err, sizeof err), MB_OK);
    ASSERT_EQ(mb_command_set_seed(cmd, 77, err, sizeof err), MB_OK);
    ASSERT_EQ(mb_command_set_sampling_argmax(cmd, 1, err, sizeof err), MB_OK);
    ASSERT_EQ(mb_agent_reset(agent, walk, err, sizeof err), MB_OK);
    ASSERT_EQ(mb_agent_advance(agent, 5, err, sizeof err), MB_OK);
    const std::vector<float> before = history(agent);
    uint64_t cursor0 = 0, cursor1 = 0;
    ASSERT_EQ(mb_agent_get_cursor(agent, &cursor0, err, sizeof err), MB_OK);

    std::set<std::string> taps;
    mb_motion *           open = nullptr;
    ASSERT_EQ(mb_agent_plan_open_loop(agent, cmd, names, &taps, &open, err, sizeof err), MB_OK) << err;
    ASSERT_EQ(mb_agent_get_cursor(agent, &cursor1, err, sizeof err), MB_OK);
    EXPECT_EQ(cursor1, cursor0);
    EXPECT_EQ(history(agent), before) << "the open-loop plan changed the agent's history";
    for (const char * n : {"num_token_logits", "pred_pose_tokens", "decoder_recon_state", "joint_positions"}) {
        EXPECT_EQ(taps.count(n), 1u) << n;
    }

    mb_motion * plan = nullptr;
    ASSERT_EQ(mb_agent_plan(agent, cmd, &plan, err, sizeof err), MB_OK) << err;
    uint64_t fa = 0, fb = 0, ta = 0, tb = 0;
    ASSERT_EQ(mb_motion_get_frame_count(open, &fa, err, sizeof err), MB_OK);
    ASSERT_EQ(mb_motion_get_frame_count(plan, &fb, err, sizeof err), MB_OK);
    EXPECT_EQ(fa, fb);
    const int32_t * tka = nullptr, * tkb = nullptr;
    ASSERT_EQ(mb_motion_get_tokens(open, &tka, &ta, err, sizeof err), MB_OK);
    ASSERT_EQ(mb_motion_get_tokens(plan, &tkb, &tb, err, sizeof err), MB_OK);
    ASSERT_EQ(ta, tb);
    EXPECT_EQ(std::memcmp(tka, tkb, ta * sizeof(int32_t)), 0);
    const float * ra = nullptr, * rb = nullptr, * feat = nullptr;
    uint64_t      na = 0, nb = 0, nf = 0;
    ASSERT_EQ(mb_motion_get_root_translations(open, &ra, &na, err, sizeof err), MB_OK);
    ASSERT_EQ(mb_motion_get_root_translations(plan, &rb, &nb, err, sizeof err), MB_OK);
    ASSERT_EQ(mb_motion_get_global_features(open, &feat, &nf, err, sizeof err), MB_OK);
    EXPECT_EQ(nf, fa * 414);
    double d = 0;
    for (uint64_t i = 4 * 3; i < std::min(na, nb); ++i) d = std::max(d, double(std::fabs(ra[i] - rb[i])));
    EXPECT_LE(d, 1e-4) << "roots past the seam differ from the played plan's";
    std::printf("open loop: %llu frames, roots past the seam within %.2e m of mb_agent_plan's, %zu taps\n",
                (unsigned long long) fa, d, taps.size());
    mb_motion_free(open);
    mb_motion_free(plan);
    mb_command_free(cmd);
    mb_agent_free(agent);
    mb_style_free(walk);
    mb_model_free(model);
}

} // namespace
