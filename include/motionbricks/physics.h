/*
 * physics.h — a simulated G1 in MuJoCo: 50 Hz ticks of four 200 Hz substeps under PD torque control,
 * the 30 physical bodies, contacts, fall detection and the robot's collision geometry. The same
 * thirteen functions as the reference runtime's physics.h, then additions of ours (marked).
 *     mb_physics * p = NULL;
 *     char error[512];
 *     if (mb_physics_create(sonic, "scene_43dof.xml", NULL, &p, error, sizeof error) != MB_OK) { ... }
 *     mb_physics_start(p, root, 3, local_xyzw, 136, error, sizeof error);       // the first pose
 *     for (each 50 Hz tick) {
 *         mb_physics_step(p, roots, 3 * F, rotations, 136 * F, F, t, actual, 90, reference, 90, error, sizeof error);
 *     }
 *     mb_physics_free(p);
 * Motion space as in motionbricks.h (Y up, metres, +Z forward); reference clips at 30 FPS. In a build
 * without MuJoCo every function is exported and answers MB_BACKEND_UNAVAILABLE. A MuJoCo warning
 * or instability answers MB_COMPUTE_FAILED with the state of the tick's start kept.
 * Control: each tick runs the SONIC controller (gear_sonic_deploy's observations, mode 0: the
 * reference resampled to 50 Hz, heading-aligned, 10-tick histories; actions → targets = default +
 * scale · action) or, when one is set, an action override (mb_physics_set_action_override). Under the
 * controller the reference advances one 50 Hz frame per tick from the clip's first frame; a clip that
 * differs from the last one replaces it from the current frame with an 8-frame blend (a clip of 2 to
 * 3,600 frames: 120 s). source_time picks the reference_xyz output. Without a SONIC handle and
 * without an override a step answers MB_NOT_IMPLEMENTED. Threading: a session needs caller
 * serialisation; sessions on different threads are independent. The SONIC handle must outlive its
 * sessions.
 */
#ifndef MOTIONBRICKS_PHYSICS_H
#define MOTIONBRICKS_PHYSICS_H

#include <motionbricks/motionbricks.h>

