// motionbricks.hpp — header-only C++17 wrapper over the C ABI (motionbricks.h, inference.h, sonic.h,
// physics.h).
//
// RAII handles (move-only, freed in the destructor) and exceptions: every failing C call throws
// motionbricks::error carrying the mb_status and the library's message. Nothing here reaches past
// the C ABI, so the wrapper works with any build of libmotionbricks that has ABI version 1.
//
//     motionbricks::runtime_options options;
//     options.set_threads(2);
//     motionbricks::model model = motionbricks::model::load("models/g1-f32", &options);
//     motionbricks::inference_request request;
//     request.set_boundary_poses(model, 0, source_roots, source_xyzw);     // 12 and 544 floats
//     request.set_boundary_poses(model, 1, target_roots, target_xyzw);
//     motionbricks::motion motion = motionbricks::infer(model, request);
//     motionbricks::float_view roots = motion.root_translations();         // [frames, 3]
//
//     motionbricks::style walk = motionbricks::style::load(model, "styles/walk.mbstyle");
//     motionbricks::agent agent(model);                                     // model outlives agent
//     motionbricks::command command;
//     command.set_style(walk);                                              // borrowed
//     command.set_movement_direction(0, 0, 1);
//     motionbricks::motion plan = agent.plan(command);                      // 4 target frames too
//     agent.advance(16);
//
// Thread rules are those of the C ABI: see motionbricks.h.
#pragma once

#include <motionbricks/inference.h>
#include <motionbricks/batch.h>
#include <motionbricks/sonic.h>

#include <array>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace motionbricks {

// a failed C call: status() is the mb_status, what() the library's message
class error : public std::runtime_error {
public:
    error(mb_status status, const std::string & message)
        : std::runtime_error(std::string(mb_status_string(status)) + ": " + message), status_(status) {}
    mb_status status() const noexcept { return status_; }

private:
    mb_status status_;
};

// a borrowed float buffer: valid while the object it came from lives
struct float_view {
    const float * data = nullptr;   // NULL when empty
    uint64_t      size = 0;         // number of floats
    const float * begin() const { return data; }
    const float * end() const { return data + size; }
    float operator[](uint64_t i) const { return data[i]; }
};

namespace detail {

// runs one C call that takes (…, char * error, uint64_t capacity) as its last two arguments
template <class F> void check(F && call) {
    char            message[512];
    const mb_status status = call(message, uint64_t(sizeof message));
    if (status != MB_OK) {
        throw error(status, message);
    }
}

template <class T, void (*Free)(T *)> struct deleter {
    void operator()(T * p) const noexcept { Free(p); }
};

template <class T, void (*Free)(T *)> using handle = std::unique_ptr<T, deleter<T, Free>>;

} // namespace detail

// ---- runtime options ---------------------------------------------------------------------------

class runtime_options {
public:
    runtime_options() {
        mb_runtime_options * p = nullptr;
        detail::check([&](char * e, uint64_t n) { return mb_runtime_options_create(&p, e, n); });
        p_.reset(p);
    }

    void set_device(mb_device device) {
        detail::check([&](char * e, uint64_t n) { return mb_runtime_options_set_device(p_.get(), device, e, n); });
    }
    mb_device device() const {
        mb_device d = MB_DEVICE_AUTO;
        detail::check([&](char * e, uint64_t n) { return mb_runtime_options_get_device(p_.get(), &d, e, n); });
        return d;
    }
    void set_device_ordinal(uint32_t ordinal) {
        detail::check([&](char * e, uint64_t n) { return mb_runtime_options_set_device_ordinal(p_.get(), ordinal, e, n); });
    }
    void set_precision(mb_precision precision) {
        detail::check([&](char * e, uint64_t n) { return mb_runtime_options_set_precision(p_.get(), precision, e, n); });
    }
    mb_precision precision() const {
        mb_precision v = MB_PRECISION_F32;
        detail::check([&](char * e, uint64_t n) { return mb_runtime_options_get_precision(p_.get(), &v, e, n); });
        return v;
    }
    void set_threads(uint32_t threads) {
        detail::check([&](char * e, uint64_t n) { return mb_runtime_options_set_threads(p_.get(), threads, e, n); });
    }
    uint32_t threads() const {
        uint32_t t = 0;
        detail::check([&](char * e, uint64_t n) { return mb_runtime_options_get_threads(p_.get(), &t, e, n); });
        return t;
    }
    void set_backend_directory(const std::string & directory) {
        detail::check([&](char * e, uint64_t n) {
            return mb_runtime_options_set_backend_directory(p_.get(), directory.c_str(), e, n);
        });
    }
    std::string backend_directory() const {
        const char * d = nullptr;
        detail::check([&](char * e, uint64_t n) { return mb_runtime_options_get_backend_directory(p_.get(), &d, e, n); });
        return d != nullptr ? std::string(d) : std::string();
    }

    const mb_runtime_options * get() const noexcept { return p_.get(); }
    mb_runtime_options *       get() noexcept { return p_.get(); }

private:
    detail::handle<mb_runtime_options, mb_runtime_options_free> p_;
};

// ---- model -------------------------------------------------------------------------------------

