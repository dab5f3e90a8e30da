// inference.h entry points: stateless requests, the pose-level boundary adapter,
// mb_model_infer and mb_model_infer_batch
#include "capi/capi-error.h"
#include "capi/handles.h"
#include "capi/lane-parallel.h"

#include "motion/boundary-poses.h"
#include "motion/predict.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <cstdlib>
#include <span>
#include <string>
#include <vector>

using mb::capi::fail;
using mb::capi::guard;
using mb::capi::require;

namespace {

constexpr float    k_max_abs_feature = 1.0e4f;
constexpr double   k_heading_tol     = 0.02;   // |cos² + sin² − 1| of enabled global-root slots

const char * field_name(uint32_t field) {
    switch (field) {
        case MB_INFERENCE_GLOBAL_ROOT: return "MB_INFERENCE_GLOBAL_ROOT";
        case MB_INFERENCE_LOCAL_ROOT:  return "MB_INFERENCE_LOCAL_ROOT";
        case MB_INFERENCE_POSE:        return "MB_INFERENCE_POSE";
        case MB_INFERENCE_DURATIONS:   return "MB_INFERENCE_DURATIONS";
        default:                       return "unknown field";
    }
}

// the feature storage of a field; empty for durations and unknown fields
std::span<float> features_of(mb_inference_request & r, uint32_t field) {
    switch (field) {
        case MB_INFERENCE_GLOBAL_ROOT: return r.global_root;
        case MB_INFERENCE_LOCAL_ROOT:  return r.local_root;
        case MB_INFERENCE_POSE:        return r.poses;
        default:                       return {};
    }
}

std::span<uint8_t> mask_of(mb_inference_request & r, uint32_t field) {
    switch (field) {
        case MB_INFERENCE_GLOBAL_ROOT: return r.global_root_mask;
        case MB_INFERENCE_LOCAL_ROOT:  return r.local_root_mask;
        case MB_INFERENCE_POSE:        return r.pose_mask;
        case MB_INFERENCE_DURATIONS:   return r.durations;
        default:                       return {};
    }
}

void check_field(uint32_t field, bool mask) {
    const uint32_t last = mask ? MB_INFERENCE_DURATIONS : MB_INFERENCE_POSE;
    if (field > last) {
        fail(MB_INVALID_ARGUMENT,
             "field " + std::to_string(field) + (mask ? " is not a mask field (0..3)" : " is not a feature field (0..2)"));
    }
}

// shared body of get_features / get_mask: copies `src` out, converting to T
template <class T, class S>
void copy_out(std::span<const S> src, T * data, uint64_t capacity, uint64_t * count, uint32_t field) {
    *count = uint64_t(src.size());
    if (data == nullptr && capacity == 0) {
        return;   // size query
    }
    if (data == nullptr) {
        fail(MB_INVALID_ARGUMENT, "data is NULL but capacity is " + std::to_string(capacity));
    }
    if (capacity < src.size()) {
        fail(MB_INVALID_ARGUMENT, std::string(field_name(field)) + " needs capacity " + std::to_string(src.size()) +
                                      ", got " + std::to_string(capacity));
    }
    for (size_t i = 0; i < src.size(); ++i) {
        data[i] = T(src[i]);
    }
}

// the complete check of a request before anything runs, then its predict form
mb::predict_request to_predict_request(const mb_model & model, const mb_inference_request & r) {
    static const char * const names[3] = {"global root", "local root", "pose"};
    for (int f = 0; f < 3; ++f) {
        for (int b = 0; b < 2; ++b) {
            if (!r.supplied[f][b]) {
                fail(MB_INVALID_ARGUMENT, std::string("request has no ") + names[f] + " features for the " +
                                              (b == 0 ? "source" : "target") +
                                              " boundary: set all three feature fields or both boundary poses");
            }
        }
    }
    if (r.global_root_mask[0] == 0) {
        fail(MB_INVALID_ARGUMENT, "global-root slot 0 must be enabled");
    }
    if (std::none_of(r.durations.begin(), r.durations.end(), [](uint8_t v) { return v != 0; })) {
        fail(MB_INVALID_ARGUMENT, "no duration is enabled");
    }
    for (int s = 0; s < mb::k_constraint_frames; ++s) {
        if (r.global_root_mask[s] == 0) {
            continue;
        }
        const double c = r.global_root[s * 5 + 3], sn = r.global_root[s * 5 + 4];
        if (std::fabs(c * c + sn * sn - 1.0) > k_heading_tol) {
            fail(MB_INVALID_ARGUMENT, "global-root slot " + std::to_string(s) + " has cos/sin (" + std::to_string(c) +
                                          ", " + std::to_string(sn) + ") whose squared norm is not 1 ± 0.02");
        }
    }

    mb::predict_request p;
    p.global_root      = r.global_root;
    p.global_root_mask = r.global_root_mask;
    p.local_root       = r.local_root;
    p.local_root_mask  = r.local_root_mask;
    p.poses            = r.poses;
    p.pose_mask        = r.pose_mask;
    p.num_tokens       = int(r.token_count);   // 0: predicted, the argmax over the allowed durations
    p.allowed_num_tokens = r.durations;
    p.sampling = r.sampling_argmax != 0 ? mb::sampling_mode::SAMPLING_MODE_ARGMAX : mb::sampling_mode::SAMPLING_MODE_GUMBEL;
    p.seed     = r.seed;
    p.gumbel_uniforms         = r.gumbel_uniforms;
    p.num_inference_steps     = int(r.inference_steps);
    p.skip_ending_target_cond = r.skip_ending_target_cond != 0;
    p.allow_out_of_reach      = r.allow_out_of_reach != 0;

    const std::string problem = model.net->validate(p);
    if (!problem.empty()) {
        fail(MB_INVALID_ARGUMENT, "invalid request: " + problem);
    }
    return p;
}

// runs one validated request on a state from the model's pool; trace may be empty
std::unique_ptr<mb_motion> run_one(const mb_model & model, const mb::predict_request & p,
                                   const mb::trace_fn & trace = {}) {
    return mb::capi::motion_from_result(model.net->predict(p, trace));
}

} // namespace

