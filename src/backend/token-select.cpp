#include "backend/token-select.h"

#include <algorithm>
#include <cmath>

namespace mb {

int32_t argmax_first(const float * x, int64_t n) {
    int32_t best = 0;
    for (int64_t i = 1; i < n; ++i) {
        // strict >: the first maximum wins; a NaN best is replaced by any number
        if (x[i] > x[best] || (std::isnan(x[best]) && !std::isnan(x[i]))) best = (int32_t) i;
    }
    return best;
}

float gumbel_noise(float u) {
    // g = −log(max(−log(max(u, 1e−20)), 1e−20)), all in float32 like torch
    const float inner = -std::log(std::max(u, 1e-20f));
    return -std::log(std::max(inner, 1e-20f));
}

int32_t gumbel_argmax(const float * logits, const float * u, int64_t n) {
    int32_t best  = 0;
    float   bestv = logits[0] + gumbel_noise(u[0]);
    for (int64_t i = 1; i < n; ++i) {
        const float v = logits[i] + gumbel_noise(u[i]);
        if (v > bestv || (std::isnan(bestv) && !std::isnan(v))) {
            best  = (int32_t) i;
            bestv = v;
        }
    }
    return best;
}

} // namespace mb
