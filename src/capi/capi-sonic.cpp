// sonic.h entry points: the SONIC policy behind a handle that serialises its calls and keeps
// the last call's layer traces
#include "capi/capi-error.h"
#include "capi/handles.h"

#include <motionbricks/sonic.h>

#include "sonic/sonic-model.h"

#include <algorithm>
#include <cmath>
#include <mutex>
#include <string>

using mb::capi::fail;
using mb::capi::guard;
using mb::capi::require;
namespace sonic = mb::sonic;

struct mb_sonic {
    std::unique_ptr<sonic::sonic_model> model;
    std::unique_ptr<sonic::sonic_state> state;
    mutable std::mutex                  mutex;
};

namespace {

mb_status encode(mb_sonic * s, const float * obs, uint64_t obs_count, uint64_t batch, float * tokens,
                 uint64_t token_count, char * error, uint64_t cap) {
    return guard(error, cap, [&]() -> mb_status {
        require(s, "sonic");
        require(obs, "obs");
        require(tokens, "tokens");
        if (batch < 1 || batch > MB_SONIC_MAX_BATCH) fail(MB_INVALID_ARGUMENT, "batch_size " + std::to_string(batch) + " is outside 1..64");
        if (obs_count != batch * MB_SONIC_ENCODER_OBS) {
            fail(MB_INVALID_ARGUMENT, "obs_count " + std::to_string(obs_count) + " is not " + std::to_string(batch) + " × 1762");
        }
        if (token_count != batch * MB_SONIC_TOKENS) {
            fail(MB_INVALID_ARGUMENT, "token_count " + std::to_string(token_count) + " is not " + std::to_string(batch) + " × 64");
        }
        const std::string problem = s->model->check_encoder_obs(obs, int64_t(batch));
        if (!problem.empty()) fail(MB_INVALID_ARGUMENT, problem);
        std::lock_guard<std::mutex> lock(s->mutex);
        // written only on success; the layers stay in the state for mb_sonic_layer
        s->model->encode(*s->state, obs, int64_t(batch), tokens);
        return MB_OK;
    });
}

mb_status decode(mb_sonic * s, const float * obs, uint64_t obs_count, uint64_t batch, float * actions,
                 uint64_t action_count, char * error, uint64_t cap) {
    return guard(error, cap, [&]() -> mb_status {
        require(s, "sonic");
        require(obs, "obs");
        require(actions, "actions");
        if (batch < 1 || batch > MB_SONIC_MAX_BATCH) fail(MB_INVALID_ARGUMENT, "batch_size " + std::to_string(batch) + " is outside 1..64");
        if (obs_count != batch * MB_SONIC_DECODER_OBS) {
            fail(MB_INVALID_ARGUMENT, "obs_count " + std::to_string(obs_count) + " is not " + std::to_string(batch) + " × 994");
        }
        if (action_count != batch * MB_SONIC_ACTIONS) {
            fail(MB_INVALID_ARGUMENT, "action_count " + std::to_string(action_count) + " is not " + std::to_string(batch) + " × 29");
        }
        const std::string problem = s->model->check_decoder_obs(obs, int64_t(batch));
        if (!problem.empty()) fail(MB_INVALID_ARGUMENT, problem);
        std::lock_guard<std::mutex> lock(s->mutex);
        s->model->decode(*s->state, obs, int64_t(batch), actions);
        return MB_OK;
    });
}

} // namespace

extern "C" {

MB_API mb_status mb_sonic_load(const char * gguf_file, const mb_runtime_options * options, mb_sonic ** output,
                               char * error, uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        require(output, "output");
        *output = nullptr;
        require(gguf_file, "gguf_file");
        const mb_runtime_options opts = options ? *options : mb_runtime_options{};
        if (opts.precision != MB_PRECISION_F32) fail(MB_BACKEND_UNAVAILABLE, "SONIC computes in F32 only");
        if (opts.device == MB_DEVICE_VULKAN) fail(MB_BACKEND_UNAVAILABLE, "this build has no Vulkan backend");
        if (opts.device == MB_DEVICE_CUDA) {
            const std::string problem = mb::backend_cuda_problem(int(std::min<uint32_t>(opts.ordinal, INT32_MAX)));
            if (!problem.empty()) fail(MB_BACKEND_UNAVAILABLE, "MB_DEVICE_CUDA: " + problem);
        }
        const mb::backend_device device = opts.device == MB_DEVICE_CPU    ? mb::backend_device::BACKEND_DEVICE_CPU
                                          : opts.device == MB_DEVICE_CUDA ? mb::backend_device::BACKEND_DEVICE_CUDA
                                                                          : mb::backend_device::BACKEND_DEVICE_AUTO;
        auto s   = std::make_unique<mb_sonic>();
        s->model = sonic::sonic_model::load(gguf_file, int(std::min<uint32_t>(opts.threads, 256)), device,
                                            int(std::min<uint32_t>(opts.ordinal, INT32_MAX)));
        s->state = s->model->create_state();
        *output  = s.release();
        return MB_OK;
    });
}

MB_API void mb_sonic_free(mb_sonic * sonic) {
    delete sonic;
}

MB_API mb_status mb_sonic_encode(mb_sonic * sonic, const float * obs, uint64_t obs_count, float * tokens,
                                 uint64_t token_count, char * error, uint64_t error_capacity) {
    return encode(sonic, obs, obs_count, 1, tokens, token_count, error, error_capacity);
}

MB_API mb_status mb_sonic_decode(mb_sonic * sonic, const float * obs, uint64_t obs_count, float * actions,
                                 uint64_t action_count, char * error, uint64_t error_capacity) {
    return decode(sonic, obs, obs_count, 1, actions, action_count, error, error_capacity);
}

MB_API mb_status mb_sonic_encode_batch(mb_sonic * sonic, const float * obs, uint64_t obs_count, uint32_t batch_size,
                                       float * tokens, uint64_t token_count, char * error, uint64_t error_capacity) {
    return encode(sonic, obs, obs_count, batch_size, tokens, token_count, error, error_capacity);
}

MB_API mb_status mb_sonic_decode_batch(mb_sonic * sonic, const float * obs, uint64_t obs_count, uint32_t batch_size,
                                       float * actions, uint64_t action_count, char * error, uint64_t error_capacity) {
    return decode(sonic, obs, obs_count, batch_size, actions, action_count, error, error_capacity);
}

MB_API mb_status mb_sonic_layer(const mb_sonic * sonic, uint32_t encoder, uint32_t layer, float * data,
                                uint64_t capacity, uint64_t * count, char * error, uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        require(sonic, "sonic");
        require(count, "count");
        if (encoder > 1) fail(MB_INVALID_ARGUMENT, "encoder must be 1 (encoder layers) or 0 (decoder layers)");
        const uint32_t n_layers = encoder ? 5 : 7;
        if (layer >= n_layers) {
            fail(MB_INVALID_ARGUMENT, "layer " + std::to_string(layer) + " is outside 0.." + std::to_string(n_layers - 1));
        }
        std::lock_guard<std::mutex> lock(sonic->mutex);
        const uint64_t n = uint64_t(sonic->model->last_layer(*sonic->state, encoder != 0, int(layer), nullptr));
        *count           = n;
        if (data == nullptr && capacity == 0) return MB_OK;
        require(data, "data");
        if (capacity < n) fail(MB_INVALID_ARGUMENT, "capacity " + std::to_string(capacity) + " is below the layer's " + std::to_string(n) + " values");
        sonic->model->last_layer(*sonic->state, encoder != 0, int(layer), data);
        return MB_OK;
    });
}

} // extern "C"
