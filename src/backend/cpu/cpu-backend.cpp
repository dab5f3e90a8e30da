// CPU backend. Batch-one networks multiply a few rows (6–64) by large weight
// matrices, so a plan is bound by reading the weights once: the default kernel
// (cpu-gemm.cpp) streams each weight row once and threads split the output
// columns; OpenBLAS sgemm stays selectable for comparison. The other ops split their rows,
// heads or elements over the same threads (parallel_ranges): every output is computed by the
// same code in the same order whichever thread takes it, so results do not depend on the
// thread count.
// Buffers are host memory; every op that does float arithmetic runs with FTZ/DAZ
// (fp-mode.h) and restores the caller's mode when it returns.
#include "backend/cpu/cpu-backend.h"
#include "backend/motion-finish.h"

#include "backend/cpu/cpu-gemm.h"
#include "backend/cpu/cpu-silu.h"
#include "backend/cpu/fp-mode.h"
#include "backend/cpu/op-profile.h"
#include "backend/cpu/thread-pool.h"
#include "backend/token-select.h"
#include "format/error.h"

#if MB_HAVE_OPENBLAS
#include <cblas.h>
#endif

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <unordered_map>
#include <vector>

#ifndef MB_HAVE_OPENBLAS
#define MB_HAVE_OPENBLAS 0
#endif

namespace mb {
namespace {

// the row loops of attention and LayerNorm also compiled for AVX-512 (16-wide, FMA) and chosen
// when the process starts (GCC's target_clones: an ifunc); one clone runs every row on a given
// CPU, so results still do not depend on the thread count
#if defined(__x86_64__) && defined(__linux__) && defined(__GNUC__) && !defined(__clang__)
#define MB_CPU_CLONES __attribute__((target_clones("arch=x86-64-v4", "default")))
#else
#define MB_CPU_CLONES
#endif

// 16 floats as one value (GCC/Clang vector extension: zmm, or 4 xmm / NEON registers), so the
// lanes' sums stay in vector registers where plain arrays of 16 partial sums did not
typedef float v16f __attribute__((vector_size(64)));
// (by reference: a vector return value draws GCC's -Wpsabi note on builds without AVX-512)
inline void load16(v16f & v, const float * p) {
    std::memcpy(&v, p, sizeof v);
}

// below this many multiply-adds one thread is faster than waking the others
constexpr int64_t k_min_parallel_fma = 1 << 16;
// the work (about one float operation each) a thread takes at least in the other ops
constexpr int64_t k_min_parallel_work = 1 << 14;
// at most this many ranges per thread (dynamic claiming evens out a slow thread; each range costs
// a claim on the pool's shared counter). MB_CPU_RANGES_PER_THREAD=1..16 overrides it, read when a
// backend is made (to measure the trade on many-core hosts)
constexpr int k_ranges_per_thread = 4;
int ranges_per_thread_from_env() {
    const char * e = std::getenv("MB_CPU_RANGES_PER_THREAD");
    if (!e || !*e) return k_ranges_per_thread;
    char *     end = nullptr;
    const long v   = std::strtol(e, &end, 10);
    if (*end != '\0' || v < 1 || v > 16) {
        throw std::runtime_error(std::string("MB_CPU_RANGES_PER_THREAD=") + e + ": expected 1..16");
    }
    return int(v);
}

// host memory: owned (aligned, zeroed) or an alias of caller memory (weights)
class cpu_buffer final : public backend_buffer {
public:
    cpu_buffer(void * p, size_t n, bool owned) : p_(p), n_(n), owned_(owned) {}
    ~cpu_buffer() override {
        if (owned_) std::free(p_);
    }
    size_t size() const override { return n_; }
    void * base() override { return p_; }

private:
    void * p_;
    size_t n_;
    bool   owned_;
};

template <class T> T * raw(bptr<T> p) {
    return p.p;
}

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
    ~cpu_backend() override { prof_.print(n_threads_); }
    cpu_backend(const cpu_backend &)             = delete;
    cpu_backend & operator=(const cpu_backend &) = delete;

    const char * name() const override {
        switch (gemm_) {
            case cpu_gemm::CPU_GEMM_OPENBLAS: return "cpu-openblas";
            case cpu_gemm::CPU_GEMM_OWN_AVX2: return "cpu-avx2";
            default: return "cpu";
        }
    }
    int          n_threads() const override { return n_threads_; }
    bool         supports_weight_type(weight_type t) const override {
        return t == weight_type::WEIGHT_F32 || gemm_ != cpu_gemm::CPU_GEMM_OPENBLAS;
    }

    // ---- memory

    std::unique_ptr<backend_buffer> alloc(size_t bytes) override {
        const size_t n = (bytes + 63) / 64 * 64;
        void *       p = std::aligned_alloc(64, n == 0 ? 64 : n);
        if (!p) throw std::bad_alloc();
        std::memset(p, 0, n == 0 ? 64 : n);
        return std::make_unique<cpu_buffer>(p, bytes, true);
    }
    std::unique_ptr<backend_buffer> alloc_from_host(const void * host, size_t bytes) override {
        return std::make_unique<cpu_buffer>(const_cast<void *>(host), bytes, false);
    }
    void set_bytes(void * dst, const void * host, size_t bytes) override {
        if (tracing_) not_recordable("set");
        join_branches();
        if (bytes) std::memcpy(dst, host, bytes);
    }
    void get_bytes(const void * src, void * host, size_t bytes) override {
        if (tracing_) not_recordable("get");
        join_branches();
        if (bytes) std::memcpy(host, src, bytes);
    }

