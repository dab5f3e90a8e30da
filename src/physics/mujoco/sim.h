// the MuJoCo side of a physics session, behind a MuJoCo-free interface: a compiled G1 scene
// (shared by every robot created from the same file and options) and one robot's data. Built from
// sim-mujoco.cpp where MuJoCo is found, else from sim-none.cpp, whose functions throw
// backend_unavailable. Units: MuJoCo's (Z up, metres, radians); sessions convert to motion space
#pragma once

#include "physics/controller.h"
#include "physics/mujoco/g1-pd.h"

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace mb::physics {

constexpr int    k_bodies        = 30;      // pelvis + the 29 bodies of the body hinges
constexpr int    k_substeps      = 4;       // 200 Hz steps per 50 Hz tick
constexpr double k_substep_dt    = 0.005;   // SIMULATE_DT of g1_29dof_sonic_model12.yaml
constexpr int    k_qpos_hinge0   = 7;       // qpos index of the first hinge (free base first)

// the MuJoCo build's version: "2.2.2"; throws backend_unavailable without MuJoCo, incompatible_model
// when the library's version differs from the header's
std::string engine_version();

// true when this build has MuJoCo
bool engine_available();

struct scene_options {
    bool weld_base    = false;    // remove the free joint and every contact: the pelvis hangs fixed (tests)
    bool zero_gravity = false;    // gravity 0 (tests)
    bool operator==(const scene_options &) const = default;
};

// the exact mesh mid-phase of robot ticks (collision-prefilter.h), for tests: false sends every pair
// to MuJoCo's narrow phase (process-wide); the pairs it skipped on this thread so far
void prefilter_enable(bool on);
long prefilter_skipped();

// one robot collision geom (contype or conaffinity non-zero, not the world's)
struct collision_shape {
    uint32_t             type;        // MuJoCo geom type: 2 sphere, 3 capsule, 4 ellipsoid, 5 cylinder, 6 box, 7 mesh
    std::array<float, 3> size;        // MuJoCo geom_size
    std::string          name;        // "<body>:<geom index in body>", "placeholder:" prefix for a placeholder mesh
    std::vector<float>   triangles;   // mesh hull: [n, 3 vertices, xyz] in the geom frame; empty otherwise
    int                  geom;        // MuJoCo geom id
};

class scene;

// compiles (or finds in the process-wide cache) the scene of `xml_path`: reads it, its includes and
// meshes, patches what the running MuJoCo rejects, puts a labelled 3 cm box where a mesh file is
// missing, and loads everything from memory; checks nq 50 / nv 49 / nu 43 (43 / 43 / 43 welded).
// Throws io_error (files), invalid_format (MuJoCo rejects the XML), incompatible_model (counts, names)
std::shared_ptr<const scene> scene_compile(const std::string & xml_path, const scene_options & options);

struct scene_info {
    int                      nq, nv, nu;     // MuJoCo sizes
    std::vector<std::string> placeholders;   // mesh names given a placeholder box, sorted
    std::vector<std::string> patches;        // in-memory XML patches applied
    std::array<int, k_bodies> parents;       // parent among the 30 bodies, -1 for the pelvis
    std::array<std::string, k_bodies> body_names;
};
const scene_info & scene_describe(const scene & s);
const std::vector<collision_shape> & scene_collision(const scene & s);

// the result of one tick
struct tick_record {
    std::array<double, k_body_joints * k_substeps> q, dq, torque;   // per substep, MuJoCo order
};

// one robot's MuJoCo data
class robot {
public:
    explicit robot(std::shared_ptr<const scene> s);
    ~robot();
    robot(const robot &)             = delete;
    robot & operator=(const robot &) = delete;

    // qpos0 of the scene with the body hinges at `pose` [29] (NULL: the release's default), the soles
    // on the floor, zero velocity
    void reset(const double * pose = nullptr);
    // sets the full MuJoCo state (qpos [nq], qvel [nv]; qvel may be NULL = zero) and runs mj_forward
    void set_state(const double * qpos, const double * qvel);
    // one 50 Hz tick: 4 substeps of PD torque control towards targets [29] (MuJoCo order; hands held
    // at 0), torques clipped to the release's limits. Throws compute_failed (MuJoCo warning, error or
    // non-finite state): the state is then restored to the one before the tick
    void tick(const double * targets, tick_record * record);
    // replaces the body joints' PD gains and torque limits [29] (MuJoCo order; kp in [0, 1e4], kd in
    // [0, 1e3], limit in (0, 1e4]); NULL restores the release's
    void set_gains(const double * kp, const double * kd, const double * torque_limit = nullptr);

    // the full state, time included, to put back with restore(); the solver's warm start too, so a
    // restored robot continues bit for bit as if nothing had happened
    struct snapshot {
        std::vector<double> qpos, qvel, act, warmstart;
        double              time = 0;
    };
    void save(snapshot & s) const;
    void restore(const snapshot & s);

    // world positions of the 30 bodies [30, 3] for a full qpos [nq] (this robot's state unchanged)
    void kinematics(const double * qpos, double * xyz) const;
    // qpos address of body joint i (MuJoCo order)
    int hinge_address(int i) const;

    const std::shared_ptr<const scene> & model() const { return scene_; }
    double time() const;
    int    nq() const;
    int    nv() const;
    const double * qpos() const;     // [nq], borrowed until the next call
    const double * qvel() const;     // [nv]
    uint32_t contacts() const;       // active contacts that touch the robot
    uint32_t self_contacts() const;  // those between two of its own geoms
    double   pelvis_height() const;
    // world positions of the 30 bodies [30, 3] and orientations [30, 4] (w x y z)
    void bodies(double * xyz, double * quat_wxyz) const;
    // world pose of each collision shape: [n, 3] positions and [n, 9] row-major rotations
    void collision_poses(double * xyz, double * rot) const;

private:
    struct impl;
    std::shared_ptr<const scene> scene_;
    std::unique_ptr<impl>        impl_;
};

} // namespace mb::physics
