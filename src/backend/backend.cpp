// the parts of the backend interface that are not one backend's: the default of the
// optional alloc_from_host, and the registry of built-in backends
#include "backend/backend.h"

#if MB_HAVE_CUDA
#include "backend/cuda/cuda-backend.h"
#endif

namespace mb {

std::unique_ptr<backend_buffer> backend::alloc_from_host(const void * host, size_t bytes) {
    std::unique_ptr<backend_buffer> buf = alloc(bytes);
    set_bytes(buf->base(), host, bytes);
    return buf;
}

const std::vector<backend_reg> & backend_registry() {
    static const std::vector<backend_reg> regs = [] {
        std::vector<backend_reg> r = {{"cpu", &backend_cpu_create}};
#if MB_HAVE_CUDA
        // listed only where it can run (GPU 0), so test-backend-ops checks it on GPU machines
        if (cuda_device_problem(0).empty()) r.push_back({"cuda", [](int) { return backend_cuda_create(0); }});
#endif
        return r;
    }();
    return regs;
}

} // namespace mb