#ifdef __cplusplus
extern "C" {
#endif

/* the policy handle of sonic.h (declared here too: motionbricks.h includes this header, and sonic.h
 * includes motionbricks.h) */
typedef struct mb_sonic mb_sonic;
typedef struct mb_physics mb_physics;

#define MB_PHYSICS_BODIES     UINT32_C(30)   /* pelvis + the 29 bodies of the body hinges */
#define MB_PHYSICS_JOINTS     UINT32_C(29)   /* body hinges, MuJoCo order */
#define MB_PHYSICS_QPOS       UINT32_C(36)   /* MuJoCo qpos of the 29-hinge G1 (mb_motion_get_mujoco_qpos) */
#define MB_PHYSICS_MAX_BATCH  UINT32_C(64)

/* mb_physics_trace fields */
#define MB_PHYSICS_TRACE_ENCODER_OBS UINT32_C(0) /* 1762 (policy ticks only) */
#define MB_PHYSICS_TRACE_DECODER_OBS UINT32_C(1) /* 994 (policy ticks only) */
#define MB_PHYSICS_TRACE_ACTIONS     UINT32_C(2) /* 29 (policy ticks only) */
#define MB_PHYSICS_TRACE_TARGETS     UINT32_C(3) /* 29 motor targets, hardware (= MuJoCo) order */
#define MB_PHYSICS_TRACE_STATE       UINT32_C(4) /* 65: q29, dq29, base w x y z, base angular velocity 3 */
#define MB_PHYSICS_TRACE_SUBSTEPS    UINT32_C(5) /* 348: 4 substeps × (q29, dq29, torque29) */

/* ---- the reference runtime's functions ---------------------------------------------------------- */

/* Writes the MuJoCo version ("2.2.2"; 32 bytes suffice) to buffer[0 .. capacity), NUL-terminated.
 * Errors: MB_INVALID_ARGUMENT (NULL buffer, capacity too small), MB_INCOMPATIBLE_MODEL (the MuJoCo
 * library differs from the header built against), MB_BACKEND_UNAVAILABLE (no MuJoCo in this build). */
MB_API mb_status mb_physics_engine_version(char * buffer, uint64_t capacity, char * error, uint64_t error_capacity);

/* Creates a session for the scene `scene_xml` (the 43-DoF G1 scene_43dof.xml; it must compile to
 * nq 50, nv 49, nu 43), compiled once per file and shared by every session of it. The scene is
 * patched in memory for the running MuJoCo; a missing mesh file becomes a labelled 3 cm box
 * (mb_physics_placeholders lists them). config_file: a .mbphysics table, or NULL for the release's
 * gains, default pose and torque limits. sonic: the policy (borrowed; may be NULL for sessions driven
 * by an action override). Errors: MB_INVALID_ARGUMENT, MB_IO_ERROR, MB_INVALID_FORMAT (the XML or the
 * table), MB_INCOMPATIBLE_MODEL (another robot), MB_BACKEND_UNAVAILABLE, MB_OUT_OF_MEMORY. */
MB_API mb_status mb_physics_create(mb_sonic * sonic, const char * scene_xml, const char * config_file, mb_physics ** output,
                                   char * error, uint64_t error_capacity);

/* Frees a session. NULL is a no-op. */
MB_API void mb_physics_free(mb_physics * physics);

/* Clears the state, the fall flag and the traces; keeps the compiled model, the table and the
 * override. The robot stands at the default pose, soles on the floor, not started. */
MB_API mb_status mb_physics_reset(mb_physics * physics, char * error, uint64_t error_capacity);

/* Starts from a G1Skeleton34 pose: root [3] (pelvis, motion space) and local rotations x y z w [34, 4]
 * (counts 3 and 136; finite; unit quaternions ±0.01), zero velocity. Once per reset: a second start is
 * MB_INVALID_ARGUMENT. */
MB_API mb_status mb_physics_start(mb_physics * physics, const float * root_xyz, uint64_t root_count,
                                  const float * local_rotation_xyzw, uint64_t rotation_count, char * error,
                                  uint64_t error_capacity);

/* One 50 Hz tick (four 200 Hz substeps) towards the reference clip roots [frames, 3] and local
 * rotations [frames, 34, 4] at 30 FPS, sampled at source_time seconds (≥ 0; past the end the last pose
 * holds). frames 1 .. 2^20; root_count = 3·frames, rotation_count = 136·frames. Writes the physical
 * bodies [30, 3] to actual_xyz and the reference's [30, 3] to reference_xyz (capacities ≥ 90; either
 * may be NULL with capacity 0). Errors: MB_INVALID_ARGUMENT (nothing changed: NULL, counts, non-finite
 * values, not started, a controller clip outside 2 .. 3,600 frames), MB_NOT_IMPLEMENTED (neither a
 * SONIC handle nor an override), MB_COMPUTE_FAILED (MuJoCo or the policy; the robot state is kept). */
MB_API mb_status mb_physics_step(mb_physics * physics, const float * roots, uint64_t root_count, const float * rotations,
                                 uint64_t rotation_count, uint64_t frames, double source_time, float * actual_xyz,
                                 uint64_t actual_capacity, float * reference_xyz, uint64_t reference_capacity,
                                 char * error, uint64_t error_capacity);

/* Writes the parent of each of the 30 bodies (-1 for the pelvis) to parents[30]; count must be 30. */
MB_API mb_status mb_physics_skeleton(const mb_physics * physics, int32_t * parents, uint64_t count, char * error,
                                     uint64_t error_capacity);

/* Simulated time (s), the fall flag (pelvis below 0.2 m at the end of any tick since the reset; sticky)
 * and the number of active contacts that touch the robot. Any output pointer may be NULL. */
MB_API mb_status mb_physics_status(const mb_physics * physics, double * time, uint32_t * fallen, uint32_t * contacts,
                                   char * error, uint64_t error_capacity);

/* The number of robot collision geoms. */
MB_API mb_status mb_physics_collision_count(const mb_physics * physics, uint32_t * count, char * error,
                                            uint64_t error_capacity);

/* Collision geom `index`: type (2 sphere, 3 capsule, 4 ellipsoid, 5 cylinder, 6 box, 7 convex mesh),
 * MuJoCo size [3] (size_count 3) and name ("<body>:<n>"; "placeholder:<body>:<n>:<file>" for a
 * placeholder box; truncated to name_capacity, NUL-terminated; name may be NULL with capacity 0). */
MB_API mb_status mb_physics_collision_shape(const mb_physics * physics, uint32_t index, uint32_t * type, float * size,
                                            uint64_t size_count, char * name, uint64_t name_capacity, char * error,
                                            uint64_t error_capacity);

/* Hull triangles of a mesh geom: [n, 3, 3] vertex coordinates in the geom frame (MuJoCo axes); *count
 * receives the float count (0 for other types); xyz NULL with capacity 0 is a size query. */
MB_API mb_status mb_physics_collision_triangles(const mb_physics * physics, uint32_t index, float * xyz, uint64_t capacity,
                                                uint64_t * count, char * error, uint64_t error_capacity);

/* The world transform of every collision geom now: [N, 7] = position x y z and quaternion x y z w in
 * motion space, mapping the geom frame; count must be 7·N. */
MB_API mb_status mb_physics_collision_transforms(const mb_physics * physics, float * transforms, uint64_t count, char * error,
                                                 uint64_t error_capacity);

/* Copies trace `field` (MB_PHYSICS_TRACE_*) of the last tick; *count receives its length (0 when the
 * field did not run, e.g. the policy fields under an override); data NULL with capacity 0 is a size
 * query. */
MB_API mb_status mb_physics_trace(const mb_physics * physics, uint32_t field, double * data, uint64_t capacity,
                                  uint64_t * count, char * error, uint64_t error_capacity);

/* ---- additions (not in the reference runtime) ---------------------------------------------------- */

/* (Not in the reference runtime.) mb_physics_step with a MuJoCo qpos reference [frames, 36] at 30 FPS,
 * as mb_motion_get_mujoco_qpos gives it (values = 36·frames). Same rules and errors. */
MB_API mb_status mb_physics_step_qpos(mb_physics * physics, const float * qpos, uint64_t values, uint64_t frames,
                                      double source_time, float * actual_xyz, uint64_t actual_capacity,
                                      float * reference_xyz, uint64_t reference_capacity, char * error,
                                      uint64_t error_capacity);

/* (Not in the reference runtime.) mb_physics_start from MuJoCo qpos [36] (count 36; finite, unit root
 * quaternion ±0.01), as mb_motion_get_mujoco_qpos gives a frame. Same once-per-reset rule. */
MB_API mb_status mb_physics_start_qpos(mb_physics * physics, const float * qpos, uint64_t count, char * error,
                                       uint64_t error_capacity);

/* (Not in the reference runtime.) One tick of `count` (1..64) sessions, each towards its own qpos clip
 * qpos[i] [frames[i], 36] at source_times[i]; actual_xyz receives [count, 30, 3] (capacity ≥ 90·count,
 * or NULL with 0). All sessions must share one SONIC handle (or none): the controller's observations
 * of every policy-driven session go through one batched encoder and one batched decoder call. Under
 * overrides equal, bit for bit, to stepping the sessions one after another; under the policy within
 * the batched GEMMs' rounding. Every input is checked before any session moves; after a
 * MB_COMPUTE_FAILED every robot is back at its state before the call, its controller too (history,
 * previous action, reference timeline and heading; the message names the session). */
MB_API mb_status mb_physics_step_batch(mb_physics * const * sessions, uint64_t count, const float * const * qpos,
                                       const uint64_t * frames, const double * source_times, float * actual_xyz,
                                       uint64_t actual_capacity, char * error, uint64_t error_capacity);

/* (Not in the reference runtime.) Joint position targets [29] (MuJoCo order, radians, |·| ≤ 6.4) that
 * replace the policy from the next tick on; targets NULL with count 0 clears the override. Hands stay
 * PD-held at 0. */
MB_API mb_status mb_physics_set_action_override(mb_physics * physics, const float * targets, uint64_t count, char * error,
                                                uint64_t error_capacity);

/* (Not in the reference runtime.) Replaces the PD gains of the 29 body joints (kp [0, 1e4] N·m/rad,
 * kd [0, 1e3] N·m·s/rad; count 29 each); NULL, NULL with count 0 restores the session's table. */
MB_API mb_status mb_physics_set_gains(mb_physics * physics, const float * kp, const float * kd, uint64_t count,
                                      char * error, uint64_t error_capacity);

/* (Not in the reference runtime.) The session's per-joint table (the .mbphysics given, else the
 * release's), MuJoCo order, 29 values each (count 29): kp, kd, default angles (rad) and torque limits
 * (N·m). Any output pointer may be NULL. */
MB_API mb_status mb_physics_get_table(const mb_physics * physics, float * kp, float * kd, float * default_angles,
                                      float * torque_limits, uint64_t count, char * error, uint64_t error_capacity);

/* (Not in the reference runtime.) The full MuJoCo state now: qpos [nq] and qvel [nv] (doubles; either
 * may be NULL with capacity 0 as a size query; *_count receive nq and nv, 50 and 49 for the G1 scene). */
MB_API mb_status mb_physics_get_state(const mb_physics * physics, double * qpos, uint64_t qpos_capacity, uint64_t * qpos_count,
                                      double * qvel, uint64_t qvel_capacity, uint64_t * qvel_count, char * error,
                                      uint64_t error_capacity);

/* (Not in the reference runtime.) The robot now as MuJoCo qpos [36] (count 36), the form
 * mb_agent_set_context_qpos takes, so a planner can replan from where the robot is. */
MB_API mb_status mb_physics_get_mujoco_qpos(const mb_physics * physics, float * qpos, uint64_t count, char * error,
                                            uint64_t error_capacity);

/* (Not in the reference runtime.) The robot now as a G1Skeleton34 pose: root [3] and local rotations
 * x y z w [34, 4] in motion space (counts 3 and 136), the form mb_agent_set_context takes per frame. */
MB_API mb_status mb_physics_get_pose(const mb_physics * physics, float * root_xyz, uint64_t root_count,
                                     float * local_rotation_xyzw, uint64_t rotation_count, char * error,
                                     uint64_t error_capacity);

/* (Not in the reference runtime.) The scene as compiled: MuJoCo nq, nv, nu, and the mesh files that
 * were given placeholder boxes, newline-separated (names NULL with capacity 0 is a size query; *length
 * receives the byte count without the NUL). Any output pointer may be NULL. */
MB_API mb_status mb_physics_get_scene(const mb_physics * physics, uint32_t * nq, uint32_t * nv, uint32_t * nu,
                                      char * names, uint64_t names_capacity, uint64_t * length, char * error,
                                      uint64_t error_capacity);

/* mb_physics_set_controller_flags bits */
#define MB_PHYSICS_CONTROL_IDLE_READAPT  UINT32_C(1)
#define MB_PHYSICS_CONTROL_VELOCITY_STOP UINT32_C(2)

/* (Not in the reference runtime.) Options of gear_sonic_deploy's controller that its simulation runs
 * leave off (flags 0 at creation; kept by mb_physics_reset):
 * MB_PHYSICS_CONTROL_IDLE_READAPT: the planner behind the reference is in its idle mode. While the
 *   clip's last frame holds, its 12 lower-body joint targets move 2 % a tick toward the robot's angles
 *   once their mean error exceeds 0.10 rad (until it falls below 0.05), and back toward the clip's own
 *   angles while it is below 0.045 (g1_deploy_onnx_ref.cpp:3306-3367). A new clip starts afresh.
 * MB_PHYSICS_CONTROL_VELOCITY_STOP: the real robot's safety stop (g1_deploy_onnx_ref.cpp:2832; the
 *   deploy's sim mode disables it): a policy tick whose starting state has a body joint faster than
 *   +35 rad/s (signed, as upstream compares) answers MB_COMPUTE_FAILED and changes nothing, so the
 *   robot stays stopped until a reset, a start or an override.
 * Errors: MB_INVALID_ARGUMENT (NULL, unknown bits). */
MB_API mb_status mb_physics_set_controller_flags(mb_physics * physics, uint32_t flags, char * error, uint64_t error_capacity);

/* (Not in the reference runtime.) The session's MB_PHYSICS_CONTROL_* bits. */
MB_API mb_status mb_physics_get_controller_flags(const mb_physics * physics, uint32_t * flags, char * error,
                                                 uint64_t error_capacity);

#ifdef __cplusplus
}
#endif

#endif /* MOTIONBRICKS_PHYSICS_H */
