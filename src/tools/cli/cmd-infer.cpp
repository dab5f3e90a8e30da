// motionbricks infer: one predict from a request JSON file to a result JSON file
// (formats in docs/FORMATS.md, "Inference request / result"). Exit codes: 0 ok,
// 1 runtime failure (model load, compute, I/O), 2 bad usage or bad request.
// Nothing is written unless the whole call succeeds; the result is renamed into place.
#include "format/bundle.h"
#include "motion/predict.h"
#include "tools/cli/commands.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <stdexcept>
#include <string>
#include <unistd.h>
#include <vector>

namespace mb::cli {

namespace {

constexpr const char * k_request_format = "motionbricks-inference-request-v1";
constexpr const char * k_result_format  = "motionbricks-inference-result-v1";
constexpr const char * k_trace_format   = "motionbricks-trace-v1";
constexpr uint64_t     k_max_request_bytes = uint64_t(64) << 20;

// a request problem: exit code 2
struct bad_request : std::runtime_error {
    using std::runtime_error::runtime_error;
};

using json = nlohmann::json;

// ---- request ---------------------------------------------------------------------------------

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

predict_request parse_request(const std::string & text) {
    json j;
    try {
        j = json::parse(text);
    } catch (const json::parse_error & e) {
        throw bad_request(std::string("not valid JSON: ") + e.what());
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

// ---- output ----------------------------------------------------------------------------------

// shortest text that reads back as the same float; non-finite → null
void put_float(std::string & out, float v) {
    if (!std::isfinite(v)) {
        out += "null";
        return;
    }
    char buf[32];
    const auto res = std::to_chars(buf, buf + sizeof(buf), v);
    out.append(buf, res.ptr);
}

// nested arrays of `data` with the given shape
template <typename T>
void put_array(std::string & out, const T * data, const std::vector<size_t> & shape, size_t dim = 0) {
    size_t stride = 1;
    for (size_t d = dim + 1; d < shape.size(); ++d) stride *= shape[d];
    out += '[';
    for (size_t i = 0; i < shape[dim]; ++i) {
        if (i) out += ',';
        if (dim + 1 < shape.size()) {
            put_array(out, data + i * stride, shape, dim + 1);
        } else if constexpr (std::is_same_v<T, float>) {
            put_float(out, data[i]);
        } else {
            out += std::to_string(data[i]);
        }
    }
    out += ']';
}

std::string result_json(const predict_result & r) {
    const size_t F = size_t(r.frames), n = size_t(r.num_tokens);
    std::string s = "{\"format\":\"";
    s += k_result_format;
    s += "\",\n\"num_tokens\":" + std::to_string(r.num_tokens) + ",\n\"frames\":" + std::to_string(r.frames) +
         ",\n\"fps\":" + std::to_string(k_motion_fps) + ",\n\"tokens\":";
    put_array(s, r.tokens.data(), {n, size_t(k_token_heads)});
    s += ",\n\"num_token_logits\":";
    put_array(s, r.num_token_logits.data(), {r.num_token_logits.size()});
    s += ",\n\"global_features\":";
    put_array(s, r.global_features.data(), {F, size_t(k_global_dim)});
    s += ",\n\"root_translations\":";
    put_array(s, r.root_translations.data(), {F, size_t(3)});
    s += ",\n\"local_rotations_xyzw\":";
    put_array(s, r.local_rotations_xyzw.data(), {F, size_t(k_n_joints), size_t(4)});
    s += ",\n\"joint_positions\":";
    put_array(s, r.joint_positions.data(), {F, size_t(k_n_joints), size_t(3)});
    s += "}\n";
    return s;
}

// writes `bytes` to `path` through a temporary file in the same directory and a rename
void write_atomic(const std::string & path, const std::string & bytes) {
    const std::string tmp = path + ".tmp." + std::to_string(::getpid());
    FILE * f = std::fopen(tmp.c_str(), "wb");
    if (!f) throw std::runtime_error("cannot create '" + tmp + "': " + std::strerror(errno));
    const bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size() && std::fflush(f) == 0 &&
                    ::fsync(::fileno(f)) == 0;
    const bool closed = std::fclose(f) == 0;
    if (!ok || !closed || std::rename(tmp.c_str(), path.c_str()) != 0) {
        const std::string err = std::strerror(errno);
        std::remove(tmp.c_str());
        throw std::runtime_error("cannot write '" + path + "': " + err);
    }
}

// one .npy (float32, C order, format 1.0) image
std::string npy_bytes(const float * data, const std::vector<int64_t> & shape) {
    std::string dims;
    int64_t count = 1;
    for (int64_t d : shape) {
        dims += std::to_string(d) + ",";
        count *= d;
    }
    if (shape.size() > 1) dims.pop_back();
    std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + dims + "), }";
    while ((10 + header.size() + 1) % 64 != 0) header += ' ';
    header += '\n';
    std::string out = "\x93NUMPY";
    out += char(1);
    out += char(0);
    out += char(header.size() & 0xFF);
    out += char((header.size() >> 8) & 0xFF);
    out += header;
    out.append(reinterpret_cast<const char *>(data), size_t(count) * sizeof(float));
    return out;
}

struct trace_array {
    std::string          name;
    std::vector<int64_t> shape;
    std::vector<float>   data;
};

std::string read_file(const std::string & path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) throw bad_request("cannot open request '" + path + "'");
    f.seekg(0, std::ios::end);
    const std::streamoff size = f.tellg();
    if (size < 0 || uint64_t(size) > k_max_request_bytes) throw bad_request("request '" + path + "' is larger than 64 MiB");
    f.seekg(0);
    std::string s(size_t(size), '\0');
    f.read(s.data(), size);
    if (!f) throw bad_request("cannot read request '" + path + "'");
    return s;
}

int usage() {
    std::fprintf(stderr,
                 "usage: motionbricks infer --model DIR --request REQUEST.json --output RESULT.json [--threads N] "
                 "[--trace DIR]\n");
    return 2;
}

} // namespace

int cmd_infer(int argc, char ** argv) {
    std::string model_dir, request_path, output_path, trace_dir;
    int n_threads = 0;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (i + 1 >= argc) {
            std::fprintf(stderr, "motionbricks infer: '%s' needs a value\n", a.c_str());
            return usage();
        }
        const std::string v = argv[++i];
        if (a == "--model") {
            model_dir = v;
        } else if (a == "--request") {
            request_path = v;
        } else if (a == "--output") {
            output_path = v;
        } else if (a == "--trace") {
            trace_dir = v;
        } else if (a == "--threads") {
            int t = 0;
            const auto res = std::from_chars(v.data(), v.data() + v.size(), t);
            if (res.ec != std::errc() || res.ptr != v.data() + v.size() || t < 1 || t > 1024) {
                std::fprintf(stderr, "motionbricks infer: --threads must be an integer 1..1024\n");
                return 2;
            }
            n_threads = t;
        } else {
            std::fprintf(stderr, "motionbricks infer: unknown option '%s'\n", a.c_str());
            return usage();
        }
    }
    if (model_dir.empty() || request_path.empty() || output_path.empty()) return usage();

