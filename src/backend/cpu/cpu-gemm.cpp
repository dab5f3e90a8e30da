#include "backend/cpu/cpu-gemm.h"

#include "backend/cpu/cpu-gemm-amx.h"
#include "backend/cpu/cpu-gemm-avx512.h"
#include "backend/cpu/cpu-gemm-neon.h"
#include "backend/cpu/gemm-panels.h"
#include "backend/cpu/q8-quantise.h"
#include "backend/cpu/weight-rows.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#define MB_GEMM_X86 1
#endif

namespace mb::cpu {
namespace {

using rows::w_bf16;
using rows::w_f32;
using rows::w_q8_0;
using panels::column_fn;
using panels::gemm_nt_blocked;
using panels::panel_rows;

// portable fallback: one dot product per output in 8 partial sums (column c into sum c % 8, then
// added pairwise as the AVX2 kernel's hsum does): one running sum over thousands of columns erred
// up to 1.2e-4 in a plan's joint positions. This file is built with -ffp-contract=off, so the
// products and sums round alike on every architecture (ARM64's GCC would fuse them by default)
template <class W>
void gemm_nt_scalar(const float * x, int64_t m, int64_t ldx, int64_t k, const uint8_t * w, const float * b,
                    int64_t o0, int64_t o1, float * y, int64_t ldy) {
    const int64_t wst = W::row_bytes(k);
    for (int64_t o = o0; o < o1; ++o) {
        const uint8_t * wr = w + o * wst;
        for (int64_t i = 0; i < m; ++i) {
            const float * xr     = x + i * ldx;
            float         acc[8] = {};
            for (int64_t c = 0; c < k; ++c) acc[c & 7] += xr[c] * W::get(wr, c);
            for (int l = 0; l < 4; ++l) acc[l] += acc[l + 4];
            acc[0] += acc[2];
            acc[1] += acc[3];
            y[i * ldy + o] = (acc[0] + acc[1]) + (b ? b[o] : 0.0f);
        }
    }
}

#ifdef MB_GEMM_X86

#define MB_AVX2 __attribute__((target("avx2,fma,f16c")))

MB_AVX2 inline float hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s        = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s        = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

// 8 values of a weight row from column c (c % 8 == 0) as floats
template <class W> MB_AVX2 inline __m256 load8(const uint8_t * w, int64_t c) {
    if constexpr (W::type == weight_type::WEIGHT_F32) {
        return _mm256_loadu_ps(reinterpret_cast<const float *>(w) + c);
    } else if constexpr (W::type == weight_type::WEIGHT_BF16) {
        const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i *>(w + c * 2));
        return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
    } else {
        const uint8_t * blk = W::block(w, c);
        const __m128i   q   = _mm_loadl_epi64(reinterpret_cast<const __m128i *>(blk + 2 + (c & 31)));
        uint16_t        h;
        std::memcpy(&h, blk, 2);
        return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q)), _mm256_set1_ps(_cvtsh_ss(h)));
    }
}

// the n < 8 values from column c (zero beyond); Q8_0 rows are whole blocks and have no tail
template <class W> MB_AVX2 inline __m256 tail8(const uint8_t * w, int64_t c, int64_t n) {
    alignas(32) float t[8] = {};
    for (int64_t i = 0; i < n; ++i) t[i] = W::get(w, c + i);
    return _mm256_load_ps(t);
}

