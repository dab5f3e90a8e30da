// libFuzzer target for the reference timeline's caller input (src/physics/timeline.h): a 25-byte
// header (claimed value count, claimed frame count, gen_frame, 1 byte of tick counts) and then the
// qpos floats. Every clip is either refused with the timeline unchanged, or accepted; the cursor
// stays inside the motion and every observation built from it is finite
#include "physics/observation.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

namespace {

uint64_t read_u64(const uint8_t * p) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    return v;
}

mb::physics::timeline & shared_timeline() {
    // one timeline across inputs, so replacements meet every ring position
    static mb::physics::timeline t = [] {
        mb::physics::timeline x;
        mb::physics::timeline_init(x, 300);
        return x;
    }();
    return t;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t * data, size_t size) {
    using namespace mb::physics;
    if (size < 25) return 0;
    const uint64_t claimed = read_u64(data);
    const int64_t frames = static_cast<int64_t>(read_u64(data + 8));
    const int64_t gen = static_cast<int64_t>(read_u64(data + 16));
    const int ticks = data[24] & 15;
    std::vector<float> q((size - 25) / 4);
    if (!q.empty()) std::memcpy(q.data(), data + 25, q.size() * 4);
    // the count may lie in any way except claiming more floats than the buffer holds (a caller bug)
    const uint64_t values = claimed <= q.size() ? claimed : q.size();
    timeline & t = shared_timeline();
    const int64_t length = t.length, current = t.current, origin = t.origin;
    const std::string e = timeline_replace(t, q.empty() ? nullptr : q.data(), values, frames, gen);
    if (!e.empty() && (t.length != length || t.current != current || t.origin != origin)) __builtin_trap();
    for (int k = 0; k < ticks; ++k) timeline_advance(t);
    if (t.length > t.capacity || (t.length > 0 && (t.current < 0 || t.current >= t.length))) __builtin_trap();
    if (t.length > 0) {
        timeline_update_heading(t, {1, 0, 0, 0});
        float obs[k_encoder_obs];
        build_encoder_obs(t, {1, 0, 0, 0}, obs);
        for (float v : obs)
            if (!std::isfinite(v)) __builtin_trap();
    }
    if (data[24] & 0x80) timeline_reset(t);
    return 0;
}
