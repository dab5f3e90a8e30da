// the CPU backend's own matrix kernel (AVX2/FMA, column-split threads) against a
// double-precision reference and against the OpenBLAS variant, over the row counts,
// widths and tails the networks use
#include "backend/cpu/cpu-backend.h"
#include "backend/cpu/cpu-gemm.h"
#include "backend/cpu/fp-mode.h"
#include "backend/cpu/thread-pool.h"
#include "backend/cpu/weight-rows.h"
#include "backend-test-util.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include <algorithm>
#include <cmath>
#include <functional>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

using mb::test::host;
using mb::test::random_vec;

// max |y − ref| / sqrt(k): float32 dot products of k unit normals err by about sqrt(k)·eps
double scaled_err(const std::vector<float> & y, const std::vector<double> & ref, int64_t k) {
    return mb::test::max_abs_diff(y, ref) / std::sqrt((double) k);
}

TEST(cpu_kernels, gemm_nt_shapes_and_tails) {
    for (auto isa : {mb::cpu::gemm_isa::GEMM_ISA_SCALAR, mb::cpu::gemm_isa::GEMM_ISA_AVX2,
                     mb::cpu::gemm_isa::GEMM_ISA_AVX512, mb::cpu::gemm_isa::GEMM_ISA_NEON}) {
    if (!mb::cpu::gemm_isa_supported(isa)) {
        std::printf("instruction set %u not supported here, not tested\n", (unsigned) isa);
        continue;
    }
    for (int64_t m : {1, 2, 3, 4, 5, 6, 7, 16, 25, 64}) {
        for (int64_t k : {1, 5, 8, 13, 17, 64, 304, 1027}) {
            for (int64_t n_out : {1, 3, 4, 5, 17, 80}) {
                auto x = random_vec(m * k, 1), w = random_vec(n_out * k, 2), b = random_vec(n_out, 3);
                std::vector<float>  y(m * n_out, NAN);
                std::vector<double> ref(m * n_out);
                for (int64_t i = 0; i < m; ++i)
                    for (int64_t o = 0; o < n_out; ++o) {
                        double acc = b[o];
                        for (int64_t c = 0; c < k; ++c) acc += (double) x[i * k + c] * w[o * k + c];
                        ref[i * n_out + o] = acc;
                    }
                mb::cpu::gemm_nt(x.data(), m, k, k, w.data(), b.data(), 0, n_out, y.data(), n_out, isa);
                ASSERT_LT(scaled_err(y, ref, k), 1e-5)
                    << "isa " << (unsigned) isa << " m " << m << " k " << k << " n_out " << n_out;
            }
        }
    }
    }
}

// the default kernel is the vector one this CPU has: NEON on every ARM64, an AVX level on x86-64
TEST(cpu_kernels, default_isa_is_the_cpus_vector_kernel) {
    const auto isa = mb::cpu::gemm_isa_default();
#if defined(__aarch64__)
    EXPECT_EQ(isa, mb::cpu::gemm_isa::GEMM_ISA_NEON);
#elif defined(__x86_64__)
    if (!mb::cpu::gemm_has_avx2()) GTEST_SKIP() << "this x86-64 CPU has no AVX2 + FMA";
    EXPECT_TRUE(isa != mb::cpu::gemm_isa::GEMM_ISA_SCALAR && isa != mb::cpu::gemm_isa::GEMM_ISA_NEON);
#else
    GTEST_SKIP() << "no vector kernel for this architecture";
#endif
    EXPECT_FALSE(mb::cpu::gemm_isa_supported(mb::cpu::gemm_isa::GEMM_ISA_NEON) &&
                 mb::cpu::gemm_isa_supported(mb::cpu::gemm_isa::GEMM_ISA_AVX2));
}

// a sub-range of columns, x with a row stride larger than k, no bias, on every instruction set
TEST(cpu_kernels, gemm_nt_column_range_and_strides) {
    const int64_t m = 5, k = 37, ldx = 40, n_out = 23, ldy = 30, o0 = 6, o1 = 19;
    auto x = random_vec(m * ldx, 4), w = random_vec(n_out * k, 5);
    for (auto isa : {mb::cpu::gemm_isa::GEMM_ISA_SCALAR, mb::cpu::gemm_isa::GEMM_ISA_AVX2,
                     mb::cpu::gemm_isa::GEMM_ISA_AVX512, mb::cpu::gemm_isa::GEMM_ISA_NEON}) {
        if (!mb::cpu::gemm_isa_supported(isa)) continue;
        std::vector<float> y(m * ldy, -7.0f);
        mb::cpu::gemm_nt(x.data(), m, ldx, k, w.data(), nullptr, o0, o1, y.data(), ldy, isa);
        for (int64_t i = 0; i < m; ++i)
            for (int64_t o = 0; o < ldy; ++o) {
                if (o < o0 || o >= o1) {
                    ASSERT_EQ(y[i * ldy + o], -7.0f) << "isa " << (unsigned) isa << " wrote outside the range at "
                                                     << i << ", " << o;
                    continue;
                }
                double acc = 0.0;
                for (int64_t c = 0; c < k; ++c) acc += (double) x[i * ldx + c] * w[o * k + c];
                ASSERT_NEAR(y[i * ldy + o], acc, 1e-4) << "isa " << (unsigned) isa;
            }
    }
}

