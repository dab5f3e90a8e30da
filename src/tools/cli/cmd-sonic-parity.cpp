// `motionbricks sonic-parity MODEL.gguf FIXTURE.mbsonic`: every sample of a `.mbsonic` fixture
// through the C ABI (encode, decode, and decode of the encoder's own tokens), each layer and the
// actions against the recorded values with the reference runtime's gate (max |Δ| ≤ 5e-4 and
// relative L2 ≤ 1e-5 per tensor; tokens exact). Exits 1 when a sample fails
#include "tools/cli/commands.h"
#include "tools/model-options.h"

#include <motionbricks/sonic.h>

#include "format/mbsonic.h"

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace mb::cli {
namespace {

int usage() {
    std::fprintf(stderr, "usage: motionbricks sonic-parity MODEL.gguf FIXTURE.mbsonic [--device cpu|cuda|auto] "
                         "[--threads N] [--report-all]\n");
    return 2;
}

struct err {
    double max_abs = 0.0, rel_l2 = 0.0;
};

err compare(const float * got, const float * want, size_t n) {
    double d2 = 0.0, w2 = 0.0, mx = 0.0;
    for (size_t i = 0; i < n; ++i) {
        const double d = double(got[i]) - double(want[i]);
        mx             = std::max(mx, std::fabs(d));
        d2 += d * d;
        w2 += double(want[i]) * double(want[i]);
    }
    return {mx, w2 > 0.0 ? std::sqrt(d2 / w2) : std::sqrt(d2)};
}

constexpr double k_gate_abs = 5e-4, k_gate_rel = 1e-5;

} // namespace

int cmd_sonic_parity(int argc, char ** argv) {
    std::vector<std::string> pos;
    tools::model_options     mopt;
    bool                     report_all = false;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--report-all") {
            report_all = true;
        } else if (a.rfind("--", 0) == 0) {
            if (i + 1 >= argc) return usage();
            const int r = tools::parse_model_option("sonic-parity", a, argv[++i], mopt);
            if (r < 0) return 2;
            if (r == 0) {
                std::fprintf(stderr, "motionbricks sonic-parity: unknown option '%s'\n", a.c_str());
                return usage();
            }
        } else {
            pos.push_back(a);
        }
    }
    if (pos.size() != 2) return usage();

    mb::mbsonic_file fixture;
    try {
        fixture = mb::mbsonic_file::read(pos[1]);
    } catch (const std::exception & e) {
        std::fprintf(stderr, "motionbricks sonic-parity: %s\n", e.what());
        return 2;
    }
    char       e[512];
    mb_sonic * s = nullptr;
    const motionbricks::runtime_options opts = tools::to_runtime_options(mopt);
    if (mb_sonic_load(pos[0].c_str(), opts.get(), &s, e, sizeof e) != MB_OK) {
        std::fprintf(stderr, "motionbricks sonic-parity: cannot load '%s': %s\n", pos[0].c_str(), e);
        return 1;
    }
    int    failed = 0, token_mismatch = 0;
    double worst_abs = 0.0, worst_rel = 0.0;
    for (size_t i = 0; i < fixture.size(); ++i) {
        const mb::mbsonic_sample x = fixture.sample(i);
        float                    tokens[64], actions[29], composed[29], dec[994];
        if (mb_sonic_encode(s, x.encoder_obs, 1762, tokens, 64, e, sizeof e) != MB_OK ||
            mb_sonic_decode(s, x.decoder_obs, 994, actions, 29, e, sizeof e) != MB_OK) {
            std::fprintf(stderr, "sample %zu: %s\n", i, e);
            ++failed;
            continue;
        }
        std::vector<err> errs;
        std::vector<float> layer(2048);
        uint64_t           n = 0;
        for (uint32_t k = 0; k < 5; ++k) {
            mb_sonic_layer(s, 1, k, layer.data(), layer.size(), &n, e, sizeof e);
            errs.push_back(compare(layer.data(), x.encoder_layers[k], size_t(n)));
        }
        for (uint32_t k = 0; k < 7; ++k) {
            mb_sonic_layer(s, 0, k, layer.data(), layer.size(), &n, e, sizeof e);
            errs.push_back(compare(layer.data(), x.decoder_layers[k], size_t(n)));
        }
        std::copy(x.decoder_obs, x.decoder_obs + 994, dec);
        std::copy(tokens, tokens + 64, dec);
        if (mb_sonic_decode(s, dec, 994, composed, 29, e, sizeof e) != MB_OK) {
            std::fprintf(stderr, "sample %zu: %s\n", i, e);
            ++failed;
            continue;
        }
        errs.push_back(compare(actions, x.actions, 29));
        errs.push_back(compare(composed, x.composed, 29));
        int tm = 0;
        for (int t = 0; t < 64; ++t) tm += tokens[t] != x.tokens[t];
        token_mismatch += tm;
        double mx = 0.0, rl = 0.0;
        for (const err & r : errs) {
            mx = std::max(mx, r.max_abs);
            rl = std::max(rl, r.rel_l2);
        }
        worst_abs = std::max(worst_abs, mx);
        worst_rel = std::max(worst_rel, rl);
        const bool ok = mx <= k_gate_abs && rl <= k_gate_rel && tm == 0;
        failed += !ok;
        if (report_all || !ok) {
            std::printf("sample %zu: mode %.0f max |d| %.3g rel L2 %.3g token mismatches %d %s\n", i, x.encoder_obs[0], mx, rl,
                        tm, ok ? "ok" : "FAIL");
        }
    }
    mb_sonic_free(s);
    std::printf("sonic-parity: %zu samples, %d failed; max |d| %.3g, max rel L2 %.3g, token mismatches %d "
                "(gate 5e-4 / 1e-5, tokens exact)\n",
                fixture.size(), failed, worst_abs, worst_rel, token_mismatch);
    return failed ? 1 : 0;
}

} // namespace mb::cli
