// `motionbricks bench physics`: the simulated G1's 50 Hz tick through the C ABI, unpaced (median and
// p95 per tick) and paced at 50 Hz (missed deadlines). Without --sonic the robot holds its default
// pose under an override at 8 × the release's kp (it stands; see tests/physics): four MuJoCo
// substeps and the outputs. With --sonic every tick is the full one: observations, the SONIC
// encoder + decoder, targets, four substeps, tracking a 2 s clip of the standing pose at the same
// 8 × kp (random weights need `convert.py random-sonic --tame`, or the robot is thrown about within
// ticks). With --sonic the SONIC pair's weight-streaming floor is measured in the same run, with the
// handle's thread count; the load average before and after. --realtime N adds a second paced run as
// a real-time loop runs (realtime.h: memory locked and pre-faulted, SCHED_FIFO, a wake-up 1 ms early
// and a spin to the slot's start). Each paced run records per tick the wake-up lateness, the tick's
// duration, its run-queue wait, steal time, page faults and involuntary switches, and lists the
// slowest ticks with them. One JSON object
#include "tools/cli/commands.h"
#include "tools/cli/int-list.h"
#include "tools/cli/realtime.h"
#include "tools/cli/sonic-floor.h"
#include "tools/model-options.h"

#include <motionbricks/physics.h>
#include <motionbricks/sonic.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