    // the CPU records nothing and runs `ops`. With MB_CPU_CHECK_RECORDINGS=1 (tests) it checks
    // what a recording backend relies on: every run of a key issues the ops of its first run, with
    // the same arguments (addresses included), and no set() or get(). A recording backend (CUDA
    // graphs) would replay the first run instead, silently
    void run_recorded(uint64_t key, const std::function<void()> & ops) override {
        if (!check_recordings_ || tracing_) {
            ops();
            return;
        }
        trace_   = 14695981039346656037ull;    // FNV-1a
        tracing_ = true;
        try {
            ops();
        } catch (...) {
            tracing_ = false;
            throw;
        }
        tracing_ = false;
        if (!branches_.empty()) {
            branches_.clear();
            mb::fail(mb::status::internal, "cpu: a recording ended with a branch not joined");
        }
        const auto [at, first] = recorded_.try_emplace(key, trace_);
        if (!first && at->second != trace_) {
            char k[32];
            std::snprintf(k, sizeof k, "%016llx", (unsigned long long) key);
            mb::fail(mb::status::internal, std::string("cpu: recording key ") + k + " issued other ops or arguments " +
                                               "than its first run (a recording backend would replay the first)");
        }
    }

    // a branch runs in place; with MB_CPU_CHECK_RECORDINGS=1 it runs at its join instead (set and
    // get join every branch, as on a GPU), after the ops issued since, so that an op that reads
    // what a branch writes (or writes what it reads) before the join changes the results the
    // tests compare, as it may on a GPU. A recording must join its branches before it ends (its
    // ops, which the branch may refer to, are gone after it)
    int branch(const std::function<void()> & ops) override {
        if (!check_recordings_) {
            ops();
            return -1;
        }
        branches_.emplace(next_branch_, ops);
        return next_branch_++;
    }
    void join_branch(int id) override {
        const auto it = branches_.find(id);
        if (it == branches_.end()) return;
        const std::function<void()> ops = std::move(it->second);
        branches_.erase(it);
        ops();
    }
    void join_branches() {
        while (!branches_.empty()) join_branch(branches_.begin()->first);
    }

    // ---- scratch: sized here, when a state is created; the ops below only grow it for
    // operands larger than any state declared (direct callers such as tests)

    void reserve_conv1d(int64_t c_in, int64_t t, int64_t c_out, int64_t k) override {
        grow(col_, c_in * k * t);
        grow(yt_, t * c_out);
    }
    void reserve_attention(int64_t n) override { grow(scores_, score_row(n) * max_ranges()); }
    void reserve_remask(int64_t m) override { grow(order_, m * max_ranges()); }
    void reserve_motion_finish(int64_t frames) override { grow(local_, frames * k_finish_local_dim * max_ranges()); }

    // ---- elementwise

    void fill_f32(int64_t n, float v, bptr<float> y) override {
        note("fill_f32", n, v, y);
        const cpu::op_profile::scope ps(prof_, cpu::op_kind::ELEMENTWISE);
        std::fill(raw(y), raw(y) + n, v);
    }
    void fill_i32(int64_t n, int32_t v, bptr<int32_t> y) override {
        note("fill_i32", n, v, y);
        const cpu::op_profile::scope ps(prof_, cpu::op_kind::ELEMENTWISE);
        std::fill(raw(y), raw(y) + n, v);
    }
    void add(bptr<const float> a, bptr<const float> b, int64_t n, bptr<float> y, int64_t n_b) override {
        note("add", a, b, n, y, n_b);
        const cpu::op_profile::scope ps(prof_, cpu::op_kind::ELEMENTWISE);
        const cpu::fp_flush_scope fp;
        const float * pa = raw(a);
        const float * pb = raw(b);
        float *       py = raw(y);
        const int64_t m  = n_b > 0 ? n_b : n;
        // b repeats every m values: contiguous runs of it (an i % m per value kept the loop scalar)
        parallel_ranges(n, 1, [=](int64_t i0, int64_t i1, int) {
            for (int64_t i = i0, j = i0 % m; i < i1; j = 0) {
                const int64_t len = std::min(i1 - i, m - j);
                const float * ra  = pa + i;
                const float * rb  = pb + j;
                float *       ry  = py + i;
                for (int64_t c = 0; c < len; ++c) ry[c] = ra[c] + rb[c];
                i += len;
            }
        });
    }
    void relu(bptr<const float> x, int64_t n, bptr<float> y) override {
        note("relu", x, n, y);
        const cpu::op_profile::scope ps(prof_, cpu::op_kind::ELEMENTWISE);
        const float * px = raw(x);
        float *       py = raw(y);
        parallel_ranges(n, 1, [=](int64_t i0, int64_t i1, int) {
            for (int64_t i = i0; i < i1; ++i) py[i] = px[i] < 0.0f ? 0.0f : px[i];
        });
    }
    void leaky_relu(bptr<const float> x, int64_t n, float slope, bptr<float> y) override {
        note("leaky_relu", x, n, slope, y);
        const cpu::op_profile::scope ps(prof_, cpu::op_kind::ELEMENTWISE);
        const cpu::fp_flush_scope fp;
        const float * px = raw(x);
        float *       py = raw(y);
        parallel_ranges(n, 1, [=](int64_t i0, int64_t i1, int) {
            for (int64_t i = i0; i < i1; ++i) py[i] = px[i] < 0.0f ? px[i] * slope : px[i];
        });
    }

