// BF16 and Q8_0 weights on the CPU backend: the kernel of every instruction set against a
// double reference on the dequantised weights (so only the float32 sums differ), linear and
// conv1d through the backend interface with threads, and the errors for what cannot run
#include "backend/cpu/cpu-backend.h"
#include "backend/cpu/cpu-gemm.h"
#include "backend-test-util.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace {

using mb::weight_type;
using mb::cpu::gemm_isa;
using mb::test::host;
using mb::test::random_vec;

// encoded weights and their exact float values
struct typed_weights {
    std::vector<uint8_t> bytes;
    std::vector<float>   values;
};

// ggml's fp32 → bf16: round to nearest even
typed_weights to_bf16(const std::vector<float> & w) {
    typed_weights t;
    for (float v : w) {
        uint32_t u;
        std::memcpy(&u, &v, 4);
        const uint16_t h  = uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
        const uint32_t bk = uint32_t(h) << 16;
        float          f;
        std::memcpy(&f, &bk, 4);
        t.bytes.push_back(uint8_t(h & 0xff));
        t.bytes.push_back(uint8_t(h >> 8));
        t.values.push_back(f);
    }
    return t;
}

// IEEE half: GCC 12's C++ has _Float16 on x86-64 but only __fp16 on ARM64
#if defined(__aarch64__)
using half = __fp16;
#else
using half = _Float16;
#endif

// ggml's quantize_row_q8_0_ref: d = max|x| / 127 stored as F16, q = round(x / d)
typed_weights to_q8_0(const std::vector<float> & w) {
    typed_weights t;
    for (size_t b = 0; b < w.size(); b += 32) {
        float amax = 0.0f;
        for (size_t i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(w[b + i]));
        const float    d  = amax / 127.0f;
        const float    id = d != 0.0f ? 1.0f / d : 0.0f;
        const half     dh = (half) d;
        uint16_t       hb;
        std::memcpy(&hb, &dh, 2);
        t.bytes.push_back(uint8_t(hb & 0xff));
        t.bytes.push_back(uint8_t(hb >> 8));
        for (size_t i = 0; i < 32; ++i) {
            const int8_t q = (int8_t) std::round(w[b + i] * id);
            t.bytes.push_back((uint8_t) q);
            t.values.push_back((float) dh * (float) q);
        }
    }
    return t;
}

typed_weights encode(weight_type wt, const std::vector<float> & w) {
    return wt == weight_type::WEIGHT_BF16 ? to_bf16(w) : to_q8_0(w);
}

std::vector<double> reference(const std::vector<float> & x, int64_t m, int64_t k, const std::vector<float> & w,
                              const float * b, int64_t n_out) {
    std::vector<double> ref(size_t(m * n_out));
    for (int64_t i = 0; i < m; ++i)
        for (int64_t o = 0; o < n_out; ++o) {
            double acc = b ? b[o] : 0.0;
            for (int64_t c = 0; c < k; ++c) acc += (double) x[size_t(i * k + c)] * w[size_t(o * k + c)];
            ref[size_t(i * n_out + o)] = acc;
        }
    return ref;
}

constexpr gemm_isa k_isas[] = {gemm_isa::GEMM_ISA_SCALAR, gemm_isa::GEMM_ISA_AVX2, gemm_isa::GEMM_ISA_AVX512,
                               gemm_isa::GEMM_ISA_NEON};

TEST(cpu_typed, gemm_every_isa_matches_the_dequantised_reference) {
    for (weight_type wt : {weight_type::WEIGHT_BF16, weight_type::WEIGHT_Q8_0}) {
        const std::vector<int64_t> ks = wt == weight_type::WEIGHT_Q8_0 ? std::vector<int64_t>{32, 64, 96, 1024}
                                                                        : std::vector<int64_t>{1, 5, 17, 64, 304, 1027};
        for (gemm_isa isa : k_isas) {
            if (!mb::cpu::gemm_isa_supported(isa)) continue;
            for (int64_t m : {1, 2, 3, 4, 5, 16, 25}) {
                for (int64_t k : ks) {
                    for (int64_t n_out : {1, 3, 4, 5, 17, 80}) {
                        auto x = random_vec(size_t(m * k), 1), w = random_vec(size_t(n_out * k), 2);
                        auto b = random_vec(size_t(n_out), 3);
                        // one row of tiny weights: its Q8_0 scales are F16 subnormals
                        for (int64_t c = 0; c < k; ++c) w[size_t(c)] *= 1e-4f;
                        const typed_weights tw = encode(wt, w);
                        std::vector<float>  y(size_t(m * n_out), NAN);
                        mb::cpu::gemm_nt(x.data(), m, k, k, tw.bytes.data(), wt, b.data(), 0, n_out, y.data(), n_out,
                                         isa);
                        const auto ref = reference(x, m, k, tw.values, b.data(), n_out);
                        ASSERT_LT(mb::test::max_abs_diff(y, ref) / std::sqrt((double) k), 1e-5)
                            << mb::weight_type_name(wt) << " isa " << mb::cpu::gemm_isa_name(isa) << " m " << m
                            << " k " << k << " n_out " << n_out;
                    }
                }
            }
        }
    }
}

