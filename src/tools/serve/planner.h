// the planning worker: one thread, one plan in flight, the motion agent behind it, through the
// C ABI (mb_agent_*); the only server file that touches the model
#pragma once

#include <motionbricks/motionbricks.h>

#include "tools/model-options.h"

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace mb::serve {

constexpr int k_joints         = int(MB_G1_JOINT_COUNT);
constexpr int k_qpos_values    = int(MB_G1_QPOS_SIZE);
constexpr int k_context_frames = 4;

// one 30 fps frame of the timeline
struct timeline_frame {
    float qpos[k_qpos_values];          // MuJoCo qpos (root xyz Z up, quaternion w first, 29 hinges)
    float root[3];                      // root translation, motion space (Y up, Z forward), m
    float rotations[k_joints * 4];      // local joint rotations, quaternion x y z w
};

struct style_info {
    std::string name;
    float       speed = 0;              // configured speed, m/s
};

struct joint_info {
    std::string name;                   // e.g. "pelvis_skel"
    int         parent = -1;            // -1 for the root
    float       position[3] = {0, 0, 0};// rest pose relative to the pelvis, motion space, m
};

struct plan_request {
    uint64_t    epoch = 0;
    int64_t     at    = 0;              // boundary: absolute frame of the plan's first frame
    std::vector<float> context;         // [4, 36] qpos at frames at..at+3
    std::string style;                  // style name (must exist)
    float       move[2]   = {0, 0};     // ground-plane direction (x, z), motion space; zero: turn in place
    float       facing[2] = {0, 1};     // (x, z), motion space
    float       speed     = -1;         // m/s; negative: the style's speed
    uint64_t    seed      = 1;
    bool        jump      = false;      // mb_agent_plan_jump: MB_JUMP_SPEED along move (speed ignored)
};

struct plan_result {
    uint64_t    epoch = 0;
    int64_t     at    = 0;
    bool        ok    = false;
    std::string error;                  // when !ok
    std::string style;                  // style that supplied the targets
    double      planner_ms = 0;
    std::vector<timeline_frame> frames; // the plan from frame `at` (seam already blended)
    std::vector<float> target_joints;   // [4, 34, 3] placed target joint positions, world, motion space
    std::vector<float> target_roots;    // [4, 3]
    std::vector<float> target_rotations;// [4, 34, 4] local xyzw
};

class planner {
public:
    // loads the bundle and styles; throws motionbricks::error from the library, std::runtime_error
    // for two styles of one name or none
    planner(const std::string & model_dir, const std::vector<std::string> & style_paths,
            const tools::model_options & options);
    planner(const std::string & model_dir, const std::vector<std::string> & style_paths, int n_threads)
        : planner(model_dir, style_paths, tools::model_options{n_threads}) {}
    ~planner();

    const std::vector<style_info> & styles() const { return styles_; }
    const std::vector<joint_info> & skeleton() const { return skeleton_; }
    int find_style(const std::string & name) const;    // -1 when absent
    // the agent's initial buffer (the idle clip padded) as timeline frames
    const std::vector<timeline_frame> & initial() const { return initial_; }

    // queues one plan; false when one is already in flight. `done` runs on the worker thread
    bool submit(plan_request req, std::function<void(plan_result)> done);
    bool busy() const;

private:
    struct impl;
    std::unique_ptr<impl>           p_;
    std::vector<style_info>         styles_;
    std::vector<joint_info>         skeleton_;
    std::vector<timeline_frame>     initial_;
    mutable std::mutex              mu_;
    std::condition_variable         cv_;
    bool                            has_job_ = false, busy_ = false, stop_ = false;
    plan_request                    job_;
    std::function<void(plan_result)> done_;
    std::thread                     worker_;

    void run();
};

} // namespace mb::serve
