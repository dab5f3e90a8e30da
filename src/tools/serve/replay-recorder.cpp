// the served session → .mbreplay v1 (see replay-recorder.h)
#include "tools/serve/replay-recorder.h"

#include "format/error.h"
#include "format/mbreplay.h"
#include "tools/serve/pose-fk.h"

#include <algorithm>

namespace mb::serve {

namespace {

const char * const k_clips[15] = {"idle",           "slow_walk",    "walk",         "hand_crawling", "walk_boxing",
                                  "elbow_crawling", "stealth_walk", "injured_walk", "walk_stealth",  "walk_happy_dance",
                                  "walk_zombie",    "walk_gun",     "walk_scared",  "walk_left",     "walk_right"};
constexpr int k_virtual[4] = {7, 14, 25, 33};   // hand and toe endpoints: not physical bodies

} // namespace

const char * clips_style(int32_t mode) {
    return mode >= 0 && mode < 15 ? k_clips[mode] : "";
}

int32_t clips_mode(const std::string & style) {
    for (int32_t i = 0; i < 15; ++i) {
        if (style == k_clips[i]) return i;
    }
    return 0;
}

replay_recorder::replay_recorder(const std::vector<joint_info> & skeleton) {
    if (skeleton.size() != size_t(k_joints)) throw error(status::invalid_argument, "recorder: the skeleton must have 34 joints");
    std::vector<int32_t> all(skeleton.size());
    for (size_t j = 0; j < skeleton.size(); ++j) {
        all[j] = skeleton[j].parent;
        neutral_.insert(neutral_.end(), skeleton[j].position, skeleton[j].position + 3);
        if (std::find(std::begin(k_virtual), std::end(k_virtual), int(j)) == std::end(k_virtual)) keep_.push_back(int32_t(j));
    }
    for (int32_t j : keep_) {
        const auto it = std::find(keep_.begin(), keep_.end(), all[size_t(j)]);
        parents_.push_back(all[size_t(j)] < 0 ? -1 : int32_t(it - keep_.begin()));
    }
    parents_all_ = all;
}

void replay_recorder::frame(int64_t at, const timeline_frame & f, const std::string & style) {
    std::lock_guard<std::mutex> lk(mu_);
    if (at == last_at_) return;
    last_at_ = at;
    if (modes_.size() >= k_mbreplay_max_frames) {
        ++dropped_;
        return;
    }
    qpos_.insert(qpos_.end(), f.qpos, f.qpos + k_qpos_values);
    const std::vector<float> pos = skeleton_fk(parents_all_.data(), neutral_.data(), k_joints, f.root, f.rotations, 1);
    for (int32_t j : keep_) positions_.insert(positions_.end(), &pos[size_t(j) * 3], &pos[size_t(j) * 3] + 3);
    modes_.push_back(clips_mode(style));
}

void replay_recorder::plan(int64_t at, const std::string & style, int frames, const std::vector<float> & target_joints) {
    std::lock_guard<std::mutex> lk(mu_);
    if (target_joints.size() != size_t(4 * k_joints * 3) || frames < 1) return;
    // the recording frame that absolute frame `at` becomes (the frame after the last one is next)
    const int64_t first = int64_t(modes_.size()) + (at - last_at_ - 1);
    // a plan replacing one that had not started yet supersedes it
    while (!plans_.empty() && plans_.back().first >= first) plans_.pop_back();
    plan_mark m{std::max<int64_t>(first, 0), clips_mode(style), uint32_t(frames), {}};
    for (int k = 0; k < 4; ++k) {
        for (int32_t j : keep_) {
            const float * p = &target_joints[(size_t(k) * k_joints + size_t(j)) * 3];
            m.targets.insert(m.targets.end(), p, p + 3);
        }
    }
    plans_.push_back(std::move(m));
}

uint64_t replay_recorder::frames() const {
    std::lock_guard<std::mutex> lk(mu_);
    return modes_.size();
}

uint64_t replay_recorder::dropped() const {
    std::lock_guard<std::mutex> lk(mu_);
    return dropped_;
}

void replay_recorder::write(const std::string & path) const {
    std::lock_guard<std::mutex> lk(mu_);
    replay_session s;
    s.fps       = 30;
    s.joints    = uint32_t(keep_.size());
    s.qpos_size = uint32_t(k_qpos_values);
    s.parents   = parents_;
    s.modes     = modes_;
    s.qpos      = qpos_;
    s.positions = positions_;
    const int64_t n = int64_t(modes_.size());
    s.active_plan.assign(size_t(n), -1);
    for (const plan_mark & p : plans_) {
        if (p.first >= n) break;   // spliced in but never shown
        const int32_t index = int32_t(s.plan_first_frame.size());
        s.plan_first_frame.push_back(uint32_t(p.first));
        s.plan_mode.push_back(p.mode);
        s.plan_frames.push_back(p.frames);
        s.target_positions.insert(s.target_positions.end(), p.targets.begin(), p.targets.end());
        std::fill(s.active_plan.begin() + p.first, s.active_plan.end(), index);
    }
    mbreplay_write(path, s);
}

} // namespace mb::serve
