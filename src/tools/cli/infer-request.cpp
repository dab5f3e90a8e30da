// the `motionbricks infer` request reader: strict JSON (docs/FORMATS.md, "Inference request") →
// predict_request. Every field is required, unknown fields are errors, every number is checked.
#include "tools/cli/infer-request.h"

#include "format/json-bounded.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <set>

namespace mb::cli {

namespace {

using json = nlohmann::json;

const json & field(const json & j, const char * key) {
    return j.at(key);
}

// a number as float: finite, |v| <= 1e4
float number(const json & v, const std::string & where) {
    if (!v.is_number()) throw bad_request(where + " must be a number");
    const double d = v.get<double>();
    if (!std::isfinite(d)) throw bad_request(where + " is not finite");
    if (std::fabs(d) > 1e4) throw bad_request(where + " = " + std::to_string(d) + " exceeds |v| <= 1e4");
    return float(d);
}

// an array of exactly n elements
const json & array_of(const json & v, size_t n, const std::string & where) {
    if (!v.is_array()) throw bad_request(where + " must be an array");
    if (v.size() != n) {
        throw bad_request(where + " has " + std::to_string(v.size()) + " entries, expected " + std::to_string(n));
    }
    return v;
}

// [rows][cols] numbers into dst (row-major)
template <size_t N>
void matrix(const json & j, const char * key, size_t rows, size_t cols, std::array<float, N> & dst) {
    const json & a = array_of(field(j, key), rows, key);
    for (size_t r = 0; r < rows; ++r) {
        const std::string rw = std::string(key) + "[" + std::to_string(r) + "]";
        const json & row = array_of(a[r], cols, rw);
        for (size_t c = 0; c < cols; ++c) dst[r * cols + c] = number(row[c], rw + "[" + std::to_string(c) + "]");
    }
}

// [n] of 0/1 (integers or booleans)
template <size_t N>
void mask(const json & v, const std::string & where, std::array<uint8_t, N> & dst) {
    array_of(v, N, where);
    for (size_t i = 0; i < N; ++i) {
        const json & e = v[i];
        const std::string w = where + "[" + std::to_string(i) + "]";
        if (e.is_boolean()) {
            dst[i] = e.get<bool>() ? 1 : 0;
        } else if (e.is_number_integer() && (e.get<int64_t>() == 0 || e.get<int64_t>() == 1)) {
            dst[i] = uint8_t(e.get<int64_t>());
        } else {
            throw bad_request(w + " must be 0 or 1");
        }
    }
}

bool boolean(const json & j, const char * key) {
    const json & v = field(j, key);
    if (!v.is_boolean()) throw bad_request(std::string(key) + " must be true or false");
    return v.get<bool>();
}

} // namespace

predict_request parse_infer_request(const std::string & text) {
    json j;
    try {
        j = json_parse_bounded(text, k_request_bounds);
    } catch (const json_input_error & e) {
        throw bad_request(e.what());
    }
    if (!j.is_object()) throw bad_request("the request must be a JSON object");

    // exactly the documented fields
    static const std::set<std::string> keys = {
        "format", "global_root", "global_root_mask", "local_root", "local_root_mask", "poses", "pose_mask",
        "num_tokens", "allowed_num_tokens", "sampling", "seed", "gumbel_uniforms", "num_inference_steps",
        "skip_ending_target_cond", "allow_out_of_reach",
    };
    for (auto it = j.begin(); it != j.end(); ++it) {
        if (!keys.count(it.key())) throw bad_request("unknown field '" + it.key() + "'");
    }
    for (const std::string & k : keys) {
        if (!j.contains(k)) throw bad_request("missing field '" + k + "'");
    }
    if (!j["format"].is_string() || j["format"].get<std::string>() != k_request_format) {
        throw bad_request(std::string("format must be \"") + k_request_format + "\"");
    }

    predict_request r;
    matrix(j, "global_root", k_constraint_frames, 5, r.global_root);
    matrix(j, "local_root", k_constraint_frames, 4, r.local_root);
    matrix(j, "poses", k_constraint_frames, k_pose_dim, r.poses);
    mask(j["global_root_mask"], "global_root_mask", r.global_root_mask);
    mask(j["local_root_mask"], "local_root_mask", r.local_root_mask);
    mask(j["pose_mask"], "pose_mask", r.pose_mask);

    const json & nt = j["num_tokens"];
    if (nt.is_null()) {
        r.num_tokens = 0;
    } else if (nt.is_number_integer() && nt.get<int64_t>() >= k_min_tokens && nt.get<int64_t>() <= k_max_tokens) {
        r.num_tokens = int(nt.get<int64_t>());
    } else {
        throw bad_request("num_tokens must be null or an integer 6..16");
    }
    if (!j["allowed_num_tokens"].is_null()) mask(j["allowed_num_tokens"], "allowed_num_tokens", r.allowed_num_tokens);

    const json & smp = j["sampling"];
    if (smp == "argmax") {
        r.sampling = sampling_mode::SAMPLING_MODE_ARGMAX;
    } else if (smp == "gumbel") {
        r.sampling = sampling_mode::SAMPLING_MODE_GUMBEL;
    } else {
        throw bad_request("sampling must be \"argmax\" or \"gumbel\"");
    }
    if (!j["seed"].is_number_unsigned() && !(j["seed"].is_number_integer() && j["seed"].get<int64_t>() >= 0)) {
        throw bad_request("seed must be an unsigned 64-bit integer");
    }
    r.seed = j["seed"].get<uint64_t>();

    const json & steps = j["num_inference_steps"];
    if (!steps.is_number_integer() || steps.get<int64_t>() < 1 || steps.get<int64_t>() > 16) {
        throw bad_request("num_inference_steps must be an integer 1..16");
    }
    r.num_inference_steps     = int(steps.get<int64_t>());
    r.skip_ending_target_cond = boolean(j, "skip_ending_target_cond");
    r.allow_out_of_reach      = boolean(j, "allow_out_of_reach");

    // [steps][16][8][10] uniforms in [0, 1]
    const json & gu = j["gumbel_uniforms"];
    if (!gu.is_null()) {
        if (r.sampling != sampling_mode::SAMPLING_MODE_GUMBEL) throw bad_request("gumbel_uniforms must be null with argmax");
        array_of(gu, size_t(r.num_inference_steps), "gumbel_uniforms");
        r.gumbel_uniforms.reserve(size_t(r.num_inference_steps) * k_max_tokens * k_token_heads * k_token_codes);
        for (size_t s = 0; s < gu.size(); ++s) {
            const std::string ws = "gumbel_uniforms[" + std::to_string(s) + "]";
            for (size_t t = 0; t < size_t(k_max_tokens); ++t) {
                const std::string wt = ws + "[" + std::to_string(t) + "]";
                const json & rt = array_of(array_of(gu[s], k_max_tokens, ws)[t], k_token_heads, wt);
                for (size_t h = 0; h < size_t(k_token_heads); ++h) {
                    const std::string wh = wt + "[" + std::to_string(h) + "]";
                    const json & rh = array_of(rt[h], k_token_codes, wh);
                    for (size_t c = 0; c < size_t(k_token_codes); ++c) {
                        const float u = number(rh[c], wh + "[" + std::to_string(c) + "]");
                        if (!(u >= 0.0f && u <= 1.0f)) throw bad_request(wh + "[" + std::to_string(c) + "] is outside [0, 1]");
                        r.gumbel_uniforms.push_back(u);
                    }
                }
            }
        }
    }
    return r;
}

} // namespace mb::cli
