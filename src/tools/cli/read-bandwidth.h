// the machine's floor for weight-streaming work: best-of-5 streaming read bandwidth of a
// buffer larger than any cache, with a given thread count (the bench verbs measure it in the
// same run as what they time)
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

namespace mb::cli {

// best of 5 passes of `threads` threads summing their share of a 512 MiB buffer (larger than
// any cache): GB/s that a weight-streaming plan can at most reach
inline double read_bandwidth_gbs(int threads) {
    using clock_type = std::chrono::steady_clock;
    const size_t               words = (size_t(512) << 20) / sizeof(uint64_t);
    std::unique_ptr<uint64_t[]> buf(new uint64_t[words]);
    for (size_t i = 0; i < words; ++i) buf[i] = i;    // touch every page before timing
    std::vector<uint64_t> sink(size_t(threads) * 8, 0);
    double                best = 0.0;
    for (int pass = 0; pass < 5; ++pass) {
        std::vector<std::thread> pool;
        const auto               t0 = clock_type::now();
        for (int t = 0; t < threads; ++t) {
            pool.emplace_back([&, t] {
                const size_t lo = words * size_t(t) / size_t(threads), hi = words * size_t(t + 1) / size_t(threads);
                uint64_t     a = 0, b = 0, c = 0, d = 0;
                for (size_t i = lo; i + 4 <= hi; i += 4) {
                    a += buf[i];
                    b ^= buf[i + 1];
                    c += buf[i + 2];
                    d ^= buf[i + 3];
                }
                sink[size_t(t) * 8] = a + b + c + d;
            });
        }
        for (std::thread & th : pool) th.join();
        const double s = std::chrono::duration<double>(clock_type::now() - t0).count();
        best           = std::max(best, double(words * sizeof(uint64_t)) / s / 1e9);
    }
    return best;
}


} // namespace mb::cli
