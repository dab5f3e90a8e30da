// a plan script to qpos in memory (see plan-run.h); the loop is cmd-plan.cpp's
#include "tools/cli/plan-run.h"

#include "format/regular-file.h"
#include "tools/cli/load-model.h"
#include "tools/cli/plan-script.h"

#include <motionbricks/motionbricks.hpp>

#include <cstdio>
#include <optional>
#include <set>

namespace mb::cli {

namespace {

namespace mbx = motionbricks;

int style_index(const std::vector<mbx::style> & styles, const std::string & name) {
    for (size_t i = 0; i < styles.size(); ++i) {
        if (styles[i].name() == name) return int(i);
    }
    return -1;
}

} // namespace

int parse_plan_option(const char * cmd, const std::string & a, const std::string & v, plan_inputs & in) {
    if (a == "--model") {
        in.model_dir = v;
    } else if (a == "--style") {
        in.style_paths.push_back(v);
    } else if (a == "--script") {
        in.script_path = v;
    } else {
        return tools::parse_model_option(cmd, a, v, in.model);
    }
    return 1;
}

int run_plan_script(const char * cmd, const plan_inputs & in, std::vector<float> & qpos) {
    std::string text;
    try {
        text = read_regular_file(in.script_path, k_script_bounds.max_bytes);
    } catch (const std::exception & e) {
        std::fprintf(stderr, "motionbricks %s: bad script: %s\n", cmd, e.what());
        return 2;
    }
    int                       load_exit = 0;
    std::optional<mbx::model> model     = load_model(cmd, in.model_dir, in.model, load_exit);
    if (!model) return load_exit;
    std::vector<mbx::style> styles;
    std::set<std::string>   names;
    for (const std::string & p : in.style_paths) {
        try {
            styles.push_back(mbx::style::load(*model, p));
        } catch (const mbx::error & e) {
            std::fprintf(stderr, "motionbricks %s: bad style: %s\n", cmd, e.what());
            return 2;
        }
        if (!names.insert(styles.back().name()).second) {
            std::fprintf(stderr, "motionbricks %s: two styles are named '%s'\n", cmd, styles.back().name().c_str());
            return 2;
        }
    }
    std::vector<plan_segment> script;
    try {
        script = parse_plan_script(text, [&](const std::string & n) { return style_index(styles, n); });
    } catch (const std::exception & e) {
        std::fprintf(stderr, "motionbricks %s: bad script: %s\n", cmd, e.what());
        return 2;
    }
    try {
        mbx::agent ag(*model);
        const int  idle = style_index(styles, "idle");
        ag.reset(styles[size_t(idle >= 0 ? idle : 0)]);
        const int left = style_index(styles, "walk_left"), right = style_index(styles, "walk_right");
        if (left >= 0 && right >= 0) ag.set_sidestep_styles(styles[size_t(left)], styles[size_t(right)]);
        mbx::motion playing = ag.history();
        uint64_t    plans   = 0;
        for (const plan_segment & seg : script) {
            for (int i = 0; i < seg.frames; ++i) {
                const float * q = playing.mujoco_qpos().data + ag.cursor() * MB_G1_QPOS_SIZE;
                qpos.insert(qpos.end(), q, q + MB_G1_QPOS_SIZE);
                const std::array<float, 3> facing = ag.facing_direction();
                ag.advance(1);
                mbx::command c;
                c.set_style(styles[size_t(seg.style)]);
                c.set_target_speed(seg.speed);
                c.set_seed(seg.seed ? *seg.seed + plans : plans);
                c.set_sampling_argmax(true);
                if (seg.has_move) c.set_movement_direction(seg.movement[0], 0, seg.movement[1]);
                if (seg.has_facing) {
                    c.set_facing_direction(seg.facing[0], 0, seg.facing[1]);
                } else {
                    c.set_facing_direction(facing[0], facing[1], facing[2]);
                }
                if (seg.has_target) c.set_world_target(seg.target[0], 0, seg.target[1], seg.target_heading, true);
                if (!ag.replan_due(c)) continue;
                playing = ag.plan(c);
                ++plans;
            }
        }
    } catch (const mbx::error & e) {
        const bool bad = e.status() == MB_INVALID_ARGUMENT;
        std::fprintf(stderr, "motionbricks %s: %s: %s\n", cmd, bad ? "bad script" : "planning failed", e.what());
        return bad ? 2 : 1;
    }
    return 0;
}

int parse_motion_input(const char * cmd, int argc, char ** argv, plan_inputs & in,
                       const std::function<int(const std::string &, const std::string &)> & extra, int (*usage)()) {
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--help" || a == "-h") {
            usage();
            return 0;
        }
        if (a.rfind("--", 0) != 0) {
            if (!in.script_path.empty()) return usage();
            in.script_path = a;
            continue;
        }
        if (i + 1 >= argc) {
            std::fprintf(stderr, "motionbricks %s: '%s' needs a value\n", cmd, a.c_str());
            return usage();
        }
        const std::string v = argv[++i];
        int               r = 0;
        if (a == "--qpos") {
            in.qpos_path = v;
        } else if ((r = parse_plan_option(cmd, a, v, in)) != 0 || (r = extra(a, v)) != 0) {
            if (r < 0) return 2;
        } else {
            std::fprintf(stderr, "motionbricks %s: unknown option '%s'\n", cmd, a.c_str());
            return usage();
        }
    }
    if (in.qpos_path.empty() == in.script_path.empty()) return usage();
    if (in.qpos_path.empty() && (in.model_dir.empty() || in.style_paths.empty())) return usage();
    return -1;
}

int load_motion_input(const char * cmd, const plan_inputs & in, std::vector<float> & qpos) {
    if (in.qpos_path.empty()) return run_plan_script(cmd, in, qpos);
    const std::string & p   = in.qpos_path;
    const bool          npz = p.size() > 4 && p.compare(p.size() - 4, 4, ".npz") == 0;
    try {
        const mbx::motion m = motionbricks::read_qpos_file(p, npz ? MB_QPOS_FORMAT_NPZ : MB_QPOS_FORMAT_CSV);
        qpos.assign(m.mujoco_qpos().begin(), m.mujoco_qpos().end());
    } catch (const mbx::error & e) {
        std::fprintf(stderr, "motionbricks %s: bad qpos file: %s\n", cmd, e.what());
        return e.status() == MB_IO_ERROR ? 1 : 2;
    }
    return 0;
}

} // namespace mb::cli