class model {
public:
    // loads a bundle directory; options may be null (defaults)
    static model load(const std::string & bundle_directory, const runtime_options * options = nullptr) {
        mb_model * p = nullptr;
        detail::check([&](char * e, uint64_t n) {
            return mb_model_load(bundle_directory.c_str(), options != nullptr ? options->get() : nullptr, &p, e, n);
        });
        return model(p);
    }

    mb_device device() const {
        mb_device v = MB_DEVICE_CPU;
        detail::check([&](char * e, uint64_t n) { return mb_model_get_device(p_.get(), &v, e, n); });
        return v;
    }
    mb_precision precision() const {
        mb_precision v = MB_PRECISION_F32;
        detail::check([&](char * e, uint64_t n) { return mb_model_get_precision(p_.get(), &v, e, n); });
        return v;
    }
    // mb_model_get_device_memory: bytes the model holds on its GPU, the GPU's use and size (all 0 on the CPU)
    struct device_memory_use {
        uint64_t model_bytes = 0, device_used_bytes = 0, device_total_bytes = 0;
    };
    device_memory_use device_memory() const {
        device_memory_use v;
        detail::check([&](char * e, uint64_t n) {
            return mb_model_get_device_memory(p_.get(), &v.model_bytes, &v.device_used_bytes, &v.device_total_bytes,
                                              e, n);
        });
        return v;
    }
    // batch.h: the largest batch one call takes, and how many of its lanes run fused at once
    uint64_t batch_limit() const {
        uint64_t v = 0;
        detail::check([&](char * e, uint64_t n) { return mb_model_get_batch_limit(p_.get(), &v, e, n); });
        return v;
    }
    uint64_t batch_lanes() const {
        uint64_t v = 0;
        detail::check([&](char * e, uint64_t n) { return mb_model_get_batch_lanes(p_.get(), &v, e, n); });
        return v;
    }
    uint64_t parameter_count() const {
        uint64_t v = 0;
        detail::check([&](char * e, uint64_t n) { return mb_model_get_parameter_count(p_.get(), &v, e, n); });
        return v;
    }
    uint32_t joint_count() const {
        uint32_t v = 0;
        detail::check([&](char * e, uint64_t n) { return mb_model_get_joint_count(p_.get(), &v, e, n); });
        return v;
    }
    std::string joint_name(uint32_t joint) const {
        const char * s = nullptr;
        detail::check([&](char * e, uint64_t n) { return mb_model_get_joint_name(p_.get(), joint, &s, e, n); });
        return s != nullptr ? std::string(s) : std::string();
    }
    int32_t joint_parent(uint32_t joint) const {
        int32_t v = 0;
        detail::check([&](char * e, uint64_t n) { return mb_model_get_joint_parent(p_.get(), joint, &v, e, n); });
        return v;
    }
    std::array<float, 3> neutral_joint_position(uint32_t joint) const {
        std::array<float, 3> v{};
        detail::check([&](char * e, uint64_t n) {
            return mb_model_get_neutral_joint_position(p_.get(), joint, &v[0], &v[1], &v[2], e, n);
        });
        return v;
    }

    const mb_model * get() const noexcept { return p_.get(); }

private:
    explicit model(mb_model * p) : p_(p) {}
    detail::handle<mb_model, mb_model_free> p_;
};

// ---- style -------------------------------------------------------------------------------------

class style {
public:
    // loads a .mbstyle file; the style keeps no reference to the model
    static style load(const model & m, const std::string & path) {
        mb_style * p = nullptr;
        detail::check([&](char * e, uint64_t n) { return mb_style_load(m.get(), path.c_str(), &p, e, n); });
        return style(p);
    }

    std::string name() const {
        const char * s = nullptr;
        detail::check([&](char * e, uint64_t n) { return mb_style_get_name(p_.get(), &s, e, n); });
        return s != nullptr ? std::string(s) : std::string();
    }
    void set_speed(float metres_per_second) {
        detail::check([&](char * e, uint64_t n) { return mb_style_set_speed(p_.get(), metres_per_second, e, n); });
    }
    float speed() const {
        float v = 0.0f;
        detail::check([&](char * e, uint64_t n) { return mb_style_get_speed(p_.get(), &v, e, n); });
        return v;
    }

    const mb_style * get() const noexcept { return p_.get(); }
    mb_style *       get() noexcept { return p_.get(); }

private:
    explicit style(mb_style * p) : p_(p) {}
    detail::handle<mb_style, mb_style_free> p_;
};

// ---- command -----------------------------------------------------------------------------------

class command {
public:
    command() {
        mb_command * p = nullptr;
        detail::check([&](char * e, uint64_t n) { return mb_command_create(&p, e, n); });
        p_.reset(p);
    }

