// fused batch lanes (motion_model::predict_batch): batches of 1, 7, 64 and 4096 mixed
// requests (forced and predicted durations, argmax and seeded or replayed Gumbel, 1–4
// decoding steps, end-target skipping, restricted durations) give every request exactly
// what it gives alone: token counts and tokens exact, features within 1e-5 (bitwise on the
// CPU and on CUDA in F32, whose kernels sum every output in an order that does not depend on
// the row count; the largest difference seen is printed). Runs on the device MB_TEST_DEVICE
// picks, on the reference-small weights
#include "predict-fixtures.h"
#include "support/test-paths.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace {

using namespace mb;
using namespace mb::test;

constexpr const char * k_dir  = "fixtures/reference-small";
constexpr float        k_tol  = 1e-5f;   // absolute, on features O(1..10)

// request i of a deterministic mix built on the fixture cases' constraints
predict_request mixed_request(const std::vector<predict_request> & base, int i) {
    predict_request r = base[size_t(i) % base.size()];
    const uint32_t  h = uint32_t(i) * 2654435761u;
    r.num_inference_steps = 1 + int((h >> 3) % 4);
    r.num_tokens          = (h >> 6) % 3 == 0 ? 0 : 6 + int((h >> 8) % 11);
    if ((h >> 12) % 5 == 0 && r.num_tokens == 0) {
        r.allowed_num_tokens.fill(0);
        r.allowed_num_tokens[(h >> 15) % 11] = 1;
        r.allowed_num_tokens[(h >> 19) % 11] = 1;
    }
    r.skip_ending_target_cond = (h >> 23) % 4 == 0;
    r.gumbel_uniforms.clear();
    switch ((h >> 25) % 3) {
        case 0: r.sampling = sampling_mode::SAMPLING_MODE_ARGMAX; break;
        case 1:
            r.sampling = sampling_mode::SAMPLING_MODE_GUMBEL;
            r.seed     = uint64_t(i) * 7919u + 1;
            break;
        default: {   // replayed uniforms
            r.sampling = sampling_mode::SAMPLING_MODE_GUMBEL;
            r.gumbel_uniforms.resize(size_t(r.num_inference_steps) * 16 * 8 * 10);
            uint32_t s = uint32_t(i) + 17;
            for (float & u : r.gumbel_uniforms) u = float((s = s * 1664525u + 1013904223u) >> 8) / 16777216.0f;
        }
    }
    return r;
}

float max_diff(const std::vector<float> & a, const std::vector<float> & b) {
    if (a.size() != b.size()) return INFINITY;
    float m = 0.0f;
    for (size_t i = 0; i < a.size(); ++i) {
        const float d = std::fabs(a[i] - b[i]);
        if (!(d <= m)) m = d;
    }
    return m;
}

void expect_same(const predict_result & alone, const predict_result & lane, int i) {
    ASSERT_EQ(lane.num_tokens, alone.num_tokens) << "request " << i;
    ASSERT_EQ(lane.frames, alone.frames) << "request " << i;
    ASSERT_EQ(lane.tokens, alone.tokens) << "request " << i;
    EXPECT_LE(max_diff(lane.global_features, alone.global_features), k_tol) << "request " << i;
    EXPECT_LE(max_diff(lane.joint_positions, alone.joint_positions), k_tol) << "request " << i;
    EXPECT_LE(max_diff(lane.local_rotations_xyzw, alone.local_rotations_xyzw), k_tol) << "request " << i;
    EXPECT_LE(max_diff(lane.root_translations, alone.root_translations), k_tol) << "request " << i;
    for (size_t k = 0; k < alone.num_token_logits.size(); ++k) {
        const float a = alone.num_token_logits[k], b = lane.num_token_logits[k];
        EXPECT_TRUE(a == b || std::fabs(a - b) <= k_tol) << "request " << i << " logit " << k;
    }
}

struct batch_fixture {
    std::string                  dir;
    std::unique_ptr<reference_model> rm;
    std::vector<predict_request> base;

