#include "backend/cpu/cpu-gemm.h"

#include "backend/cpu/cpu-gemm-neon.h"
#include "backend/cpu/gemm-panels.h"
#include "backend/cpu/weight-rows.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

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

// portable fallback: one dot product per output
template <class W>
void gemm_nt_scalar(const float * x, int64_t m, int64_t ldx, int64_t k, const uint8_t * w, const float * b,
                    int64_t o0, int64_t o1, float * y, int64_t ldy) {
    const int64_t wst = W::row_bytes(k);
    for (int64_t o = o0; o < o1; ++o) {
        const uint8_t * wr = w + o * wst;
        for (int64_t i = 0; i < m; ++i) {
            const float * xr  = x + i * ldx;
            float         acc = 0.0f;
            for (int64_t c = 0; c < k; ++c) acc += xr[c] * W::get(wr, c);
            y[i * ldy + o] = acc + (b ? b[o] : 0.0f);
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

// the same blocks 16 wide with 32 registers: 4 × 4 accumulators, masked k tail
#define MB_AVX512 __attribute__((target("avx512f,avx2,fma,f16c")))

// through memory: GCC 12's 512→256-bit extract intrinsics warn about an undefined operand
MB_AVX512 inline float hsum16(__m512 v) {
    alignas(64) float t[16];
    _mm512_store_ps(t, v);
    return hsum(_mm256_add_ps(_mm256_load_ps(t), _mm256_load_ps(t + 8)));
}

template <class W> MB_AVX512 inline __m512 load16(const uint8_t * w, int64_t c) {
    if constexpr (W::type == weight_type::WEIGHT_F32) {
        return _mm512_loadu_ps(reinterpret_cast<const float *>(w) + c);
    } else if constexpr (W::type == weight_type::WEIGHT_BF16) {
        // maskz forms: GCC 12 warns about the undefined pass-through operand of the plain ones
        const __m256i   h   = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(w + c * 2));
        const __mmask16 all = 0xffff;
        return _mm512_castsi512_ps(_mm512_maskz_slli_epi32(all, _mm512_maskz_cvtepu16_epi32(all, h), 16));
    } else {
        const uint8_t * blk = W::block(w, c);
        const __m128i   q   = _mm_loadu_si128(reinterpret_cast<const __m128i *>(blk + 2 + (c & 31)));
        uint16_t        h;
        std::memcpy(&h, blk, 2);
        return _mm512_mul_ps(_mm512_maskz_cvtepi32_ps(0xffff, _mm512_maskz_cvtepi8_epi32(0xffff, q)),
                             _mm512_set1_ps(_cvtsh_ss(h)));
    }
}

template <class W, int NI, int NO>
MB_AVX512 void block16(const float * x, int64_t ldx, const uint8_t * w, int64_t wst, int64_t k, const float * b,
                       float * y, int64_t ldy, const uint8_t * pf) {
    __m512 acc[NI][NO];
    for (int i = 0; i < NI; ++i)
        for (int j = 0; j < NO; ++j) acc[i][j] = _mm512_setzero_ps();

    const int64_t k16 = k & ~int64_t(15);
    for (int64_t c = 0; c < k16; c += 16) {
        if (pf) {
            for (int j = 0; j < NO; ++j) _mm_prefetch((const char *) W::at(pf + j * wst, c), _MM_HINT_T1);
        }
        __m512 wv[NO];
        for (int j = 0; j < NO; ++j) wv[j] = load16<W>(w + j * wst, c);
        for (int i = 0; i < NI; ++i) {
            const __m512 xv = _mm512_loadu_ps(x + i * ldx + c);
            for (int j = 0; j < NO; ++j) acc[i][j] = _mm512_fmadd_ps(xv, wv[j], acc[i][j]);
        }
    }
    if (k16 < k) {
        const __mmask16 mask = (__mmask16) ((1u << (k - k16)) - 1u);
        __m512          wv[NO];
        for (int j = 0; j < NO; ++j) {
            if constexpr (W::type == weight_type::WEIGHT_F32) {
                wv[j] = _mm512_maskz_loadu_ps(mask, reinterpret_cast<const float *>(w + j * wst) + k16);
            } else {
                alignas(64) float t[16] = {};
                for (int64_t i = 0; i < k - k16; ++i) t[i] = W::get(w + j * wst, k16 + i);
                wv[j] = _mm512_load_ps(t);
            }
        }
        for (int i = 0; i < NI; ++i) {
            const __m512 xv = _mm512_maskz_loadu_ps(mask, x + i * ldx + k16);
            for (int j = 0; j < NO; ++j) acc[i][j] = _mm512_fmadd_ps(xv, wv[j], acc[i][j]);
        }
    }
    for (int i = 0; i < NI; ++i)
        for (int j = 0; j < NO; ++j) y[i * ldy + j] = hsum16(acc[i][j]) + (b ? b[j] : 0.0f);
}

template <class W, int NO>
MB_AVX512 void column_block16(const float * x, int64_t m, int64_t ldx, int64_t k, const uint8_t * w, int64_t wst,
                              const float * b, float * y, int64_t ldy, const uint8_t * pf) {
    int64_t i = 0;
    for (; i + 4 <= m; i += 4, pf = nullptr) block16<W, 4, NO>(x + i * ldx, ldx, w, wst, k, b, y + i * ldy, ldy, pf);
    switch (m - i) {
        case 3: block16<W, 3, NO>(x + i * ldx, ldx, w, wst, k, b, y + i * ldy, ldy, pf); break;
        case 2: block16<W, 2, NO>(x + i * ldx, ldx, w, wst, k, b, y + i * ldy, ldy, pf); break;
        case 1: block16<W, 1, NO>(x + i * ldx, ldx, w, wst, k, b, y + i * ldy, ldy, pf); break;
        default: break;
    }
}

template <class W> struct columns {
    static constexpr column_fn avx2[5]   = {nullptr, column_block<W, 1>, column_block<W, 2>, column_block<W, 3>,
                                            column_block<W, 4>};
    static constexpr column_fn avx512[5] = {nullptr, column_block16<W, 1>, column_block16<W, 2>,
                                            column_block16<W, 3>, column_block16<W, 4>};
};

#endif // MB_GEMM_X86

} // namespace

namespace {

gemm_isa best_isa() {
    if (gemm_has_neon()) return gemm_isa::GEMM_ISA_NEON;
#ifdef MB_GEMM_X86
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("f16c")) return gemm_isa::GEMM_ISA_AVX512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c")) {
        return gemm_isa::GEMM_ISA_AVX2;
    }
#endif
    return gemm_isa::GEMM_ISA_SCALAR;
}

