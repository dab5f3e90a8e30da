// CPU backend. Batch-one networks multiply a few rows (6–64) by large weight
// matrices, so a plan is bound by reading the weights once: the default kernel
// (cpu-gemm.cpp) streams each weight row once and threads split the output
// columns; OpenBLAS sgemm stays selectable for comparison. Other ops are plain loops.
#include "backend/cpu/cpu-backend.h"

#include "backend/cpu/cpu-gemm.h"
#include "backend/cpu/thread-pool.h"

#if MB_HAVE_OPENBLAS
#include <cblas.h>
#endif

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <thread>
#include <vector>

#ifndef MB_HAVE_OPENBLAS
#define MB_HAVE_OPENBLAS 0
#endif

namespace mb {
namespace {

// below this many multiply-adds one thread is faster than waking the others
constexpr int64_t k_min_parallel_fma = 1 << 16;

class cpu_backend final : public backend {
public:
    cpu_backend(int n_threads, cpu_gemm gemm)
        : n_threads_(n_threads), gemm_(gemm),
          isa_(gemm == cpu_gemm::CPU_GEMM_OWN_AVX2 ? cpu::gemm_isa::GEMM_ISA_AVX2 : cpu::gemm_isa_default()),
          pool_(n_threads) {
#if MB_HAVE_OPENBLAS
        if (gemm_ == cpu_gemm::CPU_GEMM_OPENBLAS) openblas_set_num_threads(n_threads_);
#endif
    }

    const char * name() const override {
        switch (gemm_) {
            case cpu_gemm::CPU_GEMM_OPENBLAS: return "cpu-openblas";
            case cpu_gemm::CPU_GEMM_OWN_AVX2: return "cpu-avx2";
            default: return "cpu";
        }
    }
    int          n_threads() const override { return n_threads_; }

    void linear(const float * x, int64_t n, int64_t n_in, const float * w, const float * b, int64_t n_out,
                float * y) override {
#if MB_HAVE_OPENBLAS
        if (gemm_ == cpu_gemm::CPU_GEMM_OPENBLAS) {
            // y = x · wᵀ (+ b broadcast over rows)
            if (b) {
                for (int64_t i = 0; i < n; ++i) std::copy(b, b + n_out, y + i * n_out);
            }
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int) n, (int) n_out, (int) n_in, 1.0f, x,
                        (int) n_in, w, (int) n_in, b ? 1.0f : 0.0f, y, (int) n_out);
            return;
        }
#endif
        gemm_columns(x, n, n_in, n_in, w, b, n_out, y);
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
        scores_.resize((size_t) n);
        float * s = scores_.data();
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
        const int64_t half = (k - 1) / 2;
        const int64_t ck   = c_in * k;
#if MB_HAVE_OPENBLAS
        if (gemm_ == cpu_gemm::CPU_GEMM_OPENBLAS) {
            // im2col: col[c_in·k, t] with col[(c·k + kk), i] = x[c, i + (kk − (k−1)/2)·dilation]
            col_.assign((size_t) (ck * t), 0.0f);
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
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int) c_out, (int) t, (int) ck, 1.0f, w, (int) ck,
                        col_.data(), (int) t, b ? 1.0f : 0.0f, y, (int) t);
            return;
        }
#endif
        // transposed im2col: row i of colᵀ[t, c_in·k] holds x[c, i + (kk − (k−1)/2)·dilation] at c·k + kk,
        // so yᵀ[t, c_out] = colᵀ · wᵀ is a linear over t rows with the weights streamed once
        col_.resize((size_t) (ck * t));
        for (int64_t i = 0; i < t; ++i) {
            float * dst = col_.data() + i * ck;
            for (int64_t c = 0; c < c_in; ++c) {
                const float * xc = x + c * t;
                for (int64_t kk = 0; kk < k; ++kk) {
                    const int64_t src = i + (kk - half) * dilation;
                    dst[c * k + kk]   = (src >= 0 && src < t) ? xc[src] : 0.0f;
                }
            }
        }
        yt_.resize((size_t) (t * c_out));
        gemm_columns(col_.data(), t, ck, ck, w, b, c_out, yt_.data());
        for (int64_t o = 0; o < c_out; ++o) {
            for (int64_t i = 0; i < t; ++i) y[o * t + i] = yt_[(size_t) (i * c_out + o)];
        }
    }

private:
    // y[m, n_out] = x[m, k]·wᵀ + b with threads splitting the output columns in chunks of
    // 16-float (cache-line) multiples, so each weight row is read by exactly one thread
    void gemm_columns(const float * x, int64_t m, int64_t ldx, int64_t k, const float * w, const float * b,
                      int64_t n_out, float * y) {
        const int n_thr = pool_.size();
        if (n_thr == 1 || m * n_out * k < k_min_parallel_fma || n_out < 32) {
            cpu::gemm_nt(x, m, ldx, k, w, b, 0, n_out, y, n_out, isa_);
            return;
        }
        // about 4 chunks per thread, each a multiple of 16 columns, claimed dynamically
        const int64_t chunk    = std::max<int64_t>(64, (n_out + 4 * n_thr - 1) / (4 * n_thr) + 15) / 16 * 16;
        const int     n_chunks = (int) ((n_out + chunk - 1) / chunk);
        const std::function<void(int)> job = [&](int c) {
            const int64_t o0 = c * chunk;
            cpu::gemm_nt(x, m, ldx, k, w, b, o0, std::min(n_out, o0 + chunk), y, n_out, isa_);
        };
        pool_.run(n_chunks, job);
    }

    int                n_threads_;
    cpu_gemm           gemm_;
    cpu::gemm_isa      isa_;        // own kernel's instruction set
    cpu::thread_pool   pool_;
    std::vector<float> col_;        // im2col scratch, grown once to the largest conv
    std::vector<float> yt_;         // transposed conv output scratch
    std::vector<float> scores_;     // attention scores of one query
};

int resolve_threads(int n_threads) {
    return n_threads > 0 ? n_threads : (int) std::max(1u, std::thread::hardware_concurrency());
}

} // namespace

bool cpu_gemm_available(cpu_gemm gemm) {
    return gemm != cpu_gemm::CPU_GEMM_OPENBLAS || MB_HAVE_OPENBLAS;
}

std::unique_ptr<backend> backend_cpu_create_with(int n_threads, cpu_gemm gemm) {
    if (!cpu_gemm_available(gemm)) throw std::runtime_error("this build has no OpenBLAS (cpu_gemm::CPU_GEMM_OPENBLAS)");
    return std::make_unique<cpu_backend>(resolve_threads(n_threads), gemm);
}

std::unique_ptr<backend> backend_cpu_create(int n_threads) {
    return backend_cpu_create_with(n_threads, cpu_gemm::CPU_GEMM_OWN);
}

} // namespace mb