extern "C" {

// ---- requests --------------------------------------------------------------------------------

MB_API mb_status mb_inference_request_create(mb_inference_request ** output, char * error, uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        require(output, "output");
        *output = nullptr;
        *output = new mb_inference_request();
        return MB_OK;
    });
}

MB_API void mb_inference_request_free(mb_inference_request * request) {
    delete request;
}

MB_API mb_status mb_inference_request_set_features(mb_inference_request * request, uint32_t field, const float * data,
                                                   uint64_t count, char * error, uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        require(request, "request");
        check_field(field, false);
        require(data, "data");
        std::span<float> dst = features_of(*request, field);
        if (count != dst.size()) {
            fail(MB_INVALID_ARGUMENT, std::string(field_name(field)) + " needs exactly " + std::to_string(dst.size()) +
                                          " floats, got " + std::to_string(count));
        }
        for (size_t i = 0; i < dst.size(); ++i) {
            if (!std::isfinite(data[i]) || std::fabs(data[i]) > k_max_abs_feature) {
                fail(MB_INVALID_ARGUMENT, std::string(field_name(field)) + "[" + std::to_string(i) + "] = " +
                                              std::to_string(data[i]) + " is not finite or exceeds 1e4 in magnitude");
            }
        }
        std::copy_n(data, dst.size(), dst.begin());
        request->supplied[field] = {true, true};
        return MB_OK;
    });
}

MB_API mb_status mb_inference_request_get_features(const mb_inference_request * request, uint32_t field,
                                                   float * data, uint64_t capacity, uint64_t * count, char * error,
                                                   uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        require(request, "request");
        require(count, "count");
        *count = 0;
        check_field(field, false);
        auto & r = const_cast<mb_inference_request &>(*request);
        copy_out<float, float>(features_of(r, field), data, capacity, count, field);
        return MB_OK;
    });
}

