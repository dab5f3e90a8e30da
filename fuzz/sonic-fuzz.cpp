// libFuzzer target for the SONIC readers. The first input byte picks: even → the rest is a
// `.mbsonic` fixture (parse must accept it with every sample finite and of the fixed size, or
// throw mb::error); odd → the rest is a SONIC GGUF (sonic_model::load on the CPU must load it or
// throw mb::error; a loaded model must encode and decode a zero observation to finite values)
#include "format/error.h"
#include "format/mbsonic.h"
#include "memfd-input.h"
#include "sonic/sonic-model.h"

#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

static void fuzz_mbsonic(const uint8_t * data, size_t size) {
    try {
        const mb::mbsonic_file f = mb::mbsonic_file::parse(std::string(reinterpret_cast<const char *>(data), size), "fuzz");
        if (f.size() < 1 || f.size() > mb::k_mbsonic_max_samples) __builtin_trap();
        if (size != 12 + f.size() * size_t(mb::k_mbsonic_sample_floats) * 4) __builtin_trap();
        const mb::mbsonic_sample s = f.sample(f.size() - 1);
        if (!std::isfinite(s.composed[28])) __builtin_trap();
    } catch (const mb::error &) {
    }
}

static void fuzz_gguf(const uint8_t * data, size_t size) {
    const int fd = memfd_input("sonic-fuzz", data, size);
    if (fd < 0) return;
    try {
        auto               m  = mb::sonic::sonic_model::load(memfd_path(fd), 1);
        auto               st = m->create_state();
        std::vector<float> enc(mb::sonic::k_encoder_obs, 0.0f), dec(mb::sonic::k_decoder_obs, 0.0f), out(64);
        m->encode(*st, enc.data(), 1, out.data());
        for (float v : out) {
            if (!(v >= -1.0f && v <= 1.0f)) __builtin_trap();
        }
        m->decode(*st, dec.data(), 1, out.data());
    } catch (const mb::error &) {
    }
    close(fd);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t * data, size_t size) {
    if (size < 1) return 0;
    if (data[0] % 2 == 0) fuzz_mbsonic(data + 1, size - 1);
    else fuzz_gguf(data + 1, size - 1);
    return 0;
}
