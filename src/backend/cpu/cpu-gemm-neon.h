// the GEMM kernel's ARM64 path: the same y = x·wᵀ (+ b) over a range of output columns as
// cpu-gemm.h, for F32, BF16 and Q8_0 weight rows, with 4-wide NEON FMA blocks (NEON is part of
// every ARMv8-A CPU)
#pragma once

#include "backend/backend.h"

#include <cstdint>

namespace mb::cpu {

// true when this build targets ARM64 (gemm_nt_neon does the work there)
bool gemm_has_neon();

// y[i, o] = Σ_c x[i, c]·w[o, c] (+ b[o]) for i < m and o0 ≤ o < o1; arguments as gemm_nt's
// (k % 32 == 0 for Q8_0); on other targets it does nothing (callers check gemm_has_neon first)
void gemm_nt_neon(const float * x, int64_t m, int64_t ldx, int64_t k, const void * w, weight_type wt, const float * b,
                  int64_t o0, int64_t o1, float * y, int64_t ldy);

} // namespace mb::cpu