MB_API mb_status mb_inference_request_set_mask(mb_inference_request * request, uint32_t field, const uint32_t * data,
                                               uint64_t count, char * error, uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        require(request, "request");
        check_field(field, true);
        require(data, "data");
        std::span<uint8_t> dst = mask_of(*request, field);
        if (count != dst.size()) {
            fail(MB_INVALID_ARGUMENT, std::string(field_name(field)) + " mask needs exactly " +
                                          std::to_string(dst.size()) + " entries, got " + std::to_string(count));
        }
        bool any = false;
        for (size_t i = 0; i < dst.size(); ++i) {
            if (data[i] > 1) {
                fail(MB_INVALID_ARGUMENT, std::string(field_name(field)) + " mask[" + std::to_string(i) + "] = " +
                                              std::to_string(data[i]) + " is not 0 or 1");
            }
            any = any || data[i] != 0;
        }
        if (field == MB_INFERENCE_DURATIONS && !any) {
            fail(MB_INVALID_ARGUMENT, "at least one duration must be enabled");
        }
        if (field == MB_INFERENCE_GLOBAL_ROOT && data[0] == 0) {
            fail(MB_INVALID_ARGUMENT, "global-root slot 0 must stay enabled (it anchors position and heading)");
        }
        for (size_t i = 0; i < dst.size(); ++i) {
            dst[i] = uint8_t(data[i]);
        }
        return MB_OK;
    });
}

MB_API mb_status mb_inference_request_get_mask(const mb_inference_request * request, uint32_t field, uint32_t * data,
                                               uint64_t capacity, uint64_t * count, char * error,
                                               uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        require(request, "request");
        require(count, "count");
        *count = 0;
        check_field(field, true);
        auto & r = const_cast<mb_inference_request &>(*request);
        copy_out<uint32_t, uint8_t>(mask_of(r, field), data, capacity, count, field);
        return MB_OK;
    });
}

MB_API mb_status mb_inference_request_set_seed(mb_inference_request * request, uint64_t seed, char * error,
                                               uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        require(request, "request");
        request->seed = seed;
        return MB_OK;
    });
}

MB_API mb_status mb_inference_request_get_seed(const mb_inference_request * request, uint64_t * seed, char * error,
                                               uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        require(request, "request");
        require(seed, "seed");
        *seed = request->seed;
        return MB_OK;
    });
}

MB_API mb_status mb_inference_request_set_sampling_argmax(mb_inference_request * request, uint32_t enabled,
                                                          char * error, uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        require(request, "request");
        if (enabled > 1) {
            fail(MB_INVALID_ARGUMENT, "sampling argmax must be 0 (Gumbel) or 1 (argmax), got " + std::to_string(enabled));
        }
        request->sampling_argmax = enabled;
        return MB_OK;
    });
}

MB_API mb_status mb_inference_request_get_sampling_argmax(const mb_inference_request * request, uint32_t * enabled,
                                                          char * error, uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        require(request, "request");
        require(enabled, "enabled");
        *enabled = request->sampling_argmax;
        return MB_OK;
    });
}