// an NI × NO block of outputs: rows x[0..NI), weight rows w[0..NO) (wst bytes apart), whole k;
// 8-wide FMA accumulators, a masked load for the k % 8 tail
template <class W, int NI, int NO>
MB_AVX2 void block(const float * x, int64_t ldx, const uint8_t * w, int64_t wst, int64_t k, const float * b, float * y,
                   int64_t ldy, const uint8_t * pf) {
    __m256 acc[NI][NO];
    for (int i = 0; i < NI; ++i)
        for (int j = 0; j < NO; ++j) acc[i][j] = _mm256_setzero_ps();

    const int64_t k8 = k & ~int64_t(7);
    for (int64_t c = 0; c < k8; c += 8) {
        if (pf && (c & 15) == 0) {
            for (int j = 0; j < NO; ++j) _mm_prefetch((const char *) W::at(pf + j * wst, c), _MM_HINT_T1);
        }
        __m256 wv[NO];
        for (int j = 0; j < NO; ++j) wv[j] = load8<W>(w + j * wst, c);
        for (int i = 0; i < NI; ++i) {
            const __m256 xv = _mm256_loadu_ps(x + i * ldx + c);
            for (int j = 0; j < NO; ++j) acc[i][j] = _mm256_fmadd_ps(xv, wv[j], acc[i][j]);
        }
    }
    if (k8 < k) {
        alignas(32) static const int32_t lanes[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
        const __m256i mask = _mm256_loadu_si256((const __m256i *) (lanes + 8 - (k - k8)));
        __m256        wv[NO];
        for (int j = 0; j < NO; ++j) {
            if constexpr (W::type == weight_type::WEIGHT_F32) {
                wv[j] = _mm256_maskload_ps(reinterpret_cast<const float *>(w + j * wst) + k8, mask);
            } else {
                wv[j] = tail8<W>(w + j * wst, k8, k - k8);
            }
        }
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
template <class W, int NO>
MB_AVX2 void column_block(const float * x, int64_t m, int64_t ldx, int64_t k, const uint8_t * w, int64_t wst,
                          const float * b, float * y, int64_t ldy, const uint8_t * pf) {
    int64_t i = 0;
    for (; i + 3 <= m; i += 3, pf = nullptr) block<W, 3, NO>(x + i * ldx, ldx, w, wst, k, b, y + i * ldy, ldy, pf);
    if (m - i == 2) block<W, 2, NO>(x + i * ldx, ldx, w, wst, k, b, y + i * ldy, ldy, pf);
    if (m - i == 1) block<W, 1, NO>(x + i * ldx, ldx, w, wst, k, b, y + i * ldy, ldy, pf);
}

template <class W> struct columns {
    static constexpr column_fn avx2[5] = {nullptr, column_block<W, 1>, column_block<W, 2>, column_block<W, 3>,
                                          column_block<W, 4>};
};

// ---- dot-product paths: the activations packed once per op into the weights' own form, so the
// inner loop multiplies without converting weights (AVX512-BF16 vdpbf16ps, AVX512-VNNI vpdpbusd)

#define MB_AVX512_BF16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16,avx2,fma,f16c")))
#define MB_AVX512_VNNI __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")))

// packed BF16 activations: rows of k rounded up to 32 values (zeros past k), RNE
int64_t bf16_row(int64_t k) {
    return (k + 31) / 32 * 32;
}

MB_AVX512_BF16 void pack_bf16(const float * x, int64_t m, int64_t ldx, int64_t k, uint16_t * xp) {
    const int64_t kp = bf16_row(k);
    for (int64_t i = 0; i < m; ++i) {
        const float * xr = x + i * ldx;
        uint16_t *    dr = xp + i * kp;
        for (int64_t c = 0; c < kp; c += 32) {
            const int64_t   n  = std::min<int64_t>(32, std::max<int64_t>(0, k - c));
            const __mmask16 lo = (__mmask16) (n >= 16 ? 0xffff : (1u << n) - 1u);
            const __mmask16 hi = (__mmask16) (n >= 32 ? 0xffff : n > 16 ? (1u << (n - 16)) - 1u : 0u);
            const __m512    a  = _mm512_maskz_loadu_ps(lo, xr + c);
            const __m512    b  = _mm512_maskz_loadu_ps(hi, xr + c + 16);
            _mm512_storeu_si512(dr + c, (__m512i) _mm512_cvtne2ps_pbh(b, a));
        }
    }
}

// packed Q8_0 activations of a row of k (k % 32 == 0): k bytes q + 128 (q = round(x / d), d = max|x| / 127
// per 32 values as ggml's quantize_row_q8_0, so vpdpbusd's unsigned operand), then per 64 values 16
// floats: d of the first 32 values in lanes 0–7, of the next 32 in lanes 8–15 (0 past k)
int64_t q8_row_bytes(int64_t k) {
    return k + (k + 63) / 64 * 64;
}

// the packed rows, each 32 values through Quantise(x, q) → d (codes + 128 into q)
template <float (*Quantise)(const float *, uint8_t *)>
void pack_q8_rows(const float * x, int64_t m, int64_t ldx, int64_t k, uint8_t * xp) {
    const int64_t rb = q8_row_bytes(k);
    for (int64_t i = 0; i < m; ++i) {
        const float * xr = x + i * ldx;
        uint8_t *     q  = xp + i * rb;
        float *       d  = reinterpret_cast<float *>(q + k);
        for (int64_t c = 0; c < k; c += 32) {
            const float dq = Quantise(xr + c, q + c);
            float *     dl = d + (c / 64) * 16 + ((c / 32) % 2) * 8;
            for (int l = 0; l < 8; ++l) dl[l] = dq;
        }
        if (k % 64) std::fill(d + (k / 64) * 16 + 8, d + (k / 64) * 16 + 16, 0.0f);
    }
}

MB_AVX512_VNNI float quantise_avx512(const float * x, uint8_t * q) {
    const __m512 a = _mm512_loadu_ps(x), bv = _mm512_loadu_ps(x + 16);
    const __m512 aa = _mm512_abs_ps(a), ab = _mm512_abs_ps(bv);
    const __m512 inf = _mm512_set1_ps(INFINITY);
    // a NaN or inf makes d NaN, so the outputs are NaN as on the float path (not wrapped codes)
    const bool bad = (_mm512_cmp_ps_mask(aa, inf, _CMP_NLT_UQ) | _mm512_cmp_ps_mask(ab, inf, _CMP_NLT_UQ)) != 0;
    alignas(64) float t[16];
    _mm512_store_ps(t, _mm512_maskz_max_ps(0xffff, aa, ab));
    const float   amax = *std::max_element(t, t + 16);
    const float   dq   = bad ? NAN : amax / 127.0f;
    const float   id   = dq != 0.0f && !bad ? 1.0f / dq : 0.0f;
    const __m512i off  = _mm512_set1_epi32(128);
    const __m512i qa   = _mm512_add_epi32(_mm512_maskz_cvtps_epi32(0xffff, _mm512_mul_ps(a, _mm512_set1_ps(id))), off);
    const __m512i qb   = _mm512_add_epi32(_mm512_maskz_cvtps_epi32(0xffff, _mm512_mul_ps(bv, _mm512_set1_ps(id))), off);
    _mm_storeu_si128(reinterpret_cast<__m128i *>(q), _mm512_maskz_cvtepi32_epi8(0xffff, qa));
    _mm_storeu_si128(reinterpret_cast<__m128i *>(q + 16), _mm512_maskz_cvtepi32_epi8(0xffff, qb));
    return dq;
}

// the same bytes without AVX-512 (AVX2 CPUs; tested equal)
MB_AVX2 float quantise_avx2(const float * x, uint8_t * q) {
    int8_t     s[32];
    const float d = quantise_q8_block(x, s);
    for (int l = 0; l < 32; ++l) q[l] = uint8_t(s[l]) ^ 0x80u;
    return d;
}

// an NI × NO block on packed Q8_0 activations with 256-bit VEX vpdpbusd, one weight block a step and
// one output column at a time (16 ymm registers: the x rows are re-read from L1 per column, each
// weight block once); per lane Σ u·w − 128·Σ w = Σ q·w exactly in int32, as block_q8
#define MB_AVX_VNNI __attribute__((target("avxvnni,avx2,fma,f16c")))
template <int NI, int NO>
MB_AVX_VNNI void block_q8_avx_vnni(const uint8_t * xp, int64_t rb, const uint8_t * w, int64_t wst, int64_t k,
                                   const float * b, float * y, int64_t ldy, const uint8_t * pf) {
    const __m256i k80 = _mm256_set1_epi8(char(0x80));
    const __m256i zero = _mm256_setzero_si256();
    for (int j = 0; j < NO; ++j) {
        __m256 acc[NI];
        for (int i = 0; i < NI; ++i) acc[i] = _mm256_setzero_ps();
        const uint8_t * wr = w + j * wst;
        for (int64_t c = 0; c < k; c += 32) {
            const uint8_t * blk = wr + c / 32 * 34;
            if (pf) _mm_prefetch((const char *) (pf + j * wst + c / 32 * 34), _MM_HINT_T1);
            const __m256i wv = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(blk + 2));
            const __m256i ns = _mm256_sub_epi32(zero, _mm256_dpbusd_avx_epi32(zero, k80, wv));
            uint16_t      h;
            std::memcpy(&h, blk, 2);
            const __m256 dw = _mm256_set1_ps(_cvtsh_ss(h));
            for (int i = 0; i < NI; ++i) {
                const uint8_t * xq = xp + i * rb;
                const __m256i   xv = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(xq + c));
                const __m256i   s  = _mm256_dpbusd_avx_epi32(ns, xv, wv);
                const __m256    dx = _mm256_loadu_ps(reinterpret_cast<const float *>(xq + k) + c / 64 * 16 + (c / 32) % 2 * 8);
                acc[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_mul_ps(dx, dw), acc[i]);
            }
        }
        for (int i = 0; i < NI; ++i) y[i * ldy + j] = hsum(acc[i]) + (b ? b[j] : 0.0f);
    }
}

// the dot kernels' column/row tiling, as gemm_nt_blocked's: x packed, rows xst bytes apart
using dot_fn = void (*)(const uint8_t * xp, int64_t xst, const uint8_t * w, int64_t wst, int64_t k, const float * b,
                        float * y, int64_t ldy, const uint8_t * pf);
template <template <int, int> class K, int NO>
void dot_rows(const uint8_t * xp, int64_t xst, int64_t m, int64_t k, const uint8_t * w, int64_t wst,
              const float * b, float * y, int64_t ldy, const uint8_t * pf) {
    panels::rows_by_four<K, NO>(xp, xst, m, k, w, wst, b, y, ldy, pf);
}
template <int NI, int NO> struct q8_avx_vnni_k {
    static constexpr dot_fn fn = block_q8_avx_vnni<NI, NO>;
};

template <template <int, int> class K>
void gemm_dot(const uint8_t * xp, int64_t xst, int64_t m, int64_t k, const uint8_t * w, int64_t wst, const float * b,
              int64_t o0, int64_t o1, float * y, int64_t ldy) {
    using rows_fn               = void (*)(const uint8_t *, int64_t, int64_t, int64_t, const uint8_t *, int64_t,
                                           const float *, float *, int64_t, const uint8_t *);
    constexpr rows_fn fns[5]    = {nullptr, dot_rows<K, 1>, dot_rows<K, 2>, dot_rows<K, 3>, dot_rows<K, 4>};
    const int64_t     panel     = panel_rows(k);
    for (int64_t i0 = 0; i0 < m; i0 += panel) {
        const int64_t mi = std::min(panel, m - i0);
        for (int64_t o = o0; o < o1; o += 4) {
            const int64_t   no = std::min<int64_t>(4, o1 - o);
            const uint8_t * pf = o + 8 <= o1 ? w + (o + 4) * wst : nullptr;
            fns[no](xp + i0 * xst, xst, mi, k, w + o * wst, wst, b ? b + o : nullptr, y + i0 * ldy + o, ldy, pf);
        }
    }
}

#endif // MB_GEMM_X86

} // namespace

