// every op of every registered backend against a plain scalar reference, as ggml's
// test-backend-ops: ops that move values must match bitwise, ops that compute are held
// to an NMSE bound (Σ(y − ref)² / Σ ref², reference in double) over varied shapes,
// including edge sizes. A new backend in backend_registry() runs this file unchanged. The
// optional motion ops (root_conditions, motion_finish) are held to the host steps they reproduce.
#include "backend/backend.h"
#include "backend/token-select.h"
#include "backend-test-util.h"
#include "motion/motion-rep.h"
#include "motion/skeleton-fk.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <numbers>
#include <span>
#include <string>
#include <tuple>
#include <vector>

namespace {

using namespace mb;
using mb::test::random_vec;

// NMSE bounds. Elementwise float ops are one IEEE operation per element: exact. Dot-product
// ops accumulate in float32 (any order): about n·2⁻²⁴ relative error per output, NMSE
// ~1e-12 for the sizes below; the bounds leave room for other summation orders and FMA
constexpr double k_nmse_linear    = 1e-9;
constexpr double k_nmse_conv      = 1e-9;
constexpr double k_nmse_attention = 1e-9;
constexpr double k_nmse_norm      = 1e-10;
constexpr double k_nmse_prob      = 1e-10;
constexpr float  k_sentinel       = 7.25f;  // prefilled outputs: entries an op must not touch keep it

double nmse(const std::vector<float> & y, const std::vector<double> & ref) {
    double num = 0.0, den = 0.0;
    for (size_t i = 0; i < y.size(); ++i) {
        const double d = (double) y[i] - ref[i];
        num += std::isnan(d) ? INFINITY : d * d;
        den += ref[i] * ref[i];
    }
    return den == 0.0 ? num : num / den;
}

// the reference's values rounded to float (the input of the next step of a chain)
std::vector<float> rounded(const std::vector<double> & v) {
    return std::vector<float>(v.begin(), v.end());
}

// mask_cols' meaning on rows of t positions: positions from n_valid on zeroed
void mask_ref(std::vector<float> & v, int64_t rows, int64_t t, int64_t n_valid) {
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = std::max<int64_t>(0, n_valid); j < t; ++j) v[(size_t) (r * t + j)] = 0.0f;
}

// conv1d in double ("same" zero padding dilation·(k−1)/2, per lane), the reference of the conv tests:
// x [lanes, c_in, t], w [c_out, c_in, k], b [c_out] → [lanes, c_out, t]
std::vector<double> conv1d_ref(const std::vector<float> & x, const std::vector<float> & w, const std::vector<float> & b,
                               int64_t lanes, int64_t c_in, int64_t t, int64_t c_out, int64_t k, int64_t dil) {
    std::vector<double> ref(lanes * c_out * t);
    for (int64_t l = 0; l < lanes; ++l)
        for (int64_t o = 0; o < c_out; ++o)
            for (int64_t i = 0; i < t; ++i) {
                double acc = b[o];
                for (int64_t c = 0; c < c_in; ++c)
                    for (int64_t kk = 0; kk < k; ++kk) {
                        const int64_t src = i + (kk - (k - 1) / 2) * dil;
                        if (src >= 0 && src < t) acc += (double) w[(o * c_in + c) * k + kk] * x[(l * c_in + c) * t + src];
                    }
                ref[(l * c_out + o) * t + i] = acc;
            }
    return ref;
}

std::vector<uint8_t> random_bits(size_t n, uint32_t seed) {
    std::mt19937         rng(seed);
    std::vector<uint8_t> v(n);
    for (auto & b : v) b = (uint8_t) (rng() & 1u);
    return v;
}

using op_param = std::tuple<size_t, int>;     // registry index, threads

class backend_ops : public ::testing::TestWithParam<op_param> {
protected:
    std::unique_ptr<backend> be = backend_registry().at(std::get<0>(GetParam())).create(std::get<1>(GetParam()));

    // backend copies of host data; buffers live until the test ends
    template <class T> bptr<T> in(const std::vector<T> & v) {
        bufs_.push_back(be->alloc(v.size() * sizeof(T)));
        bptr<T> p = bufs_.back()->as<T>();
        be->set(p, v.data(), (int64_t) v.size());
        return p;
    }
    template <class T> std::vector<T> get(bptr<T> p, size_t n) {
        std::vector<T> v(n);
        be->get(bptr<const T>(p), v.data(), (int64_t) n);
        return v;
    }

private:
    std::vector<std::unique_ptr<backend_buffer>> bufs_;
};

TEST_P(backend_ops, fill) {
    for (int64_t n : {0, 1, 17, 1000}) {
        std::vector<float>   yf(n + 3, k_sentinel);
        std::vector<int32_t> yi(n + 3, -5);
        auto pf = in(yf);
        auto pi = in(yi);
        be->fill_f32(n, -1.5f, pf);
        be->fill_i32(n, 42, pi);
        const auto gf = get(pf, yf.size());
        const auto gi = get(pi, yi.size());
        for (int64_t i = 0; i < n + 3; ++i) {
            ASSERT_EQ(gf[i], i < n ? -1.5f : k_sentinel) << "n " << n << " i " << i;
            ASSERT_EQ(gi[i], i < n ? 42 : -5) << "n " << n << " i " << i;
        }
    }
}

TEST_P(backend_ops, elementwise) {
    for (int64_t n : {1, 33, 4097}) {
        const auto a = random_vec(n, 1), b = random_vec(n, 2);
        auto pa = in(a), pb = in(b), py = in(std::vector<float>(n, k_sentinel));
        be->add(pa, pb, n, py);
        auto y = get(py, n);
        for (int64_t i = 0; i < n; ++i) ASSERT_EQ(y[i], a[i] + b[i]) << "add " << i;
        // in place: y may alias an input
        be->add(pa, pb, n, pa);
        EXPECT_EQ(get(pa, n), y) << "add in place";

        be->relu(pb, n, py);
        y = get(py, n);
        for (int64_t i = 0; i < n; ++i) ASSERT_EQ(y[i], b[i] < 0.0f ? 0.0f : b[i]) << "relu " << i;
        be->leaky_relu(pb, n, 0.01f, pb);
        y = get(pb, n);
        for (int64_t i = 0; i < n; ++i) ASSERT_EQ(y[i], b[i] < 0.0f ? b[i] * 0.01f : b[i]) << "leaky_relu " << i;
    }
    // SiLU against a double reference, in place, and at the extremes (no NaN from exp overflow)
    for (int64_t n : {1, 33, 4097}) {
        auto a = random_vec(n, 3);
        for (float & v : a) v *= 30.0f;
        auto pa = in(a), py = in(std::vector<float>(n, k_sentinel));
        be->silu(pa, n, py);
        auto y = get(py, n);
        for (int64_t i = 0; i < n; ++i) {
            const double r = double(a[i]) / (1.0 + std::exp(-double(a[i])));
            ASSERT_NEAR(y[i], r, 1e-6 * std::max(1.0, std::fabs(r))) << "silu " << a[i];
        }
        be->silu(pa, n, pa);
        EXPECT_EQ(get(pa, n), y) << "silu in place";
    }
    {
        auto px = in(std::vector<float>{-1e30f, 1e30f, 0.0f});
        be->silu(px, 3, px);
        const auto y = get(px, 3);
        EXPECT_EQ(y[0], 0.0f);
        EXPECT_EQ(y[1], 1e30f);
        EXPECT_EQ(y[2], 0.0f);
    }
    // NaN passes through relu
    auto pn = in(std::vector<float>{std::nanf(""), -0.5f});
    be->relu(pn, 2, pn);
    const auto y = get(pn, 2);
    EXPECT_TRUE(std::isnan(y[0]));
    EXPECT_EQ(y[1], 0.0f);
}

