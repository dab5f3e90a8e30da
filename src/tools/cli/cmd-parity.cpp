// `motionbricks parity FIXTURE.mbparity --model DIR --styles DIR --report REPORT.json
//  [--device cpu|cuda] [--threads N] [--trace-dir DIR]`: replays every plan of an open-loop
// fixture independently (argmax, no seam blend: mb_agent_plan_open_loop from the recorded context)
// and writes motionbricks-open-loop-report-v1 with the registry's tolerances and our stricter gate;
// with --trace-dir also one motionbricks-native-neural-trace-v1 per plan. Exit 0 when every plan
// passes both gates, 1 when one fails (or the model cannot run), 2 on bad usage or input
#include "format/fixture-io.h"
#include "format/mbparity.h"
#include "tools/cli/commands.h"
#include "tools/cli/parity-metrics.h"
#include "tools/serve/replay-recorder.h"

#include <motionbricks/motionbricks.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace mb::cli {

namespace {

using json = nlohmann::json;
using serve::clips_style;   // a fixture's mode is upstream's CLIPS index

constexpr int k_j = int(MB_G1_JOINT_COUNT);
constexpr int k_w = 4;

// how the recorded taps are named in a neural trace (the reference's keys where one exists)
const std::map<std::string, std::string> k_trace_names = {
    {"norm_global_root_values", "input.global_root_values"},
    {"norm_local_root_values", "input.local_root_values"},
    {"norm_local_poses", "input.local_poses"},
    {"num_token_logits", "root.num_token_logits"},
    {"pred_global_root_values", "root.pred_global_root_values"},
    {"pred_local_root_values", "root.pred_local_root_values"},
    {"pose_root_cond", "pose.root_condition"},
    {"pose_cond", "pose.pose_condition"},
    {"has_pose_cond", "pose.has_pose_condition"},
    {"step_pose_logits", "pose.logits"},
    {"pred_pose_tokens", "pose.tokens"},
    {"decoder_codes", "decoder.quantized"},
    {"decoder_external_cond", "decoder.external_condition"},
    {"decoder_has_target_cond", "decoder.has_target_condition"},
    {"decoder_recon_state", "decoder.output"},
};

struct c_free {
    void operator()(mb_model * p) const { mb_model_free(p); }
    void operator()(mb_style * p) const { mb_style_free(p); }
    void operator()(mb_agent * p) const { mb_agent_free(p); }
    void operator()(mb_command * p) const { mb_command_free(p); }
    void operator()(mb_motion * p) const { mb_motion_free(p); }
    void operator()(mb_runtime_options * p) const { mb_runtime_options_free(p); }
};
template <class T> using owned = std::unique_ptr<T, c_free>;

struct usage_error {
    std::string msg;
};

// the last tensor of each traced name (the pose logits' last masked-decoding step)
struct trace_sink {
    json tensors = json::object();
    static void tap(void * user, const char * name, const float * data, const uint64_t * shape, uint32_t n_dims) {
        auto &     self = *static_cast<trace_sink *>(user);
        const auto it   = k_trace_names.find(name);
        if (it == k_trace_names.end()) return;
        json     s = json::array();
        uint64_t n = 1;
        for (uint32_t i = 0; i < n_dims; ++i) {
            s.push_back(shape[i]);
            n *= shape[i];
        }
        json v = json::array();
        for (uint64_t i = 0; i < n; ++i) v.push_back(std::isfinite(data[i]) ? json(double(data[i])) : json(nullptr));
        self.tensors[it->second] = {{"shape", std::move(s)}, {"values", std::move(v)}};
    }
};

// a borrowed float array of a motion, checked for its size
const float * get(mb_status (*fn)(const mb_motion *, const float **, uint64_t *, char *, uint64_t), const mb_motion * m,
                  uint64_t want, const char * what) {
    const float * p = nullptr;
    uint64_t      n = 0;
    char          err[256];
    if (fn(m, &p, &n, err, sizeof err) != MB_OK || n != want) {
        throw std::runtime_error(std::string(what) + ": " + (n != want ? "unexpected size" : err));
    }
    return p;
}

void check(mb_status s, const char * what, const char * err) {
    if (s != MB_OK) throw std::runtime_error(std::string(what) + ": " + mb_status_string(s) + ": " + err);
}

int run(int argc, char ** argv) {
    std::string fixture_path, model_dir, styles_dir, report_path, trace_dir, device = "cpu";
    int         threads = 0;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) throw usage_error{a + " needs a value"};
            return argv[++i];
        };
        if (a == "--model") model_dir = value();
        else if (a == "--styles") styles_dir = value();
        else if (a == "--report") report_path = value();
        else if (a == "--trace-dir") trace_dir = value();
        else if (a == "--device") device = value();
        else if (a == "--threads") {
            const std::string v = value();
            char *            end = nullptr;
            const long        t   = std::strtol(v.c_str(), &end, 10);
            if (v.empty() || *end || t < 0 || t > 1024) throw usage_error{"--threads must be 0..1024"};
            threads = int(t);
        } else if (!a.empty() && a[0] == '-') throw usage_error{"unknown option " + a};
        else if (fixture_path.empty()) fixture_path = a;
        else throw usage_error{"more than one fixture"};
    }
    if (fixture_path.empty() || model_dir.empty() || styles_dir.empty() || report_path.empty()) {
        throw usage_error{"FIXTURE, --model, --styles and --report are required"};
    }
    if (device != "cpu" && device != "cuda") throw usage_error{"--device must be cpu or cuda"};

    parity_fixture fx;
    try {
        fx = mbparity_read(fixture_path);
    } catch (const std::exception & e) {
        std::fprintf(stderr, "motionbricks parity: %s\n", e.what());
        return 2;
    }

    char err[512] = "";
    mb_runtime_options * opt_raw = nullptr;
    check(mb_runtime_options_create(&opt_raw, err, sizeof err), "runtime options", err);
    owned<mb_runtime_options> opt(opt_raw);
    check(mb_runtime_options_set_device(opt.get(), device == "cuda" ? MB_DEVICE_CUDA : MB_DEVICE_CPU, err, sizeof err), "device", err);
    check(mb_runtime_options_set_threads(opt.get(), uint32_t(threads), err, sizeof err), "threads", err);
    mb_model * model_raw = nullptr;
    if (const mb_status s = mb_model_load(model_dir.c_str(), opt.get(), &model_raw, err, sizeof err); s != MB_OK) {
        std::fprintf(stderr, "motionbricks parity: cannot load model '%s': %s\n", model_dir.c_str(), err);
        return s == MB_INVALID_FORMAT || s == MB_INCOMPATIBLE_MODEL ? 2 : 1;
    }
    owned<mb_model> model(model_raw);

    // the fixture's skeleton must be the model's (FK below uses the fixture's)
    for (int j = 0; j < k_j; ++j) {
        int32_t parent = 0;
        float   n[3];
        check(mb_model_get_joint_parent(model.get(), uint32_t(j), &parent, err, sizeof err), "joint parent", err);
        check(mb_model_get_neutral_joint_position(model.get(), uint32_t(j), &n[0], &n[1], &n[2], err, sizeof err), "neutral joint", err);
        const double d = vec_error(n, &fx.neutral[size_t(j) * 3]);
        if (parent != fx.parents[size_t(j)] || !(d <= 1e-6)) {
            std::fprintf(stderr, "motionbricks parity: %s: joint %d differs from the model's skeleton (parent %d vs %d, neutral off by %.3g m)\n",
                         fixture_path.c_str(), j, fx.parents[size_t(j)], parent, d);
            return 2;
        }
    }

    // the styles the fixture's modes name, and the side steps of the walk remap when present
    std::map<int, owned<mb_style>> styles;
    auto load_style = [&](int mode) -> mb_style * {
        auto it = styles.find(mode);
        if (it != styles.end()) return it->second.get();
        const std::string path = styles_dir + "/" + clips_style(mode) + ".mbstyle";
        mb_style *        s    = nullptr;
        if (mb_style_load(model.get(), path.c_str(), &s, err, sizeof err) != MB_OK) return nullptr;
        return styles.emplace(mode, owned<mb_style>(s)).first->second.get();
    };
    for (const parity_plan & p : fx.plans) {
        if (!load_style(p.mode)) {
            std::fprintf(stderr, "motionbricks parity: style '%s' (mode %d): %s\n", clips_style(p.mode), p.mode, err);
            return 2;
        }
    }
    mb_agent * agent_raw = nullptr;
    check(mb_agent_create(model.get(), &agent_raw, err, sizeof err), "agent", err);
    owned<mb_agent> agent(agent_raw);
    mb_style * left = load_style(13), * right = load_style(14);
    if (left && right) check(mb_agent_set_sidestep_styles(agent.get(), left, right, err, sizeof err), "side steps", err);
    if (!trace_dir.empty()) std::filesystem::create_directories(trace_dir);

    json             plans = json::array();
    uint64_t         worst_plan[METRIC_COUNT] = {};
    double           worst_max[METRIC_COUNT]  = {};
    uint64_t         duration_matches = 0;
    bool             passed = true, strict_passed = true;
    for (size_t pi = 0; pi < fx.plans.size(); ++pi) {
        const parity_plan & p = fx.plans[pi];
        mb_command *        cmd_raw = nullptr;
        check(mb_command_create(&cmd_raw, err, sizeof err), "command", err);
        owned<mb_command> cmd(cmd_raw);
        check(mb_command_set_style(cmd.get(), styles.at(p.mode).get(), err, sizeof err), "style", err);
        check(mb_command_set_movement_direction(cmd.get(), p.movement[0], p.movement[1], p.movement[2], err, sizeof err), "movement", err);
        check(mb_command_set_facing_direction(cmd.get(), p.facing[0], p.facing[1], p.facing[2], err, sizeof err), "facing", err);
        check(mb_command_set_seed(cmd.get(), p.seed, err, sizeof err), "seed", err);
        check(mb_command_set_sampling_argmax(cmd.get(), 1, err, sizeof err), "argmax", err);
        check(mb_agent_set_context(agent.get(), p.context_roots.data(), p.context_local_xyzw.data(), k_w, k_j, err, sizeof err),
              "context", err);
        trace_sink  sink;
        mb_motion * m_raw = nullptr;
        const mb_status st = mb_agent_plan_open_loop(agent.get(), cmd.get(), trace_dir.empty() ? nullptr : &trace_sink::tap, &sink,
                                                     &m_raw, err, sizeof err);
        if (st != MB_OK) {
            std::fprintf(stderr, "motionbricks parity: plan %zu: %s: %s\n", pi, mb_status_string(st), err);
            return 1;
        }
        owned<mb_motion> m(m_raw);
        uint64_t         frames = 0, tokens = 0;
        check(mb_motion_get_frame_count(m.get(), &frames, err, sizeof err), "frames", err);
        check(mb_motion_get_token_count(m.get(), &tokens, err, sizeof err), "tokens", err);
        const float * roots  = get(mb_motion_get_root_translations, m.get(), frames * 3, "roots");
        const float * rots   = get(mb_motion_get_local_rotations_xyzw, m.get(), frames * k_j * 4, "rotations");
        const float * troots = get(mb_motion_get_target_root_translations, m.get(), k_w * 3, "target roots");
        const float * trots  = get(mb_motion_get_target_local_rotations_xyzw, m.get(), k_w * k_j * 4, "target rotations");
        const std::vector<float> joints  = skeleton_fk(fx.parents.data(), fx.neutral.data(), k_j, roots, rots, int(frames));
        const std::vector<float> tjoints = skeleton_fk(fx.parents.data(), fx.neutral.data(), k_j, troots, trots, k_w);

        // errors over the frames both have (a duration mismatch fails the plan anyway)
        const size_t F = std::min<size_t>(frames, p.frames);
        error_stat   s[METRIC_COUNT];
        for (size_t f = 0; f < F; ++f) {
            s[METRIC_ROOT].add(vec_error(&roots[f * 3], &p.expected_roots[f * 3]));
            for (int j = 0; j < k_j; ++j) {
                const size_t r = f * k_j + size_t(j);
                s[METRIC_ROTATION].add(quat_error_deg(&rots[r * 4], &p.expected_local_xyzw[r * 4]));
                s[METRIC_JOINT].add(vec_error(&joints[r * 3], &p.expected_joints[r * 3]));
            }
        }
        for (size_t f = 0; f < size_t(k_w); ++f) {
            s[METRIC_TARGET_ROOT].add(vec_error(&troots[f * 3], &p.target_roots[f * 3]));
            for (int j = 0; j < k_j; ++j) {
                const size_t r = f * k_j + size_t(j);
                s[METRIC_TARGET_ROTATION].add(quat_error_deg(&trots[r * 4], &p.target_local_xyzw[r * 4]));
                s[METRIC_TARGET_JOINT].add(vec_error(&tjoints[r * 3], &p.target_joints[r * 3]));
            }
        }
        const bool duration_exact = frames == p.frames;
        bool       ok = duration_exact, strict_ok = duration_exact;
        json       metrics = json::object();
        for (int k = 0; k < METRIC_COUNT; ++k) {
            const double mx = s[k].get_max();
            ok        = ok && mx <= k_open_loop_tolerances[size_t(k)];
            strict_ok = strict_ok && mx <= k_open_loop_strict[size_t(k)];
            metrics[k_metric_names[k]] = json_stat(s[k]);
            if (pi == 0 || !(mx <= worst_max[k])) {
                worst_max[k]  = mx;
                worst_plan[k] = pi;
            }
        }
        duration_matches += duration_exact;
        passed        = passed && ok;
        strict_passed = strict_passed && strict_ok;
        json plan = {
            {"index", pi},
            {"command_frame", p.command_frame},
            {"mode", p.mode},
            {"style", clips_style(p.mode)},
            {"seed", p.seed},
            {"expected_frames", p.frames},
            {"actual_frames", frames},
            {"duration_exact", duration_exact},
            {"passed", ok},
            {"strict_passed", strict_ok},
            {"movement", json_rows(p.movement, 1, 3)[0]},
            {"facing", json_rows(p.facing, 1, 3)[0]},
            {"metrics", metrics},
            {"expected_roots", json_rows(p.expected_roots.data(), p.frames, 3)},
            {"native_roots", json_rows(roots, frames, 3)},
            {"native_rotations", json_rows3(rots, frames, k_j, 4)},
            {"expected_joint_positions", json_rows3(p.expected_joints.data(), p.frames, k_j, 3)},
            {"native_joint_positions", json_rows3(joints.data(), frames, k_j, 3)},
            {"native_target_roots", json_rows(troots, k_w, 3)},
            {"native_target_rotations", json_rows3(trots, k_w, k_j, 4)},
            {"expected_target_joint_positions", json_rows3(p.target_joints.data(), k_w, k_j, 3)},
            {"native_target_joint_positions", json_rows3(tjoints.data(), k_w, k_j, 3)},
        };
        plans.push_back(std::move(plan));
        std::printf("plan %3zu  mode %-16s frames %2llu/%2u %s  root %.3g m  rot %.3g deg  joint %.3g m  target %.3g m %.3g deg %.3g m  %s\n",
                    pi, clips_style(p.mode), (unsigned long long) frames, p.frames, duration_exact ? "exact" : "DIFFER",
                    s[0].get_max(), s[1].get_max(), s[2].get_max(), s[3].get_max(), s[4].get_max(), s[5].get_max(),
                    strict_ok ? "pass" : ok ? "FAIL (strict gate)" : "FAIL");
        if (!trace_dir.empty()) {
            char name[64];
            std::snprintf(name, sizeof name, "/native-plan-%03zu.json", pi);
            const json tr = {{"format", "motionbricks-native-neural-trace-v1"},
                             {"plan", pi},
                             {"selected_tokens", tokens},
                             {"tensors", std::move(sink.tensors)}};
            write_file_atomic(trace_dir + name, tr.dump() + "\n");
        }
    }

    json worst_json = json::object();
    for (int k = 0; k < METRIC_COUNT; ++k) {
        worst_json[k_metric_names[k]] = {{"max", std::isfinite(worst_max[k]) ? json(worst_max[k]) : json(nullptr)},
                                         {"plan", worst_plan[k]}};
    }
    json parents = json::array(), neutral = json_rows(fx.neutral.data(), k_j, 3);
    for (int32_t p : fx.parents) parents.push_back(p);
    const json report = {
        {"format", "motionbricks-open-loop-report-v1"},
        {"device", device},
        {"fps", fx.fps},
        {"joints", k_j},
        {"passed", passed},
        {"strict_passed", strict_passed},
        {"comparison_layer", "raw_neural_output_before_playback_blend"},
        {"pose_token_ids", "unavailable at observational boundary"},
        {"tolerances", json_tolerances(k_open_loop_tolerances)},
        {"strict_tolerances", json_tolerances(k_open_loop_strict)},
        {"summary", {{"duration_matches", duration_matches}, {"duration_total", fx.plans.size()}, {"worst", worst_json}}},
        {"parents", parents},
        {"neutral_joints", neutral},
        {"plans", plans},
    };
    write_file_atomic(report_path, report.dump() + "\n");
    std::printf("%llu/%zu durations exact; worst root %.3g m, rotation %.3g deg, joint %.3g m, target root %.3g m, "
                "target rotation %.3g deg, target joint %.3g m; registry gate %s, strict gate %s\n",
                (unsigned long long) duration_matches, fx.plans.size(), worst_max[0], worst_max[1], worst_max[2], worst_max[3],
                worst_max[4], worst_max[5], passed ? "passed" : "FAILED", strict_passed ? "passed" : "FAILED");
    return passed && strict_passed ? 0 : 1;
}

} // namespace

int cmd_parity(int argc, char ** argv) {
    try {
        return run(argc, argv);
    } catch (const usage_error & e) {
        std::fprintf(stderr, "motionbricks parity: %s\nusage: motionbricks parity FIXTURE.mbparity --model DIR --styles DIR "
                             "--report REPORT.json [--device cpu|cuda] [--threads N] [--trace-dir DIR]\n", e.msg.c_str());
        return 2;
    } catch (const std::exception & e) {
        std::fprintf(stderr, "motionbricks parity: %s\n", e.what());
        return 1;
    }
}

} // namespace mb::cli