    // the style is borrowed: it must outlive every plan using this command
    void set_style(const mb_style * style) {
        detail::check([&](char * e, uint64_t n) { return mb_command_set_style(p_.get(), style, e, n); });
    }
    void set_style(const motionbricks::style & s) { set_style(s.get()); }
    const mb_style * style() const {
        const mb_style * s = nullptr;
        detail::check([&](char * e, uint64_t n) { return mb_command_get_style(p_.get(), &s, e, n); });
        return s;
    }
    void set_movement_direction(float x, float y, float z) {
        detail::check([&](char * e, uint64_t n) { return mb_command_set_movement_direction(p_.get(), x, y, z, e, n); });
    }
    std::array<float, 3> movement_direction() const {
        std::array<float, 3> v{};
        detail::check([&](char * e, uint64_t n) {
            return mb_command_get_movement_direction(p_.get(), &v[0], &v[1], &v[2], e, n);
        });
        return v;
    }
    void set_facing_direction(float x, float y, float z) {
        detail::check([&](char * e, uint64_t n) { return mb_command_set_facing_direction(p_.get(), x, y, z, e, n); });
    }
    std::array<float, 3> facing_direction() const {
        std::array<float, 3> v{};
        detail::check([&](char * e, uint64_t n) {
            return mb_command_get_facing_direction(p_.get(), &v[0], &v[1], &v[2], e, n);
        });
        return v;
    }
    void set_target_speed(float metres_per_second) {
        detail::check([&](char * e, uint64_t n) { return mb_command_set_target_speed(p_.get(), metres_per_second, e, n); });
    }
    float target_speed() const {
        float v = 0.0f;
        detail::check([&](char * e, uint64_t n) { return mb_command_get_target_speed(p_.get(), &v, e, n); });
        return v;
    }
    void set_world_target(float x, float y, float z, float heading_radians, bool enabled) {
        detail::check([&](char * e, uint64_t n) {
            return mb_command_set_world_target(p_.get(), x, y, z, heading_radians, enabled ? 1u : 0u, e, n);
        });
    }
    struct world_target_value {
        std::array<float, 3> position{};         // m
        float                heading_radians = 0.0f;
        bool                 enabled         = false;
    };
    world_target_value world_target() const {
        world_target_value v;
        uint32_t           enabled = 0;
        detail::check([&](char * e, uint64_t n) {
            return mb_command_get_world_target(p_.get(), &v.position[0], &v.position[1], &v.position[2],
                                               &v.heading_radians, &enabled, e, n);
        });
        v.enabled = enabled != 0;
        return v;
    }
    void set_seed(uint64_t seed) {
        detail::check([&](char * e, uint64_t n) { return mb_command_set_seed(p_.get(), seed, e, n); });
    }
    uint64_t seed() const {
        uint64_t v = 0;
        detail::check([&](char * e, uint64_t n) { return mb_command_get_seed(p_.get(), &v, e, n); });
        return v;
    }
    void set_sampling_argmax(bool enabled) {
        detail::check([&](char * e, uint64_t n) { return mb_command_set_sampling_argmax(p_.get(), enabled ? 1u : 0u, e, n); });
    }
    bool sampling_argmax() const {
        uint32_t v = 0;
        detail::check([&](char * e, uint64_t n) { return mb_command_get_sampling_argmax(p_.get(), &v, e, n); });
        return v != 0;
    }

    const mb_command * get() const noexcept { return p_.get(); }

private:
    detail::handle<mb_command, mb_command_free> p_;
};

// ---- motion ------------------------------------------------------------------------------------

class motion {
public:
    // takes ownership of a motion returned by the C ABI
    explicit motion(mb_motion * p) noexcept : p_(p) {}

    uint64_t frame_count() const { return get_u64(mb_motion_get_frame_count); }
    uint64_t joint_count() const { return get_u64(mb_motion_get_joint_count); }
    uint64_t target_frame_count() const { return get_u64(mb_motion_get_target_frame_count); }
    float_view root_translations() const { return get_view(mb_motion_get_root_translations); }
    float_view local_rotations_xyzw() const { return get_view(mb_motion_get_local_rotations_xyzw); }
    float_view joint_positions() const { return get_view(mb_motion_get_joint_positions); }
    float_view mujoco_qpos() const { return get_view(mb_motion_get_mujoco_qpos); }
    float_view target_root_translations() const { return get_view(mb_motion_get_target_root_translations); }
    float_view target_local_rotations_xyzw() const { return get_view(mb_motion_get_target_local_rotations_xyzw); }
    float_view target_joint_positions() const { return get_view(mb_motion_get_target_joint_positions); }
    float_view duration_logits() const { return get_view(mb_motion_get_duration_logits); }
    float_view global_features() const { return get_view(mb_motion_get_global_features); }
    uint64_t   token_count() const { return get_u64(mb_motion_get_token_count); }
    // [n, 8] pose tokens, borrowed like the float views
    std::pair<const int32_t *, uint64_t> tokens() const {
        const int32_t * data = nullptr;
        uint64_t        size = 0;
        detail::check([&](char * e, uint64_t n) { return mb_motion_get_tokens(p_.get(), &data, &size, e, n); });
        return {data, size};
    }
    // the style of an agent plan's targets ("" for stateless inference)
    std::string style_name() const {
        const char * s = nullptr;
        detail::check([&](char * e, uint64_t n) { return mb_motion_get_style_name(p_.get(), &s, e, n); });
        return s != nullptr ? std::string(s) : std::string();
    }
    // ms of one MB_STAGE_*
    float stage_time_ms(uint32_t stage) const {
        float v = 0.0f;
        detail::check([&](char * e, uint64_t n) { return mb_motion_get_stage_time_ms(p_.get(), stage, &v, e, n); });
        return v;
    }

