#include "backend/host-pin.h"

#if MB_HAVE_CUDA
#include <cuda_runtime.h>
#endif

#include <cstdlib>
#include <cstring>

namespace mb {

host_pin::host_pin(backend_device device, void * p, size_t bytes) {
#if MB_HAVE_CUDA
    if (device != backend_device::BACKEND_DEVICE_CUDA || !p || bytes == 0) return;
    // MB_HOST_PIN=0 leaves every array pageable (to measure what pinning saves)
    static const bool off = [] {
        const char * v = std::getenv("MB_HOST_PIN");
        return v && std::strcmp(v, "0") == 0;
    }();
    if (off) return;
    // portable: a model's states may run on any GPU's context; a refusal (no memory to lock, a
    // range already registered) leaves the array pageable
    if (cudaHostRegister(p, bytes, cudaHostRegisterPortable) == cudaSuccess) {
        p_ = p;
    } else {
        cudaGetLastError();
    }
#else
    (void) device, (void) p, (void) bytes;
#endif
}

host_pin::~host_pin() {
    reset();
}

host_pin & host_pin::operator=(host_pin && o) noexcept {
    if (this != &o) {
        reset();
        p_   = o.p_;
        o.p_ = nullptr;
    }
    return *this;
}

void host_pin::reset() {
#if MB_HAVE_CUDA
    if (p_ && cudaHostUnregister(p_) != cudaSuccess) cudaGetLastError();
#endif
    p_ = nullptr;
}

} // namespace mb
