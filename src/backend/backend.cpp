// the parts of the backend interface that are not one backend's: the default of the
// optional alloc_from_host, and the registry of built-in backends
#include "backend/backend.h"

namespace mb {

std::unique_ptr<backend_buffer> backend::alloc_from_host(const void * host, size_t bytes) {
    std::unique_ptr<backend_buffer> buf = alloc(bytes);
    set_bytes(buf->base(), host, bytes);
    return buf;
}

const std::vector<backend_reg> & backend_registry() {
    static const std::vector<backend_reg> regs = {
        {"cpu", &backend_cpu_create},
    };
    return regs;
}

} // namespace mb
