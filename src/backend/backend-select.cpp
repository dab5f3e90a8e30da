#include "backend/backend-select.h"

#if MB_HAVE_CUDA
#include "backend/cuda/cuda-backend.h"
#endif

namespace mb {

std::string backend_cuda_problem(int ordinal) {
#if MB_HAVE_CUDA
    return cuda_device_problem(ordinal);
#else
    (void) ordinal;
    return "this build has no CUDA backend (configured without a CUDA compiler or with MB_CUDA=OFF)";
#endif
}

std::unique_ptr<backend> backend_create(backend_device device, int n_threads, int ordinal,
                                        backend_precision precision) {
    if (device == backend_device::BACKEND_DEVICE_CPU) return backend_cpu_create(n_threads);
    const std::string problem = backend_cuda_problem(ordinal);
    if (!problem.empty()) {
        if (device == backend_device::BACKEND_DEVICE_AUTO) return backend_cpu_create(n_threads);
        throw backend_unavailable(problem);
    }
#if MB_HAVE_CUDA
    return backend_cuda_create(ordinal, precision);
#else
    (void) precision;
    throw backend_unavailable(problem);
#endif
}

} // namespace mb