// the AVX-512 level sums each output in one documented order (cpu-gemm-avx512.h) whatever its
// blocking: lane c % 16 of the products by FMA in c order, the lanes pairwise (l + 8, + 4, + 2,
// + 1), then + b. Emulated here in scalar code for every weight type, with the weights 32 bytes
// off a cache line (as in GGUF files) and shapes that take the chunked, widened path (16+ rows,
// k past one 512-column chunk, k % 16 tails, x rows off a cache line)
TEST(cpu_kernels, avx512_sums_in_its_documented_order) {
    using mb::weight_type;
    if (!mb::cpu::gemm_isa_supported(mb::cpu::gemm_isa::GEMM_ISA_AVX512)) GTEST_SKIP() << "this CPU has no AVX-512";
    for (weight_type wt : {weight_type::WEIGHT_F32, weight_type::WEIGHT_BF16, weight_type::WEIGHT_Q8_0}) {
        for (int64_t m : {1, 5, 16, 23, 64}) {
            for (int64_t k : {13, 512, 527, 544, 1040, 2051}) {
                if (wt == weight_type::WEIGHT_Q8_0 && k % 32 != 0) continue;
                const int64_t n_out = 29, ldx = k + (m % 2);
                const auto x = random_vec(m * ldx, 31), b = random_vec(n_out, 32), wf = random_vec(n_out * k, 33);
                // rows of the type's layout, from 32 bytes into a 64-byte aligned buffer
                const int64_t rb = wt == weight_type::WEIGHT_F32 ? k * 4 : wt == weight_type::WEIGHT_BF16 ? k * 2 : k / 32 * 34;
                std::vector<uint8_t> store(size_t(n_out * rb + 128));
                uint8_t * w = store.data() + (64 - reinterpret_cast<uintptr_t>(store.data()) % 64) + 32;
                std::vector<float> wv(size_t(n_out * k));    // the value each weight stands for
                for (int64_t i = 0; i < n_out * k; ++i) {
                    uint8_t * row = w + (i / k) * rb;
                    const int64_t c = i % k;
                    uint32_t bits;
                    std::memcpy(&bits, &wf[size_t(i)], 4);
                    if (wt == weight_type::WEIGHT_F32) {
                        std::memcpy(row + c * 4, &bits, 4);
                    } else if (wt == weight_type::WEIGHT_BF16) {
                        const uint16_t h = uint16_t(bits >> 16);
                        std::memcpy(row + c * 2, &h, 2);
                        bits = uint32_t(h) << 16;
                    } else {
                        uint8_t * blk = row + (c / 32) * 34;
                        const uint16_t scale = uint16_t(0x2000 + (i / 32) % 4096);    // a normal F16 scale
                        std::memcpy(blk, &scale, 2);
                        const int8_t q = int8_t(int(wf[size_t(i)] * 1000.0f) % 128);
                        blk[2 + c % 32] = uint8_t(q);
                        const float v = mb::cpu::rows::half_to_float(scale) * float(q);
                        std::memcpy(&bits, &v, 4);
                    }
                    std::memcpy(&wv[size_t(i)], &bits, 4);
                }
                std::vector<float> y(m * n_out, NAN);
                mb::cpu::gemm_nt(x.data(), m, ldx, k, w, wt, b.data(), 0, n_out, y.data(), n_out,
                                 mb::cpu::gemm_isa::GEMM_ISA_AVX512);
                for (int64_t i = 0; i < m; ++i)
                    for (int64_t o = 0; o < n_out; ++o) {
                        float lane[16] = {};
                        for (int64_t c = 0; c < k; ++c) lane[c % 16] = std::fma(x[i * ldx + c], wv[o * k + c], lane[c % 16]);
                        for (int l = 0; l < 8; ++l) lane[l] += lane[l + 8];
                        for (int l = 0; l < 4; ++l) lane[l] += lane[l + 4];
                        for (int l = 0; l < 2; ++l) lane[l] += lane[l + 2];
                        const float ref = (lane[0] + lane[1]) + b[o];
                        ASSERT_EQ(std::memcmp(&y[i * n_out + o], &ref, 4), 0)
                            << mb::weight_type_name(wt) << " m " << m << " k " << k << " at " << i << ", " << o << ": "
                            << y[i * n_out + o] << " vs " << ref;
                    }
            }
        }
    }
}

