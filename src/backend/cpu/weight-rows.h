// weight row formats of the CPU GEMM kernels (cpu-gemm.cpp, cpu-gemm-neon.cpp): how a kernel
// reads value c of a weight row (w: the row's first byte); F32, BF16 (the top half of an F32) and
// Q8_0 (ggml's blocks of an F16 scale and 32 int8 values, 34 bytes)
#pragma once

#include "backend/backend.h"

#include <cstdint>
#include <cstring>

namespace mb::cpu::rows {

inline float half_to_float(uint16_t h) {
    const uint32_t sign = uint32_t(h & 0x8000) << 16;
    const uint32_t e    = (h >> 10) & 0x1f;
    uint32_t       m    = h & 0x3ff;
    uint32_t       bits;
    if (e == 0x1f) bits = sign | 0x7f800000u | (m << 13);             // inf, NaN
    else if (e != 0) bits = sign | ((e + 112) << 23) | (m << 13);     // normal
    else if (m == 0) bits = sign;                                      // zero
    else {                                                             // subnormal: normalise
        int ee = 113;
        while (!(m & 0x400)) {
            m <<= 1;
            --ee;
        }
        bits = sign | (uint32_t(ee) << 23) | ((m & 0x3ff) << 13);
    }
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

struct w_f32 {
    static constexpr weight_type type = weight_type::WEIGHT_F32;
    static int64_t row_bytes(int64_t k) { return k * 4; }
    static float   get(const uint8_t * w, int64_t c) {
        float v;
        std::memcpy(&v, w + c * 4, 4);
        return v;
    }
    static const uint8_t * at(const uint8_t * w, int64_t c) { return w + c * 4; }
};

struct w_bf16 {
    static constexpr weight_type type = weight_type::WEIGHT_BF16;
    static int64_t row_bytes(int64_t k) { return k * 2; }
    static float   get(const uint8_t * w, int64_t c) {
        uint16_t h;
        std::memcpy(&h, w + c * 2, 2);
        const uint32_t bits = uint32_t(h) << 16;
        float          v;
        std::memcpy(&v, &bits, 4);
        return v;
    }
    static const uint8_t * at(const uint8_t * w, int64_t c) { return w + c * 2; }
};

struct w_q8_0 {
    static constexpr weight_type type = weight_type::WEIGHT_Q8_0;
    static int64_t row_bytes(int64_t k) { return k / 32 * 34; }
    static const uint8_t * block(const uint8_t * w, int64_t c) { return w + (c >> 5) * 34; }
    static float scale(const uint8_t * blk) {
        uint16_t h;
        std::memcpy(&h, blk, 2);
        return half_to_float(h);
    }
    static float get(const uint8_t * w, int64_t c) {
        const uint8_t * blk = block(w, c);
        return scale(blk) * float(int8_t(blk[2 + (c & 31)]));
    }
    static const uint8_t * at(const uint8_t * w, int64_t c) { return block(w, c) + 2 + (c & 31); }
};

} // namespace mb::cpu::rows
