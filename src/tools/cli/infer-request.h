// the `motionbricks infer` request reader (docs/FORMATS.md, "Inference request")
#pragma once

#include "motion/predict.h"

#include <stdexcept>
#include <string>

namespace mb::cli {

inline constexpr const char * k_request_format = "motionbricks-inference-request-v1";

// a request problem (the command exits with 2)
struct bad_request : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// parses and validates a whole request; throws bad_request naming the field and the problem
predict_request parse_infer_request(const std::string & text);

} // namespace mb::cli
