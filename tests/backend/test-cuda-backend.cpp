// the CUDA backend beyond test-backend-ops (run through cuda-run, which skips without a
// GPU): its kernel paths against the CPU backend at the networks' shapes, sampling bitwise
// against the host, and CPU against CUDA on a full-size bundle (MB_CUDA_FULL_BUNDLE)
#include "backend/backend-select.h"
#include "backend/cuda/cuda-kernels.h"
#include "backend-test-util.h"
#include "varied-requests.h"
#include "format/bundle.h"
#include "format/error.h"
#include "model/sampling.h"
#include "motion/predict.h"
#include "support/reference-small.h"
#include "support/safetensors-source.h"
#include "support/test-paths.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <set>
#include <string_view>
#include <vector>

namespace {

using mb::test::random_vec;

// a backend with host ↔ backend copies; buffers live as long as it
struct device {
    std::unique_ptr<mb::backend>                      be;
    std::vector<std::unique_ptr<mb::backend_buffer>> bufs;

    explicit device(mb::backend_device d) : be(mb::backend_create(d, 1, 0)) {}
    template <class T> mb::bptr<T> in(const std::vector<T> & v) {
        bufs.push_back(be->alloc(v.size() * sizeof(T)));
        mb::bptr<T> p = bufs.back()->as<T>();
        be->set(p, v.data(), (int64_t) v.size());
        return p;
    }
    std::vector<float> get(mb::bptr<float> p, int64_t n) {
        std::vector<float> h((size_t) n);
        be->get(mb::bptr<const float>(p), h.data(), n);
        return h;
    }
};

struct backends : ::testing::Test {
    void SetUp() override {
        const std::string problem = mb::backend_cuda_problem(0);
        if (!problem.empty()) GTEST_SKIP() << "skipped: " << problem;
        gpu = std::make_unique<device>(mb::backend_device::BACKEND_DEVICE_CUDA);
        cpu = std::make_unique<device>(mb::backend_device::BACKEND_DEVICE_CPU);
    }
    std::unique_ptr<device> gpu, cpu;
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

// the GEMV switches of a "+c0" / "+rolled" / "+w4" / "+w2" suffix (cuda-gemv.cu: gemv_rows_kernel for
// K ≤ 2,048, the chunked kernel's loops rolled, 4 or 2 warps a block); any other suffix turns them off
void set_gemv_extra(const std::string & extra) {
    setenv("MB_CUDA_GEMV_CHUNKS", extra == "+c0" ? "0" : "", 1);
    setenv("MB_CUDA_GEMV_ROLLED", extra == "+rolled" ? "1" : "", 1);
    setenv("MB_CUDA_GEMV_WARPS", extra == "+w4" ? "4" : extra == "+w2" ? "2" : "", 1);
}

// every switch of the products' kernels unset: the defaults
void unset_product_switches() {
    for (const char * v : {"MB_CUDA_TILED_TILE", "MB_CUDA_SKINNY_ROWS", "MB_CUDA_GEMV", "MB_CUDA_GEMV_CHUNKS",
                           "MB_CUDA_GEMV_ROLLED", "MB_CUDA_GEMV_WARPS", "MB_CUDA_GEMV_CONV", "MB_CUDA_GEMV_CONV_ROWS"}) {
        unsetenv(v);
    }
}

// run_recorded_concurrent: a recording launched beside the ops after it gives what it gives in
// place, and a chain that reads its own output on the second stream stays in order; get() joins it
// (first call records in place, later ones run beside a product on the main stream)
TEST_F(backends, concurrent_recording) {
    device &      d = *gpu;
    const int64_t n = 10, k = 512, m = 384;
    const auto    xh = random_vec(n * k, 71), wh = random_vec(m * k, 72), bh = random_vec(m, 73);
    const auto    w2 = random_vec(k * m, 74), b2 = random_vec(k, 75);
    auto x = d.in(xh), w = d.in(wh), b = d.in(bh), wb = d.in(w2), bb = d.in(b2);
    auto y1 = d.in(poisoned(n * m)), z1 = d.in(poisoned(n * k)), y2 = d.in(poisoned(n * m));
    std::vector<float> ref_y, ref_z;
    {
        device & c = *cpu;
        auto cx = c.in(xh), cw = c.in(wh), cb = c.in(bh), cw2 = c.in(w2), cb2 = c.in(b2);
        auto cy = c.in(poisoned(n * m)), cz = c.in(poisoned(n * k));
        c.be->linear(cx, n, k, cw, cb, m, cy);
        c.be->linear(cy, n, m, cw2, cb2, k, cz);
        ref_y = c.get(cy, n * m);
        ref_z = c.get(cz, n * k);
    }
    for (int call = 0; call < 4; ++call) {
        d.be->fill_f32(n * k, std::nanf(""), z1);
        d.be->run_recorded_concurrent(77, [&] {
            d.be->linear(x, n, k, w, b, m, y1);
            d.be->linear(y1, n, m, wb, bb, k, z1);
        });
        d.be->run_recorded(78, [&] { d.be->linear(x, n, k, w, b, m, y2); });
        EXPECT_LT(rel_err(d.get(z1, n * k), ref_z), 1e-5) << "call " << call;
        EXPECT_LT(rel_err(d.get(y2, n * m), ref_y), 1e-5) << "call " << call;
    }
}

// branch(): chains on branches (one with a branch inside it, which runs in place, and one whose
// conv uses the shared im2col scratch, so it is joined at once) beside a product on the main
// stream, recorded on the first call and replayed after, give what the CPU gives
TEST_F(backends, branches) {
    const int64_t n = 10, k = 512, m = 384, c = 64, t = 300;
    const auto    xh = random_vec(n * k, 81), wh = random_vec(m * k, 82), bh = random_vec(m, 83);
    const auto    w2 = random_vec(k * m, 84), b2 = random_vec(k, 85);
    const auto    ch = random_vec(c * t, 86), cw = random_vec(c * c * 3, 87), cb = random_vec(c, 88);
    std::vector<float> out[2][4];
    for (int i = 0; i < 2; ++i) {
        device & d = i ? *cpu : *gpu;
        auto x = d.in(xh), w = d.in(wh), b = d.in(bh), wb = d.in(w2), bb = d.in(b2);
        auto cx = d.in(ch), cwt = d.in(cw), cbt = d.in(cb);
        auto y1 = d.in(poisoned(n * m)), z1 = d.in(poisoned(n * k)), y2 = d.in(poisoned(n * m));
        auto cy = d.in(poisoned(c * t)), v = d.in(poisoned(n * m));
        d.be->reserve_conv1d(c, t, c, 3);
        for (int call = 0; call < 3; ++call) {
            d.be->fill_f32(n * k, std::nanf(""), z1);
            d.be->run_recorded(79, [&] {
                const int chain = d.be->branch([&] {
                    d.be->linear(x, n, k, w, b, m, y1);
                    const int inner = d.be->branch([&] { d.be->linear(y1, n, m, wb, bb, k, z1); });
                    d.be->join_branch(inner);
                });
                const int conv = d.be->branch([&] { d.be->conv1d(cx, c, t, cwt, cbt, c, 3, 1, cy); });
                d.be->linear(x, n, k, w, b, m, y2);
                d.be->join_branch(chain);
                d.be->add(y1, y2, n * m, v, n * m);
                d.be->join_branch(conv);
            });
            if (call == 0) continue;
            out[i][0] = d.get(z1, n * k), out[i][1] = d.get(y2, n * m), out[i][2] = d.get(cy, c * t);
            out[i][3] = d.get(v, n * m);
            if (i == 0) continue;
            for (int j = 0; j < 4; ++j) EXPECT_LT(rel_err(out[0][j], out[1][j]), 1e-5) << "output " << j << " call " << call;
        }
    }
}

// the kernel paths at the networks' shapes, beyond test-backend-ops' sizes: every skinny row
// tile, scalar loads (K % 4 != 0), 65 and 200 rows, attention over 200 rows, conv over 100
// and 256 frames; outputs poisoned with NaN first
TEST_F(backends, linear_every_path) {
    EXPECT_STREQ(gpu->be->name(), "cuda");
    struct shape { int64_t n, n_in, n_out; };
    const shape shapes[] = {{1, 1024, 3072}, {3, 1024, 1024}, {5, 2048, 1024}, {8, 512, 2048}, {13, 1024, 160},
                            {16, 1024, 3072}, {25, 512, 1536}, {64, 1536, 512}, {65, 512, 517}, {200, 1024, 3072},
                            {9, 5, 64}, {8, 4, 64}, {64, 303, 160}, {7, 2, 130}, {1, 1024, 12}};
    uint32_t seed = 1;
    for (const shape & s : shapes) {
        auto x = random_vec(s.n * s.n_in, seed++), w = random_vec(s.n_out * s.n_in, seed++), b = random_vec(s.n_out, seed++);
        for (bool bias : {true, false}) {
            std::vector<float> out[2];
            for (int i = 0; i < 2; ++i) {
                device & d = i ? *cpu : *gpu;
                auto     y = d.in(poisoned(s.n * s.n_out));
                d.be->linear(d.in(x), s.n, s.n_in, d.in(w), bias ? d.in(b) : mb::bptr<const float>(), s.n_out, y);
                out[i] = d.get(y, s.n * s.n_out);
            }
            EXPECT_LT(rel_err(out[0], out[1]), 2e-6) << s.n << "x" << s.n_in << " → " << s.n_out << " bias " << bias;
        }
    }
}

// the F32 products follow the order cuda-kernels.h states, bit for bit (the host's std::fmaf
// is correctly rounded like the device's): the GEMV at 1 to 64 rows (K of 2 slices to past 256),
// the tiled kernel at 70, 150 and 200 on the chosen tile and on each tile forced, with and
// without 16-byte loads, K ending mid-slice
TEST_F(backends, f32_sums_follow_the_slice_order) {
    struct shape { int64_t n, n_in, n_out; };
    const shape shapes[] = {{1, 1024, 64}, {7, 303, 50}, {70, 48, 100}, {200, 1030, 130}, {5, 4100, 9},
                            {150, 520, 200}, {10, 3072, 520}, {3, 64, 40}, {64, 1536, 72}, {2, 8200, 24},
                            {12, 1029, 33}, {10, 1024, 3072}, {10, 2048, 1032}, {40, 1536, 130}, {4, 520, 1536},
                            {8, 1000, 2050}, {33, 2048, 100}, {16, 36, 17}, {1, 3000, 70}, {13, 4096, 40}};
    std::vector<std::string> tiles = mb::cuda::tiled_tile_names();
    tiles.insert(tiles.begin(), "");    // the chosen tile, then each one forced
    // then the older GEMV with its 16-row tiles forced (MB_CUDA_SKINNY_ROWS; it takes 8 above 4 rows)
    // and as it is, and the 5–64-row GEMV of cuda-gemv.cu (MB_CUDA_GEMV) by its choice and with
    // each shape forced
    // ("+c0": gemv_rows_kernel where gemv_chunks_kernel is the default, K ≤ 2,048, MB_CUDA_GEMV_CHUNKS=0;
    // "+rolled": gemv_chunks_kernel with its loops rolled, MB_CUDA_GEMV_ROLLED=1; "+w4", "+w2": the
    // chosen shapes with 4 or 2 warps a block, MB_CUDA_GEMV_WARPS; "conv=OxW": the default for linear
    // products, that shape for convs, MB_CUDA_GEMV_CONV)
    for (const char * g : {"rows=16", "gemv=old", "gemv=new", "gemv=1x8", "gemv=2x8", "gemv=2x4", "gemv=4x4",
                           "gemv=4x2", "gemv=1x4", "gemv=2x2", "gemv=1x2", "gemv=new+w4", "gemv=new+w2",
                           "gemv=new+c0", "gemv=1x8+c0", "gemv=2x8+c0", "gemv=4x2+c0", "gemv=new+rolled",
                           "gemv=2x8+rolled", "gemv=4x2+rolled", "conv=2x4", "conv=4x2"}) {
        tiles.emplace_back(g);
    }
    for (const std::string & tile : tiles) {
        const bool gemv = tile == "rows=16" || tile.rfind("gemv=", 0) == 0 || tile.rfind("conv=", 0) == 0;
        const size_t plus = tile.find('+');
        if (tile == "rows=16") setenv("MB_CUDA_SKINNY_ROWS", "16", 1), setenv("MB_CUDA_GEMV", "old", 1);
        else if (gemv) {
            setenv(tile[0] == 'c' ? "MB_CUDA_GEMV_CONV" : "MB_CUDA_GEMV",
                   tile.substr(5, plus == std::string::npos ? std::string::npos : plus - 5).c_str(), 1);
        }
        else if (!tile.empty()) setenv("MB_CUDA_TILED_TILE", tile.c_str(), 1);
        set_gemv_extra(plus == std::string::npos ? "" : tile.substr(plus));
        uint32_t seed = 900;
        for (const shape & s : shapes) {
            if (!tile.empty() && !gemv && s.n <= mb::cuda::k_skinny_max_rows) continue;    // the GEMV: no tile
            if (gemv && s.n > mb::cuda::k_skinny_max_rows) continue;
            auto x = random_vec(s.n * s.n_in, seed++), w = random_vec(s.n_out * s.n_in, seed++), b = random_vec(s.n_out, seed++);
            auto y = gpu->in(poisoned(s.n * s.n_out));
            gpu->be->linear(gpu->in(x), s.n, s.n_in, gpu->in(w), gpu->in(b), s.n_out, y);
            const std::vector<float> got = gpu->get(y, s.n * s.n_out);
            int64_t differ = 0;
            for (int64_t r = 0; r < s.n; ++r) {
                for (int64_t o = 0; o < s.n_out; ++o) {
                    float tot = 0.0f;
                    for (int64_t k0 = 0; k0 < s.n_in; k0 += mb::cuda::k_sum_slice) {
                        float sl = 0.0f;
                        for (int64_t k = k0; k < std::min<int64_t>(k0 + mb::cuda::k_sum_slice, s.n_in); ++k) {
                            sl = std::fmaf(x[(size_t) (r * s.n_in + k)], w[(size_t) (o * s.n_in + k)], sl);
                        }
                        tot = tot + sl;
                    }
                    const float want = tot + b[(size_t) o], have = got[(size_t) (r * s.n_out + o)];
                    differ += std::memcmp(&want, &have, sizeof want) != 0;
                }
            }
            EXPECT_EQ(differ, 0) << s.n << "x" << s.n_in << " → " << s.n_out << " tile '" << tile
                                 << "': outputs not in the slice order";
        }
        // conv1d at batch one (1–64 rows: lanes × frames) is the product of its im2col: the same order
        struct conv { int64_t c_in, t, c_out, k, dil, lanes; };
        for (const conv & c : {conv{512, 40, 64, 3, 3, 1}, conv{512, 10, 70, 3, 27, 2}, conv{512, 6, 40, 3, 1, 3},
                               conv{96, 10, 77, 3, 9, 2}, conv{64, 16, 40, 1, 1, 1},
                               conv{6, 7, 5, 3, 1, 3}}) {
            if (!tile.empty() && !gemv) break;
            const int64_t K = c.c_in * c.k, rows = c.lanes * c.t;
            auto x = random_vec(c.lanes * c.c_in * c.t, seed++), w = random_vec(c.c_out * K, seed++),
                 b = random_vec(c.c_out, seed++);
            auto y = gpu->in(poisoned(c.lanes * c.c_out * c.t));
            gpu->be->conv1d(gpu->in(x), c.c_in, c.t, gpu->in(w), gpu->in(b), c.c_out, c.k, c.dil, y, c.lanes);
            const std::vector<float> got = gpu->get(y, c.lanes * c.c_out * c.t);
            int64_t differ = 0;
            for (int64_t r = 0; r < rows; ++r) {
                const int64_t l = r / c.t, i = r % c.t;
                std::vector<float> col((size_t) K);
                for (int64_t ch = 0; ch < c.c_in; ++ch) {
                    for (int64_t kk = 0; kk < c.k; ++kk) {
                        const int64_t src = i + (kk - (c.k - 1) / 2) * c.dil;
                        col[(size_t) (ch * c.k + kk)] = src >= 0 && src < c.t ? x[(size_t) ((l * c.c_in + ch) * c.t + src)] : 0.0f;
                    }
                }
                for (int64_t o = 0; o < c.c_out; ++o) {
                    float tot = 0.0f;
                    for (int64_t k0 = 0; k0 < K; k0 += mb::cuda::k_sum_slice) {
                        float sl = 0.0f;
                        for (int64_t k = k0; k < std::min<int64_t>(k0 + mb::cuda::k_sum_slice, K); ++k) {
                            sl = std::fmaf(col[(size_t) k], w[(size_t) (o * K + k)], sl);
                        }
                        tot = tot + sl;
                    }
                    const float want = tot + b[(size_t) o], have = got[(size_t) ((l * c.c_out + o) * c.t + i)];
                    differ += std::memcmp(&want, &have, sizeof want) != 0;
                }
            }
            EXPECT_EQ(differ, 0) << "conv " << c.c_in << "→" << c.c_out << " t " << c.t << " k " << c.k << " lanes "
                                 << c.lanes << " '" << tile << "': outputs not in the slice order";
        }
        unset_product_switches();
    }
}

// the convs' epilogues on the GEMV of cuda-gemv.cu (MB_CUDA_GEMV_CONV=OxW: the residual add, the
// next conv's im2col of relu(y), the activation) give the bits of the skinny kernel, which runs them
// by default: both sum in the one slice order and share the epilogue's arithmetic. The decoders'
// batch-one residual blocks (10 frames, dilations 27 … 1; 40 frames: chained, each product writing
// the next one's im2col; two lanes of 20 with positions past n_valid: the separate ops) and chain of
// convs (40 frames, 512 → 512 → 512 → 5), on every shape, and on gemv_rows_kernel (MB_CUDA_GEMV_CHUNKS=0)
TEST_F(backends, conv_epilogues_on_the_gemv_give_the_skinny_kernels_bits) {
    using mb::bptr;
    using mb::bweight;
    device & d = *gpu;
    struct res_shape { int64_t c, t, n_valid, lanes; std::vector<int64_t> dil; };
    const res_shape rs[] = {{512, 10, 10, 1, {27, 9, 3, 1}}, {512, 40, 40, 1, {3, 1}}, {512, 20, 17, 2, {9, 1}}};
    uint32_t seed = 500;
    std::vector<std::vector<mb::backend::res_block>> blocks;
    std::vector<std::vector<float>> h0;
    for (const res_shape & sh : rs) {
        blocks.emplace_back();
        for (int64_t dil : sh.dil) {
            blocks.back().push_back({bweight(bptr<const float>(d.in(random_vec(sh.c * sh.c * 3, seed++)))),
                                     d.in(random_vec(sh.c, seed++)), 3, dil,
                                     bweight(bptr<const float>(d.in(random_vec(sh.c * sh.c, seed++)))),
                                     d.in(random_vec(sh.c, seed++)), 1});
        }
        h0.push_back(random_vec(sh.lanes * sh.c * sh.t, seed++));
    }
    const int64_t ch[] = {512, 512, 512, 5}, t = 40, n_valid = 40;
    std::vector<bptr<const float>> cw, cb;
    for (int i = 0; i < 3; ++i) {
        cw.push_back(d.in(random_vec(ch[i + 1] * ch[i] * 3, seed++)));
        cb.push_back(d.in(random_vec(ch[i + 1], seed++)));
    }
    const std::vector<float> x0 = random_vec(ch[0] * t, seed++);

    auto run = [&] {
        std::vector<float> out;
        for (size_t i = 0; i < std::size(rs); ++i) {
            const res_shape & sh = rs[i];
            const int64_t     n  = sh.lanes * sh.c * sh.t;
            auto h = d.in(h0[i]), t0 = d.in(poisoned((size_t) n)), t1 = d.in(poisoned((size_t) n));
            d.be->res_blocks(h, t0, t1, sh.c, sh.t, sh.n_valid, blocks[i].data(), (int64_t) blocks[i].size(), sh.lanes);
            const std::vector<float> got = d.get(h, n);
            out.insert(out.end(), got.begin(), got.end());
        }
        auto x = d.in(x0);
        std::vector<mb::backend::conv_step> steps;
        std::vector<bptr<float>>            ys;
        for (int i = 0; i < 3; ++i) {
            ys.push_back(d.in(poisoned((size_t) (ch[i + 1] * t))));
            steps.push_back({bweight(cw[(size_t) i]), cb[(size_t) i], ch[i], ch[i + 1], 3, i == 0 ? 3 : 1, i == 1, ys.back()});
        }
        d.be->conv_chain(x, t, n_valid, steps.data(), (int64_t) steps.size(), 1);
        for (int i = 0; i < 3; ++i) {
            const std::vector<float> got = d.get(ys[(size_t) i], ch[i + 1] * t);
            out.insert(out.end(), got.begin(), got.end());
        }
        return out;
    };
    unset_product_switches();
    const int64_t            before = mb::cuda::gemv_rows_launches();
    const std::vector<float> want   = run();
    EXPECT_EQ(mb::cuda::gemv_rows_launches(), before) << "by default the convs run the skinny kernel";
    // "+c0": on gemv_rows_kernel; "/16": convs of at most 16 rows only (MB_CUDA_GEMV_CONV_ROWS)
    for (const char * shape : {"1x8", "2x8", "1x4", "2x4", "4x4", "4x2", "1x2", "2x2", "2x8+c0", "4x2+c0", "4x2/16"}) {
        const std::string s = shape;
        setenv("MB_CUDA_GEMV_CONV", s.substr(0, 3).c_str(), 1);
        if (s.size() > 3 && s[3] == '+') set_gemv_extra(s.substr(3));
        if (s.size() > 3 && s[3] == '/') setenv("MB_CUDA_GEMV_CONV_ROWS", s.c_str() + 4, 1);
        const int64_t            at  = mb::cuda::gemv_rows_launches();
        const std::vector<float> got = run();
        EXPECT_GT(mb::cuda::gemv_rows_launches(), at) << shape << ": the convs did not reach the GEMV";
        ASSERT_EQ(got.size(), want.size());
        int64_t differ = 0;
        for (size_t i = 0; i < got.size(); ++i) differ += std::memcmp(&got[i], &want[i], sizeof(float)) != 0;
        EXPECT_EQ(differ, 0) << shape << ": " << differ << " of " << got.size() << " outputs differ from the skinny kernel's";
        unset_product_switches();
    }
}

// F32 products of many rows (the tiled kernel) sum every output in the GEMV's order:
// row r of an n-row product has the bits of row r multiplied alone, and a lane of a batched
// conv1d the bits of that lane alone (so fused batch lanes equal requests run alone)
TEST_F(backends, f32_sums_do_not_depend_on_the_row_count) {
    struct shape { int64_t n, n_in, n_out; };
    // the chosen tiles (64 × 128; 64 × 64 for 64 and 160 outputs; f32_sums_follow_the_slice_order
    // forces each), with and without 16-byte loads; K shorter than a slice, ending mid-slice, at
    // half a slice, and past 4 segments
    const shape shapes[] = {{65, 1024, 517}, {130, 3072, 1024}, {300, 512, 64}, {97, 303, 160},
                            {256, 2048, 96}, {1100, 1024, 1024}, {1090, 303, 1030}, {2100, 256, 1100},
                            {70, 48, 100}, {200, 20, 33}, {129, 4100, 130}, {600, 1030, 300}};
    uint32_t seed = 500;
    for (const shape & s : shapes) {
        auto x = random_vec(s.n * s.n_in, seed++), w = random_vec(s.n_out * s.n_in, seed++), b = random_vec(s.n_out, seed++);
        const auto wd = gpu->in(w), bd = gpu->in(b);
        auto       y  = gpu->in(poisoned(s.n * s.n_out));
        gpu->be->linear(gpu->in(x), s.n, s.n_in, wd, bd, s.n_out, y);
        const std::vector<float> all = gpu->get(y, s.n * s.n_out);
        int64_t differ = 0;
        double  worst  = 0.0;
        for (int64_t r = 0; r < s.n; ++r) {
            if (s.n > 300 && r % 13 != 0 && r < s.n - 3) continue;     // a sample of the largest
            const std::vector<float> xr(x.begin() + r * s.n_in, x.begin() + (r + 1) * s.n_in);
            auto yr = gpu->in(poisoned(s.n_out));
            gpu->be->linear(gpu->in(xr), 1, s.n_in, wd, bd, s.n_out, yr);
            const std::vector<float> one = gpu->get(yr, s.n_out);
            for (int64_t o = 0; o < s.n_out; ++o) {
                const float a = all[(size_t) (r * s.n_out + o)], c = one[(size_t) o];
                if (std::memcmp(&a, &c, sizeof a) != 0) {
                    ++differ;
                    worst = std::max(worst, std::isfinite(a) ? (double) std::fabs(a - c) : INFINITY);
                }
            }
        }
        EXPECT_EQ(differ, 0) << s.n << "x" << s.n_in << " → " << s.n_out << ": outputs differing from the row alone, max "
                             << worst;
    }
    // conv lanes: 3 (the skinny kernel on the explicit im2col), then 12 and 9 with scratch
    // reserved for 5 lanes (one product per chunk of 5 lanes on the tiled kernel: conv1d_gemm)
    struct conv { int64_t c_in, t, c_out, k, dil, lanes, reserve; };
    for (const conv & c : {conv{512, 64, 413, 3, 1, 3, 0}, conv{512, 64, 413, 3, 1, 12, 5}, conv{512, 40, 512, 3, 9, 9, 5}}) {
        device g(mb::backend_device::BACKEND_DEVICE_CUDA);
        if (c.reserve) g.be->reserve_conv1d(c.c_in, c.reserve * c.t, c.c_out, c.k);
        auto x = random_vec(c.lanes * c.c_in * c.t, 600), w = random_vec(c.c_out * c.c_in * c.k, 601),
             b = random_vec(c.c_out, 602);
        const auto wd = g.in(w), bd = g.in(b);
        auto       y  = g.in(poisoned(c.lanes * c.c_out * c.t));
        g.be->conv1d(g.in(x), c.c_in, c.t, wd, bd, c.c_out, c.k, c.dil, y, c.lanes);
        const std::vector<float> all = g.get(y, c.lanes * c.c_out * c.t);
        for (int64_t l = 0; l < c.lanes; ++l) {
            const std::vector<float> xl(x.begin() + l * c.c_in * c.t, x.begin() + (l + 1) * c.c_in * c.t);
            auto yl = g.in(poisoned(c.c_out * c.t));
            g.be->conv1d(g.in(xl), c.c_in, c.t, wd, bd, c.c_out, c.k, c.dil, yl);
            const std::vector<float> one = g.get(yl, c.c_out * c.t);
            EXPECT_EQ(std::memcmp(all.data() + l * c.c_out * c.t, one.data(), one.size() * sizeof(float)), 0)
                << "conv lane " << l << " of " << c.lanes << ": max diff "
                << rel_err(std::vector<float>(all.begin() + l * c.c_out * c.t, all.begin() + (l + 1) * c.c_out * c.t), one);
        }
    }
}

// MB_CUDA_SPEED=1 (a timing, not a check; skipped otherwise): F32 products of many rows at the
// networks' widths on the tiled kernel, each thread tile, and on cuBLAS (MB_CUDA_F32_CUBLAS)
TEST(cuda_speed, f32_products_of_many_rows) {
    if (!std::getenv("MB_CUDA_SPEED")) GTEST_SKIP() << "a timing: set MB_CUDA_SPEED=1";
    const std::string problem = mb::backend_cuda_problem(0);
    if (!problem.empty()) GTEST_SKIP() << "skipped: " << problem;
    struct shape { int64_t n, n_in, n_out; };
    const shape shapes[] = {{16384, 1024, 1024}, {16384, 1024, 3072}, {16384, 1024, 4096}, {16384, 4096, 1024},
                            {16384, 1536, 512},  {2560, 1024, 1024},  {2560, 1024, 3072},  {2560, 512, 160},
                            {10240, 1536, 512}};
    // MB_CUDA_SPEED_TILES="a b …": those tiles only (names of MB_CUDA_TILED_TILE, auto, cublas)
    std::vector<std::string> hows = mb::cuda::tiled_tile_names();
    hows.insert(hows.begin(), "");
    if (const char * only = std::getenv("MB_CUDA_SPEED_TILES")) {
        hows.clear();
        for (const char * p = only; *p;) {
            const char * e = std::strchr(p, ' ') ? std::strchr(p, ' ') : p + std::strlen(p);
            if (e > p) hows.emplace_back(std::string(p, e) == "auto" ? std::string() : std::string(p, e));
            p = *e ? e + 1 : e;
        }
    }
    hows.emplace_back("cublas");
    for (const std::string & h : hows) {
        const char * how = h.c_str();
        if (h == "cublas") setenv("MB_CUDA_F32_CUBLAS", "1", 1);
        if (*how && h != "cublas") setenv("MB_CUDA_TILED_TILE", how, 1);
        device d(mb::backend_device::BACKEND_DEVICE_CUDA);
        for (const shape & s : shapes) {
            auto x = d.in(random_vec(s.n * s.n_in, 1)), w = d.in(random_vec(s.n_out * s.n_in, 2)), b = d.in(random_vec(s.n_out, 3));
            auto y = d.in(std::vector<float>((size_t) (s.n * s.n_out)));
            for (int i = 0; i < 2; ++i) d.be->linear(x, s.n, s.n_in, w, b, s.n_out, y);
            d.be->synchronize();
            const int  reps = 10;
            const auto t0   = std::chrono::steady_clock::now();
            for (int i = 0; i < reps; ++i) d.be->linear(x, s.n, s.n_in, w, b, s.n_out, y);
            d.be->synchronize();
            const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / reps;
            std::printf("speed %-6s %6ldx%-5ld -> %-5ld %8.3f ms %6.1f TFLOP/s\n", *how ? how : "auto", (long) s.n,
                        (long) s.n_in, (long) s.n_out, ms, 2.0 * s.n * s.n_in * s.n_out / ms / 1e9);
        }
        unsetenv("MB_CUDA_TILED_TILE");
        unsetenv("MB_CUDA_F32_CUBLAS");
    }
}

// the floor of a chain of products: 32 kernels recorded in one graph that only stream `n` floats of
// rotating weight copies (n = 0: empty kernels, the launch alone), at 1, 2, 4 and 8 blocks a
// multiprocessor; median µs a kernel of 15 replays
void stream_floor_timings(int64_t n_alloc, int64_t n) {
    int dev = 0, sms = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    const int64_t bytes  = n_alloc * 4;
    const int     copies = (int) std::max<int64_t>(2, (128 << 20) / bytes);
    float *       w      = nullptr;
    ASSERT_EQ(cudaMalloc(&w, (size_t) (bytes * copies) + 16), cudaSuccess);
    cudaMemset(w, 0, (size_t) (bytes * copies));
    cudaStream_t st = nullptr;
    ASSERT_EQ(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking), cudaSuccess);
    for (int per_sm : {1, 2, 4, 8}) {
        const int calls = 32;
        cudaGraph_t g = nullptr;
        cudaGraphExec_t ge = nullptr;
        cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal);
        for (int i = 0; i < calls; ++i) mb::cuda::stream_floor(w + (size_t) (i % copies) * n_alloc, n, per_sm * sms, w + n_alloc * copies, st);
        ASSERT_EQ(cudaStreamEndCapture(st, &g), cudaSuccess);
        ASSERT_EQ(cudaGraphInstantiate(&ge, g, 0), cudaSuccess);
        cudaGraphLaunch(ge, st);
        cudaStreamSynchronize(st);
        std::vector<double> t;
        for (int rep = 0; rep < 15; ++rep) {
            const auto t0 = std::chrono::steady_clock::now();
            cudaGraphLaunch(ge, st);
            cudaStreamSynchronize(st);
            t.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / calls);
        }
        std::sort(t.begin(), t.end());
        std::printf("gemv stream %8.2f MB  %d blocks/SM %7.2f us %6.2f TB/s\n", n * 4 / 1e6, per_sm, t[7],
                    n ? n * 4 / t[7] / 1e6 : 0.0);
        cudaGraphExecDestroy(ge);
        cudaGraphDestroy(g);
    }
    cudaStreamDestroy(st);
    cudaFree(w);
}

