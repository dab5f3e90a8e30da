// the CUDA backend's ops against the CPU backend at the networks' sizes (run through
// cuda-run, which skips without a GPU): linear on every kernel path (skinny row tiles,
// scalar loads, cuBLAS), LayerNorm, attention with masked keys, dilated conv1d; outputs
// are poisoned with NaN first so an unwritten element fails
#include "backend/backend-select.h"
#include "backend-test-util.h"
#include "format/bundle.h"
#include "model/sampling.h"
#include "motion/predict.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <vector>

namespace {

using mb::test::random_vec;

struct backends : ::testing::Test {
    void SetUp() override {
        const std::string problem = mb::backend_cuda_problem(0);
        if (!problem.empty()) GTEST_SKIP() << "skipped: " << problem;
        gpu = mb::backend_create(mb::backend_device::BACKEND_DEVICE_CUDA, 1, 0);
        cpu = mb::backend_create(mb::backend_device::BACKEND_DEVICE_CPU, 1, 0);
    }
    std::unique_ptr<mb::backend> gpu, cpu;
};

std::vector<float> poisoned(size_t n) {
    return std::vector<float>(n, std::numeric_limits<float>::quiet_NaN());
}

// max |a − b| / max(1, max |b|); NaN anywhere → infinity
double rel_err(const std::vector<float> & a, const std::vector<float> & b) {
    double m = 0.0, scale = 1.0;
    for (float v : b) scale = std::max(scale, (double) std::fabs(v));
    for (size_t i = 0; i < a.size(); ++i) {
        if (!std::isfinite(a[i]) || !std::isfinite(b[i])) return INFINITY;
        m = std::max(m, (double) std::fabs(a[i] - b[i]));
    }
    return m / scale;
}

TEST_F(backends, linear_every_path) {
    EXPECT_EQ(std::string(gpu->name()), "cuda");
    struct shape { int64_t n, n_in, n_out; };
    const shape shapes[] = {{1, 1024, 3072}, {3, 1024, 1024}, {5, 2048, 1024}, {8, 512, 2048}, {13, 1024, 160},
                            {16, 1024, 3072}, {25, 512, 1536}, {64, 1536, 512}, {65, 512, 517}, {200, 1024, 3072},
                            {9, 5, 64}, {8, 4, 64}, {64, 303, 160}, {7, 2, 130}, {1, 1024, 12}};
    uint32_t seed = 1;
    for (const shape & s : shapes) {
        auto x = random_vec(s.n * s.n_in, seed++), w = random_vec(s.n_out * s.n_in, seed++), b = random_vec(s.n_out, seed++);
        for (bool bias : {true, false}) {
            auto y = poisoned(s.n * s.n_out), ref = poisoned(s.n * s.n_out);
            gpu->linear(x.data(), s.n, s.n_in, w.data(), bias ? b.data() : nullptr, s.n_out, y.data());
            cpu->linear(x.data(), s.n, s.n_in, w.data(), bias ? b.data() : nullptr, s.n_out, ref.data());
            EXPECT_LT(rel_err(y, ref), 2e-6) << s.n << "x" << s.n_in << " → " << s.n_out << " bias " << bias;
        }
        // registered weights give the same result as staged ones
        auto y1 = poisoned(s.n * s.n_out), y2 = poisoned(s.n * s.n_out);
        gpu->linear(x.data(), s.n, s.n_in, w.data(), b.data(), s.n_out, y1.data());
        gpu->weights_register(w.data(), w.size() * sizeof(float));
        gpu->weights_register(b.data(), b.size() * sizeof(float));
        gpu->linear(x.data(), s.n, s.n_in, w.data(), b.data(), s.n_out, y2.data());
        EXPECT_EQ(y1, y2) << "registered weights, " << s.n << " rows";
        gpu = mb::backend_create(mb::backend_device::BACKEND_DEVICE_CUDA, 1, 0);   // forget them
    }
}

TEST_F(backends, add_layer_norm) {
    for (int64_t d : {33, 512, 1024}) {
        const int64_t n = 25;
        auto x = random_vec(n * d, 4), r = random_vec(n * d, 5), g = random_vec(d, 6), b = random_vec(d, 7);
        for (bool with_r : {true, false}) {
            auto xg = x, xc = x;
            gpu->add_layer_norm(xg.data(), with_r ? r.data() : nullptr, n, d, g.data(), b.data(), 1e-5f);
            cpu->add_layer_norm(xc.data(), with_r ? r.data() : nullptr, n, d, g.data(), b.data(), 1e-5f);
            EXPECT_LT(rel_err(xg, xc), 1e-6) << "d " << d << " residual " << with_r;
        }
    }
}

TEST_F(backends, attention_with_key_mask) {
    for (int64_t n : {1, 9, 25, 200}) {
        for (int64_t d : {512, 1024}) {
            const int64_t n_head = 16;
            auto qkv = random_vec(n * 3 * d, 8);
            std::vector<uint8_t> mask((size_t) n, 0);
            for (int64_t j = 1; j < n; j += 3) mask[(size_t) j] = 1;
            for (bool masked : {false, true}) {
                auto o = poisoned(n * d), ref = poisoned(n * d);
                gpu->attention(qkv.data(), n, d, n_head, masked ? mask.data() : nullptr, o.data());
                cpu->attention(qkv.data(), n, d, n_head, masked ? mask.data() : nullptr, ref.data());
                EXPECT_LT(rel_err(o, ref), 2e-6) << "n " << n << " d " << d << " masked " << masked;
            }
        }
    }
}

TEST_F(backends, conv1d_same_padding_dilated) {
    struct shape { int64_t c_in, t, c_out, k, dil; };
    const shape shapes[] = {{512, 16, 512, 3, 1}, {512, 32, 512, 3, 9}, {512, 64, 512, 3, 27}, {512, 64, 512, 1, 1},
                            {512, 64, 413, 3, 1}, {256, 16, 512, 3, 1}, {512, 64, 5, 3, 1}, {96, 100, 77, 3, 3}};
    uint32_t seed = 40;
    for (const shape & s : shapes) {
        auto x = random_vec(s.c_in * s.t, seed++), w = random_vec(s.c_out * s.c_in * s.k, seed++),
             b = random_vec(s.c_out, seed++);
        auto y = poisoned(s.c_out * s.t), ref = poisoned(s.c_out * s.t);
        gpu->conv1d(x.data(), s.c_in, s.t, w.data(), b.data(), s.c_out, s.k, s.dil, y.data());
        cpu->conv1d(x.data(), s.c_in, s.t, w.data(), b.data(), s.c_out, s.k, s.dil, ref.data());
        EXPECT_LT(rel_err(y, ref), 2e-6) << s.c_in << "→" << s.c_out << " t " << s.t << " k " << s.k << " dil " << s.dil;
    }
}

// request i of a varied set: target distance and heading, masks, forced or predicted
// duration, argmax or seeded Gumbel, 1..4 steps
mb::predict_request varied_request(int i) {
    mb::predict_request r;
    mb::splitmix64      rng(1000 + (uint64_t) i);
    auto                u = [&]() { return rng.next_uniform(); };
    const float dist = 0.5f + 2.5f * u(), dir = 6.2831853f * u(), head = 6.2831853f * u();
    for (int s = 0; s < mb::k_constraint_frames; ++s) {
        const bool  target = s >= 4;
        const float g[5]   = {target ? dist * std::sin(dir) : 0.0f, 0.8f, target ? dist * std::cos(dir) : 0.02f * s,
                              target ? std::cos(head) : 1.0f, target ? std::sin(head) : 0.0f};
        std::copy(g, g + 5, r.global_root.begin() + s * 5);
        r.global_root_mask[(size_t) s] = (s == 0 || !target || u() < 0.8f) ? 1 : 0;
        const float l[4] = {0.0f, 0.0f, target ? 0.0f : 1.0f, 0.8f};
        std::copy(l, l + 4, r.local_root.begin() + s * 4);
        r.local_root_mask[(size_t) s] = u() < 0.7f ? 1 : 0;
        r.pose_mask[(size_t) s]       = u() < 0.6f ? 1 : 0;
    }
    for (float & v : r.poses) v = 0.2f * u() - 0.1f;
    r.num_tokens          = i % 3 == 0 ? 6 + i % 11 : 0;
    r.sampling            = i % 2 ? mb::sampling_mode::SAMPLING_MODE_GUMBEL : mb::sampling_mode::SAMPLING_MODE_ARGMAX;
    r.seed                = 77 + (uint64_t) i;
    r.num_inference_steps = 1 + i % 4;
    return r;
}

TEST(cuda_full_bundle, cpu_and_cuda_agree_on_64_requests) {
    const char * dir = std::getenv("MB_CUDA_FULL_BUNDLE");
    if (!dir || !*dir) GTEST_SKIP() << "skipped: MB_CUDA_FULL_BUNDLE (a full-size bundle directory) is not set";
    if (const std::string p = mb::backend_cuda_problem(0); !p.empty()) GTEST_SKIP() << "skipped: " << p;
    auto cpu = mb::motion_model::create(mb::bundle_load(dir), 0, mb::backend_device::BACKEND_DEVICE_CPU);
    auto gpu = mb::motion_model::create(mb::bundle_load(dir), 0, mb::backend_device::BACKEND_DEVICE_CUDA);
    ASSERT_STREQ(gpu->backend_name(), "cuda");
    int    same_n = 0, same_tokens = 0, total = 0;
    double feat = 0.0, joint = 0.0;
    for (int i = 0; i < 64; ++i) {
        const mb::predict_request req = varied_request(i);
        ASSERT_EQ(cpu->validate(req), "") << "request " << i;
        const mb::predict_result a = cpu->predict(req), b = gpu->predict(req);
        ++total;
        if (a.num_tokens != b.num_tokens) continue;
        ++same_n;
        if (a.tokens != b.tokens) continue;
        ++same_tokens;
        for (size_t k = 0; k < a.global_features.size(); ++k) {
            feat = std::max(feat, (double) std::fabs(a.global_features[k] - b.global_features[k]));
        }
        for (size_t k = 0; k < a.joint_positions.size(); ++k) {
            joint = std::max(joint, (double) std::fabs(a.joint_positions[k] - b.joint_positions[k]));
        }
    }
    std::printf("full bundle, CPU vs CUDA F32: durations %d/%d, tokens %d/%d, max |feature| diff %.3g, "
                "max |joint| diff %.3g m\n", same_n, total, same_tokens, total, feat, joint);
    EXPECT_EQ(same_n, total);
    EXPECT_EQ(same_tokens, total);
    EXPECT_LT(feat, 1e-3);
}

TEST(cuda_backend, unavailable_device_is_reported) {
    // an ordinal no machine has: backend_unavailable naming it, whatever the build
    try {
        mb::backend_create(mb::backend_device::BACKEND_DEVICE_CUDA, 1, 4096);
        FAIL() << "ordinal 4096 was accepted";
    } catch (const mb::backend_unavailable & e) {
        EXPECT_FALSE(std::string(e.what()).empty());
    }
    // auto falls back to the CPU there
    EXPECT_STRNE(mb::backend_create(mb::backend_device::BACKEND_DEVICE_AUTO, 1, 4096)->name(), "cuda");
}

} // namespace
