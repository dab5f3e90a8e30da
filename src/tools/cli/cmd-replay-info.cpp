// `motionbricks replay-info FILE.mbreplay`: reads and validates a portable replay and prints the
// reference runtime's lines (format, fps, frames, joints, qpos, plans, target-frames, the first and
// last frame's root position, 9 significant digits). Exit 0, 2 on bad usage or a refused file
#include "format/mbreplay.h"
#include "tools/cli/commands.h"

#include <cstdio>

namespace mb::cli {

int cmd_replay_info(int argc, char ** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: motionbricks replay-info REPLAY_FILE\n");
        return 2;
    }
    replay_session s;
    try {
        s = mbreplay_read(argv[1]);
    } catch (const std::exception & e) {
        std::fprintf(stderr, "motionbricks replay-info: %s\n", e.what());
        return 2;
    }
    const size_t  J     = s.joints;
    const float * first = &s.positions[0];
    const float * last  = &s.positions[(size_t(s.frames()) - 1) * J * 3];
    std::printf("format: motionbricks-portable-replay-v1\n");
    std::printf("fps: %u\nframes: %u\njoints: %u\nqpos: %u\nplans: %u\ntarget-frames: %u\n", s.fps, s.frames(), s.joints,
                s.qpos_size, s.plans(), k_mbreplay_targets);
    std::printf("first-root: %.9g %.9g %.9g\n", double(first[0]), double(first[1]), double(first[2]));
    std::printf("last-root: %.9g %.9g %.9g\n", double(last[0]), double(last[1]), double(last[2]));
    return 0;
}

} // namespace mb::cli
