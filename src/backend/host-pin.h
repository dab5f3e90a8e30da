// page-locked host arrays for the bulk copies of fused batches: a GPU backend copies them by DMA
// (no staging through the driver's pageable buffers), several times faster where a chunk moves
// tens of megabytes per network. Without CUDA in the build (or when registration fails) they are
// plain page-aligned arrays, and every copy stays correct.
#pragma once

#include "backend/backend-select.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <vector>

namespace mb {

// page-aligned allocations rounded up to whole pages, so that no two registered arrays share a
// page (CUDA refuses a range that overlaps one already registered)
template <class T> struct page_allocator {
    using value_type = T;
    static constexpr size_t k_page = 4096;

    page_allocator() = default;
    template <class U> page_allocator(const page_allocator<U> &) {}    // NOLINT: rebinding

    T * allocate(size_t n) {
        const size_t bytes = (n * sizeof(T) + k_page - 1) / k_page * k_page;
        void *       p     = std::aligned_alloc(k_page, bytes ? bytes : k_page);
        if (!p) throw std::bad_alloc();
        return static_cast<T *>(p);
    }
    void deallocate(T * p, size_t) { std::free(p); }

    template <class U> bool operator==(const page_allocator<U> &) const { return true; }
};

template <class T> using page_vector = std::vector<T, page_allocator<T>>;

// registers [p, p + bytes) as page-locked memory of the GPU backend on `device` for its lifetime
// (nothing on the CPU, without CUDA in the build, or when the driver refuses: copies then stage
// as before). The memory must outlive the pin and keep its address
class host_pin {
public:
    host_pin() = default;
    host_pin(backend_device device, void * p, size_t bytes);
    ~host_pin();
    host_pin(host_pin && o) noexcept : p_(o.p_) { o.p_ = nullptr; }
    host_pin & operator=(host_pin && o) noexcept;
    host_pin(const host_pin &)             = delete;
    host_pin & operator=(const host_pin &) = delete;

    bool pinned() const { return p_ != nullptr; }

private:
    void reset();
    void * p_ = nullptr;    // registered address (null: nothing registered)
};

} // namespace mb
