// the CUDA backend's stream, made on the current device and destroyed once its work is done
#pragma once

#include "backend/cuda/cuda-kernels.h"

#include <cuda_runtime.h>

#include <cstdint>

namespace mb::cuda {

class device_ops {
public:
    // creates a non-blocking stream on the current device; throws std::runtime_error
    device_ops();
    ~device_ops();
    device_ops(const device_ops &)             = delete;
    device_ops & operator=(const device_ops &) = delete;

    cudaStream_t stream() const { return stream_; }

private:
    cudaStream_t stream_ = nullptr;
};

} // namespace mb::cuda
