// the per-request host work of one batch call (request conversion, motion arrays, qpos) split
// over threads: at thousands of requests it outweighed the fused networks on a GPU
#pragma once

#include "backend/cpu/each-index.h"
#include "backend/cpu/thread-pool.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <thread>

namespace mb::capi {

// f(i) for every i < n, on up to 16 threads (the caller's among them) where n is large, by
// cpu::each_index's rule: the caller's floating-point mode (a request's results keep the bits
// they have alone), and the exception of the lowest throwing i rethrown once all chunks are done
template <class F> void for_each_request(size_t n, F && f) {
    constexpr size_t k_per_thread = 32;
    const unsigned   hw = std::thread::hardware_concurrency();
    const size_t     nt = std::min<size_t>({size_t(hw ? hw : 1), 16, n / k_per_thread});
    std::optional<cpu::thread_pool> pool;
    if (nt > 1) pool.emplace(int(nt));
    int64_t failed = -1;
    cpu::each_index(pool ? &*pool : nullptr, int64_t(n), &failed, [&](int64_t i) { f(size_t(i)); });
}

} // namespace mb::capi
