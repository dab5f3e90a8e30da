// activations quantised for the int8 dot-product kernels (cpu-gemm.cpp, cpu-gemm-amx.cpp) as ggml's
// quantize_row_q8_0: per 32 values d = max|x| / 127 and codes x / d rounded to nearest even (the
// MXCSR default). x86-64 with AVX2 only: every CPU that runs these kernels has it
#pragma once

#if defined(__x86_64__)

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace mb::cpu {

// 32 values of x into 32 codes q; returns d, NaN when a value is NaN or inf (the outputs then stay
// NaN rather than showing wrapped codes)
__attribute__((target("avx2"))) inline float quantise_q8_block(const float * x, int8_t * q) {
    float amax = 0.0f;
    bool  bad  = false;
    for (int l = 0; l < 32; ++l) {
        const float a = std::fabs(x[l]);
        bad |= !(a < INFINITY);
        amax = std::max(amax, a);
    }
    const float  d  = bad ? NAN : amax / 127.0f;
    const __m256 id = _mm256_set1_ps(d != 0.0f && !bad ? 1.0f / d : 0.0f);
    alignas(32) int32_t t[32];
    for (int l = 0; l < 32; l += 8) {
        _mm256_store_si256(reinterpret_cast<__m256i *>(t + l), _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + l), id)));
    }
    for (int l = 0; l < 32; ++l) q[l] = int8_t(t[l]);
    return d;
}

} // namespace mb::cpu

#endif
