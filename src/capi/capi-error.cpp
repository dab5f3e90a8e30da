#include "capi/capi-error.h"

#include "format/gguf.h"

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

mb_status current_exception_status(char * error, uint64_t capacity, mb_status runtime_status) noexcept {
    mb_status   status = MB_INTERNAL_ERROR;
    std::string msg;
    try {
        try {
            throw;
        } catch (const status_error & e) {
            status = e.status;
            msg    = e.what();
        } catch (const std::bad_alloc &) {
            status = MB_OUT_OF_MEMORY;
            msg    = "out of memory";
        } catch (const std::length_error & e) {
            status = MB_OUT_OF_MEMORY;
            msg    = std::string("allocation too large: ") + e.what();
        } catch (const std::invalid_argument & e) {
            status = MB_INVALID_ARGUMENT;
            msg    = e.what();
        } catch (const gguf_error & e) {
            status = MB_INVALID_FORMAT;
            msg    = e.what();
        } catch (const std::runtime_error & e) {
            status = runtime_status;
            msg    = e.what();
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
