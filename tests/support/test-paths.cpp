#include "support/test-paths.h"

#include <cstdlib>
#include <filesystem>

namespace mb::test {

std::string shared_dir() {
    const char * env = std::getenv("MB_SHARED_DIR");
    std::string  dir = env && *env ? env : MB_SHARED_DIR;
    std::error_code ec;
    return std::filesystem::is_directory(dir, ec) ? dir : std::string();
}

std::string shared_path(const std::string & rel) {
    const std::string dir = shared_dir();
    if (dir.empty()) return {};
    const std::string p = dir + "/" + rel;
    std::error_code ec;
    return std::filesystem::exists(p, ec) ? p : std::string();
}

} // namespace mb::test
