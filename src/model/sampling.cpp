#include "model/sampling.h"

#include <algorithm>
#include <cmath>

namespace mb {

uint64_t splitmix64::next_u64() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z          = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z          = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

float splitmix64::next_uniform() {
    return (float) (next_u64() >> 40) * (1.0f / 16777216.0f);
}

void uniforms_generate(uint64_t seed, float * out, size_t n) {
    splitmix64 rng(seed);
    for (size_t i = 0; i < n; ++i) out[i] = rng.next_uniform();
}

} // namespace mb
