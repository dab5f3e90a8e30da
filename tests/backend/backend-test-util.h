// shared by the backend tests: seeded unit-normal inputs, the max error against a double
// reference, and host vectors addressed directly (CPU backends only)
#pragma once

#include "backend/backend.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace mb::test {

inline std::vector<float> random_vec(size_t n, uint32_t seed) {
    std::mt19937                    rng(seed);
    std::normal_distribution<float> dist(0.0f, 1.0f);
    std::vector<float>              v(n);
    for (auto & x : v) x = dist(rng);
    return v;
}

inline double max_abs_diff(const std::vector<float> & a, const std::vector<double> & b) {
    double m = 0.0;
    for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs((double) a[i] - b[i]));
    return m;
}

// a host vector as backend memory: valid on CPU backends only, whose buffers are host memory
template <class T> bptr<T> host(std::vector<T> & v) {
    return bptr<T>(v.data());
}
template <class T> bptr<const T> host(const std::vector<T> & v) {
    return bptr<const T>(v.data());
}

} // namespace mb::test
