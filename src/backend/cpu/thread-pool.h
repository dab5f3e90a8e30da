// a fixed set of worker threads for the CPU backend. run(n_chunks, fn) calls fn(c)
// once for every chunk c in [0, n_chunks); the caller and the workers claim chunks
// from a shared counter, so a worker the OS has not scheduled yet never delays the
// op (the caller simply takes its chunks). Workers spin briefly between jobs (ops
// come in quick succession during a plan), then sleep on a futex. Workers run with
// FTZ/DAZ set (fp-mode.h).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <thread>
#include <vector>

namespace mb::cpu {

class thread_pool {
public:
    explicit thread_pool(int n_threads);    // n_threads − 1 workers (fewer if the OS refuses some: see size())
    ~thread_pool();
    thread_pool(const thread_pool &)             = delete;
    thread_pool & operator=(const thread_pool &) = delete;

    int size() const { return n_threads_; }

    // returns when every chunk is done (more than 65535 chunks run on the caller alone);
    // not reentrant: one run at a time, from one thread
    void run(int n_chunks, const std::function<void(int)> & fn);

private:
    void worker();
    // claims and runs chunks of job `gen` until none is left or another job is current
    void work_on(uint32_t gen);

    int                              n_threads_;
    std::vector<std::thread>         workers_;
    std::atomic<const std::function<void(int)> *> job_{nullptr};
    std::atomic<uint32_t>            gen_{0};       // bumped once per job (workers wait on it)
    std::atomic<uint64_t>            next_{0};      // generation << 32 | chunk count << 16 | next chunk
    std::atomic<int>                 done_{0};      // chunks finished in the current job
    std::atomic<bool>                stop_{false};
};

} // namespace mb::cpu
