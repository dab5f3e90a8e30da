// what the SONIC benches measure beside their timings, in the same run: the weight-streaming floor of
// one encoder + decoder pair (its 57.66 MB of F32 weights read once at the machine's bandwidth, with
// the bench's thread count) and the machine's load average
#pragma once

#include "tools/cli/read-bandwidth.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdio>

namespace mb::cli {

// parameters of the G1 encoder and the decoder at release widths: what one pair streams
constexpr int64_t sonic_pair_parameters() {
    const int64_t enc[] = {640, 2048, 1024, 512, 512, 64}, dec[] = {994, 2048, 2048, 1024, 1024, 512, 512, 29};
    int64_t       n     = 0;
    for (int k = 0; k < 5; ++k) n += enc[k] * enc[k + 1] + enc[k + 1];
    for (int k = 0; k < 7; ++k) n += dec[k] * dec[k + 1] + dec[k + 1];
    return n;
}
static_assert(sonic_pair_parameters() == 14415453, "the release's G1 encoder + decoder");

// {what, threads, weight_bytes_per_pair, read_gb_per_s, ms_per_pair}
inline nlohmann::ordered_json sonic_floor(int threads) {
    const double bytes = double(sonic_pair_parameters()) * 4.0;
    const double gbs   = read_bandwidth_gbs(threads);
    return {{"what", "streaming read of the pair's weights once, same thread count, same run"},
            {"threads", threads},
            {"weight_bytes_per_pair", bytes},
            {"read_gb_per_s", gbs},
            {"ms_per_pair", bytes / (gbs * 1e9) * 1e3}};
}

// /proc/loadavg's 1, 5 and 15 minute averages (null where unreadable)
inline nlohmann::ordered_json load_average() {
    double       a[3] = {0, 0, 0};
    std::FILE *  f    = std::fopen("/proc/loadavg", "r");
    const bool   ok   = f && std::fscanf(f, "%lf %lf %lf", &a[0], &a[1], &a[2]) == 3;
    if (f) std::fclose(f);
    if (!ok) return nullptr;
    return nlohmann::ordered_json::array({a[0], a[1], a[2]});
}

} // namespace mb::cli
