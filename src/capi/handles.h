// the C handles' definitions (global namespace, as declared by the public headers);
// shared by every translation unit of the C ABI
#pragma once

#include <motionbricks/inference.h>

#include "agent/agent.h"
#include "format/style.h"
#include "motion/predict.h"
#include "motion/qpos.h"

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

struct mb_runtime_options {
    mb_device   device  = MB_DEVICE_AUTO;     // MB_DEVICE_*
    uint32_t    threads = 0;                  // 0 = one per hardware thread
    uint32_t    ordinal = 0;                  // CUDA GPU ordinal
    mb_precision precision = MB_PRECISION_F32; // MB_PRECISION_*
    std::string backend_directory;            // "" = unset; stored and returned only
};

struct mb_command {
    const mb_style *     style = nullptr;              // borrowed, may be NULL
    std::array<float, 3> movement{0.0f, 0.0f, 0.0f};   // world travel direction
    std::array<float, 3> facing{0.0f, 0.0f, 1.0f};     // world facing direction, never zero
    float                target_speed = -1.0f;         // m/s; negative = style speed, >= -1
    std::array<float, 3> world_target{0.0f, 0.0f, 0.0f}; // explicit root target (m)
    float                world_target_heading = 0.0f;  // rad about +Y
    uint32_t             world_target_enabled = 0;     // 0/1
    uint64_t             seed                 = 0;     // per-plan RNG seed
    uint32_t             sampling_argmax      = 0;     // 0 Gumbel, 1 argmax
};

struct mb_model {
    std::unique_ptr<mb::motion_model> net;              // networks, support data (immutable; stateless
                                                        // calls borrow states from its pool)
    mb_runtime_options                options;          // copy of the load options
    uint64_t                          parameter_count = 0; // learned parameters (pose + root + vq)

    const mb::model_support & support() const {
        return net->bundle().sup;
    }
};

struct mb_motion {
    uint64_t           frames = 0;                  // F
    uint64_t           token_count = 0;             // n = F / 4
    std::vector<int32_t> tokens;                    // [n, 8] pose tokens
    std::vector<float> duration_logits;             // [12] masked duration logits (stateless; -inf where masked)
    std::vector<float> global_features;             // [F, 414] predict's output (stateless only)
    mb::predict_timings timings;                    // predict's stage times (ms)
    std::string        style_name;                  // agent plans: the style of the targets; "" stateless
    std::vector<float> root_translations;           // [F, 3]
    std::vector<float> local_rotations_xyzw;        // [F, 34, 4]
    std::vector<float> joint_positions;             // [F, 34, 3] world joint positions (FK)
    std::vector<float> mujoco_qpos;                 // [F, 36] MuJoCo world qpos, quaternion w first
    uint64_t           target_frames = 0;           // 4 for agent plans, 0 stateless
    std::vector<float> target_root_translations;    // [target_frames, 3]
    std::vector<float> target_joint_positions;      // [target_frames, 34, 3]
    std::vector<float> target_local_rotations_xyzw; // [target_frames, 34, 4]
};

// one style; a list because the agent core plans with a list of styles (index 0 here)
struct mb_style {
    std::vector<mb::style_asset> styles;    // exactly one entry
};

struct mb_agent {
    const mb_model *                   model = nullptr;   // borrowed; outlives the agent
    std::unique_ptr<mb::predict_state> state;             // the agent's own working memory
    std::unique_ptr<mb::agent>         core;              // history, cursor and planner (src/agent), on `state`
    std::vector<mb::style_asset>       sidesteps;         // none, or copies of the side-step styles [left, right]
};

struct mb_inference_request {
    std::array<float, mb::k_constraint_frames * 5>              global_root{};      // [8, 5]
    std::array<float, mb::k_constraint_frames * 4>              local_root{};       // [8, 4]
    std::array<float, mb::k_constraint_frames * mb::k_pose_dim> poses{};            // [8, 303]
    std::array<uint8_t, mb::k_constraint_frames>                global_root_mask{}; // [8] 0/1
    std::array<uint8_t, mb::k_constraint_frames>                local_root_mask{};  // [8] 0/1
    std::array<uint8_t, mb::k_constraint_frames>                pose_mask{};        // [8] 0/1
    std::array<uint8_t, mb::k_duration_choices>                 durations{};        // [11] 0/1
    uint64_t                                                    seed            = 0;
    uint32_t                                                    sampling_argmax = 0;
    uint32_t                                                    token_count     = 0;     // 0 predict, 6..16 forced
    uint32_t                                                    inference_steps = 1;     // 1..16
    std::vector<float>                                          gumbel_uniforms;         // empty or [steps, 16, 8, 10]
    uint32_t                                                    skip_ending_target_cond = 0; // 0/1
    uint32_t                                                    allow_out_of_reach      = 0; // 0/1
    std::array<std::array<bool, 2>, 3>                          supplied{};         // [field][boundary]

    mb_inference_request() {
        global_root_mask.fill(1);
        local_root_mask.fill(1);
        local_root_mask[3] = 0;
        pose_mask.fill(1);
        durations.fill(1);
    }
};

namespace mb::capi {

// a motion for the C caller from a predict result (stateless: no target frames)
std::unique_ptr<mb_motion> motion_from_result(predict_result && r);

// the one output check of every call that produces motion (mb_model_infer*, mb_agent_plan*): every
// float the caller can read is finite, else MB_COMPUTE_FAILED naming `what` and the first bad array
void check_motion(const mb_motion & m, const char * what);

// a motion of `frames` MuJoCo qpos frames [frames, 36] (FK, local rotations; no targets, no tokens)
std::unique_ptr<mb_motion> motion_from_qpos(const float * qpos, int64_t frames);

// the G1 qpos converter shared by every handle (immutable after construction)
const qpos_converter & converter();

// requests of one mb_model_infer_batch / mb_agent_plan_batch call (mb_model_get_batch_limit);
// they run fused in chunks of motion_model::batch_lanes()
constexpr uint64_t k_max_batch = 4096;

// the start of every batch call: outputs not NULL, count 1..k_max_batch, then every output NULL
void begin_batch(mb_motion ** outputs, uint64_t count);

} // namespace mb::capi
