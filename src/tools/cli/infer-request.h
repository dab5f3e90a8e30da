// the `motionbricks infer` request reader (docs/FORMATS.md, "Inference request")
#pragma once

#include "format/json-bounded.h"
#include "motion/predict.h"

#include <stdexcept>
#include <string>

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

// a request problem (the command exits with 2)
struct bad_request : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// parses and validates a whole request; throws bad_request naming the field and the problem
predict_request parse_infer_request(const std::string & text);

} // namespace mb::cli
