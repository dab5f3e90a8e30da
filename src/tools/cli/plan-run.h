// a plan script run to 30 fps qpos in memory, for the commands that send a plan elsewhere
// (stream-zmq, export-sonic): the same model, styles, script and loop as `motionbricks plan`
#pragma once

#include "tools/model-options.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace mb::cli {

struct plan_inputs {
    std::string              model_dir;       // --model
    std::vector<std::string> style_paths;     // --style (repeatable)
    std::string              script_path;     // --script (or the command's positional SCRIPT)
    tools::model_options     model;           // --threads, --device, --precision
    std::string              qpos_path;       // --qpos FILE.csv|.npz: a 30 fps clip instead of a script
};

// parses --model, --style, --script and the model options: 1 consumed, 0 not one of them, -1 bad value (printed)
int parse_plan_option(const char * cmd, const std::string & option, const std::string & value, plan_inputs & in);

// the command line of a verb whose input is SCRIPT (+ --model, --style, model options) or --qpos FILE:
// `extra` takes the verb's own options (1 consumed, 0 unknown, -1 bad value, printed). Returns -1
// when parsed and complete, else the exit code (0 for --help, 2 after printing usage())
int parse_motion_input(const char * cmd, int argc, char ** argv, plan_inputs & in,
                       const std::function<int(const std::string &, const std::string &)> & extra, int (*usage)());

// the input's 30 fps qpos [frames, 36]: the --qpos file (through the C ABI reader) or the script
// run; 0, or the exit code after printing why
int load_motion_input(const char * cmd, const plan_inputs & in, std::vector<float> & qpos);

// loads and runs the script; on success fills qpos [frames, 36] and returns 0, else prints
// "motionbricks CMD: ..." and returns the exit code (1 runtime, 2 bad input)
int run_plan_script(const char * cmd, const plan_inputs & in, std::vector<float> & qpos);

} // namespace mb::cli