TEST_P(backend_ops, copy_rows_and_where_rows) {
    const int64_t n = 5, d = 7, ldx = 9, ldy = 11;
    const auto    x = random_vec(n * ldx, 3), x2 = random_vec(n * ldx, 4);
    const auto    sel = std::vector<uint8_t>{1, 0, 0, 1, 1};
    for (int64_t lx : {ldx, int64_t(0)}) {
        auto py = in(std::vector<float>(n * ldy, k_sentinel));
        be->copy_rows(in(x), lx, n, d, py, ldy);
        const auto y = get(py, n * ldy);
        for (int64_t i = 0; i < n; ++i)
            for (int64_t j = 0; j < ldy; ++j)
                ASSERT_EQ(y[i * ldy + j], j < d ? x[i * lx + j] : k_sentinel) << "copy_rows ldx " << lx;

        auto pw = in(std::vector<float>(n * ldy, k_sentinel));
        be->where_rows(in(sel), in(x), ldx, in(x2), lx, n, d, pw, ldy);
        const auto w = get(pw, n * ldy);
        for (int64_t i = 0; i < n; ++i)
            for (int64_t j = 0; j < ldy; ++j) {
                const float want = j >= d ? k_sentinel : sel[i] ? x[i * ldx + j] : x2[i * lx + j];
                ASSERT_EQ(w[i * ldy + j], want) << "where_rows ldb " << lx << " at " << i << ", " << j;
            }
    }
}

TEST_P(backend_ops, scatter_rows) {
    // rows 6, 0, 3 of a 7-row y take x's rows 0..2; the others keep their values
    const int64_t                n = 7, d = 305, k = 3;
    const auto                   x = random_vec(k * d, 6), y0 = random_vec(n * d, 7);
    const std::vector<int32_t>   idx{6, 0, 3};
    auto                         py = in(y0);
    be->scatter_rows(in(x), in(idx), k, d, py);
    const auto y = get(py, n * d);
    for (int64_t r = 0; r < n; ++r) {
        const auto    it  = std::find(idx.begin(), idx.end(), int32_t(r));
        const float * src = it == idx.end() ? y0.data() + r * d : x.data() + (it - idx.begin()) * d;
        for (int64_t j = 0; j < d; ++j) ASSERT_EQ(y[r * d + j], src[j]) << "row " << r << " col " << j;
    }
    be->scatter_rows(in(x), in(idx), 0, d, py);    // nothing
    EXPECT_EQ(get(py, n * d), y);
}

TEST_P(backend_ops, transpose) {
    for (auto [r, c] : {std::pair<int64_t, int64_t>{1, 1}, {1, 9}, {3, 7}, {64, 413}, {512, 16}}) {
        const auto x  = random_vec(r * c, 5);
        auto       py = in(std::vector<float>(r * c, k_sentinel));
        be->transpose(in(x), r, c, py);
        const auto y = get(py, r * c);
        for (int64_t i = 0; i < r; ++i)
            for (int64_t j = 0; j < c; ++j) ASSERT_EQ(y[j * r + i], x[i * c + j]) << r << "×" << c;
        // two lanes into rows ldy = r + 5 apart: the 5 floats after each row keep what they hold
        const int64_t ld = r + 5;
        const auto    x2 = random_vec(2 * r * c, 6);
        auto          pz = in(std::vector<float>(2 * c * ld, k_sentinel));
        be->transpose(in(x2), r, c, pz, 2, ld);
        const auto z = get(pz, 2 * c * ld);
        for (int64_t l = 0; l < 2; ++l)
            for (int64_t j = 0; j < c; ++j)
                for (int64_t i = 0; i < ld; ++i)
                    ASSERT_EQ(z[(l * c + j) * ld + i], i < r ? x2[(l * r + i) * c + j] : k_sentinel) << r << "×" << c;
    }
}

TEST_P(backend_ops, mask_cols_and_upsample2) {
    const int64_t c = 3, t = 10;
    const auto    x = random_vec(c * t, 6);
    for (int64_t nv : {0, 1, 7, 10, 12}) {
        auto px = in(x);
        be->mask_cols(c, t, nv, px);
        const auto y = get(px, c * t);
        for (int64_t i = 0; i < c; ++i)
            for (int64_t j = 0; j < t; ++j) ASSERT_EQ(y[i * t + j], j < nv ? x[i * t + j] : 0.0f) << "n_valid " << nv;
    }
    for (int64_t tt : {1, 5, 32}) {
        const auto u  = random_vec(c * tt, 7);
        auto       py = in(std::vector<float>(c * 2 * tt, k_sentinel));
        be->upsample2(in(u), c, tt, py);
        const auto y = get(py, c * 2 * tt);
        for (int64_t i = 0; i < c; ++i)
            for (int64_t j = 0; j < 2 * tt; ++j) ASSERT_EQ(y[i * 2 * tt + j], u[i * tt + j / 2]) << "t " << tt;
    }
}

TEST_P(backend_ops, embed_heads) {
    // token embeddings: 8 heads × 11 rows (10 codes + [MASK]); codebooks: 3 heads × 4 rows
    for (auto [H, R, d, n] : {std::tuple<int64_t, int64_t, int64_t, int64_t>{8, 11, 32, 128}, {3, 4, 5, 1}, {1, 2, 1, 6}}) {
        const auto           table = random_vec(H * R * d, 8);
        std::vector<int32_t> idx(n);
        for (int64_t i = 0; i < n; ++i) idx[i] = (int32_t) ((i * 7 + 3) % R);
        idx[0] = (int32_t) (R - 1);
        auto py = in(std::vector<float>(n * d, k_sentinel));
        be->embed_heads(in(table), H, R, d, in(idx), n, py);
        const auto y = get(py, n * d);
        for (int64_t i = 0; i < n; ++i)
            for (int64_t k = 0; k < d; ++k) ASSERT_EQ(y[i * d + k], table[((i % H) * R + idx[i]) * d + k]) << i;
    }
}

