// wall time per op kind of one CPU backend, to find what does not shrink with more threads
// (issue 14: per-op fixed costs at 16 threads). Off unless MB_CPU_PROFILE=1 (read when the backend
// is made; off, an op pays one branch). On, the backend prints one JSON line to stderr when it is
// destroyed: per kind the calls and milliseconds, and "between_ops" (the caller's time from one
// op's end to the next op's start: glue outside the backend, which runs on one thread)
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace mb::cpu {

enum class op_kind : int {
    LINEAR_F32,
    LINEAR_BF16,
    LINEAR_Q8_0,
    GEMM_PACK,     // activations packed for the dot-product / tile kernels (inside linear and conv1d)
    CONV1D,        // im2col, the GEMM (also counted under linear) and the transposition back
    CONV_GLUE,     // conv1d's im2col and transposition back alone
    ATTENTION,
    LAYER_NORM,
    ELEMENTWISE,   // add, relu, leaky_relu, silu, fill
    LAYOUT,        // copy_rows, where_rows, transpose, mask_cols, upsample2, embed_heads, replace_frames
    SAMPLING,      // sample_codes, remask_lowest
    COUNT,
};

class op_profile {
public:
    op_profile() {
        const char * e = std::getenv("MB_CPU_PROFILE");
        on_            = e && std::strcmp(e, "1") == 0;
    }
    op_profile(const op_profile &)             = delete;
    op_profile & operator=(const op_profile &) = delete;

    void print(int n_threads) const {
        if (!on_) return;
        static const char * const names[] = {"linear_f32", "linear_bf16", "linear_q8_0", "gemm_pack",  "conv1d", "conv_glue",
                                             "attention",  "layer_norm",  "elementwise", "layout",     "sampling"};
        std::fprintf(stderr, "{\"cpu_profile\": {\"threads\": %d", n_threads);
        for (int k = 0; k < int(op_kind::COUNT); ++k) {
            std::fprintf(stderr, ", \"%s\": {\"calls\": %llu, \"ms\": %.3f}", names[k], (unsigned long long) calls_[k],
                         double(ns_[k]) * 1e-6);
        }
        std::fprintf(stderr, ", \"between_ops\": {\"ms\": %.3f}}}\n", double(between_ns_) * 1e-6);
    }

    // times one op from construction to destruction (nested scopes count in each kind)
    class scope {
    public:
        scope(op_profile & p, op_kind k) : p_(p.on_ ? &p : nullptr), k_(k) {
            if (!p_) return;
            t0_ = now();
            // only an outermost op marks the gap since the previous one
            if (p_->depth_++ == 0 && p_->last_end_ != 0) p_->between_ns_ += t0_ - p_->last_end_;
        }
        ~scope() {
            if (!p_) return;
            const uint64_t t1 = now();
            p_->ns_[int(k_)] += t1 - t0_;
            ++p_->calls_[int(k_)];
            if (--p_->depth_ == 0) p_->last_end_ = t1;
        }
        scope(const scope &)             = delete;
        scope & operator=(const scope &) = delete;

    private:
        op_profile * p_;
        op_kind      k_;
        uint64_t     t0_ = 0;
    };

private:
    static uint64_t now() {
        return uint64_t(
            std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
    }

    bool     on_                          = false;
    int      depth_                       = 0;
    uint64_t last_end_                    = 0;
    uint64_t between_ns_                  = 0;
    uint64_t ns_[int(op_kind::COUNT)]    = {};
    uint64_t calls_[int(op_kind::COUNT)] = {};
};

} // namespace mb::cpu
