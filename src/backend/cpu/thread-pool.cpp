#include "backend/cpu/thread-pool.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define MB_CPU_RELAX() _mm_pause()
#else
#define MB_CPU_RELAX() ((void) 0)
#endif

namespace mb::cpu {
namespace {

// spins before sleeping: about 20–50 µs, longer than the gap between two ops of a plan
constexpr int k_spin = 20000;

} // namespace

thread_pool::thread_pool(int n_threads) : n_threads_(n_threads < 1 ? 1 : n_threads) {
    for (int t = 1; t < n_threads_; ++t) workers_.emplace_back([this, t] { worker(t); });
}

thread_pool::~thread_pool() {
    stop_.store(true, std::memory_order_release);
    gen_.fetch_add(1, std::memory_order_acq_rel);
    gen_.notify_all();
    for (auto & w : workers_) w.join();
}

void thread_pool::worker(int t) {
    uint32_t seen = 0;
    for (;;) {
        // wait for a new generation
        uint32_t g = gen_.load(std::memory_order_acquire);
        for (int i = 0; g == seen && i < k_spin; ++i) {
            MB_CPU_RELAX();
            g = gen_.load(std::memory_order_acquire);
        }
        while (g == seen) {
            gen_.wait(seen, std::memory_order_acquire);
            g = gen_.load(std::memory_order_acquire);
        }
        seen = g;
        if (stop_.load(std::memory_order_acquire)) return;

        (*job_)(t);
        if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) pending_.notify_one();
    }
}

void thread_pool::run(const std::function<void(int)> & fn) {
    if (n_threads_ == 1) {
        fn(0);
        return;
    }
    job_ = &fn;
    pending_.store(n_threads_ - 1, std::memory_order_relaxed);
    gen_.fetch_add(1, std::memory_order_acq_rel);
    gen_.notify_all();

    fn(0);

    int p = pending_.load(std::memory_order_acquire);
    for (int i = 0; p != 0 && i < k_spin; ++i) {
        MB_CPU_RELAX();
        p = pending_.load(std::memory_order_acquire);
    }
    while (p != 0) {
        pending_.wait(p, std::memory_order_acquire);
        p = pending_.load(std::memory_order_acquire);
    }
}

} // namespace mb::cpu
