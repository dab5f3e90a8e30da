// AVX-512 blocks of the CPU GEMM: 4 rows × 6 columns of outputs keep 24 16-wide accumulators
// in registers. Many rows (fused lanes, SONIC's batches) run the weights in chunks of 512
// columns: a chunk of 6 weight rows is widened once into aligned memory that stays in L1 while
// every row group passes over it (GGUF data is 32-byte aligned, so reading the rows in place
// splits every 64-byte load), the accumulators wait in scratch between chunks, and 16 outputs
// at a time are reduced with shuffles instead of one horizontal sum each. Chunking, widening and
// the reduction change no rounding: each output is the sum described in cpu-gemm-avx512.h
#include "backend/cpu/cpu-gemm-avx512.h"

#include "backend/cpu/gemm-panels.h"
#include "backend/cpu/weight-rows.h"

#include <algorithm>
#include <array>
#include <utility>
#include <cstdlib>
#include <cstring>
#include <new>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace mb::cpu {

#if defined(__x86_64__)

namespace {

using rows::w_bf16;
using rows::w_f32;
using rows::w_q8_0;

#define MB_AVX512 __attribute__((target("avx512f,avx2,fma,f16c")))

constexpr int     k_rows      = 4;     // rows of x per block
constexpr int     k_cols      = 6;     // weight rows (output columns) per block
constexpr int64_t k_chunk     = 512;   // weight columns per chunk: 6 rows of 2 KiB
constexpr int64_t k_pack_rows = 16;    // from this many rows a chunk is widened once for 4+ row groups

// 16 values of a weight row from column c (c % 16 == 0) as floats
template <class W> MB_AVX512 inline __m512 load16(const uint8_t * w, int64_t c) {
    if constexpr (W::type == weight_type::WEIGHT_F32) {
        return _mm512_loadu_ps(reinterpret_cast<const float *>(w) + c);
    } else if constexpr (W::type == weight_type::WEIGHT_BF16) {
        // maskz forms: GCC 12 warns about the undefined pass-through operand of the plain ones
        const __m256i   h   = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(w + c * 2));
        const __mmask16 all = 0xffff;
        return _mm512_castsi512_ps(_mm512_maskz_slli_epi32(all, _mm512_maskz_cvtepu16_epi32(all, h), 16));
    } else {
        const uint8_t * blk = W::block(w, c);
        const __m128i   q   = _mm_loadu_si128(reinterpret_cast<const __m128i *>(blk + 2 + (c & 31)));
        uint16_t        h;
        std::memcpy(&h, blk, 2);
        return _mm512_mul_ps(_mm512_maskz_cvtepi32_ps(0xffff, _mm512_maskz_cvtepi8_epi32(0xffff, q)),
                             _mm512_set1_ps(_cvtsh_ss(h)));
    }
}

// the n < 16 values from column c, zero beyond
template <class W> MB_AVX512 inline __m512 tail16(const uint8_t * w, int64_t c, int64_t n) {
    if constexpr (W::type == weight_type::WEIGHT_F32) {
        return _mm512_maskz_loadu_ps((__mmask16) ((1u << n) - 1u), reinterpret_cast<const float *>(w) + c);
    } else {
        alignas(64) float t[16] = {};
        for (int64_t i = 0; i < n; ++i) t[i] = W::get(w, c + i);
        return _mm512_load_ps(t);
    }
}

