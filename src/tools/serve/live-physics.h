// serve's live physics: one simulated G1 (physics.h) that follows the hub's timeline in the 50 Hz
// loop. Control: the SONIC policy (--sonic) tracks the reference, else "PD tracking": each tick's
// action override is the reference's own 29 hinge angles at the tick (no balance: the robot may
// fall; the gains are the release's kp times k_pd_kp_scale, with which the default pose stands).
// Owned by the hub thread; every call comes from there
#pragma once

#include "tools/serve/timeline.h"
#include "tools/serve/viewer-queue.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

typedef struct mb_physics mb_physics;
typedef struct mb_sonic   mb_sonic;

namespace mb::serve {

// PD tracking stiffens the release's kp: with them alone the default pose tips over in ~1.5 s
// (docs/PHYSICS-MUJOCO.md, "Measured"); at 8x it stands
constexpr float k_pd_kp_scale = 8.0f;
// the controller's reference clip: at most 3,600 frames (physics.h), at least 2
constexpr int64_t k_max_clip_frames = 3600;

struct live_physics_options {
    std::string scene;       // scene_43dof.xml
    std::string config;      // .mbphysics, "" = the release's table
    std::string sonic;       // SONIC GGUF, "" = PD tracking
};

class live_physics {
public:
    // compiles the scene and loads the policy; throws std::runtime_error with the library's message
    explicit live_physics(const live_physics_options & o);
    ~live_physics();
    live_physics(const live_physics &) = delete;
    live_physics & operator=(const live_physics &) = delete;

    bool                policy() const { return sonic_ != nullptr; }
    const char *        control() const { return policy() ? "SONIC policy" : "PD tracking"; }
    const std::string & version() const { return version_; }
    // the collision_shapes event, made once (id: SHA-256 of the shapes' JSON)
    const message_ptr & shapes() const { return shapes_; }
    const std::string & shapes_id() const { return shapes_id_; }
    uint32_t            shape_count() const { return n_shapes_; }

    // clears the physical state and starts the robot at the timeline's pose at `tick`; "" or why not
    std::string start(const timeline & tl, int64_t tick);
    // one 50 Hz tick following the timeline at `tick`; `revision` changes when the timeline was
    // replanned (the controller then takes a new clip from now on); "" or the error (MuJoCo's
    // instability, the policy's non-finite output): the robot stays at its state before the tick
    std::string step(const timeline & tl, int64_t tick, uint64_t revision);

    // the frame's physics fields: ,"physical":[90] (once a tick ran since the start),"parents":[30],"collision_transforms":[7N],
    // "contacts":n,"physics_time":t,"fallen":b (the physical state of the last start or step)
    void append_frame_fields(std::string & s) const;

private:
    mb_sonic *         sonic_   = nullptr;
    mb_physics *       physics_ = nullptr;
    std::string        version_, shapes_id_;
    message_ptr        shapes_;
    uint32_t           n_shapes_ = 0;
    int32_t            parents_[30] = {};
    std::vector<float> kp_, kd_;            // PD tracking's gains
    float              actual_[90] = {};
    std::vector<float> transforms_;         // [n_shapes, 7]
    std::vector<float> clip_;               // the controller's reference [frames, 36]
    uint64_t           clip_revision_ = 0;
    bool               have_clip_ = false;
    bool               stepped_ = false;    // actual_ holds the bodies of a step since the start

    void        make_shapes();
    std::string refresh();                  // actual_ and transforms_ from the robot now
};

// the timeline's MuJoCo qpos [36] a fraction of the way between frames (tick × 0.6 at 30 fps):
// linear, the root quaternion normalised (shortest arc)
void sample_qpos(const timeline & tl, double frame, float * qpos);

// lowercase hex SHA-256 of a string
std::string sha256_hex(const std::string & s);

} // namespace mb::serve