namespace {

bool has_avx_vnni() {
#ifdef MB_GEMM_X86
    return __builtin_cpu_supports("avxvnni") && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
           __builtin_cpu_supports("f16c");
#else
    return false;
#endif
}

// the one place that reads CPU features (another architecture's levels go here)
gemm_isa best_isa() {
    if (gemm_has_neon()) return gemm_isa::GEMM_ISA_NEON;
#ifdef MB_GEMM_X86
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("f16c")) {
        const bool bw_vl = __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
        if (bw_vl && __builtin_cpu_supports("avx512vnni")) {
            if (!__builtin_cpu_supports("avx512bf16")) return gemm_isa::GEMM_ISA_AVX512_VNNI;
            return amx_bf16_usable() ? gemm_isa::GEMM_ISA_AMX : gemm_isa::GEMM_ISA_AVX512_BF16;
        }
        return gemm_isa::GEMM_ISA_AVX512;
    }
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c")) {
        return has_avx_vnni() ? gemm_isa::GEMM_ISA_AVX_VNNI : gemm_isa::GEMM_ISA_AVX2;
    }
#endif
    return gemm_isa::GEMM_ISA_SCALAR;
}

gemm_isa cpu_best() {
    static const gemm_isa isa = best_isa();
    return isa;
}