TEST(cpu_kernels, own_matches_openblas_threaded) {
    // network-sized ops, split over 1..3 threads, against the OpenBLAS variant
    if (!mb::cpu_gemm_available(mb::cpu_gemm::CPU_GEMM_OPENBLAS)) GTEST_SKIP() << "this build has no OpenBLAS";
    for (int threads : {1, 2, 3})
    for (auto kind : {mb::cpu_gemm::CPU_GEMM_OWN, mb::cpu_gemm::CPU_GEMM_OWN_AVX2}) {
        auto own  = mb::backend_cpu_create_with(threads, kind);
        auto blas = mb::backend_cpu_create_with(threads, mb::cpu_gemm::CPU_GEMM_OPENBLAS);
        for (int64_t n : {6, 25}) {
            const int64_t n_in = 1024, n_out = 3072 + 5;
            auto x = random_vec(n * n_in, 6), w = random_vec(n_out * n_in, 7), b = random_vec(n_out, 8);
            std::vector<float> y1(n * n_out), y2(n * n_out);
            // CPU backends address host memory directly
            own->linear(host(x), n, n_in, host(w), host(b), n_out, host(y1));
            blas->linear(host(x), n, n_in, host(w), host(b), n_out, host(y2));
            double m = 0.0;
            for (size_t i = 0; i < y1.size(); ++i) m = std::max(m, (double) std::fabs(y1[i] - y2[i]));
            EXPECT_LT(m, 2e-4) << "linear, threads " << threads << " rows " << n;
        }
        for (int64_t dil : {1, 27}) {
            const int64_t c_in = 96, c_out = 77, t = 64;
            auto x = random_vec(c_in * t, 9), w = random_vec(c_out * c_in * 3, 10), b = random_vec(c_out, 11);
            std::vector<float> y1(c_out * t), y2(c_out * t);
            own->conv1d(host(x), c_in, t, host(w), host(b), c_out, 3, dil, host(y1));
            blas->conv1d(host(x), c_in, t, host(w), host(b), c_out, 3, dil, host(y2));
            double m = 0.0;
            for (size_t i = 0; i < y1.size(); ++i) m = std::max(m, (double) std::fabs(y1[i] - y2[i]));
            EXPECT_LT(m, 1e-4) << "conv1d, threads " << threads << " dilation " << dil;
        }
    }
}

TEST(cpu_kernels, thread_pool_runs_every_chunk_once) {
    // more threads than cores, many short jobs back to back: each chunk runs exactly once
    for (int threads : {1, 2, 5}) {
        mb::cpu::thread_pool pool(threads);
        std::vector<int>     hits(300);
        for (int job = 0; job < 3000; ++job) {
            const int n = 1 + job % 300;
            std::fill(hits.begin(), hits.end(), 0);
            const std::function<void(int)> fn = [&](int c) { hits[(size_t) c] += 1; };
            pool.run(n, fn);
            for (int c = 0; c < 300; ++c) ASSERT_EQ(hits[(size_t) c], c < n ? 1 : 0) << "job " << job << " chunk " << c;
        }
    }
}

TEST(cpu_kernels, workers_flush_subnormals) {
    // two chunks that each wait until both have started: one of them runs on the worker
    if (mb::cpu::fp_mode_flush_bits() == 0) GTEST_SKIP() << "no FTZ/DAZ control on this CPU";
    mb::cpu::thread_pool  pool(2);
    std::atomic<int>      started{0};
    std::atomic<int>      flushing{0};
    const std::thread::id caller = std::this_thread::get_id();
    std::atomic<bool>     worker_ran{false};
    const std::function<void(int)> fn = [&](int) {
        if (std::this_thread::get_id() != caller) {
            worker_ran = true;
            if (mb::cpu::fp_mode_flushes()) flushing += 1;
        }
        started += 1;
        while (started.load() < 2) std::this_thread::yield();
    };
    pool.run(2, fn);
    ASSERT_TRUE(worker_ran.load());
    EXPECT_EQ(flushing.load(), 1) << "the worker thread computes without FTZ/DAZ";
}

