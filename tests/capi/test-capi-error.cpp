// the exception → status boundary of the C ABI: every exception type maps to its documented status,
// nothing escapes, messages are truncated without splitting UTF-8 characters and always terminated
#include "capi/capi-error.h"

#include "format/gguf.h"

#include <gtest/gtest.h>

#include <cstring>
#include <new>
#include <stdexcept>
#include <string>

namespace {

using mb::capi::guard;
using mb::capi::write_error;

template <class E> mb_status status_of(const E & e, char * buf, uint64_t cap, mb_status runtime_status = MB_INTERNAL_ERROR) {
    return guard(buf, cap, runtime_status, [&]() -> mb_status { throw e; });
}

TEST(CapiError, EveryExceptionMapsToItsStatus) {
    char buf[128];
    EXPECT_EQ(status_of(std::bad_alloc(), buf, sizeof buf), MB_OUT_OF_MEMORY);
    EXPECT_STREQ(buf, "out of memory");
    EXPECT_EQ(status_of(std::length_error("vector"), buf, sizeof buf), MB_OUT_OF_MEMORY);
    EXPECT_EQ(status_of(std::invalid_argument("bad count"), buf, sizeof buf), MB_INVALID_ARGUMENT);
    EXPECT_STREQ(buf, "bad count");
    EXPECT_EQ(status_of(mb::gguf_error("pose.gguf: bad magic"), buf, sizeof buf), MB_INVALID_FORMAT);
    EXPECT_STREQ(buf, "pose.gguf: bad magic");
    EXPECT_EQ(status_of(std::runtime_error("predict failed"), buf, sizeof buf, MB_COMPUTE_FAILED), MB_COMPUTE_FAILED);
    EXPECT_EQ(status_of(std::runtime_error("x"), buf, sizeof buf), MB_INTERNAL_ERROR);
    EXPECT_EQ(status_of(std::logic_error("bug"), buf, sizeof buf), MB_INTERNAL_ERROR);
    EXPECT_NE(std::string(buf).find("bug"), std::string::npos);
    EXPECT_EQ(status_of(42, buf, sizeof buf), MB_INTERNAL_ERROR);
    EXPECT_STREQ(buf, "internal error: unknown exception");
    EXPECT_EQ(status_of(mb::capi::status_error(MB_BACKEND_UNAVAILABLE, "no gpu"), buf, sizeof buf),
              MB_BACKEND_UNAVAILABLE);
    EXPECT_STREQ(buf, "no gpu");
}

TEST(CapiError, SuccessClearsAndNullDiscards) {
    char buf[16] = "stale message";
    EXPECT_EQ(guard(buf, sizeof buf, [] { return MB_OK; }), MB_OK);
    EXPECT_EQ(buf[0], '\0');
    EXPECT_EQ(status_of(std::invalid_argument("x"), nullptr, 100), MB_INVALID_ARGUMENT);
    char untouched[4] = {'a', 'b', 'c', 'd'};
    EXPECT_EQ(status_of(std::invalid_argument("xyz"), untouched, 0), MB_INVALID_ARGUMENT);
    EXPECT_EQ(std::memcmp(untouched, "abcd", 4), 0);
}

TEST(CapiError, TruncationKeepsUtf8WholeAndTerminates) {
    char buf[8];
    std::memset(buf, 'X', sizeof buf);
    write_error(buf, 8, "abcdefghijk");
    EXPECT_STREQ(buf, "abcdefg");
    // "abcde" + "é" (2 bytes) + "f": 7 bytes fit, but the cut would fall inside é → back off before it
    std::memset(buf, 'X', sizeof buf);
    write_error(buf, 7, "abcde\xc3\xa9" "f");
    EXPECT_STREQ(buf, "abcde");
    std::memset(buf, 'X', sizeof buf);
    write_error(buf, 8, "abcde\xc3\xa9" "f");
    EXPECT_STREQ(buf, "abcde\xc3\xa9");
    write_error(buf, 1, "abc");
    EXPECT_EQ(buf[0], '\0');
    std::memset(buf, 'X', sizeof buf);
    write_error(buf, 2, "abc");
    EXPECT_EQ(buf[0], 'a');
    EXPECT_EQ(buf[1], '\0');
    EXPECT_EQ(buf[2], 'X');
}

} // namespace