// MB_CUDA_SPEED=1 (a timing): the batch-one products of a plan (pose planner 10 rows, root
// planner 9, conv decoders 10–40 frames) on the GEMV's default and 16-row tiles
// (MB_CUDA_SKINNY_ROWS), weights rotating over ≥ 128 MB (past the L2), 32 calls recorded in one
// graph, median of 15 replays
TEST(cuda_speed, gemv_at_batch_one) {
    if (!std::getenv("MB_CUDA_SPEED")) GTEST_SKIP() << "a timing: set MB_CUDA_SPEED=1";
    const std::string problem = mb::backend_cuda_problem(0);
    if (!problem.empty()) GTEST_SKIP() << "skipped: " << problem;
    struct shape { int64_t n, n_in, n_out, conv_t; };
    const shape shapes[] = {{10, 1024, 3072, 0}, {10, 1024, 1024, 0}, {10, 1024, 2048, 0}, {10, 2048, 1024, 0},
                            {9, 512, 1536, 0},   {9, 512, 512, 0},    {9, 2048, 512, 0},   {1, 1024, 3072, 0},
                            {10, 1536, 512, 10}, {20, 1536, 512, 20}, {40, 1536, 512, 40}};
    // the default GEMV, then on L2-resident weights, the older kernel in 16-row tiles and the
    // 5–64-row GEMV's two shapes forced; MB_CUDA_GEMV_SPEED (comma-separated: these names or MB_CUDA_GEMV's values)
    // picks some; "stream" times stream_floor_timings instead
    std::vector<std::string> hows = {"", "hot", "+c0", "+w4", "+w2", "old16", "1x8", "2x8"};
    if (const char * v = std::getenv("MB_CUDA_GEMV_SPEED")) {
        hows.clear();
        for (std::string l = v; !l.empty();) {
            const size_t c = l.find(',');
            hows.push_back(l.substr(0, c));
            l = c == std::string::npos ? "" : l.substr(c + 1);
        }
    }
    // "hot": the default on one copy of the weights, L2-resident (what the products cost when
    // HBM is not waited for: on the H100 no less, ninth session)
    std::stable_partition(hows.begin(), hows.end(), [](const std::string & h) { return h == "stream"; });
    for (const std::string & how : hows) {
        if (how == "stream") {
            stream_floor_timings(shapes[0].n_out * shapes[0].n_in, 0);
            for (const shape & s : shapes) stream_floor_timings(s.n_out * s.n_in, s.n_out * s.n_in);
            continue;
        }
        // "<how>+c0": that GEMV without the chunked copies (MB_CUDA_GEMV_CHUNKS=0); "+rolled": with the
        // chunked kernel's loops rolled (MB_CUDA_GEMV_ROLLED=1); "+w4", "+w2": 4 or 2 warps a block
        // (MB_CUDA_GEMV_WARPS)
        const size_t      plus  = how.find('+');
        const std::string base  = how.substr(0, plus), extra = plus == std::string::npos ? "" : how.substr(plus);
        set_gemv_extra(extra);
        const bool hot = base == "hot";
        setenv("MB_CUDA_SKINNY_ROWS", base == "old16" ? "16" : "", 1);
        setenv("MB_CUDA_GEMV", base == "old16" ? "old" : hot ? "" : base.c_str(), 1);
        device d(mb::backend_device::BACKEND_DEVICE_CUDA);
        uint64_t key = 1;
        for (const shape & s : shapes) {
            const int64_t wbytes = s.n_out * s.n_in * 4;
            const int     copies = hot ? 1 : (int) std::max<int64_t>(2, (128 << 20) / wbytes);
            const std::vector<float>     wh = random_vec(s.n_out * s.n_in, 10);
            std::vector<mb::bptr<float>> ws;
            for (int c = 0; c < copies; ++c) ws.push_back(d.in(wh));
            auto x = d.in(random_vec(s.n * s.n_in, 3)), b = d.in(random_vec(s.n_out, 4));
            auto y = d.in(std::vector<float>((size_t) (s.n * s.n_out)));
            const int calls = 32;
            auto ops = [&] {
                for (int i = 0; i < calls; ++i) {
                    const mb::bptr<const float> w = ws[(size_t) (i % copies)];
                    if (s.conv_t) d.be->conv1d(x, 512, s.conv_t, w, b, s.n_out, 3, 1, y);
                    else d.be->linear(x, s.n, s.n_in, w, b, s.n_out, y);
                }
            };
            d.be->run_recorded(key, ops);
            d.be->synchronize();
            std::vector<double> t;
            for (int rep = 0; rep < 15; ++rep) {
                const auto t0 = std::chrono::steady_clock::now();
                d.be->run_recorded(key, ops);
                d.be->synchronize();
                t.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / calls);
            }
            ++key;
            std::sort(t.begin(), t.end());
            std::printf("gemv %-6s %3ldx%-5ld -> %-5ld %s %7.2f us %6.2f TB/s\n", how.empty() ? "auto" : how.c_str(),
                (long) s.n,
                        (long) s.n_in, (long) s.n_out, s.conv_t ? "conv" : "    ", t[7], wbytes / t[7] / 1e6);
        }
    }
    unset_product_switches();
}