    const mb_motion * get() const noexcept { return p_.get(); }
    mb_motion *       release() noexcept { return p_.release(); }

private:
    using u64_getter  = mb_status (*)(const mb_motion *, uint64_t *, char *, uint64_t);
    using view_getter = mb_status (*)(const mb_motion *, const float **, uint64_t *, char *, uint64_t);

    uint64_t get_u64(u64_getter f) const {
        uint64_t v = 0;
        detail::check([&](char * e, uint64_t n) { return f(p_.get(), &v, e, n); });
        return v;
    }
    float_view get_view(view_getter f) const {
        float_view v;
        detail::check([&](char * e, uint64_t n) { return f(p_.get(), &v.data, &v.size, e, n); });
        return v;
    }

    detail::handle<mb_motion, mb_motion_free> p_;
};

// ---- agent -------------------------------------------------------------------------------------

class agent {
public:
    // the model is borrowed: it must outlive the agent
    explicit agent(const model & m) {
        mb_agent * p = nullptr;
        detail::check([&](char * e, uint64_t n) { return mb_agent_create(m.get(), &p, e, n); });
        p_.reset(p);
    }

    // history from the style's clip (copied); reset(nullptr) clears the history
    void reset(const mb_style * initial_style) {
        detail::check([&](char * e, uint64_t n) { return mb_agent_reset(p_.get(), initial_style, e, n); });
    }
    void reset(const style & initial_style) { reset(initial_style.get()); }
    // roots [frames, 3] and local_xyzw [frames, 34, 4], frames >= 4; the last 4 frames are used
    void set_context(const std::vector<float> & roots, const std::vector<float> & local_xyzw) {
        const uint64_t frames = roots.size() / 3;
        if (roots.size() != frames * 3 || local_xyzw.size() != frames * MB_G1_JOINT_COUNT * 4) {
            throw error(MB_INVALID_ARGUMENT, "set_context: roots must hold frames * 3 floats and local_xyzw frames * 136");
        }
        detail::check([&](char * e, uint64_t n) {
            return mb_agent_set_context(p_.get(), roots.data(), local_xyzw.data(), frames, MB_G1_JOINT_COUNT, e, n);
        });
    }
    // upstream's walk → walk_left / walk_right remap (styles copied); clear_sidestep_styles() removes it
    void set_sidestep_styles(const style & walk_left, const style & walk_right) {
        detail::check([&](char * e, uint64_t n) {
            return mb_agent_set_sidestep_styles(p_.get(), walk_left.get(), walk_right.get(), e, n);
        });
    }
    void clear_sidestep_styles() {
        detail::check([&](char * e, uint64_t n) { return mb_agent_set_sidestep_styles(p_.get(), nullptr, nullptr, e, n); });
    }
    // MuJoCo qpos [frames, 36], frames >= 4; the last 4 frames are used
    void set_context_qpos(const float * qpos, uint64_t frames) {
        detail::check([&](char * e, uint64_t n) { return mb_agent_set_context_qpos(p_.get(), qpos, frames, e, n); });
    }
    uint64_t cursor() const {
        uint64_t v = 0;
        detail::check([&](char * e, uint64_t n) { return mb_agent_get_cursor(p_.get(), &v, e, n); });
        return v;
    }
    // a copy of the whole history as a motion
    motion history() const {
        mb_motion * out = nullptr;
        detail::check([&](char * e, uint64_t n) { return mb_agent_get_history(p_.get(), &out, e, n); });
        return motion(out);
    }
    std::array<float, 3> facing_direction() const {
        std::array<float, 3> v{};
        detail::check([&](char * e, uint64_t n) {
            return mb_agent_get_facing_direction(p_.get(), &v[0], &v[1], &v[2], e, n);
        });
        return v;
    }
    bool replan_due(const command & c) const {
        uint32_t v = 0;
        detail::check([&](char * e, uint64_t n) { return mb_agent_get_replan_due(p_.get(), c.get(), &v, e, n); });
        return v != 0;
    }
    motion plan(const command & c) {
        mb_motion * out = nullptr;
        detail::check([&](char * e, uint64_t n) { return mb_agent_plan(p_.get(), c.get(), &out, e, n); });
        return motion(out);
    }
    void advance(uint32_t frames) {
        detail::check([&](char * e, uint64_t n) { return mb_agent_advance(p_.get(), frames, e, n); });
    }

    const mb_agent * get() const noexcept { return p_.get(); }
    mb_agent *       get() noexcept { return p_.get(); }

private:
    detail::handle<mb_agent, mb_agent_free> p_;
};

// plans 1..64 distinct agents of one model; all or nothing
inline std::vector<motion> plan_batch(const std::vector<agent *> & agents, const std::vector<const command *> & commands) {
    if (agents.size() != commands.size()) {
        throw error(MB_INVALID_ARGUMENT, "plan_batch: agents and commands differ in length");
    }
    std::vector<mb_agent *>         a;
    std::vector<const mb_command *> c;
    for (size_t i = 0; i < agents.size(); ++i) {
        a.push_back(agents[i] != nullptr ? agents[i]->get() : nullptr);
        c.push_back(commands[i] != nullptr ? commands[i]->get() : nullptr);
    }
    std::vector<mb_motion *> out(agents.size(), nullptr);
    detail::check([&](char * e, uint64_t n) {
        return mb_agent_plan_batch(a.data(), c.data(), a.size(), out.empty() ? nullptr : out.data(), e, n);
    });
    std::vector<motion> motions;
    motions.reserve(out.size());
    for (mb_motion * p : out) {
        motions.emplace_back(p);
    }
    return motions;
}

