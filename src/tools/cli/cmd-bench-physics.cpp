// `motionbricks bench physics`: the simulated G1's 50 Hz tick through the C ABI, unpaced (median and
// p95 per tick) and paced at 50 Hz (missed deadlines). Without --sonic the robot holds its default
// pose under an override at 8 × the release's kp (it stands; see tests/physics): four MuJoCo
// substeps and the outputs. With --sonic every tick is the full one: observations, the SONIC
// encoder + decoder, targets, four substeps, tracking a 2 s clip of the standing pose at the same
// 8 × kp (random weights need `convert.py random-sonic --tame`, or the robot is thrown about within
// ticks). With --sonic the SONIC pair's weight-streaming floor is measured in the same run, with the
// handle's thread count; the load average before and after. One JSON object
#include "tools/cli/commands.h"
#include "tools/cli/int-list.h"
#include "tools/cli/sonic-floor.h"
#include "tools/model-options.h"

#include <motionbricks/physics.h>
#include <motionbricks/sonic.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

namespace mb::cli {
namespace {

int usage() {
    std::fprintf(stderr, "usage: motionbricks bench physics --scene SCENE.xml [--sonic SONIC.gguf %s] [--ticks 500] [--paced 1000]\n",
                 tools::k_model_options_usage);
    return 2;
}

double ms_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

} // namespace

int cmd_bench_physics(int argc, char ** argv) {
    std::string          scene, sonic_path;
    tools::model_options mopt;
    int                  ticks = 500, paced = 1000;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (i + 1 >= argc) return usage();
        const std::string v = argv[++i];
        std::vector<int>  one;
        if (const int r = tools::parse_model_option("bench physics", a, v, mopt); r != 0) {
            if (r < 0) return 2;
        } else if (a == "--scene") {
            scene = v;
        } else if (a == "--sonic") {
            sonic_path = v;
        } else if (a == "--ticks" || a == "--paced") {
            if (!parse_int_list(v, a == "--paced" ? 0 : 1, 100000, one) || one.size() != 1) {
                std::fprintf(stderr, "motionbricks bench physics: %s must be one count up to 100000\n", a.c_str());
                return 2;
            }
            (a == "--ticks" ? ticks : paced) = one[0];
        } else {
            std::fprintf(stderr, "motionbricks bench physics: unknown option '%s'\n", a.c_str());
            return usage();
        }
    }
    if (scene.empty()) return usage();
    char       e[1024];
    mb_sonic * s = nullptr;
    if (!sonic_path.empty()) {
        const motionbricks::runtime_options opts = tools::to_runtime_options(mopt);
        if (mb_sonic_load(sonic_path.c_str(), opts.get(), &s, e, sizeof e) != MB_OK) {
            std::fprintf(stderr, "motionbricks bench physics: cannot load '%s': %s\n", sonic_path.c_str(), e);
            return 1;
        }
    }
    mb_physics * p = nullptr;
    if (mb_physics_create(s, scene.c_str(), nullptr, &p, e, sizeof e) != MB_OK) {
        std::fprintf(stderr, "motionbricks bench physics: %s\n", e);
        mb_sonic_free(s);
        return 1;
    }
    float kp[29], kd[29], pose[29], q[36];
    const bool table = mb_physics_get_table(p, kp, kd, pose, nullptr, 29, e, sizeof e) == MB_OK;
    for (int i = 0; i < 29; ++i) kp[i] *= 8.0f;
    if (!table || mb_physics_set_gains(p, kp, kd, 29, e, sizeof e) != MB_OK || mb_physics_get_mujoco_qpos(p, q, 36, e, sizeof e) != MB_OK ||
        mb_physics_start_qpos(p, q, 36, e, sizeof e) != MB_OK || (!s && mb_physics_set_action_override(p, pose, 29, e, sizeof e) != MB_OK)) {
        std::fprintf(stderr, "motionbricks bench physics: %s\n", e);
        mb_physics_free(p);
        mb_sonic_free(s);
        return 1;
    }
    std::vector<float> clip;   // 2 s of the standing pose at 30 FPS
    for (int f = 0; f < 60; ++f) clip.insert(clip.end(), q, q + 36);
    // one tick; false on failure (message in e)
    auto tick = [&](double & ms) {
        const auto t0 = std::chrono::steady_clock::now();
        if (mb_physics_step_qpos(p, clip.data(), clip.size(), 60, 0.0, nullptr, 0, nullptr, 0, e, sizeof e) != MB_OK) return false;
        ms = ms_since(t0);
        return true;
    };
    auto fail = [&]() {
        std::fprintf(stderr, "motionbricks bench physics: %s\n", e);
        mb_physics_free(p);
        mb_sonic_free(s);
        return 1;
    };

    std::vector<double> total;
    for (int k = 0; k < ticks + 10; ++k) {
        double a = 0;
        if (!tick(a)) return fail();
        if (k >= 10) total.push_back(a);   // after a warm-up
    }
    auto stats = [](std::vector<double> v) {
        std::sort(v.begin(), v.end());
        return nlohmann::ordered_json{{"median", v[v.size() / 2]}, {"p95", v[std::min(v.size() - 1, size_t(0.95 * double(v.size())))]},
                                      {"max", v.back()}};
    };
    nlohmann::ordered_json out;
    out["bench"]   = "motionbricks-bench-physics-v1";
    out["scene"]   = scene;
    out["control"] = s ? "SONIC controller, full tick (observations + encoder + decoder + 4 substeps)"
                       : "override: default pose held at 8 x the release's kp (4 substeps + outputs)";
    out["sonic"]   = sonic_path.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(sonic_path);
    out["threads"] = mopt.threads > 0 ? mopt.threads : int(std::max(1u, std::thread::hardware_concurrency()));
    out["loadavg_start"] = load_average();
    out["unpaced"] = {{"ticks", ticks}, {"tick_ms", stats(total)}};
    if (paced > 0) {
        // 50 Hz: tick k is due by start + (k + 1) · 20 ms; the loop sleeps until its slot
        const auto          start  = std::chrono::steady_clock::now();
        int                 missed = 0;
        std::vector<double> lateness;
        for (int k = 0; k < paced; ++k) {
            std::this_thread::sleep_until(start + std::chrono::microseconds(20000LL * k));
            double a = 0;
            if (!tick(a)) return fail();
            const double late = ms_since(start) - 20.0 * (k + 1);
            if (late > 0) ++missed;
            lateness.push_back(late + 20.0);   // completion time within its slot
        }
        out["paced_50hz"] = {{"ticks", paced}, {"missed_deadlines", missed}, {"completion_ms_in_slot", stats(lateness)}};
    }
    double   time = 0;
    uint32_t fallen = 0;
    mb_physics_status(p, &time, &fallen, nullptr, nullptr, 0);
    out["simulated_s"] = time;
    out["fallen"]      = fallen;
    if (s) out["floor"] = sonic_floor(out["threads"].get<int>());
    out["loadavg_end"] = load_average();
    std::printf("%s\n", out.dump(2).c_str());
    mb_physics_free(p);
    mb_sonic_free(s);
    return 0;
}

} // namespace mb::cli