MB_API mb_status mb_inference_request_set_boundary_poses(mb_inference_request * request, const mb_model * model,
                                                         uint32_t boundary, const float * roots, uint64_t root_count,
                                                         const float * local_xyzw, uint64_t rotation_count,
                                                         char * error, uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        require(request, "request");
        require(model, "model");
        require(roots, "roots");
        require(local_xyzw, "local_xyzw");
        if (boundary > 1) {
            fail(MB_INVALID_ARGUMENT, "boundary must be 0 (source) or 1 (target), got " + std::to_string(boundary));
        }
        if (root_count != 12) {
            fail(MB_INVALID_ARGUMENT, "roots need exactly 12 floats ([4, 3]), got " + std::to_string(root_count));
        }
        if (rotation_count != 544) {
            fail(MB_INVALID_ARGUMENT, "local_xyzw needs exactly 544 floats ([4, 34, 4]), got " +
                                          std::to_string(rotation_count));
        }
        // encode first (throws mb::error, invalid_argument), then copy: a failure leaves the request unchanged
        const auto kind = boundary == 0 ? mb::boundary_kind::BOUNDARY_KIND_SOURCE : mb::boundary_kind::BOUNDARY_KIND_TARGET;
        const mb::boundary_features enc =
            mb::encode_boundary_poses(model->support(), kind, {roots, size_t(root_count)}, {local_xyzw, size_t(rotation_count)});

        const size_t slot0 = size_t(boundary) * mb::k_boundary_frames;
        std::copy(enc.global_root.begin(), enc.global_root.end(), request->global_root.begin() + slot0 * 5);
        std::copy(enc.local_root.begin(), enc.local_root.end(), request->local_root.begin() + slot0 * 4);
        std::copy(enc.poses.begin(), enc.poses.end(), request->poses.begin() + slot0 * mb::k_pose_dim);
        for (size_t i = 0; i < size_t(mb::k_boundary_frames); ++i) {
            request->global_root_mask[slot0 + i] = 1;
            request->local_root_mask[slot0 + i]  = enc.local_root_mask[i];
            request->pose_mask[slot0 + i]        = 1;
        }
        for (auto & f : request->supplied) {
            f[boundary] = true;
        }
        return MB_OK;
    });
}

// ---- inference -------------------------------------------------------------------------------

MB_API mb_status mb_model_infer(const mb_model * model, const mb_inference_request * request, mb_motion ** output,
                                char * error, uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        require(output, "output");
        *output = nullptr;
        require(model, "model");
        require(request, "request");
        const mb::predict_request p = to_predict_request(*model, *request);
        std::unique_ptr<mb_motion> m = run_one(*model, p);
        *output = m.release();
        return MB_OK;
    });
}

MB_API mb_status mb_model_infer_traced(const mb_model * model, const mb_inference_request * request,
                                       mb_tap_callback tap, void * user, mb_motion ** output, char * error,
                                       uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        require(output, "output");
        *output = nullptr;
        require(model, "model");
        require(request, "request");
        if (tap == nullptr) {
            fail(MB_INVALID_ARGUMENT, "tap is NULL");
        }
        const mb::predict_request p = to_predict_request(*model, *request);
        std::string               name;     // NUL-terminated copy of the current name
        std::vector<uint64_t>     shape;
        const mb::trace_fn trace = [&](std::string_view n, const float * data, const std::vector<int64_t> & s) {
            name.assign(n);
            shape.assign(s.begin(), s.end());
            tap(user, name.c_str(), data, shape.data(), uint32_t(shape.size()));
        };
        std::unique_ptr<mb_motion> m = run_one(*model, p, trace);
        *output = m.release();
        return MB_OK;
    });
}

MB_API mb_status mb_model_infer_batch(const mb_model * model, const mb_inference_request * const * requests,
                                      uint64_t count, mb_motion ** outputs, char * error, uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        mb::capi::begin_batch(outputs, count);
        require(model, "model");
        require(requests, "requests");

        // validate every lane before any runs
        for (uint64_t i = 0; i < count; ++i) {
            if (requests[i] == nullptr) {
                fail(MB_INVALID_ARGUMENT, "requests[" + std::to_string(i) + "] is NULL");
            }
        }
        std::vector<mb::predict_request> lanes(static_cast<size_t>(count));
        mb::capi::for_each_request(lanes.size(), [&](size_t i) {
            try {
                lanes[i] = to_predict_request(*model, *requests[i]);
            } catch (const mb::error & e) {
                fail(e.code(), "requests[" + std::to_string(i) + "]: " + e.what());
            }
        });

        // fused lanes (chunks of batch_lanes()); nothing is published unless all succeed. Each
        // result becomes its motion as soon as its chunk's host steps finish, on that chunk's
        // threads, while other chunks still compute, on a GPU; an error there names its request like
        // an inference error
        std::vector<mb::predict_result> results(lanes.size());
        std::vector<std::unique_ptr<mb_motion>> motions(static_cast<size_t>(count));
        // on a GPU (chunks in flight, each with host threads); the CPU's chunks run one at a time
        const bool in_chunks = model->net->batch_states() > 1;
        const auto convert = [&](size_t i) { motions[i] = mb::capi::motion_from_result(std::move(results[i])); };
        size_t failed = SIZE_MAX;
        const auto lane_text = [&]() { return failed == SIZE_MAX ? std::string("batch: ") : "requests[" + std::to_string(failed) + "]: "; };
        try {
            model->net->predict_batch(lanes, results, &failed, in_chunks ? std::function<void(size_t)>(convert) : nullptr);
        } catch (const std::bad_alloc &) {
            throw;
        } catch (const mb::error & e) {
            fail(e.code(), lane_text() + e.what());
        } catch (const std::exception & e) {
            fail(MB_COMPUTE_FAILED, lane_text() + "inference failed: " + e.what());
        }
        if (!in_chunks) {
            mb::capi::for_each_request(results.size(), [&](size_t i) {
                try {
                    convert(i);
                } catch (const mb::error & e) {
                    fail(e.code(), "requests[" + std::to_string(i) + "]: " + e.what());
                }
            });
        }
        for (size_t i = 0; i < motions.size(); ++i) {
            outputs[i] = motions[i].release();
        }
        return MB_OK;
    });
}

