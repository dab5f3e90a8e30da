// the root planner against upstream on every reference-small case: duration logits
// (masked), the chosen count (exact), both transformer stages, the decoder's dense
// conditions and the normalised global root trajectory
#include "model-fixtures.h"

#include "backend/backend.h"
#include "format/error.h"
#include "model/root-planner.h"
#include "support/test-device.h"
#include "support/test-paths.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

namespace {

using namespace mb;
using namespace mb::test;

// tolerances relative to max(1, max |ref|): float32 summation order only
constexpr double k_rel_tf     = 1e-5;
constexpr double k_rel_logits = 1e-5;
constexpr double k_rel_root   = 1e-4;

struct root_env {
    safetensors_source       src;
    std::unique_ptr<backend> loader = mb::test::test_backend(1);
    root_planner             net;
    explicit root_env(const std::string & dir)
        : src(dir + "/weights/root.safetensors", "backbone_net.", {{"motionbricks.n_head", 4}}),
          net(root_planner::load(src, *loader)) {}
};

class root_planner_parity : public reference_small_test {};

std::vector<uint8_t> bools(const npy_array & a) {
    std::vector<uint8_t> out;
    for (int64_t v : a.to_i64()) out.push_back(uint8_t(v != 0));
    return out;
}

// the normalised root-model inputs recorded in a case
struct case_inputs {
    std::vector<float>   g, l, p;       // [8, 5], [8, 4], [8, 304]
    std::vector<uint8_t> hg, hl, hp;    // [8] masks
    std::vector<uint8_t> allowed;       // [11] or empty
    int64_t              num_tokens = 0;

    explicit case_inputs(const npz_file & z)
        : g(z.get("mid_norm_global_root_values", {1, 8, 5}).to_f32()),
          l(z.get("mid_norm_local_root_values", {1, 8, 4}).to_f32()),
          p(z.get("mid_norm_local_poses", {1, 8, 304}).to_f32()),
          hg(bools(z.get("in_has_global_root_values", {1, 8}))),
          hl(bools(z.get("in_has_local_root_values", {1, 8}))),
          hp(bools(z.get("in_has_local_poses", {1, 8}))) {
        const int64_t nt = z.get("in_num_tokens", {1}).to_i64()[0];
        num_tokens = nt == 18 ? 0 : nt;
        if (z.has("in_allowed_pred_num_tokens")) {
            for (int64_t v : z.get("in_allowed_pred_num_tokens", {1, 11}).to_i64()) allowed.push_back(uint8_t(v));
        }
    }
    root_inputs inputs() const {
        root_inputs in;
        in.global_root = g.data();
        in.has_global  = hg.data();
        in.local_root  = l.data();
        in.has_local   = hl.data();
        in.poses       = p.data();
        in.has_pose    = hp.data();
        in.num_tokens  = num_tokens;
        in.allowed     = allowed.empty() ? nullptr : allowed.data();
        return in;
    }
};

} // namespace

TEST_F(root_planner_parity, hparams_from_shapes) {
    root_env env(dir_);
    const root_hparams & hp = env.net.hp;
    EXPECT_EQ(hp.n_embd, 64);
    EXPECT_EQ(hp.n_head, 4);
    EXPECT_EQ(hp.n_layer_shared, 1);
    EXPECT_EQ(hp.n_layer_token, 1);
    EXPECT_EQ(hp.pose_feat, 32);
    EXPECT_EQ(hp.local_root_feat, 16);
    EXPECT_EQ(hp.global_root_feat, 16);
    EXPECT_EQ(hp.pose_dim, 304);
    EXPECT_EQ(hp.frames_per_token, 4);
    EXPECT_EQ(hp.min_tokens, 6);
    EXPECT_EQ(hp.max_tokens, 16);
    EXPECT_EQ(hp.n_class, 12);
    EXPECT_EQ(env.net.conv_output.hp.depth, 2);
    EXPECT_EQ(env.net.conv_output.hp.width, 64);
}

namespace {

// the message of the mb::error that loading `src` throws, which must be incompatible_model (the
// status mb_model_load returns for weights the networks cannot run); "" after a test failure
std::string incompatible_load_error(const tensor_source & src) {
    auto be = mb::test::test_backend(1);
    try {
        root_planner::load(src, *be);
        ADD_FAILURE() << "expected an error";
    } catch (const mb::error & e) {
        EXPECT_EQ(e.code(), mb::status::incompatible_model) << e.what();
        return e.what();
    }
    return "";
}

} // namespace

