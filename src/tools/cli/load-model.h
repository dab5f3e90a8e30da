// the model bundle of a CLI command, with the commands' exit-code rule for it
#pragma once

#include "motion/predict.h"

#include <memory>
#include <string>

namespace mb::cli {

// loads the bundle in `dir` on `threads` threads. On failure prints
// "motionbricks CMD: cannot load model 'DIR': why", returns nullptr and sets exit_code:
//   1 when the directory or one of its four components is missing or unreadable (I/O),
//   2 when they are all there but malformed or do not fit together, e.g. components of
//     different bundles (bad input, like a bad script or request)
std::unique_ptr<motion_model> load_model(const char * cmd, const std::string & dir, int threads, int & exit_code);

} // namespace mb::cli
