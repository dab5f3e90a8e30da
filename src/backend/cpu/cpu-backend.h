// CPU backend construction options beyond backend_cpu_create(n_threads): which
// matrix kernel runs linear and conv1d (benchmarks and tests compare the two)
#pragma once

#include "backend/backend.h"

#include <memory>

namespace mb {

enum class cpu_gemm : uint32_t {
    CPU_GEMM_OWN      = 0,  // own kernel (AVX-512 or AVX2/FMA, the best the CPU has), weights streamed
                            // once, threads split output columns (default)
    CPU_GEMM_OPENBLAS = 1,  // OpenBLAS sgemm (its own threads)
    CPU_GEMM_OWN_AVX2 = 2,  // own kernel limited to AVX2/FMA (for comparison)
};

// false for CPU_GEMM_OPENBLAS in a build without OpenBLAS
bool cpu_gemm_available(cpu_gemm gemm);

// n_threads <= 0 selects the number of hardware threads; throws mb::error (not_implemented) for a
// kernel this build lacks
std::unique_ptr<backend> backend_cpu_create_with(int n_threads, cpu_gemm gemm);

// bytes of scratch a CPU backend object holds (sized by its reserve_* calls; 0 for another
// backend): tests check that a plan does not grow it
size_t cpu_backend_scratch_bytes(const backend & be);

} // namespace mb
