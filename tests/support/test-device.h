// the device a test runs its networks on: the CPU, or CUDA when MB_TEST_DEVICE=cuda (the
// `cuda`-labelled CTest entries set it through tests/backend/cuda-run, which skips them
// when no GPU is usable), so the same parity suites check both backends
#pragma once

#include "backend/backend-select.h"

#include <cstdlib>
#include <cstring>
#include <memory>

namespace mb::test {

inline backend_device test_device() {
    const char * e = std::getenv("MB_TEST_DEVICE");
    return e && std::strcmp(e, "cuda") == 0 ? backend_device::BACKEND_DEVICE_CUDA : backend_device::BACKEND_DEVICE_CPU;
}

inline std::unique_ptr<backend> test_backend(int n_threads) {
    return backend_create(test_device(), n_threads, 0);
}

} // namespace mb::test
