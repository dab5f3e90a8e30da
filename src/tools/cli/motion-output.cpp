// motion output by extension (see motion-output.h)
#include "tools/cli/motion-output.h"

#include <motionbricks/motionbricks.hpp>

#include <cctype>
#include <cstdio>

namespace mb::cli {

namespace {

std::string lower_extension(const std::string & path) {
    const size_t dot = path.rfind('.'), slash = path.rfind('/');
    if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return "";
    std::string e = path.substr(dot);
    for (char & c : e) c = char(std::tolower(static_cast<unsigned char>(c)));
    return e;
}

} // namespace

bool is_qpos_output(const std::string & path) {
    const std::string e = lower_extension(path);
    return e == ".csv" || e == ".npz";
}

const char * qpos_options_usage() {
    return "[--qpos-rate 30|50] [--quat-order wxyz|xyzw] [--qpos-header yes|no]";
}

int parse_qpos_option(const char * cmd, const std::string & a, const std::string & v, qpos_output & out) {
    if (a == "--qpos-rate") {
        if (v != "30" && v != "50") {
            std::fprintf(stderr, "motionbricks %s: --qpos-rate must be 30 or 50\n", cmd);
            return -1;
        }
        out.rate = v == "30" ? 30 : 50;
        return 1;
    }
    if (a == "--quat-order") {
        if (v != "wxyz" && v != "xyzw") {
            std::fprintf(stderr, "motionbricks %s: --quat-order must be wxyz or xyzw\n", cmd);
            return -1;
        }
        out.xyzw = v == "xyzw";
        return 1;
    }
    if (a == "--qpos-header") {
        if (v != "yes" && v != "no") {
            std::fprintf(stderr, "motionbricks %s: --qpos-header must be yes or no\n", cmd);
            return -1;
        }
        out.header = v == "yes";
        return 1;
    }
    return 0;
}

void write_qpos_output(const std::string & path, const float * qpos, uint64_t frames, const qpos_output & o) {
    const uint32_t format = lower_extension(path) == ".npz" ? MB_QPOS_FORMAT_NPZ : MB_QPOS_FORMAT_CSV;
    const uint32_t flags  = (o.xyzw ? MB_QPOS_QUAT_XYZW : 0) | (o.header ? 0 : MB_QPOS_NO_HEADER);
    motionbricks::write_qpos_file(qpos, frames, path, format, o.rate, flags);
}

} // namespace mb::cli