// ---- stateless inference -----------------------------------------------------------------------

class inference_request {
public:
    inference_request() {
        mb_inference_request * p = nullptr;
        detail::check([&](char * e, uint64_t n) { return mb_inference_request_create(&p, e, n); });
        p_.reset(p);
    }

    void set_features(uint32_t field, const std::vector<float> & values) {
        detail::check([&](char * e, uint64_t n) {
            return mb_inference_request_set_features(p_.get(), field, values.data(), values.size(), e, n);
        });
    }
    std::vector<float> features(uint32_t field) const {
        uint64_t count = 0;
        detail::check([&](char * e, uint64_t n) {
            return mb_inference_request_get_features(p_.get(), field, nullptr, 0, &count, e, n);
        });
        std::vector<float> v(count);
        detail::check([&](char * e, uint64_t n) {
            return mb_inference_request_get_features(p_.get(), field, v.data(), v.size(), &count, e, n);
        });
        return v;
    }
    void set_mask(uint32_t field, const std::vector<uint32_t> & values) {
        detail::check([&](char * e, uint64_t n) {
            return mb_inference_request_set_mask(p_.get(), field, values.data(), values.size(), e, n);
        });
    }
    std::vector<uint32_t> mask(uint32_t field) const {
        uint64_t count = 0;
        detail::check([&](char * e, uint64_t n) {
            return mb_inference_request_get_mask(p_.get(), field, nullptr, 0, &count, e, n);
        });
        std::vector<uint32_t> v(count);
        detail::check([&](char * e, uint64_t n) {
            return mb_inference_request_get_mask(p_.get(), field, v.data(), v.size(), &count, e, n);
        });
        return v;
    }
    void set_seed(uint64_t seed) {
        detail::check([&](char * e, uint64_t n) { return mb_inference_request_set_seed(p_.get(), seed, e, n); });
    }
    uint64_t seed() const {
        uint64_t v = 0;
        detail::check([&](char * e, uint64_t n) { return mb_inference_request_get_seed(p_.get(), &v, e, n); });
        return v;
    }
    void set_sampling_argmax(bool enabled) {
        detail::check([&](char * e, uint64_t n) {
            return mb_inference_request_set_sampling_argmax(p_.get(), enabled ? 1u : 0u, e, n);
        });
    }
    bool sampling_argmax() const {
        uint32_t v = 0;
        detail::check([&](char * e, uint64_t n) { return mb_inference_request_get_sampling_argmax(p_.get(), &v, e, n); });
        return v != 0;
    }
    // 0 = predicted, 6..16 forced
    void set_token_count(uint32_t count) {
        detail::check([&](char * e, uint64_t n) { return mb_inference_request_set_token_count(p_.get(), count, e, n); });
    }
    void set_inference_steps(uint32_t steps) {
        detail::check([&](char * e, uint64_t n) { return mb_inference_request_set_inference_steps(p_.get(), steps, e, n); });
    }
    // [steps, 16, 8, 10] uniforms in [0, 1]; empty clears them
    void set_gumbel_uniforms(const std::vector<float> & values) {
        detail::check([&](char * e, uint64_t n) {
            return mb_inference_request_set_gumbel_uniforms(p_.get(), values.empty() ? nullptr : values.data(),
                                                            values.size(), e, n);
        });
    }
    void set_skip_ending_target_cond(bool enabled) {
        detail::check([&](char * e, uint64_t n) {
            return mb_inference_request_set_skip_ending_target_cond(p_.get(), enabled ? 1u : 0u, e, n);
        });
    }
    void set_allow_out_of_reach(bool enabled) {
        detail::check([&](char * e, uint64_t n) {
            return mb_inference_request_set_allow_out_of_reach(p_.get(), enabled ? 1u : 0u, e, n);
        });
    }
    // boundary 0 = source, 1 = target; roots [4, 3] (12 floats), local_xyzw [4, 34, 4] (544 floats)
    void set_boundary_poses(const model & m, uint32_t boundary, const std::vector<float> & roots,
                            const std::vector<float> & local_xyzw) {
        detail::check([&](char * e, uint64_t n) {
            return mb_inference_request_set_boundary_poses(p_.get(), m.get(), boundary, roots.data(), roots.size(),
                                                           local_xyzw.data(), local_xyzw.size(), e, n);
        });
    }

    const mb_inference_request * get() const noexcept { return p_.get(); }

private:
    detail::handle<mb_inference_request, mb_inference_request_free> p_;
};

// runs one request; the motion outlives the model and the request
inline motion infer(const model & m, const inference_request & request) {
    mb_motion * out = nullptr;
    detail::check([&](char * e, uint64_t n) { return mb_model_infer(m.get(), request.get(), &out, e, n); });
    return motion(out);
}

