// ZMQ protocol v1 messages (see sonic-v1.h)
#include "export/sonic-v1.h"

#include "format/error.h"
#include "motion/g1.h"

#include <bit>
#include <cmath>
#include <cstring>

namespace mb {

namespace {

constexpr uint64_t k_max_frames = 10000;

std::string header_json(uint64_t n) {
    const std::string s = std::to_string(n);
    return "{\"v\":1,\"endian\":\"le\",\"count\":" + s + ",\"fields\":[" +
           "{\"name\":\"joint_pos\",\"dtype\":\"f64\",\"shape\":[" + s + ",29]}," +
           "{\"name\":\"joint_vel\",\"dtype\":\"f64\",\"shape\":[" + s + ",29]}," +
           "{\"name\":\"body_quat\",\"dtype\":\"f64\",\"shape\":[" + s + ",4]}," +
           "{\"name\":\"frame_index\",\"dtype\":\"i64\",\"shape\":[" + s + "]}]}";
}

} // namespace

static_assert(std::endian::native == std::endian::little, "the v1 stream is written little-endian by memcpy");

size_t sonic_v1_message_size(size_t topic_size, uint64_t frames) {
    return topic_size + k_sonic_header_bytes + size_t(frames) * ((2 * k_qpos_hinges + 4) * sizeof(double) + sizeof(int64_t));
}

void sonic_v1_encode(const std::string & topic, const double * joint_pos, const double * joint_vel, const double * body_quat,
                     const int64_t * frame_index, uint64_t n, uint8_t * out) {
    if (n == 0 || n > k_max_frames) fail(status::invalid_argument, "a v1 message holds 1.." + std::to_string(k_max_frames) + " frames");
    for (uint64_t i = 0; i < n * k_qpos_hinges; ++i) {
        if (!std::isfinite(joint_pos[i]) || !std::isfinite(joint_vel[i])) fail(status::invalid_argument, "v1 message: non-finite joint value");
    }
    for (uint64_t i = 0; i < n * 4; ++i) {
        if (!std::isfinite(body_quat[i])) fail(status::invalid_argument, "v1 message: non-finite body_quat");
    }
    const std::string h = header_json(n);
    MB_ASSERT(h.size() < k_sonic_header_bytes, "v1 header fits 1280 bytes");
    uint8_t * p = out;
    std::memcpy(p, topic.data(), topic.size());
    p += topic.size();
    std::memset(p, 0, k_sonic_header_bytes);
    std::memcpy(p, h.data(), h.size());
    p += k_sonic_header_bytes;
    const size_t jb = size_t(n) * k_qpos_hinges * sizeof(double);
    std::memcpy(p, joint_pos, jb);
    p += jb;
    std::memcpy(p, joint_vel, jb);
    p += jb;
    std::memcpy(p, body_quat, size_t(n) * 4 * sizeof(double));
    p += size_t(n) * 4 * sizeof(double);
    std::memcpy(p, frame_index, size_t(n) * sizeof(int64_t));
}

} // namespace mb
