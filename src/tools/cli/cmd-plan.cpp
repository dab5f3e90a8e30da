// motionbricks plan: the agent driven by a control script the way upstream's demo loop
// drives it (one displayed frame per step, replanning every 16 frames), written as
// motionbricks-motion-v1 JSON or as a qpos CSV. Exit codes: 0 ok, 1 runtime failure
// (missing or unreadable bundle, compute, I/O), 2 bad usage, bad script, unknown style, bad
// style file, or a bundle that is malformed or whose components do not fit together.
//
// Script: a JSON array of segments
//   {"frames": N, "style": NAME, "movement": [x, z], "facing": [x, z], "speed": V, "seed": S,
//    "target": [x, z], "target_heading": H}
// frames 1..100000 (required), style a loaded style's name (required); the rest optional.
// Directions are on the motion-space ground plane (Y up: x left, z forward = MuJoCo y, x);
// movement defaults to none (turn in place), facing to the current facing, speed to the
// style's (negative = the style's), seed to the plan counter (it picks the target clip frame);
// a target (world position, heading about +Y in rad, default 0) replaces the spring's goal.
#include "agent/agent.h"
#include "format/bundle.h"
#include "format/regular-file.h"
#include "tools/cli/commands.h"
#include "tools/cli/load-model.h"
#include "tools/cli/plan-script.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <unistd.h>
#include <vector>

namespace mb::cli {

namespace {

using json = nlohmann::json;

constexpr const char * k_motion_format   = "motionbricks-motion-v1";

void write_atomic_text(const std::string & path, const std::string & bytes) {
    const std::string tmp = path + ".tmp." + std::to_string(::getpid());
    std::FILE *       f   = std::fopen(tmp.c_str(), "wb");
    if (!f) throw std::runtime_error("cannot create '" + tmp + "': " + std::strerror(errno));
    bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
    ok      = std::fflush(f) == 0 && ok;
    ok      = ::fsync(::fileno(f)) == 0 && ok;
    ok      = std::fclose(f) == 0 && ok;
    if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
        const std::string err = std::strerror(errno);
        std::remove(tmp.c_str());
        throw std::runtime_error("cannot write '" + path + "': " + err);
    }
}

// rounds for JSON output (7 significant digits keep float32 exact enough)
double r7(float v) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.7g", double(v));
    return std::strtod(buf, nullptr);
}

int usage() {
    std::fprintf(stderr, "usage: motionbricks plan --model DIR --style FILE.mbstyle [--style FILE ...] --script SCRIPT.json "
                         "--output MOTION.json [--format json|csv] [--threads N]\n");
    return 2;
}

} // namespace