TEST_P(backend_ops, replace_frames) {
    for (auto [t, f, w] : {std::tuple<int64_t, int64_t, int64_t>{6, 4, 128}, {1, 2, 3}, {24, 2, 5}}) {
        const auto h0  = random_vec(f * w * t, 9);
        const auto src = random_vec(t * f * w, 10);
        const auto sel = random_bits(t * f, 11);
        auto       ph  = in(h0);
        be->replace_frames(in(src), in(sel), t, f, w, ph);
        const auto h = get(ph, h0.size());
        std::vector<float> ref = h0;
        for (int64_t g = 0; g < t * f; ++g) {
            if (!sel[g]) continue;
            for (int64_t k = 0; k < w; ++k) ref[((g % f) * w + k) * t + g / f] = src[g * w + k];
        }
        EXPECT_EQ(h, ref) << t << " positions, " << f << " frames, " << w << " channels";
    }
}

TEST_P(backend_ops, linear) {
    for (auto [n, n_in, n_out] : {std::tuple<int64_t, int64_t, int64_t>{1, 1, 1}, {1, 67, 45}, {7, 64, 3077},
                                  {25, 1024, 33}, {16, 5, 2}, {64, 1541, 512}}) {
        const auto x = random_vec(n * n_in, 1), w = random_vec(n_out * n_in, 2), b = random_vec(n_out, 3);
        std::vector<double> ref(n * n_out);
        for (int64_t i = 0; i < n; ++i)
            for (int64_t o = 0; o < n_out; ++o) {
                double acc = 0.0;
                for (int64_t c = 0; c < n_in; ++c) acc += (double) x[i * n_in + c] * w[o * n_in + c];
                ref[i * n_out + o] = acc;
            }
        auto px = in(x), pw = in(w), py = in(std::vector<float>(n * n_out, k_sentinel));
        be->linear(px, n, n_in, pw, {}, n_out, py);
        EXPECT_LT(nmse(get(py, n * n_out), ref), k_nmse_linear) << n << "×" << n_in << "→" << n_out << " no bias";
        for (int64_t i = 0; i < n; ++i)
            for (int64_t o = 0; o < n_out; ++o) ref[i * n_out + o] += b[o];
        be->linear(px, n, n_in, pw, in(b), n_out, py);
        EXPECT_LT(nmse(get(py, n * n_out), ref), k_nmse_linear) << n << "×" << n_in << "→" << n_out;
    }
}

// linear_act / conv1d_act: bitwise the product followed by relu (slope 0) or leaky_relu on the
// same backend (a fused epilogue must give the same floats), and near the double reference;
// shapes through each product path (GEMV rows 1–64 with and without 16-byte loads, many rows)
TEST_P(backend_ops, linear_act_and_conv1d_act) {
    auto act = [](double v, float slope) { return v < 0.0 ? v * slope : v; };
    for (float slope : {0.0f, 0.01f}) {
        for (auto [n, n_in, n_out] : {std::tuple<int64_t, int64_t, int64_t>{1, 67, 45}, {10, 1024, 3072},
                                      {7, 2048, 300}, {25, 1024, 33}, {64, 1541, 512}, {100, 256, 130}}) {
            const auto x = random_vec(n * n_in, 21), w = random_vec(n_out * n_in, 22), b = random_vec(n_out, 23);
            std::vector<double> ref(n * n_out);
            for (int64_t i = 0; i < n; ++i)
                for (int64_t o = 0; o < n_out; ++o) {
                    double acc = b[o];
                    for (int64_t c = 0; c < n_in; ++c) acc += (double) x[i * n_in + c] * w[o * n_in + c];
                    ref[i * n_out + o] = act(acc, slope);
                }
            auto px = in(x), pw = in(w), pb = in(b);
            auto fused = in(std::vector<float>(n * n_out, k_sentinel)), apart = in(std::vector<float>(n * n_out, k_sentinel));
            be->linear_act(px, n, n_in, bweight(bptr<const float>(pw)), pb, n_out, slope, fused);
            be->linear(px, n, n_in, pw, pb, n_out, apart);
            if (slope == 0.0f) be->relu(apart, n * n_out, apart);
            else be->leaky_relu(apart, n * n_out, slope, apart);
            const auto yf = get(fused, n * n_out), ya = get(apart, n * n_out);
            EXPECT_EQ(std::memcmp(yf.data(), ya.data(), yf.size() * sizeof(float)), 0)
                << n << "×" << n_in << "→" << n_out << " slope " << slope << ": fused differs from linear + activation";
            EXPECT_LT(nmse(yf, ref), k_nmse_linear) << n << "×" << n_in << "→" << n_out << " slope " << slope;
        }
        for (auto [c_in, c_out, t, k, dil, lanes] : {std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int64_t>{
                                                          6, 5, 16, 3, 1, 1},
                                                      {512, 512, 24, 3, 3, 1}, {96, 77, 40, 3, 9, 2}, {64, 64, 10, 1, 1, 3}}) {
            const auto x = random_vec(lanes * c_in * t, 24), w = random_vec(c_out * c_in * k, 25), b = random_vec(c_out, 26);
            std::vector<double> ref = conv1d_ref(x, w, b, lanes, c_in, t, c_out, k, dil);
            for (double & v : ref) v = act(v, slope);
            const int64_t ny = lanes * c_out * t;
            auto px = in(x), pw = in(w), pb = in(b);
            auto fused = in(std::vector<float>(ny, k_sentinel)), apart = in(std::vector<float>(ny, k_sentinel));
            be->conv1d_act(px, c_in, t, bweight(bptr<const float>(pw)), pb, c_out, k, dil, slope, fused, lanes);
            be->conv1d(px, c_in, t, pw, pb, c_out, k, dil, apart, lanes);
            if (slope == 0.0f) be->relu(apart, ny, apart);
            else be->leaky_relu(apart, ny, slope, apart);
            const auto yf = get(fused, ny), ya = get(apart, ny);
            EXPECT_EQ(std::memcmp(yf.data(), ya.data(), yf.size() * sizeof(float)), 0)
                << c_in << "→" << c_out << " t " << t << " lanes " << lanes << " slope " << slope
                << ": fused differs from conv1d + activation";
            EXPECT_LT(nmse(yf, ref), k_nmse_conv) << c_in << "→" << c_out << " t " << t << " slope " << slope;
        }
    }
}

