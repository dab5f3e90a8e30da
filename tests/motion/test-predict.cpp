// the whole predict against upstream on every reference-small case: durations and
// valid tokens exact, per-stage intermediates (so a failure names the first
// divergent stage), global features and FK joint positions within 1e-4. An untraced run
// of each case against the traced one: the same on the CPU, and on CUDA the finish step on
// the GPU (traced runs finish on the host) within 1e-5
#include "predict-fixtures.h"
#include "support/test-paths.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>

namespace {

using namespace mb;
using namespace mb::test;

constexpr const char * k_dir = "fixtures/reference-small";

// absolute tolerances; the outputs are O(10), float32 summation order only
constexpr float k_tol_stage  = 1e-4f;
// the local root is a forward difference × 30 fps of the root trajectory, divided by small
// stds: its ~2e-6 error grows to ~1.5e-4 in normalised units
constexpr float k_tol_local_root = 5e-4f;
constexpr float k_tol_output = 1e-4f;
// untraced against traced: the backend's finish step (motion_finish) against the host's
constexpr float k_tol_finish = 1e-5f;

float max_abs_diff(const float * a, const float * b, int64_t n) {
    float m = 0.0f;
    for (int64_t i = 0; i < n; ++i) {
        const float d = std::fabs(a[i] - b[i]);
        if (!(d <= m)) m = d;
    }
    return m;
}

// valid rows [0, rows) of every step of a [S, 1, N, ...] fixture array with `row` values per token
std::vector<float> steps_valid(const npy_array & a, int64_t S, int64_t N, int64_t rows, int64_t row) {
    const std::vector<float> v = a.to_f32();
    std::vector<float> out;
    for (int64_t s = 0; s < S; ++s) {
        out.insert(out.end(), v.begin() + s * N * row, v.begin() + s * N * row + rows * row);
    }
    return out;
}

// the request of the first case (idle, predicted duration, argmax)
predict_request first_request(const std::string & dir) {
    const reference_case rc = reference_cases(dir).at(0);
    return reference_request(npz_file(rc.file), rc);
}

} // namespace

