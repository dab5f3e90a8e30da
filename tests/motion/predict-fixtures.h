// shared by the predict and CLI tests: a motion_model over the reference-small
// safetensors weights, and each case's recorded inputs as a predict_request
#pragma once

#include "motion/predict.h"
#include "support/npz.h"
#include "support/reference-small.h"
#include "support/safetensors-source.h"

#include <memory>
#include <string>

namespace mb::test {

struct reference_model {
    safetensors_source            pose;
    safetensors_source            root;
    safetensors_source            vq;
    std::unique_ptr<motion_model> model;

    // `dir` = .../fixtures/reference-small (head counts 4, dilation growth 3)
    reference_model(const std::string & dir, int n_threads);
};

// the case's in_* arrays and config as a request (Gumbel cases replay the recorded uniforms)
predict_request reference_request(const npz_file & z, const reference_case & rc);

} // namespace mb::test
