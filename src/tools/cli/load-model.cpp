// a CLI command's model: I/O problems are runtime failures (exit 1), bad bundles bad input (exit 2)
#include "tools/cli/load-model.h"

#include "format/bundle.h"

#include <cstdio>
#include <filesystem>
#include <fstream>

namespace mb::cli {

namespace {

// "" when the directory and its four components are readable files, else the problem
std::string missing_component(const std::string & dir) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) return "not a directory";
    for (const char * name : {"pose.gguf", "root.gguf", "vq-decoder.gguf", "support.gguf"}) {
        const fs::path p = fs::path(dir) / name;
        if (!fs::is_regular_file(p, ec)) return std::string(name) + " is missing";
        if (!std::ifstream(p, std::ios::binary).is_open()) return std::string(name) + " cannot be read";
    }
    return "";
}

} // namespace

std::unique_ptr<motion_model> load_model(const char * cmd, const std::string & dir, int threads, int & exit_code) {
    const std::string missing = missing_component(dir);
    if (!missing.empty()) {
        std::fprintf(stderr, "motionbricks %s: cannot load model '%s': %s\n", cmd, dir.c_str(), missing.c_str());
        exit_code = 1;
        return nullptr;
    }
    try {
        return motion_model::create(bundle_load(dir), threads);
    } catch (const std::bad_alloc &) {
        std::fprintf(stderr, "motionbricks %s: cannot load model '%s': out of memory\n", cmd, dir.c_str());
        exit_code = 1;
    } catch (const std::exception & e) {
        std::fprintf(stderr, "motionbricks %s: cannot load model '%s': %s\n", cmd, dir.c_str(), e.what());
        exit_code = 2;
    }
    return nullptr;
}

} // namespace mb::cli
