#include "backend/cpu/each-index.h"

#include "backend/cpu/fp-mode.h"
#include "backend/cpu/thread-pool.h"

#include <algorithm>
#include <exception>
#include <mutex>

namespace mb::cpu {

void each_index(thread_pool * pool, int64_t n, int64_t * failed, const std::function<void(int64_t)> & f) {
    if (!pool || pool->size() == 1) {
        for (int64_t i = 0; i < n; ++i) {
            *failed = i;
            f(i);
        }
        *failed = -1;
        return;
    }
    const uint64_t     mode     = fp_mode_control();
    const int          n_chunks = int(std::min<int64_t>(n, int64_t(pool->size()) * 4));
    std::mutex         m;
    int64_t            first = n;
    std::exception_ptr err;
    pool->run(n_chunks, [&](int c) {
        const uint64_t saved = fp_mode_get();
        if (saved != mode) fp_mode_set(mode);
        const int64_t i1 = n * (c + 1) / n_chunks;
        for (int64_t i = n * c / n_chunks; i < i1; ++i) {
            try {
                f(i);
            } catch (...) {
                std::lock_guard lock(m);
                if (i < first) {
                    first = i;
                    err   = std::current_exception();
                }
                break;
            }
        }
        if (fp_mode_get() != saved) fp_mode_set(saved);
    });
    if (err) {
        *failed = first;
        std::rethrow_exception(err);
    }
    *failed = -1;
}

} // namespace mb::cpu
