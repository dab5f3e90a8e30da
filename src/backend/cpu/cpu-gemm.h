// the CPU backend's own matrix kernel for batch-one networks: y = x·wᵀ (+ b) with few
// rows of x (6–64) and a large weight matrix w that is streamed from memory once.
// Each call covers a range of output columns so threads split w by rows.
#pragma once

#include "backend/backend.h"

#include <cstdint>

namespace mb::cpu {

// instruction sets of the kernel; the best one the CPU has is chosen at run time
enum class gemm_isa : uint32_t {
    GEMM_ISA_SCALAR = 0,    // portable loop
    GEMM_ISA_AVX2   = 1,    // 8-wide FMA, 3 × 4 blocks
    GEMM_ISA_AVX512 = 2,    // 16-wide FMA, 4 × 4 blocks
    GEMM_ISA_NEON   = 3,    // ARM64: 4-wide FMA, 4 × 4 blocks (cpu-gemm-neon.cpp)
};

// the best one this CPU has, or the one the environment variable MB_CPU_ISA names
// (scalar, avx2, avx512, neon: to run the parity suites through each path); read once.
// Throws std::runtime_error for a name it does not know or an ISA this CPU lacks
gemm_isa    gemm_isa_default();
const char * gemm_isa_name(gemm_isa isa);
// MB_CPU_ISA read now (gemm_isa_default caches it): the best ISA when unset or empty
gemm_isa    gemm_isa_from_env();
bool     gemm_isa_supported(gemm_isa isa);

// true when the AVX2 + FMA kernel runs on this CPU
bool gemm_has_avx2();

// y[i, o] = Σ_c x[i, c]·w[o, c] (+ b[o]) for i < m and o0 ≤ o < o1;
// x[m, k] with row stride ldx, w[n_out, k] row-major, y with row stride ldy; b may be null
void gemm_nt(const float * x, int64_t m, int64_t ldx, int64_t k, const float * w, const float * b, int64_t o0,
             int64_t o1, float * y, int64_t ldy);

// the same with an explicit instruction set (falls back to the next one the CPU has)
void gemm_nt(const float * x, int64_t m, int64_t ldx, int64_t k, const float * w, const float * b, int64_t o0,
             int64_t o1, float * y, int64_t ldy, gemm_isa isa);

// the same with w[n_out, k] of any weight type (rows of weight_type's layout; k % 32 == 0 for Q8_0)
void gemm_nt(const float * x, int64_t m, int64_t ldx, int64_t k, const void * w, weight_type wt, const float * b,
             int64_t o0, int64_t o1, float * y, int64_t ldy, gemm_isa isa);

} // namespace mb::cpu
