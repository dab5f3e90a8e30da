// the hub's 30 fps timeline: a window of absolute frames (the clock's neighbourhood up to the
// end of the last plan), how a new plan is spliced in with the reference's 8-frame eased
// crossfade, and sampling between frames (roots linear, rotations SLERP)
#pragma once

#include "tools/serve/planner.h"

#include <cstdint>
#include <deque>
#include <vector>

namespace mb::serve {

// the reference's crossfade from the replaced timeline frames into each new plan
constexpr int k_crossfade = 8;

// SLERP of unit quaternions a → b (either order of components, as long as both agree), shortest arc
void slerp(const float * a, const float * b, float t, float * out);

class timeline {
public:
    // the timeline holds exactly `frames`, the first at absolute frame 0
    void reset(const std::vector<timeline_frame> & frames);

    // frame i, clamped to the frames held
    const timeline_frame & at(int64_t i) const;
    int64_t                end() const { return base_ + int64_t(frames_.size()); }   // one past the last frame

    // drops frames well behind frame f (more than 8 before it); one frame always stays
    void drop_before(int64_t f);

    // the plan's frames replace the timeline from absolute frame `at` on; its first k_crossfade
    // frames are eased (smoothstep) from the replaced ones (roots, rotations; qpos, the next
    // plan's context, stays the plan's). Past the end, the last frame is held up to `at`
    void splice(int64_t at, std::vector<timeline_frame> plan);

    // the pose a fraction w of the way from frame f0 to f0 + 1: root [3] linear, rotations
    // [k_joints * 4] SLERP
    void sample(int64_t f0, float w, float * root, float * rotations) const;

private:
    std::deque<timeline_frame> frames_;
    int64_t                    base_ = 0;   // absolute frame of frames_[0]
};

} // namespace mb::serve
