#include "capi/capi-error.h"

#include <cstring>
#include <new>

namespace mb::capi {

void write_error(char * error, uint64_t capacity, std::string_view msg) noexcept {
    if (error == nullptr || capacity == 0) {
        return;
    }
    size_t n = msg.size();
    if (n > capacity - 1) {
        n = size_t(capacity - 1);
        // back off over UTF-8 continuation bytes so a multi-byte character is never cut in half
        while (n > 0 && (static_cast<unsigned char>(msg[n]) & 0xC0) == 0x80) {
            --n;
        }
    }
    std::memcpy(error, msg.data(), n);
    error[n] = '\0';
}

// the library's status enum is the ABI's, value for value
static_assert(uint32_t(mb::status::invalid_argument) == MB_INVALID_ARGUMENT);
static_assert(uint32_t(mb::status::out_of_memory) == MB_OUT_OF_MEMORY);
static_assert(uint32_t(mb::status::io_error) == MB_IO_ERROR);
static_assert(uint32_t(mb::status::invalid_format) == MB_INVALID_FORMAT);
static_assert(uint32_t(mb::status::incompatible_model) == MB_INCOMPATIBLE_MODEL);
static_assert(uint32_t(mb::status::backend_unavailable) == MB_BACKEND_UNAVAILABLE);
static_assert(uint32_t(mb::status::compute_failed) == MB_COMPUTE_FAILED);
static_assert(uint32_t(mb::status::not_implemented) == MB_NOT_IMPLEMENTED);
static_assert(uint32_t(mb::status::internal) == MB_INTERNAL_ERROR);

mb_status current_exception_status(char * error, uint64_t capacity) noexcept {
    mb_status   status = MB_INTERNAL_ERROR;
    std::string msg;
    try {
        try {
            throw;
        } catch (const mb::error & e) {
            status = status_of(e);
            msg    = e.what();
        } catch (const std::bad_alloc &) {
            status = MB_OUT_OF_MEMORY;
            msg    = "out of memory";
        } catch (const std::exception & e) {
            status = MB_INTERNAL_ERROR;
            msg    = std::string("internal error: ") + e.what();
        } catch (...) {
            status = MB_INTERNAL_ERROR;
            msg    = "internal error: unknown exception";
        }
    } catch (...) {
        // building the message itself failed (out of memory): report without one
        write_error(error, capacity, "");
        return MB_OUT_OF_MEMORY;
    }
    write_error(error, capacity, msg);
    return status;
}

} // namespace mb::capi
