// CUDA backend construction (built only where CMake found a CUDA compiler)
#pragma once

#include "backend/backend-select.h"

#include <memory>
#include <string>

namespace mb {

// "" when GPU `ordinal` can run the CUDA backend here, else why not (no driver, no GPU,
// ordinal out of range, compute capability below 7.5)
std::string cuda_device_problem(int ordinal);

// the CUDA backend on GPU `ordinal`; throws std::runtime_error naming the cause when the
// device is unusable (see cuda_device_problem) or CUDA / cuBLAS cannot be initialised
std::unique_ptr<backend> backend_cuda_create(int ordinal,
                                             backend_precision precision = backend_precision::BACKEND_PRECISION_F32);

} // namespace mb
