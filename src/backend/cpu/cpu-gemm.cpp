#include "backend/cpu/cpu-gemm.h"

#include "backend/cpu/cpu-gemm-neon.h"

#include <algorithm>

#if defined(__x86_64__)
#include <immintrin.h>
#define MB_GEMM_X86 1
#endif

namespace mb::cpu {
namespace {

// portable fallback: one dot product per output
void gemm_nt_scalar(const float * x, int64_t m, int64_t ldx, int64_t k, const float * w, const float * b, int64_t o0,
                    int64_t o1, float * y, int64_t ldy) {
    for (int64_t o = o0; o < o1; ++o) {
        const float * wr = w + o * k;
        for (int64_t i = 0; i < m; ++i) {
            const float * xr  = x + i * ldx;
            float         acc = 0.0f;
            for (int64_t c = 0; c < k; ++c) acc += xr[c] * wr[c];
            y[i * ldy + o] = acc + (b ? b[o] : 0.0f);
        }
    }
}

#ifdef MB_GEMM_X86

#define MB_AVX2 __attribute__((target("avx2,fma")))

MB_AVX2 inline float hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s        = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s        = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

// an NI × NO block of outputs: rows x[0..NI), weight rows w[0..NO), whole k;
// 8-wide FMA accumulators, a masked load for the k % 8 tail
template <int NI, int NO>
MB_AVX2 void block(const float * x, int64_t ldx, const float * w, int64_t k, const float * b, float * y,
                   int64_t ldy, const float * pf) {
    __m256 acc[NI][NO];
    for (int i = 0; i < NI; ++i)
        for (int j = 0; j < NO; ++j) acc[i][j] = _mm256_setzero_ps();

    const int64_t k8 = k & ~int64_t(7);
    for (int64_t c = 0; c < k8; c += 8) {
        if (pf && (c & 15) == 0) {
            for (int j = 0; j < NO; ++j) _mm_prefetch((const char *) (pf + j * k + c), _MM_HINT_T1);
        }
        __m256 wv[NO];
        for (int j = 0; j < NO; ++j) wv[j] = _mm256_loadu_ps(w + j * k + c);
        for (int i = 0; i < NI; ++i) {
            const __m256 xv = _mm256_loadu_ps(x + i * ldx + c);
            for (int j = 0; j < NO; ++j) acc[i][j] = _mm256_fmadd_ps(xv, wv[j], acc[i][j]);
        }
    }
    if (k8 < k) {
        alignas(32) static const int32_t lanes[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
        const __m256i mask = _mm256_loadu_si256((const __m256i *) (lanes + 8 - (k - k8)));
        __m256        wv[NO];
        for (int j = 0; j < NO; ++j) wv[j] = _mm256_maskload_ps(w + j * k + k8, mask);
        for (int i = 0; i < NI; ++i) {
            const __m256 xv = _mm256_maskload_ps(x + i * ldx + k8, mask);
            for (int j = 0; j < NO; ++j) acc[i][j] = _mm256_fmadd_ps(xv, wv[j], acc[i][j]);
        }
    }
    for (int i = 0; i < NI; ++i)
        for (int j = 0; j < NO; ++j) y[i * ldy + j] = hsum(acc[i][j]) + (b ? b[j] : 0.0f);
}

// the row count of a block is a template argument: dispatch the m % 3 tail
// pf: the next weight block, fetched towards L2 during the first row group (may be null)
template <int NO>
MB_AVX2 void column_block(const float * x, int64_t m, int64_t ldx, int64_t k, const float * w, const float * b,
                          float * y, int64_t ldy, const float * pf) {
    int64_t i = 0;
    for (; i + 3 <= m; i += 3, pf = nullptr) block<3, NO>(x + i * ldx, ldx, w, k, b, y + i * ldy, ldy, pf);
    if (m - i == 2) block<2, NO>(x + i * ldx, ldx, w, k, b, y + i * ldy, ldy, pf);
    if (m - i == 1) block<1, NO>(x + i * ldx, ldx, w, k, b, y + i * ldy, ldy, pf);
}

// the same blocks 16 wide with 32 registers: 4 × 4 accumulators, masked k tail
#define MB_AVX512 __attribute__((target("avx512f,avx2,fma")))

// through memory: GCC 12's 512→256-bit extract intrinsics warn about an undefined operand
MB_AVX512 inline float hsum16(__m512 v) {
    alignas(64) float t[16];
    _mm512_store_ps(t, v);
    return hsum(_mm256_add_ps(_mm256_load_ps(t), _mm256_load_ps(t + 8)));
}

template <int NI, int NO>
MB_AVX512 void block16(const float * x, int64_t ldx, const float * w, int64_t k, const float * b, float * y,
                       int64_t ldy, const float * pf) {
    __m512 acc[NI][NO];
    for (int i = 0; i < NI; ++i)
        for (int j = 0; j < NO; ++j) acc[i][j] = _mm512_setzero_ps();

    const int64_t k16 = k & ~int64_t(15);
    for (int64_t c = 0; c < k16; c += 16) {
        if (pf) {
            for (int j = 0; j < NO; ++j) _mm_prefetch((const char *) (pf + j * k + c), _MM_HINT_T1);
        }
        __m512 wv[NO];
        for (int j = 0; j < NO; ++j) wv[j] = _mm512_loadu_ps(w + j * k + c);
        for (int i = 0; i < NI; ++i) {
            const __m512 xv = _mm512_loadu_ps(x + i * ldx + c);
            for (int j = 0; j < NO; ++j) acc[i][j] = _mm512_fmadd_ps(xv, wv[j], acc[i][j]);
        }
    }
    if (k16 < k) {
        const __mmask16 mask = (__mmask16) ((1u << (k - k16)) - 1u);
        __m512          wv[NO];
        for (int j = 0; j < NO; ++j) wv[j] = _mm512_maskz_loadu_ps(mask, w + j * k + k16);
        for (int i = 0; i < NI; ++i) {
            const __m512 xv = _mm512_maskz_loadu_ps(mask, x + i * ldx + k16);
            for (int j = 0; j < NO; ++j) acc[i][j] = _mm512_fmadd_ps(xv, wv[j], acc[i][j]);
        }
    }
    for (int i = 0; i < NI; ++i)
        for (int j = 0; j < NO; ++j) y[i * ldy + j] = hsum16(acc[i][j]) + (b ? b[j] : 0.0f);
}

template <int NO>
MB_AVX512 void column_block16(const float * x, int64_t m, int64_t ldx, int64_t k, const float * w, const float * b,
                              float * y, int64_t ldy, const float * pf) {
    int64_t i = 0;
    for (; i + 4 <= m; i += 4, pf = nullptr) block16<4, NO>(x + i * ldx, ldx, w, k, b, y + i * ldy, ldy, pf);
    switch (m - i) {
        case 3: block16<3, NO>(x + i * ldx, ldx, w, k, b, y + i * ldy, ldy, pf); break;
        case 2: block16<2, NO>(x + i * ldx, ldx, w, k, b, y + i * ldy, ldy, pf); break;
        case 1: block16<1, NO>(x + i * ldx, ldx, w, k, b, y + i * ldy, ldy, pf); break;
        default: break;
    }
}

// column_fns[n] computes n output columns of all m rows (n = 1..4)
using column_fn = void (*)(const float * x, int64_t m, int64_t ldx, int64_t k, const float * w, const float * b,
                           float * y, int64_t ldy, const float * pf);
constexpr column_fn avx2_columns[5]   = {nullptr, column_block<1>, column_block<2>, column_block<3>, column_block<4>};
constexpr column_fn avx512_columns[5] = {nullptr, column_block16<1>, column_block16<2>, column_block16<3>,
                                         column_block16<4>};

// rows of x per pass: a panel of about 1 MiB stays in L2 while the weights pass over it once
// (a batch-one plan has a single panel, so its weights are read once; fused lanes give panels
// of many rows, each output still summed by the same block code in the same order)
int64_t panel_rows(int64_t k) {
    return std::max<int64_t>(12, (int64_t(1) << 18) / std::max<int64_t>(1, k) / 12 * 12);
}

void gemm_nt_blocked(const column_fn (&column_fns)[5], const float * x, int64_t m, int64_t ldx, int64_t k,
                     const float * w, const float * b, int64_t o0, int64_t o1, float * y, int64_t ldy) {
    const int64_t panel = panel_rows(k);
    for (int64_t i0 = 0; i0 < m; i0 += panel) {
        const int64_t mi = std::min(panel, m - i0);
        const float * xi = x + i0 * ldx;
        float *       yi = y + i0 * ldy;
        // 4 weight rows at a time stay in L1 while every row of the panel passes over them
        int64_t o = o0;
        for (; o + 4 <= o1; o += 4) {
            const float * pf = o + 8 <= o1 ? w + (o + 4) * k : nullptr;
            column_fns[4](xi, mi, ldx, k, w + o * k, b ? b + o : nullptr, yi + o, ldy, pf);
        }
        if (o < o1) column_fns[o1 - o](xi, mi, ldx, k, w + o * k, b ? b + o : nullptr, yi + o, ldy, nullptr);
    }
}

#endif // MB_GEMM_X86

} // namespace

gemm_isa gemm_isa_default() {
    if (gemm_has_neon()) return gemm_isa::GEMM_ISA_NEON;
#ifdef MB_GEMM_X86
    if (__builtin_cpu_supports("avx512f")) return gemm_isa::GEMM_ISA_AVX512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return gemm_isa::GEMM_ISA_AVX2;
#endif
    return gemm_isa::GEMM_ISA_SCALAR;
}

bool gemm_isa_supported(gemm_isa isa) {
    switch (isa) {
        case gemm_isa::GEMM_ISA_SCALAR: return true;
        case gemm_isa::GEMM_ISA_AVX2: return gemm_has_avx2();
        case gemm_isa::GEMM_ISA_AVX512: return gemm_isa_default() == gemm_isa::GEMM_ISA_AVX512;
        case gemm_isa::GEMM_ISA_NEON: return gemm_has_neon();
    }
    return false;
}

bool gemm_has_avx2() {
#ifdef MB_GEMM_X86
    static const bool ok = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    return ok;
#else
    return false;
#endif
}

void gemm_nt(const float * x, int64_t m, int64_t ldx, int64_t k, const float * w, const float * b, int64_t o0,
             int64_t o1, float * y, int64_t ldy, gemm_isa isa) {
    if (m <= 0 || o1 <= o0) return;
    if (isa == gemm_isa::GEMM_ISA_NEON && gemm_has_neon()) {
        gemm_nt_neon(x, m, ldx, k, w, b, o0, o1, y, ldy);
        return;
    }
#ifdef MB_GEMM_X86
    if (isa == gemm_isa::GEMM_ISA_AVX512 && gemm_isa_supported(isa)) {
        gemm_nt_blocked(avx512_columns, x, m, ldx, k, w, b, o0, o1, y, ldy);
        return;
    }
    if (isa != gemm_isa::GEMM_ISA_SCALAR && gemm_has_avx2()) {
        gemm_nt_blocked(avx2_columns, x, m, ldx, k, w, b, o0, o1, y, ldy);
        return;
    }
#endif
    gemm_nt_scalar(x, m, ldx, k, w, b, o0, o1, y, ldy);
}

void gemm_nt(const float * x, int64_t m, int64_t ldx, int64_t k, const float * w, const float * b, int64_t o0,
             int64_t o1, float * y, int64_t ldy) {
    static const gemm_isa isa = gemm_isa_default();
    gemm_nt(x, m, ldx, k, w, b, o0, o1, y, ldy, isa);
}

} // namespace mb::cpu