// runs 1..64 requests; all or nothing
inline std::vector<motion> infer_batch(const model & m, const std::vector<const inference_request *> & requests) {
    std::vector<const mb_inference_request *> raw;
    raw.reserve(requests.size());
    for (const inference_request * r : requests) {
        raw.push_back(r != nullptr ? r->get() : nullptr);
    }
    std::vector<mb_motion *> out(requests.size(), nullptr);
    detail::check([&](char * e, uint64_t n) {
        return mb_model_infer_batch(m.get(), raw.data(), raw.size(), out.empty() ? nullptr : out.data(), e, n);
    });
    std::vector<motion> motions;
    motions.reserve(out.size());
    for (mb_motion * p : out) {
        motions.emplace_back(p);
    }
    return motions;
}

// ---- anim-export.h: motion files and jump ----

// the bytes of a motion file (options.format GLB or BVH)
inline std::vector<uint8_t> write_motion(const motion & m, const mb_motion_write_options & options) {
    uint64_t size = 0;
    detail::check([&](char * e, uint64_t n) { return mb_motion_write(m.get(), &options, nullptr, 0, &size, e, n); });
    std::vector<uint8_t> out(size);
    detail::check([&](char * e, uint64_t n) { return mb_motion_write(m.get(), &options, out.data(), out.size(), &size, e, n); });
    return out;
}

inline void write_motion_file(const motion & m, const std::string & path, const mb_motion_write_options & options) {
    detail::check([&](char * e, uint64_t n) { return mb_motion_write_file(m.get(), path.c_str(), &options, e, n); });
}

inline motion read_motion(const uint8_t * data, uint64_t size, uint32_t format = MB_MOTION_FORMAT_AUTO) {
    mb_motion * out = nullptr;
    detail::check([&](char * e, uint64_t n) { return mb_motion_read(data, size, format, &out, e, n); });
    return motion(out);
}

inline motion read_motion_file(const std::string & path, uint32_t format = MB_MOTION_FORMAT_AUTO) {
    mb_motion * out = nullptr;
    detail::check([&](char * e, uint64_t n) { return mb_motion_read_file(path.c_str(), format, &out, e, n); });
    return motion(out);
}

// root [frames, 3], local rotations x y z w [frames, 34, 4]
inline motion create_motion(const float * root_xyz, const float * local_rotation_xyzw, uint64_t frames) {
    mb_motion * out = nullptr;
    detail::check([&](char * e, uint64_t n) { return mb_motion_create(root_xyz, local_rotation_xyzw, frames, &out, e, n); });
    return motion(out);
}

inline motion plan_jump(agent & a, const command & c) {
    mb_motion * out = nullptr;
    detail::check([&](char * e, uint64_t n) { return mb_agent_plan_jump(a.get(), c.get(), &out, e, n); });
    return motion(out);
}

// ---- motion out to robot stacks (robot-export.h) -----------------------------------------------

// 30 fps qpos [frames, 36] → a CSV or NPZ file (MB_QPOS_FORMAT_*, 30 or 50 Hz, MB_QPOS_* flags)
inline void write_qpos_file(const float * qpos, uint64_t frames, const std::string & path, uint32_t format,
                            uint32_t rate_hz, uint32_t flags) {
    detail::check([&](char * e, uint64_t n) { return mb_qpos_write_file(qpos, frames, path.c_str(), format, rate_hz, flags, e, n); });
}

// a 30 fps qpos CSV or NPZ file → a motion (flags: MB_QPOS_QUAT_XYZW for a CSV without a header)
inline motion read_qpos_file(const std::string & path, uint32_t format, uint32_t flags = 0) {
    mb_motion * out = nullptr;
    detail::check([&](char * e, uint64_t n) { return mb_motion_read_qpos_file(path.c_str(), format, flags, &out, e, n); });
    return motion(out);
}

// 30 fps qpos → a SONIC reference-motion folder at 50 Hz (mjcf "" = the built-in G1 model)
inline void write_sonic_folder(const float * qpos, uint64_t frames, const std::string & directory, const std::string & mjcf = "") {
    detail::check([&](char * e, uint64_t n) {
        return mb_qpos_write_sonic_folder(qpos, frames, directory.c_str(), mjcf.empty() ? nullptr : mjcf.c_str(), e, n);
    });
}

// ---- SONIC policy (sonic.h) --------------------------------------------------------------------

class sonic {
public:
    // a SONIC GGUF; options may be null (defaults)
    static sonic load(const std::string & gguf_file, const runtime_options * options = nullptr) {
        mb_sonic * p = nullptr;
        detail::check([&](char * e, uint64_t n) { return mb_sonic_load(gguf_file.c_str(), options ? options->get() : nullptr, &p, e, n); });
        return sonic(p);
    }