TEST_F(root_planner_parity, missing_tensor_is_named) {
    // the stats file has none of the root tensors
    safetensors_source src(dir_ + "/weights/stats.safetensors");
    const std::string  msg = incompatible_load_error(src);
    EXPECT_NE(msg.find("_shared_transformer_model"), std::string::npos) << msg;
}

TEST_F(root_planner_parity, head_count_that_does_not_divide_the_width_is_incompatible) {
    safetensors_source src(dir_ + "/weights/root.safetensors", "backbone_net.", {{"motionbricks.n_head", 3}});
    const std::string  msg = incompatible_load_error(src);
    EXPECT_NE(msg.find(": n_head 3 does not divide n_embd"), std::string::npos) << msg;
}

namespace {

// metadata only, no tensors: the loader's first check fails
struct meta_only_source final : tensor_source {
    uint64_t                n_head = 0;
    const tensor_view *     find(std::string_view) const override { return nullptr; }
    std::string             origin() const override { return "meta-only"; }
    std::optional<uint64_t> meta_uint(std::string_view key) const override {
        return key == "motionbricks.n_head" ? std::optional<uint64_t>(n_head) : std::nullopt;
    }
};

} // namespace

TEST(root_planner_load, head_count_out_of_range_is_incompatible) {
    EXPECT_EQ(incompatible_load_error(meta_only_source{}), "meta-only: motionbricks.n_head 0 out of range");
}

