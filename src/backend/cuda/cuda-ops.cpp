#include "backend/cuda/cuda-ops.h"

#include <stdexcept>
#include <string>

namespace mb::cuda {

device_ops::device_ops() {
    const cudaError_t e = cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking);
    if (e != cudaSuccess) fail("cudaStreamCreate", e);
}

device_ops::~device_ops() {
    cudaStreamSynchronize(stream_);
    cudaStreamDestroy(stream_);
}

} // namespace mb::cuda