TEST(cpu_typed, linear_and_conv1d_through_the_backend_with_threads) {
    for (int threads : {1, 2, 3}) {
        auto be = mb::backend_cpu_create(threads);
        ASSERT_TRUE(be->supports_weight_type(weight_type::WEIGHT_BF16));
        ASSERT_TRUE(be->supports_weight_type(weight_type::WEIGHT_Q8_0));
        for (weight_type wt : {weight_type::WEIGHT_BF16, weight_type::WEIGHT_Q8_0}) {
            // linear at network size: 10 rows, 1024 → 768
            const int64_t n = 10, n_in = 1024, n_out = 768;
            auto x = random_vec(size_t(n * n_in), 4), w = random_vec(size_t(n_out * n_in), 5);
            auto b = random_vec(size_t(n_out), 6);
            const typed_weights tw = encode(wt, w);
            std::vector<float>  y(size_t(n * n_out), NAN);
            be->linear(host(x), n, n_in, mb::bweight(tw.bytes.data(), wt), host(b), n_out, host(y));
            const auto ref = reference(x, n, n_in, tw.values, b.data(), n_out);
            EXPECT_LT(mb::test::max_abs_diff(y, ref) / std::sqrt((double) n_in), 1e-5)
                << mb::weight_type_name(wt) << " linear, threads " << threads;

            // conv1d 64 → 96 channels, k 3, dilation 3, 20 frames (rows of 192 values: whole Q8_0 blocks)
            const int64_t c_in = 64, c_out = 96, k = 3, t = 20, dil = 3;
            auto cx = random_vec(size_t(c_in * t), 7), cw = random_vec(size_t(c_out * c_in * k), 8);
            auto cb = random_vec(size_t(c_out), 9);
            const typed_weights tc = encode(wt, cw);
            std::vector<float>  got(size_t(c_out * t), NAN), want(size_t(c_out * t), NAN);
            be->conv1d(host(cx), c_in, t, mb::bweight(tc.bytes.data(), wt), host(cb), c_out, k, dil, host(got));
            be->conv1d(host(cx), c_in, t, host(tc.values), host(cb), c_out, k, dil, host(want));
            for (size_t i = 0; i < got.size(); ++i) {
                ASSERT_NEAR(got[i], want[i], 1e-4) << mb::weight_type_name(wt) << " conv1d at " << i;
            }
        }
    }
}

TEST(cpu_typed, q8_0_rows_must_be_whole_blocks) {
    auto be = mb::backend_cpu_create(1);
    std::vector<float>   x(40, 1.0f), y(2, 0.0f);
    std::vector<uint8_t> w(2 * 34 * 2, 0);
    try {
        be->linear(host(x), 1, 40, mb::bweight(w.data(), weight_type::WEIGHT_Q8_0), mb::bptr<const float>(), 2,
                   host(y));
        FAIL() << "accepted rows of 40 values";
    } catch (const std::runtime_error & e) {
        EXPECT_NE(std::string(e.what()).find("not whole 32-value blocks"), std::string::npos) << e.what();
    }
}

