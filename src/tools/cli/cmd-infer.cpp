// motionbricks infer: one inference through the C ABI (mb_model_infer, so the library's one output
// check applies) from a request JSON file to a result JSON file (formats in docs/FORMATS.md,
// "Inference request / result"). Exit codes: 0 ok, 1 runtime failure (missing or unreadable bundle,
// compute or non-finite results, I/O), 2 bad usage, bad request, or a bundle that is malformed or
// whose components do not fit together. Nothing is written unless the whole call succeeds; the
// result is renamed into place.
// --trace writes the library's taps of the same inference (mb_model_infer_traced).
#include "format/regular-file.h"
#include "tools/cli/motion-output.h"
#include "tools/cli/commands.h"
#include "tools/cli/load-model.h"
#include "tools/cli/infer-request.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <unistd.h>
#include <vector>

namespace mb::cli {

namespace {

constexpr const char * k_result_format  = "motionbricks-inference-result-v1";
constexpr const char * k_trace_format   = "motionbricks-trace-v1";
constexpr int          k_fps               = 30;
constexpr int          k_token_heads       = 8;
constexpr int          k_global_features   = 414;
constexpr int          k_joints            = int(MB_G1_JOINT_COUNT);

using json = nlohmann::json;

// the arrays --trace writes (the library taps more): predict's stage boundaries, the root
// planner's transformer outputs and the pose decoder's per-step records
constexpr const char * k_trace_names[] = {
    "norm_global_root_values", "norm_local_root_values", "norm_local_poses", "root_shared_tf_out",
    "root_token_tf_out", "num_token_logits", "pred_global_root_values", "pred_local_root_values", "pose_cond",
    "has_pose_cond", "pose_root_cond", "step_pose_tokens_in", "step_remask_prob_in", "step_pose_logits",
    "pred_pose_tokens", "decoder_external_cond", "decoder_has_target_cond", "decoder_codes", "decoder_recon_state",
    "pred_local_poses", "pred_global_poses_before_reapply", "pred_global_poses", "joint_positions",
};

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

std::string result_json(const motionbricks::motion & m) {
    const size_t F = size_t(m.frame_count()), n = size_t(m.token_count());
    const std::pair<const int32_t *, uint64_t> tokens = m.tokens();
    const motionbricks::float_view             logits = m.duration_logits();
    std::string s = "{\"format\":\"";
    s += k_result_format;
    s += "\",\n\"num_tokens\":" + std::to_string(n) + ",\n\"frames\":" + std::to_string(F) +
         ",\n\"fps\":" + std::to_string(k_fps) + ",\n\"tokens\":";
    put_array(s, tokens.first, {n, size_t(k_token_heads)});
    s += ",\n\"num_token_logits\":";
    put_array(s, logits.data, {size_t(logits.size)});
    s += ",\n\"global_features\":";
    put_array(s, m.global_features().data, {F, size_t(k_global_features)});
    s += ",\n\"root_translations\":";
    put_array(s, m.root_translations().data, {F, size_t(3)});
    s += ",\n\"local_rotations_xyzw\":";
    put_array(s, m.local_rotations_xyzw().data, {F, size_t(k_joints), size_t(4)});
    s += ",\n\"joint_positions\":";
    put_array(s, m.joint_positions().data, {F, size_t(k_joints), size_t(3)});
    s += "}\n";
    return s;
}

// the parsed request as a C ABI request; the library validates it again
motionbricks::inference_request to_abi_request(const infer_request & r) {
    motionbricks::inference_request q;
    q.set_features(MB_INFERENCE_GLOBAL_ROOT, r.global_root);
    q.set_features(MB_INFERENCE_LOCAL_ROOT, r.local_root);
    q.set_features(MB_INFERENCE_POSE, r.poses);
    q.set_mask(MB_INFERENCE_GLOBAL_ROOT, r.global_root_mask);
    q.set_mask(MB_INFERENCE_LOCAL_ROOT, r.local_root_mask);
    q.set_mask(MB_INFERENCE_POSE, r.pose_mask);
    q.set_mask(MB_INFERENCE_DURATIONS, r.durations);
    q.set_seed(r.seed);
    q.set_sampling_argmax(r.sampling_argmax);
    q.set_token_count(r.token_count);
    q.set_inference_steps(r.inference_steps);
    q.set_gumbel_uniforms(r.gumbel_uniforms);
    q.set_skip_ending_target_cond(r.skip_ending_target_cond);
    q.set_allow_out_of_reach(r.allow_out_of_reach);
    return q;
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

int usage() {
    std::fprintf(stderr,
                 "usage: motionbricks infer --model DIR --request REQUEST.json --output RESULT.json|.csv|.npz %s "
                 "[--trace DIR] %s\n",
                 tools::k_model_options_usage, qpos_options_usage());
    return 2;
}

} // namespace

int cmd_infer(int argc, char ** argv) {
    std::string model_dir, request_path, output_path, trace_dir;
    tools::model_options mopt;
    qpos_output qout;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (i + 1 >= argc) {
            std::fprintf(stderr, "motionbricks infer: '%s' needs a value\n", a.c_str());
            return usage();
        }
        const std::string v = argv[++i];
        if (const int r = tools::parse_model_option("infer", a, v, mopt); r != 0) {
            if (r < 0) return 2;
        } else if (a == "--model") {
            model_dir = v;
        } else if (a == "--request") {
            request_path = v;
        } else if (a == "--output") {
            output_path = v;
        } else if (a == "--trace") {
            trace_dir = v;
        } else if (const int r = parse_qpos_option("infer", a, v, qout); r != 0) {
            if (r < 0) return 2;
        } else {
            std::fprintf(stderr, "motionbricks infer: unknown option '%s'\n", a.c_str());
            return usage();
        }
    }
    if (model_dir.empty() || request_path.empty() || output_path.empty()) return usage();

