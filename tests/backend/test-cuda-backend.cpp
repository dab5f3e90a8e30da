// the CUDA backend's ops against the CPU backend at the networks' sizes (run through
// cuda-run, which skips without a GPU): linear on every kernel path (skinny row tiles,
// scalar loads, cuBLAS), LayerNorm, attention with masked keys, dilated conv1d; outputs
// are poisoned with NaN first so an unwritten element fails
#include "backend/backend-select.h"
#include "backend-test-util.h"

#include <gtest/gtest.h>

#include <cmath>
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
