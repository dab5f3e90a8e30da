// libFuzzer target for the animation readers (src/export). The first input byte picks the
// reader: even → the rest is a GLB (glb_read), odd → BVH text (bvh_read). Each must return a
// clip that holds every documented invariant or throw mb::error with status invalid_format
#include "export/bvh.h"
#include "export/glb.h"

#include <cmath>
#include <cstdint>
#include <string_view>

static void check(const mb::anim_clip & c) {
    if (c.frames < 1 || c.frames > mb::k_clip_max_frames) __builtin_trap();
    if (c.root.size() != size_t(c.frames) * 3 || c.local_xyzw.size() != size_t(c.frames) * 34 * 4) __builtin_trap();
    for (float v : c.root) {
        if (!std::isfinite(v) || std::fabs(v) > mb::k_clip_max_coord) __builtin_trap();
    }
    for (size_t i = 0; i < c.local_xyzw.size(); i += 4) {
        const float * q = &c.local_xyzw[i];
        const double  n = double(q[0]) * q[0] + double(q[1]) * q[1] + double(q[2]) * q[2] + double(q[3]) * q[3];
        if (!(std::fabs(n - 1.0) < 1e-4)) __builtin_trap();
    }
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t * data, size_t size) {
    if (size == 0) return 0;
    const std::string_view in(reinterpret_cast<const char *>(data + 1), size - 1);
    try {
        check(data[0] % 2 == 0 ? mb::glb_read(in, "fuzz") : mb::bvh_read(in, "fuzz"));
    } catch (const mb::error & e) {
        if (e.code() != mb::status::invalid_format) __builtin_trap();
    }
    return 0;
}
