// the protocol v1 stream of a 30 fps clip (see sonic-stream.h)
#include "tools/serve/sonic-stream.h"

#include <motionbricks/motionbricks.hpp>

#include <algorithm>

namespace mb::serve {

namespace {
constexpr int k_qpos   = int(MB_G1_QPOS_SIZE);
constexpr int k_hinges = 29;

// the 30 fps frames 50 Hz frame k interpolates: floor(0.6 k) and the one after
int64_t first_frame(int64_t k) { return k * 3 / 5; }
} // namespace

sonic_stream::sonic_stream(std::string topic, sink out) : topic_(std::move(topic)), out_(std::move(out)) {}

void sonic_stream::sample(int64_t k, double * joint_pos, double * body_quat) const {
    // frames are relative to frames_[0]; the clamp at the clip's end is the C ABI's
    const uint64_t f = uint64_t(first_frame(k) - base_);
    const double   w = double(k * 3 % 5) / 5.0;
    motionbricks::detail::check([&](char * e, uint64_t n) {
        return mb_qpos_sample_isaaclab(frames_.data(), frames_.size() / k_qpos, f, w, joint_pos, body_quat, e, n);
    });
}

void sonic_stream::send(int64_t k, bool has_next) {
    double jp[k_hinges], jv[k_hinges], q[4];
    sample(k, jp, q);
    if (has_next) {
        double next[k_hinges];
        sample(k + 1, next, nullptr);
        for (int j = 0; j < k_hinges; ++j) jv[j] = (next[j] - jp[j]) * 50.0;
    } else {
        // the clip's last frame repeats the velocity before it (0 for a 1-frame clip)
        for (int j = 0; j < k_hinges; ++j) jv[j] = have_vel_ ? last_vel_[j] : 0.0;
    }
    std::copy(jv, jv + k_hinges, last_vel_);
    have_vel_ = true;
    const int64_t index = index_;
    uint64_t      size  = 0;
    motionbricks::detail::check([&](char * e, uint64_t n) {
        return mb_robot_stream_encode(topic_.c_str(), jp, jv, q, &index, 1, nullptr, 0, &size, e, n);
    });
    message_.resize(size);
    motionbricks::detail::check([&](char * e, uint64_t n) {
        return mb_robot_stream_encode(topic_.c_str(), jp, jv, q, &index, 1, message_.data(), message_.size(), &size, e, n);
    });
    ++index_;
    out_(message_.data(), message_.size());
}

void sonic_stream::push(const float * qpos) {
    frames_.insert(frames_.end(), qpos, qpos + k_qpos);
    ++pushed_;
    // frame k is final when the frames of k + 1 are in: first_frame(k + 1) + 1 < pushed_
    while (first_frame(next_ + 1) + 1 < pushed_) {
        send(next_, true);
        ++next_;
    }
    // keep the frames from first_frame(next_) on
    const int64_t keep = first_frame(next_);
    if (keep - base_ > 64) {
        frames_.erase(frames_.begin(), frames_.begin() + (keep - base_) * k_qpos);
        base_ = keep;
    }
}

void sonic_stream::finish() {
    // upstream's count: floor(frames * 5 / 3) frames at 50 Hz
    const int64_t total = pushed_ * 5 / 3;
    for (; next_ < total; ++next_) send(next_, next_ + 1 < total);
    restart();
}

void sonic_stream::restart() {
    frames_.clear();
    base_ = pushed_ = next_ = 0;
    have_vel_ = false;
}

} // namespace mb::serve
