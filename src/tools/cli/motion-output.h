// motion output files chosen by extension: .csv and .npz are G1 qpos files for robot tools
// (robot-export.h), written at 30 or 50 Hz with either root quaternion order. Shared by plan,
// infer, serve --record-qpos and export-sonic's inputs
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mb::cli {

struct qpos_output {
    uint32_t rate   = 30;      // --qpos-rate 30|50
    bool     xyzw   = false;   // --quat-order wxyz|xyzw
    bool     header = true;    // --qpos-header yes|no (CSV)
};

// the path ends in .csv or .npz (any case)
bool is_qpos_output(const std::string & path);

// `option` with `value` is one of --qpos-rate, --quat-order, --qpos-header: parses it into `out`
// and returns 1, or prints "motionbricks CMD: ..." and returns -1 on a bad value; 0 when the
// option is not one of them
int parse_qpos_option(const char * cmd, const std::string & option, const std::string & value, qpos_output & out);

// the usage text of those options
const char * qpos_options_usage();

// writes 30 fps qpos [frames, 36] to `path` by its extension; throws motionbricks::error
void write_qpos_output(const std::string & path, const float * qpos, uint64_t frames, const qpos_output & o);

} // namespace mb::cli
