// .mbreplay v1: portable observational replay of a captured session (the displayed MuJoCo qpos,
// the animated joints' world positions and each plan's placed targets). Layout in mbreplay.cpp
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mb {

constexpr uint32_t k_mbreplay_version      = 1;
constexpr uint32_t k_mbreplay_targets      = 4;          // target frames per plan
constexpr uint32_t k_mbreplay_max_fps      = 1000;
constexpr uint32_t k_mbreplay_max_frames   = 1000000;
constexpr uint32_t k_mbreplay_max_joints   = 64;
constexpr uint32_t k_mbreplay_max_qpos     = 256;
constexpr int32_t  k_mbreplay_max_mode     = 14;
constexpr uint64_t k_mbreplay_max_bytes    = 512ull << 20;

struct replay_session {
    uint32_t              fps    = 30;      // 1..1000
    uint32_t              joints = 0;       // J: animated bodies, 1..64 (the G1 replay: root + 29)
    uint32_t              qpos_size = 0;    // Q: qpos values per frame, 1..256 (the G1: 36)
    std::vector<int32_t>  parents;          // [J] root −1, parent[j] in 0..j−1 for j > 0
    std::vector<int32_t>  modes;            // [frames] mode 0..14 shown at each frame (frames: 1..1,000,000)
    std::vector<int32_t>  active_plan;      // [frames] plan playing, −1 (pre-roll) or 0..plans−1
    std::vector<float>    qpos;             // [frames, Q] displayed MuJoCo qpos
    std::vector<float>    positions;        // [frames, J, 3] animated joint world positions (Y up, Z forward)
    std::vector<uint32_t> plan_first_frame; // [plans] first playback frame, < frames, non-decreasing (plans ≤ frames)
    std::vector<int32_t>  plan_mode;        // [plans] 0..14
    std::vector<uint32_t> plan_frames;      // [plans] generated length (frames), 1..1,000,000
    std::vector<float>    target_positions; // [plans, 4, J, 3] placed target joint world positions

    uint32_t frames() const { return uint32_t(modes.size()); }
    uint32_t plans() const { return uint32_t(plan_first_frame.size()); }
};

// "" when `s` is a valid session, else the first problem
std::string mbreplay_validate(const replay_session & s);

// parses and fully validates a whole file's bytes; throws mb::error(invalid_format) naming field and offset
replay_session mbreplay_parse(std::string_view bytes, const std::string & name);

// reads a regular file (at most 512 MiB) and parses it; throws mb::error (io_error, invalid_format)
replay_session mbreplay_read(const std::string & path);

// the file's bytes; throws mb::error(invalid_argument) when `s` is not valid
std::string mbreplay_serialize(const replay_session & s);

// validates and writes atomically; throws mb::error
void mbreplay_write(const std::string & path, const replay_session & s);

} // namespace mb