    // batch_size rows of 1762 observations → batch_size · 64 tokens (every row one mode)
    std::vector<float> encode(const float * obs, uint32_t batch_size = 1) {
        std::vector<float> tokens(size_t(batch_size) * MB_SONIC_TOKENS);
        detail::check([&](char * e, uint64_t n) {
            return mb_sonic_encode_batch(p_.get(), obs, uint64_t(batch_size) * MB_SONIC_ENCODER_OBS, batch_size, tokens.data(),
                                         tokens.size(), e, n);
        });
        return tokens;
    }
    // batch_size rows of 994 observations → batch_size · 29 actions (Isaac Lab order)
    std::vector<float> decode(const float * obs, uint32_t batch_size = 1) {
        std::vector<float> actions(size_t(batch_size) * MB_SONIC_ACTIONS);
        detail::check([&](char * e, uint64_t n) {
            return mb_sonic_decode_batch(p_.get(), obs, uint64_t(batch_size) * MB_SONIC_DECODER_OBS, batch_size, actions.data(),
                                         actions.size(), e, n);
        });
        return actions;
    }
    // a layer of the last encode (encoder true) or decode call, [batch, width] pre-activation
    std::vector<float> layer(bool encoder, uint32_t index) const {
        uint64_t count = 0;
        detail::check([&](char * e, uint64_t n) { return mb_sonic_layer(p_.get(), encoder ? 1 : 0, index, nullptr, 0, &count, e, n); });
        std::vector<float> v(count);
        detail::check([&](char * e, uint64_t n) { return mb_sonic_layer(p_.get(), encoder ? 1 : 0, index, v.data(), v.size(), &count, e, n); });
        return v;
    }

    const mb_sonic * get() const noexcept { return p_.get(); }
    mb_sonic *       get() noexcept { return p_.get(); }

private:
    explicit sonic(mb_sonic * p) noexcept : p_(p) {}
    detail::handle<mb_sonic, mb_sonic_free> p_;
};

// ---- simulated G1 (physics.h) ------------------------------------------------------------------

// the 30 bodies [30, 3] in motion space
using physics_bodies = std::array<float, 3 * MB_PHYSICS_BODIES>;

class physics {
public:
    struct status_info {
        double   time     = 0;       // simulated seconds
        bool     fallen   = false;   // sticky until reset
        uint32_t contacts = 0;
    };
    struct table {
        std::array<float, MB_PHYSICS_JOINTS> kp{}, kd{}, default_angles{}, torque_limits{};
    };
    struct state {
        std::vector<double> qpos, qvel;   // nq, nv
    };
    struct pose_value {
        std::array<float, 3>   root{};
        std::array<float, 136> local_xyzw{};   // [34, 4]
    };
    struct scene_info {
        uint32_t    nq = 0, nv = 0, nu = 0;
        std::string placeholders;   // newline-separated mesh files given boxes
    };

    // a session for scene_xml; policy borrowed (it must outlive the session; null: override only);
    // config_file "" = the release's table
    static physics create(sonic * policy, const std::string & scene_xml, const std::string & config_file = "") {
        mb_physics * p = nullptr;
        detail::check([&](char * e, uint64_t n) {
            return mb_physics_create(policy ? policy->get() : nullptr, scene_xml.c_str(), config_file.empty() ? nullptr : config_file.c_str(), &p, e, n);
        });
        return physics(p);
    }

    static std::string engine_version() {
        char v[64] = {0};
        detail::check([&](char * e, uint64_t n) { return mb_physics_engine_version(v, sizeof v, e, n); });
        return v;
    }

    void reset() {
        detail::check([&](char * e, uint64_t n) { return mb_physics_reset(p_.get(), e, n); });
    }
    void start(const pose_value & pose) {
        detail::check([&](char * e, uint64_t n) { return mb_physics_start(p_.get(), pose.root.data(), 3, pose.local_xyzw.data(), 136, e, n); });
    }
    void start_qpos(const std::array<float, MB_PHYSICS_QPOS> & qpos) {
        detail::check([&](char * e, uint64_t n) { return mb_physics_start_qpos(p_.get(), qpos.data(), qpos.size(), e, n); });
    }

    // one tick towards a G1Skeleton34 clip (roots [frames, 3], local x y z w [frames, 34, 4], 30 FPS)
    // at source_time; returns the physical bodies, and the reference's when `reference` is given
    physics_bodies step(const float * roots, const float * rotations, uint64_t frames, double source_time,
                        physics_bodies * reference = nullptr) {
        physics_bodies actual{};
        detail::check([&](char * e, uint64_t n) {
            return mb_physics_step(p_.get(), roots, 3 * frames, rotations, 136 * frames, frames, source_time, actual.data(), actual.size(),
                                   reference ? reference->data() : nullptr, reference ? reference->size() : 0, e, n);
        });
        return actual;
    }
    // the same towards a MuJoCo qpos clip [frames, 36] at 30 FPS
    physics_bodies step_qpos(const float * qpos, uint64_t frames, double source_time, physics_bodies * reference = nullptr) {
        physics_bodies actual{};
        detail::check([&](char * e, uint64_t n) {
            return mb_physics_step_qpos(p_.get(), qpos, MB_PHYSICS_QPOS * frames, frames, source_time, actual.data(), actual.size(),
                                        reference ? reference->data() : nullptr, reference ? reference->size() : 0, e, n);
        });
        return actual;
    }