    infer_request req;
    try {
        req = parse_infer_request(read_regular_file(request_path, k_request_bounds.max_bytes));
    } catch (const std::exception & e) {
        std::fprintf(stderr, "motionbricks infer: bad request: %s\n", e.what());
        return 2;
    }

    int                                load_exit = 0;
    std::optional<motionbricks::model> model     = load_model("infer", model_dir, mopt, load_exit);
    if (!model) return load_exit;

    // --trace: the library's taps of the same inference (mb_model_infer_traced), filtered to the
    // arrays the trace format lists; "step_" arrays come once per decoding step, [1, …], and are
    // stacked into one [steps, …] file
    std::vector<trace_array> traced;
    const auto tap = [](void * user, const char * name, const float * data, const uint64_t * shape, uint32_t n_dims) {
        auto & out = *static_cast<std::vector<trace_array> *>(user);
        if (std::find_if(std::begin(k_trace_names), std::end(k_trace_names),
                         [&](const char * n) { return std::strcmp(n, name) == 0; }) == std::end(k_trace_names)) {
            return;
        }
        std::vector<int64_t> dims(shape, shape + n_dims);
        int64_t              count = 1;
        for (int64_t d : dims) count *= d;
        for (trace_array & t : out) {
            if (t.name != name || t.shape.empty() || dims.empty()) continue;
            t.shape[0] += dims[0];
            t.data.insert(t.data.end(), data, data + count);
            return;
        }
        out.push_back({std::string(name), dims, std::vector<float>(data, data + count)});
    };
    std::optional<motionbricks::motion> res;
    try {
        const motionbricks::inference_request q = to_abi_request(req);
        if (trace_dir.empty()) {
            res = motionbricks::infer(*model, q);
        } else {
            mb_motion * out = nullptr;
            char        message[512];
            const mb_status st = mb_model_infer_traced(model->get(), q.get(), tap, &traced, &out, message, sizeof message);
            if (st != MB_OK) throw motionbricks::error(st, message);
            res.emplace(out);
        }
    } catch (const motionbricks::error & e) {
        if (e.status() == MB_INVALID_ARGUMENT) {
            std::fprintf(stderr, "motionbricks infer: bad request: %s\n", e.what());
            return 2;
        }
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
            const auto ms = [&](uint32_t stage) { return double(res->stage_time_ms(stage)); };
            manifest["timings_ms"] = {{"prepare", ms(MB_STAGE_PREPARE)}, {"root", ms(MB_STAGE_ROOT)},
                                      {"pose", ms(MB_STAGE_POSE)},       {"decoder", ms(MB_STAGE_DECODER)},
                                      {"finish", ms(MB_STAGE_FINISH)},   {"total", ms(MB_STAGE_TOTAL)}};
            write_atomic(trace_dir + "/trace.json", manifest.dump(1) + "\n");
        }
        if (is_qpos_output(output_path)) {
            write_qpos_output(output_path, res->mujoco_qpos().data, res->frame_count(), qout);
        } else {
            write_atomic(output_path, result_json(*res));
        }
    } catch (const std::exception & e) {
        std::fprintf(stderr, "motionbricks infer: %s\n", e.what());
        return 1;
    }
    std::fprintf(stderr, "motionbricks infer: %llu tokens, %llu frames in %.1f ms (root %.1f, pose %.1f, decoder %.1f)\n",
                 (unsigned long long) res->token_count(), (unsigned long long) res->frame_count(),
                 double(res->stage_time_ms(MB_STAGE_TOTAL)), double(res->stage_time_ms(MB_STAGE_ROOT)),
                 double(res->stage_time_ms(MB_STAGE_POSE)), double(res->stage_time_ms(MB_STAGE_DECODER)));
    return 0;
}

} // namespace mb::cli
