// one viewer's outgoing queue
#include "tools/serve/viewer-queue.h"

namespace mb::serve {

bool viewer_queue::push_reliable(message_ptr m, bool reply) {
    std::lock_guard<std::mutex> lk(mu_);
    size_t & n = reply ? n_replies_ : n_events_;
    if (n >= (reply ? max_replies_ : max_reliable_)) return false;
    ++n;
    reliable_.emplace_back(std::move(m), reply);
    return true;
}

void viewer_queue::set_pose(message_ptr m) {
    std::lock_guard<std::mutex> lk(mu_);
    if (pose_) ++replaced_;
    pose_ = std::move(m);
}

message_ptr viewer_queue::pop() {
    std::lock_guard<std::mutex> lk(mu_);
    if (!reliable_.empty()) {
        message_ptr m = std::move(reliable_.front().first);
        --(reliable_.front().second ? n_replies_ : n_events_);
        reliable_.pop_front();
        return m;
    }
    return std::move(pose_);
}

size_t viewer_queue::reliable_size() const {
    std::lock_guard<std::mutex> lk(mu_);
    return reliable_.size();
}

uint64_t viewer_queue::poses_replaced() const {
    std::lock_guard<std::mutex> lk(mu_);
    return replaced_;
}

} // namespace mb::serve
