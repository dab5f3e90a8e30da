// motionbricks convert-motion IN OUT [--format json|bvh|glb] [--units m|cm] [qpos options]: a
// motion file to another format. IN: motionbricks-motion-v1 JSON, a 30 fps qpos .csv/.npz (by
// extension), GLB or BVH (by content); OUT by --format or its extension (.csv/.npz: a robot qpos
// file, motion-output.h). What moves across is the root translation and the 34 local rotations
// per frame (JSON output adds FK joint positions and qpos; plans and targets are not carried).
// Exit codes: 0 ok, 1 I/O failure, 2 bad usage or an input the readers refuse
#include "tools/cli/commands.h"
#include "tools/cli/motion-output.h"

#include <cstdio>
#include <stdexcept>
#include <string>

namespace mb::cli {

namespace mbx = motionbricks;

int cmd_convert_motion(int argc, char ** argv) {
    std::string in, out, flag;
    float       units = 1.0f;
    qpos_output qout;
    try {
        for (int i = 1; i < argc; ++i) {
            const std::string a = argv[i];
            if ((a == "--format" || a == "--units") && i + 1 < argc) {
                const std::string v = argv[++i];
                if (a == "--format") {
                    flag = v;
                } else {
                    units = parse_units(v);
                }
            } else if (const int r = i + 1 < argc ? parse_qpos_option("convert-motion", a, argv[i + 1], qout) : 0; r != 0) {
                if (r < 0) return 2;
                ++i;
            } else if (!a.empty() && a[0] != '-' && in.empty()) {
                in = a;
            } else if (!a.empty() && a[0] != '-' && out.empty()) {
                out = a;
            } else {
                throw std::invalid_argument("unexpected argument '" + a + "'");
            }
        }
        if (in.empty() || out.empty()) throw std::invalid_argument("IN and OUT are required");
        const motion_format f = pick_motion_format(out, flag);
        if (f == motion_format::csv) throw std::invalid_argument("--format csv is plan's qpos stream; use json, bvh or glb");
        const mbx::motion m = read_motion_file(in, qout);
        write_motion_file(m, out, f, units, qout);
        std::fprintf(stderr, "motionbricks convert-motion: %llu frames\n", (unsigned long long) m.frame_count());
        return 0;
    } catch (const std::invalid_argument & e) {
        std::fprintf(stderr, "motionbricks convert-motion: %s\nusage: motionbricks convert-motion IN OUT [--format json|bvh|glb] [--units m|cm] %s\n", e.what(),
                     qpos_options_usage());
        return 2;
    } catch (const mbx::error & e) {
        std::fprintf(stderr, "motionbricks convert-motion: %s\n", e.what());
        return e.status() == MB_IO_ERROR ? 1 : 2;
    } catch (const std::exception & e) {
        std::fprintf(stderr, "motionbricks convert-motion: %s\n", e.what());
        return 2;
    }
}

} // namespace mb::cli
