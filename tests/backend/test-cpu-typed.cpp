// BF16 and Q8_0 weights on the CPU backend: the kernel of every instruction set against a
// double reference on the dequantised weights (so only the float32 sums differ), linear and
// conv1d through the backend interface with threads, and the errors for what cannot run
#include "backend/cpu/cpu-backend.h"
#include "backend/cpu/cpu-gemm.h"
#include "backend-test-util.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using mb::weight_type;
using mb::cpu::gemm_isa;
using mb::test::host;
using mb::test::random_vec;

// CTest's isa-* runs name a level in MB_CPU_ISA; where this CPU lacks it the whole binary skips
// (exit 77, SKIP_RETURN_CODE) saying so, instead of failing in the backend's constructor
const bool k_isa_env_checked = [] {
    const char * v = std::getenv("MB_CPU_ISA");
    gemm_isa     isa;
    if (v && *v && mb::cpu::gemm_isa_parse(v, isa) && !mb::cpu::gemm_isa_supported(isa)) {
        std::printf("skipped: MB_CPU_ISA=%s, and this CPU has no %s\n", v, v);
        std::exit(77);
    }
    return true;
}();

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
    if (wt == weight_type::WEIGHT_F32) {
        typed_weights t;
        t.bytes.resize(w.size() * 4);
        std::memcpy(t.bytes.data(), w.data(), t.bytes.size());
        t.values = w;
        return t;
    }
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

constexpr gemm_isa k_isas[] = {gemm_isa::GEMM_ISA_SCALAR, gemm_isa::GEMM_ISA_AVX2, gemm_isa::GEMM_ISA_AVX_VNNI,
                                gemm_isa::GEMM_ISA_AVX512,
                                gemm_isa::GEMM_ISA_AVX512_VNNI, gemm_isa::GEMM_ISA_AVX512_BF16,
                                gemm_isa::GEMM_ISA_AMX, gemm_isa::GEMM_ISA_NEON};

float bf16_round(float v) {
    uint32_t u;
    std::memcpy(&u, &v, 4);
    u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
    std::memcpy(&v, &u, 4);
    return v;
}

// x as the dot-product levels read it: rounded to bfloat16 (BF16 weights), or quantised per 32
// values as ggml's q8_0 with round-to-nearest-even codes (Q8_0 weights); unchanged elsewhere
std::vector<float> x_as_read(const std::vector<float> & x, int64_t k, weight_type wt, gemm_isa isa) {
    if (mb::cpu::gemm_pack_bytes(1, k, wt, isa) == 0) return x;
    std::vector<float> r(x.size());
    if (wt == weight_type::WEIGHT_BF16) {
        for (size_t i = 0; i < x.size(); ++i) r[i] = bf16_round(x[i]);
        return r;
    }
    for (size_t b = 0; b < x.size(); b += 32) {
        float amax = 0.0f;
        for (size_t i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(x[b + i]));
        const float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
        for (size_t i = 0; i < 32; ++i) r[b + i] = std::nearbyint(x[b + i] * id) * d;
    }
    return r;
}

// one instance per level; a level this CPU lacks skips, saying so
class typed_isa : public ::testing::TestWithParam<gemm_isa> {
protected:
    void SetUp() override {
        if (!mb::cpu::gemm_isa_supported(GetParam())) {
            GTEST_SKIP() << "this CPU has no " << mb::cpu::gemm_isa_name(GetParam());
        }
    }
};

