// the one place where C++ errors become C statuses: every exported function runs
// its body inside guard(), which clears the caller's error buffer, catches every
// exception and writes a truncated, NUL-terminated message. The library throws
// mb::error (format/error.h) carrying its status; anything else is a bug
#pragma once

#include "format/error.h"

#include <motionbricks/motionbricks.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace mb::capi {

// thrown inside an entry point to fail with a specific status (mb::fail takes an mb::status)
[[noreturn]] inline void fail(mb_status status, const std::string & msg) {
    throw mb::error(static_cast<mb::status>(status), msg);
}

// the C status of an mb::error
inline mb_status status_of(const mb::error & e) {
    return static_cast<mb_status>(e.code());
}

// NULL-pointer argument check with a message naming the argument
inline void require(const void * p, const char * what) {
    if (p == nullptr) {
        fail(MB_INVALID_ARGUMENT, std::string(what) + " is NULL");
    }
}

// copies msg into error[0 .. capacity): truncated, never splitting a UTF-8 sequence,
// always NUL-terminated; nothing happens when error is NULL or capacity is 0
void write_error(char * error, uint64_t capacity, std::string_view msg) noexcept;

// maps the exception in flight to a status and writes its message: mb::error → its status,
// std::bad_alloc → MB_OUT_OF_MEMORY, anything else → MB_INTERNAL_ERROR
mb_status current_exception_status(char * error, uint64_t capacity) noexcept;

// runs body() → mb_status; no exception escapes
template <class F> mb_status guard(char * error, uint64_t capacity, F && body) noexcept {
    write_error(error, capacity, "");
    try {
        return body();
    } catch (...) {
        return current_exception_status(error, capacity);
    }
}

} // namespace mb::capi
