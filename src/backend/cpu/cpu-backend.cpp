// CPU backend: OpenBLAS sgemm for the matrix products, plain loops elsewhere
#include "backend/backend.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <thread>
#include <vector>

namespace mb {
namespace {

class cpu_backend final : public backend {
public:
    explicit cpu_backend(int n_threads) : n_threads_(n_threads) {
        openblas_set_num_threads(n_threads_);
    }

    const char * name() const override { return "cpu"; }
    int          n_threads() const override { return n_threads_; }

    void linear(const float * x, int64_t n, int64_t n_in, const float * w, const float * b, int64_t n_out,
                float * y) override {
        // y = x · wᵀ (+ b broadcast over rows)
        if (b) {
            for (int64_t i = 0; i < n; ++i) std::copy(b, b + n_out, y + i * n_out);
        }
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int) n, (int) n_out, (int) n_in, 1.0f, x, (int) n_in,
                    w, (int) n_in, b ? 1.0f : 0.0f, y, (int) n_out);
    }

    void add_layer_norm(float * x, const float * r, int64_t n, int64_t d, const float * g, const float * b,
                        float eps) override {
        for (int64_t i = 0; i < n; ++i) {
            float * row = x + i * d;
            if (r) {
                const float * rr = r + i * d;
                for (int64_t j = 0; j < d; ++j) row[j] += rr[j];
            }
            double mean = 0.0;
            for (int64_t j = 0; j < d; ++j) mean += row[j];
            mean /= (double) d;
            double var = 0.0;
            for (int64_t j = 0; j < d; ++j) {
                const double c = row[j] - mean;
                var += c * c;
            }
            var /= (double) d;
            const float inv = (float) (1.0 / std::sqrt(var + (double) eps));
            for (int64_t j = 0; j < d; ++j) {
                row[j] = ((row[j] - (float) mean) * inv) * g[j] + b[j];
            }
        }
    }

    void attention(const float * qkv, int64_t n, int64_t d, int64_t n_head, const uint8_t * key_mask,
                   float * out) override {
        const int64_t dh    = d / n_head;
        const float   scale = 1.0f / std::sqrt((float) dh);
        std::vector<float> s((size_t) n);
        for (int64_t h = 0; h < n_head; ++h) {
            for (int64_t i = 0; i < n; ++i) {
                const float * q  = qkv + i * 3 * d + h * dh;
                float         mx = -std::numeric_limits<float>::infinity();
                for (int64_t j = 0; j < n; ++j) {
                    if (key_mask && key_mask[j]) {
                        s[j] = -std::numeric_limits<float>::infinity();
                        continue;
                    }
                    const float * k   = qkv + j * 3 * d + d + h * dh;
                    float         acc = 0.0f;
                    for (int64_t c = 0; c < dh; ++c) acc += q[c] * k[c];
                    s[j] = acc * scale;
                    mx   = std::max(mx, s[j]);
                }
                float sum = 0.0f;
                for (int64_t j = 0; j < n; ++j) {
                    s[j] = (s[j] == -std::numeric_limits<float>::infinity()) ? 0.0f : std::exp(s[j] - mx);
                    sum += s[j];
                }
                float * o = out + i * d + h * dh;
                std::fill(o, o + dh, 0.0f);
                for (int64_t j = 0; j < n; ++j) {
                    const float   p = s[j] / sum;
                    const float * v = qkv + j * 3 * d + 2 * d + h * dh;
                    for (int64_t c = 0; c < dh; ++c) o[c] += p * v[c];
                }
            }
        }
    }

    void conv1d(const float * x, int64_t c_in, int64_t t, const float * w, const float * b, int64_t c_out,
                int64_t k, int64_t dilation, float * y) override {
        // im2col: col[c_in·k, t] with col[(c·k + kk), i] = x[c, i + (kk − (k−1)/2)·dilation]
        const int64_t half = (k - 1) / 2;
        col_.assign((size_t) (c_in * k * t), 0.0f);
        for (int64_t c = 0; c < c_in; ++c) {
            for (int64_t kk = 0; kk < k; ++kk) {
                float *       dst   = col_.data() + (c * k + kk) * t;
                const int64_t shift = (kk - half) * dilation;
                for (int64_t i = 0; i < t; ++i) {
                    const int64_t src = i + shift;
                    if (src >= 0 && src < t) dst[i] = x[c * t + src];
                }
            }
        }
        // y[c_out, t] = w[c_out, c_in·k] · col[c_in·k, t] + b
        if (b) {
            for (int64_t o = 0; o < c_out; ++o) std::fill(y + o * t, y + (o + 1) * t, b[o]);
        }
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int) c_out, (int) t, (int) (c_in * k), 1.0f, w,
                    (int) (c_in * k), col_.data(), (int) t, b ? 1.0f : 0.0f, y, (int) t);
    }

private:
    int                n_threads_;
    std::vector<float> col_; // im2col scratch, grown once to the largest conv
};

} // namespace

std::unique_ptr<backend> backend_cpu_create(int n_threads) {
    if (n_threads <= 0) n_threads = (int) std::max(1u, std::thread::hardware_concurrency());
    return std::make_unique<cpu_backend>(n_threads);
}

} // namespace mb
