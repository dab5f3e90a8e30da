// which backend runs a model: the CPU, CUDA, or the best one this machine has
#pragma once

#include "backend/backend.h"
#include "format/error.h"

#include <cstdint>
#include <memory>
#include <string>

namespace mb {

enum class backend_device : uint32_t {
    BACKEND_DEVICE_CPU  = 0,
    BACKEND_DEVICE_CUDA = 1,
    BACKEND_DEVICE_AUTO = 2,    // CUDA when a usable GPU exists, else the CPU
};

// the arithmetic of the matrix products (the C ABI's MB_PRECISION_*): only F32 is exact; the
// CPU backend computes in F32 whatever is asked
enum class backend_precision : uint32_t {
    BACKEND_PRECISION_F32  = 0,
    BACKEND_PRECISION_TF32 = 1,    // CUDA: products of many rows on TF32 tensor cores
    BACKEND_PRECISION_BF16 = 2,    // CUDA: matrix weights read as bfloat16, float32 sums
};

// the requested device cannot run here (no CUDA in this build, no usable GPU): status
// backend_unavailable, what() "MB_DEVICE_CUDA: " and why
struct backend_unavailable : error {
    explicit backend_unavailable(const std::string & why) : error(status::backend_unavailable, "MB_DEVICE_CUDA: " + why) {}
};

// "" when the CUDA backend can run on GPU `ordinal`, else why not (also "this build has no
// CUDA backend")
std::string backend_cuda_problem(int ordinal);

// n_threads <= 0: hardware threads (CPU only); ordinal and precision: the GPU and its
// arithmetic (CUDA only). throws backend_unavailable for CUDA that cannot run, mb::error or
// std::bad_alloc for other failures
std::unique_ptr<backend> backend_create(backend_device device, int n_threads, int ordinal,
                                        backend_precision precision = backend_precision::BACKEND_PRECISION_F32);

} // namespace mb
