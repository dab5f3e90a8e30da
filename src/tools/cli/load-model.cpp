// a CLI command's model: I/O problems are runtime failures (exit 1), bad bundles bad input (exit 2)
#include "tools/cli/load-model.h"

#include "format/bundle.h"

#include <cstdio>

namespace mb::cli {

std::unique_ptr<motion_model> load_model(const char * cmd, const std::string & dir, int threads, int & exit_code) {
    const std::string missing = bundle_files_problem(dir);
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