// every level against a double reference on the dequantised weights and x as that level reads it
// (so only the float32 sums differ), and against the unrounded x within the rounding's bound
TEST_P(typed_isa, gemm_matches_the_dequantised_reference) {
    const gemm_isa isa = GetParam();
    for (weight_type wt : {weight_type::WEIGHT_BF16, weight_type::WEIGHT_Q8_0}) {
        const std::vector<int64_t> ks = wt == weight_type::WEIGHT_Q8_0 ? std::vector<int64_t>{32, 64, 96, 1024}
                                                                        : std::vector<int64_t>{1, 5, 17, 64, 304, 1027};
        const bool   rounds = mb::cpu::gemm_pack_bytes(1, 32, wt, isa) > 0;
        // bound of the rounding of x, per sqrt(k): bfloat16 2^-9 relative, int8 d/2 with d ≈ 3/127
        const double bound = !rounds ? 0.0 : wt == weight_type::WEIGHT_BF16 ? 0.02 : 0.06;
        for (int64_t m : {1, 2, 3, 4, 5, 16, 25}) {
            for (int64_t k : ks) {
                for (int64_t n_out : {1, 3, 4, 5, 17, 80}) {
                    auto x = random_vec(size_t(m * k), 1), w = random_vec(size_t(n_out * k), 2);
                    auto b = random_vec(size_t(n_out), 3);
                    // one row of tiny weights: its Q8_0 scales are F16 subnormals
                    for (int64_t c = 0; c < k; ++c) w[size_t(c)] *= 1e-4f;
                    const typed_weights tw = encode(wt, w);
                    std::vector<float>  y(size_t(m * n_out), NAN);
                    mb::cpu::gemm_nt(x.data(), m, k, k, tw.bytes.data(), wt, b.data(), 0, n_out, y.data(), n_out, isa);
                    const auto ref = reference(x_as_read(x, k, wt, isa), m, k, tw.values, b.data(), n_out);
                    ASSERT_LT(mb::test::max_abs_diff(y, ref) / std::sqrt((double) k), 1e-5)
                        << mb::weight_type_name(wt) << " isa " << mb::cpu::gemm_isa_name(isa) << " m " << m << " k "
                        << k << " n_out " << n_out;
                    if (rounds) {
                        const auto exact = reference(x, m, k, tw.values, b.data(), n_out);
                        ASSERT_LT(mb::test::max_abs_diff(y, exact) / std::sqrt((double) k), bound)
                            << mb::weight_type_name(wt) << " against unrounded x, m " << m << " k " << k;
                    }
                }
            }
        }
    }
}

// a column range of a packed call equals the same columns of a whole call (threads split by columns)
TEST_P(typed_isa, packed_column_ranges_equal_the_whole) {
    const gemm_isa isa = GetParam();
    const int64_t m = 7, k = 320, n_out = 70;
    for (weight_type wt : {weight_type::WEIGHT_BF16, weight_type::WEIGHT_Q8_0}) {
        auto x = random_vec(size_t(m * k), 11), w = random_vec(size_t(n_out * k), 12);
        const typed_weights  tw = encode(wt, w);
        std::vector<uint8_t> pack(size_t(mb::cpu::gemm_pack_bytes(m, k, wt, isa)));
        mb::cpu::gemm_pack(x.data(), m, k, k, wt, isa, pack.data());
        std::vector<float> whole(size_t(m * n_out), NAN), parts(size_t(m * n_out), NAN);
        mb::cpu::gemm_nt(x.data(), m, k, k, tw.bytes.data(), wt, nullptr, 0, n_out, whole.data(), n_out, isa);
        const int64_t cuts[] = {0, 16, 33, 64, n_out};
        for (int c = 0; c + 1 < 5; ++c) {
            mb::cpu::gemm_nt_packed(x.data(), m, k, k, tw.bytes.data(), wt, nullptr, cuts[c], cuts[c + 1], parts.data(),
                                    n_out, isa, pack.data());
        }
        for (size_t i = 0; i < whole.size(); ++i) ASSERT_EQ(whole[i], parts[i]) << mb::weight_type_name(wt) << " at " << i;
    }
}

