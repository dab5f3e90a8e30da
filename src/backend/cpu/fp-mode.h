// flush-to-zero / denormals-are-zero for the CPU backend's compute threads: subnormal
// weights or activations otherwise take a microcode assist per operation (tens to
// hundreds of times slower). MXCSR FTZ (bit 15) + DAZ (bit 6) on x86-64, FPCR FZ
// (bit 24, flushes inputs and results) on ARM64; a no-op elsewhere.
#pragma once

#include <cstdint>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace mb::cpu {

// the current thread's floating-point control word (MXCSR / FPCR; 0 where unsupported)
inline uint64_t fp_mode_get() {
#if defined(__x86_64__) || defined(__i386__)
    return _mm_getcsr();
#elif defined(__aarch64__)
    uint64_t fpcr;
    __asm__ __volatile__("mrs %0, fpcr" : "=r"(fpcr));
    return fpcr;
#else
    return 0;
#endif
}

inline void fp_mode_set(uint64_t mode) {
#if defined(__x86_64__) || defined(__i386__)
    _mm_setcsr((unsigned) mode);
#elif defined(__aarch64__)
    __asm__ __volatile__("msr fpcr, %0" : : "r"(mode));
#else
    (void) mode;
#endif
}

// the control bits of fp_mode_get() (x86: without MXCSR's sticky exception flags, bits 0..5)
inline uint64_t fp_mode_control() {
#if defined(__x86_64__) || defined(__i386__)
    return fp_mode_get() & ~uint64_t(0x3F);
#else
    return fp_mode_get();
#endif
}

// the bits that flush subnormals (0 where unsupported)
inline uint64_t fp_mode_flush_bits() {
#if defined(__x86_64__) || defined(__i386__)
    return 0x8040;      // FTZ | DAZ
#elif defined(__aarch64__)
    return uint64_t(1) << 24;   // FZ
#else
    return 0;
#endif
}

// true when the current thread flushes subnormals
inline bool fp_mode_flushes() {
    const uint64_t bits = fp_mode_flush_bits();
    return bits != 0 && (fp_mode_get() & bits) == bits;
}

// sets FTZ/DAZ for its scope and restores the caller's mode after
class fp_flush_scope {
public:
    fp_flush_scope() : saved_(fp_mode_get()) {
        const uint64_t want = saved_ | fp_mode_flush_bits();
        if (want != saved_) fp_mode_set(want);
    }
    ~fp_flush_scope() {
        if (fp_mode_get() != saved_) fp_mode_set(saved_);
    }
    fp_flush_scope(const fp_flush_scope &)             = delete;
    fp_flush_scope & operator=(const fp_flush_scope &) = delete;

private:
    uint64_t saved_;
};

} // namespace mb::cpu