// 16 accumulators' horizontal sums at once, each in the tree of one sum (lanes l + 8, then + 4,
// + 2, + 1): lane 4p + q of the result is the sum of v[4q + p]
MB_AVX512 inline __m512 reduce16(const __m512 * v) {
    // maskz forms throughout: GCC 12 warns about the undefined pass-through operand of the plain ones
    const __mmask16 all = 0xffff;
    const __mmask8  all8 = 0xff;
    __m512          s1[8], s2[4], s3[2];
    for (int q = 0; q < 8; ++q) {
        s1[q] = _mm512_add_ps(_mm512_maskz_shuffle_f32x4(all, v[2 * q], v[2 * q + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                              _mm512_maskz_shuffle_f32x4(all, v[2 * q], v[2 * q + 1], _MM_SHUFFLE(3, 2, 3, 2)));
    }
    for (int r = 0; r < 4; ++r) {
        s2[r] = _mm512_add_ps(_mm512_maskz_shuffle_f32x4(all, s1[2 * r], s1[2 * r + 1], _MM_SHUFFLE(2, 0, 2, 0)),
                              _mm512_maskz_shuffle_f32x4(all, s1[2 * r], s1[2 * r + 1], _MM_SHUFFLE(3, 1, 3, 1)));
    }
    for (int t = 0; t < 2; ++t) {
        const __m512d a = _mm512_castps_pd(s2[2 * t]), b = _mm512_castps_pd(s2[2 * t + 1]);
        s3[t] = _mm512_add_ps(_mm512_castpd_ps(_mm512_maskz_unpacklo_pd(all8, a, b)), _mm512_castpd_ps(_mm512_maskz_unpackhi_pd(all8, a, b)));
    }
    return _mm512_add_ps(_mm512_shuffle_ps(s3[0], s3[1], _MM_SHUFFLE(2, 0, 2, 0)),
                         _mm512_shuffle_ps(s3[0], s3[1], _MM_SHUFFLE(3, 1, 3, 1)));
}

// N accumulators of a block (NO columns a row) reduced 16 at a time into y + b
template <int N, int NO> MB_AVX512 inline void write_sums(const __m512 * a, const float * b, float * y, int64_t ldy) {
    for (int g = 0; g < N; g += 16) {
        __m512 v[16];
        for (int q = 0; q < 16; ++q) v[q] = a[g + q < N ? g + q : g];    // past N: any, unused
        alignas(64) float r[16];
        _mm512_store_ps(r, reduce16(v));
        for (int q = 0; q < 16 && g + q < N; ++q) {
            const int i = (g + q) / NO, j = (g + q) % NO;
            y[i * ldy + j] = r[(q % 4) * 4 + q / 4] + (b ? b[j] : 0.0f);
        }
    }
}

enum : int { FIRST = 1, LAST = 2 };    // a block's chunk: starts the sums, ends them

// an NI × NO block over the n columns of one chunk: x, w at the chunk's first column (w's rows
// wst bytes apart); the accumulators start at zero (FIRST) or from s, and go back to s or, on
// the LAST chunk (the k % 16 tail included), into y + b. pf: the next block's weights, fetched
// towards L2 (may be null)
template <class W, int NI, int NO>
MB_AVX512 void block(const float * x, int64_t ldx, const uint8_t * w, int64_t wst, int64_t n, int flags, float * s,
                     const float * b, float * y, int64_t ldy, const uint8_t * pf) {
    __m512 acc[NI][NO];
    for (int i = 0; i < NI; ++i)
        for (int j = 0; j < NO; ++j) acc[i][j] = flags & FIRST ? _mm512_setzero_ps() : _mm512_load_ps(s + (i * NO + j) * 16);
    const int64_t n16 = n & ~int64_t(15);
    for (int64_t c = 0; c < n16; c += 16) {
        if (pf) {
            for (int j = 0; j < NO; ++j) _mm_prefetch((const char *) W::at(pf + j * wst, c), _MM_HINT_T1);
        }
        __m512 wv[NO];
        for (int j = 0; j < NO; ++j) wv[j] = load16<W>(w + j * wst, c);
        for (int i = 0; i < NI; ++i) {
            const __m512 xv = _mm512_loadu_ps(x + i * ldx + c);
            for (int j = 0; j < NO; ++j) acc[i][j] = _mm512_fmadd_ps(xv, wv[j], acc[i][j]);
        }
    }
    if (!(flags & LAST)) {
        for (int i = 0; i < NI; ++i)
            for (int j = 0; j < NO; ++j) _mm512_store_ps(s + (i * NO + j) * 16, acc[i][j]);
        return;
    }
    if (n16 < n) {
        const __mmask16 mask = (__mmask16) ((1u << (n - n16)) - 1u);
        __m512          wv[NO];
        for (int j = 0; j < NO; ++j) wv[j] = tail16<W>(w + j * wst, n16, n - n16);
        for (int i = 0; i < NI; ++i) {
            const __m512 xv = _mm512_maskz_loadu_ps(mask, x + i * ldx + n16);
            for (int j = 0; j < NO; ++j) acc[i][j] = _mm512_fmadd_ps(xv, wv[j], acc[i][j]);
        }
    }
    write_sums<NI * NO, NO>(&acc[0][0], b, y, ldy);
}

using block_fn = void (*)(const float *, int64_t, const uint8_t *, int64_t, int64_t, int, float *, const float *,
                          float *, int64_t, const uint8_t *);
template <class W, int NI> struct row_blocks {
    static constexpr block_fn fn[k_cols + 1] = {nullptr,           block<W, NI, 1>, block<W, NI, 2>, block<W, NI, 3>,
                                                block<W, NI, 4>, block<W, NI, 5>, block<W, NI, 6>};
};
template <class W> struct blocks {
    static constexpr const block_fn * fn[k_rows + 1] = {nullptr, row_blocks<W, 1>::fn, row_blocks<W, 2>::fn,
                                                        row_blocks<W, 3>::fn, row_blocks<W, 4>::fn};
};

// no weight rows × n columns widened to F32 rows ld floats apart (zeros past n)
template <class W>
MB_AVX512 void widen(const uint8_t * w, int64_t wst, int no, int64_t n, float * dst, int64_t ld) {
    const int64_t n16 = n & ~int64_t(15);
    for (int j = 0; j < no; ++j) {
        float * d = dst + j * ld;
        for (int64_t c = 0; c < n16; c += 16) _mm512_store_ps(d + c, load16<W>(w + j * wst, c));
        if (n16 < n) _mm512_store_ps(d + n16, tail16<W>(w + j * wst, n16, n - n16));
    }
}

// per-thread 64-byte aligned scratch that only grows (the pool's threads keep theirs)
struct scratch {
    float * p = nullptr;
    size_t  n = 0;
    ~scratch() { std::free(p); }
    float * get(size_t floats) {
        if (floats > n) {
            std::free(p);
            n = (floats + 15) / 16 * 16;
            p = static_cast<float *>(std::aligned_alloc(64, n * sizeof(float)));
            if (!p) {
                n = 0;
                throw std::bad_alloc();
            }
        }
        return p;
    }
};
thread_local scratch t_acc, t_x;

// the next column block's rows ([from, to), contiguous) fetched towards L2 a slice per block call, so
// the weight stream overlaps the arithmetic instead of stalling each widening or preparation
struct l2_stream {
    const char * p, * end;
    int64_t      step;
    l2_stream(const uint8_t * from, const uint8_t * to, int64_t calls)
        : p(reinterpret_cast<const char *>(from)), end(reinterpret_cast<const char *>(to)),
          step(((end - p + 63) / 64 + calls - 1) / calls * 64) {}
    MB_AVX512 void slice() {
        for (const char * e = std::min(end, p + step); p < e; p += 64) _mm_prefetch(p, _MM_HINT_T1);
    }
};

template <class W>
MB_AVX512 void gemm_rows(const float * x, int64_t m, int64_t ldx, int64_t k, const uint8_t * w, const float * b,
                         int64_t o0, int64_t o1, float * y, int64_t ldy) {
    if (k <= 0) {
        for (int64_t i = 0; i < m; ++i)
            for (int64_t o = o0; o < o1; ++o) y[i * ldy + o] = 0.0f + (b ? b[o] : 0.0f);
        return;
    }
    const int64_t wst   = W::row_bytes(k);
    const int64_t panel = panels::panel_rows(k);
    alignas(64) float wide[k_cols * (k_chunk + 16)];
    for (int64_t i0 = 0; i0 < m; i0 += panel) {
        const int64_t mi   = std::min(panel, m - i0);
        const bool    pack = mi >= k_pack_rows;
        const int64_t kc   = mi <= k_rows ? k : k_chunk;    // one row group reads each weight once anyway
        const float * xi   = x + i0 * ldx;
        int64_t       ldxi = ldx;
        if (pack && (ldx % 16 != 0 || reinterpret_cast<uintptr_t>(xi) % 64 != 0)) {
            // rows that start off a cache line (k % 16 ≠ 0) copied to aligned ones once
            ldxi      = (k + 15) / 16 * 16;
            float * d = t_x.get(size_t(mi * ldxi));
            for (int64_t i = 0; i < mi; ++i) std::memcpy(d + i * ldxi, xi + i * ldx, size_t(k) * sizeof(float));
            xi = d;
        }
        float * acc = t_acc.get(size_t((mi + k_rows) * k_cols * 16));
        float * yi  = y + i0 * ldy;
        // chunks per weight row (the last one takes a tail shorter than 16 columns along)
        int64_t n_chunks = 1;
        while (k - n_chunks * kc >= 16) ++n_chunks;
        const int64_t calls = n_chunks * ((mi + k_rows - 1) / k_rows);    // block calls per column block
        for (int64_t o = o0; o < o1; o += k_cols) {
            const int       no   = (int) std::min<int64_t>(k_cols, o1 - o);
            const uint8_t * wo   = w + o * wst;
            const uint8_t * next = o + 2 * k_cols <= o1 ? wo + k_cols * wst : nullptr;
            const float *   bo   = b ? b + o : nullptr;
            l2_stream       pf(wo + no * wst, w + std::min(o1, o + no + k_cols) * wst, calls);
            for (int64_t c0 = 0, c1; c0 < k; c0 = c1) {
                c1              = k - c0 < kc + 16 ? k : c0 + kc;
                const int64_t n = c1 - c0;
                const int     f = (c0 == 0 ? FIRST : 0) | (c1 == k ? LAST : 0);
                const uint8_t * wc  = wo + W::row_bytes(c0);
                const uint8_t * pfc = next ? next + W::row_bytes(c0) : nullptr;
                if (pack) {
                    const int64_t ld = (n + 15) / 16 * 16;
                    widen<W>(wc, wst, no, n, wide, ld);
                    const block_fn * const * fns = blocks<w_f32>::fn;
                    for (int64_t i = 0; i < mi; i += k_rows) {
                        pf.slice();
                        const int ni = (int) std::min<int64_t>(k_rows, mi - i);
                        fns[ni][no](xi + i * ldxi + c0, ldxi, reinterpret_cast<const uint8_t *>(wide), ld * 4, n, f,
                                    acc + i * k_cols * 16, bo, yi + i * ldy + o, ldy, nullptr);
                    }
                } else {
                    const block_fn * const * fns = blocks<W>::fn;
                    for (int64_t i = 0; i < mi; i += k_rows, pfc = nullptr) {
                        const int ni = (int) std::min<int64_t>(k_rows, mi - i);
                        fns[ni][no](xi + i * ldxi + c0, ldxi, wc, wst, n, f, acc + i * k_cols * 16, bo,
                                    yi + i * ldy + o, ldy, pfc);
                    }
                }
            }
        }
    }
}

// ---- the dot-product levels on packed activations (cpu-gemm.cpp packs x once per op): BF16
// weights by vdpbf16ps on x rounded to bfloat16, Q8_0 by vpdpbusd on x quantised per 32 values.
// Each output keeps one 16-lane accumulator, updated step by step in c order, and its lanes are
// added pairwise (l + 8, + 4, + 2, + 1) at the end, so the blocking, the k chunks and where a
// weight step is read from change no bit. With many rows (D::prep_rows) a column block's weight steps are
// prepared once per chunk into aligned scratch (the in-place rows are 32-byte aligned and Q8_0
// blocks 34 bytes apart: every step was re-sliced, re-scaled and re-summed for each 4-row group)

#define MB_AVX512_DOT __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16,avx512vnni,avx2,fma,f16c")))

// BF16: a step is 32 values (64 bytes of a weight row); x rows hold k rounded up to 32 values, zeros past k
struct dot_bf16 {
    static constexpr int64_t S  = 32;    // values per step
    static constexpr int64_t P  = 64;    // prepared bytes per step and weight row
    static constexpr int     NO = 4;     // weight rows per block: 16 accumulators (4 × 6 spilled, measured slower)
    // prepared from three row groups on (10 × 1024 → 3072, weights in cache, one thread: 0.42 → 0.30 ms;
    // from memory no slower; two groups were slower)
    static constexpr int64_t prep_rows = 9;
    struct wstep {
        __m512bh w;
    };
    struct xstep {
        __m512bh x;
    };
    static int64_t         row_bytes(int64_t k) { return k * 2; }
    static const uint8_t * at(const uint8_t * row, int64_t c) { return row + c * 2; }
    MB_AVX512_DOT static wstep load(const uint8_t * row, int64_t c, int64_t k) {
        // the row's last values masked where a row of k ends inside this step
        const __mmask32 m = c + 32 <= k ? ~__mmask32(0) : (__mmask32) ((1u << ((k - c) & 31)) - 1u);
        return {(__m512bh) _mm512_maskz_loadu_epi16(m, row + c * 2)};
    }
    MB_AVX512_DOT static void  prep(const wstep & w, uint8_t * d) { _mm512_store_si512(d, (__m512i) w.w); }
    MB_AVX512_DOT static wstep load_prep(const uint8_t * d) { return {(__m512bh) _mm512_load_si512(d)}; }
    MB_AVX512_DOT static xstep load_x(const uint8_t * xr, int64_t c, int64_t) {
        return {(__m512bh) _mm512_loadu_si512(xr + c * 2)};
    }
    MB_AVX512_DOT static __m512 madd(__m512 acc, const xstep & x, const wstep & w) {
        return _mm512_dpbf16_ps(acc, x.x, w.w);
    }
};

// Q8_0: a step is two blocks (64 values; one at a row's odd end); x rows hold k codes + 128, then per 64
// values 16 floats of d_x (first block's in lanes 0–7). Per lane Σ u·w − 128·Σ w = Σ q·w exactly in
// int32, then × d_x·d_w in float
struct dot_q8 {
    static constexpr int64_t S  = 64;
    static constexpr int64_t P  = 192;   // the 64 codes, −128·Σ w per lane, d_w per lane
    static constexpr int     NO = 4;     // 16 accumulators, 12 weight vectors (3 columns measured the same)
    static constexpr int64_t prep_rows = k_pack_rows;    // from 5 or 9 rows: no faster at 10 rows
    struct wstep {
        __m512i w, ns;
        __m512  d;
    };
    struct xstep {
        __m512i x;
        __m512  d;
    };
    static int64_t         row_bytes(int64_t k) { return k / 32 * 34; }
    static const uint8_t * at(const uint8_t * row, int64_t c) { return row + c / 32 * 34; }
    MB_AVX512_DOT static wstep load(const uint8_t * row, int64_t c, int64_t k) {
        const bool      two = c + 64 <= k;    // rows are whole blocks: one block past the last pair
        const uint8_t * ba  = row + c / 32 * 34;
        // bytes 0–31 from the first block, 32–63 from the second (a masked load from 4 bytes on)
        const __m512i qa = _mm512_maskz_loadu_epi8(0xffffffffull, ba + 2);
        wstep         s;
        s.w  = _mm512_mask_loadu_epi8(qa, two ? 0xffffffff00000000ull : 0ull, ba + 4);
        s.ns = _mm512_sub_epi32(_mm512_setzero_si512(),
                                _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8(char(0x80)), s.w));
        uint16_t ha, hb;
        std::memcpy(&ha, ba, 2);
        std::memcpy(&hb, two ? ba + 34 : ba, 2);
        hb  = two ? hb : uint16_t(0);
        s.d = _mm512_mask_blend_ps(0xff00, _mm512_set1_ps(_cvtsh_ss(ha)), _mm512_set1_ps(_cvtsh_ss(hb)));
        return s;
    }
    MB_AVX512_DOT static void prep(const wstep & w, uint8_t * d) {
        _mm512_store_si512(d, w.w);
        _mm512_store_si512(d + 64, w.ns);
        _mm512_store_ps(d + 128, w.d);
    }
    MB_AVX512_DOT static wstep load_prep(const uint8_t * d) {
        return {_mm512_load_si512(d), _mm512_load_si512(d + 64), _mm512_load_ps(d + 128)};
    }
    MB_AVX512_DOT static xstep load_x(const uint8_t * xr, int64_t c, int64_t k) {
        return {_mm512_maskz_loadu_epi8(c + 64 <= k ? ~0ull : 0xffffffffull, xr + c),
                _mm512_loadu_ps(reinterpret_cast<const float *>(xr + k) + c / 64 * 16)};
    }
    MB_AVX512_DOT static __m512 madd(__m512 acc, const xstep & x, const wstep & w) {
        const __m512i s = _mm512_dpbusd_epi32(w.ns, x.x, w.w);
        return _mm512_fmadd_ps(_mm512_maskz_cvtepi32_ps(0xffff, s), _mm512_mul_ps(x.d, w.d), acc);
    }
};

// an NI × NO block over values [c0, c1) of one chunk: x the group's first packed row (rows xst
// bytes apart); w the first weight row in place (rows wst bytes apart) or, PREP, its prepared
// steps of this chunk (rows wst bytes apart). Accumulators start at zero (FIRST) or from s, and go
// back to s or, on the LAST chunk, into y + b. pf: the next block's rows in place, fetched towards L2
template <class D, int NI, int NO, bool PREP>
MB_AVX512_DOT void dot_block(const uint8_t * x, int64_t xst, int64_t k, const uint8_t * w, int64_t wst, int64_t c0,
                             int64_t c1, int flags, float * s, const float * b, float * y, int64_t ldy,
                             const uint8_t * pf) {
    __m512 acc[NI][NO];
    for (int i = 0; i < NI; ++i)
        for (int j = 0; j < NO; ++j) acc[i][j] = flags & FIRST ? _mm512_setzero_ps() : _mm512_load_ps(s + (i * NO + j) * 16);
    // without a next block the current one is fetched again (harmless)
    const uint8_t * pfw = pf ? pf : w;
    for (int64_t c = c0; c < c1; c += D::S) {
        if constexpr (!PREP) {
            for (int j = 0; j < NO; ++j) _mm_prefetch((const char *) D::at(pfw + j * wst, c), _MM_HINT_T1);
        }
        typename D::wstep ws[NO];
        for (int j = 0; j < NO; ++j) {
            ws[j] = PREP ? D::load_prep(w + j * wst + (c - c0) / D::S * D::P) : D::load(w + j * wst, c, k);
        }
        for (int i = 0; i < NI; ++i) {
            const typename D::xstep xs = D::load_x(x + i * xst, c, k);
            for (int j = 0; j < NO; ++j) acc[i][j] = D::madd(acc[i][j], xs, ws[j]);
        }
    }
    if (!(flags & LAST)) {
        for (int i = 0; i < NI; ++i)
            for (int j = 0; j < NO; ++j) _mm512_store_ps(s + (i * NO + j) * 16, acc[i][j]);
        return;
    }
    write_sums<NI * NO, NO>(&acc[0][0], b, y, ldy);
}

using dot_fn = void (*)(const uint8_t *, int64_t, int64_t, const uint8_t *, int64_t, int64_t, int64_t, int, float *,
                        const float *, float *, int64_t, const uint8_t *);
template <class D, bool PREP, int NI> struct dot_row_blocks {
    template <size_t... J> static constexpr std::array<dot_fn, D::NO + 1> make(std::index_sequence<J...>) {
        return {nullptr, dot_block<D, NI, int(J) + 1, PREP>...};
    }
    static constexpr std::array<dot_fn, D::NO + 1> fn = make(std::make_index_sequence<D::NO>());
};
template <class D, bool PREP> struct dot_blocks {
    static constexpr const dot_fn * fn[k_rows + 1] = {nullptr, dot_row_blocks<D, PREP, 1>::fn.data(),
                                                      dot_row_blocks<D, PREP, 2>::fn.data(),
                                                      dot_row_blocks<D, PREP, 3>::fn.data(),
                                                      dot_row_blocks<D, PREP, 4>::fn.data()};
};

constexpr int64_t k_dot_chunk = 1024;    // values per chunk: a block's prepared steps stay in L1 (12 KiB)
thread_local scratch t_dot;

template <class D>
MB_AVX512_DOT void gemm_dot_rows(const uint8_t * xp, int64_t xst, int64_t m, int64_t k, const uint8_t * w,
                                 const float * b, int64_t o0, int64_t o1, float * y, int64_t ldy) {
    constexpr int NO    = D::NO;
    const int64_t wst   = D::row_bytes(k);
    const int64_t panel = panels::panel_rows(k);
    const int64_t lp    = k_dot_chunk / D::S * D::P;    // prepared bytes of one weight row's chunk
    auto *        wide  = reinterpret_cast<uint8_t *>(t_dot.get(size_t(NO * lp / 4)));
    for (int64_t i0 = 0; i0 < m; i0 += panel) {
        const int64_t   mi   = std::min(panel, m - i0);
        const bool      prep = mi >= D::prep_rows;
        const int64_t   kc   = mi <= k_rows ? k : k_dot_chunk;    // one row group reads each weight once anyway
        const uint8_t * xi   = xp + i0 * xst;
        float *         acc  = t_acc.get(size_t((mi + k_rows) * NO * 16));
        float *         yi   = y + i0 * ldy;
        const int64_t   n_chunks = (k + kc - 1) / kc;
        const int64_t   calls    = n_chunks * ((mi + k_rows - 1) / k_rows);    // block calls per column block
        for (int64_t o = o0; o < o1; o += NO) {
            const int       no   = (int) std::min<int64_t>(NO, o1 - o);
            const uint8_t * wo   = w + o * wst;
            const uint8_t * next = o + 2 * NO <= o1 ? wo + NO * wst : nullptr;
            const float *   bo   = b ? b + o : nullptr;
            l2_stream       pf(wo + no * wst, w + std::min(o1, o + no + NO) * wst, calls);
            for (int64_t c0 = 0; c0 < k; c0 += kc) {
                const int64_t c1 = std::min(k, c0 + kc);
                const int     f  = (c0 == 0 ? FIRST : 0) | (c1 == k ? LAST : 0);
                if (prep) {
                    for (int j = 0; j < no; ++j)
                        for (int64_t c = c0; c < c1; c += D::S) D::prep(D::load(wo + j * wst, c, k), wide + j * lp + (c - c0) / D::S * D::P);
                    const dot_fn * const * fns = dot_blocks<D, true>::fn;
                    for (int64_t i = 0; i < mi; i += k_rows) {
                        pf.slice();
                        const int ni = (int) std::min<int64_t>(k_rows, mi - i);
                        fns[ni][no](xi + i * xst, xst, k, wide, lp, c0, c1, f, acc + i * NO * 16, bo, yi + i * ldy + o,
                                    ldy, nullptr);
                    }
                } else {
                    const dot_fn * const * fns = dot_blocks<D, false>::fn;
                    const uint8_t *        pfc = next;
                    for (int64_t i = 0; i < mi; i += k_rows, pfc = nullptr) {
                        const int ni = (int) std::min<int64_t>(k_rows, mi - i);
                        fns[ni][no](xi + i * xst, xst, k, wo, wst, c0, c1, f, acc + i * NO * 16, bo, yi + i * ldy + o,
                                    ldy, pfc);
                    }
                }
            }
        }
    }
}

} // namespace

