// the CUDA backend's ops against the CPU backend at the networks' sizes (run through
// cuda-run, which skips without a GPU): linear on every kernel path (skinny row tiles,
// scalar loads, cuBLAS), LayerNorm, attention with masked keys, dilated conv1d; outputs
// are poisoned with NaN first so an unwritten element fails
#include "backend/backend-select.h"
#include "backend/cuda/cuda-kernels.h"
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

// ---- device kernels of the memory-owning interface's element, layout and sampling ops,
// each against a host loop of backend.h's definition (exact: they only move or select values,
// or run the host's float arithmetic in the host's order)

namespace {

template <class T> struct dev_vec {
    T *    p = nullptr;
    size_t n = 0;
    explicit dev_vec(const std::vector<T> & h) : n(h.size()) {
        EXPECT_EQ(cudaMalloc(&p, std::max<size_t>(n, 1) * sizeof(T)), cudaSuccess);
        EXPECT_EQ(cudaMemcpy(p, h.data(), n * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
    }
    ~dev_vec() { cudaFree(p); }
    std::vector<T> get() const {
        std::vector<T> h(n);
        EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
        EXPECT_EQ(cudaMemcpy(h.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
        return h;
    }
};

struct device_kernels : ::testing::Test {
    void SetUp() override {
        if (const std::string p = mb::backend_cuda_problem(0); !p.empty()) GTEST_SKIP() << "skipped: " << p;
        cudaSetDevice(0);
    }
    cudaStream_t s = nullptr;     // the default stream
};

TEST_F(device_kernels, elementwise_and_layout) {
    namespace k = mb::cuda;
    const int64_t n = 37, d = 19;
    auto a = random_vec(n * d, 1), b = random_vec(n * d, 2);
    a[5] = std::numeric_limits<float>::quiet_NaN();
    {   // add, relu, leaky_relu, fill
        dev_vec<float> da(a), db(b), y(poisoned(n * d));
        k::add(da.p, db.p, n * d, y.p, s);
        auto h = y.get();
        for (int64_t i = 0; i < n * d; ++i) {
            if (i == 5) {
                ASSERT_TRUE(std::isnan(h[i]));
            } else {
                ASSERT_EQ(h[i], a[i] + b[i]);
            }
        }
        k::relu(da.p, n * d, y.p, s);
        h = y.get();
        for (int64_t i = 0; i < n * d; ++i) {
            if (i == 5) {
                ASSERT_TRUE(std::isnan(h[i]));
            } else {
                ASSERT_EQ(h[i], a[i] < 0 ? 0.0f : a[i]);
            }
        }
        k::leaky_relu(da.p, n * d, 0.01f, y.p, s);
        h = y.get();
        for (int64_t i = 0; i < n * d; ++i) {
            if (i != 5) {
                ASSERT_EQ(h[i], a[i] < 0 ? a[i] * 0.01f : a[i]);
            }
        }
        k::fill_f32(n * d, 2.5f, y.p, s);
        for (float v : y.get()) ASSERT_EQ(v, 2.5f);
        dev_vec<int32_t> yi(std::vector<int32_t>(9, 0));
        k::fill_i32(9, -3, yi.p, s);
        for (int32_t v : yi.get()) ASSERT_EQ(v, -3);
    }
    a[5] = 0.25f;   // NaN compares unequal: the moves below are checked with finite values
    {   // copy_rows with a row broadcast and strides, where_rows
        dev_vec<float> da(a), db(b), y(poisoned(n * 2 * d));
        k::copy_rows(da.p + 3, 0, n, d, y.p, 2 * d, s);
        auto h = y.get();
        for (int64_t i = 0; i < n; ++i) for (int64_t j = 0; j < d; ++j) ASSERT_EQ(h[i * 2 * d + j], a[3 + j]);
        std::vector<uint8_t> sel((size_t) n);
        for (int64_t i = 0; i < n; ++i) sel[(size_t) i] = (uint8_t) (i % 3 == 0);
        dev_vec<uint8_t> dsel(sel);
        k::where_rows(dsel.p, da.p, d, db.p, 0, n, d, y.p, 2 * d, s);
        h = y.get();
        for (int64_t i = 0; i < n; ++i)
            for (int64_t j = 0; j < d; ++j)
                ASSERT_EQ(h[i * 2 * d + j], sel[(size_t) i] ? a[i * d + j] : b[j]);
    }
    {   // mask_cols, upsample2, transpose
        dev_vec<float> dx(b), y(poisoned(n * d * 2));
        k::mask_cols(n, d, 7, dx.p, s);
        auto h = dx.get();
        for (int64_t i = 0; i < n; ++i) for (int64_t j = 0; j < d; ++j) ASSERT_EQ(h[i * d + j], j < 7 ? b[i * d + j] : 0.0f);
        k::upsample2(dx.p, n, d, y.p, s);
        auto u = y.get();
        for (int64_t i = 0; i < n; ++i)
            for (int64_t j = 0; j < 2 * d; ++j) ASSERT_EQ(u[i * 2 * d + j], h[i * d + j / 2]);
        k::transpose(dx.p, n, d, y.p, s);
        u = y.get();
        for (int64_t i = 0; i < n; ++i) for (int64_t j = 0; j < d; ++j) ASSERT_EQ(u[j * n + i], h[i * d + j]);
    }
    {   // embed_heads (8 heads of 11 rows), replace_frames (4 frames per position, 5 channels)
        const int64_t H = 8, rows = 11, dd = 32, m = 10 * H;
        auto table = random_vec(H * rows * dd, 3);
        std::vector<int32_t> idx((size_t) m);
        for (int64_t i = 0; i < m; ++i) idx[(size_t) i] = (int32_t) ((i * 7) % rows);
        dev_vec<float> dt(table), y(poisoned(m * dd));
        dev_vec<int32_t> di(idx);
        k::embed_heads(dt.p, H, rows, dd, di.p, m, y.p, s);
        auto h = y.get();
        for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < dd; ++j) ASSERT_EQ(h[i * dd + j], table[((i % H) * rows + idx[(size_t) i]) * dd + j]);
        const int64_t t = 6, f = 4, w = 5;
        auto hid = random_vec(f * w * t, 4), src = random_vec(t * f * w, 5);
        std::vector<uint8_t> sel((size_t) (t * f));
        for (size_t g = 0; g < sel.size(); ++g) sel[g] = (uint8_t) (g % 5 == 1);
        dev_vec<float> dh(hid), ds(src);
        dev_vec<uint8_t> dsel(sel);
        k::replace_frames(ds.p, dsel.p, t, f, w, dh.p, s);
        auto ref = hid;
        for (int64_t g = 0; g < t * f; ++g)
            if (sel[(size_t) g])
                for (int64_t c = 0; c < w; ++c) ref[((g % f) * w + c) * t + g / f] = src[g * w + c];
        EXPECT_EQ(dh.get(), ref);
    }
}

TEST_F(device_kernels, conv1d_implicit_im2col_matches_cpu) {
    auto cpu = mb::backend_create(mb::backend_device::BACKEND_DEVICE_CPU, 1, 0);
    struct shape { int64_t c_in, t, c_out, k, dil; };
    for (const shape & sh : {shape{512, 16, 512, 3, 9}, shape{512, 64, 413, 3, 1}, shape{256, 40, 512, 1, 1},
                             shape{5, 13, 7, 3, 2}}) {
        auto x = random_vec(sh.c_in * sh.t, 6), w = random_vec(sh.c_out * sh.c_in * sh.k, 7), b = random_vec(sh.c_out, 8);
        dev_vec<float> dx(x), dw(w), db(b), y(poisoned(sh.c_out * sh.t));
        mb::cuda::conv1d_skinny(dx.p, sh.c_in, sh.t, dw.p, db.p, sh.c_out, sh.k, sh.dil, y.p, s);
        auto ref = poisoned(sh.c_out * sh.t);
        cpu->conv1d(x.data(), sh.c_in, sh.t, w.data(), b.data(), sh.c_out, sh.k, sh.dil, ref.data());
        EXPECT_LT(rel_err(y.get(), ref), 2e-6) << sh.c_in << "→" << sh.c_out << " t " << sh.t;
    }
}

TEST_F(device_kernels, sampling_matches_the_host_exactly) {
    // 16 tokens × 8 heads × 10 codes, logits with ties and a NaN row; uniforms from SplitMix64
    const int64_t m = 128, C = 10;
    auto lg = random_vec(m * C, 9);
    for (int64_t c = 0; c < C; ++c) lg[(size_t) (3 * C + c)] = 0.5f;     // all tied: token 0
    lg[(size_t) (4 * C + 2)] = std::numeric_limits<float>::quiet_NaN();
    std::vector<float> u((size_t) (m * C));
    mb::uniforms_generate(42, u.data(), u.size());
    u[7] = 0.0f;
    dev_vec<float> dl(lg), du(u), prob(poisoned(m));
    dev_vec<int32_t> tok(std::vector<int32_t>((size_t) m, -1));
    for (bool gumbel : {false, true}) {
        mb::cuda::sample_codes(dl.p, m, C, gumbel ? du.p : nullptr, tok.p, prob.p, s);
        auto t = tok.get();
        auto p = prob.get();
        for (int64_t r = 0; r < m; ++r) {
            const float * l = lg.data() + r * C;
            const int32_t want = gumbel ? mb::gumbel_argmax(l, u.data() + r * C, C) : mb::argmax_first(l, C);
            ASSERT_EQ(t[(size_t) r], want) << "row " << r << " gumbel " << gumbel;
            float mx = l[0];
            for (int64_t c = 1; c < C; ++c) mx = std::max(mx, l[c]);
            float sum = 0.0f;
            for (int64_t c = 0; c < C; ++c) sum += std::exp(l[c] - mx);
            const float pw = std::exp(l[want] - mx) * (1.0f / sum);
            if (r != 4) {
                ASSERT_EQ(p[(size_t) r], pw) << "row " << r;
            }
        }
    }
    // re-masking: ties go to the lower index, NaN sorts last
    std::vector<float> pr = {0.3f, 0.1f, 0.3f, std::numeric_limits<float>::quiet_NaN(), 0.1f, 0.9f, 0.2f};
    dev_vec<float> dp(pr);
    for (int64_t n_mask : {1, 3, 4, 6, 7, 9}) {
        dev_vec<int32_t> tk(std::vector<int32_t>(pr.size(), 5));
        mb::cuda::remask_lowest(dp.p, (int64_t) pr.size(), n_mask, 10, tk.p, s);
        const int order[7] = {1, 4, 6, 0, 2, 5, 3};
        std::vector<int32_t> want(pr.size(), 5);
        for (int64_t i = 0; i < std::min<int64_t>(n_mask, 7); ++i) want[(size_t) order[i]] = 10;
        EXPECT_EQ(tk.get(), want) << "n_mask " << n_mask;
    }
}

} // namespace