// MB_PRECISION_TF32 / BF16: the reduced-precision kernels run (their results differ from the
// F32 kernel's) and stay within the rounding they imply: BF16 weights keep 8 mantissa bits,
// TF32 operands 10
TEST_F(backends, reduced_precision_linear_and_conv) {
    using mb::backend_precision;
    struct shape { int64_t n, n_in, n_out; };
    for (backend_precision p : {backend_precision::BACKEND_PRECISION_TF32, backend_precision::BACKEND_PRECISION_BF16}) {
        const bool bf16 = p == backend_precision::BACKEND_PRECISION_BF16;
        device     rp(mb::backend_device::BACKEND_DEVICE_CUDA);
        rp.be = mb::backend_create(mb::backend_device::BACKEND_DEVICE_CUDA, 1, 0, p);
        // TF32 needs rows and outputs in multiples of 16 (32+ rows); BF16 takes any shape
        const shape shapes[] = {{32, 1024, 3072}, {64, 512, 1536}, {208, 1024, 160}, {bf16 ? 5 : 48, 1024, 1024}};
        uint32_t seed = 100;
        for (const shape & s : shapes) {
            auto x = random_vec(s.n * s.n_in, seed++), w = random_vec(s.n_out * s.n_in, seed++), b = random_vec(s.n_out, seed++);
            std::vector<float> out[3];
            for (int i = 0; i < 3; ++i) {
                device & d = i == 0 ? rp : i == 1 ? *gpu : *cpu;
                // weights enter as weights do (alloc_from_host), which is where BF16 copies are made
                d.bufs.push_back(d.be->alloc_from_host(w.data(), w.size() * sizeof(float)));
                const mb::bptr<const float> wd = d.bufs.back()->as<const float>();
                auto y = d.in(poisoned(s.n * s.n_out));
                d.be->linear(d.in(x), s.n, s.n_in, wd, d.in(b), s.n_out, y);
                out[i] = d.get(y, s.n * s.n_out);
            }
            const double e = rel_err(out[0], out[2]);
            EXPECT_GT(rel_err(out[0], out[1]), 0.0) << (bf16 ? "bf16" : "tf32") << " kernel did not run, " << s.n;
            EXPECT_LT(e, bf16 ? 2e-2 : 5e-3) << (bf16 ? "bf16 " : "tf32 ") << s.n << "x" << s.n_in << " → " << s.n_out;
            std::printf("%s linear %lldx%lld → %lld: max rel err vs CPU F32 %.3g\n", bf16 ? "bf16" : "tf32",
                        (long long) s.n, (long long) s.n_in, (long long) s.n_out, e);
        }
        // 8 lanes of 40 frames with scratch reserved: one cuBLAS product (conv1d_gemm); 413 and 5
        // outputs (the decoders' last convs) write product rows padded to a multiple of 4
        for (const int64_t c_out : {int64_t(512), int64_t(413), int64_t(5)}) {
            const int64_t lanes = 8, t = 40;
            auto x = random_vec(lanes * 512 * t, 9), w = random_vec(c_out * 512 * 3, 10), b = random_vec(c_out, 11);
            std::vector<float> out[3];
            for (int i = 0; i < 3; ++i) {
                device & d = i == 0 ? rp : i == 1 ? *gpu : *cpu;
                d.be->reserve_conv1d(512, lanes * t, 512, 3);
                d.bufs.push_back(d.be->alloc_from_host(w.data(), w.size() * sizeof(float)));
                const mb::bptr<const float> wd = d.bufs.back()->as<const float>();
                auto y = d.in(poisoned(lanes * c_out * t));
                d.be->conv1d(d.in(x), 512, t, wd, d.in(b), c_out, 3, 3, y, lanes);
                out[i] = d.get(y, lanes * c_out * t);
            }
            const double e = rel_err(out[0], out[2]);
            EXPECT_GT(rel_err(out[0], out[1]), 0.0) << (bf16 ? "bf16" : "tf32") << " batched conv ran in F32";
            EXPECT_LT(e, bf16 ? 2e-2 : 5e-3) << (bf16 ? "bf16" : "tf32") << " batched conv → " << c_out;
            EXPECT_LT(rel_err(out[1], out[2]), 2e-6) << "f32 batched conv → " << c_out;
            std::printf("%s conv 8 lanes x 40 frames 512 → %lld: max rel err vs CPU F32 %.3g\n", bf16 ? "bf16" : "tf32",
                        (long long) c_out, e);
        }
        if (!bf16) continue;
        auto x = random_vec(512 * 64, 7), w = random_vec(413 * 512 * 3, 8);
        std::vector<float> out[2];
        for (int i = 0; i < 2; ++i) {
            device & d = i == 0 ? rp : *cpu;
            d.bufs.push_back(d.be->alloc_from_host(w.data(), w.size() * sizeof(float)));
            const mb::bptr<const float> wd = d.bufs.back()->as<const float>();
            auto y = d.in(poisoned(413 * 64));
            d.be->conv1d(d.in(x), 512, 64, wd, mb::bptr<const float>(), 413, 3, 1, y);
            out[i] = d.get(y, 413 * 64);
        }
        EXPECT_LT(rel_err(out[0], out[1]), 2e-2) << "bf16 conv";
    }
}

