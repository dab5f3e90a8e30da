// .mbparity v1: open-loop plan parity fixture (independent planning events: context, command,
// upstream's unblended output and placed targets). Layout in mbparity.cpp, docs/FORMATS.md
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mb {

constexpr uint32_t k_mbparity_version     = 1;
constexpr uint32_t k_mbparity_joints      = 34;
constexpr uint32_t k_mbparity_window      = 4;            // context frames = target frames
constexpr uint32_t k_mbparity_max_plans   = 10000;
constexpr uint32_t k_mbparity_max_fps     = 1000;
constexpr uint32_t k_mbparity_min_frames  = 24;           // expected frames: 24..64, a multiple of 4
constexpr uint32_t k_mbparity_max_frames  = 64;
constexpr int32_t  k_mbparity_max_mode    = 14;           // the 15 modes of upstream's CLIPS table
constexpr uint64_t k_mbparity_max_bytes   = 512ull << 20;
constexpr float    k_mbparity_quat_lo     = 0.99f;        // squared quaternion norm, exclusive bounds
constexpr float    k_mbparity_quat_hi     = 1.01f;

struct parity_plan {
    uint32_t           command_frame = 0;   // session frame at which upstream planned
    uint32_t           frames        = 0;   // F: upstream's duration (24..64, a multiple of 4)
    int32_t            mode          = 0;   // controller mode 0..14 (upstream's CLIPS order)
    uint64_t           seed          = 0;   // the plan's clip-frame draw (target frame k = seed mod (clip frames − 4))
    float              movement[3]   = {};  // movement direction, motion space (Y up, Z forward)
    float              facing[3]     = {};  // facing direction, motion space
    std::vector<float> context_roots;       // [4, 3] pelvis positions (m), world
    std::vector<float> context_local_xyzw;  // [4, 34, 4] parent-relative rotations (root: world)
    std::vector<float> expected_roots;      // [F, 3] upstream's unblended output, world
    std::vector<float> expected_local_xyzw; // [F, 34, 4]
    std::vector<float> expected_joints;     // [F, 34, 3] FK positions (m), world
    std::vector<float> target_roots;        // [4, 3] placed target poses, world
    std::vector<float> target_local_xyzw;   // [4, 34, 4]
    std::vector<float> target_joints;       // [4, 34, 3]
};

struct parity_fixture {
    uint32_t                 fps = 30;        // frames per second (1..1000)
    std::array<int32_t, 34>  parents{};       // root −1, every other parent below its joint
    std::array<float, 34 * 3> neutral{};      // neutral joint positions (m), motion space
    std::vector<parity_plan> plans;           // 1..10,000
};

// "" when `f` is a valid fixture, else the first problem (field, plan, index)
std::string mbparity_validate(const parity_fixture & f);

// parses and fully validates a whole file's bytes; `name` prefixes every message. Throws
// mb::error(invalid_format) naming the field and byte offset
parity_fixture mbparity_parse(std::string_view bytes, const std::string & name);

// reads a regular file of at most 512 MiB and parses it; throws mb::error (io_error, invalid_format)
parity_fixture mbparity_read(const std::string & path);

// the file's bytes (deterministic); throws mb::error(invalid_argument) when `f` is not valid
std::string mbparity_serialize(const parity_fixture & f);

// validates and writes atomically; throws mb::error
void mbparity_write(const std::string & path, const parity_fixture & f);

} // namespace mb
