// one viewer's outgoing queue: bounded reliable events (acks, targets, hello, errors) and
// a one-slot pose channel where the newest frame replaces an unsent one
#pragma once

#include "tools/serve/protocol.h"

#include <deque>
#include <memory>
#include <mutex>
#include <string>

namespace mb::serve {

using message_ptr = std::shared_ptr<const std::string>;

class viewer_queue {
public:
    explicit viewer_queue(size_t max_reliable = k_max_reliable) : max_reliable_(max_reliable) {}

    // false when the reliable queue is full (the viewer is too slow and must be dropped)
    bool push_reliable(message_ptr m);
    // replaces any unsent pose
    void set_pose(message_ptr m);
    // the next message to write: reliable events first, then the pose; null when empty
    message_ptr pop();

    size_t reliable_size() const;
    uint64_t poses_replaced() const;    // unsent poses overwritten by newer ones

private:
    mutable std::mutex      mu_;
    std::deque<message_ptr> reliable_;
    message_ptr             pose_;
    size_t                  max_reliable_;
    uint64_t                replaced_ = 0;
};

// what the hub needs from a connected viewer (a WebSocket session, or a test double)
class viewer_link {
public:
    virtual ~viewer_link() = default;
    virtual void send_reliable(message_ptr m) = 0;   // overflow closes the connection
    virtual void send_pose(message_ptr m)     = 0;
    virtual void close(const std::string & why) = 0; // asynchronous; the hub gets a detach later
};

} // namespace mb::serve