    void silu(bptr<const float> x, int64_t n, bptr<float> y) override {
        note("silu", x, n, y);
        const cpu::op_profile::scope ps(prof_, cpu::op_kind::ELEMENTWISE);
        const cpu::fp_flush_scope fp;
        const float * px = raw(x);
        float *       py = raw(y);
        // std::exp costs about 16 plain operations, the 16-wide one about 2 per value
        const bool vector = vector_exp();
        parallel_ranges(n, vector ? 2 : 16, [=](int64_t i0, int64_t i1, int) {
            cpu::silu_f32(px + i0, i1 - i0, py + i0, vector);
        });
    }

    // ---- layout

    void copy_rows(bptr<const float> x, int64_t ldx, int64_t n, int64_t d, bptr<float> y, int64_t ldy) override {
        note("copy_rows", x, ldx, n, d, y, ldy);
        const cpu::op_profile::scope ps(prof_, cpu::op_kind::LAYOUT);
        for (int64_t i = 0; i < n; ++i) std::memcpy(raw(y) + i * ldy, raw(x) + i * ldx, size_t(d) * sizeof(float));
    }
    void where_rows(bptr<const uint8_t> sel, bptr<const float> a, int64_t lda, bptr<const float> b, int64_t ldb,
                    int64_t n, int64_t d, bptr<float> y, int64_t ldy) override {
        note("where_rows", sel, a, lda, b, ldb, n, d, y, ldy);
        const cpu::op_profile::scope ps(prof_, cpu::op_kind::LAYOUT);
        for (int64_t i = 0; i < n; ++i) {
            const float * src = raw(sel)[i] ? raw(a) + i * lda : raw(b) + i * ldb;
            std::memcpy(raw(y) + i * ldy, src, size_t(d) * sizeof(float));
        }
    }
    void scatter_rows(bptr<const float> x, bptr<const int32_t> idx, int64_t k, int64_t d, bptr<float> y) override {
        note("scatter_rows", x, idx, k, d, y);
        const cpu::op_profile::scope ps(prof_, cpu::op_kind::LAYOUT);
        for (int64_t i = 0; i < k; ++i) {
            std::memcpy(raw(y) + int64_t(raw(idx)[i]) * d, raw(x) + i * d, size_t(d) * sizeof(float));
        }
    }
    // ---- motion: the host's functions (backend/motion-finish.h), lanes over the threads

    bool has_motion_ops() const override { return true; }
    void root_conditions(bptr<const float> y, int64_t n_batch, int64_t frames, bptr<const float> stats,
                         bptr<const float> last, bptr<const uint8_t> has_last, bptr<float> root_cond,
                         bptr<float> ext) override {
        note("root_conditions", y, n_batch, frames, stats, last, has_last, root_cond, ext);
        const cpu::op_profile::scope ps(prof_, cpu::op_kind::LAYOUT);
        if (frames < 2) throw std::runtime_error("cpu root_conditions: fewer than 2 frames a lane");
        parallel_ranges(n_batch, frames * 16, [=](int64_t l0, int64_t l1, int) {
            host_root_conditions(raw(y) + l0 * frames * 5, l1 - l0, frames, raw(stats), raw(last) + l0 * 2,
                                 raw(has_last) + l0, raw(root_cond) + l0 * frames * 4, raw(ext) + l0 * frames * 2);
        });
    }
    void motion_finish(bptr<const float> x, int64_t n_batch, int64_t frames, bptr<const float> scale,
                       bptr<const float> mean, bptr<const float> ref, bptr<const int32_t> parents,
                       bptr<const float> offsets, bptr<float> global, bptr<float> positions,
                       bptr<float> local_xyzw) override {
        note("motion_finish", x, n_batch, frames, scale, mean, ref, parents, offsets, global, positions, local_xyzw);
        const cpu::op_profile::scope ps(prof_, cpu::op_kind::LAYOUT);
        // lanes over threads, each range with its own unnormalised-feature scratch (slot)
        const int64_t per = frames * k_finish_local_dim;
        grow(local_, per * max_ranges());
        float * pl = local_.data();
        parallel_ranges(n_batch, frames * 4096, [=](int64_t l0, int64_t l1, int slot) {
            host_motion_finish(raw(x) + l0 * frames * k_finish_local_dim, l1 - l0, frames, raw(scale), raw(mean),
                               raw(ref) + l0 * 3, raw(parents), raw(offsets), raw(global) + l0 * frames * k_finish_global_dim,
                               raw(positions) + l0 * frames * k_finish_joints * 3,
                               raw(local_xyzw) + l0 * frames * k_finish_joints * 4, pl + slot * per);
        });
    }

