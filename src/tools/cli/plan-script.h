// the `motionbricks plan` control script (docs/AGENT.md): a JSON array of segments
//   {"frames": N, "style": NAME, "movement": [x, z], "facing": [x, z], "speed": V, "seed": S,
//    "target": [x, z], "target_heading": H}
#pragma once

#include "format/json-bounded.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace mb::cli {

// a script holds at most 10000 segments. The largest valid one (every field, 17-digit numbers,
// indented by 4) is 437 bytes a segment: 4.4 MB, 15 values a segment (150k), 3 levels deep
// (array > segment > [x, z]); the bounds leave room for other layouts
inline constexpr size_t      k_max_segments = 10000;
inline constexpr json_bounds k_script_bounds = {
    .max_bytes  = size_t(8) << 20,
    .max_depth  = 4,
    .max_values = 200000,
};

struct plan_segment {
    int                  frames = 0;
    int                  style  = 0;
    bool                 has_move   = false;
    bool                 has_facing = false;
    float                movement[2] = {0, 0};
    float                facing[2]   = {0, 0};
    float                speed       = -1.0f;
    std::optional<uint64_t> seed;
    bool                 has_target  = false;
    float                target[2]   = {0, 0};      // motion (x, z)
    float                target_heading = 0;        // rad about +Y
};

// a script problem (the command exits with 2)
struct bad_script : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// parses and validates a whole script; find_style maps a style name to its index (< 0: unknown).
// Throws bad_script naming the segment, the field and the problem.
std::vector<plan_segment> parse_plan_script(const std::string & text,
                                            const std::function<int(const std::string &)> & find_style);

} // namespace mb::cli
