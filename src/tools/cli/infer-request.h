// the `motionbricks infer` request reader (docs/FORMATS.md, "Inference request")
#pragma once

#include "format/json-bounded.h"

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace mb::cli {

inline constexpr const char * k_request_format = "motionbricks-inference-request-v1";

// the largest valid request (16 inference steps of gumbel uniforms, every number with 17
// significant digits) is 0.47 MB compact and 1.0 MB indented by 4, 25.4k values, 5 levels deep
// (object > gumbel_uniforms > step > token > head); the bounds leave room for other layouts
inline constexpr json_bounds k_request_bounds = {
    .max_bytes  = size_t(4) << 20,
    .max_depth  = 8,
    .max_values = 65536,
};

// the request's shapes: those of mb_inference_request (include/motionbricks/inference.h)
inline constexpr size_t k_request_slots     = 8;     // constraint slots: 0..3 source, 4..7 target
inline constexpr size_t k_request_pose_dim  = 303;   // MB_INFERENCE_POSE floats per slot
inline constexpr size_t k_request_durations = 11;    // MB_INFERENCE_DURATIONS: 6..16 tokens
inline constexpr size_t k_request_uniforms  = 16 * 8 * 10;   // Gumbel uniforms per step: tokens × heads × codes

// a parsed request, field by field as the public setters of mb_inference_request take it
// (cmd-infer.cpp hands it to them; the library validates it again)
struct infer_request {
    std::vector<float>    global_root;               // [8, 5] MB_INFERENCE_GLOBAL_ROOT
    std::vector<float>    local_root;                // [8, 4] MB_INFERENCE_LOCAL_ROOT
    std::vector<float>    poses;                     // [8, 303] MB_INFERENCE_POSE
    std::vector<uint32_t> global_root_mask;          // [8] 0/1
    std::vector<uint32_t> local_root_mask;           // [8] 0/1
    std::vector<uint32_t> pose_mask;                 // [8] 0/1
    std::vector<uint32_t> durations = std::vector<uint32_t>(k_request_durations, 1);   // [11] 0/1, all when null
    uint32_t              token_count     = 0;       // 0 = predicted, else 6..16 forced
    bool                  sampling_argmax = false;   // "argmax" (else "gumbel")
    uint64_t              seed            = 0;
    uint32_t              inference_steps = 1;       // 1..16
    std::vector<float>    gumbel_uniforms;           // [steps, 16, 8, 10] in [0, 1], or empty
    bool                  skip_ending_target_cond = false;
    bool                  allow_out_of_reach      = false;
};

// a request problem (the command exits with 2)
struct bad_request : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// parses and validates a whole request; throws bad_request naming the field and the problem
infer_request parse_infer_request(const std::string & text);

} // namespace mb::cli
