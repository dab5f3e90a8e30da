// where tests find ../shared (fixtures, upstream data); MB_SHARED_DIR overrides at run time
#pragma once

#include <string>

namespace mb::test {

// the shared directory, or "" when it does not exist
std::string shared_dir();

// shared_dir() + "/" + rel when that path exists, else ""
std::string shared_path(const std::string & rel);

} // namespace mb::test

// skip the current gtest with the standard message when a shared path is missing
#define MB_REQUIRE_SHARED(var, rel)                                                              \
    const std::string var = ::mb::test::shared_path(rel);                                        \
    if (var.empty()) {                                                                           \
        GTEST_SKIP() << "skipped: ../shared/" << (rel) << " not found";                           \
    }