template <class W>
void gemm_typed(const float * x, int64_t m, int64_t ldx, int64_t k, const uint8_t * w, const float * b, int64_t o0,
                int64_t o1, float * y, int64_t ldy, gemm_isa isa) {
    if (isa == gemm_isa::GEMM_ISA_NEON && gemm_has_neon()) {
        gemm_nt_neon(x, m, ldx, k, w, W::type, b, o0, o1, y, ldy);
        return;
    }
#ifdef MB_GEMM_X86
    if (isa == gemm_isa::GEMM_ISA_AVX512 && gemm_isa_supported(isa)) {
        gemm_nt_blocked<W>(columns<W>::avx512, x, m, ldx, k, w, b, o0, o1, y, ldy);
        return;
    }
    if (isa != gemm_isa::GEMM_ISA_SCALAR && gemm_has_avx2()) {
        gemm_nt_blocked<W>(columns<W>::avx2, x, m, ldx, k, w, b, o0, o1, y, ldy);
        return;
    }
#endif
    gemm_nt_scalar<W>(x, m, ldx, k, w, b, o0, o1, y, ldy);
}

} // namespace

const char * gemm_isa_name(gemm_isa isa) {
    switch (isa) {
        case gemm_isa::GEMM_ISA_SCALAR: return "scalar";
        case gemm_isa::GEMM_ISA_AVX2: return "avx2";
        case gemm_isa::GEMM_ISA_AVX512: return "avx512";
        case gemm_isa::GEMM_ISA_NEON: return "neon";
    }
    return "unknown";
}

gemm_isa gemm_isa_from_env() {
    const char * v = std::getenv("MB_CPU_ISA");
    if (!v || !*v) return best_isa();
    for (gemm_isa isa : {gemm_isa::GEMM_ISA_SCALAR, gemm_isa::GEMM_ISA_AVX2, gemm_isa::GEMM_ISA_AVX512,
                         gemm_isa::GEMM_ISA_NEON}) {
        if (std::strcmp(v, gemm_isa_name(isa)) != 0) continue;
        if (!gemm_isa_supported(isa)) {
            throw std::runtime_error(std::string("MB_CPU_ISA=") + v + ": this CPU has no " + v);
        }
        return isa;
    }
    throw std::runtime_error(std::string("MB_CPU_ISA=") + v + ": expected scalar, avx2, avx512 or neon");
}

gemm_isa gemm_isa_default() {
    static const gemm_isa isa = gemm_isa_from_env();
    return isa;
}

bool gemm_isa_supported(gemm_isa isa) {
    switch (isa) {
        case gemm_isa::GEMM_ISA_SCALAR: return true;
        case gemm_isa::GEMM_ISA_AVX2: return gemm_has_avx2();
        case gemm_isa::GEMM_ISA_AVX512: {
            static const bool ok = best_isa() == gemm_isa::GEMM_ISA_AVX512;
            return ok;
        }
        case gemm_isa::GEMM_ISA_NEON: return gemm_has_neon();
    }
    return false;
}

bool gemm_has_avx2() {
#ifdef MB_GEMM_X86
    static const bool ok = best_isa() != gemm_isa::GEMM_ISA_SCALAR;
    return ok;
#else
    return false;
#endif
}

void gemm_nt(const float * x, int64_t m, int64_t ldx, int64_t k, const void * w, weight_type wt, const float * b,
             int64_t o0, int64_t o1, float * y, int64_t ldy, gemm_isa isa) {
    if (m <= 0 || o1 <= o0) return;
    const auto * wb = static_cast<const uint8_t *>(w);
    switch (wt) {
        case weight_type::WEIGHT_F32: gemm_typed<w_f32>(x, m, ldx, k, wb, b, o0, o1, y, ldy, isa); return;
        case weight_type::WEIGHT_BF16: gemm_typed<w_bf16>(x, m, ldx, k, wb, b, o0, o1, y, ldy, isa); return;
        case weight_type::WEIGHT_Q8_0: gemm_typed<w_q8_0>(x, m, ldx, k, wb, b, o0, o1, y, ldy, isa); return;
    }
}

void gemm_nt(const float * x, int64_t m, int64_t ldx, int64_t k, const float * w, const float * b, int64_t o0,
             int64_t o1, float * y, int64_t ldy, gemm_isa isa) {
    gemm_nt(x, m, ldx, k, w, weight_type::WEIGHT_F32, b, o0, o1, y, ldy, isa);
}

void gemm_nt(const float * x, int64_t m, int64_t ldx, int64_t k, const float * w, const float * b, int64_t o0,
             int64_t o1, float * y, int64_t ldy) {
    gemm_nt(x, m, ldx, k, w, b, o0, o1, y, ldy, gemm_isa_default());
}

} // namespace mb::cpu