// ---- request extras (not in the reference runtime) ---------------------------------------------

namespace {

uint32_t check_flag(const char * what, uint32_t enabled) {
    if (enabled > 1) {
        fail(MB_INVALID_ARGUMENT, std::string(what) + " must be 0 or 1, got " + std::to_string(enabled));
    }
    return enabled;
}

} // namespace

MB_API mb_status mb_inference_request_set_token_count(mb_inference_request * request, uint32_t count, char * error,
                                                      uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        require(request, "request");
        if (count != 0 && (count < uint32_t(mb::k_min_tokens) || count > uint32_t(mb::k_max_tokens))) {
            fail(MB_INVALID_ARGUMENT, "token count must be 0 (predicted) or 6..16, got " + std::to_string(count));
        }
        request->token_count = count;
        return MB_OK;
    });
}

MB_API mb_status mb_inference_request_set_inference_steps(mb_inference_request * request, uint32_t steps,
                                                          char * error, uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        require(request, "request");
        if (steps < 1 || steps > 16) {
            fail(MB_INVALID_ARGUMENT, "inference steps must be 1..16, got " + std::to_string(steps));
        }
        request->inference_steps = steps;
        return MB_OK;
    });
}

MB_API mb_status mb_inference_request_set_gumbel_uniforms(mb_inference_request * request, const float * data,
                                                          uint64_t count, char * error, uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        require(request, "request");
        constexpr uint64_t per_step = uint64_t(mb::k_max_tokens) * mb::k_token_heads * mb::k_token_codes;
        if (count == 0) {
            request->gumbel_uniforms.clear();
            return MB_OK;
        }
        require(data, "data");
        if (count % per_step != 0 || count / per_step > 16) {
            fail(MB_INVALID_ARGUMENT, "gumbel uniforms need steps * 1280 floats (steps 1..16), got " + std::to_string(count));
        }
        for (uint64_t i = 0; i < count; ++i) {
            if (!(data[i] >= 0.0f && data[i] <= 1.0f)) {
                fail(MB_INVALID_ARGUMENT, "gumbel uniform [" + std::to_string(i) + "] is outside [0, 1]");
            }
        }
        request->gumbel_uniforms.assign(data, data + count);
        return MB_OK;
    });
}

MB_API mb_status mb_inference_request_set_skip_ending_target_cond(mb_inference_request * request, uint32_t enabled,
                                                                  char * error, uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        require(request, "request");
        request->skip_ending_target_cond = check_flag("skip_ending_target_cond", enabled);
        return MB_OK;
    });
}

MB_API mb_status mb_inference_request_set_allow_out_of_reach(mb_inference_request * request, uint32_t enabled,
                                                             char * error, uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        require(request, "request");
        request->allow_out_of_reach = check_flag("allow_out_of_reach", enabled);
        return MB_OK;
    });
}

} // extern "C"
