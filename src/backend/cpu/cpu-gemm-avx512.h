// the AVX-512 level of the CPU GEMM for F32, BF16 and Q8_0 weight rows widened to F32 (the
// dot-product levels' packed paths stay in cpu-gemm.cpp): y = x·wᵀ (+ b) over a range of output
// columns, arguments as gemm_nt's in cpu-gemm.h
#pragma once

#include "backend/backend.h"

#include <cstdint>

namespace mb::cpu {

// y[i, o] = Σ_c x[i, c]·w[o, c] (+ b[o]) for i < m and o0 ≤ o < o1 (w: rows of wt's layout,
// k % 32 == 0 for Q8_0). Output (i, o) sums lane l = c % 16 of its products in c order, then the
// 16 lanes pairwise (l + 8, then + 4, + 2, + 1): the same arithmetic for any m, column range or
// blocking, so a row's result depends on neither the batch size nor the thread split.
// Callers check that the CPU has AVX-512F (gemm_isa_supported); elsewhere it does nothing
void gemm_nt_avx512(const float * x, int64_t m, int64_t ldx, int64_t k, const uint8_t * w, weight_type wt,
                    const float * b, int64_t o0, int64_t o1, float * y, int64_t ldy);

// the dot-product levels' BF16 (vdpbf16ps) and Q8_0 (vpdpbusd) products on x packed by gemm_pack
// (rows xst bytes apart): output (i, o) keeps one 16-lane sum updated a step (32 BF16 / 64 Q8_0
// values) at a time in c order, lanes then added as above, so it too is independent of m and the
// column range. Callers check avx512-bf16 / avx512-vnni (gemm_isa_supported)
void gemm_dot_avx512(const uint8_t * xp, int64_t xst, int64_t m, int64_t k, const uint8_t * w, weight_type wt,
                     const float * b, int64_t o0, int64_t o1, float * y, int64_t ldy);

} // namespace mb::cpu
