// serve --zmq / --record-qpos: the served agent's motion as planned, frame by frame, to a robot
// stack. The hub calls on_tick after every 50 Hz tick (hub_options::on_tick, hub thread); the tap
// takes each 30 fps timeline frame once it is final (no later plan can replace it: frames up to
// floor(0.6 tick) + 1) and hands it to the protocol v1 stream (sonic-stream.h) and the recording.
// A reset starts a new clip (the stream's frame_index keeps counting)
#pragma once

#include "tools/serve/sonic-stream.h"
#include "tools/serve/timeline.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace mb::serve {

class zmq_publisher;

class robot_tap {
public:
    // publisher may be null (record only); record false: keep no frames
    robot_tap(std::unique_ptr<zmq_publisher> publisher, const std::string & topic, bool record);
    ~robot_tap();

    void on_tick(const timeline & tl, int64_t tick, uint64_t epoch);

    const std::vector<float> & recorded() const { return recorded_; }   // [frames, 36] 30 fps
    uint64_t published() const;

private:
    std::unique_ptr<zmq_publisher> publisher_;
    sonic_stream                   stream_;
    bool                           record_;
    std::vector<float>             recorded_;
    uint64_t                       epoch_ = 0;
    int64_t                        next_  = 0;   // next timeline frame to take
};

} // namespace mb::serve
