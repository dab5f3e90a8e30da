// libFuzzer target for the .mbparity and .mbreplay readers. The first input byte picks the
// reader (even: .mbparity, odd: .mbreplay) and the rest is the file. The reader must accept it
// or throw mb::error(invalid_format); what it accepts must validate and re-serialise to the
// same bytes (the formats have exactly one encoding)
#include "format/error.h"
#include "format/mbparity.h"
#include "format/mbreplay.h"

#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t * data, size_t size) {
    if (size == 0) return 0;
    const std::string_view bytes(reinterpret_cast<const char *>(data + 1), size - 1);
    try {
        if (data[0] % 2 == 0) {
            const mb::parity_fixture f = mb::mbparity_parse(bytes, "fuzz");
            if (!mb::mbparity_validate(f).empty() || mb::mbparity_serialize(f) != bytes) __builtin_trap();
        } else {
            const mb::replay_session s = mb::mbreplay_parse(bytes, "fuzz");
            if (!mb::mbreplay_validate(s).empty() || mb::mbreplay_serialize(s) != bytes) __builtin_trap();
        }
    } catch (const mb::error & e) {
        if (e.code() != mb::status::invalid_format) __builtin_trap();
    }
    return 0;
}
