// SiLU for the CPU backend: y = x / (1 + e^−x), with a 16-wide exponential where the CPU has AVX-512;
// the exponential alone for attention
#pragma once

#include <cstdint>

namespace mb::cpu {

// y[i] for i < n (y may be x); vector: the AVX-512 exponential (Cephes' expf polynomial, within
// 2 ulp of e^−x), else std::exp. Every element goes through the same arithmetic wherever a range
// starts, so a split over threads changes no result
void silu_f32(const float * x, int64_t n, float * y, bool vector);

// y[i] = e^x[i] for i < n (y may be x), the same two paths (attention's softmax)
void exp_f32(const float * x, int64_t n, float * y, bool vector);

} // namespace mb::cpu
