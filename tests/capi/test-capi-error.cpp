// the exception → status boundary of the C ABI: mb::error carries its status, std::bad_alloc is out of
// memory, anything else is an internal error; nothing escapes, messages are truncated without splitting UTF-8 characters and always terminated
#include "capi/capi-error.h"

#include "format/error.h"

#include <gtest/gtest.h>

#include <cstring>
#include <new>
#include <stdexcept>
#include <string>

namespace {

using mb::capi::guard;
using mb::capi::write_error;

template <class E> mb_status status_of(const E & e, char * buf, uint64_t cap) {
    return guard(buf, cap, [&]() -> mb_status { throw e; });
}

TEST(CapiError, EveryExceptionMapsToItsStatus) {
    char buf[128];
    EXPECT_EQ(status_of(std::bad_alloc(), buf, sizeof buf), MB_OUT_OF_MEMORY);
    EXPECT_STREQ(buf, "out of memory");
    EXPECT_EQ(status_of(mb::error(mb::status::invalid_argument, "bad count"), buf, sizeof buf), MB_INVALID_ARGUMENT);
    EXPECT_STREQ(buf, "bad count");
    EXPECT_EQ(status_of(mb::error(mb::status::invalid_format, "pose.gguf: bad magic"), buf, sizeof buf),
              MB_INVALID_FORMAT);
    EXPECT_STREQ(buf, "pose.gguf: bad magic");
    EXPECT_EQ(status_of(mb::error(mb::status::compute_failed, "predict failed"), buf, sizeof buf), MB_COMPUTE_FAILED);
    EXPECT_EQ(status_of(mb::error(mb::status::io_error, "gone"), buf, sizeof buf), MB_IO_ERROR);
    EXPECT_EQ(status_of(mb::error(mb::status::backend_unavailable, "no gpu"), buf, sizeof buf), MB_BACKEND_UNAVAILABLE);
    EXPECT_STREQ(buf, "no gpu");
    // the C helpers throw the same type
    EXPECT_EQ(guard(buf, sizeof buf, []() -> mb_status { mb::capi::fail(MB_NOT_IMPLEMENTED, "later"); }),
              MB_NOT_IMPLEMENTED);
    // a std exception is not a status: it is a bug
    EXPECT_EQ(status_of(std::invalid_argument("x"), buf, sizeof buf), MB_INTERNAL_ERROR);
    EXPECT_EQ(status_of(std::runtime_error("x"), buf, sizeof buf), MB_INTERNAL_ERROR);
    EXPECT_EQ(status_of(std::length_error("vector"), buf, sizeof buf), MB_INTERNAL_ERROR);
    EXPECT_EQ(status_of(std::logic_error("bug"), buf, sizeof buf), MB_INTERNAL_ERROR);
    EXPECT_NE(std::string(buf).find("bug"), std::string::npos);
    EXPECT_EQ(status_of(42, buf, sizeof buf), MB_INTERNAL_ERROR);
    EXPECT_STREQ(buf, "internal error: unknown exception");
}

TEST(CapiError, AssertIsInternalWithFileAndLine) {
    char      buf[256];
    const int line = __LINE__ + 1;
    const auto body = []() -> mb_status { MB_ASSERT(1 + 1 == 3, "arithmetic holds"); return MB_OK; };
    EXPECT_EQ(guard(buf, sizeof buf, body), MB_INTERNAL_ERROR);
    const std::string msg = buf;
    EXPECT_NE(msg.find("test-capi-error.cpp:" + std::to_string(line)), std::string::npos) << msg;
    EXPECT_NE(msg.find("arithmetic holds"), std::string::npos) << msg;
    EXPECT_EQ(msg.find("/src/"), std::string::npos) << msg;
    EXPECT_EQ(guard(buf, sizeof buf, []() -> mb_status { MB_ASSERT(true, "never"); return MB_OK; }), MB_OK);
}

TEST(CapiError, SuccessClearsAndNullDiscards) {
    char buf[16] = "stale message";
    EXPECT_EQ(guard(buf, sizeof buf, [] { return MB_OK; }), MB_OK);
    EXPECT_EQ(buf[0], '\0');
    const mb::error bad(mb::status::invalid_argument, "xyz");
    EXPECT_EQ(status_of(bad, nullptr, 100), MB_INVALID_ARGUMENT);
    char untouched[4] = {'a', 'b', 'c', 'd'};
    EXPECT_EQ(status_of(bad, untouched, 0), MB_INVALID_ARGUMENT);
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