TEST(cpu_typed, the_default_backend_entry_refuses_reduced_weights) {
    // what a backend without reduced weights (CUDA today) inherits
    struct f32_only : mb::backend {
        const char * name() const override { return "f32-only"; }
        int  n_threads() const override { return 1; }
        std::unique_ptr<mb::backend_buffer> alloc(size_t) override { return nullptr; }
        void set_bytes(void *, const void *, size_t) override {}
        void get_bytes(const void *, void *, size_t) override {}
        void fill_f32(int64_t, float, mb::bptr<float>) override {}
        void fill_i32(int64_t, int32_t, mb::bptr<int32_t>) override {}
        void add(mb::bptr<const float>, mb::bptr<const float>, int64_t, mb::bptr<float>, int64_t) override {}
        void relu(mb::bptr<const float>, int64_t, mb::bptr<float>) override {}
        void leaky_relu(mb::bptr<const float>, int64_t, float, mb::bptr<float>) override {}
        void silu(mb::bptr<const float>, int64_t, mb::bptr<float>) override {}
        void copy_rows(mb::bptr<const float>, int64_t, int64_t, int64_t, mb::bptr<float>, int64_t) override {}
        void where_rows(mb::bptr<const uint8_t>, mb::bptr<const float>, int64_t, mb::bptr<const float>, int64_t,
                        int64_t, int64_t, mb::bptr<float>, int64_t) override {}
        void transpose(mb::bptr<const float>, int64_t, int64_t, mb::bptr<float>, int64_t) override {}
        void mask_cols(int64_t, int64_t, int64_t, mb::bptr<float>) override {}
        void upsample2(mb::bptr<const float>, int64_t, int64_t, mb::bptr<float>) override {}
        void embed_heads(mb::bptr<const float>, int64_t, int64_t, int64_t, mb::bptr<const int32_t>, int64_t,
                         mb::bptr<float>) override {}
        void replace_frames(mb::bptr<const float>, mb::bptr<const uint8_t>, int64_t, int64_t, int64_t,
                            mb::bptr<float>, int64_t) override {}
        using mb::backend::linear;
        void linear(mb::bptr<const float>, int64_t, int64_t, mb::bptr<const float>, mb::bptr<const float>, int64_t,
                    mb::bptr<float>) override {
            ++f32_calls;
        }
        void add_layer_norm(mb::bptr<float>, mb::bptr<const float>, int64_t, int64_t, mb::bptr<const float>,
                            mb::bptr<const float>, float) override {}
        void attention(mb::bptr<const float>, int64_t, int64_t, int64_t, mb::bptr<const uint8_t>,
                       mb::bptr<float>, int64_t) override {}
        using mb::backend::conv1d;
        void conv1d(mb::bptr<const float>, int64_t, int64_t, mb::bptr<const float>, mb::bptr<const float>, int64_t,
                    int64_t, int64_t, mb::bptr<float>, int64_t) override {}
        void sample_codes(mb::bptr<const float>, int64_t, int64_t, mb::bptr<const float>, mb::bptr<int32_t>,
                          mb::bptr<float>) override {}
        void remask_lowest(mb::bptr<const float>, int64_t, int64_t, int32_t, mb::bptr<int32_t>, int64_t) override {}
        int f32_calls = 0;
    } be;
    std::vector<float> w(4);
    EXPECT_FALSE(be.supports_weight_type(weight_type::WEIGHT_BF16));
    be.linear({}, 1, 2, mb::bweight(host(w)), {}, 2, {});
    EXPECT_EQ(be.f32_calls, 1) << "an F32 bweight runs the F32 linear";
    try {
        be.linear({}, 1, 2, mb::bweight(w.data(), weight_type::WEIGHT_BF16), {}, 2, {});
        FAIL() << "accepted BF16";
    } catch (const std::runtime_error & e) {
        EXPECT_NE(std::string(e.what()).find("f32-only backend cannot run BF16"), std::string::npos) << e.what();
    }
}

TEST(cpu_typed, isa_names_of_the_environment_variable) {
    const char * old = std::getenv("MB_CPU_ISA");
    const std::string saved = old ? old : "";
    for (gemm_isa isa : k_isas) {
        setenv("MB_CPU_ISA", mb::cpu::gemm_isa_name(isa), 1);
        if (mb::cpu::gemm_isa_supported(isa)) EXPECT_EQ(mb::cpu::gemm_isa_from_env(), isa);
        else EXPECT_THROW(mb::cpu::gemm_isa_from_env(), std::runtime_error);
    }
    setenv("MB_CPU_ISA", "sse9", 1);
    EXPECT_THROW(mb::cpu::gemm_isa_from_env(), std::runtime_error);
    if (old) setenv("MB_CPU_ISA", saved.c_str(), 1);
    else unsetenv("MB_CPU_ISA");
}

} // namespace
