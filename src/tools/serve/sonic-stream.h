// 30 fps qpos frames in, gear_sonic_deploy protocol v1 messages out: one message per 50 Hz frame
// (joint_pos, joint_vel in IsaacLab order, root body_quat w x y z, frame_index), through the C ABI
// (robot-export.h). Frame k samples 30 fps position 0.6 k as upstream's deploy resamples; its
// velocity is (pos[k + 1] - pos[k]) * 50, so a frame goes out once the frames after it are known;
// finish() sends the rest of a clip with the last velocity repeated, which gives exactly the
// offline 50 Hz resampling of the whole clip. frame_index counts every message sent, across clips
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace mb::serve {

class sonic_stream {
public:
    using sink = std::function<void(const uint8_t * data, size_t size)>;

    sonic_stream(std::string topic, sink out);

    void push(const float * qpos);   // the clip's next 30 fps frame [36]; sends every frame now known
    void finish();                   // sends the clip's remaining frames; the next push starts a new clip
    void restart();                  // drops the current clip's unsent frames; frame_index goes on

    int64_t sent() const { return index_; }

private:
    std::string          topic_;
    sink                 out_;
    std::vector<float>   frames_;       // the clip's 30 fps frames from base_ on [n, 36]
    int64_t              base_   = 0;   // clip frame of frames_[0]
    int64_t              pushed_ = 0;   // clip frames pushed
    int64_t              next_   = 0;   // next 50 Hz frame of the clip to send
    int64_t              index_  = 0;   // frame_index of the next message
    double               last_vel_[29] = {};
    bool                 have_vel_ = false;
    std::vector<uint8_t> message_;

    void sample(int64_t k, double * joint_pos, double * body_quat) const;
    void send(int64_t k, bool has_next);
};

} // namespace mb::serve