TEST_F(root_planner_parity, every_case) {
    root_env env(dir_);
    const root_hparams & hp = env.net.hp;
    const int64_t E = hp.n_embd;
    auto be = mb::test::test_backend(1);
    root_planner_state st(*be, env.net);
    double worst[8] = {0};
    const char * names[8] = {"logits", "shared_tf_in", "shared_tf_out", "token_tf_in", "token_tf_out", "conv_in",
                             "conv_ext", "global_root"};
    auto track = [&](int k, const std::vector<float> & got, const std::vector<float> & ref) {
        const diff_stats d = compare(got, ref);
        if (d.max_abs > worst[k]) worst[k] = d.max_abs;
    };

    for (const auto & rc : reference_cases(dir_)) {
        SCOPED_TRACE(rc.name);
        npz_file z(rc.file);
        const case_inputs ci(z);
        root_inputs in = ci.inputs();
        in.allow_out_of_reach = rc.allow_out_of_reach;
        tap_record        taps;
        const root_result res = env.net.run(*be, st, in, taps.fn());

        // duration: exact
        const int64_t n = z.get("out_pred_num_tokens", {1}).to_i64()[0];
        ASSERT_EQ(res.n, n);
        const int64_t F = 4 * n;
        struct {
            const std::vector<float> & shared_tf_in, & shared_tf_out, & token_tf_in, & token_tf_out, & conv_ext;
            std::vector<float>         conv_tgt;
            std::vector<uint8_t>       conv_has_tgt;
        } tr{taps.at("root_shared_tf_in", {9, E}),
             taps.at("root_shared_tf_out", {9, E}),
             taps.at("root_token_tf_in", {9 + n, E}),
             taps.at("root_token_tf_out", {9 + n, E}),
             taps.at("root_conv_ext", {F, E}),
             taps.at("root_conv_tgt", {F, 5}),
             {}};
        for (float v : taps.at("root_conv_has_tgt", {F})) tr.conv_has_tgt.push_back(uint8_t(v));

        // masked logits: −inf in the same places, finite ones close
        const std::vector<float> ref_logits = z.get("mid_num_token_logits", {1, 12}).to_f32();
        std::vector<float> got_f, ref_f;
        for (int k = 0; k < 12; ++k) {
            ASSERT_EQ(std::isinf(res.logits[k]), std::isinf(ref_logits[k])) << "logit " << k;
            if (!std::isinf(ref_logits[k])) {
                got_f.push_back(res.logits[k]);
                ref_f.push_back(ref_logits[k]);
            }
        }
        EXPECT_TRUE(near_rel(got_f, ref_f, k_rel_logits, "num_token_logits"));
        track(0, got_f, ref_f);

        // stage 1
        const auto & s_in  = z.get("dbg_root_shared_tf_in", {1, 9, E});
        const auto & s_out = z.get("dbg_root_shared_tf_out", {1, 9, E});
        EXPECT_TRUE(near_rel(tr.shared_tf_in, span_f32(s_in, 0, 9 * E), k_rel_tf, "shared_tf_in"));
        EXPECT_TRUE(near_rel(tr.shared_tf_out, span_f32(s_out, 0, 9 * E), k_rel_tf, "shared_tf_out"));
        track(1, tr.shared_tf_in, span_f32(s_in, 0, 9 * E));
        track(2, tr.shared_tf_out, span_f32(s_out, 0, 9 * E));

        // stage 2 on the valid rows
        const int64_t rows = 9 + n;
        const auto & t_in  = z.get("dbg_root_token_tf_in", {1, 25, E});
        const auto & t_out = z.get("dbg_root_token_tf_out", {1, 25, E});
        EXPECT_TRUE(near_rel(tr.token_tf_in, span_f32(t_in, 0, rows * E), k_rel_tf, "token_tf_in"));
        EXPECT_TRUE(near_rel(tr.token_tf_out, span_f32(t_out, 0, rows * E), k_rel_tf, "token_tf_out"));
        track(3, tr.token_tf_in, span_f32(t_in, 0, rows * E));
        track(4, tr.token_tf_out, span_f32(t_out, 0, rows * E));

        // decoder input [E, 16] transposed = the last n stage-2 rows
        const std::vector<float> conv_in = z.get("dbg_root_conv_in", {1, E, 16}).to_f32();
        std::vector<float> ref_ci(size_t(n * E)), got_ci(tr.token_tf_out.begin() + 9 * E, tr.token_tf_out.end());
        for (int64_t t = 0; t < n; ++t) {
            for (int64_t c = 0; c < E; ++c) ref_ci[size_t(t * E + c)] = conv_in[size_t(c * 16 + t)];
        }
        EXPECT_TRUE(near_rel(got_ci, ref_ci, k_rel_tf, "conv_in"));
        track(5, got_ci, ref_ci);

        // dense conditions: exact copies of embeddings / inputs
        const auto & ext = z.get("dbg_root_conv_external_cond", {1, 64, E});
        EXPECT_TRUE(near_rel(tr.conv_ext, span_f32(ext, 0, F * E), k_rel_tf, "conv_external_cond"));
        track(6, tr.conv_ext, span_f32(ext, 0, F * E));
        EXPECT_EQ(tr.conv_tgt, span_f32(z.get("dbg_root_conv_target_cond", {1, 64, 5}), 0, F * 5));
        EXPECT_EQ(tr.conv_has_tgt, span_u8(z.get("dbg_root_conv_has_target_cond", {1, 64}), 0, F));

        // trajectory
        const std::vector<float> ref_root = span_f32(z.get("mid_pred_global_root_values", {1, 64, 5}), 0, F * 5);
        EXPECT_TRUE(near_rel(res.global_root, ref_root, k_rel_root, "pred_global_root_values"));
        track(7, res.global_root, ref_root);
    }
    for (int k = 0; k < 8; ++k) std::printf("  max abs error %-16s %.3g\n", names[k], worst[k]);
}

TEST_F(root_planner_parity, forced_count_and_masks) {
    root_env env(dir_);
    auto be = mb::test::test_backend(1);
    root_planner_state st(*be, env.net);
    npz_file z(dir_ + "/cases/idle_pred_argmax.npz");
    const case_inputs ci(z);
    root_inputs in = ci.inputs();

    // forced counts give that many tokens and 4n frames
    for (int64_t n : {6, 11, 16}) {
        in.num_tokens = n;
        const root_result r = env.net.run(*be, st, in);
        EXPECT_EQ(r.n, n);
        EXPECT_EQ(r.global_root.size(), size_t(4 * n * 5));
    }
    EXPECT_THROW({
        in.num_tokens = 17;
        env.net.run(*be, st, in);
    }, mb::error);

    // a single allowed count is always chosen
    in.num_tokens = 0;
    std::vector<uint8_t> allowed(11, 0);
    allowed[9] = 1;
    in.allowed = allowed.data();
    const root_result r = env.net.run(*be, st, in);
    EXPECT_EQ(r.n, 15);
    for (int k = 0; k < 12; ++k) EXPECT_EQ(std::isinf(r.logits[k]), k != 9) << k;
}
