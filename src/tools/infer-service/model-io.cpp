// the service's two models as v2 tensors (see model-io.h)
#include "tools/infer-service/model-io.h"

#include <nlohmann/json.hpp>

#include <cstring>
#include <optional>

namespace mb::infer_service {

namespace {

using json = nlohmann::json;

constexpr int64_t k_var    = -1;   // a variable dimension in the metadata
constexpr int64_t k_joints = MB_G1_JOINT_COUNT;

struct io_spec {
    const char *         name;
    dtype                type;      // the metadata's datatype (integers: any integer type is taken)
    std::vector<int64_t> shape;
    bool                 required;
};

const std::vector<io_spec> & infer_inputs() {
    static const std::vector<io_spec> v = {
        {"global_root_values", dtype::FP32, {1, 8, 5}, true},
        {"has_global_root_values", dtype::BOOL, {1, 8}, true},
        {"local_root_values", dtype::FP32, {1, 8, 4}, true},
        {"has_local_root_values", dtype::BOOL, {1, 8}, true},
        {"local_poses", dtype::FP32, {1, 8, 303}, true},
        {"has_local_poses", dtype::BOOL, {1, 8}, true},
        {"num_tokens", dtype::INT32, {1}, false},                // 6..16; 0 or 18: predicted
        {"allowed_pred_num_tokens", dtype::INT32, {1, 11}, false},
        {"seed", dtype::UINT64, {1}, false},
        {"sampling", dtype::BYTES, {1}, false},                  // "gumbel" (default) or "argmax"
        {"num_inference_steps", dtype::INT32, {1}, false},
        {"skip_ending_target_cond", dtype::BOOL, {1}, false},
        {"allow_out_of_reach", dtype::BOOL, {1}, false},
        {"gumbel_uniforms", dtype::FP32, {1, k_var, 16, 8, 10}, false},
    };
    return v;
}

const std::vector<io_spec> & infer_output_specs() {
    static const std::vector<io_spec> v = {
        {"global_features", dtype::FP32, {1, k_var, 414}, false},
        {"joint_positions", dtype::FP32, {1, k_var, k_joints, 3}, false},
        {"local_rotations_xyzw", dtype::FP32, {1, k_var, k_joints, 4}, false},
        {"root_translations", dtype::FP32, {1, k_var, 3}, false},
        {"mujoco_qpos", dtype::FP32, {1, k_var, 36}, false},
        {"num_frames", dtype::INT32, {1}, false},
        {"num_tokens", dtype::INT32, {1}, false},
        {"pose_tokens", dtype::INT32, {1, k_var, 8}, false},
        {"num_token_logits", dtype::FP32, {1, 12}, false},
    };
    return v;
}

const std::vector<io_spec> & agent_inputs() {
    static const std::vector<io_spec> v = {
        {"style", dtype::BYTES, {1}, true},
        {"movement_direction", dtype::FP32, {1, 3}, false},
        {"facing_direction", dtype::FP32, {1, 3}, false},
        {"target_speed", dtype::FP32, {1}, false},
        {"world_target", dtype::FP32, {1, 4}, false},            // x, y, z, heading (radians)
        {"seed", dtype::UINT64, {1}, false},
        {"sampling", dtype::BYTES, {1}, false},                  // "argmax" (default) or "gumbel"
        {"context_root_xyz", dtype::FP32, {1, k_var, 3}, false},
        {"context_local_rotations_xyzw", dtype::FP32, {1, k_var, k_joints, 4}, false},
        {"context_advance", dtype::INT32, {1}, false},           // frames of the context played
    };
    return v;
}

const std::vector<io_spec> & agent_output_specs() {
    static const std::vector<io_spec> v = {
        {"joint_positions", dtype::FP32, {1, k_var, k_joints, 3}, false},
        {"local_rotations_xyzw", dtype::FP32, {1, k_var, k_joints, 4}, false},
        {"root_translations", dtype::FP32, {1, k_var, 3}, false},
        {"mujoco_qpos", dtype::FP32, {1, k_var, 36}, false},
        {"num_frames", dtype::INT32, {1}, false},
        {"context_root_xyz", dtype::FP32, {1, k_var, 3}, false},
        {"context_local_rotations_xyzw", dtype::FP32, {1, k_var, k_joints, 4}, false},
    };
    return v;
}

[[noreturn]] void bad(const std::string & why) { throw request_error(400, why); }

bool is_integer(dtype t) {
    switch (t) {
    case dtype::UINT8: case dtype::UINT16: case dtype::UINT32: case dtype::UINT64:
    case dtype::INT8: case dtype::INT16: case dtype::INT32: case dtype::INT64: return true;
    default: return false;
    }
}

std::string shape_text(const std::vector<int64_t> & s) {
    std::string out = "[";
    for (size_t i = 0; i < s.size(); ++i) out += (i ? "," : "") + (s[i] < 0 ? std::string("-1") : std::to_string(s[i]));
    return out + "]";
}

// the inputs by name, each checked against its spec; unknown names are errors
struct input_map {
    std::map<std::string, const tensor *> by_name;

