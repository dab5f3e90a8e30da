// the loop of the CPU GEMM kernels around their register blocks (cpu-gemm.cpp for x86,
// cpu-gemm-neon.cpp for ARM64): panels of rows of x, and 4 weight rows at a time over each panel
#pragma once

#include <algorithm>
#include <cstdint>

namespace mb::cpu::panels {

// column_fns[n] computes n output columns of all m rows (n = 1..4)
using column_fn = void (*)(const float * x, int64_t m, int64_t ldx, int64_t k, const uint8_t * w, int64_t wst,
                           const float * b, float * y, int64_t ldy, const uint8_t * pf);

// rows of x per pass: a panel of about 1 MiB stays in L2 while the weights pass over it once
// (a batch-one plan has a single panel, so its weights are read once; fused lanes give panels
// of many rows, each output still summed by the same block code in the same order)
inline int64_t panel_rows(int64_t k) {
    return std::max<int64_t>(12, (int64_t(1) << 18) / std::max<int64_t>(1, k) / 12 * 12);
}

// NO output columns of all m rows: K<NI, NO>::fn computes NI rows (x: floats, or packed bytes with
// ldx in bytes), in groups of 4 rows and then the m % 4 tail; pf (the next weight block, fetched
// towards L2) during the first group only
template <template <int, int> class K, int NO, class X>
void rows_by_four(const X * x, int64_t ldx, int64_t m, int64_t k, const uint8_t * w, int64_t wst, const float * b,
                  float * y, int64_t ldy, const uint8_t * pf) {
    int64_t i = 0;
    for (; i + 4 <= m; i += 4, pf = nullptr) K<4, NO>::fn(x + i * ldx, ldx, w, wst, k, b, y + i * ldy, ldy, pf);
    switch (m - i) {
        case 3: K<3, NO>::fn(x + i * ldx, ldx, w, wst, k, b, y + i * ldy, ldy, pf); break;
        case 2: K<2, NO>::fn(x + i * ldx, ldx, w, wst, k, b, y + i * ldy, ldy, pf); break;
        case 1: K<1, NO>::fn(x + i * ldx, ldx, w, wst, k, b, y + i * ldy, ldy, pf); break;
        default: break;
    }
}

template <class W>
void gemm_nt_blocked(const column_fn (&column_fns)[5], const float * x, int64_t m, int64_t ldx, int64_t k,
                     const uint8_t * w, const float * b, int64_t o0, int64_t o1, float * y, int64_t ldy) {
    const int64_t wst   = W::row_bytes(k);
    const int64_t panel = panel_rows(k);
    for (int64_t i0 = 0; i0 < m; i0 += panel) {
        const int64_t mi = std::min(panel, m - i0);
        const float * xi = x + i0 * ldx;
        float *       yi = y + i0 * ldy;
        // 4 weight rows at a time stay in L1 while every row of the panel passes over them
        int64_t o = o0;
        for (; o + 4 <= o1; o += 4) {
            const uint8_t * pf = o + 8 <= o1 ? w + (o + 4) * wst : nullptr;
            column_fns[4](xi, mi, ldx, k, w + o * wst, wst, b ? b + o : nullptr, yi + o, ldy, pf);
        }
        if (o < o1) column_fns[o1 - o](xi, mi, ldx, k, w + o * wst, wst, b ? b + o : nullptr, yi + o, ldy, nullptr);
    }
}

} // namespace mb::cpu::panels
