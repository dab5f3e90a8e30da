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

void device_ops::linear(const float * x, int64_t n, int64_t n_in, const float * w, const float * b, int64_t n_out,
                        float * y) {
    linear_f32(x, n, n_in, w, b, n_out, y, stream_);
}

void device_ops::conv1d(const float * x, int64_t c_in, int64_t t, const float * w, const float * b, int64_t c_out,
                        int64_t k, int64_t dilation, float * y, int64_t n_batch) {
    conv1d_skinny(x, c_in, t, w, b, c_out, k, dilation, y, n_batch, stream_);
}

} // namespace mb::cuda
