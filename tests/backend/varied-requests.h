// a varied set of full-size requests for motion-level comparisons (CPU vs CUDA, reduced
// precisions and weight types against F32)
#pragma once

#include "model/sampling.h"
#include "motion/predict.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace mb::test {

// request i of a varied set: target distance and heading, masks, forced or predicted
// duration, argmax or seeded Gumbel, 1..4 steps
inline mb::predict_request varied_request(int i) {
    mb::predict_request r;
    mb::splitmix64      rng(1000 + (uint64_t) i);
    auto                u = [&]() { return rng.next_uniform(); };
    const float dist = 0.5f + 2.5f * u(), dir = 6.2831853f * u(), head = 6.2831853f * u();
    for (int s = 0; s < mb::k_constraint_frames; ++s) {
        const bool  target = s >= 4;
        const float g[5]   = {target ? dist * std::sin(dir) : 0.0f, 0.8f, target ? dist * std::cos(dir) : 0.02f * s,
                              target ? std::cos(head) : 1.0f, target ? std::sin(head) : 0.0f};
        std::copy(g, g + 5, r.global_root.begin() + s * 5);
        r.global_root_mask[(size_t) s] = (s == 0 || !target || u() < 0.8f) ? 1 : 0;
        const float l[4] = {0.0f, 0.0f, target ? 0.0f : 1.0f, 0.8f};
        std::copy(l, l + 4, r.local_root.begin() + s * 4);
        r.local_root_mask[(size_t) s] = u() < 0.7f ? 1 : 0;
        r.pose_mask[(size_t) s]       = u() < 0.6f ? 1 : 0;
    }
    for (float & v : r.poses) v = 0.2f * u() - 0.1f;
    r.num_tokens          = i % 3 == 0 ? 6 + i % 11 : 0;
    r.sampling            = i % 2 ? mb::sampling_mode::SAMPLING_MODE_GUMBEL : mb::sampling_mode::SAMPLING_MODE_ARGMAX;
    r.seed                = 77 + (uint64_t) i;
    r.num_inference_steps = 1 + i % 4;
    return r;
}

// plans of a reduced precision or weight type against F32 plans of the same requests
struct motion_agreement {
    int                 same_n = 0, same_tokens = 0, total = 0;
    std::vector<double> joint;      // per joint and frame of same-duration plans: |Δ position|, m

    void add(const mb::predict_result & a, const mb::predict_result & b) {
        ++total;
        if (a.num_tokens != b.num_tokens) return;
        ++same_n;
        same_tokens += a.tokens == b.tokens;
        for (size_t k = 0; k + 2 < a.joint_positions.size(); k += 3) {
            double d2 = 0.0;
            for (int c = 0; c < 3; ++c) d2 += std::pow(double(a.joint_positions[k + c]) - b.joint_positions[k + c], 2);
            joint.push_back(std::sqrt(d2));
        }
    }
    // "durations a/n, tokens b/n, joint position diff (same-duration plans) max X mm, p99 Y mm"
    std::string summary() {
        std::sort(joint.begin(), joint.end());
        const double mx  = joint.empty() ? 0.0 : joint.back();
        const double p99 = joint.empty() ? 0.0 : joint[size_t(0.99 * double(joint.size() - 1))];
        char         buf[200];
        std::snprintf(buf, sizeof buf,
                      "durations %d/%d, tokens %d/%d, joint position diff (same-duration plans) max %.1f mm, p99 %.1f mm",
                      same_n, total, same_tokens, total, mx * 1e3, p99 * 1e3);
        return buf;
    }
};

} // namespace mb::test