    void transpose(bptr<const float> x, int64_t r, int64_t c, bptr<float> y, int64_t n_batch, int64_t ldy) override {
        note("transpose", x, r, c, y, n_batch, ldy);
        const cpu::op_profile::scope ps(prof_, cpu::op_kind::LAYOUT);
        // by output rows (lane, j): each writes r contiguous values
        const float * px = raw(x);
        float *       py = raw(y);
        const int64_t ld = ldy > 0 ? ldy : r;
        parallel_ranges(n_batch * c, r, [=](int64_t q0, int64_t q1, int) {
            for (int64_t q = q0; q < q1; ++q) {
                const int64_t l = q / c, j = q % c;
                const float * xl = px + l * r * c + j;
                float *       yl = py + (l * c + j) * ld;
                for (int64_t i = 0; i < r; ++i) yl[i] = xl[i * c];
            }
        });
    }
    void mask_cols(int64_t c, int64_t t, int64_t n_valid, bptr<float> x) override {
        note("mask_cols", c, t, n_valid, x);
        const cpu::op_profile::scope ps(prof_, cpu::op_kind::LAYOUT);
        if (n_valid >= t) return;
        const int64_t v = std::max<int64_t>(0, n_valid);
        for (int64_t i = 0; i < c; ++i) std::fill(raw(x) + i * t + v, raw(x) + (i + 1) * t, 0.0f);
    }
    void upsample2(bptr<const float> x, int64_t c, int64_t t, bptr<float> y) override {
        note("upsample2", x, c, t, y);
        const cpu::op_profile::scope ps(prof_, cpu::op_kind::LAYOUT);
        const float * px = raw(x);
        float *       py = raw(y);
        for (int64_t i = 0; i < c; ++i)
            for (int64_t j = 0; j < t; ++j) py[i * 2 * t + 2 * j] = py[i * 2 * t + 2 * j + 1] = px[i * t + j];
    }
    void embed_heads(bptr<const float> table, int64_t n_head, int64_t rows_per_head, int64_t d,
                     bptr<const int32_t> idx, int64_t n, bptr<float> y) override {
        note("embed_heads", table, n_head, rows_per_head, d, idx, n, y);
        const cpu::op_profile::scope ps(prof_, cpu::op_kind::LAYOUT);
        const float *   pt = raw(table);
        const int32_t * pi = raw(idx);
        float *         py = raw(y);
        parallel_ranges(n, d, [=](int64_t i0, int64_t i1, int) {
            for (int64_t i = i0; i < i1; ++i) {
                const float * e = pt + ((i % n_head) * rows_per_head + pi[i]) * d;
                std::memcpy(py + i * d, e, size_t(d) * sizeof(float));
            }
        });
    }
    void replace_frames(bptr<const float> src, bptr<const uint8_t> sel, int64_t t, int64_t f, int64_t w,
                        bptr<float> h, int64_t n_batch) override {
        note("replace_frames", src, sel, t, f, w, h, n_batch);
        const cpu::op_profile::scope ps(prof_, cpu::op_kind::LAYOUT);
        const int64_t lane = t * f * w;     // elements of one lane of h and of src
        for (int64_t l = 0; l < n_batch; ++l) {
            float *         ph = raw(h) + l * lane;
            const uint8_t * ps = raw(sel) + l * t * f;
            for (int64_t g = 0; g < t * f; ++g) {
                if (!ps[g]) continue;
                const int64_t p = g / f, j = g % f;
                const float * s = raw(src) + l * lane + g * w;
                for (int64_t k = 0; k < w; ++k) ph[(j * w + k) * t + p] = s[k];
            }
        }
    }

    // ---- network layers

    void linear(bptr<const float> xb, int64_t n, int64_t n_in, bptr<const float> wb, bptr<const float> bb,
                int64_t n_out, bptr<float> yb) override {
        note("linear", xb, n, n_in, wb, bb, n_out, yb);
        const cpu::fp_flush_scope fp;
        const float * x = raw(xb);
        const float * w = raw(wb);
        const float * b = raw(bb);
        float *       y = raw(yb);
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
        gemm_columns(x, n, n_in, n_in, w, weight_type::WEIGHT_F32, b, n_out, y);
    }

    void linear(bptr<const float> xb, int64_t n, int64_t n_in, bweight w, bptr<const float> bb, int64_t n_out,
                bptr<float> yb) override {
        if (w.type == weight_type::WEIGHT_F32) {
            linear(xb, n, n_in, bptr<const float>(static_cast<const float *>(w.p)), bb, n_out, yb);    // noted there
            return;
        }
        note("linear", xb, n, n_in, w, bb, n_out, yb);
        check_typed(w.type, n_in);
        const cpu::fp_flush_scope fp;
        gemm_columns(raw(xb), n, n_in, n_in, w.p, w.type, raw(bb), n_out, raw(yb));
    }

    void add_layer_norm(bptr<float> xb, bptr<const float> rb, int64_t n, int64_t d, bptr<const float> gb,
                        bptr<const float> bb, float eps) override {
        note("add_layer_norm", xb, rb, n, d, gb, bb, eps);
        const cpu::op_profile::scope ps(prof_, cpu::op_kind::LAYER_NORM);
        const cpu::fp_flush_scope fp;
        float *       x = raw(xb);
        const float * r = raw(rb);
        const float * g = raw(gb);
        const float * b = raw(bb);
        // about 5 operations per value (residual, mean, variance, normalise), rows split over threads
        parallel_ranges(n, 5 * d, [=](int64_t i0, int64_t i1, int) { layer_norm_rows(x, r, i0, i1, d, g, b, eps); });
    }
    // Σ f(j) for j < n in double, 16 partial sums (lane j % 16) added pairwise at the end: one
    // running sum is a serial chain of dependent adds (it made LayerNorm ~5 % of a Q8_0 plan)
    template <class F> static double sum16(const F & f, int64_t n) {
        double  p[16] = {};
        int64_t j     = 0;
        for (; j + 16 <= n; j += 16) {
            for (int l = 0; l < 16; ++l) p[l] += f(j + l);
        }
        for (; j < n; ++j) p[j % 16] += f(j);
        for (int w = 8; w > 0; w /= 2) {
            for (int l = 0; l < w; ++l) p[l] += p[l + w];
        }
        return p[0];
    }
    MB_CPU_CLONES static void layer_norm_rows(float * x, const float * r, int64_t i0, int64_t i1, int64_t d, const float * g,
                                const float * b, float eps) {
        for (int64_t i = i0; i < i1; ++i) {
            float * row = x + i * d;
            if (r) {
                const float * rr = r + i * d;
                for (int64_t j = 0; j < d; ++j) row[j] += rr[j];
            }
            double mean = sum16([row](int64_t j) { return (double) row[j]; }, d) / (double) d;
            double var  = sum16([row, mean](int64_t j) {
                const double c = row[j] - mean;
                return c * c;
            }, d) / (double) d;
            const float inv = (float) (1.0 / std::sqrt(var + (double) eps));
            for (int64_t j = 0; j < d; ++j) {
                row[j] = ((row[j] - (float) mean) * inv) * g[j] + b[j];
            }
        }
    }

