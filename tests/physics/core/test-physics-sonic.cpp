// the built observations through the SONIC model on main (a convert.py random-sonic bundle, through
// the public mb_sonic_* ABI): the counts are the model's, the tokens and actions finite, and a closed
// loop of 30 ticks over 4 robots (observations → encode_batch → decode_batch → targets → history)
// stays finite and matches the one-robot calls row by row
#include "physics/controller.h"
#include "physics/observation.h"
#include "physics-test-clip.h"

#include <motionbricks/sonic.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <unistd.h>
#include <vector>

namespace fs = std::filesystem;
using namespace mb::physics;

namespace {

std::string random_sonic() {
    static std::string path;
    if (!path.empty()) return path;
    const fs::path p = fs::temp_directory_path() / ("mb-physics-sonic-" + std::to_string(::getpid()) + ".gguf");
    const std::string cmd = std::string("'") + MB_PYTHON + "' '" + MB_SRC + "/tools/convert.py' random-sonic --seed 3 --out '" +
                            p.string() + "' > /dev/null 2>&1";
    if (std::system(cmd.c_str()) != 0) return "";
    path = p.string();
    return path;
}

}  // namespace

TEST(physics_sonic, observations_drive_the_policy) {
    const std::string gguf = random_sonic();
    ASSERT_FALSE(gguf.empty()) << "convert.py random-sonic failed";
    char err[512] = "";
    mb_sonic * s = nullptr;
    ASSERT_EQ(mb_sonic_load(gguf.c_str(), nullptr, &s, err, sizeof err), MB_OK) << err;
    static_assert(k_encoder_obs == MB_SONIC_ENCODER_OBS && k_decoder_obs == MB_SONIC_DECODER_OBS);
    static_assert(k_tokens == MB_SONIC_TOKENS && k_body_joints == MB_SONIC_ACTIONS);

    constexpr int N = 4;
    std::vector<timeline> tl(N);
    std::vector<history> hist(N);
    std::vector<robot_state> state(N);
    for (int r = 0; r < N; ++r) {
        timeline_init(tl[size_t(r)], 512);
        const auto clip = test::make_clip(60, [r](int f) { return 0.2 * r + 0.01 * f; },
                                          [r](int f, int m) { return k_default_angles[m] + 0.2 * std::sin(0.1 * f + r + m); });
        ASSERT_EQ(timeline_replace(tl[size_t(r)], clip.data(), clip.size(), 60, 0), "");
        history_reset(hist[size_t(r)]);
        state[size_t(r)] = {};
        state[size_t(r)].base_quat[0] = 1;
        for (int m = 0; m < k_body_joints; ++m) state[size_t(r)].q[m] = k_default_angles[m];
    }
    std::vector<float> enc(size_t(N) * k_encoder_obs), dec(size_t(N) * k_decoder_obs);
    std::vector<float> tokens(size_t(N) * k_tokens), actions(size_t(N) * k_body_joints);
    for (int tick = 0; tick < 30; ++tick) {
        for (int r = 0; r < N; ++r) {
            history_push(hist[size_t(r)], state[size_t(r)]);
            const quat base = {state[size_t(r)].base_quat[0], state[size_t(r)].base_quat[1], state[size_t(r)].base_quat[2],
                               state[size_t(r)].base_quat[3]};
            timeline_update_heading(tl[size_t(r)], base);
            build_encoder_obs(tl[size_t(r)], base, enc.data() + size_t(r) * k_encoder_obs);
        }
        ASSERT_EQ(mb_sonic_encode_batch(s, enc.data(), enc.size(), N, tokens.data(), tokens.size(), err, sizeof err), MB_OK) << err;
        for (int r = 0; r < N; ++r) {
            build_decoder_obs(hist[size_t(r)], tokens.data() + size_t(r) * k_tokens, dec.data() + size_t(r) * k_decoder_obs);
            // the newest action slot holds the previous tick's action (0 on the first)
            for (int i = 0; i < k_body_joints; ++i)
                ASSERT_EQ(dec[size_t(r) * k_decoder_obs + size_t(k_dec_action + 29 * 9 + i)],
                          tick == 0 ? 0.0f : actions[size_t(r) * k_body_joints + size_t(i)]);
        }
        ASSERT_EQ(mb_sonic_decode_batch(s, dec.data(), dec.size(), N, actions.data(), actions.size(), err, sizeof err), MB_OK) << err;
        for (float v : tokens) ASSERT_TRUE(std::isfinite(v));
        for (float v : actions) ASSERT_TRUE(std::isfinite(v));
        // row 1 through the single-robot calls: the same tokens and actions
        if (tick % 10 == 0) {
            float tok1[k_tokens], act1[k_body_joints];
            ASSERT_EQ(mb_sonic_encode(s, enc.data() + k_encoder_obs, k_encoder_obs, tok1, k_tokens, err, sizeof err), MB_OK);
            for (int i = 0; i < k_tokens; ++i) EXPECT_EQ(tok1[i], tokens[size_t(k_tokens + i)]);
            ASSERT_EQ(mb_sonic_decode(s, dec.data() + k_decoder_obs, k_decoder_obs, act1, k_body_joints, err, sizeof err), MB_OK);
            for (int i = 0; i < k_body_joints; ++i) EXPECT_NEAR(act1[i], actions[size_t(k_body_joints + i)], 1e-5f);
        }
        for (int r = 0; r < N; ++r) {
            const float * a = actions.data() + size_t(r) * k_body_joints;
            history_set_action(hist[size_t(r)], a);
            float target[k_body_joints];
            action_to_targets(a, target);
            // a stand-in for the simulator: the joints move a tenth of the way to their targets, within
            // ±3 rad (random weights ask for anything)
            for (int m = 0; m < k_body_joints; ++m) {
                const double q = state[size_t(r)].q[m];
                const double next = std::clamp(q + 0.1 * (target[m] - q), -3.0, 3.0);
                state[size_t(r)].dq[m] = (next - q) * 50;
                state[size_t(r)].q[m] = next;
            }
            timeline_advance(tl[size_t(r)]);
        }
    }
    mb_sonic_free(s);
    std::error_code ec;
    fs::remove(gguf, ec);
}