// linear_act / conv1d_act above 64 rows (fused batches) against the product followed by the
// activation op on the same backend, every precision: F32 bitwise on every SGEMM tile (the
// epilogue applies the leaky_relu kernel's arithmetic to the same float); the batched conv
// (conv1d_gemm, the activation in its transpose) bitwise in every precision (the product is the
// same); TF32 / BF16 linear with slope 0 (ReLU in cuBLASLt's epilogue, a plan of its own) within
// the reduced-precision bounds of the product, and every output ≥ 0; leaky on cuBLAS composes
TEST_F(backends, act_epilogues_match_the_composed_ops) {
    using mb::backend_precision;
    struct shape { int64_t n, n_in, n_out; };
    struct conv { int64_t c_in, t, c_out, k, dil, lanes; };
    const shape shapes[] = {{200, 1030, 130}, {256, 1024, 3072}, {208, 512, 160}, {65, 64, 100}};
    const conv  convs[]  = {{512, 40, 512, 3, 3, 8}, {96, 40, 77, 3, 9, 8}, {64, 100, 40, 1, 1, 3}};
    for (backend_precision p : {backend_precision::BACKEND_PRECISION_F32, backend_precision::BACKEND_PRECISION_TF32,
                                backend_precision::BACKEND_PRECISION_BF16}) {
        const bool        f32  = p == backend_precision::BACKEND_PRECISION_F32;
        const char *      name = f32 ? "f32" : p == backend_precision::BACKEND_PRECISION_TF32 ? "tf32" : "bf16";
        const double      bound = p == backend_precision::BACKEND_PRECISION_BF16 ? 2e-2 : 5e-3;
        device            d(mb::backend_device::BACKEND_DEVICE_CUDA);
        d.be = mb::backend_create(mb::backend_device::BACKEND_DEVICE_CUDA, 1, 0, p);
        std::vector<std::string> tiles = {""};
        if (f32) {
            for (const std::string & t : mb::cuda::tiled_tile_names()) tiles.push_back(t);
        }
        uint32_t seed = 500;
        for (const std::string & tile : tiles) {
            if (!tile.empty()) setenv("MB_CUDA_TILED_TILE", tile.c_str(), 1);
            for (const shape & s : shapes) {
                auto x = random_vec(s.n * s.n_in, seed++), w = random_vec(s.n_out * s.n_in, seed++),
                     b = random_vec(s.n_out, seed++);
                // weights enter as weights do (alloc_from_host: BF16 copies)
                d.bufs.push_back(d.be->alloc_from_host(w.data(), w.size() * sizeof(float)));
                const mb::bptr<const float> wd = d.bufs.back()->as<const float>();
                auto xd = d.in(x), bd = d.in(b);
                for (float slope : {0.0f, 0.01f}) {
                    const int64_t ny = s.n * s.n_out;
                    auto fused = d.in(poisoned(ny)), apart = d.in(poisoned(ny));
                    d.be->linear_act(xd, s.n, s.n_in, mb::bweight(wd), bd, s.n_out, slope, fused);
                    d.be->linear(xd, s.n, s.n_in, wd, bd, s.n_out, apart);
                    if (slope == 0.0f) d.be->relu(apart, ny, apart);
                    else d.be->leaky_relu(apart, ny, slope, apart);
                    const auto yf = d.get(fused, ny), ya = d.get(apart, ny);
                    const bool same = std::memcmp(yf.data(), ya.data(), yf.size() * sizeof(float)) == 0;
                    const std::string what = std::string(name) + " linear " + std::to_string(s.n) + "x" +
                                             std::to_string(s.n_in) + " → " + std::to_string(s.n_out) + " slope " +
                                             std::to_string(slope) + " tile '" + tile + "'";
                    if (f32 || slope != 0.0f) {
                        EXPECT_TRUE(same) << what << ": fused differs from linear + activation";
                    } else {
                        EXPECT_LT(rel_err(yf, ya), bound) << what;
                        EXPECT_TRUE(std::all_of(yf.begin(), yf.end(), [](float v) { return v >= 0.0f; })) << what;
                        std::printf("%s: fused vs composed max rel err %.3g%s\n", what.c_str(), rel_err(yf, ya),
                                    same ? " (bitwise)" : "");
                    }
                }
            }
            unsetenv("MB_CUDA_TILED_TILE");
        }
        for (const conv & c : convs) {
            d.be->reserve_conv1d(c.c_in, c.lanes * c.t, c.c_out, c.k);
            auto x = random_vec(c.lanes * c.c_in * c.t, seed++), w = random_vec(c.c_out * c.c_in * c.k, seed++),
                 b = random_vec(c.c_out, seed++);
            d.bufs.push_back(d.be->alloc_from_host(w.data(), w.size() * sizeof(float)));
            const mb::bptr<const float> wd = d.bufs.back()->as<const float>();
            auto xd = d.in(x), bd = d.in(b);
            const int64_t ny = c.lanes * c.c_out * c.t;
            for (float slope : {0.0f, 0.2f}) {
                auto fused = d.in(poisoned(ny)), apart = d.in(poisoned(ny));
                d.be->conv1d_act(xd, c.c_in, c.t, mb::bweight(wd), bd, c.c_out, c.k, c.dil, slope, fused, c.lanes);
                d.be->conv1d(xd, c.c_in, c.t, wd, bd, c.c_out, c.k, c.dil, apart, c.lanes);
                if (slope == 0.0f) d.be->relu(apart, ny, apart);
                else d.be->leaky_relu(apart, ny, slope, apart);
                const auto yf = d.get(fused, ny), ya = d.get(apart, ny);
                EXPECT_EQ(std::memcmp(yf.data(), ya.data(), yf.size() * sizeof(float)), 0)
                    << name << " conv " << c.c_in << "→" << c.c_out << " t " << c.t << " lanes " << c.lanes << " slope "
                    << slope << ": fused differs from conv1d + activation";
                EXPECT_LT(rel_err(yf, ya), 1e-30) << name << " conv: NaN or a difference";
            }
        }
    }
}