    void attention(bptr<const float> qkvb, int64_t n, int64_t d, int64_t n_head, bptr<const uint8_t> maskb,
                   bptr<float> outb, int64_t n_batch) override {
        note("attention", qkvb, n, d, n_head, maskb, outb, n_batch);
        const cpu::op_profile::scope ps(prof_, cpu::op_kind::ATTENTION);
        const cpu::fp_flush_scope fp;
        // one item per (lane, head, query row), about 2·n·d/n_head multiply-adds each; every range
        // has its own score row (slot)
        const int64_t ns = score_row(n);
        grow(scores_, ns * max_ranges());
        const float *   qkv   = raw(qkvb);
        const uint8_t * mask  = maskb ? raw(maskb) : nullptr;
        float *         out   = raw(outb);
        float *         s     = scores_.data();
        const bool      vector = vector_exp();
        parallel_ranges(n_batch * n_head * n, 2 * n * (d / n_head), [=](int64_t q0, int64_t q1, int slot) {
            for (int64_t q = q0; q < q1; ++q) {
                const int64_t l = q / (n_head * n), h = (q / n) % n_head, i = q % n;
                attention_row(qkv + l * n * 3 * d, n, d, n_head, h, i, mask ? mask + l * n : nullptr,
                              out + l * n * d, s + slot * ns, vector);
            }
        });
    }
    // Σ a[c]·b[c] in 16 partial sums (lane c % 16) added pairwise at the end: the compiler keeps
    // them in vector registers (one running sum is a serial chain it may not reorder; it was most
    // of attention's time). The order is fixed, so results do not depend on the thread split
    static float dot16(const float * a, const float * b, int64_t n) {
        v16f    p = {};
        int64_t c = 0;
        for (; c + 16 <= n; c += 16) {
            v16f x, y;
            load16(x, a + c);
            load16(y, b + c);
            p += x * y;
        }
        for (; c < n; ++c) p[c % 16] += a[c] * b[c];
        for (int w = 8; w > 0; w /= 2) {
            for (int l = 0; l < w; ++l) p[l] += p[l + w];
        }
        return p[0];
    }

    // output row i of head h of one lane; s: n floats of scratch
    MB_CPU_CLONES static void attention_row(const float * qkv, int64_t n, int64_t d, int64_t n_head, int64_t h, int64_t i,
                              const uint8_t * key_mask, float * out, float * s, bool vector_exp) {
        const int64_t dh    = d / n_head;
        const float   scale = 1.0f / std::sqrt((float) dh);
        const float * q     = qkv + i * 3 * d + h * dh;
        float         mx    = -std::numeric_limits<float>::infinity();
        for (int64_t j = 0; j < n; ++j) {
            if (key_mask && key_mask[j]) {
                s[j] = -std::numeric_limits<float>::infinity();
                continue;
            }
            s[j] = dot16(q, qkv + j * 3 * d + d + h * dh, dh) * scale;
            mx   = std::max(mx, s[j]);
        }
        // e^(s − max) for the row at once (16-wide where the CPU has AVX-512: one std::exp call
        // a key was most of attention's time at B = 8), masked keys 0
        for (int64_t j = 0; j < n; ++j) s[j] -= mx;
        cpu::exp_f32(s, n, s, vector_exp);
        float sum = 0.0f;
        for (int64_t j = 0; j < n; ++j) {
            if (key_mask && key_mask[j]) s[j] = 0.0f;
            sum += s[j];
        }
        for (int64_t j = 0; j < n; ++j) s[j] /= sum;
        // 16 output values at a time over all keys (they stay in registers; was: the whole output
        // row loaded and stored once per key), each summed over the keys in order as before
        float *       o  = out + i * d + h * dh;
        const float * v0 = qkv + 2 * d + h * dh;
        int64_t       c0 = 0;
        for (; c0 + 16 <= dh; c0 += 16) {
            v16f a = {};
            for (int64_t j = 0; j < n; ++j) {
                v16f v;
                load16(v, v0 + j * 3 * d + c0);
                a += s[j] * v;
            }
            std::memcpy(o + c0, &a, sizeof a);
        }
        for (; c0 < dh; ++c0) {
            float a = 0.0f;
            for (int64_t j = 0; j < n; ++j) a += s[j] * v0[j * 3 * d + c0];
            o[c0] = a;
        }
    }

    void conv1d(bptr<const float> xb, int64_t c_in, int64_t t, bptr<const float> wb, bptr<const float> bb,
                int64_t c_out, int64_t k, int64_t dilation, bptr<float> yb, int64_t n_batch) override {
        conv1d(xb, c_in, t, bweight(wb), bb, c_out, k, dilation, yb, n_batch);    // noted there
    }

