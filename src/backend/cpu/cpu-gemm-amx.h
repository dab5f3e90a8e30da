// AMX tile kernels of the CPU GEMM (x86-64 with AMX, Linux): y = x·wᵀ (+ b) for BF16 and Q8_0 weight
// rows. BF16: The weights are the tiles' A operand, read from the bundle as they are (16 weight rows ×
// 32 values a tile); x is packed once per op, rounded to bfloat16 (RNE), into the B operand's
// pair-interleaved layout. Every output sums its products in the same order whatever m is, so
// fused lanes equal single requests.
#pragma once

#include <cstdint>

namespace mb::cpu {

// true when the CPU has AMX-BF16 and the kernel granted this process the tile data state
// (arch_prctl ARCH_REQ_XCOMP_PERM, asked once); false elsewhere: callers take another level
bool amx_bf16_usable();

// the packs are units of 16 rows × 32 values (unit g·⌈k/32⌉ + s: rows 16g.., values 32s..), one
// block each, in order: threads may pack ranges [u0, u1) of them (u1 < 0: to the end)
int64_t amx_pack_units(int64_t m, int64_t k);
int64_t amx_bf16_pack_bytes(int64_t m, int64_t k);
void    amx_bf16_pack(const float * x, int64_t m, int64_t ldx, int64_t k, void * pack, int64_t u0 = 0, int64_t u1 = -1);
// outputs o0 ≤ o < o1 of all m rows; w: BF16 rows of k values (o0 a multiple of 16 keeps the
// threads' column ranges on whole tiles)
void amx_bf16_gemm(const void * pack, int64_t m, int64_t k, const uint8_t * w, const float * b, int64_t o0,
                   int64_t o1, float * y, int64_t ldy);

// Q8_0 weight rows (ggml blocks of an F16 scale and 32 int8) on AMX-INT8 tiles: x quantised per 32
// values as the avx512-vnni level does (d = max|x| / 127, codes rounded to nearest even), one tile
// product per block (int32, exact), scaled by d_x·d_w into float sums block by block
bool    amx_int8_usable();
int64_t amx_q8_pack_bytes(int64_t m, int64_t k);                                    // k % 32 == 0
void    amx_q8_pack(const float * x, int64_t m, int64_t ldx, int64_t k, void * pack, int64_t u0 = 0, int64_t u1 = -1);
void    amx_q8_gemm(const void * pack, int64_t m, int64_t k, const uint8_t * w, const float * b, int64_t o0,
                    int64_t o1, float * y, int64_t ldy);

} // namespace mb::cpu
