// motionbricks export-sonic: a plan script, or a 30 fps qpos file (a served session recorded with
// `serve --record-qpos`), written as a SONIC reference-motion folder that gear_sonic_deploy reads
// (robot-export.h; docs/FORMATS.md)
#include "tools/cli/commands.h"
#include "tools/cli/plan-run.h"

#include <motionbricks/motionbricks.hpp>

#include <cstdio>

namespace mb::cli {

namespace {

int usage() {
    std::fprintf(stderr, "usage: motionbricks export-sonic --out DIR (SCRIPT.json --model DIR --style FILE.mbstyle [--style ...] | "
                         "--qpos FILE.csv|.npz) [--mjcf FILE.xml] %s\n", tools::k_model_options_usage);
    return 2;
}

} // namespace

int cmd_export_sonic(int argc, char ** argv) {
    plan_inputs in;
    std::string out, mjcf;
    const int   rc = parse_motion_input("export-sonic", argc, argv, in, [&](const std::string & a, const std::string & v) {
        if (a == "--out") out = v;
        else if (a == "--mjcf") mjcf = v;
        else return 0;
        return 1;
    }, usage);
    if (rc >= 0) return rc;
    if (out.empty()) return usage();
    std::vector<float> qpos;
    if (const int lc = load_motion_input("export-sonic", in, qpos); lc != 0) return lc;
    try {
        motionbricks::write_sonic_folder(qpos.data(), qpos.size() / MB_G1_QPOS_SIZE, out, mjcf);
    } catch (const motionbricks::error & e) {
        std::fprintf(stderr, "motionbricks export-sonic: %s\n", e.what());
        return e.status() == MB_IO_ERROR ? 1 : 2;
    }
    std::fprintf(stderr, "export-sonic: %zu frames at 30 fps -> %lld frames at 50 Hz in %s\n", qpos.size() / MB_G1_QPOS_SIZE,
                 (long long) (int64_t(qpos.size() / MB_G1_QPOS_SIZE) * 5 / 3), out.c_str());
    return 0;
}

} // namespace mb::cli