TEST(cpu_kernels, ops_flush_subnormals_and_restore_the_callers_mode) {
    if (mb::cpu::fp_mode_flush_bits() == 0) GTEST_SKIP() << "no FTZ/DAZ control on this CPU";
    const uint64_t before = mb::cpu::fp_mode_control();
    ASSERT_FALSE(mb::cpu::fp_mode_flushes()) << "the test process starts without FTZ/DAZ";
    volatile float tiny = 1e-39f;   // subnormal; without DAZ 1e-39 + 0 = 1e-39
    ASSERT_NE(tiny + 0.0f, 0.0f);
    for (int threads : {1, 2}) {
        auto be = mb::backend_cpu_create(threads);
        // elementwise on the calling thread: subnormal inputs read as zero
        std::vector<float> a(64, 1e-39f), b(64, 0.0f), y(64, 1.0f);
        be->add(host(a), host(b), 64, host(y));
        for (float v : y) ASSERT_EQ(v, 0.0f) << "add, threads " << threads;
        EXPECT_EQ(mb::cpu::fp_mode_control(), before) << "the caller's mode is restored";
        // a linear large enough to be split over the threads: every column of every thread is 0
        const int64_t n = 8, n_in = 256, n_out = 1024;
        std::vector<float> x((size_t) (n * n_in), 1e-39f), w((size_t) (n_out * n_in), 1.0f);
        std::vector<float> out((size_t) (n * n_out), 1.0f);
        be->linear(host(x), n, n_in, host(w), {}, n_out, host(out));
        for (size_t i = 0; i < out.size(); ++i) ASSERT_EQ(out[i], 0.0f) << "linear output " << i << ", threads " << threads;
        EXPECT_EQ(mb::cpu::fp_mode_control(), before) << "the caller's mode is restored";
    }
}

// MB_CPU_PROFILE=1: the backend prints its ops' calls and time per kind when destroyed; unset, nothing
TEST(cpu_kernels, op_profile_counts_each_kind_when_asked) {
    const int64_t n = 4, n_in = 64, n_out = 64;
    std::vector<float> x((size_t) (n * n_in), 0.5f), w((size_t) (n_out * n_in), 0.25f), y((size_t) (n * n_out));
    const auto run = [&](const char * env) {
        if (env) ::setenv("MB_CPU_PROFILE", env, 1);
        else ::unsetenv("MB_CPU_PROFILE");
        testing::internal::CaptureStderr();
        {
            auto be = mb::backend_cpu_create(2);
            be->linear(host(x), n, n_in, host(w), {}, n_out, host(y));
            be->linear(host(x), n, n_in, host(w), {}, n_out, host(y));
            be->add(host(y), host(y), n * n_out, host(y));
        }
        ::unsetenv("MB_CPU_PROFILE");
        return testing::internal::GetCapturedStderr();
    };
    const std::string on = run("1");
    EXPECT_NE(on.find("{\"cpu_profile\": {\"threads\": 2"), std::string::npos) << on;
    EXPECT_NE(on.find("\"linear_f32\": {\"calls\": 2,"), std::string::npos) << on;
    EXPECT_NE(on.find("\"elementwise\": {\"calls\": 1,"), std::string::npos) << on;
    EXPECT_NE(on.find("\"attention\": {\"calls\": 0,"), std::string::npos) << on;
    EXPECT_EQ(run(nullptr), "");
    EXPECT_EQ(run("0"), "");
}

// MB_CPU_RANGES_PER_THREAD: 1..16 changes only how work is split (same bits), anything else is refused
TEST(cpu_kernels, ranges_per_thread_override_is_validated) {
    const int64_t n = 8, n_in = 256, n_out = 1024;
    std::vector<float> x = random_vec(n * n_in, 1), w = random_vec(n_out * n_in, 2);
    std::vector<float> y1((size_t) (n * n_out)), y2((size_t) (n * n_out));
    mb::backend_cpu_create(3)->linear(host(x), n, n_in, host(w), {}, n_out, host(y1));
    for (const char * bad : {"0", "17", "2x", "-1"}) {
        ::setenv("MB_CPU_RANGES_PER_THREAD", bad, 1);
        EXPECT_THROW(mb::backend_cpu_create(3), std::exception) << bad;
    }
    ::setenv("MB_CPU_RANGES_PER_THREAD", "1", 1);
    mb::backend_cpu_create(3)->linear(host(x), n, n_in, host(w), {}, n_out, host(y2));
    ::unsetenv("MB_CPU_RANGES_PER_THREAD");
    EXPECT_EQ(std::memcmp(y1.data(), y2.data(), y1.size() * sizeof(float)), 0);
}