// relu_conv1d_act / conv1d_residual (a residual block's convs): bitwise the ops they stand for on
// the same backend (relu then conv1d_act; conv1d then add into h), and near the double reference;
// batch-one shapes of the decoders (10–64 frames, dilations 1, 3, 9), a few lanes, and enough lane
// rows (≥ 256) for a batched path
TEST_P(backend_ops, residual_block_convs) {
    for (auto [c, t, k, dil, lanes] : {std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t>{512, 10, 3, 9, 1},
                                       {512, 40, 3, 3, 1}, {512, 64, 1, 1, 1}, {96, 20, 3, 1, 3}, {64, 40, 3, 3, 8}}) {
        const int64_t n = lanes * c * t;
        const auto x = random_vec(n, 31), h0 = random_vec(n, 32), w = random_vec(c * c * k, 33), b = random_vec(c, 34);
        const bweight bw(bptr<const float>(in(w)));
        auto px = in(x), pb = in(b);
        SCOPED_TRACE(std::to_string(lanes) + " × " + std::to_string(c) + " × " + std::to_string(t) + ", k " +
                     std::to_string(k) + ", dilation " + std::to_string(dil));

        // relu then conv1d_act (ReLU), against the double reference on relu(x)
        auto fused = in(std::vector<float>(n, k_sentinel)), apart = in(std::vector<float>(n, k_sentinel));
        auto xr = in(std::vector<float>(n, k_sentinel)), xr2 = in(std::vector<float>(n, k_sentinel));
        be->relu_conv1d_act(px, xr, c, t, bw, pb, c, k, dil, 0.0f, fused, lanes);
        be->backend::relu_conv1d_act(px, xr2, c, t, bw, pb, c, k, dil, 0.0f, apart, lanes);
        std::vector<float> xp(x);
        for (float & v : xp) v = v < 0.0f ? 0.0f : v;
        std::vector<double> ref = conv1d_ref(xp, w, b, lanes, c, t, c, k, dil);
        for (double & v : ref) v = v < 0.0 ? 0.0 : v;
        auto yf = get(fused, n), ya = get(apart, n);
        EXPECT_EQ(std::memcmp(yf.data(), ya.data(), n * sizeof(float)), 0) << "relu_conv1d_act differs from relu + conv1d_act";
        EXPECT_LT(nmse(yf, ref), k_nmse_conv);

        // conv1d then h += it, in place
        auto hf = in(h0), ha = in(h0);
        auto tmp = in(std::vector<float>(n, k_sentinel)), tmp2 = in(std::vector<float>(n, k_sentinel));
        be->conv1d_residual(px, c, t, bw, pb, c, k, dil, tmp, hf, lanes);
        be->backend::conv1d_residual(px, c, t, bw, pb, c, k, dil, tmp2, ha, lanes);
        ref = conv1d_ref(x, w, b, lanes, c, t, c, k, dil);
        for (int64_t i = 0; i < n; ++i) ref[i] += h0[i];
        yf = get(hf, n), ya = get(ha, n);
        EXPECT_EQ(std::memcmp(yf.data(), ya.data(), n * sizeof(float)), 0) << "conv1d_residual differs from conv1d + add";
        EXPECT_LT(nmse(yf, ref), k_nmse_conv);
    }
}

// res_blocks (a decoder stage's residual blocks): bitwise the ops it stands for on the same
// backend (backend::res_blocks), and near the blocks computed with the double reference, at the decoders' batch-one shapes (dilations 27 … 1 at 10 frames),
// a few lanes, positions past n_valid (masked), and enough lane rows (≥ 256) for a batched path
TEST_P(backend_ops, res_blocks) {
    struct shape { int64_t c, t, n_valid, lanes; std::vector<int64_t> dil; };
    const shape shapes[] = {{512, 10, 10, 1, {27, 9, 3, 1}}, {512, 40, 40, 1, {3, 1}}, {96, 20, 20, 3, {9, 3, 1}},
                            {64, 40, 30, 1, {3, 1}}, {64, 40, 40, 8, {3, 1}}};
    uint32_t seed = 60;
    for (const shape & sh : shapes) {
        const int64_t n = sh.lanes * sh.c * sh.t;
        std::vector<std::vector<float>> w;
        std::vector<mb::backend::res_block> blocks;
        for (int64_t d : sh.dil) {
            w.push_back(random_vec(sh.c * sh.c * 3, seed++));
            w.push_back(random_vec(sh.c, seed++));
            w.push_back(random_vec(sh.c * sh.c, seed++));
            w.push_back(random_vec(sh.c, seed++));
            const size_t j = w.size() - 4;
            blocks.push_back({bweight(bptr<const float>(in(w[j]))), in(w[j + 1]), 3, d,
                              bweight(bptr<const float>(in(w[j + 2]))), in(w[j + 3]), 1});
        }
        const auto h0 = random_vec(n, seed++);
        SCOPED_TRACE(std::to_string(sh.lanes) + " × " + std::to_string(sh.c) + " × " + std::to_string(sh.t) + ", " +
                     std::to_string(sh.n_valid) + " valid, " + std::to_string(sh.dil.size()) + " blocks");
        std::vector<float> out[2];
        for (int i = 0; i < 2; ++i) {
            auto h = in(h0), t0 = in(std::vector<float>(n, k_sentinel)), t1 = in(std::vector<float>(n, k_sentinel));
            if (i == 0) be->res_blocks(h, t0, t1, sh.c, sh.t, sh.n_valid, blocks.data(), (int64_t) blocks.size(), sh.lanes);
            else be->backend::res_blocks(h, t0, t1, sh.c, sh.t, sh.n_valid, blocks.data(), (int64_t) blocks.size(), sh.lanes);
            out[i] = get(h, n);
        }
        EXPECT_EQ(std::memcmp(out[0].data(), out[1].data(), n * sizeof(float)), 0) << "res_blocks differs from its ops";
        // and near the blocks computed with the double conv reference (each step's input rounded)
        std::vector<float>  hr(h0);
        std::vector<double> ref;
        for (size_t j = 0; j < blocks.size(); ++j) {
            mask_ref(hr, sh.lanes * sh.c, sh.t, sh.n_valid);
            std::vector<float> a(hr);
            for (float & v : a) v = v < 0.0f ? 0.0f : v;
            std::vector<float> t1 = rounded(conv1d_ref(a, w[4 * j], w[4 * j + 1], sh.lanes, sh.c, sh.t, sh.c, 3, sh.dil[j]));
            for (float & v : t1) v = v < 0.0f ? 0.0f : v;
            mask_ref(t1, sh.lanes * sh.c, sh.t, sh.n_valid);
            ref = conv1d_ref(t1, w[4 * j + 2], w[4 * j + 3], sh.lanes, sh.c, sh.t, sh.c, 1, 1);
            for (int64_t i = 0; i < n; ++i) ref[(size_t) i] += hr[(size_t) i];
            hr = rounded(ref);
        }
        mask_ref(hr, sh.lanes * sh.c, sh.t, sh.n_valid);
        EXPECT_LT(nmse(out[0], std::vector<double>(hr.begin(), hr.end())), k_nmse_conv);
    }
}

