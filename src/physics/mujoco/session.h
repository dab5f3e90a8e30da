// one simulated G1 behind the physics C ABI: the MuJoCo robot, its reference clip (MuJoCo qpos at
// 30 FPS), the control source of each tick and the last tick's traces. Motion space (Y up, metres)
// at the boundary, MuJoCo's frame inside. A tick runs either an action override or the SONIC
// controller (src/physics: timeline, observations, history, targets) around a policy
#pragma once

#include "physics/mujoco/mbphysics.h"
#include "physics/mujoco/sim.h"
#include "physics/idle-readapt.h"
#include "physics/observation.h"
#include "physics/timeline.h"

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace mb::physics {

constexpr int      k_qpos36         = 36;         // MuJoCo qpos of the 29-hinge G1 (base 7 + hinges)
constexpr double   k_reference_fps  = 30.0;
constexpr uint64_t k_max_ref_frames = 1u << 20;   // 9.7 h at 30 FPS

// trace fields (mb_physics_trace)
constexpr int k_trace_fields = 6;
// the SONIC controller's reference ring: 120 s at 50 Hz ahead of the cursor (a replacement clip may
// be at most this long; a session has no length limit)
constexpr int64_t k_ring_frames = 6000;

// controller options (mb_physics_set_controller_flags): the deploy's behaviours that the simulated
// deploy leaves off
constexpr uint32_t k_control_idle_readapt  = 1;   // the planner is idle: re-adapt the held last frame
constexpr uint32_t k_control_velocity_stop = 2;   // the real robot's 35 rad/s stop

// the SONIC policy of a session: batched encoder and decoder, rows request-major; throws mb::error
struct policy {
    virtual ~policy() = default;
    virtual void encode(const float * obs, int batch, float * tokens) = 0;
    virtual void decode(const float * obs, int batch, float * actions) = 0;
};

class session {
public:
    // pol: borrowed, may be NULL (override-driven only)
    session(const std::string & scene_xml, const physics_config & config, policy * pol = nullptr);

    void reset();                              // state, fall flag, traces; keeps model, gains, override
    bool started() const { return started_; }
    // initial pose from MuJoCo qpos [36] (validated: finite, unit quaternion ±0.01)
    void start(const float * qpos36);
    // one 50 Hz tick towards the reference clip qpos [frames, 36]: under an override the targets are
    // the override's; else the SONIC controller's timeline follows the clip at 50 Hz from its first
    // frame (a changed clip replaces it from the current frame, 8-frame blend). reference_xyz is the
    // clip sampled at source_time (s, ≥ 0; past the end: the last frame). Throws invalid_argument on
    // bad input (nothing changed), not_implemented with neither override nor policy, compute_failed
    // when MuJoCo or the policy fails (robot state as before)
    void step(const float * qpos, uint64_t frames, double source_time);
    // the same with the clip's identity given (clip_hash of the caller's own input)
    void step(const float * qpos, uint64_t frames, double source_time, uint64_t clip_id);

    // the same tick in phases, for batches sharing one policy: prepare checks, samples the reference
    // and, unless an override drives the tick, builds the encoder observation (returns true: the policy
    // must run); with_tokens builds the decoder observation; simulate applies actions (NULL under an
    // override) and steps MuJoCo; commit records the tick in the controller (previous action, timeline
    // advance, idle re-adaptation) and the outputs, and cannot fail. `clip_id` identifies the clip's
    // content: the controller's timeline takes a clip whose id differs from the last one as a
    // replacement from the current frame. Until commit, controller_restore undoes the phases
    bool prepare(const float * qpos, uint64_t frames, double source_time, uint64_t clip_id);
    const float * encoder_obs() const { return enc_.data(); }
    void          with_tokens(const float * tokens);
    const float * decoder_obs() const { return dec_.data(); }
    void          simulate(const float * actions);
    void          commit();

    // k_control_* bits
    void     set_controller_flags(uint32_t flags) { flags_ = flags; }
    uint32_t controller_flags() const { return flags_; }
    // true when prepare() with this id would read the whole clip (the policy runs and it is new)
    bool needs_clip(uint64_t clip_id) const { return !override_on_ && pol_ && (!has_clip_ || clip_id != clip_id_); }
    policy * controller() const { return pol_; }

    // joint targets [29] (MuJoCo order, radians, finite, |·| ≤ 6.4) used instead of the policy; NULL clears
    void set_override(const double * targets);
    bool has_override() const { return override_on_; }

    // outputs of the last step, motion space: [30, 3]
    const std::array<float, k_bodies * 3> & actual() const { return actual_; }
    const std::array<float, k_bodies * 3> & reference() const { return reference_; }
    // the trace of the last step; empty for a field that did not run
    const std::vector<double> & trace(int field) const { return trace_[size_t(field)]; }

    // the robot now: motion-space bodies [30, 3], MuJoCo qpos [36], G1Skeleton34 pose
    void bodies(float * xyz) const;
    void qpos36(float * qpos) const;
    void pose(float * root_xyz, float * local_xyzw) const;
    // collision shapes' world transforms: [n, 7] = xyz, quaternion x y z w (motion space, mapping the
    // MuJoCo geom frame the shapes' sizes and triangles are given in)
    void collision_transforms(float * out) const;

    // the controller's state between ticks: the history (previous action included), the timeline's
    // cursor and heading, the clip identity; what prepare, with_tokens and simulate change in it
    struct controller_mark {
        history       hist{};
        timeline_mark line{};
        bool          has_clip = false;
        uint64_t      clip_id  = 0;
    };
    controller_mark controller_save() const;
    void            controller_restore(const controller_mark & m);
    const history &  controller_history() const { return history_; }
    const timeline & controller_timeline() const { return timeline_; }

    // the robot state, fall flag and controller, for a batch that must undo its earlier sessions
    struct saved {
        robot::snapshot state;
        bool            fallen = false;
        controller_mark controller;
    };
    void save(saved & s) const;
    void restore(const saved & s);

    robot &         mujoco() { return *robot_; }
    const robot &   mujoco() const { return *robot_; }
    const scene &   model() const { return *robot_->model(); }
    double          time() const { return robot_->time(); }
    bool            fallen() const { return fallen_; }
    const physics_config & config() const { return config_; }

private:
    void full_qpos(const float * q36, double * full) const;

    std::unique_ptr<robot>                  robot_;
    physics_config                          config_;
    bool                                    started_ = false, fallen_ = false, override_on_ = false;
    std::array<double, k_body_joints>       override_{};
    std::array<float, k_bodies * 3>         actual_{}, reference_{};
    std::array<std::vector<double>, k_trace_fields> trace_;
    std::vector<double>                     full_;        // scratch [nq]
    // the SONIC controller
    policy *                                pol_ = nullptr;
    timeline                                timeline_;
    history                                 history_{};
    bool                                    has_clip_ = false;
    uint64_t                                clip_id_  = 0;
    bool                                    policy_tick_ = false;   // prepare() chose the policy
    float                                   ref_[k_qpos36]{};       // the reference sampled at source_time
    std::array<float, k_encoder_obs>        enc_{};
    std::array<float, k_decoder_obs>        dec_{};
    std::array<float, k_tokens>             tokens_{};
    uint32_t                                flags_ = 0;
    idle_readapt                            idle_{};
    robot_state                             state_{};               // this tick's state, from prepare()
    // simulate() → commit()
    bool                                    simulated_policy_ = false;
    std::array<float, k_body_joints>        actions_{};
    double                                  targets_[k_body_joints]{};
    tick_record                             record_{};
    std::vector<double>                     pre_;
};

// a 64-bit hash of `n` floats' bits, 8 bytes a step (FNV-style multiply with a fold of the high
// bits, so differences in two words cannot cancel): a clip's identity for session::prepare
uint64_t clip_hash(const float * data, uint64_t n, uint64_t seed = 1469598103934665603ull);

// checks a qpos clip [frames, 36]: finite, unit root quaternions (±0.01); throws invalid_argument
void check_qpos_clip(const float * qpos, uint64_t frames);

// G1Skeleton34 pose (motion space root [3], local rotations x y z w [34, 4]) ↔ MuJoCo qpos [36]
void pose_to_qpos(const float * root_xyz, const float * local_xyzw, float * qpos36);
void qpos_to_pose(const float * qpos36, float * root_xyz, float * local_xyzw);

} // namespace mb::physics
