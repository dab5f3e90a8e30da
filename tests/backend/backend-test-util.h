// shared by the backend tests: seeded unit-normal inputs and the max error against a double reference
#pragma once

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

} // namespace mb::test
