// one viewer's outgoing queue: bounded reliable events (hello, targets, broadcast errors),
// bounded replies to the viewer's own messages (acks, pongs, errors: a burst of 64 commands
// gets 64 acks at once, which is not slowness), both in one FIFO, and a one-slot pose channel
// where the newest frame replaces an unsent one
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
    explicit viewer_queue(size_t max_reliable = k_max_reliable, size_t max_replies = k_max_replies)
        : max_reliable_(max_reliable), max_replies_(max_replies) {}

    // false when the bound is full (the viewer is too slow and must be dropped)
    bool push_reliable(message_ptr m, bool reply = false);
    // replaces any unsent pose
    void set_pose(message_ptr m);
    // the next message to write: reliable events first, then the pose; null when empty
    message_ptr pop();

    size_t reliable_size() const;
    uint64_t poses_replaced() const;    // unsent poses overwritten by newer ones

private:
    mutable std::mutex      mu_;
    std::deque<std::pair<message_ptr, bool>> reliable_;   // (message, is a reply)
    message_ptr             pose_;
    size_t                  max_reliable_, max_replies_;
    size_t                  n_events_ = 0, n_replies_ = 0;
    uint64_t                replaced_ = 0;
};

// what the hub needs from a connected viewer (a WebSocket session, or a test double)
class viewer_link {
public:
    virtual ~viewer_link() = default;
    virtual void send_reliable(message_ptr m) = 0;   // overflow closes the connection
    virtual void send_reply(message_ptr m)    = 0;   // an answer to this viewer's message (own bound)
    virtual void send_pose(message_ptr m)     = 0;
    virtual void close(const std::string & why) = 0; // asynchronous; the hub gets a detach later
};

} // namespace mb::serve