// conv_chain (a decoder's last convs): bitwise the ops it stands for on the same backend
// (backend::conv_chain), and each step near the double reference, at the decoders' shapes (40 frames, 512 → 512 → 512 → 413 or 5), a few
// lanes, positions past n_valid, and a first conv whose im2col rows are not 16-byte multiples
TEST_P(backend_ops, conv_chain) {
    struct shape { int64_t t, n_valid, lanes; std::vector<int64_t> ch; };
    const shape shapes[] = {{40, 40, 1, {512, 512, 512, 413}}, {40, 40, 1, {512, 512, 512, 5}}, {20, 20, 3, {96, 64, 64, 7}},
                            {40, 33, 1, {64, 64, 64, 5}}, {16, 16, 2, {6, 64, 32}}};
    uint32_t seed = 90;
    for (const shape & sh : shapes) {
        std::vector<std::vector<float>> w;
        std::vector<mb::backend::conv_step> steps;
        std::vector<int64_t> out_at;
        int64_t total = 0;
        for (size_t i = 0; i + 1 < sh.ch.size(); ++i) {
            w.push_back(random_vec(sh.ch[i + 1] * sh.ch[i] * 3, seed++));
            w.push_back(random_vec(sh.ch[i + 1], seed++));
            out_at.push_back(total);
            total += sh.lanes * sh.ch[i + 1] * sh.t;
        }
        const auto x0 = random_vec(sh.lanes * sh.ch[0] * sh.t, seed++);
        SCOPED_TRACE(std::to_string(sh.lanes) + " lanes × " + std::to_string(sh.t) + ", " + std::to_string(sh.n_valid) +
                     " valid, " + std::to_string(sh.ch.size() - 1) + " convs");
        std::vector<float> out[2];
        for (int r = 0; r < 2; ++r) {
            auto x = in(x0), ys = in(std::vector<float>((size_t) total, k_sentinel));
            steps.clear();
            for (size_t i = 0; i + 1 < sh.ch.size(); ++i) {
                steps.push_back({bweight(bptr<const float>(in(w[2 * i]))), in(w[2 * i + 1]), sh.ch[i], sh.ch[i + 1], 3,
                                 i == 0 ? 3 : 1, i == 1, ys + out_at[i]});
            }
            if (r == 0) be->conv_chain(x, sh.t, sh.n_valid, steps.data(), (int64_t) steps.size(), sh.lanes);
            else be->backend::conv_chain(x, sh.t, sh.n_valid, steps.data(), (int64_t) steps.size(), sh.lanes);
            out[r] = get(ys, total);
        }
        EXPECT_EQ(std::memcmp(out[0].data(), out[1].data(), (size_t) total * sizeof(float)), 0)
            << "conv_chain differs from its ops";
        // and each step near the double conv reference on the step before's rounded output
        std::vector<float> xr(x0);
        for (size_t i = 0; i + 1 < sh.ch.size(); ++i) {
            std::vector<float> y = rounded(conv1d_ref(xr, w[2 * i], w[2 * i + 1], sh.lanes, sh.ch[i], sh.t, sh.ch[i + 1], 3,
                                                      steps[i].dilation));
            if (steps[i].relu) for (float & v : y) v = v < 0.0f ? 0.0f : v;
            mask_ref(y, sh.lanes * sh.ch[i + 1], sh.t, sh.n_valid);
            const std::vector<float> got(out[0].begin() + out_at[i], out[0].begin() + out_at[i] + (int64_t) y.size());
            EXPECT_LT(nmse(got, std::vector<double>(y.begin(), y.end())), k_nmse_conv) << "step " << i;
            xr = y;
        }
    }
}

TEST_P(backend_ops, add_layer_norm) {
    for (auto [n, d] : {std::pair<int64_t, int64_t>{1, 1}, {5, 33}, {16, 1024}, {25, 512}, {3, 1500}}) {
        const auto x = random_vec(n * d, 4), r = random_vec(n * d, 5), g = random_vec(d, 6), b = random_vec(d, 7);
        for (bool residual : {true, false}) {
            std::vector<double> ref(n * d);
            for (int64_t i = 0; i < n; ++i) {
                std::vector<double> v(d);
                double              mean = 0, var = 0;
                for (int64_t j = 0; j < d; ++j) mean += v[j] = (double) x[i * d + j] + (residual ? r[i * d + j] : 0.0);
                mean /= d;
                for (int64_t j = 0; j < d; ++j) var += (v[j] - mean) * (v[j] - mean);
                var /= d;
                for (int64_t j = 0; j < d; ++j) ref[i * d + j] = (v[j] - mean) / std::sqrt(var + 1e-5) * g[j] + b[j];
            }
            auto px = in(x);
            be->add_layer_norm(px, residual ? bptr<const float>(in(r)) : bptr<const float>(), n, d, in(g), in(b),
                               1e-5f);
            EXPECT_LT(nmse(get(px, n * d), ref), k_nmse_norm) << n << "×" << d << (residual ? " + residual" : "");
        }
    }
}

TEST_P(backend_ops, attention) {
    for (auto [n, d, n_head] : {std::tuple<int64_t, int64_t, int64_t>{1, 16, 4}, {9, 16, 4}, {25, 512, 16},
                                {16, 1024, 16}, {6, 8, 1}}) {
        const auto qkv = random_vec(n * 3 * d, 8);
        for (bool masked : {false, true}) {
            std::vector<uint8_t> mask(n, 0);
            if (masked)
                for (int64_t j = 1; j < n; j += 3) mask[j] = 1;
            const int64_t       dh = d / n_head;
            std::vector<double> ref(n * d, 0.0);
            for (int64_t h = 0; h < n_head; ++h)
                for (int64_t i = 0; i < n; ++i) {
                    std::vector<double> s(n, 0.0);
                    double              mx = -1e300, sum = 0;
                    for (int64_t j = 0; j < n; ++j) {
                        if (mask[j]) continue;
                        double acc = 0;
                        for (int64_t c = 0; c < dh; ++c)
                            acc += (double) qkv[i * 3 * d + h * dh + c] * qkv[j * 3 * d + d + h * dh + c];
                        s[j] = acc / std::sqrt((double) dh);
                        mx   = std::max(mx, s[j]);
                    }
                    for (int64_t j = 0; j < n; ++j) sum += mask[j] ? 0.0 : std::exp(s[j] - mx);
                    for (int64_t j = 0; j < n; ++j) {
                        if (mask[j]) continue;
                        const double p = std::exp(s[j] - mx) / sum;
                        for (int64_t c = 0; c < dh; ++c) ref[i * d + h * dh + c] += p * qkv[j * 3 * d + 2 * d + h * dh + c];
                    }
                }
            auto po = in(std::vector<float>(n * d, k_sentinel));
            be->attention(in(qkv), n, d, n_head, masked ? bptr<const uint8_t>(in(mask)) : bptr<const uint8_t>(), po);
            EXPECT_LT(nmse(get(po, n * d), ref), k_nmse_attention)
                << n << " rows, " << d << " wide, " << n_head << " heads" << (masked ? ", key mask" : "");
        }
    }
}

TEST_P(backend_ops, conv1d) {
    for (auto [c_in, c_out, t] : {std::tuple<int64_t, int64_t, int64_t>{1, 1, 1}, {6, 5, 16}, {96, 77, 64},
                                  {512, 512, 24}, {5, 413, 40}}) {
        for (int64_t k : {1, 3}) {
            for (int64_t dil : {1, 3, 9, 27}) {
                const auto x = random_vec(c_in * t, 9), w = random_vec(c_out * c_in * k, 10), b = random_vec(c_out, 11);
                const std::vector<double> ref = conv1d_ref(x, w, b, 1, c_in, t, c_out, k, dil);
                auto py = in(std::vector<float>(c_out * t, k_sentinel));
                be->conv1d(in(x), c_in, t, in(w), in(b), c_out, k, dil, py);
                EXPECT_LT(nmse(get(py, c_out * t), ref), k_nmse_conv)
                    << c_in << "→" << c_out << " t " << t << " k " << k << " dilation " << dil;
            }
        }
    }
}

