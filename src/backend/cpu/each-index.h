// f(i) for every i < n over a thread pool: the one rule for per-lane and per-request host work
// (normalisation, conditions, FK of fused lanes; request conversion and result arrays of a batch)
#pragma once

#include <cstdint>
#include <functional>

namespace mb::cpu {

class thread_pool;

// Runs f(i) for i in [0, n) in contiguous chunks on the pool (serially without one), each chunk
// in the caller's floating-point mode: the pool's workers flush subnormals, and an item must get
// the bits it gets alone. A chunk stops at its first throw; once all chunks are done the
// exception of the lowest throwing i is rethrown with that i in *failed (-1 when none threw)
void each_index(thread_pool * pool, int64_t n, int64_t * failed, const std::function<void(int64_t)> & f);

} // namespace mb::cpu
