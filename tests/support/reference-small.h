// helpers over ../shared/fixtures/reference-small: the support data (stats,
// skeleton) as a model_support, the case list with each case's predict config
#pragma once

#include "format/bundle.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mb::test {

struct reference_case {
    std::string          name;              // e.g. "idle_pred_argmax"
    std::string          file;              // absolute path of cases/<name>.npz
    int                  num_inference_steps = 1;
    bool                 use_argmax          = true;
    bool                 skip_ending_target_cond = false;
    bool                 allow_out_of_reach  = false;
};

// stats (float64 cast to float32) and skeleton of the fixture directory `dir`
// (".../fixtures/reference-small"); throws std::runtime_error
model_support reference_support(const std::string & dir);

// every case of summary.json in order; throws std::runtime_error
std::vector<reference_case> reference_cases(const std::string & dir);

} // namespace mb::test
