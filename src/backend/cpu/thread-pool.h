// a fixed set of worker threads for the CPU backend: run(fn) calls fn(t) for every
// t in [0, size()) at once (t = 0 on the calling thread) and returns when all are done.
// Workers spin briefly between jobs (ops come in quick succession during a plan),
// then sleep on a futex so an idle model costs nothing.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <thread>
#include <vector>

namespace mb::cpu {

class thread_pool {
public:
    explicit thread_pool(int n_threads);    // n_threads ≥ 1; n_threads − 1 workers are started
    ~thread_pool();
    thread_pool(const thread_pool &)             = delete;
    thread_pool & operator=(const thread_pool &) = delete;

    int size() const { return n_threads_; }

    // not reentrant: one run at a time, from one thread
    void run(const std::function<void(int)> & fn);

private:
    void worker(int t);

    int                                n_threads_;
    std::vector<std::thread>           workers_;
    const std::function<void(int)> *   job_ = nullptr;
    std::atomic<uint32_t>              gen_{0};         // bumped once per job
    std::atomic<int>                   pending_{0};     // workers still running the job
    std::atomic<bool>                  stop_{false};
};

} // namespace mb::cpu
