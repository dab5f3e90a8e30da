// NEON blocks of the CPU GEMM (see cpu-gemm.cpp for the AVX2/AVX-512 ones they mirror): an
// NI × NO block of outputs keeps NI·NO 4-wide accumulators in registers (4 × 4 = 16 of the 32)
// while 4 weight rows stream through once per row group
#include "backend/cpu/cpu-gemm-neon.h"

#include <algorithm>

#if defined(__aarch64__)
#include <arm_neon.h>
#endif

namespace mb::cpu {

#if defined(__aarch64__)

namespace {

// the n < 4 values from p with zeros after (the k % 4 tail)
inline float32x4_t load_tail(const float * p, int64_t n) {
    float t[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int64_t i = 0; i < n; ++i) t[i] = p[i];
    return vld1q_f32(t);
}

// rows x[0..NI) × weight rows w[0..NO) over the whole k; pf: the next weight rows, fetched
// towards L2 during the first row group (may be null)
template <int NI, int NO>
void block(const float * x, int64_t ldx, const float * w, int64_t k, const float * b, float * y, int64_t ldy,
           const float * pf) {
    float32x4_t acc[NI][NO];
    for (int i = 0; i < NI; ++i)
        for (int j = 0; j < NO; ++j) acc[i][j] = vdupq_n_f32(0.0f);

    const int64_t k4 = k & ~int64_t(3);
    for (int64_t c = 0; c < k4; c += 4) {
        if (pf && (c & 15) == 0) {
            for (int j = 0; j < NO; ++j) __builtin_prefetch(pf + j * k + c, 0, 2);
        }
        float32x4_t wv[NO];
        for (int j = 0; j < NO; ++j) wv[j] = vld1q_f32(w + j * k + c);
        for (int i = 0; i < NI; ++i) {
            const float32x4_t xv = vld1q_f32(x + i * ldx + c);
            for (int j = 0; j < NO; ++j) acc[i][j] = vfmaq_f32(acc[i][j], xv, wv[j]);
        }
    }
    if (k4 < k) {
        float32x4_t wv[NO];
        for (int j = 0; j < NO; ++j) wv[j] = load_tail(w + j * k + k4, k - k4);
        for (int i = 0; i < NI; ++i) {
            const float32x4_t xv = load_tail(x + i * ldx + k4, k - k4);
            for (int j = 0; j < NO; ++j) acc[i][j] = vfmaq_f32(acc[i][j], xv, wv[j]);
        }
    }
    for (int i = 0; i < NI; ++i)
        for (int j = 0; j < NO; ++j) y[i * ldy + j] = vaddvq_f32(acc[i][j]) + (b ? b[j] : 0.0f);
}

// NO output columns of all m rows: row groups of 4, then the m % 4 tail
template <int NO>
void column_block(const float * x, int64_t m, int64_t ldx, int64_t k, const float * w, const float * b, float * y,
                  int64_t ldy, const float * pf) {
    int64_t i = 0;
    for (; i + 4 <= m; i += 4, pf = nullptr) block<4, NO>(x + i * ldx, ldx, w, k, b, y + i * ldy, ldy, pf);
    switch (m - i) {
        case 3: block<3, NO>(x + i * ldx, ldx, w, k, b, y + i * ldy, ldy, pf); break;
        case 2: block<2, NO>(x + i * ldx, ldx, w, k, b, y + i * ldy, ldy, pf); break;
        case 1: block<1, NO>(x + i * ldx, ldx, w, k, b, y + i * ldy, ldy, pf); break;
        default: break;
    }
}

using column_fn = void (*)(const float * x, int64_t m, int64_t ldx, int64_t k, const float * w, const float * b,
                           float * y, int64_t ldy, const float * pf);
constexpr column_fn columns[5] = {nullptr, column_block<1>, column_block<2>, column_block<3>, column_block<4>};

// rows of x per pass: a panel of about 1 MiB stays in L2 while the weights pass over it once
// (the x86 kernels' rule, so fused lanes read each weight once per panel there too)
int64_t panel_rows(int64_t k) {
    return std::max<int64_t>(12, (int64_t(1) << 18) / std::max<int64_t>(1, k) / 12 * 12);
}

} // namespace

bool gemm_has_neon() {
    return true;
}

void gemm_nt_neon(const float * x, int64_t m, int64_t ldx, int64_t k, const float * w, const float * b, int64_t o0,
                  int64_t o1, float * y, int64_t ldy) {
    const int64_t panel = panel_rows(k);
    for (int64_t i0 = 0; i0 < m; i0 += panel) {
        const int64_t mi = std::min(panel, m - i0);
        const float * xi = x + i0 * ldx;
        float *       yi = y + i0 * ldy;
        int64_t       o  = o0;
        for (; o + 4 <= o1; o += 4) {
            const float * pf = o + 8 <= o1 ? w + (o + 4) * k : nullptr;
            columns[4](xi, mi, ldx, k, w + o * k, b ? b + o : nullptr, yi + o, ldy, pf);
        }
        if (o < o1) columns[o1 - o](xi, mi, ldx, k, w + o * k, b ? b + o : nullptr, yi + o, ldy, nullptr);
    }
}

#else

bool gemm_has_neon() {
    return false;
}

void gemm_nt_neon(const float *, int64_t, int64_t, int64_t, const float *, const float *, int64_t, int64_t, float *,
                  int64_t) {}

#endif

} // namespace mb::cpu
