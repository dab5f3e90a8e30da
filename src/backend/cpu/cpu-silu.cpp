#include "backend/cpu/cpu-silu.h"

#include <cmath>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace mb::cpu {
namespace {

#if defined(__x86_64__)
#define MB_AVX512 __attribute__((target("avx512f,avx2,fma")))

// e^t: t = n·ln 2 + r with |r| ≤ ln 2 / 2, e^r by Cephes' degree-7 polynomial, then scaled by 2^n
// (scalef: inf past 88.7, 0 below about −103, NaN stays NaN)
// (maskz forms: GCC 12 warns about the undefined pass-through operand of the plain ones)
MB_AVX512 inline __m512 exp16(__m512 t) {
    const __mmask16 all = 0xffff;
    t = _mm512_maskz_max_ps(all, _mm512_maskz_min_ps(all, t, _mm512_set1_ps(89.0f)), _mm512_set1_ps(-104.0f));
    const __m512 n = _mm512_maskz_roundscale_ps(all, _mm512_mul_ps(t, _mm512_set1_ps(1.44269504088896341f)),
                                                _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), t);
    r        = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
    __m512 p = _mm512_set1_ps(1.9875691500e-4f);
    p        = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
    p        = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
    p        = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
    p        = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
    p        = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
    const __m512 e = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
    return _mm512_maskz_scalef_ps(all, e, n);
}

// the last partial vector masked, so an element's arithmetic does not depend on where n ends
MB_AVX512 void silu_avx512(const float * x, int64_t n, float * y) {
    const __m512 one = _mm512_set1_ps(1.0f);
    for (int64_t i = 0; i < n; i += 16) {
        const __mmask16 mask = n - i >= 16 ? (__mmask16) 0xffff : (__mmask16) ((1u << (n - i)) - 1u);
        const __m512    v    = _mm512_maskz_loadu_ps(mask, x + i);
        const __m512    e    = exp16(_mm512_sub_ps(_mm512_setzero_ps(), v));
        _mm512_mask_storeu_ps(y + i, mask, _mm512_div_ps(v, _mm512_add_ps(one, e)));
    }
}

MB_AVX512 void exp_avx512(const float * x, int64_t n, float * y) {
    for (int64_t i = 0; i < n; i += 16) {
        const __mmask16 mask = n - i >= 16 ? (__mmask16) 0xffff : (__mmask16) ((1u << (n - i)) - 1u);
        _mm512_mask_storeu_ps(y + i, mask, exp16(_mm512_maskz_loadu_ps(mask, x + i)));
    }
}
#endif

} // namespace

void exp_f32(const float * x, int64_t n, float * y, bool vector) {
#if defined(__x86_64__)
    if (vector) {
        exp_avx512(x, n, y);
        return;
    }
#endif
    (void) vector;
    for (int64_t i = 0; i < n; ++i) y[i] = std::exp(x[i]);
}

void silu_f32(const float * x, int64_t n, float * y, bool vector) {
#if defined(__x86_64__)
    if (vector) {
        silu_avx512(x, n, y);
        return;
    }
#endif
    (void) vector;
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] / (1.0f + std::exp(-x[i]));
}

} // namespace mb::cpu