int cmd_plan(int argc, char ** argv) {
    std::string              model_dir, script_path, output_path, format = "json";
    std::vector<std::string> style_paths;
    int                      n_threads = 0;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (i + 1 >= argc) {
            std::fprintf(stderr, "motionbricks plan: '%s' needs a value\n", a.c_str());
            return usage();
        }
        const std::string v = argv[++i];
        if (a == "--model") {
            model_dir = v;
        } else if (a == "--style") {
            style_paths.push_back(v);
        } else if (a == "--script") {
            script_path = v;
        } else if (a == "--output") {
            output_path = v;
        } else if (a == "--format") {
            if (v != "json" && v != "csv") {
                std::fprintf(stderr, "motionbricks plan: --format must be json or csv\n");
                return 2;
            }
            format = v;
        } else if (a == "--threads") {
            int        t   = 0;
            const auto res = std::from_chars(v.data(), v.data() + v.size(), t);
            if (res.ec != std::errc() || res.ptr != v.data() + v.size() || t < 1 || t > 1024) {
                std::fprintf(stderr, "motionbricks plan: --threads must be an integer 1..1024\n");
                return 2;
            }
            n_threads = t;
        } else {
            std::fprintf(stderr, "motionbricks plan: unknown option '%s'\n", a.c_str());
            return usage();
        }
    }
    if (model_dir.empty() || style_paths.empty() || script_path.empty() || output_path.empty()) return usage();

    // styles first (cheap, and a bad style is bad input)
    std::vector<style_asset> styles;
    std::set<std::string>    names;
    for (const std::string & p : style_paths) {
        try {
            styles.push_back(style_read(p));
        } catch (const std::exception & e) {
            std::fprintf(stderr, "motionbricks plan: bad style: %s\n", e.what());
            return 2;
        }
        if (!names.insert(styles.back().name).second) {
            std::fprintf(stderr, "motionbricks plan: two styles are named '%s'\n", styles.back().name.c_str());
            return 2;
        }
    }
    std::string script_text;
    try {
        script_text = read_regular_file(script_path, k_script_bounds.max_bytes);
    } catch (const std::exception & e) {
        std::fprintf(stderr, "motionbricks plan: bad script: %s\n", e.what());
        return 2;
    }

    int                           load_exit = 0;
    std::unique_ptr<motion_model> model     = load_model("plan", model_dir, n_threads, load_exit);
    if (!model) return load_exit;
    std::unique_ptr<agent> ag;
    std::vector<plan_segment> script;
    try {
        ag     = std::make_unique<agent>(*model, styles);
        script = parse_plan_script(script_text, [&](const std::string & n) { return ag->find_style(n); });
    } catch (const std::exception & e) {
        std::fprintf(stderr, "motionbricks plan: bad script: %s\n", e.what());
        return 2;
    }

    // upstream's loop: show the frame at the cursor, advance, replan when due
    const qpos_converter conv;
    std::vector<float>   shown;          // [F, 36]
    json                 plans = json::array();
    std::vector<double>  plan_ms;
    uint64_t             plan_counter = 0;
    try {
        for (const plan_segment & seg : script) {
            for (int i = 0; i < seg.frames; ++i) {
                const float * cur = &ag->buffer()[size_t(ag->cursor()) * 36];
                shown.insert(shown.end(), cur, cur + 36);
                ag->advance(1);

                agent_command cmd;
                cmd.style        = seg.style;
                cmd.target_speed = seg.speed;
                cmd.seed         = seg.seed ? *seg.seed + plan_counter : plan_counter;
                // motion (x, z) = MuJoCo (y, x)
                if (seg.has_move) {
                    cmd.movement[0] = seg.movement[1];
                    cmd.movement[1] = seg.movement[0];
                }
                if (seg.has_facing) {
                    cmd.facing[0] = seg.facing[1];
                    cmd.facing[1] = seg.facing[0];
                } else {
                    // keep the current facing: the pelvis x axis of the frame just shown
                    const double q[4] = {cur[3], cur[4], cur[5], cur[6]};
                    double       r[9];
                    quat_to_matrix(q, r);
                    const double n = std::hypot(r[0], r[3]) + 1e-5;
                    cmd.facing[0]  = float(r[0] / n);
                    cmd.facing[1]  = float(r[3] / n);
                    if (cmd.facing[0] == 0 && cmd.facing[1] == 0) cmd.facing[0] = 1;
                }
                if (seg.has_target) {
                    cmd.has_target     = true;
                    cmd.target[0]      = seg.target[1];
                    cmd.target[1]      = seg.target[0];
                    cmd.target_heading = seg.target_heading;   // about +Y = about MuJoCo z
                }
                if (!ag->replan_due(cmd)) continue;
                const auto       t0   = std::chrono::steady_clock::now();
                const agent_plan plan = ag->plan(cmd);
                plan_ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
                ++plan_counter;
                json targets = json::array();
                for (int f = 0; f < k_agent_context; ++f) {
                    json frame = json::array();
                    for (int j = 0; j < k_n_joints; ++j) {
                        const float * p = &plan.target_positions[size_t(f * k_n_joints + j) * 3];
                        frame.push_back({r7(p[0]), r7(p[1]), r7(p[2])});
                    }
                    targets.push_back(frame);
                }
                plans.push_back({{"first_frame", int64_t(shown.size() / 36)},
                                 {"frames", plan.frames},
                                 {"style", ag->styles()[plan.style].name},
                                 {"targets", {{"joint_positions", targets}}}});
            }
        }
    } catch (const std::invalid_argument & e) {
        std::fprintf(stderr, "motionbricks plan: bad script: %s\n", e.what());
        return 2;
    } catch (const std::exception & e) {
        std::fprintf(stderr, "motionbricks plan: planning failed: %s\n", e.what());
        return 1;
    }

    const int64_t frames = int64_t(shown.size() / 36);
    try {
        std::string out;
        if (format == "csv") {
            char buf[32];
            for (int64_t f = 0; f < frames; ++f) {
                for (int c = 0; c < 36; ++c) {
                    std::snprintf(buf, sizeof(buf), c ? ",%.7g" : "%.7g", double(shown[size_t(f) * 36 + c]));
                    out += buf;
                }
                out += '\n';
            }
        } else {
            std::vector<float> pos(size_t(frames) * k_n_joints * 3), rot(size_t(frames) * k_n_joints * 9);
            conv.qpos_to_transforms(shown.data(), frames, pos.data(), rot.data());
            std::vector<float> local_xyzw(size_t(frames) * k_n_joints * 4);
            local_rotations_xyzw(rot.data(), frames, local_xyzw.data());
            json root = json::array(), local = json::array(), joints = json::array(), qpos = json::array();
            for (int64_t f = 0; f < frames; ++f) {
                const float * P = &pos[size_t(f) * k_n_joints * 3];
                root.push_back({r7(P[0]), r7(P[1]), r7(P[2])});
                json lr = json::array(), jp = json::array();
                for (int j = 0; j < k_n_joints; ++j) {
                    const float * q = &local_xyzw[(size_t(f) * k_n_joints + j) * 4];
                    lr.push_back({r7(q[0]), r7(q[1]), r7(q[2]), r7(q[3])});
                    jp.push_back({r7(P[j * 3]), r7(P[j * 3 + 1]), r7(P[j * 3 + 2])});
                }
                local.push_back(lr);
                joints.push_back(jp);
                json qr = json::array();
                for (int c = 0; c < 36; ++c) qr.push_back(r7(shown[size_t(f) * 36 + c]));
                qpos.push_back(qr);
            }
            json names = json::array(), parents = json::array();
            for (int j = 0; j < k_n_joints; ++j) {
                names.push_back(k_g1_joint_names[j]);
                parents.push_back(k_g1_parents[j]);
            }
            json doc = {{"format", k_motion_format}, {"fps", 30}, {"frames", frames}, {"joint_names", names},
                        {"parents", parents}, {"root_translations", root}, {"local_rotations_xyzw", local},
                        {"joint_positions", joints}, {"qpos", qpos}, {"plans", plans}};
            out = doc.dump() + "\n";
        }
        write_atomic_text(output_path, out);
    } catch (const std::exception & e) {
        std::fprintf(stderr, "motionbricks plan: %s\n", e.what());
        return 1;
    }
    std::vector<double> sorted = plan_ms;
    std::sort(sorted.begin(), sorted.end());
    std::fprintf(stderr, "motionbricks plan: %lld frames, %zu plans, median %.1f ms per plan\n", (long long) frames,
                 plan_ms.size(), sorted.empty() ? 0.0 : sorted[sorted.size() / 2]);
    return 0;
}

} // namespace mb::cli
