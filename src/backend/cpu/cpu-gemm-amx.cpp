#include "backend/cpu/cpu-gemm-amx.h"
#include "backend/cpu/q8-quantise.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#if defined(__x86_64__) && defined(__linux__)
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>
#define MB_GEMM_AMX 1
#endif

namespace mb::cpu {

#ifdef MB_GEMM_AMX

namespace {

// Linux: a process must ask for the tile data state before it uses the tile registers
constexpr long k_arch_req_xcomp_perm = 0x1023;
constexpr long k_xfeature_xtiledata  = 18;

// the pack: m rounded up to groups of 16 rows, k to steps of 32 values; block (g, s) is the B
// operand of rows 16g.. and columns 32s..: 16 rows of column pairs, [p][n][e] = x[16g + n, 32s + 2p + e]
constexpr int64_t k_block = 16 * 32;   // bfloat16 values of one block (1 KiB)

int64_t n_groups(int64_t m) {
    return (m + 15) / 16;
}
int64_t n_steps(int64_t k) {
    return (k + 31) / 32;
}

#define MB_AMX __attribute__((target("amx-tile,amx-bf16,avx512f")))

struct tile_config {
    uint8_t  palette;
    uint8_t  start_row;
    uint8_t  reserved[14];
    uint16_t colsb[16];
    uint8_t  rows[16];
};

// tiles 0–3: accumulators of 16 outputs × 16 rows; 4, 5: weights (A); 6: packed x (B); all 16 × 64 bytes
// GCC 12's _tile_loadconfig tells the compiler it reads only the config's first 8 bytes, so the
// stores of the rows and column widths may be dropped (they were, once write_y was vectorised):
// a memory barrier that takes the config's address keeps them
MB_AMX inline void load_tile_config(const tile_config & c) {
    __asm__ __volatile__("" : : "r"(&c) : "memory");
    _tile_loadconfig(&c);
}

MB_AMX void load_config() {
    alignas(64) tile_config c{};
    c.palette = 1;
    for (int t = 0; t < 7; ++t) {
        c.colsb[t] = 64;
        c.rows[t]  = 16;
    }
    load_tile_config(c);
}

// where the A tile of weight rows o.. (those below o1) at column c0 loads from: the rows
// themselves, or (fewer than 16 rows, or fewer than 32 values left in a row) a zero-padded copy
const uint8_t * a_source(const uint8_t * w, int64_t wst, int64_t k, int64_t o, int64_t o1, int64_t c0,
                         uint16_t * buf, int64_t & stride) {
    const int64_t nr = std::min<int64_t>(16, o1 - o), nk = std::min<int64_t>(32, k - c0);
    if (nr == 16 && nk == 32) {
        stride = wst;
        return w + o * wst + c0 * 2;
    }
    std::memset(buf, 0, k_block * 2);
    for (int64_t r = 0; r < nr; ++r) std::memcpy(buf + r * 32, w + (o + r) * wst + c0 * 2, size_t(nk) * 2);
    stride = 64;
    return reinterpret_cast<const uint8_t *>(buf);
}

// c[i] element n → c[n] element i (16 × 16 floats in registers: unpacks and 128-bit lane shuffles;
// the maskz forms: GCC 12 warns on the plain ones' undefined source)
__attribute__((target("avx512f"), always_inline)) inline void transpose16(__m512 * c) {
    __m512 t[16];
    for (int i = 0; i < 16; i += 2) {
        t[i]     = _mm512_maskz_unpacklo_ps(0xffff, c[i], c[i + 1]);
        t[i + 1] = _mm512_maskz_unpackhi_ps(0xffff, c[i], c[i + 1]);
    }
    for (int i = 0; i < 16; i += 4) {
        c[i]     = _mm512_castpd_ps(_mm512_maskz_unpacklo_pd(0xff, _mm512_castps_pd(t[i]), _mm512_castps_pd(t[i + 2])));
        c[i + 1] = _mm512_castpd_ps(_mm512_maskz_unpackhi_pd(0xff, _mm512_castps_pd(t[i]), _mm512_castps_pd(t[i + 2])));
        c[i + 2] = _mm512_castpd_ps(_mm512_maskz_unpacklo_pd(0xff, _mm512_castps_pd(t[i + 1]), _mm512_castps_pd(t[i + 3])));
        c[i + 3] = _mm512_castpd_ps(_mm512_maskz_unpackhi_pd(0xff, _mm512_castps_pd(t[i + 1]), _mm512_castps_pd(t[i + 3])));
    }
    for (int h = 0; h < 16; h += 8) {
        for (int i = 0; i < 4; ++i) {
            t[h + i]     = _mm512_maskz_shuffle_f32x4(0xffff, c[h + i], c[h + i + 4], 0x88);
            t[h + i + 4] = _mm512_maskz_shuffle_f32x4(0xffff, c[h + i], c[h + i + 4], 0xdd);
        }
    }
    for (int i = 0; i < 8; ++i) {
        c[i]     = _mm512_maskz_shuffle_f32x4(0xffff, t[i], t[i + 8], 0x88);
        c[i + 8] = _mm512_maskz_shuffle_f32x4(0xffff, t[i], t[i + 8], 0xdd);
    }
}

// y for the up to 16 outputs o.. and rows 16g.. from accumulators c[output] (16 rows each):
// transposed in registers, the bias added and each row stored at once (was: 256 scalar stores)
__attribute__((target("avx512f"), always_inline)) inline void write_y(__m512 * c, int64_t m, int64_t g, int64_t o, int64_t o1,
                                                const float * b, float * y, int64_t ldy) {
    const int64_t   nr   = std::min<int64_t>(16, o1 - o), nn = std::min<int64_t>(16, m - 16 * g);
    const __mmask16 mask = (__mmask16) (nr >= 16 ? 0xffff : (1u << nr) - 1u);
    const __m512    bias = b ? _mm512_maskz_loadu_ps(mask, b + o) : _mm512_setzero_ps();
    transpose16(c);
    for (int64_t n = 0; n < nn; ++n) _mm512_mask_storeu_ps(y + (16 * g + n) * ldy + o, mask, _mm512_add_ps(c[n], bias));
}

// the same from an accumulator stored as [output][row]
__attribute__((target("avx512f"), always_inline)) inline void write_y(const float * cbuf, int64_t m, int64_t g, int64_t o, int64_t o1,
                                                const float * b, float * y, int64_t ldy) {
    __m512 c[16];
    for (int r = 0; r < 16; ++r) c[r] = _mm512_load_ps(cbuf + r * 16);
    write_y(c, m, g, o, o1, b, y, ldy);
}

} // namespace

bool amx_bf16_usable() {
    static const bool ok = [] {
        if (!__builtin_cpu_supports("amx-tile") || !__builtin_cpu_supports("amx-bf16")) return false;
        return syscall(SYS_arch_prctl, k_arch_req_xcomp_perm, k_xfeature_xtiledata) == 0;
    }();
    return ok;
}

int64_t amx_pack_units(int64_t m, int64_t k) {
    return n_groups(m) * n_steps(k);
}

int64_t amx_bf16_pack_bytes(int64_t m, int64_t k) {
    return n_groups(m) * n_steps(k) * k_block * 2;
}

// each row's 32 values of a step rounded (vcvtne2ps2bf16: nearest even) into 16 column pairs (16
// dwords), the 16 rows transposed in registers so pair p of row n lands at [p][n] and each block
// is 16 full stores (was: a 16-dword scatter a row). Every CPU with AMX-BF16 has AVX512-BF16
__attribute__((target("avx512f,avx512bf16"))) void amx_bf16_pack(const float * x, int64_t m, int64_t ldx,
                                                                    int64_t k, void * pack, int64_t u0, int64_t u1) {
    auto *        out = static_cast<float *>(pack);
    const int64_t ns  = n_steps(k);
    if (u1 < 0) u1 = amx_pack_units(m, k);
    for (int64_t u = u0; u < u1; ++u) {
        const int64_t   g = u / ns, s = u % ns;
        float *         blk = out + u * (k_block / 2);
        const int64_t   nk  = std::min<int64_t>(32, k - 32 * s);
        const __mmask16 lo  = (__mmask16) (nk >= 16 ? 0xffff : (1u << nk) - 1u);
        const __mmask16 hi  = (__mmask16) (nk >= 32 ? 0xffff : nk > 16 ? (1u << (nk - 16)) - 1u : 0u);
        __m512          v[16];
        for (int64_t n = 0; n < 16; ++n) {
            const int64_t i = 16 * g + n;
            v[n]            = _mm512_setzero_ps();
            if (i < m) {
                const float * xr = x + i * ldx + 32 * s;
                v[n] = (__m512) _mm512_cvtne2ps_pbh(_mm512_maskz_loadu_ps(hi, xr + 16), _mm512_maskz_loadu_ps(lo, xr));
            }
        }
        transpose16(v);
        for (int p = 0; p < 16; ++p) _mm512_storeu_ps(blk + p * 16, v[p]);
    }
}

// columns in blocks of 64 (4 accumulators), every row group over them while the block's weights
// (64 rows) stay in L2; the tile numbers are immediates, hence a macro for the four steps. With
// more than one row group the first group's pass also stores each A tile it loads into a
// contiguous copy (thread-local, 4 KiB a step) that the other groups load: the weight rows are
// 2·k bytes apart, a power of two for most layers, so the 64 rows of a block fell into two L1 sets
// and every later group's tile loads missed (m = 88: ~190 cycles a tile product)
MB_AMX void amx_bf16_gemm(const void * pack, int64_t m, int64_t k, const uint8_t * w, const float * b, int64_t o0,
                          int64_t o1, float * y, int64_t ldy) {
    if (m <= 0 || o1 <= o0) return;
    const auto *      xp  = static_cast<const uint16_t *>(pack);
    const int64_t     wst = k * 2, ns = n_steps(k), ng = n_groups(m);
    alignas(64) uint16_t abuf[k_block];
    alignas(64) float    cbuf[4][256];
    thread_local std::vector<uint16_t> t_wa;    // [ns][4] A tiles of the current block (ng > 1)
    if (ng > 1 && t_wa.size() < size_t(ns * 4 * k_block + 32)) t_wa.resize(size_t(ns * 4 * k_block + 32));
    // 64-byte aligned inside the vector
    uint16_t * wa = ng > 1 ? t_wa.data() + ((64 - (reinterpret_cast<uintptr_t>(t_wa.data()) & 63)) & 63) / 2 : nullptr;
    load_config();
    for (int64_t o = o0; o < o1; o += 64) {
        const int64_t nj = std::min<int64_t>(4, (o1 - o + 15) / 16);
        // the next block's weights (64 rows, contiguous) fetched towards L2 a slice a step over
        // every row group's pass: the tile loads touch 64 rows at once, more streams than the
        // hardware prefetcher follows
        const uint8_t * next     = o + 128 <= o1 ? w + (o + 64) * wst : nullptr;
        const int64_t   pf_bytes = (64 * wst + ns * ng - 1) / (ns * ng);
        for (int64_t g = 0; g < ng; ++g) {
            _tile_zero(0);
            _tile_zero(1);
            _tile_zero(2);
            _tile_zero(3);
            for (int64_t s = 0; s < ns; ++s) {
                if (next) {
                    const int64_t q = g * ns + s;
                    for (int64_t p = q * pf_bytes; p < std::min(64 * wst, (q + 1) * pf_bytes); p += 64) {
                        _mm_prefetch((const char *) (next + p), _MM_HINT_T1);
                    }
                }
                _tile_loadd(6, xp + (g * ns + s) * k_block, 64);
                // accumulator J from weight rows o + 16·J through A tile T (4 and 5 alternate)
#define MB_AMX_STEP(J, T)                                                                  \
    if (nj > J) {                                                                          \
        uint16_t * copy = wa ? wa + (s * 4 + (J)) * k_block : nullptr;                     \
        if (g == 0) {                                                                      \
            int64_t         st;                                                            \
            const uint8_t * a = a_source(w, wst, k, o + 16 * (J), o1, 32 * s, abuf, st);   \
            _tile_loadd(T, a, st);                                                         \
            if (copy) _tile_stored(T, copy, 64);                                           \
        } else {                                                                           \
            _tile_loadd(T, copy, 64);                                                      \
        }                                                                                  \
        _tile_dpbf16ps(J, T, 6);                                                           \
    }
                MB_AMX_STEP(0, 4)
                MB_AMX_STEP(1, 5)
                MB_AMX_STEP(2, 4)
                MB_AMX_STEP(3, 5)
#undef MB_AMX_STEP
            }
            _tile_stored(0, cbuf[0], 64);
            _tile_stored(1, cbuf[1], 64);
            _tile_stored(2, cbuf[2], 64);
            _tile_stored(3, cbuf[3], 64);
            for (int64_t j = 0; j < nj; ++j) write_y(cbuf[j], m, g, o + 16 * j, o1, b, y, ldy);
        }
    }
    _tile_release();
}

// ---- Q8_0 on AMX-INT8

namespace {

// the pack: per 16-row group and 32-value block, the B operand (8 rows of 16 × 4 signed codes:
// [p][n][e] = q[16g + n, 32s + 4p + e]) and then the 16 rows' scales d_x (0 past m)
constexpr int64_t k_q8_block = 8 * 64 + 16 * 4;

#define MB_AMX_INT8 __attribute__((target("amx-tile,amx-int8,avx512f,f16c")))

// two sets (0–2 and 3–5) so one block's tile product overlaps the previous block's rescaling;
// tiles 0, 3: int32 accumulator of one block (16 outputs × 16 rows); 1, 4: weights (A, 16 × 32
// bytes); 2, 5: packed x (B, 8 × 64 bytes)
MB_AMX_INT8 void load_config_int8() {
    alignas(64) tile_config c{};
    c.palette = 1;
    for (int t = 0; t < 6; t += 3) {
        c.colsb[t]     = 64;
        c.rows[t]      = 16;
        c.colsb[t + 1] = 32;
        c.rows[t + 1]  = 16;
        c.colsb[t + 2] = 64;
        c.rows[t + 2]  = 8;
    }
    load_tile_config(c);
}

} // namespace

bool amx_int8_usable() {
    return amx_bf16_usable() && __builtin_cpu_supports("amx-int8");
}

int64_t amx_q8_pack_bytes(int64_t m, int64_t k) {
    return n_groups(m) * (k / 32) * k_q8_block;
}

// the largest of 16 floats, none NaN (maskz forms and 128-bit tail: GCC 12 warns on the plain ones)
__attribute__((target("avx512f"))) inline float max16(__m512 v) {
    v         = _mm512_maskz_max_ps(0xffff, v, _mm512_maskz_shuffle_f32x4(0xffff, v, v, 0x4e));
    v         = _mm512_maskz_max_ps(0xffff, v, _mm512_maskz_shuffle_f32x4(0xffff, v, v, 0xb1));
    __m128 lo = _mm512_maskz_extractf32x4_ps(0xf, v, 0);
    lo        = _mm_max_ps(lo, _mm_movehl_ps(lo, lo));
    lo        = _mm_max_ss(lo, _mm_shuffle_ps(lo, lo, 1));
    return _mm_cvtss_f32(lo);
}

// each row's 32 values of a block quantised in registers exactly as quantise_q8_block does (d =
// max|x| / 127, codes x·(1/d) rounded by the MXCSR mode, NaN d and zero codes for a non-finite
// block), the 16 rows' 8 code quadruples transposed in registers to [p][n] (was: the scalar
// quantiser and 32 byte stores a row, 6 % of a Q8_0 plan on the calling thread). Every CPU with
// AMX has AVX-512
__attribute__((target("avx512f,avx512vl"))) void amx_q8_pack(const float * x, int64_t m, int64_t ldx, int64_t k,
                                                            void * pack, int64_t u0, int64_t u1) {
    auto *        out  = static_cast<uint8_t *>(pack);
    const int64_t ns   = k / 32;
    const __m512  inf  = _mm512_set1_ps(INFINITY);
    if (u1 < 0) u1 = amx_pack_units(m, k);
    for (int64_t u = u0; u < u1; ++u) {
        const int64_t g = u / ns, s = u % ns;
        uint8_t * blk = out + u * k_q8_block;
        alignas(64) float d[16];
        __m512            v[16];
        for (int64_t n = 0; n < 16; ++n) {
            const int64_t i = 16 * g + n;
            __m256i       q = _mm256_setzero_si256();
            d[n]            = 0.0f;
            if (i < m) {
                const float *  xr  = x + i * ldx + 32 * s;
                const __m512   lo  = _mm512_loadu_ps(xr), hi = _mm512_loadu_ps(xr + 16);
                const __m512   alo = _mm512_abs_ps(lo), ahi = _mm512_abs_ps(hi);
                const bool     bad = (_mm512_cmp_ps_mask(alo, inf, _CMP_NLT_UQ) |
                                  _mm512_cmp_ps_mask(ahi, inf, _CMP_NLT_UQ)) != 0;
                const float    dn  = bad ? NAN : max16(_mm512_maskz_max_ps(0xffff, alo, ahi)) / 127.0f;
                const __m512   id  = _mm512_set1_ps(dn != 0.0f && !bad ? 1.0f / dn : 0.0f);
                const __m128i  qlo = _mm512_maskz_cvtepi32_epi8(0xffff, _mm512_maskz_cvtps_epi32(0xffff, _mm512_mul_ps(lo, id)));
                const __m128i  qhi = _mm512_maskz_cvtepi32_epi8(0xffff, _mm512_maskz_cvtps_epi32(0xffff, _mm512_mul_ps(hi, id)));
                q                  = _mm256_inserti128_si256(_mm256_castsi128_si256(qlo), qhi, 1);
                d[n]               = dn;
            }
            v[n] = _mm512_castsi512_ps(_mm512_maskz_inserti64x4(0xff, _mm512_setzero_si512(), q, 0));
        }
        transpose16(v);
        for (int p = 0; p < 8; ++p) _mm512_storeu_ps(reinterpret_cast<float *>(blk + p * 64), v[p]);
        std::memcpy(blk + 8 * 64, d, sizeof d);
    }
}

// 16 outputs at a time over every row group: per block one tile product into tile 0, stored, and
// its 16 rows of int32 scaled by d_w (per output) · d_x (per row) into 16 float accumulators. The
// rescaling is the vector units' share (the tile product takes 16 cycles): d_w is widened once per
// 16 outputs and block for every row group (was: per row group, a scalar F16 load and conversion
// and a broadcast for each output), so each output row costs a conversion, a multiply by a
// broadcast from memory and an FMA
MB_AMX_INT8 void amx_q8_gemm(const void * pack, int64_t m, int64_t k, const uint8_t * w, const float * b, int64_t o0,
                             int64_t o1, float * y, int64_t ldy) {
    if (m <= 0 || o1 <= o0) return;
    const auto *  xp  = static_cast<const uint8_t *>(pack);
    const int64_t ns  = k / 32, wst = ns * 34;
    alignas(64) uint8_t abuf[16 * 32];
    alignas(64) int32_t cbuf[256];
    thread_local std::vector<float> t_dw;    // [ns][16] d_w of the current 16 outputs
    if (t_dw.size() < size_t(ns * 16)) t_dw.resize(size_t(ns * 16));
    float * dws = t_dw.data();
    load_config_int8();
    for (int64_t o = o0; o < o1; o += 16) {
        const int64_t nr = std::min<int64_t>(16, o1 - o);
        // the F16 scales d_w of a block's 16 rows in one gather (the low half of 4 bytes a row: the
        // gather reads 2 bytes past a row's scale, inside its block)
        const __mmask16 rmask = (__mmask16) (nr >= 16 ? 0xffff : (1u << nr) - 1u);
        const __m512i   rows  = _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                                                   _mm512_set1_epi32(int(wst)));
        // the next 16 weight rows (contiguous) fetched towards L2 during the first row group's
        // pass, a slice a step: the A tile loads read 16 rows at once, more streams than the
        // hardware prefetcher follows (as amx_bf16_gemm)
        const uint8_t * next     = o + 32 <= o1 ? w + (o + 16) * wst : nullptr;
        const int64_t   pf_bytes = (16 * wst + ns - 1) / ns;
        for (int64_t g = 0; g < n_groups(m); ++g) {
            __m512 acc[16];
            for (int r = 0; r < 16; ++r) acc[r] = _mm512_setzero_ps();
            // block s's tile product into set C (accumulator TC, A tile TA, B tile TB)
#define MB_Q8_ISSUE(S, TC, TA, TB)                                                                        \
    {                                                                                                     \
        const uint8_t * wa = w + o * wst + (S) * 34;                                                      \
        if (g == 0) {                                                                                     \
            for (int64_t p = (S) * pf_bytes; next && p < std::min(16 * wst, ((S) + 1) * pf_bytes); p += 64) \
                _mm_prefetch((const char *) (next + p), _MM_HINT_T1);                                      \
            const __m512i h = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), rmask, rows, wa, 1);   \
            _mm512_storeu_ps(dws + (S) * 16, _mm512_maskz_cvtph_ps(0xffff, _mm512_maskz_cvtepi32_epi16(0xffff, h)));                  \
        }                                                                                                 \
        _tile_zero(TC);                                                                                   \
        if (nr == 16) {                                                                                   \
            _tile_loadd(TA, wa + 2, wst);                                                                 \
        } else {                                                                                          \
            std::memset(abuf, 0, sizeof abuf);                                                            \
            for (int64_t r = 0; r < nr; ++r) std::memcpy(abuf + r * 32, wa + r * wst + 2, 32);           \
            _tile_loadd(TA, abuf, 32);                                                                    \
        }                                                                                                 \
        _tile_loadd(TB, xp + (g * ns + (S)) * k_q8_block, 64);                                            \
        _tile_dpbssd(TC, TA, TB);                                                                         \
    }
            // block s's int32 sums (in TC) scaled into the accumulators, blocks in order
#define MB_Q8_DRAIN(S, TC)                                                                                \
    {                                                                                                     \
        _tile_stored(TC, cbuf, 64);                                                                       \
        const float * dw = dws + (S) * 16;                                                                \
        const __m512  dx = _mm512_loadu_ps(reinterpret_cast<const float *>(xp + (g * ns + (S)) * k_q8_block + 8 * 64)); \
        for (int r = 0; r < 16; ++r) {                                                                    \
            const __m512 c = _mm512_maskz_cvtepi32_ps(0xffff, _mm512_load_si512(cbuf + r * 16));          \
            acc[r]         = _mm512_fmadd_ps(c, _mm512_mul_ps(dx, _mm512_set1_ps(dw[r])), acc[r]);        \
        }                                                                                                 \
    }
            // (maskz conversion: GCC 12 warns on the plain form)
            for (int64_t s = 0; s < ns; ++s) {
                if (s % 2 == 0) {
                    MB_Q8_ISSUE(s, 0, 1, 2)
                    if (s > 0) MB_Q8_DRAIN(s - 1, 3)
                } else {
                    MB_Q8_ISSUE(s, 3, 4, 5)
                    MB_Q8_DRAIN(s - 1, 0)
                }
            }
            if ((ns - 1) % 2 == 0) MB_Q8_DRAIN(ns - 1, 0)
            else MB_Q8_DRAIN(ns - 1, 3)
#undef MB_Q8_ISSUE
#undef MB_Q8_DRAIN
            write_y(acc, m, g, o, o1, b, y, ldy);
        }
    }
    _tile_release();
}

#else

bool amx_int8_usable() {
    return false;
}
int64_t amx_q8_pack_bytes(int64_t, int64_t) {
    return 0;
}
void amx_q8_pack(const float *, int64_t, int64_t, int64_t, void *, int64_t, int64_t) {}
void amx_q8_gemm(const void *, int64_t, int64_t, const uint8_t *, const float *, int64_t, int64_t, float *, int64_t) {}

bool amx_bf16_usable() {
    return false;
}
int64_t amx_bf16_pack_bytes(int64_t, int64_t) {
    return 0;
}
void amx_bf16_pack(const float *, int64_t, int64_t, int64_t, void *, int64_t, int64_t) {}
int64_t amx_pack_units(int64_t, int64_t) {
    return 0;
}
void amx_bf16_gemm(const void *, int64_t, int64_t, const uint8_t *, const float *, int64_t, int64_t, float *,
                   int64_t) {}

#endif

} // namespace mb::cpu
