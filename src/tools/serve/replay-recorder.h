// `serve --record FILE.mbreplay`: the served session as a portable replay. The hub reports each
// 30 fps timeline frame as the clock passes it and each plan when it is spliced in; write() turns
// them into .mbreplay v1 (the root and 29 physical bodies; the virtual endpoints omitted)
#pragma once

#include "tools/serve/planner.h"

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace mb::serve {

class replay_recorder {
public:
    // `skeleton`: the model's 34 joints (parents, rest positions), for the joints' world positions
    explicit replay_recorder(const std::vector<joint_info> & skeleton);

    // timeline frame `at` (absolute; a smaller value than the last starts a new epoch) with the
    // style shown; frames past .mbreplay's 1,000,000 are not kept (dropped() counts them)
    void frame(int64_t at, const timeline_frame & f, const std::string & style);
    // a plan spliced in at absolute frame `at`: its style, length and 4 placed targets [4, 34, 3]
    void plan(int64_t at, const std::string & style, int frames, const std::vector<float> & target_joints);

    uint64_t frames() const;
    uint64_t dropped() const;

    // the recording as .mbreplay v1, written atomically; throws mb::error (nothing recorded: invalid_argument)
    void write(const std::string & path) const;

private:
    struct plan_mark {
        int64_t            first;   // recording frame of the plan's first frame
        int32_t            mode;
        uint32_t           frames;
        std::vector<float> targets; // [4, 30, 3]
    };
    mutable std::mutex     mu_;
    std::vector<int32_t>   parents_all_;      // [34] the model's parents
    std::vector<int32_t>   parents_, keep_;   // the 30 kept joints and their parents among them
    std::vector<float>     neutral_;          // [34, 3]
    std::vector<float>     qpos_, positions_; // [n, 36], [n, 30, 3]
    std::vector<int32_t>   modes_;
    std::vector<plan_mark> plans_;
    int64_t                last_at_ = -1;     // absolute frame of the last recorded frame
    uint64_t               dropped_ = 0;
};

// upstream's CLIPS index of a style name (0..14); 0 (idle) for a style outside that table
int32_t clips_mode(const std::string & style);
// the style name of CLIPS index `mode` (0..14: idle, slow_walk, walk, ..., walk_left, walk_right)
const char * clips_style(int32_t mode);

} // namespace mb::serve
