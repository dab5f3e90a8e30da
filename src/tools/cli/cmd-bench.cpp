// `motionbricks bench`: times stateless plans (mb_model_infer / mb_model_infer_batch) on one
// synthetic request per lane, and measures the machine's floor in the same run: the CPU's
// streaming read bandwidth with the model's thread count, so that a plan's time reads as a
// ratio to reading its weights once; on CUDA, the device memory after the load and after the runs.
// Prints one JSON object.
#include "tools/cli/commands.h"
#include "tools/cli/int-list.h"
#include "tools/cli/load-model.h"
#include "tools/cli/read-bandwidth.h"

#include <motionbricks/motionbricks.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace mb::cli {
namespace {

namespace mbx = motionbricks;
using clock_type = std::chrono::steady_clock;

int usage() {
    std::fprintf(stderr,
                 "usage: motionbricks bench --model DIR %s [--tokens 6,10,16,0] [--batch 1,8] "
                 "[--iterations 21] [--warmup 3] [--steps 1] [--output FILE.json]\n"
                 "  --tokens: forced token counts (6..16), 0 = the predicted duration\n",
                 tools::k_model_options_usage);
    return 2;
}

double seconds_since(clock_type::time_point t0) {
    return std::chrono::duration<double>(clock_type::now() - t0).count();
}

// bytes of the learned components' files (pose, root, vq-decoder): what a plan streams when the
// bundle stores reduced (BF16 / Q8_0) weights; 0 when a file cannot be measured
double learned_file_bytes(const std::string & dir) {
    double total = 0.0;
    for (const char * f : {"pose.gguf", "root.gguf", "vq-decoder.gguf"}) {
        std::error_code ec;
        const auto      n = std::filesystem::file_size(std::filesystem::path(dir) / f, ec);
        if (ec) return 0.0;
        total += double(n);
    }
    return total;
}

// a request that walks ~2 m forward from the neutral pose: the same for every lane but the seed
void fill_request(const mbx::model & m, mbx::inference_request & r, int tokens, int steps, uint64_t seed) {
    const float          h = m.neutral_joint_position(0)[1];
    std::vector<float>   rot(size_t(4) * MB_G1_JOINT_COUNT * 4, 0.0f);
    for (size_t j = 0; j < rot.size(); j += 4) rot[j + 3] = 1.0f;    // identity, xyzw
    for (uint32_t b = 0; b < 2; ++b) {
        std::vector<float> roots(12);
        for (int f = 0; f < 4; ++f) {
            roots[size_t(f * 3 + 0)] = 0.0f;
            roots[size_t(f * 3 + 1)] = h;
            roots[size_t(f * 3 + 2)] = (b == 0 ? 0.0f : 2.0f) + 0.04f * float(f);
        }
        r.set_boundary_poses(m, b, roots, rot);
    }
    r.set_token_count(uint32_t(tokens));
    r.set_inference_steps(uint32_t(steps));
    r.set_sampling_argmax(true);
    r.set_seed(seed);
}

double percentile(std::vector<double> v, double p) {
    std::sort(v.begin(), v.end());
    const size_t i = std::min(v.size() - 1, size_t(p * double(v.size() - 1) + 0.5));
    return v[i];
}

} // namespace

