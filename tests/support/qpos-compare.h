// test-only: comparing MuJoCo qpos of generated motion against upstream's, with hinge errors
// weighted by how ill-conditioned features → hinge angle is at that frame (random weights)
#pragma once

#include "motion/motion-rep.h"
#include "motion/qpos.h"
#include "motion/rotation.h"   // wrap_pi

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <numbers>
#include <vector>

namespace mb::test {

// a hinge error's weight in (0, 1]: 1 where the hinge is well conditioned, smaller where the
// path from the compared quantity to the hinge angle amplifies errors
using hinge_weight = std::function<double(int64_t frame, int hinge)>;

// weight 1/max(1, 1/radius) = min(1, radius): the atan2 conditioning of each hinge [frames, 29] of
// the features [frames, 414] (fixture README)
inline hinge_weight atan2_weight(const qpos_converter & conv, const float * features, int frames) {
    auto radius = std::make_shared<std::vector<float>>(size_t(frames) * 29);
    std::vector<float> q(36);
    for (int f = 0; f < frames; ++f) conv.features_to_qpos(&features[size_t(f) * 414], q.data(), &(*radius)[size_t(f) * 29]);
    return [radius](int64_t f, int k) { return std::min(1.0, (double) (*radius)[size_t(f) * 29 + size_t(k)]); };
}

// the RMS first-order gain from relative errors of the 204 6D rotation features of one frame
// [414] to hinge k's angle: sqrt(Σ (∂q_k/∂f_i · max(1, |f_i|))²), by central differences. A
// feature error of relative size ε spread over those features moves the hinge by about ε·gain.
// It covers both ill-conditioned steps of features → qpos: Gram–Schmidt of a 6D pair whose
// columns are nearly parallel (random weights give 6D values up to ~40) and the hinge's atan2.
inline double hinge_gain(const qpos_converter & conv, const float * features, int k) {
    std::vector<float> f(features, features + 414);
    float qp[36], qm[36];
    double g2 = 0;
    for (int i = k_global_rot6d; i < k_global_rot6d + 34 * 6; ++i) {
        const float s = std::max(1.0f, std::fabs(features[i]));
        f[i] = features[i] + 1e-3f * s;
        const float hi = f[i];
        conv.features_to_qpos(f.data(), qp);
        f[i] = features[i] - 1e-3f * s;
        const float lo = f[i];
        conv.features_to_qpos(f.data(), qm);
        f[i] = features[i];
        const double d = std::remainder(double(qp[7 + k]) - qm[7 + k], 2 * std::numbers::pi) / (double(hi) - lo) * s;
        g2 += d * d;
    }
    return std::sqrt(g2);
}

// weight 1/max(1, gain) with the hinge_gain of `features` [frames, 414]; `worst` (optional) receives
// the largest gain evaluated
inline hinge_weight gain_weight(const qpos_converter & conv, const float * features, double * worst = nullptr) {
    return [&conv, features, worst](int64_t f, int k) {
        const double g = hinge_gain(conv, &features[size_t(f) * 414], k);
        if (worst) *worst = std::max(*worst, g);
        return 1.0 / std::max(1.0, g);
    };
}

// the largest differences between two qpos sequences [frames, 36]: root position (absolute),
// root quaternion (up to sign), hinge angles (mod 2π, multiplied by `weight` when given; it is
// evaluated only where it could raise the hinge maximum)
struct qpos_errors {
    double position   = 0;
    double quaternion = 0;
    double hinge      = 0;
    double max() const { return std::max({position, quaternion, hinge}); }
};

inline qpos_errors qpos_compare(const float * a, const float * b, int64_t frames, const hinge_weight & weight = {}) {
    qpos_errors e;
    for (int64_t f = 0; f < frames; ++f) {
        const float * x = &a[f * 36];
        const float * y = &b[f * 36];
        for (int c = 0; c < 3; ++c) e.position = std::max(e.position, (double) std::fabs(x[c] - y[c]));
        double same = 0, flip = 0;
        for (int c = 3; c < 7; ++c) {
            same = std::max(same, (double) std::fabs(x[c] - y[c]));
            flip = std::max(flip, (double) std::fabs(x[c] + y[c]));
        }
        e.quaternion = std::max(e.quaternion, std::min(same, flip));
        for (int c = 7; c < 36; ++c) {
            const double d = std::fabs(wrap_pi((double) x[c] - (double) y[c]));
            if (d > e.hinge) e.hinge = std::max(e.hinge, weight ? d * weight(f, c - 7) : d);
        }
    }
    return e;
}

// the largest of the three
inline double qpos_diff(const float * a, const float * b, int64_t frames, const hinge_weight & weight = {}) {
    return qpos_compare(a, b, frames, weight).max();
}

} // namespace mb::test
