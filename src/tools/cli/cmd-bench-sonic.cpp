// `motionbricks bench sonic`: the SONIC encoder + decoder pair (mode 0) through the C ABI at
// batch sizes 1..64, with the floor measured in the same run: streaming the pair's 57.66 MB of
// F32 weights once at the machine's read bandwidth with the same thread count, and the load
// average before and after. One JSON object
#include "tools/cli/commands.h"
#include "tools/cli/int-list.h"
#include "tools/cli/sonic-floor.h"
#include "tools/model-options.h"

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
    std::fprintf(stderr, "usage: motionbricks bench sonic --model SONIC.gguf %s [--batch 1,64] [--iterations 101]\n",
                 tools::k_model_options_usage);
    return 2;
}

} // namespace

int cmd_bench_sonic(int argc, char ** argv) {
    std::string          model;
    tools::model_options mopt;
    std::vector<int>     batches{1, 64};
    int                  iterations = 101;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (i + 1 >= argc) return usage();
        const std::string v = argv[++i];
        if (const int r = tools::parse_model_option("bench sonic", a, v, mopt); r != 0) {
            if (r < 0) return 2;
        } else if (a == "--model") {
            model = v;
        } else if (a == "--batch") {
            if (!parse_int_list(v, 1, 64, batches)) {
                std::fprintf(stderr, "motionbricks bench sonic: --batch must list 1..64\n");
                return 2;
            }
        } else if (a == "--iterations") {
            std::vector<int> one;
            if (!parse_int_list(v, 1, 100000, one) || one.size() != 1) {
                std::fprintf(stderr, "motionbricks bench sonic: --iterations must be 1..100000\n");
                return 2;
            }
            iterations = one[0];
        } else {
            std::fprintf(stderr, "motionbricks bench sonic: unknown option '%s'\n", a.c_str());
            return usage();
        }
    }
    if (model.empty()) return usage();
    char                                e[512];
    mb_sonic *                          s    = nullptr;
    const motionbricks::runtime_options opts = tools::to_runtime_options(mopt);
    if (mb_sonic_load(model.c_str(), opts.get(), &s, e, sizeof e) != MB_OK) {
        std::fprintf(stderr, "motionbricks bench sonic: cannot load '%s': %s\n", model.c_str(), e);
        return 1;
    }
    const int threads = mopt.threads > 0 ? mopt.threads : int(std::max(1u, std::thread::hardware_concurrency()));

    nlohmann::ordered_json out;
    out["bench"]         = "motionbricks-bench-sonic-v1";
    out["model"]         = {{"file", model}, {"threads", threads}};
    out["loadavg_start"] = load_average();
    out["floor"]         = sonic_floor(threads);
    const double floor   = out["floor"]["ms_per_pair"].get<double>();
    nlohmann::ordered_json runs = nlohmann::ordered_json::array();
    for (int b : batches) {
        std::vector<float> enc(size_t(b) * 1762, 0.01f), dec(size_t(b) * 994, 0.01f), tok(size_t(b) * 64), act(size_t(b) * 29);
        for (int r = 0; r < b; ++r) enc[size_t(r) * 1762] = 0.0f;    // mode 0
        std::vector<double> ms;
        for (int it = 0; it < iterations + 5; ++it) {
            const auto t0 = std::chrono::steady_clock::now();
            if (mb_sonic_encode_batch(s, enc.data(), enc.size(), uint32_t(b), tok.data(), tok.size(), e, sizeof e) != MB_OK ||
                mb_sonic_decode_batch(s, dec.data(), dec.size(), uint32_t(b), act.data(), act.size(), e, sizeof e) != MB_OK) {
                std::fprintf(stderr, "motionbricks bench sonic: %s\n", e);
                mb_sonic_free(s);
                return 1;
            }
            if (it >= 5) ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
        }
        std::sort(ms.begin(), ms.end());
        const double med = ms[ms.size() / 2], p95 = ms[std::min(ms.size() - 1, size_t(0.95 * double(ms.size())))];
        runs.push_back({{"batch", b}, {"ms_per_call_median", med}, {"ms_per_call_p95", p95}, {"ms_per_robot", med / b},
                        {"ratio_to_floor", med / floor}});
    }
    mb_sonic_free(s);
    out["runs"]        = runs;
    out["loadavg_end"] = load_average();
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
}

} // namespace mb::cli