    input_map(const infer_request & r, const std::vector<io_spec> & specs, const std::string & model) {
        for (const tensor & t : r.inputs) {
            const io_spec * s = nullptr;
            for (const io_spec & e : specs) {
                if (t.name == e.name) s = &e;
            }
            if (!s) bad("model '" + model + "' has no input '" + t.name.substr(0, 64) + "'");
            const bool type_ok = t.type == s->type || (is_integer(s->type) && is_integer(t.type));
            if (!type_ok) {
                bad("input '" + t.name + "' must be " + (is_integer(s->type) ? std::string("an integer datatype") : dtype_name(s->type)) +
                    ", got " + dtype_name(t.type));
            }
            bool shape_ok = t.shape.size() == s->shape.size();
            for (size_t d = 0; shape_ok && d < t.shape.size(); ++d) shape_ok = s->shape[d] < 0 || s->shape[d] == t.shape[d];
            if (!shape_ok) bad("input '" + t.name + "' must have shape " + shape_text(s->shape) + ", got " + shape_text(t.shape));
            by_name[t.name] = &t;
        }
        for (const io_spec & e : specs) {
            if (e.required && !by_name.count(e.name)) bad("input '" + std::string(e.name) + "' is missing");
        }
    }
    const tensor * get(const char * name) const {
        const auto it = by_name.find(name);
        return it == by_name.end() ? nullptr : it->second;
    }
};

std::vector<float> floats(const tensor & t) {
    std::vector<float> v(t.raw.size() / 4);
    if (!v.empty()) std::memcpy(v.data(), t.raw.data(), v.size() * 4);
    return v;
}

// element i of an integer tensor as int64 (UINT64 beyond INT64_MAX clamps: every caller range-checks)
int64_t int_at(const tensor & t, size_t i) {
    const uint8_t * p = t.raw.data() + i * dtype_size(t.type);
    switch (t.type) {
    case dtype::UINT8: return *p;
    case dtype::INT8: return int8_t(*p);
    case dtype::UINT16: { uint16_t v; std::memcpy(&v, p, 2); return v; }
    case dtype::INT16: { int16_t v; std::memcpy(&v, p, 2); return v; }
    case dtype::UINT32: { uint32_t v; std::memcpy(&v, p, 4); return v; }
    case dtype::INT32: { int32_t v; std::memcpy(&v, p, 4); return v; }
    case dtype::INT64: { int64_t v; std::memcpy(&v, p, 8); return v; }
    case dtype::UINT64: { uint64_t v; std::memcpy(&v, p, 8); return v > uint64_t(INT64_MAX) ? INT64_MAX : int64_t(v); }
    default: return 0;
    }
}

uint64_t seed_of(const tensor & t) {
    if (t.type == dtype::UINT64) {
        uint64_t v;
        std::memcpy(&v, t.raw.data(), 8);
        return v;
    }
    const int64_t v = int_at(t, 0);
    if (v < 0) bad("input 'seed' must be >= 0");
    return uint64_t(v);
}

std::vector<uint32_t> bools(const tensor & t) {
    std::vector<uint32_t> v(t.raw.begin(), t.raw.end());
    return v;
}

std::vector<uint32_t> zero_one(const tensor & t) {
    std::vector<uint32_t> v(t.element_count());
    for (size_t i = 0; i < v.size(); ++i) {
        const int64_t x = int_at(t, i);
        if (x != 0 && x != 1) bad("input '" + t.name + "'[" + std::to_string(i) + "] must be 0 or 1");
        v[i] = uint32_t(x);
    }
    return v;
}

bool sampling_argmax(const tensor & t) {
    if (t.strings.size() != 1) bad("input 'sampling' must hold one string");
    if (t.strings[0] == "argmax") return true;
    if (t.strings[0] == "gumbel") return false;
    bad("input 'sampling' must be \"argmax\" or \"gumbel\"");
}

// requested outputs resolved against the model's table; none requested: all of them
std::vector<requested_output> resolve_outputs(const infer_request & r, const std::vector<io_spec> & specs,
                                              const std::string & model) {
    std::vector<requested_output> out;
    if (r.outputs.empty()) {
        for (const io_spec & s : specs) out.push_back({s.name, r.binary_output});
        return out;
    }
    for (const requested_output & o : r.outputs) {
        bool known = false;
        for (const io_spec & s : specs) known = known || o.name == s.name;
        if (!known) bad("model '" + model + "' has no output '" + o.name.substr(0, 64) + "'");
        out.push_back(o);
    }
    return out;
}

// a C ABI call's error as a 400 naming the input
template <class F> void abi(const char * input, F && f) {
    try {
        f();
    } catch (const motionbricks::error & e) {
        bad(std::string("input '") + input + "': " + e.what());
    }
}

json specs_json(const std::vector<io_spec> & specs) {
    json a = json::array();
    for (const io_spec & s : specs) {
        json e = {{"name", s.name}, {"datatype", dtype_name(s.type)}, {"shape", s.shape}};
        if (!s.required && &specs != &infer_output_specs() && &specs != &agent_output_specs()) e["optional"] = true;
        a.push_back(e);
    }
    return a;
}

tensor f32_output(const char * name, std::vector<int64_t> shape, const motionbricks::float_view & v) {
    return make_tensor_f32(name, std::move(shape), v.data, size_t(v.size));
}

// a float view's frames F for rows of `row` floats
int64_t frames_of(const motionbricks::float_view & v, int64_t row) { return int64_t(v.size) / row; }

} // namespace

std::string model_metadata_json(const std::string & name) {
    const bool agent = name == k_model_agent;
    const json j = {{"name", name},
                    {"versions", {k_model_version}},
                    {"platform", "motionbricks"},
                    {"inputs", specs_json(agent ? agent_inputs() : infer_inputs())},
                    {"outputs", specs_json(agent ? agent_output_specs() : infer_output_specs())}};
    return j.dump();
}

infer_job_input decode_infer(const infer_request & r) {
    const input_map in(r, infer_inputs(), k_model_infer);
    infer_job_input job{motionbricks::inference_request(), resolve_outputs(r, infer_output_specs(), k_model_infer)};
    motionbricks::inference_request & q = job.request;
    abi("global_root_values", [&] { q.set_features(MB_INFERENCE_GLOBAL_ROOT, floats(*in.get("global_root_values"))); });
    abi("local_root_values", [&] { q.set_features(MB_INFERENCE_LOCAL_ROOT, floats(*in.get("local_root_values"))); });
    abi("local_poses", [&] { q.set_features(MB_INFERENCE_POSE, floats(*in.get("local_poses"))); });
    abi("has_global_root_values", [&] { q.set_mask(MB_INFERENCE_GLOBAL_ROOT, bools(*in.get("has_global_root_values"))); });
    abi("has_local_root_values", [&] { q.set_mask(MB_INFERENCE_LOCAL_ROOT, bools(*in.get("has_local_root_values"))); });
    abi("has_local_poses", [&] { q.set_mask(MB_INFERENCE_POSE, bools(*in.get("has_local_poses"))); });
    if (const tensor * t = in.get("allowed_pred_num_tokens")) {
        abi("allowed_pred_num_tokens", [&] { q.set_mask(MB_INFERENCE_DURATIONS, zero_one(*t)); });
    }
    if (const tensor * t = in.get("num_tokens")) {
        const int64_t n = int_at(*t, 0);
        if (n != 0 && n != 18 && (n < 6 || n > 16)) bad("input 'num_tokens' must be 6..16, or 0 or 18 (predicted)");
        q.set_token_count(n == 18 ? 0 : uint32_t(n));
    }
    if (const tensor * t = in.get("seed")) q.set_seed(seed_of(*t));
    if (const tensor * t = in.get("sampling")) q.set_sampling_argmax(sampling_argmax(*t));
    if (const tensor * t = in.get("num_inference_steps")) {
        const int64_t n = int_at(*t, 0);
        if (n < 1 || n > 16) bad("input 'num_inference_steps' must be 1..16");
        q.set_inference_steps(uint32_t(n));
    }
    if (const tensor * t = in.get("skip_ending_target_cond")) q.set_skip_ending_target_cond(t->raw[0] != 0);
    if (const tensor * t = in.get("allow_out_of_reach")) q.set_allow_out_of_reach(t->raw[0] != 0);
    if (const tensor * t = in.get("gumbel_uniforms")) {
        abi("gumbel_uniforms", [&] { q.set_gumbel_uniforms(floats(*t)); });
    }
    return job;
}

agent_job_input decode_agent(const infer_request & r, const std::map<std::string, motionbricks::style> & styles) {
    const input_map in(r, agent_inputs(), k_model_agent);
    agent_job_input job;
    job.outputs = resolve_outputs(r, agent_output_specs(), k_model_agent);
    const tensor & st = *in.get("style");
    if (st.strings.size() != 1) bad("input 'style' must hold one string");
    const auto it = styles.find(st.strings[0]);
    if (it == styles.end()) bad("input 'style': no style named '" + st.strings[0].substr(0, 64) + "' is loaded");
    job.style = it->second.get();
    motionbricks::command & c = job.command;
    c.set_style(job.style);
    c.set_sampling_argmax(true);   // the demo agent's sampling
    const auto vec3 = [&](const char * name, auto set) {
        if (const tensor * t = in.get(name)) {
            const std::vector<float> v = floats(*t);
            abi(name, [&] { set(v); });
        }
    };
    vec3("movement_direction", [&](const std::vector<float> & v) { c.set_movement_direction(v[0], v[1], v[2]); });
    vec3("facing_direction", [&](const std::vector<float> & v) { c.set_facing_direction(v[0], v[1], v[2]); });
    vec3("target_speed", [&](const std::vector<float> & v) { c.set_target_speed(v[0]); });
    vec3("world_target", [&](const std::vector<float> & v) { c.set_world_target(v[0], v[1], v[2], v[3], true); });
    if (const tensor * t = in.get("seed")) c.set_seed(seed_of(*t));
    if (const tensor * t = in.get("sampling")) c.set_sampling_argmax(sampling_argmax(*t));

    const tensor * roots = in.get("context_root_xyz");
    const tensor * xyzw  = in.get("context_local_rotations_xyzw");
    const tensor * adv   = in.get("context_advance");
    if (!roots != !xyzw) bad("inputs 'context_root_xyz' and 'context_local_rotations_xyzw' go together");
    if (adv && !roots) bad("input 'context_advance' needs a context");
    if (roots) {
        const int64_t frames = roots->shape[1];
        if (xyzw->shape[1] != frames) bad("the context inputs differ in frame count");
        if (frames < 4) bad("the context needs at least 4 frames");
        // the next plan starts from the 4 frames at the cursor: keep frames [0, cursor + 4)
        int64_t cursor = frames - 4;
        if (adv) {
            const int64_t a = int_at(*adv, 0);
            if (a < 0) bad("input 'context_advance' must be >= 0");
            cursor = std::min(a, frames - 4);
        }
        job.context_roots = floats(*roots);
        job.context_xyzw  = floats(*xyzw);
        job.context_roots.resize(size_t(cursor + 4) * 3);
        job.context_xyzw.resize(size_t(cursor + 4) * size_t(k_joints) * 4);
    }
    return job;
}

std::vector<tensor> infer_outputs(const motionbricks::motion & m, const std::vector<requested_output> & want) {
    std::vector<tensor> out;
    const int64_t       F = int64_t(m.frame_count());
    for (const requested_output & w : want) {
        const std::string & n = w.name;
        tensor              t;
        if (n == "global_features") t = f32_output("global_features", {1, F, 414}, m.global_features());
        else if (n == "joint_positions") t = f32_output("joint_positions", {1, F, k_joints, 3}, m.joint_positions());
        else if (n == "local_rotations_xyzw") t = f32_output("local_rotations_xyzw", {1, F, k_joints, 4}, m.local_rotations_xyzw());
        else if (n == "root_translations") t = f32_output("root_translations", {1, F, 3}, m.root_translations());
        else if (n == "mujoco_qpos") t = f32_output("mujoco_qpos", {1, frames_of(m.mujoco_qpos(), 36), 36}, m.mujoco_qpos());
        else if (n == "num_frames") {
            const int32_t v = int32_t(F);
            t = make_tensor_i32("num_frames", {1}, &v, 1);
        } else if (n == "num_tokens") {
            const int32_t v = int32_t(m.token_count());
            t = make_tensor_i32("num_tokens", {1}, &v, 1);
        } else if (n == "pose_tokens") {
            const auto tok = m.tokens();
            t = make_tensor_i32("pose_tokens", {1, int64_t(tok.second / 8), 8}, tok.first, size_t(tok.second));
        } else if (n == "num_token_logits") {
            const motionbricks::float_view l = m.duration_logits();
            t = f32_output("num_token_logits", {1, int64_t(l.size)}, l);
        }
        t.binary = w.binary;
        out.push_back(std::move(t));
    }
    return out;
}

std::vector<tensor> agent_outputs(const motionbricks::motion & plan, const motionbricks::motion & history,
                                  const std::vector<requested_output> & want) {
    std::vector<tensor> out;
    const int64_t       F = int64_t(plan.frame_count()), H = int64_t(history.frame_count());
    for (const requested_output & w : want) {
        const std::string & n = w.name;
        tensor              t;
        if (n == "joint_positions") t = f32_output("joint_positions", {1, F, k_joints, 3}, plan.joint_positions());
        else if (n == "local_rotations_xyzw") t = f32_output("local_rotations_xyzw", {1, F, k_joints, 4}, plan.local_rotations_xyzw());
        else if (n == "root_translations") t = f32_output("root_translations", {1, F, 3}, plan.root_translations());
        else if (n == "mujoco_qpos") t = f32_output("mujoco_qpos", {1, frames_of(plan.mujoco_qpos(), 36), 36}, plan.mujoco_qpos());
        else if (n == "num_frames") {
            const int32_t v = int32_t(F);
            t = make_tensor_i32("num_frames", {1}, &v, 1);
        } else if (n == "context_root_xyz") t = f32_output("context_root_xyz", {1, H, 3}, history.root_translations());
        else if (n == "context_local_rotations_xyzw") {
            t = f32_output("context_local_rotations_xyzw", {1, H, k_joints, 4}, history.local_rotations_xyzw());
        }
        t.binary = w.binary;
        out.push_back(std::move(t));
    }
    return out;
}

motionbricks::inference_request warmup_request() {
    motionbricks::inference_request q;
    std::vector<float>              g(40, 0.0f);
    for (int f = 0; f < 8; ++f) {
        g[size_t(f) * 5 + 1] = 0.8f;   // pelvis height
        g[size_t(f) * 5 + 3] = 1.0f;   // cos(heading)
    }
    std::vector<float> l(32, 0.0f);
    for (int f = 0; f < 8; ++f) l[size_t(f) * 4 + 3] = 0.8f;
    q.set_features(MB_INFERENCE_GLOBAL_ROOT, g);
    q.set_features(MB_INFERENCE_LOCAL_ROOT, l);
    q.set_features(MB_INFERENCE_POSE, std::vector<float>(2424, 0.0f));
    q.set_sampling_argmax(true);
    return q;
}

} // namespace mb::infer_service
