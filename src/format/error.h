// the one error type of the library: readers, validators and networks throw mb::error with the
// status that the C ABI reports (capi-error.cpp maps it 1:1), and invariants use MB_ASSERT, which
// throws an internal error naming file:line; nothing else needs a catch ladder
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace mb {

// mirrors mb_status of motionbricks.h value for value (checked by a static_assert in capi-error.cpp)
enum class status : uint32_t {
    invalid_argument    = 1,   // a caller's value is NULL, out of range or non-finite
    out_of_memory       = 2,   // an allocation failed
    io_error            = 3,   // a file is missing, unreadable or cannot be written
    invalid_format      = 4,   // a file's bytes are malformed (magic, shapes, values)
    incompatible_model  = 5,   // a well-formed bundle the networks cannot run
    backend_unavailable = 6,   // the requested device is not in this build
    compute_failed      = 7,   // inference failed or produced non-finite values
    not_implemented     = 8,   // the feature is not in this build
    internal            = 9,   // a bug: an invariant did not hold
};

class error : public std::runtime_error {
public:
    error(status code, const std::string & msg) : std::runtime_error(msg), code_(code) {}
    status code() const noexcept { return code_; }

private:
    status code_;
};

[[noreturn]] inline void fail(status code, const std::string & msg) {
    throw error(code, msg);
}

namespace detail {
// "internal error at model/vq-decoder.cpp:42: msg (cond)": the path from src/ on, without the build's prefix
[[noreturn]] inline void assert_failed(const char * file, int line, const char * cond, const std::string & msg) {
    std::string path = file;
    const size_t src = path.rfind("src/");
    if (src != std::string::npos) path.erase(0, src + 4);
    throw error(status::internal,
                "internal error at " + path + ":" + std::to_string(line) + ": " + msg + " (" + cond + ")");
}
} // namespace detail

} // namespace mb

// an invariant of the code, never of its inputs (those get mb::error with their own status)
#define MB_ASSERT(cond, msg)                                                        \
    do {                                                                            \
        if (!(cond)) ::mb::detail::assert_failed(__FILE__, __LINE__, #cond, (msg)); \
    } while (0)
