// Programmatic dependent launch (PDL, Hopper) for the backend's own kernels: the one launch
// helper that the kernels of cuda-kernels.cu and cuda-gemv.cu go through (all but attention and
// the load-time bf16 weight copies) and the two device calls each kernel makes. Included by the
// .cu files only.
//
// Launched with cudaLaunchAttributeProgrammaticStreamSerialization, a kernel may start while
// the kernel before it on the stream still runs: its blocks are scheduled once every block of
// the one before has called pdl_trigger (or exited), and run up to their pdl_wait, which
// returns when the kernel before has finished and its writes are visible. So each kernel calls
// pdl_wait before its first read of an earlier kernel's output AND before its first global
// write (an earlier kernel may still read what it overwrites); only constants (weights) may be
// read before it. Every thread of every kernel launched here reaches pdl_wait (none returns earlier), so
// a kernel finishes only after the one before it: the order stays transitive however the
// kernels are launched. Kernels launched without the attribute (cuBLAS, attention, the bf16
// weight copies, and by default every kernel) wait for everything before them as usual.
//
// Which kernels are launched so (MB_CUDA_PDL, read on every launch; compute capability 9.0 or
// more, else none): unset or 0, none; 1, the GEMVs (launch_product: their first weight loads
// stream while the kernel before finishes); "all", every kernel launched here. Off by default:
// same-call measurements of a 10-token plan disagree between machines (H100 this morning 2.196
// against 2.339 ms without, H200 2.12 against 2.09 for "all", the final H100 calls 2.15 against
// 2.10 and 2.22-2.27 against 1.99-2.18 without; docs/BACKEND.md, eighth session). CUDA graphs
// record the programmatic edges.
#pragma once

#include "backend/cuda/cuda-kernels.h"

#include <cuda_runtime.h>

namespace mb::cuda {

__device__ __forceinline__ void pdl_trigger() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;");
#endif
}

__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// whether a kernel is launched as a programmatic dependent (product: a GEMV; cuda-kernels.cu)
bool pdl_on(bool product);

template <class... P, class... A>
void launch_as(bool product, const char * what, void (*kernel)(P...), dim3 grid, dim3 block, size_t smem,
               cudaStream_t s, A... args) {
    cudaError_t e = cudaSuccess;
    if (pdl_on(product)) {
        cudaLaunchAttribute attr[1];
        attr[0].id                                         = cudaLaunchAttributeProgrammaticStreamSerialization;
        attr[0].val.programmaticStreamSerializationAllowed = 1;
        const cudaLaunchConfig_t cfg{grid, block, smem, s, attr, 1};    // grid, block, shared bytes, stream, attributes
        e = cudaLaunchKernelEx(&cfg, kernel, static_cast<P>(args)...);
    } else {
        kernel<<<grid, block, smem, s>>>(static_cast<P>(args)...);
        e = cudaGetLastError();
    }
    if (e != cudaSuccess) fail(what, e);
}

// lets `kernel` take up to `bytes` of dynamic shared memory (above the default 48 KiB), or throws
// (fail) naming `what`. The setting is per device, so it is made before every launch; a kernel
// whose launches differ in size sets the largest any takes, so that a profiler replaying an
// earlier launch finds it still fits
template <class... P>
void allow_shared(const char * what, void (*kernel)(P...), size_t bytes) {
    const cudaError_t a = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int) bytes);
    if (a != cudaSuccess) fail(what, a);
}

// kernel<<<grid, block, smem, s>>>(args…), as a programmatic dependent where pdl_on(false)
// (MB_CUDA_PDL=all); a failed launch throws (fail) naming `what`
template <class... P, class... A>
void launch(const char * what, void (*kernel)(P...), dim3 grid, dim3 block, size_t smem, cudaStream_t s, A... args) {
    launch_as(false, what, kernel, grid, block, smem, s, args...);
}

// the same for the GEMVs, as programmatic dependents where MB_CUDA_PDL is 1 or all
template <class... P, class... A>
void launch_product(const char * what, void (*kernel)(P...), dim3 grid, dim3 block, size_t smem, cudaStream_t s,
                    A... args) {
    launch_as(true, what, kernel, grid, block, smem, s, args...);
}

} // namespace mb::cuda