// the level that runs: the one asked for, or the best below it that this CPU has (avx-vnni is an
// AVX2 extension that AVX-512 CPUs before Sapphire Rapids lack: there it runs as avx2)
gemm_isa effective(gemm_isa isa) {
    if (cpu_best() == gemm_isa::GEMM_ISA_NEON) return isa == gemm_isa::GEMM_ISA_SCALAR ? isa : gemm_isa::GEMM_ISA_NEON;
    isa = std::min(isa, cpu_best());
    return isa == gemm_isa::GEMM_ISA_AVX_VNNI && !has_avx_vnni() ? gemm_isa::GEMM_ISA_AVX2 : isa;
}

// BF16 and Q8_0 weights on AMX tiles (x packed into the tiles' layout)
bool on_tiles(weight_type wt, gemm_isa isa) {
    if (isa != gemm_isa::GEMM_ISA_AMX) return false;
    return wt == weight_type::WEIGHT_BF16 || (wt == weight_type::WEIGHT_Q8_0 && amx_int8_usable());
}

// whether this type reads packed activations on this (effective) level
bool packs(weight_type wt, gemm_isa isa) {
    if (isa == gemm_isa::GEMM_ISA_NEON) return false;   // NEON widens the weights instead
    return (wt == weight_type::WEIGHT_BF16 && isa >= gemm_isa::GEMM_ISA_AVX512_BF16) ||
           (wt == weight_type::WEIGHT_Q8_0 && (isa >= gemm_isa::GEMM_ISA_AVX512_VNNI || isa == gemm_isa::GEMM_ISA_AVX_VNNI));
}

