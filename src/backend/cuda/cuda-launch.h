// The one launch helper of the backend's own kernels (cuda-kernels.cu, cuda-gemv.cu,
// cuda-finish.cu) and the shared-memory limit they raise. Included by the .cu files only.
//
// (Programmatic dependent launch, which let a kernel start while the one before it finished, was
// measured in the eighth, sixteenth and nineteenth sessions, on the GEMVs and on every kernel, with
// the dependents released as a kernel started or after its own wait: never consistently faster
// at batch one, and deleted; docs/BACKEND.md.)
#pragma once

#include "backend/cuda/cuda-kernels.h"

#include <cuda_runtime.h>

namespace mb::cuda {

// lets `kernel` take up to `bytes` of dynamic shared memory (above the default 48 KiB), or throws
// (fail) naming `what`. The setting is per device, so it is made before every launch; a kernel
// whose launches differ in size sets the largest any takes, so that a profiler replaying an
// earlier launch finds it still fits
template <class... P>
void allow_shared(const char * what, void (*kernel)(P...), size_t bytes) {
    const cudaError_t a = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int) bytes);
    if (a != cudaSuccess) fail(what, a);
}

// kernel<<<grid, block, smem, s>>>(args…); a failed launch throws (fail) naming `what`
template <class... P, class... A>
void launch(const char * what, void (*kernel)(P...), dim3 grid, dim3 block, size_t smem, cudaStream_t s, A... args) {
    kernel<<<grid, block, smem, s>>>(static_cast<P>(args)...);
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) fail(what, e);
}

} // namespace mb::cuda
