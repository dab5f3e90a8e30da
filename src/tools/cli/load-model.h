// the model bundle of a CLI command (through the C ABI), with the commands' exit-code rule for it
#pragma once

#include <motionbricks/motionbricks.hpp>

#include "tools/model-options.h"

#include <optional>
#include <string>

namespace mb::cli {

// loads the bundle in `dir` on `threads` threads (0: one per hardware thread). On failure prints
// "motionbricks CMD: cannot load model 'DIR': why", returns nothing and sets exit_code:
//   1 when the directory or one of its four components is missing or unreadable (MB_IO_ERROR), or
//     memory ran out,
//   2 when they are all there but malformed or do not fit together, e.g. components of
//     different bundles (bad input, like a bad script or request)
std::optional<motionbricks::model> load_model(const char * cmd, const std::string & dir, const tools::model_options & o,
                                              int & exit_code);
inline std::optional<motionbricks::model> load_model(const char * cmd, const std::string & dir, int threads,
                                                     int & exit_code) {
    tools::model_options o;
    o.threads = threads;
    return load_model(cmd, dir, o, exit_code);
}

} // namespace mb::cli