// packed row stride in bytes
int64_t pack_row_bytes(int64_t k, weight_type wt) {
#ifdef MB_GEMM_X86
    return wt == weight_type::WEIGHT_BF16 ? bf16_row(k) * 2 : q8_row_bytes(k);
#else
    (void) k, (void) wt;
    return 0;
#endif
}

template <class W>
void gemm_typed(const float * x, int64_t m, int64_t ldx, int64_t k, const uint8_t * w, const float * b, int64_t o0,
                int64_t o1, float * y, int64_t ldy, gemm_isa isa) {
    if (isa == gemm_isa::GEMM_ISA_NEON && gemm_has_neon()) {
        gemm_nt_neon(x, m, ldx, k, w, W::type, b, o0, o1, y, ldy);
        return;
    }
#ifdef MB_GEMM_X86
    if (isa >= gemm_isa::GEMM_ISA_AVX512) {
        gemm_nt_avx512(x, m, ldx, k, w, W::type, b, o0, o1, y, ldy);
        return;
    }
    if (isa >= gemm_isa::GEMM_ISA_AVX2) {
        gemm_nt_blocked<W>(columns<W>::avx2, x, m, ldx, k, w, b, o0, o1, y, ldy);
        return;
    }
#endif
    (void) isa;
    gemm_nt_scalar<W>(x, m, ldx, k, w, b, o0, o1, y, ldy);
}

constexpr gemm_isa k_all_isas[] = {gemm_isa::GEMM_ISA_SCALAR, gemm_isa::GEMM_ISA_AVX2, gemm_isa::GEMM_ISA_AVX_VNNI,
                                   gemm_isa::GEMM_ISA_AVX512,
                                   gemm_isa::GEMM_ISA_AVX512_VNNI, gemm_isa::GEMM_ISA_AVX512_BF16,
                                   gemm_isa::GEMM_ISA_AMX, gemm_isa::GEMM_ISA_NEON};

} // namespace

const char * gemm_isa_name(gemm_isa isa) {
    switch (isa) {
        case gemm_isa::GEMM_ISA_SCALAR: return "scalar";
        case gemm_isa::GEMM_ISA_AVX2: return "avx2";
        case gemm_isa::GEMM_ISA_AVX_VNNI: return "avx-vnni";
        case gemm_isa::GEMM_ISA_AVX512: return "avx512";
        case gemm_isa::GEMM_ISA_AVX512_VNNI: return "avx512-vnni";
        case gemm_isa::GEMM_ISA_AVX512_BF16: return "avx512-bf16";
        case gemm_isa::GEMM_ISA_AMX: return "amx";
        case gemm_isa::GEMM_ISA_NEON: return "neon";
    }
    return "unknown";
}

