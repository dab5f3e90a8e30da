// the one place where C++ errors become C statuses: every exported function runs
// its body inside guard(), which clears the caller's error buffer, catches every
// exception and writes a truncated, NUL-terminated message
#pragma once

#include <motionbricks/motionbricks.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace mb::capi {

// thrown inside an entry point to fail with a specific status
struct status_error : std::runtime_error {
    mb_status status;
    status_error(mb_status s, const std::string & msg) : std::runtime_error(msg), status(s) {}
};

[[noreturn]] inline void fail(mb_status status, const std::string & msg) {
    throw status_error(status, msg);
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

// maps the exception in flight to a status and writes its message; `runtime_status`
// is the status for a plain std::runtime_error (depends on what the call was doing)
mb_status current_exception_status(char * error, uint64_t capacity, mb_status runtime_status) noexcept;

// runs body() → mb_status; no exception escapes
template <class F> mb_status guard(char * error, uint64_t capacity, mb_status runtime_status, F && body) noexcept {
    write_error(error, capacity, "");
    try {
        return body();
    } catch (...) {
        return current_exception_status(error, capacity, runtime_status);
    }
}

template <class F> mb_status guard(char * error, uint64_t capacity, F && body) noexcept {
    return guard(error, capacity, MB_INTERNAL_ERROR, static_cast<F &&>(body));
}

} // namespace mb::capi
