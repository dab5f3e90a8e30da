// the per-request host work of one batch call (request conversion, motion arrays, qpos) split
// over threads: at thousands of requests it outweighed the fused networks on a GPU
#pragma once

#include "backend/cpu/fp-mode.h"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace mb::capi {

// f(i) for every i < n, on up to 16 threads (the caller's among them) where n is large, each in
// the caller's floating-point mode (a request's results keep the bits they have alone). If some
// f(i) throw, the exception of the lowest such i is rethrown after all have run
template <class F> void for_each_request(size_t n, F && f) {
    constexpr size_t k_per_thread = 32, k_block = 8;
    const unsigned   hw = std::thread::hardware_concurrency();
    const size_t     nt = std::min<size_t>({size_t(hw ? hw : 1), 16, n / k_per_thread});
    if (nt <= 1) {
        for (size_t i = 0; i < n; ++i) f(i);
        return;
    }
    const uint64_t      mode = cpu::fp_mode_control();
    std::atomic<size_t> next{0};
    std::mutex          m;
    size_t              first = SIZE_MAX;
    std::exception_ptr  err;
    const auto work = [&](bool other_thread) {
        if (other_thread) cpu::fp_mode_set(mode);
        for (size_t c; (c = next.fetch_add(k_block)) < n;) {
            for (size_t i = c; i < std::min(n, c + k_block); ++i) {
                try {
                    f(i);
                } catch (...) {
                    std::lock_guard lock(m);
                    if (i < first) {
                        first = i;
                        err   = std::current_exception();
                    }
                }
            }
        }
    };
    std::vector<std::thread> threads;
    try {
        for (size_t t = 1; t < nt; ++t) threads.emplace_back(work, true);
    } catch (const std::system_error &) {
        // fewer threads: the caller takes what is left
    }
    work(false);
    for (std::thread & t : threads) t.join();
    if (err) std::rethrow_exception(err);
}

} // namespace mb::capi
