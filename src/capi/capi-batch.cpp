// (Not in the reference runtime.) mb_model_get_batch_limit and mb_model_get_batch_lanes
#include "capi/capi-error.h"
#include "capi/handles.h"
#include "motion/predict.h"

#include <motionbricks/batch.h>

using mb::capi::guard;
using mb::capi::require;

extern "C" {

MB_API mb_status mb_model_get_batch_limit(const mb_model * model, uint64_t * output, char * error,
                                          uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        require(model, "model");
        require(output, "output");
        *output = mb::capi::k_max_batch;
        return MB_OK;
    });
}

MB_API mb_status mb_model_get_batch_lanes(const mb_model * model, uint64_t * output, char * error,
                                          uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        require(model, "model");
        require(output, "output");
        *output = uint64_t(model->net->batch_lanes());
        return MB_OK;
    });
}

} // extern "C"