int cmd_bench(int argc, char ** argv) {
    if (argc > 1 && std::string(argv[1]) == "sonic") return cmd_bench_sonic(argc - 1, argv + 1);
    if (argc > 1 && std::string(argv[1]) == "physics") return cmd_bench_physics(argc - 1, argv + 1);
    std::string          model_dir, output_path;
    tools::model_options mopt;
    std::vector<int>     tokens{10}, batches{1};
    int                  iterations = 21, warmup = 3, steps = 1;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (i + 1 >= argc) {
            std::fprintf(stderr, "motionbricks bench: '%s' needs a value\n", a.c_str());
            return usage();
        }
        const std::string v = argv[++i];
        std::vector<int>  one;
        if (const int r = tools::parse_model_option("bench", a, v, mopt); r != 0) {
            if (r < 0) return 2;
        } else if (a == "--model") {
            model_dir = v;
        } else if (a == "--output") {
            output_path = v;
        } else if (a == "--tokens") {
            if (!parse_int_list(v, 0, 16, tokens) ||
                std::any_of(tokens.begin(), tokens.end(), [](int t) { return t != 0 && t < 6; })) {
                std::fprintf(stderr, "motionbricks bench: --tokens must list 0 or 6..16, comma-separated\n");
                return 2;
            }
        } else if (a == "--batch") {
            if (!parse_int_list(v, 1, 4096, batches)) {
                std::fprintf(stderr, "motionbricks bench: --batch must list 1..4096, comma-separated\n");
                return 2;
            }
        } else if (a == "--iterations" || a == "--warmup" || a == "--steps") {
            const int lo = a == "--warmup" ? 0 : 1, hi = a == "--steps" ? 16 : 10000;
            if (!parse_int_list(v, lo, hi, one) || one.size() != 1) {
                std::fprintf(stderr, "motionbricks bench: %s must be an integer %d..%d\n", a.c_str(), lo, hi);
                return 2;
            }
            (a == "--iterations" ? iterations : a == "--warmup" ? warmup : steps) = one[0];
        } else {
            std::fprintf(stderr, "motionbricks bench: unknown option '%s'\n", a.c_str());
            return usage();
        }
    }
    if (model_dir.empty()) return usage();

    const auto                         t_load    = clock_type::now();
    int                                load_exit = 0;
    std::optional<mbx::model>          model     = load_model("bench", model_dir, mopt, load_exit);
    if (!model) return load_exit;
    const double load_s = seconds_since(t_load);

    const mb_device    device    = model->device();
    const mb_precision precision = model->precision();
    const int threads = mopt.threads > 0 ? mopt.threads : int(std::max(1u, std::thread::hardware_concurrency()));
    const uint64_t params       = model->parameter_count();
    // F32 weights: 4 bytes a parameter (BF16 precision on CUDA: 2); a bundle made with --dtype
    // bf16 / q8_0 is smaller on disk than that, and the CPU streams its files' weights as stored
    const double   file_bytes   = learned_file_bytes(model_dir);
    double         weight_bytes = double(params) * (precision == MB_PRECISION_BF16 ? 2.0 : 4.0);
    if (device == MB_DEVICE_CPU && file_bytes > 0.0) weight_bytes = std::min(weight_bytes, file_bytes);

    nlohmann::ordered_json out;
    out["bench"] = "motionbricks-bench-v1";
    out["model"] = {{"directory", model_dir},       {"parameters", params},
                    {"device", tools::device_name(device)}, {"precision", tools::precision_name(precision)},
                    {"threads", device == MB_DEVICE_CPU ? threads : 1}, {"load_seconds", load_s},
                    {"weight_bytes_per_plan", weight_bytes}};
    out["machine"] = {{"hardware_threads", std::thread::hardware_concurrency()}};
    if (device == MB_DEVICE_CPU) {
        const double gbs        = read_bandwidth_gbs(threads);
        out["floor"] = {{"what", "streaming read of the weights once, same thread count, same run"},
                        {"read_gb_per_s", gbs},
                        {"ms_per_plan", weight_bytes / (gbs * 1e9) * 1e3}};
    }

    nlohmann::ordered_json runs = nlohmann::ordered_json::array();
    try {
        if (device == MB_DEVICE_CUDA) {
            const mbx::model::device_memory_use m = model->device_memory();
            out["device_memory"] = {{"what", "model: its weights and pooled working memory (not cuBLAS's or the CUDA "
                                             "context's); device: total - free, every process"},
                                    {"model_bytes_after_load", m.model_bytes},
                                    {"device_used_bytes_after_load", m.device_used_bytes},
                                    {"device_total_bytes", m.device_total_bytes}};
        }
        for (int b : batches) {
            std::vector<std::unique_ptr<mbx::inference_request>> reqs;
            std::vector<const mbx::inference_request *>          ptrs;
            for (int t : tokens) {
                reqs.clear();
                ptrs.clear();
                for (int l = 0; l < b; ++l) {
                    reqs.push_back(std::make_unique<mbx::inference_request>());
                    fill_request(*model, *reqs.back(), t, steps, uint64_t(l));
                    ptrs.push_back(reqs.back().get());
                }
                std::vector<double> ms;
                double              stage[5] = {0, 0, 0, 0, 0};
                uint64_t            frames   = 0;
                for (int it = 0; it < warmup + iterations; ++it) {
                    const auto                t0     = clock_type::now();
                    std::vector<mbx::motion>  result = b == 1 ? std::vector<mbx::motion>{}
                                                              : mbx::infer_batch(*model, ptrs);
                    if (b == 1) result.push_back(mbx::infer(*model, *ptrs[0]));
                    const double elapsed = seconds_since(t0) * 1e3;
                    if (it < warmup) continue;
                    ms.push_back(elapsed);
                    frames = 0;
                    for (const mbx::motion & mo : result) frames += mo.frame_count();
                    for (uint32_t s = 0; s < 5; ++s) stage[s] += result[0].stage_time_ms(s) / double(iterations);
                }
                const double med = percentile(ms, 0.5);
                nlohmann::ordered_json r = {
                    {"batch", b},
                    {"tokens", t == 0 ? nlohmann::ordered_json("predicted") : nlohmann::ordered_json(t)},
                    {"iterations", iterations},
                    {"ms_per_call_median", med},
                    {"ms_per_call_p95", percentile(ms, 0.95)},
                    {"ms_per_plan_median", med / b},
                    {"plans_per_s", 1e3 * b / med},
                    {"frames_per_call", frames},
                    {"frames_per_s", 1e3 * double(frames) / med},
                    {"stage_ms_lane0", {{"prepare", stage[0]}, {"root", stage[1]}, {"pose", stage[2]},
                                        {"decoder", stage[3]}, {"finish", stage[4]}}}};
                if (out.contains("floor")) r["ratio_to_floor"] = (med / b) / out["floor"]["ms_per_plan"].get<double>();
                runs.push_back(r);
            }
        }
        if (device == MB_DEVICE_CUDA) {
            // the runs' working memory stays pooled in the model (pools only grow): their peak
            const mbx::model::device_memory_use m = model->device_memory();
            out["device_memory"]["model_bytes_after_runs"]       = m.model_bytes;
            out["device_memory"]["device_used_bytes_after_runs"] = m.device_used_bytes;
        }
    } catch (const mbx::error & e) {
        std::fprintf(stderr, "motionbricks bench: %s\n", e.what());
        return 1;
    }
    out["runs"] = runs;

    const std::string text = out.dump(2) + "\n";
    if (!output_path.empty()) {
        std::ofstream f(output_path, std::ios::binary);
        f << text;
        if (!f) {
            std::fprintf(stderr, "motionbricks bench: cannot write '%s'\n", output_path.c_str());
            return 1;
        }
    }
    std::fputs(text.c_str(), stdout);
    return 0;
}

} // namespace mb::cli