// each row's outputs are the same bits whatever the row count of the call (fused lanes stack their
// rows into one call and must equal single requests): 37 rows at once against each row alone
TEST_P(typed_isa, rows_do_not_depend_on_the_row_count) {
    const gemm_isa isa = GetParam();
    const int64_t m = 37, k = 1056, n_out = 70;
    for (weight_type wt : {weight_type::WEIGHT_F32, weight_type::WEIGHT_BF16, weight_type::WEIGHT_Q8_0}) {
        auto x = random_vec(size_t(m * k), 15), w = random_vec(size_t(n_out * k), 16), b = random_vec(size_t(n_out), 17);
        const typed_weights tw = encode(wt, w);
        std::vector<float>  all(size_t(m * n_out), NAN), one(size_t(n_out), NAN);
        mb::cpu::gemm_nt(x.data(), m, k, k, tw.bytes.data(), wt, b.data(), 0, n_out, all.data(), n_out, isa);
        for (int64_t i = 0; i < m; ++i) {
            mb::cpu::gemm_nt(x.data() + i * k, 1, k, k, tw.bytes.data(), wt, b.data(), 0, n_out, one.data(), n_out, isa);
            ASSERT_EQ(std::memcmp(one.data(), all.data() + i * n_out, size_t(n_out) * 4), 0)
                << mb::weight_type_name(wt) << " isa " << mb::cpu::gemm_isa_name(isa) << " row " << i;
        }
    }
}

// AVX2 CPUs pack Q8_0 activations without AVX-512: the same bytes as the avx512-vnni packing
TEST(cpu_typed, avx_vnni_packs_q8_0_as_avx512_vnni) {
    if (!mb::cpu::gemm_isa_supported(gemm_isa::GEMM_ISA_AVX_VNNI) ||
        !mb::cpu::gemm_isa_supported(gemm_isa::GEMM_ISA_AVX512_VNNI)) {
        GTEST_SKIP() << "this CPU lacks avx-vnni or avx512-vnni";
    }
    const int64_t m = 5, k = 96;
    auto          x = random_vec(size_t(m * k), 18);
    x[7]            = 1e-39f;   // subnormal
    x[k + 70]       = NAN;
    for (int64_t c = 0; c < 32; ++c) x[size_t(2 * k + c)] = 0.0f;   // a block of zeros: d = 0
    const int64_t n = mb::cpu::gemm_pack_bytes(m, k, weight_type::WEIGHT_Q8_0, gemm_isa::GEMM_ISA_AVX_VNNI);
    ASSERT_EQ(n, mb::cpu::gemm_pack_bytes(m, k, weight_type::WEIGHT_Q8_0, gemm_isa::GEMM_ISA_AVX512_VNNI));
    std::vector<uint8_t> a(size_t(n), 1), b(size_t(n), 2);
    mb::cpu::gemm_pack(x.data(), m, k, k, weight_type::WEIGHT_Q8_0, gemm_isa::GEMM_ISA_AVX_VNNI, a.data());
    mb::cpu::gemm_pack(x.data(), m, k, k, weight_type::WEIGHT_Q8_0, gemm_isa::GEMM_ISA_AVX512_VNNI, b.data());
    for (size_t i = 0; i < a.size(); ++i) ASSERT_EQ(a[i], b[i]) << "byte " << i;
}

// a NaN or inf in x gives NaN outputs on its row, as on the float path (int8 codes would hide it)
TEST_P(typed_isa, non_finite_activations_stay_visible) {
    const gemm_isa isa = GetParam();
    const int64_t m = 3, k = 64, n_out = 5;
    for (weight_type wt : {weight_type::WEIGHT_BF16, weight_type::WEIGHT_Q8_0}) {
        auto x = random_vec(size_t(m * k), 13), w = random_vec(size_t(n_out * k), 14);
        x[size_t(0 * k + 40)] = NAN;
        x[size_t(1 * k + 3)]  = INFINITY;
        const typed_weights tw = encode(wt, w);
        std::vector<float>  y(size_t(m * n_out), 0.0f);
        mb::cpu::gemm_nt(x.data(), m, k, k, tw.bytes.data(), wt, nullptr, 0, n_out, y.data(), n_out, isa);
        for (int64_t o = 0; o < n_out; ++o) {
            EXPECT_FALSE(std::isfinite(y[size_t(o)])) << mb::weight_type_name(wt) << " NaN row, column " << o;
            EXPECT_FALSE(std::isfinite(y[size_t(n_out + o)])) << mb::weight_type_name(wt) << " inf row, column " << o;
            EXPECT_TRUE(std::isfinite(y[size_t(2 * n_out + o)])) << mb::weight_type_name(wt) << " finite row";
        }
    }
}

