// `motionbricks compare-reports LEFT.json RIGHT.json --output C.json [--hardware NAME] [--driver TEXT]
//  [--left-traces DIR --right-traces DIR]`: compares two motionbricks-open-loop-report-v1 of the
// same fixture (e.g. CPU against CUDA, or 1 thread against 2) at the public animation boundary and
// writes motionbricks-native-backend-open-loop-comparison-v1; the plans' identities must match.
// With paired trace directories (parity --trace-dir) it adds the diagnostic neural section. Exit 0
// when every plan is within the backend tolerances with the same duration, 1 when not, 2 on bad input
#include "format/fixture-io.h"
#include "format/json-bounded.h"
#include "format/regular-file.h"
#include "format/sha256.h"
#include "tools/cli/commands.h"
#include "tools/cli/parity-metrics.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <sys/utsname.h>
#include <vector>

namespace mb::cli {

namespace {

using json = nlohmann::json;

constexpr int k_j = 34;
// about 24,000 values per plan of 64 frames: reports of up to ~1,300 such plans
constexpr json_bounds k_report_bounds = {512u << 20, 8, 32u << 20};
constexpr json_bounds k_trace_bounds  = {256u << 20, 8, 32u << 20};

const char * const k_identity[] = {"index", "command_frame", "mode", "style", "seed", "expected_frames", "movement", "facing"};
const char * const k_continuous[] = {"root.num_token_logits",  "root.pred_global_root_values", "root.pred_local_root_values",
                                     "pose.root_condition",    "pose.pose_condition",          "pose.logits",
                                     "decoder.quantized",      "decoder.external_condition",   "decoder.output"};

struct bad_input {
    std::string msg;
};

json read_json(const std::string & path, const json_bounds & b) {
    try {
        return json_parse_bounded(read_regular_file(path, b.max_bytes), b);
    } catch (const std::exception & e) {
        throw bad_input{path + ": " + e.what()};
    }
}

// the first line of `path` that starts with `key`, after the colon; "" when none
std::string proc_field(const char * path, const char * key) {
    std::ifstream f(path);
    std::string   line;
    while (std::getline(f, line)) {
        if (line.rfind(key, 0) == 0) {
            const size_t c = line.find(':');
            std::string  v = c == std::string::npos ? line : line.substr(c + 1);
            v.erase(0, v.find_first_not_of(" \t"));
            return v;
        }
    }
    return "";
}

// this machine's processor and driver, for the record (CUDA: the NVIDIA kernel module's version line)
void detect_hardware(bool gpu, std::string & name, std::string & driver) {
    if (gpu) {
        std::ifstream f("/proc/driver/nvidia/version");
        std::string   line;
        if (std::getline(f, line)) driver = line;
        if (name.empty()) name = "NVIDIA GPU (see driver)";
    }
    if (name.empty()) name = proc_field("/proc/cpuinfo", "model name");
    if (name.empty()) name = "unknown";
    if (driver.empty()) {
        struct utsname u {};
        driver = ::uname(&u) == 0 ? std::string(u.sysname) + " " + u.release + " (CPU backend, no driver)" : "unknown";
    }
}

const json & member(const json & o, const char * key, const std::string & where) {
    if (!o.is_object() || !o.contains(key)) throw bad_input{where + ": no '" + key + "'"};
    return o.at(key);
}

std::vector<float> flat(const json & plan, const char * key, size_t inner, size_t cols, const std::string & where) {
    std::vector<float> v;
    if (!json_flatten(member(plan, key, where), inner, cols, v)) throw bad_input{where + ": '" + key + "' has the wrong shape"};
    return v;
}

int run(int argc, char ** argv) {
    std::string left_path, right_path, output, hardware, driver, left_traces, right_traces;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) throw bad_input{a + " needs a value"};
            return argv[++i];
        };
        if (a == "--output") output = value();
        else if (a == "--hardware") hardware = value();
        else if (a == "--driver") driver = value();
        else if (a == "--left-traces") left_traces = value();
        else if (a == "--right-traces") right_traces = value();
        else if (!a.empty() && a[0] == '-') throw bad_input{"unknown option " + a};
        else if (left_path.empty()) left_path = a;
        else if (right_path.empty()) right_path = a;
        else throw bad_input{"more than two reports"};
    }
    if (left_path.empty() || right_path.empty() || output.empty()) throw bad_input{"LEFT, RIGHT and --output are required"};
    if (left_traces.empty() != right_traces.empty()) throw bad_input{"--left-traces and --right-traces go together"};

    const json L = read_json(left_path, k_report_bounds), R = read_json(right_path, k_report_bounds);
    for (const auto * r : {&L, &R}) {
        const std::string where = r == &L ? left_path : right_path;
        if (!r->is_object() || r->value("format", "") != "motionbricks-open-loop-report-v1") {
            throw bad_input{where + ": not a motionbricks-open-loop-report-v1"};
        }
        if (!member(*r, "plans", where).is_array()) throw bad_input{where + ": 'plans' is not an array"};
    }
    const json & lp = L["plans"];
    const json & rp = R["plans"];
    if (lp.size() != rp.size()) {
        throw bad_input{"the reports have " + std::to_string(lp.size()) + " and " + std::to_string(rp.size()) + " plans"};
    }
    const std::string ld = L.value("device", "?"), rd = R.value("device", "?");
    detect_hardware(ld == "cuda" || rd == "cuda", hardware, driver);

    json       plans = json::array();
    double     worst_max[METRIC_COUNT] = {};
    uint64_t   worst_plan[METRIC_COUNT] = {};
    uint64_t   duration_matches = 0;
    bool       passed = true;
    for (size_t i = 0; i < lp.size(); ++i) {
        const std::string where = "plan " + std::to_string(i);
        for (const char * k : k_identity) {
            if (member(lp[i], k, left_path + ": " + where) != member(rp[i], k, right_path + ": " + where)) {
                throw bad_input{where + ": '" + k + "' differs between the reports (not the same fixture)"};
            }
        }
        const bool exact = member(lp[i], "actual_frames", where) == member(rp[i], "actual_frames", where);
        error_stat s[METRIC_COUNT];
        if (exact) {
            struct pair_spec {
                const char * key;
                size_t       inner, cols;
                metric       m;
            };
            for (const pair_spec & ps : {pair_spec{"native_roots", 0, 3, METRIC_ROOT}, pair_spec{"native_rotations", k_j, 4, METRIC_ROTATION},
                                         pair_spec{"native_joint_positions", k_j, 3, METRIC_JOINT},
                                         pair_spec{"native_target_roots", 0, 3, METRIC_TARGET_ROOT},
                                         pair_spec{"native_target_rotations", k_j, 4, METRIC_TARGET_ROTATION},
                                         pair_spec{"native_target_joint_positions", k_j, 3, METRIC_TARGET_JOINT}}) {
                const std::vector<float> a = flat(lp[i], ps.key, ps.inner, ps.cols, left_path + ": " + where);
                const std::vector<float> b = flat(rp[i], ps.key, ps.inner, ps.cols, right_path + ": " + where);
                if (a.size() != b.size()) throw bad_input{where + ": '" + ps.key + "' lengths differ"};
                for (size_t r = 0; r < a.size(); r += ps.cols) {
                    s[ps.m].add(ps.cols == 4 ? quat_error_deg(&a[r], &b[r]) : vec_error(&a[r], &b[r]));
                }
            }
        }
        bool ok      = exact;
        json metrics = json::object();
        for (int k = 0; k < METRIC_COUNT; ++k) {
            const double mx = exact ? s[k].get_max() : NAN;
            ok              = ok && mx <= k_backend_tolerances[size_t(k)];
            metrics[k_metric_names[k]] = exact ? json_stat(s[k]) : json{{"max", nullptr}, {"rmse", nullptr}};
            if (i == 0 || !(mx <= worst_max[k])) {
                worst_max[k]  = mx;
                worst_plan[k] = i;
            }
        }
        duration_matches += exact;
        passed = passed && ok;
        plans.push_back({{"index", i}, {"duration_exact", exact}, {"passed", ok}, {"metrics", metrics}});
    }
    json worst = json::object();
    for (int k = 0; k < METRIC_COUNT; ++k) {
        worst[k_metric_names[k]] = {{"max", std::isfinite(worst_max[k]) ? json(worst_max[k]) : json(nullptr)}, {"plan", worst_plan[k]}};
    }
    json out = {
        {"format", "motionbricks-native-backend-open-loop-comparison-v1"},
        {"left_device", ld},
        {"right_device", rd},
        {"hardware", {{"name", hardware}, {"driver", driver}}},
        {"sources", {{"left_sha256", sha256_file_hex(left_path)}, {"right_sha256", sha256_file_hex(right_path)}}},
        {"tolerances", json_tolerances(k_backend_tolerances)},
        {"passed", passed},
        {"plans", plans},
        {"summary", {{"duration_matches", duration_matches}, {"duration_total", lp.size()}, {"worst", worst}}},
    };

    // the neural section: tokens and continuous tensors of paired traces (diagnostic only)
    if (!left_traces.empty()) {
        uint64_t dur_mismatch = 0, pose_mismatch = 0, pose_total = 0;
        json     maxima = json::object();
        for (const char * n : k_continuous) maxima[n] = {{"max_abs", 0.0}, {"plan", 0}};
        for (size_t i = 0; i < lp.size(); ++i) {
            char name[64];
            std::snprintf(name, sizeof name, "/native-plan-%03zu.json", i);
            const json a = read_json(left_traces + name, k_trace_bounds), b = read_json(right_traces + name, k_trace_bounds);
            for (const json * t : {&a, &b}) {
                if (!t->is_object() || t->value("format", "") != "motionbricks-native-neural-trace-v1" || !t->contains("tensors")) {
                    throw bad_input{std::string(t == &a ? left_traces : right_traces) + name + ": not a motionbricks-native-neural-trace-v1"};
                }
            }
            const bool same_n = a.value("selected_tokens", -1) == b.value("selected_tokens", -2);
            dur_mismatch += !same_n;
            auto values = [&](const json & t, const char * key) {
                std::vector<double> v;
                const json & ts = t["tensors"];
                if (!ts.contains(key) || !ts[key].contains("values") || !ts[key]["values"].is_array()) return v;
                for (const auto & x : ts[key]["values"]) v.push_back(x.is_number() ? x.get<double>() : NAN);
                return v;
            };
            const std::vector<double> ta = values(a, "pose.tokens"), tb = values(b, "pose.tokens");
            pose_total += std::max(ta.size(), tb.size());
            for (size_t k = 0; k < std::max(ta.size(), tb.size()); ++k) pose_mismatch += k >= ta.size() || k >= tb.size() || ta[k] != tb[k];
            if (!same_n) continue;   // shapes follow the duration
            for (const char * key : k_continuous) {
                const std::vector<double> va = values(a, key), vb = values(b, key);
                double                    m  = va.size() == vb.size() ? 0.0 : NAN;
                for (size_t k = 0; k < std::min(va.size(), vb.size()); ++k) {
                    const double d = std::fabs(va[k] - vb[k]);
                    // equal values, and two nulls (masked −inf logits), agree
                    if (va[k] == vb[k] || (std::isnan(va[k]) && std::isnan(vb[k]))) continue;
                    m = std::isfinite(d) ? std::max(m, d) : NAN;
                }
                json & slot = maxima[key];
                if (!std::isfinite(m) || (slot["max_abs"].is_number() && m > slot["max_abs"].get<double>())) {
                    slot = {{"max_abs", std::isfinite(m) ? json(m) : json(nullptr)}, {"plan", i}};
                }
            }
        }
        out["neural"] = {{"plan_count", lp.size()},
                         {"duration_token_mismatches", dur_mismatch},
                         {"pose_token_mismatches", pose_mismatch},
                         {"pose_token_total", pose_total},
                         {"continuous_maxima", maxima},
                         {"acceptance_role", "diagnostic; public animation metrics define backend acceptance"}};
    }
    write_file_atomic(output, out.dump(1) + "\n");
    std::printf("%llu/%zu durations match; worst root %.3g m, rotation %.3g deg, joint %.3g m, target root %.3g m, "
                "target rotation %.3g deg, target joint %.3g m; %s\n",
                (unsigned long long) duration_matches, lp.size(), worst_max[0], worst_max[1], worst_max[2], worst_max[3],
                worst_max[4], worst_max[5], passed ? "passed" : "FAILED");
    return passed ? 0 : 1;
}

} // namespace

int cmd_compare_reports(int argc, char ** argv) {
    try {
        return run(argc, argv);
    } catch (const bad_input & e) {
        std::fprintf(stderr, "motionbricks compare-reports: %s\n", e.msg.c_str());
        return 2;
    } catch (const std::exception & e) {
        std::fprintf(stderr, "motionbricks compare-reports: %s\n", e.what());
        return 1;
    }
}

} // namespace mb::cli