namespace mb::cli {
namespace {

constexpr int k_realtime_priority = 50;     // SCHED_FIFO, below the kernel's own real-time threads (99)
constexpr int k_realtime_early_us = 1000;   // wake-up this long before the slot, then spin

int usage() {
    std::fprintf(stderr, "usage: motionbricks bench physics --scene SCENE.xml [--sonic SONIC.gguf %s] [--ticks 500] [--paced 1000] [--realtime 0]\n",
                 tools::k_model_options_usage);
    return 2;
}

using clock_type = std::chrono::steady_clock;

double ms_since(clock_type::time_point t0) {
    return std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
}

double thread_cpu_ms() {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return double(t.tv_sec) * 1e3 + double(t.tv_nsec) * 1e-6;
}

double ms_between(clock_type::time_point a, clock_type::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
}

nlohmann::ordered_json stats(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return nlohmann::ordered_json{{"median", v[v.size() / 2]}, {"p95", v[std::min(v.size() - 1, size_t(0.95 * double(v.size())))]},
                                  {"max", v.back()}};
}

// one paced tick's record: times in ms from its slot's start, probe deltas over the tick itself
// (wake-up to end) and over the sleep before it
struct paced_tick {
    double       wake = 0, end = 0, duration = 0;
    probe_sample in_tick, in_sleep;
};

// a + sign · b; a difference of two readings on different CPUs has no per-CPU steal (0)
probe_sample combine(const probe_sample & a, const probe_sample & b, int sign) {
    const bool same_cpu = sign > 0 || a.cpu == b.cpu;
    return {a.run_ns + sign * b.run_ns,
            a.wait_ns + sign * b.wait_ns,
            a.steal_ticks + sign * b.steal_ticks,
            same_cpu ? a.cpu_steal_ticks + sign * b.cpu_steal_ticks : 0.0,
            a.cpu,
            a.minflt + sign * b.minflt,
            a.majflt + sign * b.majflt,
            a.nivcsw + sign * b.nivcsw};
}

nlohmann::ordered_json probe_json(const probe_sample & p) {
    return {{"run_queue_wait_ms", p.wait_ns * 1e-6}, {"steal_ticks", p.steal_ticks}, {"this_cpu_steal_ticks", p.cpu_steal_ticks}, {"minflt", p.minflt},
            {"majflt", p.majflt}, {"nivcsw", p.nivcsw}};
}

// `n` ticks at 50 Hz: tick k's slot is [start + 20k ms, start + 20(k + 1) ms) and it misses when it
// ends after it. early_us > 0: sleep until that long before the slot, then spin to its start
template <class Tick> bool paced_run(int n, int early_us, Tick && tick, nlohmann::ordered_json & out) {
    std::vector<paced_tick> rec(static_cast<size_t>(n));
    probe_sample            last = probe_now();
    const auto              start = clock_type::now() + std::chrono::milliseconds(20);
    for (int k = 0; k < n; ++k) {
        const auto slot = start + std::chrono::microseconds(20000LL * k);
        if (early_us > 0) {
            std::this_thread::sleep_until(slot - std::chrono::microseconds(early_us));
            while (clock_type::now() < slot) {
            }
        } else {
            std::this_thread::sleep_until(slot);
        }
        const auto         woke = clock_type::now();
        const probe_sample p0   = probe_now();
        double             ms   = 0;
        if (!tick(ms)) return false;
        const auto         done = clock_type::now();
        const probe_sample p1   = probe_now();
        paced_tick &       r    = rec[size_t(k)];
        r.wake     = ms_between(slot, woke);
        r.end      = ms_between(slot, done);
        r.duration = ms_between(woke, done);
        r.in_tick  = combine(p1, p0, -1);
        r.in_sleep = combine(p0, last, -1);
        last       = p1;
    }
    std::vector<double> wake, end, duration;
    probe_sample        total;
    int                 missed = 0, missed_with_steal = 0, missed_with_wait = 0;
    for (const paced_tick & r : rec) {
        wake.push_back(r.wake);
        end.push_back(r.end);
        duration.push_back(r.duration);
        total = combine(combine(total, r.in_tick, 1), r.in_sleep, 1);
        if (r.end > 20.0) {
            ++missed;
            if (r.in_tick.steal_ticks + r.in_sleep.steal_ticks > 0) ++missed_with_steal;
            if (r.in_tick.wait_ns > 1e6) ++missed_with_wait;   // runnable but not running for over 1 ms of it
        }
    }
    // the 8 latest-ending ticks with what happened in and before them
    std::vector<int> order(static_cast<size_t>(n));
    for (int k = 0; k < n; ++k) order[size_t(k)] = k;
    std::sort(order.begin(), order.end(), [&](int a, int b) { return rec[size_t(a)].end > rec[size_t(b)].end; });
    nlohmann::ordered_json worst = nlohmann::ordered_json::array();
    for (size_t i = 0; i < std::min<size_t>(8, order.size()); ++i) {
        const paced_tick & r = rec[size_t(order[i])];
        worst.push_back({{"tick", order[i]}, {"end_ms", r.end}, {"wake_late_ms", r.wake}, {"duration_ms", r.duration},
                         {"in_tick", probe_json(r.in_tick)}, {"before_tick", probe_json(r.in_sleep)}});
    }
    out = {{"ticks", n},
           {"missed_deadlines", missed},
           {"missed_with_steal", missed_with_steal},
           {"missed_with_run_queue_wait_over_1ms", missed_with_wait},
           {"completion_ms_in_slot", stats(end)},
           {"wake_late_ms", stats(wake)},
           {"tick_ms", stats(duration)},
           {"whole_run", probe_json(total)},
           {"latest_ticks", worst}};
    return true;
}

} // namespace

int cmd_bench_physics(int argc, char ** argv) {
    std::string          scene, sonic_path;
    tools::model_options mopt;
    int                  ticks = 500, paced = 1000, realtime = 0;
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
        } else if (a == "--ticks" || a == "--paced" || a == "--realtime") {
            if (!parse_int_list(v, a == "--ticks" ? 1 : 0, 100000, one) || one.size() != 1) {
                std::fprintf(stderr, "motionbricks bench physics: %s must be one count up to 100000\n", a.c_str());
                return 2;
            }
            (a == "--ticks" ? ticks : a == "--paced" ? paced : realtime) = one[0];
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

    // wall time, and the calling thread's CPU time (blind to preemption by other processes on a
    // shared machine; at 1 thread the whole tick's work)
    std::vector<double> total, cpu;
    for (int k = 0; k < ticks + 10; ++k) {
        double       a  = 0;
        const double c0 = thread_cpu_ms();
        if (!tick(a)) return fail();
        const double c1 = thread_cpu_ms();
        if (k >= 10) {   // after a warm-up
            total.push_back(a);
            cpu.push_back(c1 - c0);
        }
    }
    nlohmann::ordered_json out;
    out["bench"]   = "motionbricks-bench-physics-v1";
    out["scene"]   = scene;
    out["control"] = s ? "SONIC controller, full tick (observations + encoder + decoder + 4 substeps)"
                       : "override: default pose held at 8 x the release's kp (4 substeps + outputs)";
    out["sonic"]   = sonic_path.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(sonic_path);
    out["threads"] = mopt.threads > 0 ? mopt.threads : int(std::max(1u, std::thread::hardware_concurrency()));
    out["loadavg_start"] = load_average();
    out["unpaced"] = {{"ticks", ticks}, {"tick_ms", stats(total)}, {"tick_thread_cpu_ms", stats(cpu)}};
    if (paced > 0) {
        nlohmann::ordered_json r;
        if (!paced_run(paced, 0, tick, r)) return fail();
        out["paced_50hz"] = r;
        out["loadavg_after_paced"] = load_average();
    }
    if (realtime > 0) {
        // what a real-time loop does; applied here, after the plain runs, and undone after it
        const realtime_state   rt = realtime_enter(k_realtime_priority);
        nlohmann::ordered_json r;
        const bool             ok = paced_run(realtime, k_realtime_early_us, tick, r);
        realtime_leave();
        if (!ok) return fail();
        r["realtime"]   = realtime_json(rt);
        r["early_wake_us"] = k_realtime_early_us;
        out["paced_50hz_realtime"] = r;
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