TEST_F(backends, attention_200_rows_and_conv_above_64_frames) {
    for (int64_t n : {25, 200}) {
        const int64_t d = 1024, n_head = 16;
        auto qkv = random_vec(n * 3 * d, 8);
        std::vector<uint8_t> mask((size_t) n, 0);
        for (int64_t j = 1; j < n; j += 3) mask[(size_t) j] = 1;
        std::vector<float> out[2];
        for (int i = 0; i < 2; ++i) {
            device & dv = i ? *cpu : *gpu;
            auto     o  = dv.in(poisoned(n * d));
            dv.be->attention(dv.in(qkv), n, d, n_head, dv.in(mask), o);
            out[i] = dv.get(o, n * d);
        }
        EXPECT_LT(rel_err(out[0], out[1]), 2e-6) << "attention n " << n;
    }
    struct shape { int64_t c_in, t, c_out, k, dil; };
    for (const shape & s : {shape{96, 100, 77, 3, 3}, shape{512, 256, 512, 3, 27}, shape{512, 64, 413, 3, 1}}) {
        auto x = random_vec(s.c_in * s.t, 40), w = random_vec(s.c_out * s.c_in * s.k, 41), b = random_vec(s.c_out, 42);
        std::vector<float> out[2];
        for (int i = 0; i < 2; ++i) {
            device & dv = i ? *cpu : *gpu;
            auto     y  = dv.in(poisoned(s.c_out * s.t));
            dv.be->conv1d(dv.in(x), s.c_in, s.t, dv.in(w), dv.in(b), s.c_out, s.k, s.dil, y);
            out[i] = dv.get(y, s.c_out * s.t);
        }
        EXPECT_LT(rel_err(out[0], out[1]), 2e-6) << "conv t " << s.t << " dil " << s.dil;
    }
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
        const mb::predict_request req = mb::test::varied_request(i);
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

// TF32 and BF16 against F32 on the same GPU, at motion level: reported, not gated (random
// weights are not trained ones; these precisions are never the default)
TEST(cuda_full_bundle, reduced_precision_report) {
    const char * dir = std::getenv("MB_CUDA_FULL_BUNDLE");
    if (!dir || !*dir) GTEST_SKIP() << "skipped: MB_CUDA_FULL_BUNDLE (a full-size bundle directory) is not set";
    if (const std::string p = mb::backend_cuda_problem(0); !p.empty()) GTEST_SKIP() << "skipped: " << p;
    using mb::backend_precision;
    auto f32 = mb::motion_model::create(mb::bundle_load(dir), 0, mb::backend_device::BACKEND_DEVICE_CUDA);
    for (backend_precision p : {backend_precision::BACKEND_PRECISION_TF32, backend_precision::BACKEND_PRECISION_BF16}) {
        auto rp = mb::motion_model::create(mb::bundle_load(dir), 0, mb::backend_device::BACKEND_DEVICE_CUDA, 0, p);
        ASSERT_EQ(rp->precision(), p);
        mb::test::motion_agreement agree;
        for (int i = 0; i < 64; ++i) {
            const mb::predict_request req = mb::test::varied_request(i);
            agree.add(f32->predict(req), rp->predict(req));
        }
        std::printf("full bundle, CUDA %s vs F32: %s\n", p == backend_precision::BACKEND_PRECISION_TF32 ? "TF32" : "BF16",
                    agree.summary().c_str());
    }
}

// a source that sums the bytes of every distinct tensor the networks look up: each is uploaded
// whole (probes find only tensors that are then loaded), so the sum is the weights' device bytes
struct counting_source : mb::tensor_source {
    const mb::tensor_source &                   src;
    mutable std::set<std::string, std::less<>> seen;
    mutable uint64_t                            bytes = 0;

    explicit counting_source(const mb::tensor_source & s) : src(s) {}
    const mb::tensor_view * find(std::string_view name) const override {
        const mb::tensor_view * t = src.find(name);
        if (t && seen.emplace(name).second) bytes += t->n_bytes;
        return t;
    }
    std::string             origin() const override { return src.origin(); }
    std::optional<uint64_t> meta_uint(std::string_view key) const override { return src.meta_uint(key); }
};

// device_memory: a CUDA model holds at least its F32 weights, a plan's pooled state adds to it,
// and the device's use lies within its size
TEST(cuda_backend, device_memory_counts_the_weights_and_pooled_states) {
    if (const std::string p = mb::backend_cuda_problem(0); !p.empty()) GTEST_SKIP() << "skipped: " << p;
    MB_REQUIRE_SHARED(dir, "fixtures/reference-small");
    using mb::test::safetensors_source;    // reference-small as predict-fixtures.cpp reads it
    const safetensors_source pose(dir + "/weights/pose.safetensors", "backbone_net.", {{"motionbricks.n_head", 4}});
    const safetensors_source root(dir + "/weights/root.safetensors", "backbone_net.", {{"motionbricks.n_head", 4}});
    const safetensors_source vq(dir + "/weights/vqvae.safetensors", "pose_net.", {{"motionbricks.dilation_growth", 3}});
    const counting_source cp(pose), cr(root), cv(vq);
    auto model = mb::motion_model::create_from_sources(cp, cr, cv, mb::test::reference_support(dir), 1,
                                                       mb::backend_device::BACKEND_DEVICE_CUDA);
    ASSERT_STREQ(model->backend_name(), "cuda");
    const uint64_t weights = cp.bytes + cr.bytes + cv.bytes;
    ASSERT_GT(weights, 0u);

    const mb::device_memory_use loaded = model->device_memory();
    EXPECT_GE(loaded.held_bytes, weights);
    EXPECT_GT(loaded.total_bytes, 0u);
    EXPECT_GE(loaded.used_bytes, loaded.held_bytes);    // the device's use includes the model's
    EXPECT_LE(loaded.used_bytes, loaded.total_bytes);

    mb::predict_request req = mb::test::varied_request(0);
    req.num_tokens          = 8;
    ASSERT_EQ(model->validate(req), "");
    model->predict(req);    // leaves its state, with its activations, in the model's pool
    const mb::device_memory_use ran = model->device_memory();
    EXPECT_GT(ran.held_bytes, loaded.held_bytes);
    EXPECT_LE(ran.used_bytes, ran.total_bytes);
    std::printf("device memory: weights %llu B, model %llu B after load, %llu B after a plan; device %llu of %llu B\n",
                (unsigned long long) weights, (unsigned long long) loaded.held_bytes,
                (unsigned long long) ran.held_bytes, (unsigned long long) ran.used_bytes,
                (unsigned long long) ran.total_bytes);
}

// a CUDA failure is MB_COMPUTE_FAILED, and the message says whether the model survives it
TEST(cuda_backend, failures_are_compute_failed_and_say_if_the_model_survives) {
    for (auto [e, survives] : {std::pair<cudaError_t, bool>{cudaErrorInvalidValue, true},
                               {cudaErrorMemoryAllocation, true}, {cudaErrorIllegalAddress, false},
                               {cudaErrorLaunchFailure, false}}) {
        try {
            mb::cuda::fail("test", e);
            ADD_FAILURE() << "fail returned";
        } catch (const mb::error & x) {
            EXPECT_EQ(x.code(), mb::status::compute_failed);
            const std::string m = x.what();
            EXPECT_NE(m.find("cuda: test: "), std::string::npos) << m;
            EXPECT_NE(m.find(survives ? "the model can still be used" : "free the model"), std::string::npos) << m;
        }
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

// ---- the sampling kernel against the host's float functions, bitwise (test-backend-ops
// checks every op against its scalar reference; this checks that seeds give the CPU's tokens
// and re-masking probabilities exactly)

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
        mb::cuda::remask_lowest(dp.p, (int64_t) pr.size(), n_mask, 10, tk.p, 1, s);
        const int order[7] = {1, 4, 6, 0, 2, 5, 3};
        std::vector<int32_t> want(pr.size(), 5);
        for (int64_t i = 0; i < std::min<int64_t>(n_mask, 7); ++i) want[(size_t) order[i]] = 10;
        EXPECT_EQ(tk.get(), want) << "n_mask " << n_mask;
    }
}

// the attention kernels give the same bits (the staged one is the default where it fits, its
// queries staged too at one query a warp; kernel 2 leaves them unstaged), and a lane of a batch
// the bits it gets alone (one lane splits its queries over more blocks)
TEST_F(device_kernels, attention_kernels_agree_bitwise_alone_and_in_a_batch) {
    struct shape { int64_t n, d, n_head, lanes; bool mask; };
    for (const shape & sh : {shape{1, 64, 2, 3, false}, shape{9, 512, 16, 5, false}, shape{10, 1024, 16, 7, false},
                             shape{19, 512, 16, 4, true}, shape{25, 1024, 16, 2, true}, shape{40, 256, 4, 3, false},
                             shape{80, 1024, 16, 2, true}, shape{200, 1024, 16, 1, false}, shape{12, 48, 4, 3, true}}) {
        const int64_t n = sh.n, d = sh.d, L = sh.lanes;
        auto qkv = random_vec((size_t) (L * n * 3 * d), 77);
        std::vector<uint8_t> mask((size_t) (L * n), 0);
        if (sh.mask) {
            for (size_t j = 1; j < mask.size(); j += 3) mask[j] = 1;
            for (int64_t j = 0; j < n; ++j) mask[(size_t) j] = j % 2;     // lane 0: every other key
        }
        dev_vec<float>   dq(qkv);
        dev_vec<uint8_t> dm(mask);
        std::vector<float> out[3];
        for (int kernel : {1, 2, 0}) {
            dev_vec<float> o(poisoned(L * n * d));
            mb::cuda::attention(dq.p, n, d, sh.n_head, sh.mask ? dm.p : nullptr, o.p, L, s, kernel);
            out[(kernel + 2) % 3] = o.get();
        }
        ASSERT_EQ(std::memcmp(out[0].data(), out[1].data(), out[0].size() * sizeof(float)), 0)
            << "kernels differ at n " << n << " d " << d;
        ASSERT_EQ(std::memcmp(out[0].data(), out[2].data(), out[0].size() * sizeof(float)), 0)
            << "staged queries differ at n " << n << " d " << d;
        for (int64_t l = 0; l < L; ++l) {
            for (int kernel : {1, 2, 0}) {
                dev_vec<float> o(poisoned(n * d));
                mb::cuda::attention(dq.p + l * n * 3 * d, n, d, sh.n_head, sh.mask ? dm.p + l * n : nullptr, o.p, 1, s,
                                    kernel);
                const auto one = o.get();
                ASSERT_EQ(std::memcmp(one.data(), out[0].data() + l * n * d, one.size() * sizeof(float)), 0)
                    << "lane " << l << " alone differs at n " << n << " d " << d << " kernel " << kernel;
            }
        }
    }
}

} // namespace
