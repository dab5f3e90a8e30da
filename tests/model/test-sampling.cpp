// sampling: argmax tie rule, Gumbel noise against upstream's recorded draws, and the
// SplitMix64 uniform generator against the published reference sequence
#include "model-fixtures.h"

#include "model/sampling.h"
#include "support/test-paths.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace {

using namespace mb;
using namespace mb::test;

TEST(sampling, argmax_first_index_on_ties) {
    const float a[] = {1.0f, 3.0f, 3.0f, -2.0f};
    EXPECT_EQ(argmax_first(a, 4), 1);
    const float b[] = {5.0f, 5.0f};
    EXPECT_EQ(argmax_first(b, 2), 0);
    const float c[] = {-std::numeric_limits<float>::infinity(), -1.0f};
    EXPECT_EQ(argmax_first(c, 2), 1);
    const float d[] = {std::nanf(""), 0.5f, 0.25f};
    EXPECT_EQ(argmax_first(d, 3), 1);
    EXPECT_EQ(argmax_first(a, 1), 0);
}

TEST(sampling, gumbel_noise_formula) {
    // g = −log(−log(u)) with both logs clamped at 1e−20
    EXPECT_FLOAT_EQ(gumbel_noise(0.5f), (float) -std::log(-std::log(0.5)));
    EXPECT_FLOAT_EQ(gumbel_noise(0.0f), -std::log(-std::log(1e-20f)));
    EXPECT_TRUE(std::isfinite(gumbel_noise(1.0f - 1.0f / 16777216.0f)));
    // u → 1 gives −log(1e−20) = 46.05 (the inner clamp)
    EXPECT_FLOAT_EQ(gumbel_noise(1.0f), -std::log(1e-20f));
    // noise moves the argmax
    const float logits[] = {1.0f, 0.9f};
    const float u[]      = {0.1f, 0.9f};
    EXPECT_EQ(gumbel_argmax(logits, u, 2), 1);
}

TEST(sampling, splitmix64_reference_sequence) {
    splitmix64 r(0);
    EXPECT_EQ(r.next_u64(), 0xE220A8397B1DCDAFull);
    EXPECT_EQ(r.next_u64(), 0x6E789E6AA1B965F4ull);
    EXPECT_EQ(r.next_u64(), 0x06C45D188009454Full);

    float u[3];
    uniforms_generate(1234567, u, 3);
    EXPECT_EQ(u[0], 0.3500795364379883f);
    EXPECT_EQ(u[1], 0.1736440658569336f);
    EXPECT_EQ(u[2], 0.5322072505950928f);

    // always in [0, 1), reproducible
    std::vector<float> a(100000), b(100000);
    uniforms_generate(42, a.data(), a.size());
    uniforms_generate(42, b.data(), b.size());
    EXPECT_EQ(a, b);
    double mean = 0.0;
    for (float x : a) {
        ASSERT_GE(x, 0.0f);
        ASSERT_LT(x, 1.0f);
        mean += x;
    }
    EXPECT_NEAR(mean / (double) a.size(), 0.5, 0.01);
}

TEST(sampling, gumbel_matches_upstream_draws) {
    MB_REQUIRE_SHARED(dir, "fixtures/reference-small");
    int n_cases = 0;
    for (const reference_case & rc : reference_cases(dir)) {
        if (rc.use_argmax) continue;
        SCOPED_TRACE(rc.name);
        ++n_cases;
        npz_file   z(rc.file);
        const auto u      = z.get("mid_step_gumbel_uniform").to_f32();
        const auto g      = z.get("mid_step_gumbel_noise").to_f32();
        const auto logits = z.get("mid_step_pose_logits").to_f32();
        ASSERT_EQ(u.size(), g.size());
        ASSERT_EQ(u.size(), logits.size());
        double worst = 0.0;
        for (size_t i = 0; i < u.size(); ++i) {
            worst = std::max(worst, (double) std::fabs(gumbel_noise(u[i]) - g[i]) / std::max(1.0f, std::fabs(g[i])));
        }
        EXPECT_LT(worst, 1e-6) << "relative error of the noise";

        // the last step's samples on the valid tokens are the final tokens
        const int64_t n    = z.get("out_pred_num_tokens").to_i64().at(0);
        const int64_t S    = rc.num_inference_steps;
        const auto    toks = span_i32(z.get("mid_pred_pose_tokens"), 0, n * 8);
        const size_t  base = (size_t) ((S - 1) * 16 * 8 * 10);
        for (int64_t i = 0; i < n * 8; ++i) {
            ASSERT_EQ(gumbel_argmax(&logits[base + i * 10], &u[base + i * 10], 10), toks[(size_t) i]) << "slot " << i;
        }
    }
    EXPECT_EQ(n_cases, 3);
}

} // namespace
