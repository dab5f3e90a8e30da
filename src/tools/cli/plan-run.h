// a plan script run to 30 fps qpos in memory, for the commands that send a plan elsewhere
// (stream-zmq, export-sonic): the same model, styles, script and loop as `motionbricks plan`
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mb::cli {

struct plan_inputs {
    std::string              model_dir;       // --model
    std::vector<std::string> style_paths;     // --style (repeatable)
    std::string              script_path;     // --script (or the command's positional SCRIPT)
    int                      threads = 0;     // --threads
};

// parses --model, --style, --script, --threads: 1 consumed, 0 not one of them, -1 bad value (printed)
int parse_plan_option(const char * cmd, const std::string & option, const std::string & value, plan_inputs & in);

// loads and runs the script; on success fills qpos [frames, 36] and returns 0, else prints
// "motionbricks CMD: ..." and returns the exit code (1 runtime, 2 bad input)
int run_plan_script(const char * cmd, const plan_inputs & in, std::vector<float> & qpos);

} // namespace mb::cli