TEST(predict, every_reference_case) {
    MB_REQUIRE_SHARED(dir, k_dir);
    reference_model rm(dir, 1);
    std::map<std::string, float> worst;
    auto track = [&](const std::string & k, float e) {
        float & w = worst[k];
        if (!(e <= w)) w = e;
        return e;
    };

    for (const auto & rc : reference_cases(dir)) {
        SCOPED_TRACE(rc.name);
        npz_file z(rc.file);
        const predict_request req = reference_request(z, rc);
        ASSERT_EQ(rm.model->validate(req), "");
        std::map<std::string, std::vector<float>> tr;
        const predict_result res = rm.model->predict(req, [&](std::string_view name, const float * d,
                                                              const std::vector<int64_t> & shape) {
            // "step_" arrays come once per step: stacked along their leading axis
            int64_t count = 1;
            for (int64_t s : shape) count *= s;
            std::vector<float> & v = tr[std::string(name)];
            v.insert(v.end(), d, d + count);
        });

        // discrete outputs: exact
        const int64_t n = z.get("out_pred_num_tokens", {1}).to_i64()[0];
        ASSERT_EQ(res.num_tokens, n);
        const int64_t F = 4 * n, S = rc.num_inference_steps;
        ASSERT_EQ(res.frames, F);
        const std::vector<int64_t> ref_tok = z.get("mid_pred_pose_tokens", {1, 16, 8}).to_i64();
        ASSERT_EQ(res.tokens.size(), size_t(n * 8));
        for (int64_t i = 0; i < n * 8; ++i) {
            ASSERT_EQ(res.tokens[size_t(i)], ref_tok[size_t(i)]) << "token " << i / 8 << " head " << i % 8;
        }
        const std::vector<float> ref_logits = z.get("mid_num_token_logits", {1, 12}).to_f32();
        for (int k = 0; k < 12; ++k) {
            ASSERT_EQ(std::isinf(res.num_token_logits[k]), std::isinf(ref_logits[k])) << k;
            if (!std::isinf(ref_logits[k])) {
                EXPECT_LE(track("num_token_logits", std::fabs(res.num_token_logits[k] - ref_logits[k])), k_tol_stage);
            }
        }

        // stages in order
        const struct {
            const char * ours;
            const char * ref;
            int64_t      count;
            float        tol;
        } stages[] = {
            {"norm_local_poses", "mid_norm_local_poses", 8 * 304, k_tol_stage},
            {"pred_global_root_values", "mid_pred_global_root_values", F * 5, k_tol_stage},
            {"pred_local_root_values", "mid_pred_local_root_values", F * 4, k_tol_local_root},
            {"pose_cond", "mid_pose_cond", F * 304, k_tol_stage},
            {"decoder_external_cond", "mid_decoder_external_cond", F * 2, k_tol_local_root},
            {"decoder_codes", "mid_decoder_codes", n * 64, k_tol_stage},
            {"decoder_recon_state", "mid_decoder_recon_state", F * 413, k_tol_stage},
            {"pred_local_poses", "mid_pred_local_poses", F * 413, k_tol_stage},
            {"pred_global_poses_before_reapply", "mid_pred_global_poses_before_reapply", F * 414, k_tol_stage},
        };
        for (const auto & st : stages) {
            ASSERT_TRUE(tr.count(st.ours)) << st.ours;
            const std::vector<float> ref = z.get(st.ref).to_f32();
            ASSERT_GE(int64_t(tr[st.ours].size()), st.count);
            EXPECT_LE(track(st.ours, max_abs_diff(tr[st.ours].data(), ref.data(), st.count)), st.tol) << st.ours;
        }
        const std::vector<float> logits = steps_valid(z.get("mid_step_pose_logits", {S, 1, 16, 8, 10}), S, 16, n, 80);
        ASSERT_EQ(tr["step_pose_logits"].size(), logits.size());
        EXPECT_LE(track("step_pose_logits", max_abs_diff(tr["step_pose_logits"].data(), logits.data(), int64_t(logits.size()))),
                  k_tol_stage);
        const std::vector<float> tin = steps_valid(z.get("mid_step_pose_tokens_in", {S, 1, 16, 8}), S, 16, n, 8);
        EXPECT_EQ(tr["step_pose_tokens_in"], tin);

        // outputs
        const std::vector<float> out = z.get("out_pred_global_poses", {1, 64, 414}).to_f32();
        EXPECT_LE(track("global_features", max_abs_diff(res.global_features.data(), out.data(), F * 414)), k_tol_output);
        const std::vector<float> joints = z.get("derived_posed_joints", {1, 64, 34, 3}).to_f32();
        EXPECT_LE(track("joint_positions", max_abs_diff(res.joint_positions.data(), joints.data(), F * 102)), k_tol_output);
        for (int64_t f = 0; f < F; ++f) {
            for (int i = 0; i < 3; ++i) ASSERT_EQ(res.root_translations[size_t(f * 3 + i)], res.global_features[size_t(f * 414 + i)]);
        }

        // untraced: the path plans take (on CUDA the finish step runs on the GPU)
        const predict_result u = rm.model->predict(req);
        ASSERT_EQ(u.num_tokens, res.num_tokens);
        ASSERT_EQ(u.frames, res.frames);
        ASSERT_EQ(u.tokens, res.tokens);
        const struct {
            const char *               name;
            const std::vector<float> & got;
            const std::vector<float> & want;
        } outs[] = {
            {"untraced global_features", u.global_features, res.global_features},
            {"untraced joint_positions", u.joint_positions, res.joint_positions},
            {"untraced local_rotations_xyzw", u.local_rotations_xyzw, res.local_rotations_xyzw},
            {"untraced root_translations", u.root_translations, res.root_translations},
        };
        for (const auto & o : outs) {
            ASSERT_EQ(o.got.size(), o.want.size()) << o.name;
            EXPECT_LE(track(o.name, max_abs_diff(o.got.data(), o.want.data(), int64_t(o.want.size()))), k_tol_finish)
                << o.name;
            // the CPU finishes both on the host
            if (std::string(rm.model->backend_name()) == "cpu") {
                EXPECT_EQ(o.got, o.want) << o.name;
            }
        }
        EXPECT_LE(track("untraced/upstream global_features", max_abs_diff(u.global_features.data(), out.data(), F * 414)),
                  k_tol_output);
        EXPECT_LE(track("untraced/upstream joint_positions", max_abs_diff(u.joint_positions.data(), joints.data(), F * 102)),
                  k_tol_output);
    }
    for (const auto & kv : worst) std::printf("  max abs error %-34s %.3g\n", kv.first.c_str(), double(kv.second));
}