bool gemm_isa_parse(const char * name, gemm_isa & isa) {
    for (gemm_isa i : k_all_isas) {
        if (std::strcmp(name, gemm_isa_name(i)) == 0) {
            isa = i;
            return true;
        }
    }
    return false;
}

// the level taken when MB_CPU_ISA is unset: the best the CPU has. AMX tiles were faster than
// avx512's in-register conversion of BF16 weights for batch one and far faster for fused lanes
// (BF16 10-token plans, 1 thread, loaded Xeon VM: 57–76 vs 92–100 ms at B = 1, 38 vs 68–92 ms a
// plan at B = 8). Without AMX (AMD Zen 4/5, or where the kernel refuses the tile state) avx512-bf16
// runs BF16 weights on vdpbf16ps: on the Zen 5 VM a many-row product ran at 250–283 GFLOP/s
// against the conversion's 129 (one thread, 88 × 1024 → 3072), and BF16 plans at B = 8 took 373–414
// against 575–948 ms a call (2 threads, load 6), B = 1 no slower. Both round x to bfloat16 as AMX does
// (the first Xeon measurement, 0.85 vs 0.74 ms for 10 × 1024 → 3072, was the earlier in-place kernel)
gemm_isa default_level() {
    return cpu_best();
}

gemm_isa gemm_isa_from_env() {
    const char * v = std::getenv("MB_CPU_ISA");
    if (!v || !*v) return default_level();
    gemm_isa isa;
    if (!gemm_isa_parse(v, isa)) {
        throw std::runtime_error(std::string("MB_CPU_ISA=") + v +
                                 ": expected scalar, avx2, avx-vnni, avx512, avx512-vnni, avx512-bf16, amx or neon");
    }
    if (!gemm_isa_supported(isa)) throw std::runtime_error(std::string("MB_CPU_ISA=") + v + ": this CPU has no " + v);
    return isa;
}

gemm_isa gemm_isa_default() {
    static const gemm_isa isa = gemm_isa_from_env();
    return isa;
}

bool gemm_isa_supported(gemm_isa isa) {
    // ARM64 has the portable loop and NEON; x86-64 every level up to its best
    if (isa == gemm_isa::GEMM_ISA_NEON || cpu_best() == gemm_isa::GEMM_ISA_NEON) {
        return isa == gemm_isa::GEMM_ISA_SCALAR || isa == cpu_best();
    }
    if (isa == gemm_isa::GEMM_ISA_AVX_VNNI) return has_avx_vnni();
    return isa <= cpu_best();
}

bool gemm_has_avx2() {
    return gemm_isa_supported(gemm_isa::GEMM_ISA_AVX2);
}

int64_t gemm_pack_bytes(int64_t m, int64_t k, weight_type wt, gemm_isa isa) {
    isa = effective(isa);
    if (on_tiles(wt, isa)) return wt == weight_type::WEIGHT_BF16 ? amx_bf16_pack_bytes(m, k) : amx_q8_pack_bytes(m, k);
    return packs(wt, isa) ? m * pack_row_bytes(k, wt) : 0;
}

void gemm_pack(const float * x, int64_t m, int64_t ldx, int64_t k, weight_type wt, gemm_isa isa, void * pack) {
    isa = effective(isa);
    if (on_tiles(wt, isa)) {
        if (wt == weight_type::WEIGHT_BF16) amx_bf16_pack(x, m, ldx, k, pack);
        else amx_q8_pack(x, m, ldx, k, pack);
        return;
    }
    if (!packs(wt, isa)) return;
#ifdef MB_GEMM_X86
    if (wt == weight_type::WEIGHT_BF16) pack_bf16(x, m, ldx, k, static_cast<uint16_t *>(pack));
    else if (isa == gemm_isa::GEMM_ISA_AVX_VNNI) pack_q8_rows<quantise_avx2>(x, m, ldx, k, static_cast<uint8_t *>(pack));
    else pack_q8_rows<quantise_avx512>(x, m, ldx, k, static_cast<uint8_t *>(pack));
#else
    (void) x, (void) m, (void) ldx, (void) k, (void) pack;
#endif
}

