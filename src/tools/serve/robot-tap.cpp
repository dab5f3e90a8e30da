// the served motion to robot stacks (see robot-tap.h)
#include "tools/serve/robot-tap.h"

#ifdef MB_HAVE_ZMQ
#include "tools/serve/zmq-publisher.h"
#endif

namespace mb::serve {

#ifndef MB_HAVE_ZMQ
class zmq_publisher {};
#endif

robot_tap::robot_tap(std::unique_ptr<zmq_publisher> publisher, const std::string & topic, bool record)
    : publisher_(std::move(publisher)),
      stream_(topic,
              [this](const uint8_t * data, size_t size) {
#ifdef MB_HAVE_ZMQ
                  if (publisher_) publisher_->send(data, size);
#else
                  (void) data;
                  (void) size;
#endif
              }),
      record_(record) {}

robot_tap::~robot_tap() = default;

uint64_t robot_tap::published() const {
    return uint64_t(stream_.sent());
}

void robot_tap::on_tick(const timeline & tl, int64_t tick, uint64_t epoch) {
    if (epoch != epoch_) {
        epoch_ = epoch;
        next_  = 0;
        stream_.restart();
    }
    const int64_t last = tick * 3 / 5 + 1;   // frame_floor(tick) + 1: final (hub.cpp's stall rule)
    // past the timeline's end the hub holds the last frame (timeline::at clamps), and so does the stream
    for (; next_ <= last; ++next_) {
        const float * q = tl.at(next_).qpos;
        if (publisher_) stream_.push(q);
        if (record_) recorded_.insert(recorded_.end(), q, q + k_qpos_values);
    }
}

} // namespace mb::serve
