// upstream motion_inference.predict as one call: sparse keyframe constraints
// (4 context + 4 target frames, unnormalised) → tokens, 414-d global features,
// root translations, local rotations and FK joint positions for 4n frames.
#pragma once

#include "backend/backend.h"
#include "backend/backend-select.h"
#include "format/bundle.h"
#include "model/layers.h"
#include "motion/motion-rep.h"

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace mb {

constexpr int k_constraint_frames = 8;      // slots 0..3 context, 4..7 target
constexpr int k_pose_dim          = 303;    // ric_data (99) + global_rot_data (204)
constexpr int k_min_tokens        = 6;
constexpr int k_max_tokens        = 16;
constexpr int k_frames_per_token  = 4;
constexpr int k_token_heads       = 8;      // pose tokenizer heads
constexpr int k_token_codes       = 10;     // codes per head
constexpr int k_duration_choices  = k_max_tokens - k_min_tokens + 1;   // 11

enum class sampling_mode : uint32_t {
    SAMPLING_MODE_ARGMAX = 0,
    SAMPLING_MODE_GUMBEL = 1,
};

struct predict_request {
    std::array<float, k_constraint_frames * 5>          global_root{};      // [8, 5] x, y, z, cos h, sin h (world, m)
    std::array<uint8_t, k_constraint_frames>            global_root_mask{}; // [8] 0/1
    std::array<float, k_constraint_frames * 4>          local_root{};       // [8, 4] dh/dt, vx, vz, root y
    std::array<uint8_t, k_constraint_frames>            local_root_mask{};  // [8] 0/1
    std::array<float, k_constraint_frames * k_pose_dim> poses{};            // [8, 303]
    std::array<uint8_t, k_constraint_frames>            pose_mask{};        // [8] 0/1
    int                                    num_tokens = 0;          // 0 = predict the duration, else 6..16 forced
    std::array<uint8_t, k_duration_choices> allowed_num_tokens;     // [11] 1 = token count 6+i allowed
    sampling_mode                          sampling = sampling_mode::SAMPLING_MODE_ARGMAX;
    uint64_t                               seed     = 0;            // Gumbel uniforms generator seed
    std::vector<float>                     gumbel_uniforms;         // empty, or explicit u: [steps, 16, 8, 10]
    int                                    num_inference_steps     = 1;
    bool                                   skip_ending_target_cond = false;
    bool                                   allow_out_of_reach      = false;

    predict_request() { allowed_num_tokens.fill(1); }
};

// wall time of each stage of one predict (milliseconds)
struct predict_timings {
    double prepare_ms = 0.0;    // validation, recentring, normalisation
    double root_ms    = 0.0;    // root planner + global → local root
    double pose_ms    = 0.0;    // pose-token planner (all steps)
    double decoder_ms = 0.0;    // VQ decoder
    double finish_ms  = 0.0;    // local → global, start transform, FK
    double total_ms   = 0.0;
};

struct predict_result {
    int                  num_tokens = 0;                 // n
    int                  frames     = 0;                 // 4n
    std::vector<int32_t> tokens;                         // [n, 8]
    std::array<float, 12> num_token_logits{};            // masked duration logits (-inf where masked)
    std::vector<float>   global_features;                // [4n, 414] upstream predict output
    std::vector<float>   root_translations;              // [4n, 3]
    std::vector<float>   local_rotations_xyzw;           // [4n, 34, 4]
    std::vector<float>   joint_positions;                // [4n, 34, 3] FK
    predict_timings      timings;                        // per-stage wall time of this call
};

// receives named intermediates of predict and of every network it runs (see tap_fn in
// model/layers.h): data valid during the call only, shape in upstream axis order
using trace_fn = tap_fn;

class motion_model;

// everything one predict call writes: a backend object (its threads and scratch), every
// network's activations and the per-call arrays, all allocated when the state is created.
// One state serves one call at a time; states of one model run concurrently
class predict_state {
public:
    ~predict_state();
    predict_state(const predict_state &)             = delete;
    predict_state & operator=(const predict_state &) = delete;

    struct impl;
    std::unique_ptr<impl> p;

private:
    friend class motion_model;
    predict_state();
};

// the three networks (weights in backend memory), support data and statistics of one loaded
// bundle: immutable after creation and shareable across threads
class motion_model {
public:
    // takes ownership of the bundle; n_threads <= 0 = hardware threads (CPU); device and ordinal
    // pick the backend (backend_create; a device backend receives every weight here); throws
    // mb::error: backend_unavailable for a device that cannot run, incompatible_model naming the
    // first problem (missing tensor, inconsistent sizes between the networks); std::bad_alloc when
    // device memory is exhausted
    static std::unique_ptr<motion_model> create(std::unique_ptr<model_bundle> bundle, int n_threads,
                                                backend_device device = backend_device::BACKEND_DEVICE_CPU,
                                                int ordinal = 0,
                                                backend_precision precision = backend_precision::BACKEND_PRECISION_F32);

    // the same from separate tensor sources (names with "backbone_net." / "pose_net." stripped),
    // borrowed: they must outlive the model; bundle() then holds only `sup`
    static std::unique_ptr<motion_model> create_from_sources(const tensor_source & pose, const tensor_source & root,
                                                             const tensor_source & vq_decoder,
                                                             const model_support & sup, int n_threads,
                                                             backend_device device = backend_device::BACKEND_DEVICE_CPU,
                                                             int ordinal = 0,
                                                             backend_precision precision = backend_precision::BACKEND_PRECISION_F32);
    ~motion_model();

    const model_bundle & bundle() const;
    // the backend's name: "cpu" (or a CPU variant) or "cuda"
    const char *         backend_name() const;
    // the arithmetic it runs (F32 on the CPU whatever was asked)
    backend_precision    precision() const;
    // the device memory the model holds (held_bytes: its weights, the states in its pool and their
    // backends' scratch; states of callers and of running calls are not in it) and its device's
    // use; all 0 on the CPU. Throws mb::error(compute_failed) when the device cannot be asked
    device_memory_use    device_memory() const;

    // "" when the request is valid, else the first problem found (nothing is computed). Checks:
    // features finite with |v| <= 1e4; masks 0/1; global-root slot 0 enabled; enabled global-root
    // slots have |cos² + sin² − 1| <= 0.02; at least one allowed duration; num_tokens 0 or 6..16;
    // num_inference_steps 1..16; gumbel_uniforms empty, or (Gumbel only) steps·16·8·10 values in [0, 1]
    std::string validate(const predict_request & req) const;

    // a new state for predict calls on this model (computing with the model's thread count);
    // it must not outlive the model. lanes > 1 makes a state for predict_batch that fuses up
    // to `lanes` requests (its arrays sized for lanes × 16 tokens)
    std::unique_ptr<predict_state> create_state(int64_t lanes = 1) const;

    // the lane count predict_batch's pooled states fuse per chunk (64 on the CPU, 256 on CUDA)
    int64_t batch_lanes() const;

    // how many pooled states (chunks in flight, a thread each) predict_batch runs at once when a
    // batch has more than one chunk (1 on the CPU, whose backend has the cores)
    int64_t batch_states() const;

    // runs predict on `st`; throws mb::error: invalid_argument for an invalid request,
    // compute_failed otherwise (e.g. the root planner choosing "out of reach" when allow_out_of_reach is set).
    // Thread-safe for distinct states; the trace callback sees the arrays in stage order, each
    // valid until it returns
    predict_result predict(predict_state & st, const predict_request & req, const trace_fn & trace = {}) const;

    // the same on a state borrowed from the model's pool (created when every pooled state is busy)
    predict_result predict(const predict_request & req, const trace_fn & trace = {}) const;

    // predict for every request, reqs.size() == out.size(), any count: chunks of the state's lanes
    // run fused (every weight read shared by the chunk's lanes; lanes bucketed by token count and
    // decoding shape), and out[i] equals predict(reqs[i]) (tokens and durations exact; features
    // bitwise on the CPU). Each result's timings are its chunk's stage times. On a failure it throws
    // the first failing request's error with *failed (when given) set to its index (SIZE_MAX when no
    // single request is at fault); out is then unspecified
    void predict_batch(predict_state & st, std::span<const predict_request> reqs, std::span<predict_result> out,
                       size_t * failed = nullptr) const;

    // the same on a batch state (batch_lanes() lanes) borrowed from the model's pool. lane_done
    // (optional) is called with i once out[i] is complete, on the thread that finished it (one of
    // the chunk's host threads, right after its own host steps), so that a caller's per-result
    // work overlaps the device work of other chunks; what it throws fails the batch like an error
    // of request i (out[i] may be moved from)
    void predict_batch(std::span<const predict_request> reqs, std::span<predict_result> out, size_t * failed = nullptr,
                       const std::function<void(size_t)> & lane_done = {}) const;

    struct impl;
private:
    explicit motion_model(std::unique_ptr<impl> p);
    void predict_batch_states(std::span<const predict_request> reqs, std::span<predict_result> out,
                              size_t * failed, const std::function<void(size_t)> & lane_done) const;
    std::unique_ptr<impl> p_;
};

} // namespace mb
