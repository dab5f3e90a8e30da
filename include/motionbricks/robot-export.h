/*
 * robot-export.h — motion out to robot stacks (part of C ABI v1; not in the reference runtime).
 *
 * Writes a G1 motion in the shapes robot trackers read: qpos CSV or NPZ at 30 fps or resampled to
 * 50 Hz, a SONIC reference-motion folder (upstream gear_sonic_deploy's 50 Hz CSVs), and the bytes of
 * one message of gear_sonic_deploy's ZMQ stream protocol v1 for any transport. Every format is
 * described field by field in docs/FORMATS.md.
 *
 *     mb_motion * plan = ...;   // from mb_agent_plan or mb_model_infer
 *     char error[512];
 *     mb_motion_write_qpos_file(plan, "walk.csv", MB_QPOS_FORMAT_CSV, 50, MB_QPOS_QUAT_XYZW, error, sizeof error);
 *     mb_motion_write_sonic_folder(plan, "reference/walk_001", NULL, error, sizeof error);
 *
 * Conventions: those of motionbricks.h. Input qpos is always the 30 fps MuJoCo qpos of
 * mb_motion_get_mujoco_qpos: [frames, 36] float32, root xyz (m, Z up), root quaternion w x y z,
 * 29 hinge angles (rad) in the G1 MJCF's joint order. 50 Hz resampling follows upstream's deploy:
 * floor(frames * 5 / 3) frames, frame k at 30 fps position 0.6 k between floor and the next frame
 * (clamped to the last), root position and hinges linear, root quaternion SLERP.
 *
 * Thread safety: every function here is reentrant; it reads its inputs and writes only its outputs
 * (files are written through a temporary file and a rename, so a reader never sees half a file).
 */
#ifndef MOTIONBRICKS_ROBOT_EXPORT_H
#define MOTIONBRICKS_ROBOT_EXPORT_H

#include <motionbricks/motionbricks.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ==== qpos files ================================================================================ */

/* File formats, carried as uint32_t. */
#define MB_QPOS_FORMAT_CSV UINT32_C(0) /* one frame a row, 36 numbers, optional header row of names */
#define MB_QPOS_FORMAT_NPZ UINT32_C(1) /* stored zip: qpos <f8 [F, 36], fps, quat_order, joint_names */

/* Flags, or-ed into a uint32_t. */
#define MB_QPOS_QUAT_XYZW  UINT32_C(1) /* root quaternion written x y z w (LAFAN1, BeyondMimic); default w x y z */
#define MB_QPOS_NO_HEADER  UINT32_C(2) /* CSV without the header row (ignored for NPZ) */

/* Writes `frames` 30 fps qpos frames (borrowed, read only during the call) to `path` in `format` at
 * `rate_hz` (30: as given, 50: resampled) with `flags`. Errors: MB_INVALID_ARGUMENT (a NULL pointer,
 * frames 0, an unknown format or flag, a rate other than 30 or 50, a non-finite value, a zero root
 * quaternion), MB_IO_ERROR (the file cannot be written; nothing is left at `path`). */
MB_API mb_status mb_qpos_write_file(const float * qpos, uint64_t frames, const char * path, uint32_t format,
                                    uint32_t rate_hz, uint32_t flags, char * error, uint64_t error_capacity);

/* The same for the qpos of `motion` (mb_motion_get_mujoco_qpos). */
MB_API mb_status mb_motion_write_qpos_file(const mb_motion * motion, const char * path, uint32_t format,
                                           uint32_t rate_hz, uint32_t flags, char * error, uint64_t error_capacity);

