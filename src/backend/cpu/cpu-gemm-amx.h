// AMX tile kernel of the CPU GEMM (x86-64 with AMX-BF16, Linux): y = x·wᵀ (+ b) for BF16 weight
// rows. The weights are the tiles' A operand, read from the bundle as they are (16 weight rows ×
// 32 values a tile); x is packed once per op, rounded to bfloat16 (RNE), into the B operand's
// pair-interleaved layout. Every output sums its products in the same order whatever m is, so
// fused lanes equal single requests.
#pragma once

#include <cstdint>

namespace mb::cpu {

// true when the CPU has AMX-BF16 and the kernel granted this process the tile data state
// (arch_prctl ARCH_REQ_XCOMP_PERM, asked once); false elsewhere: callers take another level
bool amx_bf16_usable();

int64_t amx_bf16_pack_bytes(int64_t m, int64_t k);
void    amx_bf16_pack(const float * x, int64_t m, int64_t ldx, int64_t k, void * pack);
// outputs o0 ≤ o < o1 of all m rows; w: BF16 rows of k values (o0 a multiple of 16 keeps the
// threads' column ranges on whole tiles)
void amx_bf16_gemm(const void * pack, int64_t m, int64_t k, const uint8_t * w, const float * b, int64_t o0,
                   int64_t o1, float * y, int64_t ldy);

} // namespace mb::cpu
