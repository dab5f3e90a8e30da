// the CPU backend's own matrix kernel for batch-one networks: y = x·wᵀ (+ b) with few
// rows of x (6–64) and a large weight matrix w that is streamed from memory once.
// Each call covers a range of output columns so threads split w by rows.
#pragma once

#include "backend/backend.h"

#include <cstdint>

namespace mb::cpu {

// instruction sets of the kernel, each level including the ones before it; the best one the CPU
// has is chosen at run time (the one place that reads CPU features: gemm_isa_best in cpu-gemm.cpp,
// where another architecture's levels slot in)
enum class gemm_isa : uint32_t {
    GEMM_ISA_SCALAR      = 0,    // portable loop
    GEMM_ISA_AVX2        = 1,    // 8-wide FMA, 3 × 4 blocks
    GEMM_ISA_AVX_VNNI    = 2,    // + Q8_0 weights on int8-quantised activations, 256-bit VEX vpdpbusd
                                 // (AVX2 CPUs with AVX-VNNI; an AVX-512 CPU without it runs this level as avx2)
    GEMM_ISA_AVX512      = 3,    // 16-wide FMA, 4 × 4 blocks
    GEMM_ISA_AVX512_VNNI = 4,    // + Q8_0 weights on int8-quantised activations (512-bit vpdpbusd)
    GEMM_ISA_AVX512_BF16 = 5,    // + BF16 weights on bfloat16-rounded activations (vdpbf16ps)
    GEMM_ISA_AMX         = 6,    // + BF16 weights on AMX-BF16 tiles, Q8_0 on AMX-INT8 (cpu-gemm-amx.cpp; Linux,
                                 // where the kernel grants the tile state: else this level runs as avx512-bf16)
    GEMM_ISA_NEON        = 7,    // ARM64 (outside the x86 levels: with scalar only), 4-wide FMA, 4 × 4 blocks
                                 // (cpu-gemm-neon.cpp)
};

// the best one this CPU has, or the one the
// environment variable MB_CPU_ISA names (scalar, avx2, avx-vnni, avx512, avx512-vnni, avx512-bf16, amx, neon: to run the
// test suites through each path); read once. Throws std::runtime_error for a name it does not know
// or an ISA this CPU lacks
gemm_isa    gemm_isa_default();
const char * gemm_isa_name(gemm_isa isa);
// MB_CPU_ISA read now (gemm_isa_default caches it): the default level when unset or empty
gemm_isa    gemm_isa_from_env();
// the name's ISA; false for a name that is none
bool        gemm_isa_parse(const char * name, gemm_isa & isa);
bool        gemm_isa_supported(gemm_isa isa);

// true when the AVX2 + FMA kernel runs on this CPU
bool gemm_has_avx2();

// y[i, o] = Σ_c x[i, c]·w[o, c] (+ b[o]) for i < m and o0 ≤ o < o1;
// x[m, k] with row stride ldx, w[n_out, k] row-major, y with row stride ldy; b may be null
void gemm_nt(const float * x, int64_t m, int64_t ldx, int64_t k, const float * w, const float * b, int64_t o0,
             int64_t o1, float * y, int64_t ldy);

// the same with an explicit instruction set (falls back to the best one the CPU has below it)
void gemm_nt(const float * x, int64_t m, int64_t ldx, int64_t k, const float * w, const float * b, int64_t o0,
             int64_t o1, float * y, int64_t ldy, gemm_isa isa);

// the same with w[n_out, k] of any weight type (rows of weight_type's layout; k % 32 == 0 for Q8_0).
// On the dot-product levels BF16 and Q8_0 weights multiply x rounded to bfloat16 / quantised to int8
// in blocks of 32 (ggml's q8_0), so the sums differ from the float32 path's by that rounding
void gemm_nt(const float * x, int64_t m, int64_t ldx, int64_t k, const void * w, weight_type wt, const float * b,
             int64_t o0, int64_t o1, float * y, int64_t ldy, gemm_isa isa);

// the dot-product levels read x packed once per op (instead of once per column range): the bytes
// of that packing (0: this type on this level reads x as it is), the packing into 64-byte aligned
// memory, and gemm_nt reading it (pack null when gemm_pack_bytes is 0)
int64_t gemm_pack_bytes(int64_t m, int64_t k, weight_type wt, gemm_isa isa);
void    gemm_pack(const float * x, int64_t m, int64_t ldx, int64_t k, weight_type wt, gemm_isa isa, void * pack);
// the packing in units threads can split (AMX: 16 rows × 32 values, so a few rows still split;
// the other levels: rows), and the units [u0, u1) of it packed into the whole packing's memory
int64_t gemm_pack_units(int64_t m, int64_t k, weight_type wt, gemm_isa isa);
void    gemm_pack_range(const float * x, int64_t m, int64_t ldx, int64_t k, weight_type wt, gemm_isa isa, void * pack,
                        int64_t u0, int64_t u1);
void    gemm_nt_packed(const float * x, int64_t m, int64_t ldx, int64_t k, const void * w, weight_type wt,
                       const float * b, int64_t o0, int64_t o1, float * y, int64_t ldy, gemm_isa isa,
                       const void * pack);

} // namespace mb::cpu
