// the CPU backend's own matrix kernel for batch-one networks: y = x·wᵀ (+ b) with few
// rows of x (6–64) and a large weight matrix w that is streamed from memory once.
// Each call covers a range of output columns so threads split w by rows.
#pragma once

#include <cstdint>

namespace mb::cpu {

// true when the AVX2 + FMA kernel runs on this CPU (else a portable scalar loop is used)
bool gemm_has_avx2();

// y[i, o] = Σ_c x[i, c]·w[o, c] (+ b[o]) for i < m and o0 ≤ o < o1;
// x[m, k] with row stride ldx, w[n_out, k] row-major, y with row stride ldy; b may be null
void gemm_nt(const float * x, int64_t m, int64_t ldx, int64_t k, const float * w, const float * b, int64_t o0,
             int64_t o1, float * y, int64_t ldy);

} // namespace mb::cpu