INSTANTIATE_TEST_SUITE_P(isa, typed_isa, ::testing::ValuesIn(k_isas), [](const auto & info) {
    std::string n = mb::cpu::gemm_isa_name(info.param);
    for (char & c : n) c = c == '-' ? '_' : c;
    return n;
});

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
            const auto ref = reference(x_as_read(x, n_in, wt, mb::cpu::gemm_isa_default()), n, n_in, tw.values,
                                       b.data(), n_out);
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
            // the dot-product levels round the im2col rows (x) too: int8 within its bound
            const bool   rounds = mb::cpu::gemm_pack_bytes(1, 32, wt, mb::cpu::gemm_isa_default()) > 0;
            const double tol    = !rounds ? 1e-4 : (wt == weight_type::WEIGHT_BF16 ? 0.02 : 0.06) * std::sqrt(192.0);
            for (size_t i = 0; i < got.size(); ++i) {
                ASSERT_NEAR(got[i], want[i], tol) << mb::weight_type_name(wt) << " conv1d at " << i;
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
        void transpose(mb::bptr<const float>, int64_t, int64_t, mb::bptr<float>, int64_t, int64_t) override {}
        void mask_cols(int64_t, int64_t, int64_t, mb::bptr<float>) override {}
        void upsample2(mb::bptr<const float>, int64_t, int64_t, mb::bptr<float>) override {}
        void embed_heads(mb::bptr<const float>, int64_t, int64_t, int64_t, mb::bptr<const int32_t>, int64_t,
                         mb::bptr<float>) override {}
        void replace_frames(mb::bptr<const float>, mb::bptr<const uint8_t>, int64_t, int64_t, int64_t,
                            mb::bptr<float>, int64_t) override {}
        void scatter_rows(mb::bptr<const float>, mb::bptr<const int32_t>, int64_t, int64_t,
                          mb::bptr<float>) override {}
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
    // unset: the best level (avx512-bf16 where AMX is missing or refused); NEON on ARM64
    unsetenv("MB_CPU_ISA");
    const gemm_isa def = mb::cpu::gemm_isa_from_env();
    EXPECT_TRUE(mb::cpu::gemm_isa_supported(def));
#if defined(__aarch64__)
    EXPECT_EQ(def, gemm_isa::GEMM_ISA_NEON);
#else
    EXPECT_NE(def, gemm_isa::GEMM_ISA_NEON);
#endif
    if (mb::cpu::gemm_isa_supported(gemm_isa::GEMM_ISA_AMX)) {
        EXPECT_EQ(def, gemm_isa::GEMM_ISA_AMX);
    } else if (mb::cpu::gemm_isa_supported(gemm_isa::GEMM_ISA_AVX512_BF16)) {
        EXPECT_EQ(def, gemm_isa::GEMM_ISA_AVX512_BF16);
    } else if (mb::cpu::gemm_isa_supported(gemm_isa::GEMM_ISA_AVX512_VNNI)) {
        EXPECT_EQ(def, gemm_isa::GEMM_ISA_AVX512_VNNI);
    }
    if (old) setenv("MB_CPU_ISA", saved.c_str(), 1);
    else unsetenv("MB_CPU_ISA");
}

} // namespace