    void conv1d(bptr<const float> xb, int64_t c_in, int64_t t, bweight wt, bptr<const float> bb, int64_t c_out,
                int64_t k, int64_t dilation, bptr<float> yb, int64_t n_batch) override {
        note("conv1d", xb, c_in, t, wt, bb, c_out, k, dilation, yb, n_batch);
        const cpu::op_profile::scope ps(prof_, cpu::op_kind::CONV1D);
        if (wt.type != weight_type::WEIGHT_F32) check_typed(wt.type, c_in * k);
        const cpu::fp_flush_scope fp;
        const float * x    = raw(xb);
        const float * b    = raw(bb);
        float *       y    = raw(yb);
        const int64_t half = (k - 1) / 2;
        const int64_t ck   = c_in * k;
#if MB_HAVE_OPENBLAS
        if (gemm_ == cpu_gemm::CPU_GEMM_OPENBLAS) {
            const float * w = static_cast<const float *>(wt.p);   // F32: check_typed refuses other types here
            for (int64_t l = 0; l < n_batch; ++l) conv1d_blas(x + l * c_in * t, c_in, t, w, b, c_out, k, dilation, y + l * c_out * t);
            return;
        }
#endif
        // transposed im2col: row i of colᵀ[t, c_in·k] holds x[c, i + (kk − (k−1)/2)·dilation] at c·k + kk,
        // so yᵀ[t, c_out] = colᵀ · wᵀ is a linear over t rows with the weights streamed once; the
        // lanes' rows stack ([n_batch·t, c_in·k]), so the weights are streamed once for all lanes
        grow(col_, n_batch * ck * t);
        float * col = col_.data();
        std::optional<cpu::op_profile::scope> glue(std::in_place, prof_, cpu::op_kind::CONV_GLUE);
        parallel_ranges(n_batch * t, ck, [=](int64_t r0, int64_t r1, int) {
            // per tap kk one pass over the channels with the bounds test hoisted out (was: tested
            // per value, most of conv1d's glue at B = 8)
            for (int64_t r = r0; r < r1; ++r) {
                const int64_t l = r / t, i = r % t;
                float *       dst = col + r * ck;
                const float * xl  = x + l * c_in * t;
                for (int64_t kk = 0; kk < k; ++kk) {
                    const int64_t src = i + (kk - half) * dilation;
                    float *       d   = dst + kk;
                    if (src < 0 || src >= t) {
                        for (int64_t c = 0; c < c_in; ++c) d[c * k] = 0.0f;
                    } else {
                        const float * xs = xl + src;
                        for (int64_t c = 0; c < c_in; ++c) d[c * k] = xs[c * t];
                    }
                }
            }
        });
        grow(yt_, n_batch * t * c_out);
        glue.reset();
        gemm_columns(col, n_batch * t, ck, ck, wt.p, wt.type, b, c_out, yt_.data());
        glue.emplace(prof_, cpu::op_kind::CONV_GLUE);
        const float * yt = yt_.data();
        parallel_ranges(n_batch * c_out, t, [=](int64_t q0, int64_t q1, int) {
            for (int64_t q = q0; q < q1; ++q) {
                const int64_t l = q / c_out, o = q % c_out;
                const float * yl = yt + l * t * c_out + o;
                for (int64_t i = 0; i < t; ++i) y[q * t + i] = yl[i * c_out];
            }
        });
    }

#if MB_HAVE_OPENBLAS
    void conv1d_blas(const float * x, int64_t c_in, int64_t t, const float * w, const float * b, int64_t c_out,
                     int64_t k, int64_t dilation, float * y) {
        const int64_t half = (k - 1) / 2;
        const int64_t ck   = c_in * k;
        {
            // im2col: col[c_in·k, t] with col[(c·k + kk), i] = x[c, i + (kk − (k−1)/2)·dilation]
            grow(col_, ck * t);
            std::fill(col_.begin(), col_.begin() + ck * t, 0.0f);
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
        }
    }
#endif

    // ---- sampling

    void sample_codes(bptr<const float> logits, int64_t m, int64_t n_code, bptr<const float> u, bptr<int32_t> tokens,
                      bptr<float> prob) override {
        note("sample_codes", logits, m, n_code, u, tokens, prob);
        const cpu::op_profile::scope ps(prof_, cpu::op_kind::SAMPLING);
        const cpu::fp_flush_scope fp;
        const float * pl = raw(logits);
        const float * pu = u ? raw(u) : nullptr;
        int32_t *     pt = raw(tokens);
        float *       pp = raw(prob);
        // rows of n_code logits: argmax, max, and an exp each (Gumbel: two logs more)
        parallel_ranges(m, 20 * n_code, [=](int64_t r0, int64_t r1, int) {
            for (int64_t r = r0; r < r1; ++r) {
                const float * l  = pl + r * n_code;
                const int32_t t  = pu ? gumbel_argmax(l, pu + r * n_code, n_code) : argmax_first(l, n_code);
                float         mx = l[0];
                for (int64_t c = 1; c < n_code; ++c) mx = std::max(mx, l[c]);
                float sum = 0.0f;
                for (int64_t c = 0; c < n_code; ++c) sum += std::exp(l[c] - mx);
                pt[r] = t;
                pp[r] = std::exp(l[t] - mx) * (1.0f / sum);
            }
        });
    }