int64_t gemm_pack_units(int64_t m, int64_t k, weight_type wt, gemm_isa isa) {
    isa = effective(isa);
    if (on_tiles(wt, isa)) return amx_pack_units(m, k);
    return packs(wt, isa) ? m : 0;
}

void gemm_pack_range(const float * x, int64_t m, int64_t ldx, int64_t k, weight_type wt, gemm_isa isa, void * pack,
                     int64_t u0, int64_t u1) {
    isa = effective(isa);
    if (on_tiles(wt, isa)) {
        if (wt == weight_type::WEIGHT_BF16) amx_bf16_pack(x, m, ldx, k, pack, u0, u1);
        else amx_q8_pack(x, m, ldx, k, pack, u0, u1);
        return;
    }
    // rows u0..u1: their packing starts after the bytes of the rows before them
    gemm_pack(x + u0 * ldx, u1 - u0, ldx, k, wt, isa, static_cast<uint8_t *>(pack) + gemm_pack_bytes(u0, k, wt, isa));
}

void gemm_nt_packed(const float * x, int64_t m, int64_t ldx, int64_t k, const void * w, weight_type wt,
                    const float * b, int64_t o0, int64_t o1, float * y, int64_t ldy, gemm_isa isa, const void * pack) {
    if (m <= 0 || o1 <= o0) return;
    isa                = effective(isa);
    const auto * wb    = static_cast<const uint8_t *>(w);
    if (on_tiles(wt, isa)) {
        if (wt == weight_type::WEIGHT_BF16) amx_bf16_gemm(pack, m, k, wb, b, o0, o1, y, ldy);
        else amx_q8_gemm(pack, m, k, wb, b, o0, o1, y, ldy);
        return;
    }
#ifdef MB_GEMM_X86
    if (packs(wt, isa)) {
        const auto * xp = static_cast<const uint8_t *>(pack);
        const int64_t xst = pack_row_bytes(k, wt);
        if (isa == gemm_isa::GEMM_ISA_AVX_VNNI) {
            gemm_dot<q8_avx_vnni_k>(xp, xst, m, k, wb, w_q8_0::row_bytes(k), b, o0, o1, y, ldy);
        } else {
            gemm_dot_avx512(xp, xst, m, k, wb, wt, b, o0, o1, y, ldy);
        }
        return;
    }
#endif
    (void) pack;
    switch (wt) {
        case weight_type::WEIGHT_F32: gemm_typed<w_f32>(x, m, ldx, k, wb, b, o0, o1, y, ldy, isa); return;
        case weight_type::WEIGHT_BF16: gemm_typed<w_bf16>(x, m, ldx, k, wb, b, o0, o1, y, ldy, isa); return;
        case weight_type::WEIGHT_Q8_0: gemm_typed<w_q8_0>(x, m, ldx, k, wb, b, o0, o1, y, ldy, isa); return;
    }
}

void gemm_nt(const float * x, int64_t m, int64_t ldx, int64_t k, const void * w, weight_type wt, const float * b,
             int64_t o0, int64_t o1, float * y, int64_t ldy, gemm_isa isa) {
    if (m <= 0 || o1 <= o0) return;
    // callers without their own scratch (tests): pack here
    std::vector<uint8_t> pack(size_t(gemm_pack_bytes(m, k, wt, isa)));
    gemm_pack(x, m, ldx, k, wt, isa, pack.data());
    gemm_nt_packed(x, m, ldx, k, w, wt, b, o0, o1, y, ldy, isa, pack.data());
}

void gemm_nt(const float * x, int64_t m, int64_t ldx, int64_t k, const float * w, const float * b, int64_t o0,
             int64_t o1, float * y, int64_t ldy, gemm_isa isa) {
    gemm_nt_packed(x, m, ldx, k, w, weight_type::WEIGHT_F32, b, o0, o1, y, ldy, isa, nullptr);
}

void gemm_nt(const float * x, int64_t m, int64_t ldx, int64_t k, const float * w, const float * b, int64_t o0,
             int64_t o1, float * y, int64_t ldy) {
    gemm_nt(x, m, ldx, k, w, b, o0, o1, y, ldy, gemm_isa_default());
}

} // namespace mb::cpu
