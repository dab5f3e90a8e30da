// gear_sonic_deploy's idle re-adaptation (g1_deploy_onnx_ref.cpp:3306-3367): while the planner is in
// its idle mode and the reference holds its last frame, the held frame's lower-body joints drift
// toward the robot's measured angles (ADAPTING) when the two disagree, and back toward the planner's
// own targets (RECOVERING) once they agree, so a robot that cannot reach the pose does not fight it
#pragma once

#include "physics/timeline.h"

namespace mb::physics {

// g1_deploy_onnx_ref.cpp:241-243, rad (mean absolute error over the 12 lower-body joints)
constexpr double k_adapt_trigger  = 0.10;
constexpr double k_adapt_stop     = 0.05;
constexpr double k_recover_trigger = 0.045;
// g1_deploy_onnx_ref.cpp:3357, :3362 blend per held tick
constexpr double k_readapt_keep = 0.98;
constexpr double k_readapt_pull = 0.02;   // upstream's literal, not 1 − 0.98 (which rounds differently)

enum class readapt_state : uint8_t { idle, adapting, recovering };

struct idle_readapt {
    double        original[k_body_joints] = {};   // the held frame's planner targets, Isaac order
    bool          stored = false;                 // false after reset and each new motion
    readapt_state state  = readapt_state::idle;
};

// forgets the stored targets (deploy: idle_readapt_stored_ = false when a new planner motion takes over)
inline void idle_readapt_reset(idle_readapt & r) { r.stored = false; }

// k_lower_body_isaac (g1-joints.h) are the 12 joints; one held tick on `frame` (the reference's held last frame, joint angles Isaac order) with the robot's
// body joint angles q_mujoco [29] (MuJoCo order, rad, as LowState reports them): stores the targets on
// the first held tick, steps the state machine on the mean lower-body error, then blends the frame's
// 12 lower-body angles 0.98 / 0.02 toward the robot (adapting) or the stored targets (recovering)
void idle_readapt_step(idle_readapt & r, ref_frame & frame, const double * q_mujoco);

}  // namespace mb::physics
