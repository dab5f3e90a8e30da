// the scalar token choice shared by every backend's reference and the host code that
// picks the root planner's duration: argmax (first index on ties, NaN never wins) and
// Gumbel-max with g = −log(max(−log(max(u, 1e−20)), 1e−20)), in float32 like torch
#pragma once

#include <cstdint>

namespace mb {

// index of the largest of x[0..n) (n ≥ 1), the first one on ties; NaN never wins (all NaN: 0)
int32_t argmax_first(const float * x, int64_t n);

// Gumbel noise of one uniform draw u ∈ [0, 1), computed in float32
float gumbel_noise(float u);

// argmax_first(logits[i] + gumbel_noise(u[i])) over i < n
int32_t gumbel_argmax(const float * logits, const float * u, int64_t n);

} // namespace mb
