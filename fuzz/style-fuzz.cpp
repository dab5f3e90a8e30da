// libFuzzer target for the .mbstyle reader and the MJCF parser. The first input byte picks
// the reader: even → the bytes are a .mbstyle file (style_read must accept it with every
// invariant holding, or throw mb::error); odd → the rest is MJCF text (mjcf_parse
// must return a tree or throw std::runtime_error, and a returned G1-shaped tree must build a
// converter or be refused with mb::error)
#include "format/style.h"
#include "motion/mjcf.h"
#include "motion/qpos.h"
#include "memfd-input.h"

#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

static void fuzz_style(const uint8_t * data, size_t size) {
    const int fd = memfd_input("style-fuzz", data, size);
    if (fd < 0) return;
    try {
        const mb::style_asset s = mb::style_read(memfd_path(fd));
        // what the reader accepts must satisfy every documented invariant
        if (!mb::style_validate(s).empty()) __builtin_trap();
        if (s.joint_positions.size() != size_t(s.frames) * 34 * 3) __builtin_trap();
        for (float v : s.headings) {
            if (!std::isfinite(v)) __builtin_trap();
        }
    } catch (const mb::error &) {
    }
    close(fd);
}

static void fuzz_mjcf(const uint8_t * data, size_t size) {
    try {
        const mb::mjcf_model m = mb::mjcf_parse(std::string_view(reinterpret_cast<const char *>(data), size), "fuzz");
        if (m.hinges.empty()) __builtin_trap();
        for (const mb::mjcf_hinge & h : m.hinges) {
            if (h.axis < 0 || h.axis > 2 || h.parent < 0) __builtin_trap();
        }
        try {
            const mb::qpos_converter conv(m);
            (void) conv;
        } catch (const mb::error &) {
        }
    } catch (const std::runtime_error &) {
    }
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t * data, size_t size) {
    if (size == 0) return 0;
    if (data[0] % 2 == 0) {
        fuzz_style(data + 1, size - 1);
    } else {
        fuzz_mjcf(data + 1, size - 1);
    }
    return 0;
}
