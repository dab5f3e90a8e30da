/*
 * anim-export.h — (not in the reference runtime) motion to and from animation files, and jump.
 *
 * Writers: a motion becomes BVH (text, for Blender, Maya, MotionBuilder) or glTF 2.0 binary (GLB,
 * for three.js, Unity, Unreal, Blender): the G1Skeleton34 hierarchy, rest offsets from the neutral
 * joints, one root translation and 34 local rotations per frame, 30 fps, Y up. The GLB layout is the
 * reference runtime's Kimodo clip layout (node-only, nodes named after g1skel34, one LINEAR
 * animation of the root's translation and every node's x y z w rotation), so a GLB written here
 * plays there and a Kimodo `animation.glb` reads here. Readers treat every byte as hostile
 * (docs/FORMATS.md lists their rules) and give a motion with joint positions (FK over the neutral
 * offsets) and MuJoCo qpos (the rotations projected onto the G1's hinges).
 *
 *     mb_motion_write_options o = {MB_MOTION_FORMAT_BVH, 100.0f, 0, 0};   // centimetres
 *     if (mb_motion_write_file(motion, "walk.bvh", &o, error, sizeof error) != MB_OK) { ... }
 *     mb_motion * clip = NULL;
 *     mb_motion_read_file("animation.glb", MB_MOTION_FORMAT_AUTO, &clip, error, sizeof error);
 *     ...
 *     mb_motion_free(clip);
 *
 * Conventions, error buffers and thread rules are those of motionbricks.h. The functions here
 * touch only their arguments: any number may run concurrently on distinct or shared (read-only)
 * motions; mb_agent_plan_jump follows mb_agent_plan's rules.
 */
#ifndef MOTIONBRICKS_ANIM_EXPORT_H
#define MOTIONBRICKS_ANIM_EXPORT_H

#include <motionbricks/motionbricks.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ==== formats and limits ======================================================================== */

/* File formats, carried as uint32_t. */
#define MB_MOTION_FORMAT_AUTO UINT32_C(0) /* readers only: by content (GLB magic "glTF", BVH "HIERARCHY") */
#define MB_MOTION_FORMAT_GLB  UINT32_C(1) /* glTF 2.0 binary, metres */
#define MB_MOTION_FORMAT_BVH  UINT32_C(2) /* Biovision hierarchy: channels Yrotation Xrotation Zrotation (R = Ry·Rx·Rz), degrees */

/* The reference runtime's clip limits: frames per file (10 minutes at 30 fps) and GLB bytes. */
#define MB_MOTION_FILE_MAX_FRAMES UINT64_C(18000)
#define MB_MOTION_GLB_MAX_BYTES   UINT64_C(16777216)
/* BVH text is larger (about 110 numbers a frame). */
#define MB_MOTION_BVH_MAX_BYTES   UINT64_C(67108864)

/* The jump's temporary target speed (m/s), as the reference demo's. */
#define MB_JUMP_SPEED 5.0f

/* What a writer writes. Zero-initialise, then set format. */
typedef struct mb_motion_write_options {
    uint32_t format;          /* MB_MOTION_FORMAT_GLB or MB_MOTION_FORMAT_BVH */
    float    units_per_metre; /* BVH lengths: 0 or 1 = metres, 100 = centimetres, any value in (0, 1000]; GLB: 0 or 1 */
    uint64_t first_frame;     /* the first frame written */
    uint64_t frame_count;     /* frames written from first_frame; 0 = to the end (at most 18,000 in all) */
} mb_motion_write_options;

/* The G1Skeleton34 joint `joint` (0..33) without a model: *name (static, never freed) and *parent
 * (-1 for the root), as the files name them. Errors: MB_INVALID_ARGUMENT (NULL pointers, joint out
 * of range). */
MB_API mb_status mb_skeleton_get_joint(uint32_t joint, const char ** name, int32_t * parent, char * error,
                                       uint64_t error_capacity);

/* ==== writing =================================================================================== */

