// one message of gear_sonic_deploy's ZMQ stream protocol v1 (docs/source/tutorials/zmq.md;
// zmq_packed_message_subscriber.hpp:5-24, 260-346): a single ZMQ frame of
//   topic bytes (no separator) | 1280-byte JSON header, NUL-padded | the fields' bytes in header order
// header {"v":1,"endian":"le","count":N,"fields":[{"name","dtype","shape"}, ...]} with the fields
//   joint_pos   f64 [N, 29]  hinge angles, IsaacLab order (rad)
//   joint_vel   f64 [N, 29]  rad/s, IsaacLab order
//   body_quat   f64 [N, 4]   root (pelvis) orientation in the world, w x y z
//   frame_index i64 [N]      50 Hz frame numbers, consecutive
#pragma once

#include <cstdint>
#include <string>

namespace mb {

constexpr size_t k_sonic_header_bytes = 1280;

// bytes of one message of `frames` frames with `topic`
size_t sonic_v1_message_size(size_t topic_size, uint64_t frames);

// writes the message into `out` (sonic_v1_message_size bytes). Throws mb::error (invalid_argument:
// frames 0 or above 10000, a non-finite value)
void sonic_v1_encode(const std::string & topic, const double * joint_pos, const double * joint_vel, const double * body_quat,
                     const int64_t * frame_index, uint64_t frames, uint8_t * out);

} // namespace mb
