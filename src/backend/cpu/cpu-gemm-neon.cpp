// NEON blocks of the CPU GEMM (see cpu-gemm.cpp for the AVX2/AVX-512 ones they mirror): an
// NI × NO block of outputs keeps NI·NO 4-wide accumulators in registers (4 × 4 = 16 of the 32)
// while 4 weight rows stream through once per row group. Weight rows are F32, BF16 (the top
// half of an F32) or Q8_0 (ggml's blocks of an F16 scale and 32 int8), widened to F32 in
// registers, so every type sums the same products in the same order
#include "backend/cpu/cpu-gemm-neon.h"
#include "backend/cpu/gemm-panels.h"
#include "backend/cpu/weight-rows.h"

#include <algorithm>
#include <cstring>

#if defined(__aarch64__)
#include <arm_neon.h>
#endif

namespace mb::cpu {

#if defined(__aarch64__)

namespace {

// 8 values of a weight row from column c (c % 8 == 0) as two float32x4
template <class W> inline float32x4x2_t load8(const uint8_t * w, int64_t c) {
    if constexpr (W::type == weight_type::WEIGHT_F32) {
        const float * p = reinterpret_cast<const float *>(w) + c;
        return {{vld1q_f32(p), vld1q_f32(p + 4)}};
    } else if constexpr (W::type == weight_type::WEIGHT_BF16) {
        const uint16x8_t h = vld1q_u16(reinterpret_cast<const uint16_t *>(w) + c);
        return {{vreinterpretq_f32_u32(vshll_n_u16(vget_low_u16(h), 16)),
                 vreinterpretq_f32_u32(vshll_n_u16(vget_high_u16(h), 16))}};
    } else {
        const uint8_t * blk = W::block(w, c);
        __fp16          d;
        std::memcpy(&d, blk, 2);
        const int16x8_t   q = vmovl_s8(vld1_s8(reinterpret_cast<const int8_t *>(blk + 2 + (c & 31))));
        const float32x4_t s = vdupq_n_f32((float) d);
        return {{vmulq_f32(vcvtq_f32_s32(vmovl_s16(vget_low_s16(q))), s),
                 vmulq_f32(vcvtq_f32_s32(vmovl_s16(vget_high_s16(q))), s)}};
    }
}

// the n < 4 values of x from p with zeros after
inline float32x4_t tail4(const float * p, int64_t n) {
    float t[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int64_t i = 0; i < n; ++i) t[i] = p[i];
    return vld1q_f32(t);
}

// the same from a weight row at column c
template <class W> inline float32x4_t wtail4(const uint8_t * w, int64_t c, int64_t n) {
    float t[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int64_t i = 0; i < n; ++i) t[i] = W::get(w, c + i);
    return vld1q_f32(t);
}

// rows x[0..NI) × weight rows w[0..NO) (wst bytes apart) over the whole k; pf: the next weight
// rows, fetched towards L2 during the first row group (may be null)
template <class W, int NI, int NO>
void block(const float * x, int64_t ldx, const uint8_t * w, int64_t wst, int64_t k, const float * b, float * y,
           int64_t ldy, const uint8_t * pf) {
    float32x4_t acc[NI][NO];
    for (int i = 0; i < NI; ++i)
        for (int j = 0; j < NO; ++j) acc[i][j] = vdupq_n_f32(0.0f);

    const int64_t k8 = k & ~int64_t(7);
    for (int64_t c = 0; c < k8; c += 8) {
        if (pf && (c & 15) == 0) {
            for (int j = 0; j < NO; ++j) __builtin_prefetch(W::at(pf + j * wst, c), 0, 2);
        }
        float32x4x2_t wv[NO];
        for (int j = 0; j < NO; ++j) wv[j] = load8<W>(w + j * wst, c);
        for (int i = 0; i < NI; ++i) {
            const float *     xr = x + i * ldx + c;
            const float32x4_t x0 = vld1q_f32(xr), x1 = vld1q_f32(xr + 4);
            for (int j = 0; j < NO; ++j) acc[i][j] = vfmaq_f32(vfmaq_f32(acc[i][j], x0, wv[j].val[0]), x1, wv[j].val[1]);
        }
    }
    if constexpr (W::type != weight_type::WEIGHT_Q8_0) {   // Q8_0 rows are whole 32-value blocks
        for (int64_t c = k8; c < k; c += 4) {
            const int64_t n = std::min<int64_t>(4, k - c);
            float32x4_t   wv[NO];
            for (int j = 0; j < NO; ++j) wv[j] = wtail4<W>(w + j * wst, c, n);
            for (int i = 0; i < NI; ++i) {
                const float32x4_t xv = tail4(x + i * ldx + c, n);
                for (int j = 0; j < NO; ++j) acc[i][j] = vfmaq_f32(acc[i][j], xv, wv[j]);
            }
        }
    }
    for (int i = 0; i < NI; ++i)
        for (int j = 0; j < NO; ++j) y[i * ldy + j] = vaddvq_f32(acc[i][j]) + (b ? b[j] : 0.0f);
}

// NO output columns of all m rows (panels::rows_by_four over the blocks of this weight type)
template <class W> struct blocks {
    template <int NI, int NO> struct k {
        static constexpr auto fn = block<W, NI, NO>;
    };
};
template <class W, int NO>
void column_block(const float * x, int64_t m, int64_t ldx, int64_t k, const uint8_t * w, int64_t wst, const float * b,
                  float * y, int64_t ldy, const uint8_t * pf) {
    panels::rows_by_four<blocks<W>::template k, NO>(x, ldx, m, k, w, wst, b, y, ldy, pf);
}

template <class W>
void gemm_neon(const float * x, int64_t m, int64_t ldx, int64_t k, const uint8_t * w, const float * b, int64_t o0,
               int64_t o1, float * y, int64_t ldy) {
    static constexpr panels::column_fn columns[5] = {nullptr, column_block<W, 1>, column_block<W, 2>,
                                                     column_block<W, 3>, column_block<W, 4>};
    panels::gemm_nt_blocked<W>(columns, x, m, ldx, k, w, b, o0, o1, y, ldy);
}

} // namespace

bool gemm_has_neon() {
    return true;
}

void gemm_nt_neon(const float * x, int64_t m, int64_t ldx, int64_t k, const void * w, weight_type wt, const float * b,
                  int64_t o0, int64_t o1, float * y, int64_t ldy) {
    const auto * wb = static_cast<const uint8_t *>(w);
    switch (wt) {
        case weight_type::WEIGHT_F32: gemm_neon<rows::w_f32>(x, m, ldx, k, wb, b, o0, o1, y, ldy); return;
        case weight_type::WEIGHT_BF16: gemm_neon<rows::w_bf16>(x, m, ldx, k, wb, b, o0, o1, y, ldy); return;
        case weight_type::WEIGHT_Q8_0: gemm_neon<rows::w_q8_0>(x, m, ldx, k, wb, b, o0, o1, y, ldy); return;
    }
}

#else

bool gemm_has_neon() {
    return false;
}

void gemm_nt_neon(const float *, int64_t, int64_t, int64_t, const void *, weight_type, const float *, int64_t, int64_t,
                  float *, int64_t) {}

#endif

} // namespace mb::cpu
