// the hub's timeline (see timeline.h)
#include "tools/serve/timeline.h"

#include <algorithm>
#include <cmath>

namespace mb::serve {

void slerp(const float * a, const float * b, float t, float * out) {
    double d = 0;
    for (int i = 0; i < 4; ++i) d += double(a[i]) * b[i];
    const double sign = d < 0 ? -1.0 : 1.0;
    d *= sign;
    double wa = 1 - t, wb = t * sign;
    if (d < 0.9995) {
        const double th = std::acos(std::min(1.0, d)), s = std::sin(th);
        wa = std::sin((1 - t) * th) / s;
        wb = std::sin(t * th) / s * sign;
    }
    double q[4], n = 0;
    for (int i = 0; i < 4; ++i) {
        q[i] = wa * a[i] + wb * b[i];
        n += q[i] * q[i];
    }
    n = n > 0 ? 1.0 / std::sqrt(n) : 0.0;
    for (int i = 0; i < 4; ++i) out[i] = float(q[i] * n);
}

void timeline::reset(const std::vector<timeline_frame> & frames) {
    frames_.assign(frames.begin(), frames.end());
    base_ = 0;
}

const timeline_frame & timeline::at(int64_t i) const {
    if (i < base_) i = base_;
    if (i >= end()) i = end() - 1;
    return frames_[size_t(i - base_)];
}

void timeline::drop_before(int64_t f) {
    while (frames_.size() > 1 && base_ < f - 8) {
        frames_.pop_front();
        ++base_;
    }
}

void timeline::splice(int64_t at, std::vector<timeline_frame> plan) {
    // the reference's 8-frame eased crossfade from the replaced frames into the plan (on top of
    // the agent's 4-frame seam blend); qpos stays the plan's (the next context lies beyond it)
    for (int k = 0; k < k_crossfade && k < int(plan.size()); ++k) {
        const timeline_frame & old = this->at(at + k);
        timeline_frame &       nf  = plan[size_t(k)];
        const float            t   = float(k + 1) / float(k_crossfade + 1);
        const float            w   = t * t * (3 - 2 * t);   // weight of the new plan
        for (int c = 0; c < 3; ++c) nf.root[c] = old.root[c] + (nf.root[c] - old.root[c]) * w;
        for (int j = 0; j < k_joints; ++j) slerp(&old.rotations[j * 4], &nf.rotations[j * 4], w, &nf.rotations[j * 4]);
    }
    if (at > end()) {
        // held past the end: keep the held frame just before the boundary
        timeline_frame held = frames_.back();
        frames_.assign(1, held);
        base_ = at - 1;
    }
    while (end() > at && frames_.size() > 1) frames_.pop_back();
    if (end() > at) {   // the boundary is the only frame left (cannot happen with the 12-frame lead)
        frames_.clear();
        base_ = at;
    }
    for (auto & f : plan) frames_.push_back(f);
}

void timeline::sample(int64_t f0, float w, float * root, float * rotations) const {
    const timeline_frame & a  = at(f0);
    const timeline_frame & b  = at(f0 + 1);
    for (int c = 0; c < 3; ++c) root[c] = a.root[c] + (b.root[c] - a.root[c]) * w;
    for (int j = 0; j < k_joints; ++j) slerp(&a.rotations[j * 4], &b.rotations[j * 4], w, &rotations[j * 4]);
}

} // namespace mb::serve