    void remask_lowest(bptr<const float> prob, int64_t m, int64_t n_mask, int32_t mask_id,
                       bptr<int32_t> tokens, int64_t n_batch) override {
        note("remask_lowest", prob, m, n_mask, mask_id, tokens, n_batch);
        const cpu::op_profile::scope ps(prof_, cpu::op_kind::SAMPLING);
        // lanes over threads, each range with its own sort scratch (slot)
        grow(order_, m * max_ranges());
        const float * pp = raw(prob);
        int32_t *     pt = raw(tokens);
        int32_t *     po = order_.data();
        parallel_ranges(n_batch, 8 * m, [=](int64_t l0, int64_t l1, int slot) {
            for (int64_t l = l0; l < l1; ++l) remask_lane(pp + l * m, m, n_mask, mask_id, pt + l * m, po + slot * m);
        });
    }
    static void remask_lane(const float * p, int64_t m, int64_t n_mask, int32_t mask_id, int32_t * tokens,
                            int32_t * order) {
        // ascending by probability, lower index first on ties, NaN last (torch.sort); the
        // index tie-break makes std::sort's order unique
        const auto first = order, last = order + m;
        std::iota(first, last, 0);
        const auto key = [p](int32_t i) { return std::isnan(p[i]) ? INFINITY : p[i]; };
        std::sort(first, last, [&key](int32_t a, int32_t b) {
            const float ka = key(a), kb = key(b);
            return ka < kb || (ka == kb && a < b);
        });
        for (int64_t k = 0; k < n_mask && k < m; ++k) tokens[order[k]] = mask_id;
    }

    size_t scratch_bytes() const {
        return col_.size() * sizeof(float) + yt_.size() * sizeof(float) + scores_.size() * sizeof(float) +
               order_.size() * sizeof(int32_t) + local_.size() * sizeof(float) + pack_.size();
    }

private:
    // run_recorded's check: the op's name and arguments into trace_ while a recorded run issues it
    template <class... A> void note(const char * op, const A &... a) {
        if (!tracing_) return;
        mix(op, std::strlen(op));
        (mix_arg(a), ...);
    }
    void mix(const void * p, size_t n) {
        const auto * c = static_cast<const unsigned char *>(p);
        for (size_t i = 0; i < n; ++i) trace_ = (trace_ ^ c[i]) * 1099511628211ull;
    }
    template <class T> void mix_arg(const bptr<T> & v) { mix(&v.p, sizeof v.p); }
    void mix_arg(const bweight & w) {
        mix(&w.p, sizeof w.p);
        mix(&w.type, sizeof w.type);
    }
    template <class T> void mix_arg(const T & v) {
        static_assert(std::is_arithmetic_v<T>, "a scalar argument");
        mix(&v, sizeof v);
    }
    [[noreturn]] static void not_recordable(const char * what) {
        mb::fail(mb::status::internal, std::string("cpu: ") + what + "() inside a recorded run (a recording backend " +
                                           "cannot hold it)");
    }

    const bool                        check_recordings_ = [] {
        const char * v = std::getenv("MB_CPU_CHECK_RECORDINGS");
        return v && std::strcmp(v, "1") == 0;
    }();
    bool                              tracing_ = false;
    uint64_t                          trace_   = 0;
    std::map<int, std::function<void()>> branches_;    // branch(): those not yet joined (checking)
    int                               next_branch_ = 0;
    std::unordered_map<uint64_t, uint64_t> recorded_;     // key → its first run's trace

    // the 16-wide exponential (cpu-silu.h) on the AVX-512 levels, std::exp elsewhere
    bool vector_exp() const { return isa_ >= cpu::gemm_isa::GEMM_ISA_AVX512 && isa_ != cpu::gemm_isa::GEMM_ISA_NEON; }

    // floats of one range's attention score row: whole cache lines, so two threads' rows never
    // share one (they did for short sequences)
    static int64_t score_row(int64_t n) { return (n + 15) / 16 * 16; }

    // the most ranges parallel_ranges makes (each may own a slot of scratch)
    int max_ranges() const { return pool_.size() == 1 ? 1 : ranges_per_thread_ * pool_.size(); }

    // f(i0, i1, slot) over [0, n) in contiguous ranges on the pool's threads, each range at least
    // k_min_parallel_work / cost items (cost: work per item), slot < max_ranges() the range's own
    // index (for scratch); one range, on the caller, when the work is small
    template <class F> void parallel_ranges(int64_t n, int64_t cost, const F & f) {
        if (n <= 0) return;
        const int64_t min_items = std::max<int64_t>(1, k_min_parallel_work / std::max<int64_t>(1, cost));
        const int64_t n_ranges  = std::min<int64_t>(max_ranges(), n / min_items);
        if (n_ranges <= 1) {
            f(int64_t(0), n, 0);
            return;
        }
        const int64_t per = (n + n_ranges - 1) / n_ranges;
        // the operands behind one reference: the job fits std::function's local storage (no allocation)
        const struct {
            const F * f;
            int64_t   n, per;
        } a{&f, n, per};
        const std::function<void(int)> job = [&a](int c) {
            const int64_t i0 = c * a.per;
            (*a.f)(i0, std::min(a.n, i0 + a.per), c);
        };
        pool_.run((int) ((n + per - 1) / per), job);
    }

    // a reduced weight type runs on the own kernel only, Q8_0 rows in whole blocks
    void check_typed(weight_type t, int64_t row) const {
        if (gemm_ == cpu_gemm::CPU_GEMM_OPENBLAS) {
            throw std::runtime_error(std::string("cpu-openblas runs F32 weights only, not ") + weight_type_name(t));
        }
        if (t == weight_type::WEIGHT_Q8_0 && row % 32 != 0) {
            throw std::runtime_error("Q8_0 weight rows of " + std::to_string(row) +
                                     " values are not whole 32-value blocks");
        }
    }

    // at least n elements (never shrinks)
    template <class T> static void grow(std::vector<T> & v, int64_t n) {
        if (n > 0 && size_t(n) > v.size()) v.resize(size_t(n));
    }