void gemm_dot_avx512(const uint8_t * xp, int64_t xst, int64_t m, int64_t k, const uint8_t * w, weight_type wt,
                     const float * b, int64_t o0, int64_t o1, float * y, int64_t ldy) {
    if (wt == weight_type::WEIGHT_BF16) gemm_dot_rows<dot_bf16>(xp, xst, m, k, w, b, o0, o1, y, ldy);
    else if (wt == weight_type::WEIGHT_Q8_0) gemm_dot_rows<dot_q8>(xp, xst, m, k, w, b, o0, o1, y, ldy);
}

void gemm_nt_avx512(const float * x, int64_t m, int64_t ldx, int64_t k, const uint8_t * w, weight_type wt,
                    const float * b, int64_t o0, int64_t o1, float * y, int64_t ldy) {
    switch (wt) {
        case weight_type::WEIGHT_F32: gemm_rows<w_f32>(x, m, ldx, k, w, b, o0, o1, y, ldy); return;
        case weight_type::WEIGHT_BF16: gemm_rows<w_bf16>(x, m, ldx, k, w, b, o0, o1, y, ldy); return;
        case weight_type::WEIGHT_Q8_0: gemm_rows<w_q8_0>(x, m, ldx, k, w, b, o0, o1, y, ldy); return;
    }
}

#else

void gemm_dot_avx512(const uint8_t *, int64_t, int64_t, int64_t, const uint8_t *, weight_type, const float *, int64_t,
                     int64_t, float *, int64_t) {}

void gemm_nt_avx512(const float *, int64_t, int64_t, int64_t, const uint8_t *, weight_type, const float *, int64_t,
                    int64_t, float *, int64_t) {}

#endif

} // namespace mb::cpu
