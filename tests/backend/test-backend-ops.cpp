// every backend op against a direct double-precision reference
#include "backend/backend.h"
#include "backend-test-util.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace {

using mb::test::max_abs_diff;
using mb::test::random_vec;

class backend_ops : public ::testing::TestWithParam<int> {
protected:
    std::unique_ptr<mb::backend> be = mb::backend_cpu_create(GetParam());
};

TEST_P(backend_ops, linear) {
    for (int64_t n : {1, 7, 25}) {
        const int64_t n_in = 67, n_out = 45;
        auto x = random_vec(n * n_in, 1), w = random_vec(n_out * n_in, 2), b = random_vec(n_out, 3);
        std::vector<float>  y(n * n_out);
        std::vector<double> ref(n * n_out);
        be->linear(x.data(), n, n_in, w.data(), b.data(), n_out, y.data());
        for (int64_t i = 0; i < n; ++i)
            for (int64_t o = 0; o < n_out; ++o) {
                double acc = b[o];
                for (int64_t c = 0; c < n_in; ++c) acc += (double) x[i * n_in + c] * w[o * n_in + c];
                ref[i * n_out + o] = acc;
            }
        EXPECT_LT(max_abs_diff(y, ref), 1e-4) << "rows " << n;
        be->linear(x.data(), n, n_in, w.data(), nullptr, n_out, y.data());
        for (int64_t i = 0; i < n; ++i)
            for (int64_t o = 0; o < n_out; ++o) ref[i * n_out + o] -= b[o];
        EXPECT_LT(max_abs_diff(y, ref), 1e-4) << "rows " << n << " without bias";
    }
}

TEST_P(backend_ops, add_layer_norm) {
    const int64_t n = 5, d = 33;
    auto x = random_vec(n * d, 4), r = random_vec(n * d, 5), g = random_vec(d, 6), b = random_vec(d, 7);
    std::vector<double> ref(n * d);
    for (int64_t i = 0; i < n; ++i) {
        double mean = 0, var = 0;
        for (int64_t j = 0; j < d; ++j) mean += (double) x[i * d + j] + r[i * d + j];
        mean /= d;
        for (int64_t j = 0; j < d; ++j) var += std::pow((double) x[i * d + j] + r[i * d + j] - mean, 2);
        var /= d;
        for (int64_t j = 0; j < d; ++j)
            ref[i * d + j] = ((double) x[i * d + j] + r[i * d + j] - mean) / std::sqrt(var + 1e-5) * g[j] + b[j];
    }
    be->add_layer_norm(x.data(), r.data(), n, d, g.data(), b.data(), 1e-5f);
    EXPECT_LT(max_abs_diff(x, ref), 1e-5);
}

TEST_P(backend_ops, attention_with_key_mask) {
    const int64_t n = 9, d = 16, n_head = 4, dh = d / n_head;
    auto qkv = random_vec(n * 3 * d, 8);
    std::vector<uint8_t> mask(n, 0);
    mask[2] = mask[7] = 1;
    std::vector<float>  out(n * d);
    std::vector<double> ref(n * d, 0.0);
    for (int64_t h = 0; h < n_head; ++h)
        for (int64_t i = 0; i < n; ++i) {
            std::vector<double> s(n, 0.0);
            double              mx = -1e300, sum = 0;
            for (int64_t j = 0; j < n; ++j) {
                if (mask[j]) continue;
                double acc = 0;
                for (int64_t c = 0; c < dh; ++c) acc += (double) qkv[i * 3 * d + h * dh + c] * qkv[j * 3 * d + d + h * dh + c];
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
    be->attention(qkv.data(), n, d, n_head, mask.data(), out.data());
    EXPECT_LT(max_abs_diff(out, ref), 1e-5);
}

TEST_P(backend_ops, conv1d_dilated) {
    for (int64_t k : {1, 3}) {
        for (int64_t dil : {1, 3, 9}) {
            const int64_t c_in = 6, c_out = 5, t = 16;
            auto x = random_vec(c_in * t, 9), w = random_vec(c_out * c_in * k, 10), b = random_vec(c_out, 11);
            std::vector<float>  y(c_out * t);
            std::vector<double> ref(c_out * t);
            for (int64_t o = 0; o < c_out; ++o)
                for (int64_t i = 0; i < t; ++i) {
                    double acc = b[o];
                    for (int64_t c = 0; c < c_in; ++c)
                        for (int64_t kk = 0; kk < k; ++kk) {
                            const int64_t src = i + (kk - (k - 1) / 2) * dil;
                            if (src >= 0 && src < t) acc += (double) w[(o * c_in + c) * k + kk] * x[c * t + src];
                        }
                    ref[o * t + i] = acc;
                }
            be->conv1d(x.data(), c_in, t, w.data(), b.data(), c_out, k, dil, y.data());
            EXPECT_LT(max_abs_diff(y, ref), 1e-4) << "k " << k << " dilation " << dil;
        }
    }
}

INSTANTIATE_TEST_SUITE_P(threads, backend_ops, ::testing::Values(1, 2));

} // namespace
