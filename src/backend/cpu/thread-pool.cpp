#include "backend/cpu/thread-pool.h"

#include "backend/cpu/fp-mode.h"

#include <system_error>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define MB_CPU_RELAX() _mm_pause()
#else
#define MB_CPU_RELAX() ((void) 0)
#endif

namespace mb::cpu {
namespace {

// spins before sleeping: tens of µs, longer than the gap between two ops of a plan
constexpr int k_spin = 20000;

} // namespace

thread_pool::thread_pool(int n_threads) : n_threads_(n_threads < 1 ? 1 : n_threads) {
    try {
        for (int t = 1; t < n_threads_; ++t) workers_.emplace_back([this] { worker(); });
    } catch (const std::system_error &) {
        // the OS refused a thread: run with those it gave (the caller's thread takes the rest)
        n_threads_ = int(workers_.size()) + 1;
    }
}

thread_pool::~thread_pool() {
    stop_.store(true, std::memory_order_release);
    gen_.fetch_add(1, std::memory_order_acq_rel);
    gen_.notify_all();
    for (auto & w : workers_) w.join();
}

void thread_pool::work_on(uint32_t gen) {
    // one word holds generation, chunk count and next chunk, so a claim is valid only for
    // the job it was meant for; job_ is read after the claim: the job cannot change while
    // one of its chunks is claimed and unfinished
    // The chunks this thread ran are counted in done_ once, when it finds none left (one shared
    // write per thread and job instead of one per chunk: at 16 threads every shared write is a
    // cache-line transfer on the op's critical path). The job stays current until done_ reaches
    // its count, so the generation cannot move on while this thread holds uncounted chunks.
    uint64_t v   = next_.load(std::memory_order_acquire);
    int      ran = 0, n = 0;
    for (;;) {
        const uint32_t g = (uint32_t) (v >> 32);
        const int      c = (int) (v & 0xFFFF);
        n                = (int) ((v >> 16) & 0xFFFF);
        if (g != gen || c >= n) break;
        if (!next_.compare_exchange_weak(v, v + 1, std::memory_order_acq_rel, std::memory_order_acquire)) continue;
        (*job_.load(std::memory_order_acquire))(c);
        ++ran;
        v = next_.load(std::memory_order_acquire);
    }
    if (ran > 0 && done_.fetch_add(ran, std::memory_order_acq_rel) + ran == n) done_.notify_one();
}

void thread_pool::worker() {
    // workers only ever compute backend ops: flush subnormals for the thread's lifetime
    fp_mode_set(fp_mode_get() | fp_mode_flush_bits());
    uint32_t seen = 0;
    for (;;) {
        // wait for a new generation: spin, then sleep
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
        work_on(g);
    }
}

void thread_pool::run(int n_chunks, const std::function<void(int)> & fn) {
    if (n_chunks <= 0) return;
    if (n_threads_ == 1 || n_chunks == 1 || n_chunks > 0xFFFF) {
        for (int c = 0; c < n_chunks; ++c) fn(c);
        return;
    }
    // publish the job, then the generation that makes it visible
    const uint32_t gen = gen_.load(std::memory_order_relaxed) + 1;
    job_.store(&fn, std::memory_order_release);
    done_.store(0, std::memory_order_relaxed);
    next_.store((uint64_t) gen << 32 | (uint64_t) n_chunks << 16, std::memory_order_release);
    gen_.store(gen, std::memory_order_release);
    gen_.notify_all();

    work_on(gen);

    // wait for chunks still running on workers
    int d = done_.load(std::memory_order_acquire);
    for (int i = 0; d != n_chunks && i < k_spin; ++i) {
        MB_CPU_RELAX();
        d = done_.load(std::memory_order_acquire);
    }
    while (d != n_chunks) {
        done_.wait(d, std::memory_order_acquire);
        d = done_.load(std::memory_order_acquire);
    }
}

} // namespace mb::cpu
