// libFuzzer target for the robot-export readers (src/export/qpos-file.h). The first input byte
// picks the reader: even → the rest is qpos CSV text, odd → an .npz image. A reader returns a clip
// whose every value is finite, with non-zero root quaternions and at least one frame, or throws
// mb::error
#include "export/qpos-file.h"

#include <cmath>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t * data, size_t size) {
    if (size < 1) return 0;
    const std::string rest(reinterpret_cast<const char *>(data) + 1, size - 1);
    try {
        const mb::qpos_clip c = (data[0] & 1) ? mb::parse_qpos_npz(rest, "fuzz.npz")
                                              : mb::parse_qpos_csv(rest, "fuzz.csv", 30, mb::quat_order::wxyz, true);
        if (c.frames() < 1 || c.qpos.size() % mb::k_qpos_dim != 0 || c.fps < 1) __builtin_trap();
        for (size_t f = 0; f < c.qpos.size(); f += mb::k_qpos_dim) {
            const double * r = &c.qpos[f];
            for (int i = 0; i < mb::k_qpos_dim; ++i) {
                if (!std::isfinite(r[i])) __builtin_trap();
            }
            if (r[3] * r[3] + r[4] * r[4] + r[5] * r[5] + r[6] * r[6] < 1e-12) __builtin_trap();
        }
    } catch (const mb::error &) {
    }
    return 0;
}