    // y[m, n_out] = x[m, k]·wᵀ + b with threads splitting the output columns in chunks of
    // 16-float (cache-line) multiples, so each weight row is read by exactly one thread
    void gemm_columns(const float * x, int64_t m, int64_t ldx, int64_t k, const void * w, weight_type wt,
                      const float * b, int64_t n_out, float * y) {
        const cpu::op_profile::scope ps(prof_, wt == weight_type::WEIGHT_BF16   ? cpu::op_kind::LINEAR_BF16
                                               : wt == weight_type::WEIGHT_Q8_0 ? cpu::op_kind::LINEAR_Q8_0
                                                                                : cpu::op_kind::LINEAR_F32);
        // the dot-product levels read x packed (bfloat16 / int8 blocks): once here for all threads
        const int64_t pack_bytes = cpu::gemm_pack_bytes(m, k, wt, isa_);
        const void *  pack       = nullptr;
        if (pack_bytes > 0) {
            const cpu::op_profile::scope pp(prof_, cpu::op_kind::GEMM_PACK);
            // 64-byte aligned (the tile loads read 1 KiB blocks: a misaligned one splits every row)
            grow(pack_, pack_bytes + 64);
            uint8_t * pk = pack_.data() + ((64 - (reinterpret_cast<uintptr_t>(pack_.data()) & 63)) & 63);
            // in units over the threads (AMX: 16 rows × 32 values, so a batch-one op's few rows
            // split too instead of packing on the caller while the others wait). A unit counts as
            // 8 operations a value: x was written by every thread in the op before, so the pack
            // mostly waits for other cores' caches (16-core host: 1.1 ms a plan at 16 threads against
            // 0.64 ms at one with the count of 2)
            const int64_t units = cpu::gemm_pack_units(m, k, wt, isa_);
            parallel_ranges(units, std::max<int64_t>(1, 8 * m * k / units), [&](int64_t u0, int64_t u1, int) {
                cpu::gemm_pack_range(x, m, ldx, k, wt, isa_, pk, u0, u1);
            });
            pack = pk;
        }
        const int n_thr = pool_.size();
        if (n_thr == 1 || m * n_out * k < k_min_parallel_fma || n_out < 32) {
            cpu::gemm_nt_packed(x, m, ldx, k, w, wt, b, 0, n_out, y, n_out, isa_, pack);
            return;
        }
        // about ranges_per_thread_ chunks per thread, each a multiple of 16 columns (whole cache lines of y), claimed
        // dynamically; at least 64 columns where that still gives every thread one (fewer wake-ups),
        // 16 on many threads
        const int64_t per_thr  = (n_out + ranges_per_thread_ * n_thr - 1) / (ranges_per_thread_ * n_thr);
        const int64_t min_cols = n_out >= 64 * n_thr ? 64 : 16;
        const int64_t chunk    = (std::max<int64_t>(min_cols, per_thr) + 15) / 16 * 16;
        const int     n_chunks = (int) ((n_out + chunk - 1) / chunk);
        // the operands behind one reference: the lambda fits std::function's local storage, so a
        // call allocates nothing (capturing each operand would allocate on every op)
        const struct {
            const float * x;
            const void *  w;
            const void *  pack;
            const float * b;
            float *       y;
            int64_t       m, ldx, k, n_out, chunk;
            weight_type   wt;
            cpu::gemm_isa isa;
        } a{x, w, pack, b, y, m, ldx, k, n_out, chunk, wt, isa_};
        const std::function<void(int)> job = [&a](int c) {
            const int64_t o0 = c * a.chunk;
            cpu::gemm_nt_packed(a.x, a.m, a.ldx, a.k, a.w, a.wt, a.b, o0, std::min(a.n_out, o0 + a.chunk), a.y, a.n_out,
                                a.isa, a.pack);
        };
        pool_.run(n_chunks, job);
    }

    int                  n_threads_;
    int                  ranges_per_thread_ = ranges_per_thread_from_env();
    cpu_gemm             gemm_;
    cpu::gemm_isa        isa_;        // own kernel's instruction set
    cpu::thread_pool     pool_;
    std::vector<float>   col_;        // im2col scratch [t, c_in·k] of the largest conv reserved
    std::vector<float>   yt_;         // transposed conv output scratch [t, c_out]
    std::vector<float>   scores_;     // attention scores of one query [n]
    std::vector<int32_t> order_;      // re-masking sort scratch [m]
    std::vector<float>   local_;      // motion_finish's unnormalised features [frames, 413] a slot
    std::vector<uint8_t> pack_;       // activations packed for the dot-product kernels
    cpu::op_profile      prof_;       // MB_CPU_PROFILE=1: time per op kind (op-profile.h)
};

int resolve_threads(int n_threads) {
    return n_threads > 0 ? n_threads : (int) std::max(1u, std::thread::hardware_concurrency());
}

} // namespace

bool cpu_gemm_available(cpu_gemm gemm) {
    return gemm != cpu_gemm::CPU_GEMM_OPENBLAS || MB_HAVE_OPENBLAS;
}

std::unique_ptr<backend> backend_cpu_create_with(int n_threads, cpu_gemm gemm) {
    if (!cpu_gemm_available(gemm)) {
        throw error(status::not_implemented, "this build has no OpenBLAS (cpu_gemm::CPU_GEMM_OPENBLAS)");
    }
    return std::make_unique<cpu_backend>(resolve_threads(n_threads), gemm);
}

size_t cpu_backend_scratch_bytes(const backend & be) {
    const auto * cpu = dynamic_cast<const cpu_backend *>(&be);
    return cpu ? cpu->scratch_bytes() : 0;
}

std::unique_ptr<backend> backend_cpu_create(int n_threads) {
    return backend_cpu_create_with(n_threads, cpu_gemm::CPU_GEMM_OWN);
}

} // namespace mb
