// a CLI command's model: I/O problems are runtime failures (exit 1), bad bundles bad input (exit 2)
#include "tools/cli/load-model.h"

#include <cstdio>

namespace mb::cli {

std::optional<motionbricks::model> load_model(const char * cmd, const std::string & dir, const tools::model_options & o,
                                              int & exit_code) {
    try {
        const motionbricks::runtime_options options = tools::to_runtime_options(o);
        return motionbricks::model::load(dir, &options);
    } catch (const motionbricks::error & e) {
        std::fprintf(stderr, "motionbricks %s: cannot load model '%s': %s\n", cmd, dir.c_str(), e.what());
        // a device this machine lacks is a runtime failure, like a missing file
        exit_code = e.status() == MB_IO_ERROR || e.status() == MB_OUT_OF_MEMORY || e.status() == MB_BACKEND_UNAVAILABLE
                        ? 1
                        : 2;
    }
    return std::nullopt;
}

} // namespace mb::cli
