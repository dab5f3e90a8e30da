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
                         "--qpos FILE.csv|.npz) [--mjcf FILE.xml] [--threads N]\n");
    return 2;
}

} // namespace

int cmd_export_sonic(int argc, char ** argv) {
    plan_inputs plan;
    std::string out, qpos_path, mjcf;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--help" || a == "-h") {
            usage();
            return 0;
        }
        if (a.rfind("--", 0) != 0) {
            if (!plan.script_path.empty()) return usage();
            plan.script_path = a;
            continue;
        }
        if (i + 1 >= argc) {
            std::fprintf(stderr, "motionbricks export-sonic: '%s' needs a value\n", a.c_str());
            return usage();
        }
        const std::string v = argv[++i];
        int               r = 0;
        if (a == "--out") {
            out = v;
        } else if (a == "--qpos") {
            qpos_path = v;
        } else if (a == "--mjcf") {
            mjcf = v;
        } else if ((r = parse_plan_option("export-sonic", a, v, plan)) != 0) {
            if (r < 0) return 2;
        } else {
            std::fprintf(stderr, "motionbricks export-sonic: unknown option '%s'\n", a.c_str());
            return usage();
        }
    }
    if (out.empty() || qpos_path.empty() == plan.script_path.empty()) return usage();
    if (qpos_path.empty() && (plan.model_dir.empty() || plan.style_paths.empty())) return usage();
    std::vector<float> qpos;
    if (!qpos_path.empty()) {
        try {
            const bool                 npz = qpos_path.size() > 4 && qpos_path.substr(qpos_path.size() - 4) == ".npz";
            const motionbricks::motion m   = motionbricks::read_qpos_file(qpos_path, npz ? MB_QPOS_FORMAT_NPZ : MB_QPOS_FORMAT_CSV);
            qpos.assign(m.mujoco_qpos().begin(), m.mujoco_qpos().end());
        } catch (const motionbricks::error & e) {
            std::fprintf(stderr, "motionbricks export-sonic: bad qpos file: %s\n", e.what());
            return e.status() == MB_IO_ERROR ? 1 : 2;
        }
    } else if (const int rc = run_plan_script("export-sonic", plan, qpos); rc != 0) {
        return rc;
    }
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