    // 29 joint targets (MuJoCo order, rad) instead of the policy; clear_action_override() goes back
    void set_action_override(const std::array<float, MB_PHYSICS_JOINTS> & targets) {
        detail::check([&](char * e, uint64_t n) { return mb_physics_set_action_override(p_.get(), targets.data(), targets.size(), e, n); });
    }
    void clear_action_override() {
        detail::check([&](char * e, uint64_t n) { return mb_physics_set_action_override(p_.get(), nullptr, 0, e, n); });
    }
    void set_gains(const std::array<float, MB_PHYSICS_JOINTS> & kp, const std::array<float, MB_PHYSICS_JOINTS> & kd) {
        detail::check([&](char * e, uint64_t n) { return mb_physics_set_gains(p_.get(), kp.data(), kd.data(), kp.size(), e, n); });
    }
    void restore_gains() {
        detail::check([&](char * e, uint64_t n) { return mb_physics_set_gains(p_.get(), nullptr, nullptr, 0, e, n); });
    }
    // MB_PHYSICS_CONTROL_* bits
    void set_controller_flags(uint32_t flags) {
        detail::check([&](char * e, uint64_t n) { return mb_physics_set_controller_flags(p_.get(), flags, e, n); });
    }
    uint32_t controller_flags() const {
        uint32_t f = 0;
        detail::check([&](char * e, uint64_t n) { return mb_physics_get_controller_flags(p_.get(), &f, e, n); });
        return f;
    }

    status_info status() const {
        status_info s;
        uint32_t    fallen = 0;
        detail::check([&](char * e, uint64_t n) { return mb_physics_status(p_.get(), &s.time, &fallen, &s.contacts, e, n); });
        s.fallen = fallen != 0;
        return s;
    }
    table get_table() const {
        table t;
        detail::check([&](char * e, uint64_t n) {
            return mb_physics_get_table(p_.get(), t.kp.data(), t.kd.data(), t.default_angles.data(), t.torque_limits.data(), MB_PHYSICS_JOINTS, e, n);
        });
        return t;
    }
    state get_state() const {
        state    s;
        uint64_t nq = 0, nv = 0;
        detail::check([&](char * e, uint64_t n) { return mb_physics_get_state(p_.get(), nullptr, 0, &nq, nullptr, 0, &nv, e, n); });
        s.qpos.resize(nq);
        s.qvel.resize(nv);
        detail::check([&](char * e, uint64_t n) {
            return mb_physics_get_state(p_.get(), s.qpos.data(), nq, &nq, s.qvel.data(), nv, &nv, e, n);
        });
        return s;
    }
    // the robot now, as mb_agent_set_context_qpos and mb_agent_set_context take it
    std::array<float, MB_PHYSICS_QPOS> mujoco_qpos() const {
        std::array<float, MB_PHYSICS_QPOS> q{};
        detail::check([&](char * e, uint64_t n) { return mb_physics_get_mujoco_qpos(p_.get(), q.data(), q.size(), e, n); });
        return q;
    }
    pose_value pose() const {
        pose_value v;
        detail::check([&](char * e, uint64_t n) { return mb_physics_get_pose(p_.get(), v.root.data(), 3, v.local_xyzw.data(), 136, e, n); });
        return v;
    }
    scene_info scene() const {
        scene_info s;
        uint64_t   length = 0;
        detail::check([&](char * e, uint64_t n) { return mb_physics_get_scene(p_.get(), &s.nq, &s.nv, &s.nu, nullptr, 0, &length, e, n); });
        std::vector<char> names(length + 1);
        detail::check([&](char * e, uint64_t n) {
            return mb_physics_get_scene(p_.get(), nullptr, nullptr, nullptr, names.data(), names.size(), &length, e, n);
        });
        s.placeholders.assign(names.data(), length);
        return s;
    }
    // trace field MB_PHYSICS_TRACE_* of the last tick (empty when it did not run)
    std::vector<double> trace(uint32_t field) const {
        uint64_t count = 0;
        detail::check([&](char * e, uint64_t n) { return mb_physics_trace(p_.get(), field, nullptr, 0, &count, e, n); });
        std::vector<double> v(count);
        if (count > 0) detail::check([&](char * e, uint64_t n) { return mb_physics_trace(p_.get(), field, v.data(), count, &count, e, n); });
        return v;
    }

    const mb_physics * get() const noexcept { return p_.get(); }
    mb_physics *       get() noexcept { return p_.get(); }

private:
    explicit physics(mb_physics * p) noexcept : p_(p) {}
    detail::handle<mb_physics, mb_physics_free> p_;
};

// one tick of sessions[i] towards qpos clips[i] ([frames[i], 36] at 30 FPS) at source_times[i]
// (1..64 sessions, one SONIC handle); returns [count, 30, 3] bodies. All or nothing: a failure throws
// with every session as before the call
inline std::vector<float> step_batch(const std::vector<physics *> & sessions, const std::vector<const float *> & clips,
                                     const std::vector<uint64_t> & frames, const std::vector<double> & source_times) {
    const size_t count = sessions.size();
    if (clips.size() != count || frames.size() != count || source_times.size() != count) {
        throw error(MB_INVALID_ARGUMENT, "step_batch: sessions, clips, frames and source_times differ in length");
    }
    std::vector<mb_physics *> handles(count);
    for (size_t i = 0; i < count; ++i) handles[i] = sessions[i] ? sessions[i]->get() : nullptr;
    std::vector<float> actual(count * 3 * MB_PHYSICS_BODIES);
    detail::check([&](char * e, uint64_t n) {
        return mb_physics_step_batch(handles.data(), count, clips.data(), frames.data(), source_times.data(), actual.data(), actual.size(), e, n);
    });
    return actual;
}

inline uint32_t abi_version() noexcept {
    return mb_abi_version();
}

} // namespace motionbricks
