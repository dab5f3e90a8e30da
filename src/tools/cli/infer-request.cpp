// the `motionbricks infer` request reader: strict JSON (docs/FORMATS.md, "Inference request") →
// infer_request. Every field is required, unknown fields are errors, every number is checked.
#include "tools/cli/infer-request.h"

#include "format/json-bounded.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <set>

namespace mb::cli {

namespace {

using json = nlohmann::json;

constexpr size_t k_tokens = 16, k_heads = 8, k_codes = 10;   // one step of Gumbel uniforms
static_assert(k_tokens * k_heads * k_codes == k_request_uniforms);

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
void matrix(const json & j, const char * key, size_t rows, size_t cols, std::vector<float> & dst) {
    const json & a = array_of(field(j, key), rows, key);
    dst.assign(rows * cols, 0.0f);
    for (size_t r = 0; r < rows; ++r) {
        const std::string rw = std::string(key) + "[" + std::to_string(r) + "]";
        const json & row = array_of(a[r], cols, rw);
        for (size_t c = 0; c < cols; ++c) dst[r * cols + c] = number(row[c], rw + "[" + std::to_string(c) + "]");
    }
}

// [n] of 0/1 (integers or booleans)
void mask(const json & v, const std::string & where, size_t n, std::vector<uint32_t> & dst) {
    array_of(v, n, where);
    dst.assign(n, 0);
    for (size_t i = 0; i < n; ++i) {
        const json & e = v[i];
        const std::string w = where + "[" + std::to_string(i) + "]";
        if (e.is_boolean()) {
            dst[i] = e.get<bool>() ? 1 : 0;
        } else if (e.is_number_integer() && (e.get<int64_t>() == 0 || e.get<int64_t>() == 1)) {
            dst[i] = uint32_t(e.get<int64_t>());
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

infer_request parse_infer_request(const std::string & text) {
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

    infer_request r;
    matrix(j, "global_root", k_request_slots, 5, r.global_root);
    matrix(j, "local_root", k_request_slots, 4, r.local_root);
    matrix(j, "poses", k_request_slots, k_request_pose_dim, r.poses);
    mask(j["global_root_mask"], "global_root_mask", k_request_slots, r.global_root_mask);
    mask(j["local_root_mask"], "local_root_mask", k_request_slots, r.local_root_mask);
    mask(j["pose_mask"], "pose_mask", k_request_slots, r.pose_mask);

    const json & nt = j["num_tokens"];
    if (nt.is_null()) {
        r.token_count = 0;
    } else if (nt.is_number_integer() && nt.get<int64_t>() >= 6 && nt.get<int64_t>() <= 16) {
        r.token_count = uint32_t(nt.get<int64_t>());
    } else {
        throw bad_request("num_tokens must be null or an integer 6..16");
    }
    if (!j["allowed_num_tokens"].is_null()) {
        mask(j["allowed_num_tokens"], "allowed_num_tokens", k_request_durations, r.durations);
    }

    const json & smp = j["sampling"];
    if (smp == "argmax") {
        r.sampling_argmax = true;
    } else if (smp == "gumbel") {
        r.sampling_argmax = false;
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
    r.inference_steps         = uint32_t(steps.get<int64_t>());
    r.skip_ending_target_cond = boolean(j, "skip_ending_target_cond");
    r.allow_out_of_reach      = boolean(j, "allow_out_of_reach");

    // [steps][16][8][10] uniforms in [0, 1]
    const json & gu = j["gumbel_uniforms"];
    if (!gu.is_null()) {
        if (r.sampling_argmax) throw bad_request("gumbel_uniforms must be null with argmax");
        array_of(gu, size_t(r.inference_steps), "gumbel_uniforms");
        r.gumbel_uniforms.reserve(size_t(r.inference_steps) * k_request_uniforms);
        for (size_t s = 0; s < gu.size(); ++s) {
            const std::string ws = "gumbel_uniforms[" + std::to_string(s) + "]";
            for (size_t t = 0; t < k_tokens; ++t) {
                const std::string wt = ws + "[" + std::to_string(t) + "]";
                const json & rt = array_of(array_of(gu[s], k_tokens, ws)[t], k_heads, wt);
                for (size_t h = 0; h < k_heads; ++h) {
                    const std::string wh = wt + "[" + std::to_string(h) + "]";
                    const json & rh = array_of(rt[h], k_codes, wh);
                    for (size_t c = 0; c < k_codes; ++c) {
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
