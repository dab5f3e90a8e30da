// upstream's motion representation at inference (motionlib dual_root_global_joints):
// feature-block indices of the 418-d dual layout, normalisation with float32 stats,
// global ↔ local root conversion, 6D ↔ matrix, the start-transform re-application.
// All math is float32 in upstream's operation order (Y up, metres, radians, 30 fps).
#pragma once

#include "format/bundle.h"
#include "motion/rotation.h"   // 6D and quaternion conversions

#include <array>
#include <cstdint>
#include <span>

namespace mb {

constexpr int   k_motion_fps    = 30;
constexpr int   k_global_dim    = 414;  // global rep: x, y, z, cos h, sin h, body (409)
constexpr int   k_local_dim     = 413;  // local rep: rot vel, vx, vz, y, body (409)
constexpr int   k_pose_feat_dim = 304;  // root height + ric_data (99) + global_rot_data (204)
constexpr float k_stats_eps     = 1e-5f;

// offsets inside the 414-d global rep
constexpr int k_global_ric     = 5;     // ric_data [5, 104)
constexpr int k_global_rot6d   = 104;   // global_rot_data [104, 308)

// which dual (418) indices a feature subset gathers, in subset order
enum class feature_subset : uint32_t {
    FEATURE_SUBSET_GLOBAL_ROOT = 0,     // 5: x, y, z, cos h, sin h        (dual 0..4)
    FEATURE_SUBSET_LOCAL_ROOT  = 1,     // 4: dh/dt, vx, vz, y             (dual 5..8)
    FEATURE_SUBSET_POSE        = 2,     // 304: root y, ric, 6D            (dual 8..311)
    FEATURE_SUBSET_GLOBAL      = 3,     // 414: global root + body         (dual 0..4, 9..417)
    FEATURE_SUBSET_LOCAL       = 4,     // 413: local root + body          (dual 5..417)
};

// the dual indices of a subset (static storage)
std::span<const int> feature_subset_indices(feature_subset s);

// the 418-d statistics as upstream uses them: float64 stats cast to float32, then
// scale = sqrt(std² + 1e-5) computed in float32
struct motion_stats {
    std::array<float, k_n_features> mean{};    // [418]
    std::array<float, k_n_features> scale{};   // [418] sqrt(std² + eps)

    static motion_stats from_support(const model_support & sup);
    static motion_stats from_f32(const float * mean, const float * std);

    // y[r, i] = (x[r, i] − mean[idx[i]]) / scale[idx[i]] for n rows of idx.size() values; y may alias x
    void normalize(const float * x, int64_t n_rows, feature_subset s, float * y) const;
    // y[r, i] = x[r, i]·scale[idx[i]] + mean[idx[i]]; y may alias x
    void unnormalize(const float * x, int64_t n_rows, feature_subset s, float * y) const;
};

// upstream global_to_local on the root only, unnormalised, for a sequence of n ≥ 2 valid frames:
// g[n, 5] (x, y, z, cos h, sin h) → l[n, 4] (dh/dt, vx, vz, y) with forward differences × fps;
// the last frame repeats the previous velocity
void global_root_to_local(const float * g, int64_t n, float * l);

// upstream local_to_global, unnormalised: local[n, 413] → global[n, 414]; heading and xz are
// integrated from 0 (the last frame's velocity is unused), the body is copied
void local_to_global(const float * local, int64_t n, float * global);

// adds the start offset (x, z) and heading h0 to global features [n, 414] in place
// (upstream _reapply_initial_root_info)
void reapply_start_transform(float * global, int64_t n, float ref_x, float ref_z, float ref_heading);

} // namespace mb
