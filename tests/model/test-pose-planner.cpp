// pose-token planner against upstream on every reference-small case: each backbone
// pass is fed the recorded inputs of its step (tokens, root and pose conditions), and
// the whole masked-decoding loop is replayed with the recorded Gumbel uniforms
#include "model-fixtures.h"

#include "backend/backend.h"
#include "model/pose-planner.h"
#include "support/test-paths.h"

#include <gtest/gtest.h>

namespace {

using namespace mb;
using namespace mb::test;

// tolerance of float outputs, relative to max(1, max |ref|); the reference is PyTorch
// float32 on CPU, so differences are summation-order rounding only
// (measured on the CPU backend: 2.7e-6 / 2.9e-6 / 4.2e-7 absolute on magnitudes of about 3)
constexpr double k_rel_tf     = 2e-5;
constexpr double k_rel_logits = 2e-5;
constexpr double k_rel_prob   = 1e-5;

constexpr int64_t k_n   = 16;   // padded token grid of the fixtures
constexpr int64_t k_f   = 64;   // padded frame grid
constexpr int64_t k_hd  = 8;    // token heads
constexpr int64_t k_cd  = 10;   // codes per head

struct pose_env {
    safetensors_source       src;
    std::unique_ptr<backend> loader = backend_cpu_create(1);
    pose_planner             net;
    explicit pose_env(const std::string & dir)
        : src(dir + "/weights/pose.safetensors", "backbone_net.", {{"motionbricks.n_head", 4}}),
          net(pose_planner::load(src, *loader)) {}
};

class pose_planner_parity : public reference_small_test {};

TEST_F(pose_planner_parity, hparams_from_shapes) {
    pose_env env(dir_);
    const pose_hparams & hp = env.net.hp;
    EXPECT_EQ(hp.n_embd, 128);
    EXPECT_EQ(hp.n_head, 4);
    EXPECT_EQ(hp.n_layer, 2);
    EXPECT_EQ(hp.n_ff, 2048);
    EXPECT_EQ(hp.n_tok_head, k_hd);
    EXPECT_EQ(hp.n_code, k_cd);
    EXPECT_EQ(hp.tok_dim, 8);
    EXPECT_EQ(hp.n_mlp_layer, 2);
    EXPECT_EQ(hp.pose_feat_width, 128);
    EXPECT_EQ(hp.root_feat_width, 64);
    EXPECT_EQ(hp.dur_feat_width, 32);
    EXPECT_EQ(hp.frames_per_token, 4);
    EXPECT_EQ(hp.root_dim, 4);
    EXPECT_EQ(hp.pose_dim, 304);
    EXPECT_EQ(hp.max_tokens, 16);
    EXPECT_EQ(hp.min_tokens, 6);
}

TEST_F(pose_planner_parity, every_step_of_every_case) {
    pose_env           env(dir_);
    auto               be = backend_cpu_create(1);
    pose_planner_state st(*be, env.net.hp);
    const int64_t      E = env.net.hp.n_embd;

    for (const reference_case & rc : reference_cases(dir_)) {
        SCOPED_TRACE(rc.name);
        npz_file      z(rc.file);
        const int64_t n = z.get("out_pred_num_tokens").to_i64().at(0);
        const int64_t S = rc.num_inference_steps;
        ASSERT_EQ(z.get("mid_step_pose_logits").shape.at(0), S);

        const auto pose_cond = span_f32(z.get("mid_pose_cond", {1, k_f, 304}), 0, 4 * n * 304);
        const auto has_cond  = span_u8(z.get("mid_has_pose_cond", {1, k_f}), 0, 4 * n);

        for (int64_t s = 0; s < S; ++s) {
            SCOPED_TRACE("step " + std::to_string(s));
            const auto tokens_in = span_i32(z.get("mid_step_pose_tokens_in"), s * k_n * k_hd, n * k_hd);
            const auto root_cond = span_f32(z.get("mid_step_pose_root_cond"), s * k_f * 4, 4 * n * 4);
            const pose_cond_inputs in{n, root_cond.data(), pose_cond.data(), has_cond.data()};

            std::vector<float> logits((size_t) (n * k_hd * k_cd));
            tap_record         taps;
            env.net.logits(*be, st, in, tokens_in.data(), logits.data(), taps.fn());

            const std::vector<float> & tf_in  = taps.at("pose_tf_in", {n, E});
            const std::vector<float> & tf_out = taps.at("pose_tf_out", {n, E});
            EXPECT_TRUE(near_rel(tf_in, span_f32(z.get("dbg_pose_tf_in"), s * k_n * E, n * E), k_rel_tf, "tf_in"));
            EXPECT_TRUE(near_rel(tf_out, span_f32(z.get("dbg_pose_tf_out"), s * k_n * E, n * E), k_rel_tf, "tf_out"));
            EXPECT_TRUE(near_rel(logits, span_f32(z.get("mid_step_pose_logits"), s * k_n * k_hd * k_cd, n * k_hd * k_cd),
                                 k_rel_logits, "logits"));
        }
    }
}

TEST_F(pose_planner_parity, masked_decoding_loop) {
    pose_env           env(dir_);
    auto               be = backend_cpu_create(1);
    pose_planner_state st(*be, env.net.hp);

    for (const reference_case & rc : reference_cases(dir_)) {
        SCOPED_TRACE(rc.name);
        npz_file      z(rc.file);
        const int64_t n = z.get("out_pred_num_tokens").to_i64().at(0);
        const int64_t S = rc.num_inference_steps;

        // the root condition is the same at every step; step 0's record is the input
        const auto pose_cond = span_f32(z.get("mid_pose_cond", {1, k_f, 304}), 0, 4 * n * 304);
        const auto has_cond  = span_u8(z.get("mid_has_pose_cond", {1, k_f}), 0, 4 * n);
        const auto root_cond = span_f32(z.get("mid_step_pose_root_cond"), 0, 4 * n * 4);
        for (int64_t s = 1; s < S; ++s) {
            ASSERT_EQ(span_f32(z.get("mid_step_pose_root_cond"), s * k_f * 4, 4 * n * 4), root_cond);
        }
        const pose_cond_inputs in{n, root_cond.data(), pose_cond.data(), has_cond.data()};

        std::vector<float> uniforms;
        pose_decode_options opt;
        opt.n_steps    = (int) S;
        opt.use_argmax = rc.use_argmax;
        if (!rc.use_argmax) {
            const npy_array & u = z.get("mid_step_gumbel_uniform", {S, 1, k_n, k_hd, k_cd});
            uniforms            = u.to_f32();
            opt.uniforms        = uniforms.data();
        }

        std::vector<int32_t> tokens((size_t) (n * k_hd));
        tap_record           taps;
        env.net.decode(*be, st, in, opt, tokens.data(), taps.fn());
        const std::vector<float> & tokens_in   = taps.at("step_pose_tokens_in", {S, n, k_hd});
        const std::vector<float> & remask_prob = taps.at("step_remask_prob_in", {S, n, k_hd});

        // discrete outputs: exactly equal on the valid tokens
        for (int64_t s = 0; s < S; ++s) {
            const std::vector<int32_t> got(tokens_in.begin() + s * n * k_hd, tokens_in.begin() + (s + 1) * n * k_hd);
            EXPECT_EQ(got, span_i32(z.get("mid_step_pose_tokens_in"), s * k_n * k_hd, n * k_hd))
                << "tokens fed to step " << s;
            const std::vector<float> prob(remask_prob.begin() + s * n * k_hd,
                                          remask_prob.begin() + (s + 1) * n * k_hd);
            EXPECT_TRUE(near_rel(prob, span_f32(z.get("mid_remask_prob_in"), s * k_n * k_hd, n * k_hd), k_rel_prob,
                                 "remask probabilities of step " + std::to_string(s)));
        }
        EXPECT_EQ(tokens, span_i32(z.get("mid_pred_pose_tokens", {1, k_n, k_hd}), 0, n * k_hd)) << "final tokens";
    }
}

TEST(pose_planner_schedule, remask_counts) {
    // step 0 masks everything; later steps follow cos(s/N·π/2)·n·H truncated, at least 1
    EXPECT_EQ(pose_remask_count(0, 1, 10, 8), 80);
    EXPECT_EQ(pose_remask_count(0, 3, 8, 8), 64);
    EXPECT_EQ(pose_remask_count(1, 3, 8, 8), 55);   // 0.8660254·64 = 55.4
    EXPECT_EQ(pose_remask_count(2, 3, 8, 8), 32);   // 0.5·64
    EXPECT_EQ(pose_remask_count(99, 100, 6, 8), 1); // 0.0157·48 = 0.75 → clipped to 1
}

} // namespace
