// small valid .mbparity and .mbreplay contents for the format tests and the fuzz seeds
#pragma once

#include "format/mbparity.h"
#include "format/mbreplay.h"

namespace mb::test {

// upstream's G1Skeleton34 parents
inline constexpr int32_t k_g1_parents[34] = {-1, 0,  1,  2,  3,  4,  5,  6,  0,  8,  9,  10, 11, 12, 13, 0,  15,
                                             16, 17, 18, 19, 20, 21, 22, 23, 24, 17, 26, 27, 28, 29, 30, 31, 32};

// two plans of 24 and 28 frames; identity rotations, values that vary with the index
inline parity_fixture sample_parity() {
    parity_fixture f;
    for (int j = 0; j < 34; ++j) {
        f.parents[j] = k_g1_parents[j];
        for (int c = 0; c < 3; ++c) f.neutral[j * 3 + c] = 0.01f * float(j) + 0.1f * float(c);
    }
    auto fill = [](std::vector<float> & v, size_t n, float base) {
        v.resize(n);
        for (size_t i = 0; i < n; ++i) v[i] = base + 0.001f * float(i % 97);
    };
    auto quats = [](std::vector<float> & v, size_t n) {
        v.assign(n * 4, 0.0f);
        for (size_t i = 0; i < n; ++i) v[i * 4 + 3] = 1.0f;
    };
    for (uint32_t p = 0; p < 2; ++p) {
        parity_plan pl;
        pl.command_frame = 16 * (p + 1);
        pl.frames        = 24 + 4 * p;
        pl.mode          = int32_t(2 + p);
        pl.seed          = 0x1'0000'0000ull * p + 1486;
        pl.movement[2]   = 1.0f;
        pl.facing[0]     = 0.5f;
        pl.facing[2]     = 0.5f;
        const size_t F   = pl.frames;
        fill(pl.context_roots, 12, 0.8f);
        quats(pl.context_local_xyzw, 4 * 34);
        fill(pl.expected_roots, F * 3, 0.7f);
        quats(pl.expected_local_xyzw, F * 34);
        fill(pl.expected_joints, F * 34 * 3, 0.2f);
        fill(pl.target_roots, 12, 1.5f);
        quats(pl.target_local_xyzw, 4 * 34);
        fill(pl.target_joints, 4 * 34 * 3, 1.2f);
        f.plans.push_back(pl);
    }
    return f;
}

// 40 frames of 5 joints and 7 qpos values, 3 plans (pre-roll for frames 0..3)
inline replay_session sample_replay() {
    replay_session s;
    s.fps       = 30;
    s.joints    = 5;
    s.qpos_size = 7;
    s.parents   = {-1, 0, 1, 0, 3};
    const uint32_t F = 40;
    for (uint32_t i = 0; i < F; ++i) {
        s.modes.push_back(int32_t(i / 16));
        s.active_plan.push_back(i < 4 ? -1 : int32_t((i - 4) / 12));
    }
    s.qpos.resize(F * 7);
    for (size_t i = 0; i < s.qpos.size(); ++i) s.qpos[i] = 0.01f * float(i % 31);
    s.positions.resize(F * 5 * 3);
    for (size_t i = 0; i < s.positions.size(); ++i) s.positions[i] = 0.02f * float(i % 17);
    s.plan_first_frame = {4, 16, 28};
    s.plan_mode        = {0, 2, 4};
    s.plan_frames      = {28, 32, 24};
    s.target_positions.resize(3 * 4 * 5 * 3);
    for (size_t i = 0; i < s.target_positions.size(); ++i) s.target_positions[i] = 0.5f + 0.01f * float(i % 13);
    return s;
}

} // namespace mb::test
