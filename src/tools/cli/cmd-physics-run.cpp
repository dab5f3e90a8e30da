// `motionbricks physics-run`: a plan script or a 30 fps qpos file played on the simulated G1, one
// 50 Hz tick per 20 ms of the clip, with a trace CSV out (per tick: time, fall flag, contacts, the
// pelvis and the mean body distance to the reference). Control: with --sonic the SONIC controller
// tracks the clip; without, each tick's action override is the reference's own hinge angles at that
// time (kinematic PD tracking), and --kp-scale stiffens the release's gains for it
#include "tools/cli/commands.h"
#include "tools/cli/plan-run.h"

#include <motionbricks/physics.h>
#include <motionbricks/sonic.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

namespace mb::cli {
namespace {

int usage() {
    std::fprintf(stderr, "usage: motionbricks physics-run --scene SCENE.xml --trace TRACE.csv (SCRIPT.json --model DIR --style FILE ... | "
                         "--qpos FILE.csv|.npz) [--sonic SONIC.gguf] [--config FILE.mbphysics] [--kp-scale 1]\n");
    return 2;
}

} // namespace

int cmd_physics_run(int argc, char ** argv) {
    plan_inputs in;
    std::string scene, trace_path, config, sonic_path;
    double      kp_scale = 1.0;
    const int   rc       = parse_motion_input("physics-run", argc, argv, in, [&](const std::string & a, const std::string & v) {
        if (a == "--scene") scene = v;
        else if (a == "--trace") trace_path = v;
        else if (a == "--config") config = v;
        else if (a == "--sonic") sonic_path = v;
        else if (a == "--kp-scale") {
            char * end = nullptr;
            kp_scale   = std::strtod(v.c_str(), &end);
            if (end == v.c_str() || *end || !(kp_scale > 0 && kp_scale <= 50)) {
                std::fprintf(stderr, "motionbricks physics-run: --kp-scale must be in (0, 50]\n");
                return -1;
            }
        } else return 0;
        return 1;
    }, usage);
    if (rc >= 0) return rc;
    if (scene.empty() || trace_path.empty()) return usage();
    std::vector<float> qpos;
    if (const int lc = load_motion_input("physics-run", in, qpos); lc != 0) return lc;
    const uint64_t frames = qpos.size() / MB_PHYSICS_QPOS;

    char         e[1024];
    mb_sonic *   sonic = nullptr;
    if (!sonic_path.empty() && mb_sonic_load(sonic_path.c_str(), nullptr, &sonic, e, sizeof e) != MB_OK) {
        std::fprintf(stderr, "motionbricks physics-run: cannot load '%s': %s\n", sonic_path.c_str(), e);
        return 1;
    }
    mb_physics * p = nullptr;
    if (mb_physics_create(sonic, scene.c_str(), config.empty() ? nullptr : config.c_str(), &p, e, sizeof e) != MB_OK) {
        std::fprintf(stderr, "motionbricks physics-run: %s\n", e);
        mb_sonic_free(sonic);
        return 1;
    }
    auto done = [&](int code) {
        mb_physics_free(p);
        mb_sonic_free(sonic);
        return code;
    };
    if (kp_scale != 1.0) {
        float kp[29], kd[29];
        const bool table = mb_physics_get_table(p, kp, kd, nullptr, nullptr, 29, e, sizeof e) == MB_OK;
        for (int i = 0; i < 29; ++i) kp[i] *= float(kp_scale);
        if (!table || mb_physics_set_gains(p, kp, kd, 29, e, sizeof e) != MB_OK) {
            std::fprintf(stderr, "motionbricks physics-run: %s\n", e);
            return done(2);
        }
    }
    if (mb_physics_start_qpos(p, qpos.data(), MB_PHYSICS_QPOS, e, sizeof e) != MB_OK) {
        std::fprintf(stderr, "motionbricks physics-run: the clip's first frame: %s\n", e);
        return done(2);
    }
    std::ofstream trace(trace_path);
    if (!trace) {
        std::fprintf(stderr, "motionbricks physics-run: cannot write %s\n", trace_path.c_str());
        return done(1);
    }
    trace << "tick,time,fallen,contacts,pelvis_x,pelvis_y,pelvis_z,reference_pelvis_x,reference_pelvis_y,reference_pelvis_z,mean_body_error\n";
    const uint64_t ticks    = (frames - 1) * 5 / 3 + 1;   // 50 Hz over the clip's duration
    int64_t        fell_at  = -1;
    double         err_sum  = 0, wall_ms = 0;
    for (uint64_t k = 0; k < ticks; ++k) {
        const double t = double(k) / 50.0;
        // the override: the reference's hinges at t (linear between the two 30 fps frames)
        const double   u  = std::min(t * 30.0, double(frames - 1));
        const uint64_t i  = std::min<uint64_t>(uint64_t(u), frames - 1);
        const uint64_t j  = std::min<uint64_t>(i + 1, frames - 1);
        const double   a  = u - double(i);
        float          targets[29];
        for (int h = 0; h < 29; ++h) {
            targets[h] = float((1 - a) * qpos[i * MB_PHYSICS_QPOS + 7 + h] + a * qpos[j * MB_PHYSICS_QPOS + 7 + h]);
        }
        float        actual[90], reference[90];
        const auto   t0 = std::chrono::steady_clock::now();
        if ((!sonic && mb_physics_set_action_override(p, targets, 29, e, sizeof e) != MB_OK) ||
            mb_physics_step_qpos(p, qpos.data(), qpos.size(), frames, t, actual, 90, reference, 90, e, sizeof e) != MB_OK) {
            std::fprintf(stderr, "motionbricks physics-run: tick %llu: %s\n", (unsigned long long) k, e);
            return done(1);
        }
        wall_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        double   time = 0;
        uint32_t fallen = 0, contacts = 0;
        mb_physics_status(p, &time, &fallen, &contacts, nullptr, 0);
        if (fallen && fell_at < 0) fell_at = int64_t(k);
        double err = 0;
        for (int b = 0; b < 30; ++b) {
            const double dx = actual[3 * b] - reference[3 * b], dy = actual[3 * b + 1] - reference[3 * b + 1], dz = actual[3 * b + 2] - reference[3 * b + 2];
            err += std::sqrt(dx * dx + dy * dy + dz * dz) / 30.0;
        }
        err_sum += err;
        trace << k << ',' << time << ',' << fallen << ',' << contacts << ',' << actual[0] << ',' << actual[1] << ',' << actual[2] << ','
              << reference[0] << ',' << reference[1] << ',' << reference[2] << ',' << err << '\n';
    }
    nlohmann::ordered_json out = {{"ticks", ticks},
                                  {"clip_frames", frames},
                                  {"control", sonic ? "SONIC controller (" + sonic_path + ")"
                                                    : std::string("override = the reference's hinges (kinematic PD tracking)")},
                                  {"kp_scale", kp_scale},
                                  {"fell_at_tick", fell_at},
                                  {"mean_body_error_m", err_sum / double(ticks)},
                                  {"ms_per_tick", wall_ms / double(ticks)},
                                  {"trace", trace_path}};
    std::printf("%s\n", out.dump(2).c_str());
    return done(trace ? 0 : 1);
}

} // namespace mb::cli
