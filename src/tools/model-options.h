// the model options every program takes (--threads, --device, --precision), parsed once for
// the CLI verbs and the server, and turned into the C ABI's runtime options
#pragma once

#include <motionbricks/motionbricks.hpp>

#include <charconv>
#include <cstdio>
#include <string>

namespace mb::tools {

struct model_options {
    int          threads   = 0;                   // 0: one per hardware thread
    mb_device    device    = MB_DEVICE_AUTO;      // CUDA where usable, else the CPU
    mb_precision precision = MB_PRECISION_F32;
};

inline constexpr const char * k_model_options_usage = "[--threads N] [--device cpu|cuda|auto] [--precision f32|tf32|bf16]";

// 1 when `flag` is a model option and `value` is good (stored in out), 0 when `flag` is not a
// model option, -1 when the value is bad (printed as "motionbricks CMD: why")
inline int parse_model_option(const char * cmd, const std::string & flag, const std::string & value,
                              model_options & out) {
    if (flag == "--threads") {
        int        t   = 0;
        const auto res = std::from_chars(value.data(), value.data() + value.size(), t);
        if (res.ec != std::errc() || res.ptr != value.data() + value.size() || t < 1 || t > 1024) {
            std::fprintf(stderr, "motionbricks %s: --threads must be an integer 1..1024\n", cmd);
            return -1;
        }
        out.threads = t;
        return 1;
    }
    if (flag == "--device") {
        if (value == "cpu") out.device = MB_DEVICE_CPU;
        else if (value == "cuda") out.device = MB_DEVICE_CUDA;
        else if (value == "auto") out.device = MB_DEVICE_AUTO;
        else {
            std::fprintf(stderr, "motionbricks %s: --device must be cpu, cuda or auto\n", cmd);
            return -1;
        }
        return 1;
    }
    if (flag == "--precision") {
        if (value == "f32") out.precision = MB_PRECISION_F32;
        else if (value == "tf32") out.precision = MB_PRECISION_TF32;
        else if (value == "bf16") out.precision = MB_PRECISION_BF16;
        else {
            std::fprintf(stderr, "motionbricks %s: --precision must be f32, tf32 or bf16\n", cmd);
            return -1;
        }
        return 1;
    }
    return 0;
}

inline motionbricks::runtime_options to_runtime_options(const model_options & o) {
    motionbricks::runtime_options r;
    r.set_threads(uint32_t(o.threads < 0 ? 0 : o.threads));
    r.set_device(o.device);
    r.set_precision(o.precision);
    return r;
}

inline const char * device_name(mb_device d) {
    return d == MB_DEVICE_CUDA ? "cuda" : d == MB_DEVICE_CPU ? "cpu" : d == MB_DEVICE_AUTO ? "auto" : "vulkan";
}

inline const char * precision_name(mb_precision p) {
    return p == MB_PRECISION_TF32 ? "tf32" : p == MB_PRECISION_BF16 ? "bf16" : "f32";
}

} // namespace mb::tools