    explicit batch_fixture(const std::string & d) : dir(d), rm(std::make_unique<reference_model>(d, 1)) {
        for (const auto & rc : reference_cases(dir)) {
            predict_request r = reference_request(npz_file(rc.file), rc);
            r.allow_out_of_reach = false;     // every mixed request must have a trajectory
            base.push_back(r);
        }
    }

    // batch of `count` (from request `first`; `distinct` > 0 cycles through that many requests)
    // against each request alone
    void check(int first, int count, predict_state * st = nullptr, int distinct = 0) {
        std::vector<predict_request> reqs;
        for (int i = 0; i < count; ++i) reqs.push_back(mixed_request(base, first + (distinct > 0 ? i % distinct : i)));
        std::vector<predict_result> out(reqs.size());
        const auto t0 = std::chrono::steady_clock::now();
        if (st) rm->model->predict_batch(*st, reqs, out);
        else rm->model->predict_batch(reqs, out);
        const auto t1 = std::chrono::steady_clock::now();
        std::vector<predict_result> alone;
        const int n_alone = distinct > 0 ? std::min(distinct, count) : count;
        for (int i = 0; i < n_alone; ++i) alone.push_back(rm->model->predict(reqs[size_t(i)]));
        const auto t2 = std::chrono::steady_clock::now();
        std::printf("  batch of %d: fused %.1f ms, one by one %.1f ms\n", count,
                    std::chrono::duration<double, std::milli>(t1 - t0).count(),
                    std::chrono::duration<double, std::milli>(t2 - t1).count());
        float worst = 0.0f;     // reported: 0 where lanes are bitwise equal to requests alone
        for (int i = 0; i < count; ++i) {
            SCOPED_TRACE("batch of " + std::to_string(count));
            const predict_result & a = alone[size_t(i % n_alone)];
            const predict_result & l = out[size_t(i)];
            expect_same(a, l, first + i);
            if (::testing::Test::HasFatalFailure()) return;
            worst = std::max({worst, max_diff(l.global_features, a.global_features),
                              max_diff(l.joint_positions, a.joint_positions),
                              max_diff(l.local_rotations_xyzw, a.local_rotations_xyzw),
                              max_diff(l.root_translations, a.root_translations)});
        }
        std::printf("  batch of %d: lanes vs alone, max difference %.3g\n", count, worst);
    }
};

} // namespace

TEST(predict_batch, lanes_equal_requests_alone) {
    MB_REQUIRE_SHARED(dir, k_dir);
    batch_fixture f(dir);
    ASSERT_GE(f.rm->model->batch_lanes(), 64);
    f.check(0, 1);
    f.check(1, 7);
    f.check(8, 64);
    // a state of 3 lanes: 7 requests in chunks of 3, 3, 1
    const std::unique_ptr<predict_state> st = f.rm->model->create_state(3);
    f.check(100, 7, st.get());
    f.check(0, 64, nullptr, 1);
}

// the largest batch in one call (chunked by batch_lanes()): 4096 lanes cycling through
// 24 mixed requests, so that 24 runs alone give every lane's expected result
TEST(predict_batch, batch_of_4096) {
    MB_REQUIRE_SHARED(dir, k_dir);
    batch_fixture f(dir);
    f.check(1000, 4096, nullptr, 24);
}

TEST(predict_batch, names_the_failing_request) {
    MB_REQUIRE_SHARED(dir, k_dir);
    batch_fixture f(dir);
    std::vector<predict_request> reqs;
    for (int i = 0; i < 9; ++i) reqs.push_back(mixed_request(f.base, i));
    reqs[5].num_inference_steps = 0;
    std::vector<predict_result> out(reqs.size());
    size_t failed = 0;
    EXPECT_THROW(f.rm->model->predict_batch(reqs, out, &failed), mb::error);
    EXPECT_EQ(failed, 5u);
    // every lane of a batch must see the same decoding shape as alone even when a bucket has one lane
    reqs[5] = mixed_request(f.base, 5);
    EXPECT_NO_THROW(f.rm->model->predict_batch(reqs, out, &failed));
}