TEST_P(backend_ops, sample_codes) {
    for (auto [m, C] : {std::pair<int64_t, int64_t>{128, 10}, {1, 1}, {48, 10}, {3, 1000}}) {
        auto logits = random_vec(m * C, 12);
        for (float & v : logits) v *= 3.0f;
        std::vector<float> u(m * C);
        uint32_t           s = 1;
        for (float & v : u) v = (float) ((s = s * 1664525u + 1013904223u) >> 8) / 16777216.0f;
        if (C > 2 && m > 2) {
            logits[0 * C + 1] = logits[0 * C + 2] = 50.0f;      // tie: first index
            logits[1 * C + 0] = std::nanf("");                  // NaN never wins
            u[2 * C + 0] = 0.0f;                                // clamped logs
            u[2 * C + 1] = 1.0f;
        }
        for (bool gumbel : {false, true}) {
            auto pt = in(std::vector<int32_t>(m, -1));
            auto pp = in(std::vector<float>(m, k_sentinel));
            be->sample_codes(in(logits), m, C, gumbel ? bptr<const float>(in(u)) : bptr<const float>(), pt, pp);
            const auto          tok = get(pt, m);
            const auto          prob = get(pp, m);
            std::vector<double> ref(m);
            std::vector<float>  got_prob;
            std::vector<double> ref_prob;
            for (int64_t r = 0; r < m; ++r) {
                const float * l = logits.data() + r * C;
                const int32_t t = gumbel ? gumbel_argmax(l, u.data() + r * C, C) : argmax_first(l, C);
                ASSERT_EQ(tok[r], t) << "row " << r << (gumbel ? " gumbel" : " argmax");
                double mx = -INFINITY, sum = 0.0;
                for (int64_t c = 0; c < C; ++c) mx = std::max(mx, (double) l[c]);
                for (int64_t c = 0; c < C; ++c) sum += std::exp((double) l[c] - mx);
                if (std::isnan(mx) || std::isnan(sum)) continue;    // rows with NaN: token only
                got_prob.push_back(prob[r]);
                ref_prob.push_back(std::exp((double) l[t] - mx) / sum);
            }
            EXPECT_LT(nmse(got_prob, ref_prob), k_nmse_prob) << m << "×" << C << (gumbel ? " gumbel" : " argmax");
        }
    }
}

TEST_P(backend_ops, remask_lowest) {
    for (int64_t m : {1, 6, 48, 128}) {
        auto prob = random_vec(m, 13);
        for (int64_t i = 0; i < m; i += 5) prob[i] = 0.25f;                 // ties
        if (m > 3) prob[3] = std::nanf("");                                  // NaN sorts last
        std::vector<int32_t> tok0(m);
        for (int64_t i = 0; i < m; ++i) tok0[i] = (int32_t) (i % 10);
        const auto key = [&](int64_t i) { return std::isnan(prob[i]) ? INFINITY : prob[i]; };
        for (int64_t n_mask : {int64_t(0), int64_t(1), m / 2, m, m + 3}) {
            auto pt = in(tok0);
            be->remask_lowest(in(prob), m, n_mask, 10, pt);
            const auto tok = get(pt, m);
            for (int64_t i = 0; i < m; ++i) {
                int64_t rank = 0;
                for (int64_t j = 0; j < m; ++j) rank += key(j) < key(i) || (key(j) == key(i) && j < i);
                ASSERT_EQ(tok[i], rank < n_mask ? 10 : tok0[i]) << "m " << m << " n_mask " << n_mask << " i " << i;
            }
        }
    }
}

// lanes: an op given n_batch lanes writes, for every lane, exactly what it writes for that lane
// alone (whose result the tests above hold to the scalar reference), and touches nothing else
TEST_P(backend_ops, lanes_equal_one_by_one) {
    const int64_t B = 5;
    // per-lane single runs of `one(lane offset in, lane offset out)` against one batched run
    const auto lanes_match = [&](const char * what, int64_t per_out, const std::function<void(bptr<float>, int64_t)> & one,
                                 const std::function<void(bptr<float>)> & all, const std::vector<float> & init) {
        auto ps = in(init), pb = in(init);
        for (int64_t l = 0; l < B; ++l) one(ps + l * per_out, l);
        all(pb);
        EXPECT_EQ(get(pb, init.size()), get(ps, init.size())) << what;
        (void) per_out;
    };
    {   // add with a repeated b: y[i] = a[i] + b[i mod n_b]
        const int64_t m = 7, n = B * m;
        const auto a = random_vec(n, 20), b = random_vec(m, 21);
        auto py = in(std::vector<float>(n + 2, k_sentinel));
        be->add(in(a), in(b), n, py, m);
        const auto y = get(py, n + 2);
        for (int64_t i = 0; i < n; ++i) ASSERT_EQ(y[i], a[i] + b[i % m]) << "add n_b " << i;
        EXPECT_EQ(y[n], k_sentinel);
    }
    {   // transpose
        const int64_t r = 6, c = 9;
        const auto x = random_vec(B * r * c, 22);
        auto px = in(x);
        lanes_match("transpose", r * c, [&](bptr<float> y, int64_t l) { be->transpose(px + l * r * c, r, c, y); },
                    [&](bptr<float> y) { be->transpose(px, r, c, y, B); }, std::vector<float>(B * r * c, k_sentinel));
    }
    {   // replace_frames
        const int64_t t = 6, f = 4, w = 5, per = t * f * w;
        const auto src = random_vec(B * per, 23);
        const auto sel = random_bits(B * t * f, 24);
        auto psrc = in(src);
        auto psel = in(sel);
        lanes_match("replace_frames", per,
                    [&](bptr<float> h, int64_t l) { be->replace_frames(psrc + l * per, psel + l * t * f, t, f, w, h); },
                    [&](bptr<float> h) { be->replace_frames(psrc, psel, t, f, w, h, B); }, random_vec(B * per, 25));
    }
    {   // attention, with and without a key mask
        const int64_t n = 9, d = 16, n_head = 4;
        const auto qkv = random_vec(B * n * 3 * d, 26);
        std::vector<uint8_t> mask(B * n, 0);
        for (int64_t l = 0; l < B; ++l)
            for (int64_t j = l % 3; j < n; j += 3 + l) mask[l * n + j] = j > 0;
        auto pq = in(qkv);
        auto pm = in(mask);
        for (bool masked : {false, true}) {
            const auto km = [&](int64_t l) { return masked ? bptr<const uint8_t>(pm + l * n) : bptr<const uint8_t>(); };
            lanes_match(masked ? "attention, key mask" : "attention", n * d,
                        [&](bptr<float> o, int64_t l) { be->attention(pq + l * n * 3 * d, n, d, n_head, km(l), o); },
                        [&](bptr<float> o) { be->attention(pq, n, d, n_head, km(0), o, B); },
                        std::vector<float>(B * n * d, k_sentinel));
        }
    }
    {   // conv1d
        for (auto [c_in, c_out, t, k, dil] : {std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t>{6, 5, 16, 3, 3},
                                              {96, 77, 8, 3, 1}, {5, 413, 12, 1, 1}}) {
            const auto x = random_vec(B * c_in * t, 27), w = random_vec(c_out * c_in * k, 28), b = random_vec(c_out, 29);
            auto px = in(x), pw = in(w), pbias = in(b);
            lanes_match("conv1d", c_out * t,
                        [&](bptr<float> y, int64_t l) { be->conv1d(px + l * c_in * t, c_in, t, pw, pbias, c_out, k, dil, y); },
                        [&](bptr<float> y) { be->conv1d(px, c_in, t, pw, pbias, c_out, k, dil, y, B); },
                        std::vector<float>(B * c_out * t, k_sentinel));
        }
    }
    {   // remask_lowest: ranking within each lane
        const int64_t m = 48;
        auto prob = random_vec(B * m, 30);
        for (int64_t i = 0; i < B * m; i += 7) prob[i] = 0.25f;
        std::vector<int32_t> tok0(B * m);
        for (int64_t i = 0; i < B * m; ++i) tok0[i] = (int32_t) (i % 10);
        auto pp = in(prob);
        for (int64_t n_mask : {int64_t(1), m / 3, m}) {
            auto ps = in(tok0), pb = in(tok0);
            for (int64_t l = 0; l < B; ++l) be->remask_lowest(pp + l * m, m, n_mask, 10, ps + l * m);
            be->remask_lowest(pp, m, n_mask, 10, pb, B);
            EXPECT_EQ(get(pb, B * m), get(ps, B * m)) << "remask_lowest n_mask " << n_mask;
        }
    }
}