TEST(predict, rejects_invalid_requests) {
    MB_REQUIRE_SHARED(dir, k_dir);
    reference_model rm(dir, 1);
    const predict_request good = first_request(dir);
    ASSERT_EQ(rm.model->validate(good), "");

    auto expect_bad = [&](predict_request r, const char * what) {
        const std::string e = rm.model->validate(r);
        EXPECT_NE(e, "") << what;
        EXPECT_THROW(rm.model->predict(r), mb::error) << what;
    };
    { predict_request r = good; r.global_root[7] = std::nanf(""); expect_bad(r, "NaN"); }
    { predict_request r = good; r.poses[100] = INFINITY; expect_bad(r, "Inf"); }
    { predict_request r = good; r.local_root[5] = 2e4f; expect_bad(r, "magnitude"); }
    { predict_request r = good; r.pose_mask[2] = 2; expect_bad(r, "mask value"); }
    { predict_request r = good; r.global_root_mask[0] = 0; expect_bad(r, "slot 0 disabled"); }
    { predict_request r = good; r.global_root[5 * 5 + 3] = 0.5f; expect_bad(r, "heading not unit"); }
    { predict_request r = good; r.allowed_num_tokens.fill(0); expect_bad(r, "no allowed duration"); }
    { predict_request r = good; r.num_tokens = 5; expect_bad(r, "num_tokens 5"); }
    { predict_request r = good; r.num_tokens = 17; expect_bad(r, "num_tokens 17"); }
    { predict_request r = good; r.num_inference_steps = 0; expect_bad(r, "steps 0"); }
    { predict_request r = good; r.num_inference_steps = 17; expect_bad(r, "steps 17"); }
    {
        predict_request r = good;
        r.sampling = sampling_mode::SAMPLING_MODE_GUMBEL;
        r.gumbel_uniforms.assign(16 * 8 * 10 - 1, 0.5f);
        expect_bad(r, "uniform count");
        r.gumbel_uniforms.assign(16 * 8 * 10, 0.5f);
        r.gumbel_uniforms[3] = 1.5f;
        expect_bad(r, "uniform range");
    }
    {
        predict_request r = good;
        r.gumbel_uniforms.assign(16 * 8 * 10, 0.5f);
        expect_bad(r, "uniforms with argmax");
    }
    // a disabled slot's heading is not checked; an unused mask still validates
    { predict_request r = good; r.global_root_mask[6] = 0; r.global_root[6 * 5 + 3] = 0.0f; EXPECT_EQ(rm.model->validate(r), ""); }
}

TEST(predict, seeded_gumbel_is_reproducible_and_padding_free) {
    MB_REQUIRE_SHARED(dir, k_dir);
    reference_model rm(dir, 1);
    predict_request r = first_request(dir);
    r.sampling = sampling_mode::SAMPLING_MODE_GUMBEL;
    r.seed     = 42;
    const predict_result a = rm.model->predict(r);
    const predict_result b = rm.model->predict(r);
    EXPECT_EQ(a.tokens, b.tokens);
    EXPECT_EQ(a.global_features, b.global_features);
    r.seed = 43;
    const predict_result c = rm.model->predict(r);
    EXPECT_NE(a.tokens, c.tokens);
    // every forced length runs and gives 4n frames of finite output
    r.sampling = sampling_mode::SAMPLING_MODE_ARGMAX;
    for (int n = 6; n <= 16; ++n) {
        r.num_tokens = n;
        const predict_result p = rm.model->predict(r);
        ASSERT_EQ(p.frames, 4 * n);
        for (float v : p.joint_positions) ASSERT_TRUE(std::isfinite(v));
    }
}

TEST(predict, timing_small) {
    MB_REQUIRE_SHARED(dir, k_dir);
    reference_model rm(dir, 1);
    const predict_request r = first_request(dir);
    std::vector<double> ms;
    for (int i = 0; i < 11; ++i) ms.push_back(rm.model->predict(r).timings.total_ms);
    std::sort(ms.begin(), ms.end());
    std::printf("  reference-small predict (n=%d, 1 thread): median %.2f ms\n", rm.model->predict(r).num_tokens, ms[5]);
}