// every op, sized so that it is split over the threads, gives the same bits at 1, 2, 3 and 5
// threads: each output is computed by the same code whichever thread takes its range
TEST(cpu_kernels, ops_are_bitwise_equal_across_thread_counts) {
    using mb::bptr;
    const int64_t n = 40, d = 512, n_head = 16, lanes = 3, c_in = 96, t = 40, c_out = 130, n_code = 1024;
    const auto qkv = random_vec(lanes * n * 3 * d, 21), x = random_vec(lanes * n * d, 22), r = random_vec(lanes * n * d, 23);
    const auto g = random_vec(d, 24), bb = random_vec(d, 25), cx = random_vec(lanes * c_in * t, 26);
    const auto cw = random_vec(c_out * c_in * 3, 27), cb = random_vec(c_out, 28), logits = random_vec(n * n_code, 29);
    std::vector<float> u(n * n_code);
    for (size_t i = 0; i < u.size(); ++i) u[i] = float((i * 2654435761u) % 1000003u) / 1000003.0f;
    std::vector<uint8_t> mask(lanes * n, 0);
    for (size_t i = 0; i < mask.size(); i += 7) mask[i] = 1;
    std::vector<int32_t> idx(n * lanes);
    for (size_t i = 0; i < idx.size(); ++i) idx[i] = int32_t(i % 5);

    struct out {
        std::vector<float>   att, ln, conv, act, tr, emb, prob;
        std::vector<int32_t> tok, remasked;
    };
    const auto run = [&](int threads) {
        auto be = mb::backend_cpu_create(threads);
        out  o;
        o.att.assign(lanes * n * d, 0.0f);
        be->attention(host(qkv), n, d, n_head, host(mask), host(o.att), lanes);
        o.ln = x;
        be->add_layer_norm(host(o.ln), host(r), lanes * n, d, host(g), host(bb), 1e-5f);
        o.conv.assign(lanes * c_out * t, 0.0f);
        be->conv1d(host(cx), c_in, t, host(cw), host(cb), c_out, 3, 9, host(o.conv), lanes);
        std::vector<float> a1(x.size()), a2(x.size()), a3(x.size());
        be->add(host(x), host(r), (int64_t) x.size(), host(a1));
        be->silu(host(a1), (int64_t) x.size(), host(a2));
        be->leaky_relu(host(a2), (int64_t) x.size(), 0.2f, host(a3));
        be->relu(host(a3), (int64_t) x.size(), host(a1));
        o.act = a1;
        o.tr.assign(x.size(), 0.0f);
        be->transpose(host(x), n, d, host(o.tr), lanes);
        o.emb.assign(n * lanes * d, 0.0f);
        be->embed_heads(host(x), 2, 5, d, host(idx), n * lanes, host(o.emb));
        o.tok.assign(n, 0);
        o.prob.assign(n, 0.0f);
        be->sample_codes(host(logits), n, n_code, host(u), host(o.tok), host(o.prob));
        o.remasked.assign(lanes * n, 3);
        std::vector<float> p(lanes * n);
        for (size_t i = 0; i < p.size(); ++i) p[i] = float((i * 37) % 11) / 11.0f;
        be->remask_lowest(host(p), n, 9, -1, host(o.remasked), lanes);
        return o;
    };
    const out one = run(1);
    for (int threads : {2, 3, 5}) {
        const out o = run(threads);
        const auto same = [](const auto & a, const auto & b) {
            return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(a[0])) == 0;
        };
        EXPECT_TRUE(same(o.att, one.att)) << "attention, threads " << threads;
        EXPECT_TRUE(same(o.ln, one.ln)) << "add_layer_norm, threads " << threads;
        EXPECT_TRUE(same(o.conv, one.conv)) << "conv1d, threads " << threads;
        EXPECT_TRUE(same(o.act, one.act)) << "add/silu/leaky_relu/relu, threads " << threads;
        EXPECT_TRUE(same(o.tr, one.tr)) << "transpose, threads " << threads;
        EXPECT_TRUE(same(o.emb, one.emb)) << "embed_heads, threads " << threads;
        EXPECT_TRUE(same(o.tok, one.tok) && same(o.prob, one.prob)) << "sample_codes, threads " << threads;
        EXPECT_TRUE(same(o.remasked, one.remasked)) << "remask_lowest, threads " << threads;
    }
}

} // namespace