/* Encodes frames [first_frame, first_frame + frame_count) of `motion` as options->format and writes
 * the byte count to *size. With buffer NULL (capacity ignored) only *size is written, so a caller can
 * size its buffer; otherwise the bytes go to buffer[0 .. *size). `motion` and `options` are
 * borrowed for the call. Errors: MB_INVALID_ARGUMENT (a NULL motion, options or size; an unknown
 * format; a unit outside (0, 1000] or not 1 for GLB; a frame range outside the motion or over 18,000
 * frames; capacity < *size, in which case *size is still written and nothing else). */
MB_API mb_status mb_motion_write(const mb_motion * motion, const mb_motion_write_options * options, uint8_t * buffer,
                                 uint64_t capacity, uint64_t * size, char * error, uint64_t error_capacity);

/* As mb_motion_write, into the file at `path` (written to PATH.tmp.PID, synced, then renamed: a
 * failed call leaves no partial file). Errors: those of mb_motion_write, MB_INVALID_ARGUMENT (a NULL
 * path), MB_IO_ERROR (the file cannot be written; the message names it). */
MB_API mb_status mb_motion_write_file(const mb_motion * motion, const char * path,
                                      const mb_motion_write_options * options, char * error, uint64_t error_capacity);

/* ==== reading =================================================================================== */

/* Reads a GLB or BVH clip (format MB_MOTION_FORMAT_* or AUTO) from data[0 .. size) into a new motion
 * (*output, caller-owned, free with mb_motion_free): root translations and local rotations as
 * stored (quaternions normalised), joint positions by FK over the neutral offsets, MuJoCo qpos by
 * projecting the rotations onto the G1's hinges; no targets, tokens or style. `data` is borrowed
 * for the call. Errors: MB_INVALID_ARGUMENT (NULL data or output, unknown format),
 * MB_INVALID_FORMAT (anything the reader's rules refuse; the message names the field and, for BVH,
 * the line). */
MB_API mb_status mb_motion_read(const uint8_t * data, uint64_t size, uint32_t format, mb_motion ** output, char * error,
                                uint64_t error_capacity);

/* As mb_motion_read, from the regular file at `path` (FIFOs, directories and devices are refused
 * before a byte is read; GLB at most 16 MiB, BVH at most 64 MiB, checked before reading). Errors:
 * those of mb_motion_read, MB_IO_ERROR (cannot open or read, not a regular file, too large). */
MB_API mb_status mb_motion_read_file(const char * path, uint32_t format, mb_motion ** output, char * error,
                                     uint64_t error_capacity);

/* A motion from `frames` (1..18,000) frames of root translations [frames, 3] and local rotations x y
 * z w [frames, 34, 4] (motion space, metres; each quaternion's norm within 0.9..1.1, then
 * normalised), with joint positions and qpos as mb_motion_read gives them. Both arrays are copied.
 * Errors: MB_INVALID_ARGUMENT (NULL pointers, a frame count out of range, non-finite values, |root|
 * beyond 1e4 m, a quaternion norm outside 0.9..1.1). */
MB_API mb_status mb_motion_create(const float * root_xyz, const float * local_rotation_xyzw, uint64_t frames,
                                  mb_motion ** output, char * error, uint64_t error_capacity);

/* ==== jump ====================================================================================== */

/* The reference demo's jump: one mb_agent_plan with `command`'s style, facing and seed but a target
 * speed of MB_JUMP_SPEED along the command's movement direction (its facing when the movement is
 * zero), without a world target. Play the whole returned plan before replanning (call
 * mb_agent_advance for its frames; mb_agent_get_replan_due would cut it short). The command is not
 * changed. Returns and errors as mb_agent_plan. */
MB_API mb_status mb_agent_plan_jump(mb_agent * agent, const mb_command * command, mb_motion ** output, char * error,
                                    uint64_t error_capacity);

#ifdef __cplusplus
}
#endif

#endif /* MOTIONBRICKS_ANIM_EXPORT_H */
