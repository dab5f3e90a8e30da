// test-only: ../shared/fixtures/agent-small/clip_library.npz as the 15 styles the agent uses
// (its README's rebuild: corrected headings, speed = avg_root_vel / 2, the CLIPS masks)
#pragma once

#include "format/style.h"
#include "support/npz.h"

#include <map>
#include <string>
#include <vector>

namespace mb::test {

inline const char * const k_clip_modes[15] = {
    "idle",         "slow_walk",    "walk",        "hand_crawling",    "walk_boxing",
    "elbow_crawling", "stealth_walk", "injured_walk", "walk_stealth",   "walk_happy_dance",
    "walk_zombie",  "walk_gun",     "walk_scared", "walk_left",        "walk_right",
};

inline std::vector<style_asset> clip_library_styles(const std::map<std::string, npy_array> & z) {
    const auto nframes = z.at("num_frames_per_clip").to_i64();
    const auto jp      = z.at("global_joint_positions").to_f32();
    const auto jr      = z.at("global_joint_rotations").to_f32();
    const auto rp      = z.at("global_root_positions").to_f32();
    const auto hd      = z.at("global_headings").to_f32();
    const auto vel     = z.at("mode_avg_root_vel").to_f32();
    const auto mask    = z.at("mode_allowed_pred_num_tokens").to_i64();
    const int64_t fmax = z.at("global_headings").shape[1];
    std::vector<style_asset> out;
    for (int m = 0; m < 15; ++m) {
        style_asset s;
        s.name          = k_clip_modes[m];
        s.speed         = vel[m] / 2;
        s.frames        = uint32_t(nframes[m]);
        s.index         = uint32_t(m);
        s.source_sha256 = std::string(64, '0');
        const size_t n  = s.frames;
        s.joint_positions.assign(&jp[m * fmax * 102], &jp[m * fmax * 102] + n * 102);
        s.joint_rotations.assign(&jr[m * fmax * 306], &jr[m * fmax * 306] + n * 306);
        s.root_positions.assign(&rp[m * fmax * 3], &rp[m * fmax * 3] + n * 3);
        s.headings.assign(&hd[m * fmax], &hd[m * fmax] + n);
        for (int i = 0; i < 11; ++i) s.allowed_tokens[i] = int32_t(mask[m * 11 + i]);
        out.push_back(std::move(s));
    }
    return out;
}

} // namespace mb::test
