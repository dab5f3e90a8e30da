// 30 fps qpos → other rates, the way upstream's deploy resamples planner output to 50 Hz
// (localmotion_kplanner.hpp:449-516): frame k of the new rate samples time k / rate at 30 fps
// position s = 30 k / rate, between frames floor(s) and min(floor(s) + 1, F - 1); root xyz and
// hinges linearly, the root quaternion by SLERP (shortest arc, lerp + normalise above |dot| 0.9995)
#pragma once

#include "motion/g1.h"

#include <cstdint>
#include <vector>

namespace mb {

// frames of a `frames`-frame 30 fps clip at `rate` Hz: floor(frames / 30 * rate) (upstream's count),
// `frames` itself at 30
int64_t resampled_frames(int64_t frames, int rate);

// one qpos [36] (quaternion w first) a fraction `w` (0..1) of the way from 30 fps frame f0 to
// f0 + 1 (both clamped to the clip); 50 Hz frame k is f0 = 3k / 5 (integer), w = (3k mod 5) / 5
void qpos_sample(const float * qpos, int64_t frames, int64_t f0, double w, double * out);

// the whole clip at `rate` (30 or 50) Hz: [resampled_frames, 36] (at 30 a copy)
std::vector<double> qpos_resample(const float * qpos, int64_t frames, int rate);

// unit quaternion SLERP a → b at t (any component order, both the same), upstream's quat_slerp_d
void quat_slerp(const double * a, const double * b, double t, double * out);

} // namespace mb