// the optional motion_finish (predict's step 5) against the host functions it reproduces
// (motion_stats::unnormalize, local_to_global, reapply_start_transform, skeleton_fk::run) on random
// stats, skeleton and decoder output: within 1e-5 (the cos, sin and atan2 of float arguments may
// round differently from the host's libm), and lanes in one call bitwise equal to each lane alone,
// nothing written past the lanes' frames. Backends without the op skip, saying so
TEST_P(backend_ops, motion_finish) {
    if (!be->has_motion_ops()) {
        GTEST_SKIP() << "the " << be->name() << " backend has no motion_finish (an optional op: predict "
                     << "finishes on the host there)";
    }
    constexpr int64_t LD = k_local_dim, GD = k_global_dim, JP = k_n_joints * 3, JR = k_n_joints * 4;
    constexpr float   k_tol = 1e-5f;
    // random statistics (std > 0) and a random tree (parents before children)
    std::vector<float> mean = random_vec(k_n_features, 40), sd = random_vec(k_n_features, 41);
    for (float & v : mean) v *= 0.1f;
    for (float & v : sd) v = 0.1f + 0.5f * std::fabs(v);
    const motion_stats stats = motion_stats::from_f32(mean.data(), sd.data());
    skeleton_fk        fk;
    std::mt19937       rng(42);
    const std::vector<float> offsets = random_vec(k_n_joints * 3, 43);
    for (int j = 0; j < k_n_joints; ++j) {
        fk.parents[size_t(j)] = j == 0 ? -1 : int32_t(rng() % uint32_t(j));
        for (int i = 0; i < 3; ++i) fk.offsets[size_t(j * 3 + i)] = 0.2f * offsets[size_t(j * 3 + i)];
    }
    const std::span<const int> idx = feature_subset_indices(feature_subset::FEATURE_SUBSET_LOCAL);
    std::vector<float>         scale(LD), mn(LD);
    for (int64_t i = 0; i < LD; ++i) {
        scale[size_t(i)] = stats.scale[size_t(idx[size_t(i)])];
        mn[size_t(i)]    = stats.mean[size_t(idx[size_t(i)])];
    }
    const std::vector<int32_t> parents(fk.parents.begin(), fk.parents.end());
    const std::vector<float>   offs(fk.offsets.begin(), fk.offsets.end());
    auto pscale = in(scale), pmean = in(mn), poffs = in(offs);
    auto ppar   = in(parents);

    for (const int64_t F : {4, 24, 64}) {
        const int64_t B = 3;
        SCOPED_TRACE("frames " + std::to_string(F));
        const std::vector<float> x = random_vec(size_t(B * F * LD), 44 + uint32_t(F));
        std::vector<float>       ref(size_t(B * 3));
        std::uniform_real_distribution<float> pos(-3.0f, 3.0f), ang(-float(std::numbers::pi), float(std::numbers::pi));
        for (int64_t l = 0; l < B; ++l) {
            ref[size_t(l * 3 + 0)] = pos(rng);
            ref[size_t(l * 3 + 1)] = pos(rng);
            ref[size_t(l * 3 + 2)] = ang(rng);
        }
        auto px = in(x), pref = in(ref);
        // one frame more than the lanes hold: the op must leave it alone
        const size_t ng = size_t((B * F + 1) * GD), np = size_t((B * F + 1) * JP), nr = size_t((B * F + 1) * JR);
        auto pg = in(std::vector<float>(ng, k_sentinel)), pp = in(std::vector<float>(np, k_sentinel));
        auto pr = in(std::vector<float>(nr, k_sentinel));
        be->motion_finish(px, B, F, pscale, pmean, pref, ppar, poffs, pg, pp, pr);
        const auto g = get(pg, ng), p = get(pp, np), r = get(pr, nr);
        EXPECT_EQ(g.back(), k_sentinel);
        EXPECT_EQ(p.back(), k_sentinel);
        EXPECT_EQ(r.back(), k_sentinel);

        float worst[3] = {0.0f, 0.0f, 0.0f};     // global features, joints, rotations
        const auto diff = [](const float * a, const float * b, int64_t n) {
            float m = 0.0f;
            for (int64_t i = 0; i < n; ++i) {
                const float d = std::fabs(a[i] - b[i]);
                if (!(d <= m)) m = d;
            }
            return m;
        };
        for (int64_t l = 0; l < B; ++l) {
            // the host's step 5 for lane l
            std::vector<float> local(size_t(F * LD)), hg(size_t(F * GD)), hp(size_t(F * JP)), hr(size_t(F * JR));
            stats.unnormalize(x.data() + l * F * LD, F, feature_subset::FEATURE_SUBSET_LOCAL, local.data());
            local_to_global(local.data(), F, hg.data());
            reapply_start_transform(hg.data(), F, ref[size_t(l * 3)], ref[size_t(l * 3 + 1)], ref[size_t(l * 3 + 2)]);
            fk.run(hg.data(), F, hp.data(), hr.data(), nullptr);
            worst[0] = std::max(worst[0], diff(g.data() + l * F * GD, hg.data(), F * GD));
            worst[1] = std::max(worst[1], diff(p.data() + l * F * JP, hp.data(), F * JP));
            worst[2] = std::max(worst[2], diff(r.data() + l * F * JR, hr.data(), F * JR));

            // the lane alone, into outputs of its own: the same bits
            auto pg1 = in(std::vector<float>(size_t(F * GD), k_sentinel));
            auto pp1 = in(std::vector<float>(size_t(F * JP), k_sentinel));
            auto pr1 = in(std::vector<float>(size_t(F * JR), k_sentinel));
            be->motion_finish(px + l * F * LD, 1, F, pscale, pmean, pref + l * 3, ppar, poffs, pg1, pp1, pr1);
            EXPECT_EQ(get(pg1, size_t(F * GD)), std::vector<float>(g.begin() + l * F * GD, g.begin() + (l + 1) * F * GD))
                << "lane " << l << " alone: global features";
            EXPECT_EQ(get(pp1, size_t(F * JP)), std::vector<float>(p.begin() + l * F * JP, p.begin() + (l + 1) * F * JP))
                << "lane " << l << " alone: joint positions";
            EXPECT_EQ(get(pr1, size_t(F * JR)), std::vector<float>(r.begin() + l * F * JR, r.begin() + (l + 1) * F * JR))
                << "lane " << l << " alone: local rotations";
        }
        EXPECT_LE(worst[0], k_tol) << "global features";
        EXPECT_LE(worst[1], k_tol) << "joint positions";
        EXPECT_LE(worst[2], k_tol) << "local rotations";
        std::printf("  motion_finish, %lld frames: max |backend − host| global %.3g, joints %.3g, rotations %.3g\n",
                    (long long) F, double(worst[0]), double(worst[1]), double(worst[2]));
    }
}