/* Reads a 30 fps qpos file written by mb_qpos_write_file (or any CSV of 36 numbers a row) into a new
 * motion (*output, free with mb_motion_free): qpos, forward kinematics and local rotations, no targets
 * or tokens. `format` is MB_QPOS_FORMAT_CSV or _NPZ. A CSV header row names the quaternion order; a CSV
 * without one uses MB_QPOS_QUAT_XYZW from `flags` (else w x y z). The file must be at 30 fps (an NPZ
 * says its rate; a CSV is taken as 30). Errors: MB_INVALID_ARGUMENT (NULL pointers, unknown format or
 * flags), MB_IO_ERROR (missing, unreadable, not a regular file), MB_INVALID_FORMAT (wrong column
 * count, a non-number, NaN or Inf, a zero quaternion, a bad header or zip/npy structure, a rate other
 * than 30), each naming the line, column or entry. */
MB_API mb_status mb_motion_read_qpos_file(const char * path, uint32_t format, uint32_t flags, mb_motion ** output,
                                          char * error, uint64_t error_capacity);

/* ==== SONIC reference-motion folders ============================================================ */

/* Writes the folder `directory` (created if missing; its 8 files replaced) that upstream's
 * gear_sonic_deploy reads as one reference motion: joint_pos.csv and joint_vel.csv (IsaacLab joint
 * order, through the deploy's index map), body_pos.csv, body_quat.csv, body_lin_vel.csv and
 * body_ang_vel.csv (the deploy's 14 tracked bodies, by forward kinematics of the MJCF), metadata.txt
 * and info.txt, all at 50 Hz. `mjcf_path` names the MJCF whose bodies are used (NULL: the built-in
 * G1 model the qpos converter uses). frames >= 2. Errors: MB_INVALID_ARGUMENT (NULL pointers, frames
 * < 2, non-finite values, a zero quaternion), MB_INVALID_FORMAT (the MJCF), MB_IO_ERROR. */
MB_API mb_status mb_qpos_write_sonic_folder(const float * qpos, uint64_t frames, const char * directory,
                                            const char * mjcf_path, char * error, uint64_t error_capacity);

/* The same for the qpos of `motion`. */
MB_API mb_status mb_motion_write_sonic_folder(const mb_motion * motion, const char * directory, const char * mjcf_path,
                                              char * error, uint64_t error_capacity);

/* ==== ZMQ stream protocol v1 (gear_sonic_deploy) ================================================ */

/* Samples the 30 fps clip `qpos` [frames, 36] a fraction `weight` (0..1) of the way from frame `frame`
 * to frame + 1 (both clamped to the last frame; 50 Hz frame k is frame 3k / 5 in integers, weight
 * (3k mod 5) / 5) and writes the 29 hinge angles in IsaacLab order to joint_pos[29] and the root
 * quaternion w x y z to body_quat[4]. Either output may be NULL. Errors: MB_INVALID_ARGUMENT (qpos
 * NULL, frames 0, weight outside 0..1). */
MB_API mb_status mb_qpos_sample_isaaclab(const float * qpos, uint64_t frames, uint64_t frame, double weight,
                                         double * joint_pos, double * body_quat, char * error, uint64_t error_capacity);

/* Encodes one protocol v1 message of `frames` frames: `topic` (NUL-terminated, may be ""), a
 * 1280-byte NUL-padded JSON header, then joint_pos f64 [frames, 29], joint_vel f64 [frames, 29]
 * (IsaacLab order), body_quat f64 [frames, 4] (root, w x y z) and frame_index i64 [frames]. The
 * message size is written to *size; the bytes go to output when capacity is at least that (output
 * may be NULL with capacity 0 to ask for the size). Errors: MB_INVALID_ARGUMENT (NULL pointers,
 * frames 0 or above 10000, a non-finite value, capacity too small: *size still says what is
 * needed). */
MB_API mb_status mb_robot_stream_encode(const char * topic, const double * joint_pos, const double * joint_vel,
                                    const double * body_quat, const int64_t * frame_index, uint64_t frames,
                                    uint8_t * output, uint64_t capacity, uint64_t * size, char * error,
                                    uint64_t error_capacity);

#ifdef __cplusplus
}
#endif

#endif /* MOTIONBRICKS_ROBOT_EXPORT_H */
