// the reference a robot tracks: 50 Hz frames in a ring buffer, filled from 30 FPS MuJoCo qpos clips
// the way gear_sonic_deploy fills its planner motion (localmotion_kplanner.hpp
// ResampleGeneratedSequence50Hz, g1_deploy_onnx_ref.cpp CurrentFrameAdvancement), and the heading
// alignment that maps the reference's yaw onto the robot's (g1_deploy_onnx_ref.cpp UpdateHeadingState,
// ComputeApplyDeltaHeading). The ring holds only what lies ahead of the cursor: a replacement rebases
// it in place, nothing is re-validated per tick, and a session has no length limit.
#pragma once

#include "physics/g1-joints.h"
#include "physics/quat.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mb::physics {

// one 50 Hz reference frame
struct ref_frame {
    double root_pos[3];              // pelvis position (m, Z up)
    double root_quat[4];             // pelvis orientation (w, x, y, z)
    double q[k_body_joints];         // joint angles, Isaac order (rad)
    double dq[k_body_joints];        // forward-difference joint velocities, Isaac order (rad/s)
};

// frames a 30 FPS clip of `frames30` frames becomes: floor(frames30 / 30 · 50)
int64_t resampled_count(int64_t frames30);

// resamples qpos [frames30, 36] (root xyz, root wxyz, 29 hinges in MuJoCo order, as
// mb_motion_get_mujoco_qpos gives them) to resampled_count(frames30) 50 Hz frames in `out`:
// frame f samples 30 FPS frame f/50·30 (f0 = floor, f1 = min(f0 + 1, last)); positions and joints
// linearly, the root quaternion by slerp; dq[f] = (q[f+1] − q[f])·50, the last frame repeating the one
// before. The caller has checked the input (check_qpos30); needs frames30 ≥ 2
void resample_30_to_50(const float * qpos30, int64_t frames30, ref_frame * out);

// "" when qpos [frames30, 36] is usable: 2 ≤ frames30, resampled_count(frames30) ≤ max_frames50,
// values_count == frames30 · 36, every value finite with |v| ≤ 1e6, every root quaternion's norm in
// [0.5, 2]; else what is wrong
std::string check_qpos30(const float * qpos30, uint64_t values_count, int64_t max_frames50);

// frames blended when a reference replaces another (g1_deploy_onnx_ref.cpp:3212)
constexpr int k_blend_frames = 8;

// one robot's reference and heading alignment; every buffer sized by timeline_init, nothing allocated after
struct timeline {
    std::vector<ref_frame> ring;     // capacity frames; frame f of the motion lives at ring[(origin + f) % capacity]
    std::vector<ref_frame> pending;  // capacity frames: a resampled replacement waiting for the next advance
    int64_t capacity       = 0;      // ring size (frames)
    int64_t origin         = 0;      // ring slot of motion frame 0
    int64_t length         = 0;      // frames in the motion (0: no reference yet)
    int64_t current        = 0;      // the frame the next observation reads
    int64_t pending_length = 0;      // frames in `pending` (0: none)
    int64_t pending_gen    = 0;      // motion frame the replacement's first frame belongs at
    bool    play           = true;   // false: every future frame is the current one, velocities 0
    // heading alignment (robot_parameters.hpp:55-61 HeadingState and the reference's first-frame rotation)
    bool    reinit_heading = false;  // set by the first reference: capture the robot's heading next tick
    quat    init_base_quat = {1, 0, 0, 0};  // robot pelvis orientation when the heading was captured
    quat    init_ref_quat  = {1, 0, 0, 0};  // reference root orientation it was aligned with
    double  delta_heading  = 0;      // operator yaw offset (rad), applied on top
};

// the timeline's scalar state: what timeline_replace and timeline_update_heading change besides
// buffers they own exclusively until the next timeline_advance (the pending clip, and the ring while
// no reference is held), so restoring it undoes both; timeline_advance rewrites the ring in place
// and cannot be undone this way
struct timeline_mark {
    int64_t origin = 0, length = 0, current = 0, pending_length = 0, pending_gen = 0;
    bool    play = true, reinit_heading = false;
    quat    init_base_quat = {1, 0, 0, 0}, init_ref_quat = {1, 0, 0, 0};
    double  delta_heading = 0;
    bool operator==(const timeline_mark &) const = default;
};

// sizes the buffers for `capacity` 50 Hz frames (≥ 2) and clears the state; allocates
void timeline_init(timeline & t, int64_t capacity);

// back to no reference, heading state reset; keeps the buffers
void timeline_reset(timeline & t);

timeline_mark timeline_save(const timeline & t);
// back to `m`, taken with timeline_save since the last timeline_advance (see timeline_mark)
void timeline_restore(timeline & t, const timeline_mark & m);

// frame f of the motion (0 ≤ f < length)
inline const ref_frame & timeline_frame(const timeline & t, int64_t f) {
    return t.ring[static_cast<size_t>((t.origin + f) % t.capacity)];
}

// a new reference clip, qpos [frames30, 36] at 30 FPS, whose first frame belongs at motion frame
// gen_frame (the frame the planner started from; gen_frame = current replaces from the frame
// just read). With no reference yet it becomes the motion at once (frame 0, heading captured on the next
// tick); otherwise it waits for timeline_advance. "" on success, else the problem and t unchanged
std::string timeline_replace(timeline & t, const float * qpos30, uint64_t values_count, int64_t frames30,
                             int64_t gen_frame);

// end of a control tick (CurrentFrameAdvancement): a pending replacement is blended in over 8 frames
// from max(0, gen − current) on, the motion is rebased so the current frame becomes frame 0, and the
// cursor moves on one frame, holding at the last. Returns true when it held (the playing cursor would
// have passed the last frame: the deploy's idle re-adaptation runs then); `replaced` (may be NULL)
// receives whether a new motion took over
bool timeline_advance(timeline & t, bool * replaced = nullptr);

// frame f of the motion, writable (the idle re-adaptation edits the held frame in place)
inline ref_frame & timeline_frame_mut(timeline & t, int64_t f) {
    return t.ring[static_cast<size_t>((t.origin + f) % t.capacity)];
}

// start of a control tick (UpdateHeadingState): captures the robot's heading if a first reference
// arrived, and re-anchors the reference heading whenever the cursor is on frame 0
void timeline_update_heading(timeline & t, const quat & base_quat);

// the yaw that maps reference orientations onto the robot (ComputeApplyDeltaHeading):
// about_z(delta) · heading(init_base) · heading⁻¹(init_ref)
quat timeline_heading_offset(const timeline & t);

// the reference frame index of future step k at `step` frames apart, as the deploy's gatherers clamp it
// (playing: min(current + k · step, length − 1); paused: current)
int64_t timeline_future(const timeline & t, int k, int step);

}  // namespace mb::physics