// the optional root_conditions (predict's glue after the root planner) against the host steps it
// reproduces (motion_stats::unnormalize, global_root_to_local, motion_stats::normalize, the last
// frame's given velocity): bitwise, since it is one float operation after another with no libm call;
// lanes in one call equal to each lane alone, nothing written past the lanes' frames
TEST_P(backend_ops, root_conditions) {
    if (!be->has_motion_ops()) {
        GTEST_SKIP() << "the " << be->name() << " backend has no root_conditions (an optional op: predict "
                     << "runs that glue on the host there)";
    }
    std::vector<float> mean = random_vec(k_n_features, 50), sd = random_vec(k_n_features, 51);
    for (float & v : mean) v *= 0.1f;
    for (float & v : sd) v = 0.1f + 0.5f * std::fabs(v);
    const motion_stats         stats = motion_stats::from_f32(mean.data(), sd.data());
    const std::span<const int> gi    = feature_subset_indices(feature_subset::FEATURE_SUBSET_GLOBAL_ROOT);
    const std::span<const int> li    = feature_subset_indices(feature_subset::FEATURE_SUBSET_LOCAL_ROOT);
    const std::vector<float>   st    = {stats.scale[size_t(gi[0])], stats.scale[size_t(gi[2])], stats.mean[size_t(gi[0])],
                                        stats.mean[size_t(gi[2])],  stats.scale[size_t(li[1])], stats.scale[size_t(li[2])],
                                        stats.mean[size_t(li[1])],  stats.mean[size_t(li[2])]};
    auto pst = in(st);
    for (const int64_t F : {4, 40, 64}) {
        const int64_t B = 3;
        SCOPED_TRACE("frames " + std::to_string(F));
        const std::vector<float>   y    = random_vec(size_t(B * F * 5), 52 + uint32_t(F));
        const std::vector<float>   last = random_vec(size_t(B * 2), 53);
        const std::vector<uint8_t> has  = {1, 0, 1};
        auto py = in(y), plast = in(last);
        auto phas = in(has);
        auto pc = in(std::vector<float>(size_t((B * F + 1) * 4), k_sentinel));
        auto pe = in(std::vector<float>(size_t((B * F + 1) * 2), k_sentinel));
        be->root_conditions(py, B, F, pst, plast, phas, pc, pe);
        const auto c = get(pc, size_t((B * F + 1) * 4)), e = get(pe, size_t((B * F + 1) * 2));
        EXPECT_EQ(c.back(), k_sentinel);
        EXPECT_EQ(e.back(), k_sentinel);
        for (int64_t l = 0; l < B; ++l) {
            // the host's steps for lane l (predict_chunk's step 2 and 4)
            std::vector<float> gu(size_t(F * 5)), lr(size_t(F * 4)), hc(size_t(F * 4)), he(size_t(F * 2));
            const float *      yl = y.data() + l * F * 5;
            stats.unnormalize(yl, F, feature_subset::FEATURE_SUBSET_GLOBAL_ROOT, gu.data());
            global_root_to_local(gu.data(), F, lr.data());
            stats.normalize(lr.data(), F, feature_subset::FEATURE_SUBSET_LOCAL_ROOT, lr.data());
            if (has[size_t(l)]) {
                lr[size_t((F - 1) * 4 + 1)] = last[size_t(l * 2)];
                lr[size_t((F - 1) * 4 + 2)] = last[size_t(l * 2 + 1)];
            }
            for (int64_t t = 0; t < F; ++t) {
                hc[size_t(t * 4 + 0)] = yl[t * 5 + 0];
                hc[size_t(t * 4 + 1)] = yl[t * 5 + 2];
                hc[size_t(t * 4 + 2)] = yl[t * 5 + 3];
                hc[size_t(t * 4 + 3)] = yl[t * 5 + 4];
                he[size_t(t * 2 + 0)] = lr[size_t(t * 4 + 1)];
                he[size_t(t * 2 + 1)] = lr[size_t(t * 4 + 2)];
            }
            EXPECT_EQ(std::vector<float>(c.begin() + l * F * 4, c.begin() + (l + 1) * F * 4), hc) << "lane " << l << ": root condition";
            EXPECT_EQ(std::vector<float>(e.begin() + l * F * 2, e.begin() + (l + 1) * F * 2), he) << "lane " << l << ": external condition";
            // the lane alone
            auto pc1 = in(std::vector<float>(size_t(F * 4), k_sentinel)), pe1 = in(std::vector<float>(size_t(F * 2), k_sentinel));
            be->root_conditions(py + l * F * 5, 1, F, pst, plast + l * 2, phas + l, pc1, pe1);
            EXPECT_EQ(get(pc1, size_t(F * 4)), hc) << "lane " << l << " alone";
            EXPECT_EQ(get(pe1, size_t(F * 2)), he) << "lane " << l << " alone";
        }
    }
}

std::string param_name(const ::testing::TestParamInfo<op_param> & info) {
    std::string n = backend_registry().at(std::get<0>(info.param)).name + "_t" + std::to_string(std::get<1>(info.param));
    for (char & c : n)
        if (!std::isalnum((unsigned char) c)) c = '_';
    return n;
}

INSTANTIATE_TEST_SUITE_P(registry, backend_ops,
                         ::testing::Combine(::testing::Range(size_t(0), backend_registry().size()),
                                            ::testing::Values(1, 2)),
                         param_name);

} // namespace
