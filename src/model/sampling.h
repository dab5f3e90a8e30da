// token sampling exactly as upstream: argmax (first index on ties) and Gumbel-max
// with g = −log(max(−log(max(u, 1e−20)), 1e−20)), tokens = argmax(logits + g).
// Uniforms come either from the caller (to replay another runtime's draws) or from
// SplitMix64, which is fully specified here so every platform draws the same values.
#pragma once

#include "backend/token-select.h"

#include <cstddef>
#include <cstdint>

namespace mb {

// SplitMix64 (Steele, Lea, Flood 2014): state += 0x9E3779B97F4A7C15, then
// z = (z ^ (z >> 30))·0xBF58476D1CE4E5B9, z = (z ^ (z >> 27))·0x94D049BB133111EB, z ^ (z >> 31)
struct splitmix64 {
    uint64_t state = 0;     // advanced by every draw

    explicit splitmix64(uint64_t seed) : state(seed) {}

    uint64_t next_u64();
    // top 24 bits of next_u64() times 2^−24: exactly representable, in [0, 1)
    float    next_uniform();
};

// out[0..n) ← successive next_uniform() of splitmix64(seed); the pose decoder draws
// [steps, max_tokens, heads, codes] this way, in that (row-major) order
void uniforms_generate(uint64_t seed, float * out, size_t n);

} // namespace mb