    predict_request req;
    try {
        req = parse_request(read_file(request_path));
    } catch (const std::exception & e) {
        std::fprintf(stderr, "motionbricks infer: bad request: %s\n", e.what());
        return 2;
    }

    std::unique_ptr<motion_model> model;
    try {
        model = motion_model::create(bundle_load(model_dir), n_threads);
    } catch (const std::exception & e) {
        std::fprintf(stderr, "motionbricks infer: cannot load model '%s': %s\n", model_dir.c_str(), e.what());
        return 1;
    }
    const std::string problem = model->validate(req);
    if (!problem.empty()) {
        std::fprintf(stderr, "motionbricks infer: bad request: %s\n", problem.c_str());
        return 2;
    }

    std::vector<trace_array> traced;
    trace_fn trace;
    if (!trace_dir.empty()) {
        trace = [&](std::string_view name, const float * data, const std::vector<int64_t> & shape) {
            int64_t count = 1;
            for (int64_t d : shape) count *= d;
            traced.push_back({std::string(name), shape, std::vector<float>(data, data + count)});
        };
    }
    predict_result res;
    try {
        res = model->predict(req, trace);
    } catch (const std::invalid_argument & e) {
        std::fprintf(stderr, "motionbricks infer: bad request: %s\n", e.what());
        return 2;
    } catch (const std::exception & e) {
        std::fprintf(stderr, "motionbricks infer: inference failed: %s\n", e.what());
        return 1;
    }

    try {
        // trace first: the result file appears last, only when everything succeeded
        if (!trace_dir.empty()) {
            std::filesystem::create_directories(trace_dir);
            json manifest = {{"format", k_trace_format}, {"arrays", json::array()}};
            for (size_t i = 0; i < traced.size(); ++i) {
                const trace_array & t = traced[i];
                char prefix[32];
                std::snprintf(prefix, sizeof(prefix), "%02zu-", i);
                const std::string file = prefix + t.name + ".npy";
                write_atomic(trace_dir + "/" + file, npy_bytes(t.data.data(), t.shape));
                manifest["arrays"].push_back({{"name", t.name}, {"file", file}, {"shape", t.shape}});
            }
            const predict_timings & tm = res.timings;
            manifest["timings_ms"] = {{"prepare", tm.prepare_ms}, {"root", tm.root_ms}, {"pose", tm.pose_ms},
                                      {"decoder", tm.decoder_ms}, {"finish", tm.finish_ms}, {"total", tm.total_ms}};
            write_atomic(trace_dir + "/trace.json", manifest.dump(1) + "\n");
        }
        write_atomic(output_path, result_json(res));
    } catch (const std::exception & e) {
        std::fprintf(stderr, "motionbricks infer: %s\n", e.what());
        return 1;
    }
    std::fprintf(stderr, "motionbricks infer: %d tokens, %d frames in %.1f ms (root %.1f, pose %.1f, decoder %.1f)\n",
                 res.num_tokens, res.frames, res.timings.total_ms, res.timings.root_ms, res.timings.pose_ms,
                 res.timings.decoder_ms);
    return 0;
}

} // namespace mb::cli
