/*
 * motionbricks.h — C ABI v1 of the native MotionBricks runtime (G1 humanoid motion generation).
 *
 * A drop-in replacement for the reference runtime's C ABI v1: same names, argument order and types,
 * status codes, device values, defaults, validation rules and ownership rules. Stateless inference
 * (sparse keyframes in, a motion out) is declared in <motionbricks/inference.h>.
 *
 * Usage (every call returns an mb_status; check each one in real code):
 *
 *     #include <motionbricks/inference.h>
 *
 *     char error[512];
 *     mb_runtime_options * options = NULL;
 *     mb_model *           model   = NULL;
 *     mb_runtime_options_create(&options, error, sizeof error);
 *     mb_runtime_options_set_threads(options, 2, error, sizeof error);
 *     if (mb_model_load("models/g1-f32", options, &model, error, sizeof error) != MB_OK) {
 *         fprintf(stderr, "load failed: %s\n", error);
 *     }
 *     mb_runtime_options_free(options);           // options are copied at load
 *     uint32_t joints = 0;
 *     mb_model_get_joint_count(model, &joints, error, sizeof error);   // 34
 *     ...                                         // see inference.h for mb_model_infer
 *     mb_model_free(model);
 *
 * Conventions (apply to every function below):
 *   - Only fixed-width scalars, pointers and opaque handles cross the boundary; booleans and enum
 *     selectors are uint32_t, element counts uint64_t. No struct is passed by value.
 *   - Every fallible function returns mb_status (MB_OK = 0) and ends with (char * error,
 *     uint64_t error_capacity). On failure a message is written there, truncated to fit and always
 *     NUL-terminated when error != NULL and error_capacity > 0; on success error[0] is set to NUL.
 *     error = NULL or error_capacity = 0 discards the message. There is no global or thread-local
 *     "last error": the buffer is the only channel.
 *   - On failure, a function that creates an object sets *output = NULL (when output is not NULL)
 *     and changes nothing else; a failing setter leaves its object unchanged.
 *   - Every object has exactly one *_free function; passing NULL to it is a no-op.
 *   - Inputs are copied unless a comment says "borrowed". Returned pointers are borrowed from the
 *     object named in the comment and stay valid until the event named there.
 *   - No C++ exception ever crosses this boundary.
 *   - Motion layout: Y up, metres, radians, 30 frames per second, G1Skeleton34 (34 joints);
 *     root translations [frames, 3], local rotations as quaternions x, y, z, w [frames, 34, 4],
 *     frame-major, row-major float32.
 *
 * Thread safety:
 *   - Distinct objects may be used from distinct threads concurrently, including distinct models.
 *   - A model is immutable after mb_model_load and may be shared by threads. Calls that run the
 *     networks on a model (mb_model_infer, mb_model_infer_batch, mb_agent_plan, mb_agent_plan_batch)
 *     run concurrently on it: each agent owns its working memory, and each stateless call borrows
 *     working memory from a small pool inside the model. Each running call computes with the
 *     model's thread count. Model getters may be called concurrently with anything except
 *     mb_model_free.
 *   - Options, styles, commands, agents and inference requests are not synchronised: calls that mutate
 *     one of them must not overlap with any other call using the same object (a plan reads its
 *     command and the command's style).
 *   - A motion is immutable; any number of threads may read it concurrently until mb_motion_free.
 *   - Freeing an object while another thread uses it is undefined behaviour.
 */
#ifndef MOTIONBRICKS_MOTIONBRICKS_H
#define MOTIONBRICKS_MOTIONBRICKS_H

#include <stdint.h>

/* ==== version and export ======================================================================== */

/* The ABI version this header describes; mb_abi_version() returns the library's. They are equal for
 * a compatible library. New functions are only ever added (a changed signature gets a _v2 name), so
 * check for a symbol's presence, not the version, to discover a feature. */
#define MB_ABI_VERSION UINT32_C(1)

/* MB_API marks every exported function. Windows DLL users define MOTIONBRICKS_SHARED. */
#if defined(_WIN32) && defined(MOTIONBRICKS_SHARED)
#    if defined(MOTIONBRICKS_BUILD)
#        define MB_API __declspec(dllexport)
#    else
#        define MB_API __declspec(dllimport)
#    endif
#elif defined(__GNUC__) || defined(__clang__)
#    define MB_API __attribute__((visibility("default")))
#else
#    define MB_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ==== status codes ============================================================================== */

/* Returned by every fallible function. The list is only ever appended to. */
typedef uint32_t mb_status;
#define MB_OK                  UINT32_C(0) /* success */
#define MB_INVALID_ARGUMENT    UINT32_C(1) /* NULL handle/pointer, wrong count, NaN/Inf, value out of range */
#define MB_OUT_OF_MEMORY       UINT32_C(2) /* an allocation failed */
#define MB_IO_ERROR            UINT32_C(3) /* a file or directory is missing or unreadable */
#define MB_INVALID_FORMAT      UINT32_C(4) /* a file is malformed (bad magic, version, shapes, values) */
#define MB_INCOMPATIBLE_MODEL  UINT32_C(5) /* a well-formed bundle this runtime cannot run */
#define MB_BACKEND_UNAVAILABLE UINT32_C(6) /* the requested device is not available in this build */
#define MB_COMPUTE_FAILED      UINT32_C(7) /* inference failed or produced non-finite values */
#define MB_NOT_IMPLEMENTED     UINT32_C(8) /* the feature exists in the ABI but not in this build */
#define MB_INTERNAL_ERROR      UINT32_C(9) /* a bug in the library; the message says where */

/* Compute devices, carried as uint32_t. New devices are appended, never renumbered. */
typedef uint32_t mb_device;
#define MB_DEVICE_AUTO   UINT32_C(0) /* CUDA when this build has it and a usable GPU exists (one that runs the
                                       bundle's weight types: BF16/Q8_0 bundles run on the CPU), else the CPU */
#define MB_DEVICE_CPU    UINT32_C(1) /* the CPU backend */
#define MB_DEVICE_VULKAN UINT32_C(2) /* Vulkan: mb_model_load answers MB_BACKEND_UNAVAILABLE in this build */
#define MB_DEVICE_CUDA   UINT32_C(3) /* an NVIDIA GPU (compute capability 7.5+), in builds with CUDA */

/* (Not in the reference runtime.) Arithmetic precision of the networks, carried as uint32_t. Only
 * F32 gives upstream's numbers within the parity tolerances; the others trade accuracy for speed on
 * CUDA and are never chosen unless asked for. */
typedef uint32_t mb_precision;
#define MB_PRECISION_F32  UINT32_C(0) /* float32 everywhere, no tensor-core rounding (default) */
#define MB_PRECISION_TF32 UINT32_C(1) /* CUDA: matrix products with many rows on TF32 tensor cores */
#define MB_PRECISION_BF16 UINT32_C(2) /* CUDA: matrix weights stored and read as bfloat16, float32 sums */

/* The G1 (not in the reference runtime): joints per frame of G1Skeleton34, and floats per MuJoCo qpos
 * frame (root position, root quaternion w x y z, 29 hinge angles). */
#define MB_G1_JOINT_COUNT UINT32_C(34)
#define MB_G1_QPOS_SIZE   UINT32_C(36)

/* ==== handles =================================================================================== */

typedef struct mb_runtime_options mb_runtime_options; /* how to load a model (device, threads) */
typedef struct mb_model           mb_model;           /* a loaded bundle: immutable, shareable */
typedef struct mb_style           mb_style;           /* a motion style: exemplar clip, speed, durations */
typedef struct mb_command         mb_command;         /* what an agent plan should do (pure data) */
typedef struct mb_agent           mb_agent;           /* a stateful animation agent (history + planner) */
typedef struct mb_motion          mb_motion;          /* a generated motion (immutable result) */

/* ==== library =================================================================================== */

/* Returns MB_ABI_VERSION of the library (1). Never fails; thread-safe. */
MB_API uint32_t mb_abi_version(void);

/* Returns a static, NUL-terminated English name for `status` ("ok" for MB_OK, "unknown status" for a
 * value this library does not know). The string is never freed. Never fails; thread-safe. */
MB_API const char * mb_status_string(mb_status status);

/* ==== runtime options =========================================================================== */

/* Creates runtime options with the defaults: device MB_DEVICE_AUTO, threads 0 (one per hardware
 * thread), no backend directory. *output receives a new object owned by the caller; free it with
 * mb_runtime_options_free. Errors: MB_INVALID_ARGUMENT (output NULL), MB_OUT_OF_MEMORY. */
MB_API mb_status mb_runtime_options_create(mb_runtime_options ** output, char * error, uint64_t error_capacity);

/* Frees options created by mb_runtime_options_create. NULL is a no-op. Models loaded with them keep
 * their own copy. */
MB_API void mb_runtime_options_free(mb_runtime_options * value);

/* Selects the device: MB_DEVICE_AUTO, MB_DEVICE_CPU, MB_DEVICE_VULKAN or MB_DEVICE_CUDA. Any other
 * value → MB_INVALID_ARGUMENT. MB_DEVICE_VULKAN is accepted here and rejected by mb_model_load with
 * MB_BACKEND_UNAVAILABLE; so is MB_DEVICE_CUDA in a build without CUDA or on a machine without a
 * usable GPU (the message names the cause). value must not be NULL. */
MB_API mb_status mb_runtime_options_set_device(mb_runtime_options * value, mb_device device, char * error,
                                               uint64_t error_capacity);

/* Writes the selected device to *output. value and output must not be NULL. */
MB_API mb_status mb_runtime_options_get_device(const mb_runtime_options * value, mb_device * output,
                                               char * error, uint64_t error_capacity);

/* Selects the GPU by its CUDA ordinal (default 0) for MB_DEVICE_CUDA and MB_DEVICE_AUTO; the CPU
 * ignores it. An ordinal the machine lacks is rejected by mb_model_load (MB_BACKEND_UNAVAILABLE for
 * MB_DEVICE_CUDA; MB_DEVICE_AUTO then runs on the CPU). value must not be NULL. */
MB_API mb_status mb_runtime_options_set_device_ordinal(mb_runtime_options * value, uint32_t ordinal, char * error,
                                                       uint64_t error_capacity);

/* Writes the selected GPU ordinal to *output. value and output must not be NULL. */
MB_API mb_status mb_runtime_options_get_device_ordinal(const mb_runtime_options * value, uint32_t * output,
                                                       char * error, uint64_t error_capacity);

/* (Not in the reference runtime.) Selects the precision: MB_PRECISION_F32 (default), MB_PRECISION_TF32
 * or MB_PRECISION_BF16; any other value → MB_INVALID_ARGUMENT. TF32 and BF16 run on CUDA only:
 * mb_model_load answers MB_BACKEND_UNAVAILABLE for them with MB_DEVICE_CPU, and MB_DEVICE_AUTO that
 * falls back to the CPU runs F32 (mb_model_get_precision says which). value must not be NULL. */
MB_API mb_status mb_runtime_options_set_precision(mb_runtime_options * value, mb_precision precision, char * error,
                                                  uint64_t error_capacity);

/* Writes the selected precision to *output. value and output must not be NULL. */
MB_API mb_status mb_runtime_options_get_precision(const mb_runtime_options * value, mb_precision * output,
                                                  char * error, uint64_t error_capacity);

/* Sets the number of CPU threads used by inference on models loaded with these options; 0 (default)
 * means one per hardware thread. Values above 256 are clamped to 256 at load. value must not be NULL. */
MB_API mb_status mb_runtime_options_set_threads(mb_runtime_options * value, uint32_t threads, char * error,
                                                uint64_t error_capacity);

/* Writes the configured thread count (as set, before clamping) to *output. value and output must not
 * be NULL. */
MB_API mb_status mb_runtime_options_get_threads(const mb_runtime_options * value, uint32_t * output,
                                                char * error, uint64_t error_capacity);

/* Sets the directory where dynamically loaded compute backends are searched (copied). NULL or "" clears
 * it. The CPU backend is built in, so this build stores the value without using it. value must not be
 * NULL. */
MB_API mb_status mb_runtime_options_set_backend_directory(mb_runtime_options * value, const char * directory,
                                                          char * error, uint64_t error_capacity);

/* Writes the backend directory ("" when unset) to *output. The string is borrowed from `value` and
 * stays valid until the next set_backend_directory on it or mb_runtime_options_free. value and output
 * must not be NULL. */
MB_API mb_status mb_runtime_options_get_backend_directory(const mb_runtime_options * value, const char ** output,
                                                          char * error, uint64_t error_capacity);

/* ==== commands ================================================================================== */

/* Creates a command for agent plans with the defaults: no style, movement (0,0,0), facing (0,0,1),
 * target speed -1 (the style's speed), world target disabled at (0,0,0) heading 0, seed 0, Gumbel
 * sampling (argmax 0). A command is pure data and may be reused between plans. *output receives a
 * new object owned by the caller; free it with mb_command_free. Errors: MB_INVALID_ARGUMENT (output
 * NULL), MB_OUT_OF_MEMORY. */
MB_API mb_status mb_command_create(mb_command ** output, char * error, uint64_t error_capacity);

/* Frees a command. NULL is a no-op. The style it points to is not freed. */
MB_API void mb_command_free(mb_command * value);

/* Selects the style (NULL clears it). The style is borrowed: it must outlive every plan that uses
 * this command. value must not be NULL. */
MB_API mb_status mb_command_set_style(mb_command * value, const mb_style * style, char * error,
                                      uint64_t error_capacity);

/* Writes the borrowed style pointer (NULL when unset) to *output. value and output must not be NULL. */
MB_API mb_status mb_command_get_style(const mb_command * value, const mb_style ** output, char * error,
                                      uint64_t error_capacity);

/* Sets the world-space travel direction (Y is ignored by planners; (0,0,0) means stand still). Only the
 * direction counts, not the length: a plan normalises the ground-plane (x, z) part, so (0,0,10) moves as
 * far as (0,0,1) (upstream's demo controllers only ever send unit directions); a ground-plane length
 * below 1e-5 turns in place, as (0,0,0) does. Every component must be finite with |v| <= 1e6, else
 * MB_INVALID_ARGUMENT. value must not be NULL. */
MB_API mb_status mb_command_set_movement_direction(mb_command * value, float x, float y, float z, char * error,
                                                   uint64_t error_capacity);

/* Writes the movement direction to *x, *y, *z. No pointer may be NULL. */
MB_API mb_status mb_command_get_movement_direction(const mb_command * value, float * x, float * y, float * z,
                                                   char * error, uint64_t error_capacity);

/* Sets the world-space direction the body should face (its length does not matter). Components must be
 * finite with |v| <= 1e6 and the vector must not be zero (squared length <= 1e-12 is rejected), else
 * MB_INVALID_ARGUMENT. value must not be NULL. */
MB_API mb_status mb_command_set_facing_direction(mb_command * value, float x, float y, float z, char * error,
                                                 uint64_t error_capacity);

/* Writes the facing direction to *x, *y, *z. No pointer may be NULL. */
MB_API mb_status mb_command_get_facing_direction(const mb_command * value, float * x, float * y, float * z,
                                                 char * error, uint64_t error_capacity);

/* Sets the target speed in metres per second; a negative value (down to -1) selects the style's
 * configured speed. NaN, infinities and values below -1 → MB_INVALID_ARGUMENT. value must not be NULL. */
MB_API mb_status mb_command_set_target_speed(mb_command * value, float metres_per_second, char * error,
                                             uint64_t error_capacity);

/* Writes the target speed to *output. value and output must not be NULL. */
MB_API mb_status mb_command_get_target_speed(const mb_command * value, float * output, char * error,
                                             uint64_t error_capacity);

/* Sets an explicit world-space root target (position and heading in radians about +Y) and whether it
 * is used (enabled 0 or 1). Values must be finite and enabled 0/1, else MB_INVALID_ARGUMENT. value must
 * not be NULL. */
MB_API mb_status mb_command_set_world_target(mb_command * value, float x, float y, float z, float heading_radians,
                                             uint32_t enabled, char * error, uint64_t error_capacity);

/* Writes the world target and its enabled flag. No pointer may be NULL. */
MB_API mb_status mb_command_get_world_target(const mb_command * value, float * x, float * y, float * z,
                                             float * heading_radians, uint32_t * enabled, char * error,
                                             uint64_t error_capacity);

/* Sets the per-plan random seed (any value; default 0). value must not be NULL. */
MB_API mb_status mb_command_set_seed(mb_command * value, uint64_t seed, char * error, uint64_t error_capacity);

/* Writes the seed to *output. value and output must not be NULL. */
MB_API mb_status mb_command_get_seed(const mb_command * value, uint64_t * output, char * error,
                                     uint64_t error_capacity);

/* Selects pose-token sampling: 0 (default) Gumbel at temperature 1, 1 argmax. Other values →
 * MB_INVALID_ARGUMENT. value must not be NULL. */
MB_API mb_status mb_command_set_sampling_argmax(mb_command * value, uint32_t enabled, char * error,
                                                uint64_t error_capacity);

/* Writes the sampling flag (0 or 1) to *output. value and output must not be NULL. */
MB_API mb_status mb_command_get_sampling_argmax(const mb_command * value, uint32_t * output, char * error,
                                                uint64_t error_capacity);

/* ==== model ===================================================================================== */

/* Loads and validates the bundle directory `bundle_directory` (pose.gguf, root.gguf, vq-decoder.gguf,
 * support.gguf; weights are memory-mapped). options may be NULL (defaults); they are copied. *output
 * receives a new model owned by the caller; free it with mb_model_free after every agent made from it.
 * Errors: MB_INVALID_ARGUMENT (bundle_directory NULL or "", output NULL, invalid device in options),
 * MB_BACKEND_UNAVAILABLE (MB_DEVICE_VULKAN; MB_DEVICE_CUDA without CUDA or a usable GPU), MB_IO_ERROR (directory or a component missing or
 * unreadable), MB_INVALID_FORMAT (a malformed component), MB_INCOMPATIBLE_MODEL (well-formed weights
 * this runtime cannot run), MB_OUT_OF_MEMORY (also device memory for the weights, which a GPU backend
 * copies here, once). Thread-safe (loads of distinct models may overlap). */
MB_API mb_status mb_model_load(const char * bundle_directory, const mb_runtime_options * options, mb_model ** output,
                               char * error, uint64_t error_capacity);

/* Frees a model and unmaps its weights. NULL is a no-op. Motions produced from it stay valid. */
MB_API void mb_model_free(mb_model * value);

/* Writes the device that runs the model to *output: MB_DEVICE_CPU or MB_DEVICE_CUDA (what
 * MB_DEVICE_AUTO chose). value and output must not be NULL. */
MB_API mb_status mb_model_get_device(const mb_model * value, mb_device * output, char * error,
                                     uint64_t error_capacity);

/* (Not in the reference runtime.) Writes the precision the model computes in to *output (F32 where
 * MB_DEVICE_AUTO fell back to the CPU). value and output must not be NULL. */
MB_API mb_status mb_model_get_precision(const mb_model * value, mb_precision * output, char * error,
                                        uint64_t error_capacity);

/* (Not in the reference runtime.) Writes the device memory the model uses: *model_bytes the bytes it
 * holds on its GPU (weights, with their bfloat16 copies under MB_PRECISION_BF16, and the working
 * memory pooled for mb_model_infer and mb_model_infer_batch; not agents' working memory, not that of
 * calls running at that moment, not cuBLAS's or the CUDA context's), *device_used_bytes and
 * *device_total_bytes the whole GPU's use (total − free, every process) and size. A model on the CPU
 * writes 0 to all three and returns MB_OK. No argument but error may be NULL; MB_COMPUTE_FAILED
 * when the GPU cannot be asked. Safe to call while the model runs (a running call's memory may then
 * be missing from *model_bytes). */
MB_API mb_status mb_model_get_device_memory(const mb_model * value, uint64_t * model_bytes,
                                            uint64_t * device_used_bytes, uint64_t * device_total_bytes,
                                            char * error, uint64_t error_capacity);

/* Writes the number of learned parameters (pose + root + VQ decoder; 183,148,382 for the release
 * bundle) to *output. value and output must not be NULL. */
MB_API mb_status mb_model_get_parameter_count(const mb_model * value, uint64_t * output, char * error,
                                              uint64_t error_capacity);

/* Writes the skeleton's joint count (34) to *output. value and output must not be NULL. */
MB_API mb_status mb_model_get_joint_count(const mb_model * value, uint32_t * output, char * error,
                                          uint64_t error_capacity);

/* Writes the name of joint `joint` (0..33, e.g. "pelvis_skel") to *output: a NUL-terminated string
 * borrowed from the model until mb_model_free. joint out of range → MB_INVALID_ARGUMENT. */
MB_API mb_status mb_model_get_joint_name(const mb_model * value, uint32_t joint, const char ** output, char * error,
                                         uint64_t error_capacity);

/* Writes the parent index of joint `joint` (-1 for the root) to *output. joint out of range →
 * MB_INVALID_ARGUMENT. */
MB_API mb_status mb_model_get_joint_parent(const mb_model * value, uint32_t joint, int32_t * output, char * error,
                                           uint64_t error_capacity);

/* Writes the rest-pose position of joint `joint` relative to the pelvis (metres, Y up, Z forward).
 * joint out of range or any NULL pointer → MB_INVALID_ARGUMENT. */
MB_API mb_status mb_model_get_neutral_joint_position(const mb_model * value, uint32_t joint, float * x, float * y,
                                                     float * z, char * error, uint64_t error_capacity);

/* ==== styles ==================================================================================== */

/* Loads and validates a .mbstyle v1 file (one exemplar clip of the G1 skeleton, its configured speed and
 * its allowed durations). `model` is only used to check that the style's skeleton matches; the style
 * keeps no reference to it. *output receives a new style owned by the caller; free it with
 * mb_style_free after the last plan of every command that borrows it. Errors: MB_INVALID_ARGUMENT
 * (model, style_path or output NULL, style_path ""), MB_IO_ERROR (missing or unreadable file),
 * MB_INVALID_FORMAT (malformed file: keys, shapes, non-finite values, rotations, duration mask),
 * MB_OUT_OF_MEMORY. */
MB_API mb_status mb_style_load(const mb_model * model, const char * style_path, mb_style ** output, char * error,
                               uint64_t error_capacity);

/* Frees a style. NULL is a no-op. Commands that still point to it must not be used for plans. */
MB_API void mb_style_free(mb_style * value);

/* Writes the style's name (e.g. "walk") to *output: a NUL-terminated string borrowed from the style until
 * mb_style_free. value and output must not be NULL. */
MB_API mb_status mb_style_get_name(const mb_style * value, const char ** output, char * error,
                                   uint64_t error_capacity);

/* Overrides the style's configured speed (metres per second), used by commands whose target speed is
 * negative. Must be finite and >= 0, else MB_INVALID_ARGUMENT. value must not be NULL. */
MB_API mb_status mb_style_set_speed(mb_style * value, float metres_per_second, char * error,
                                    uint64_t error_capacity);

/* Writes the style's current speed (the file's value unless overridden) to *output. value and output must
 * not be NULL. */
MB_API mb_status mb_style_get_speed(const mb_style * value, float * output, char * error, uint64_t error_capacity);

/* ==== agents ==================================================================================== */

/* Creates a stateful animation agent on `model`. The model is borrowed: it must outlive the agent. A new
 * agent has no history; its first plan starts from the first 4 frames of the command's style unless
 * mb_agent_reset or mb_agent_set_context supplied one. *output receives a new agent owned by the caller;
 * free it with mb_agent_free. Errors: MB_INVALID_ARGUMENT (model or output NULL), MB_OUT_OF_MEMORY. */
MB_API mb_status mb_agent_create(const mb_model * model, mb_agent ** output, char * error,
                                 uint64_t error_capacity);

/* Frees an agent. NULL is a no-op. Motions it planned stay valid. */
MB_API void mb_agent_free(mb_agent * value);

/* Seeds the agent's history from `initial_style`'s clip (the next plan starts from its first 4 frames;
 * mb_agent_advance moves through the clip). The clip is copied: the style is not borrowed.
 * initial_style NULL clears the history (as after mb_agent_create). value must not be NULL. */
MB_API mb_status mb_agent_reset(mb_agent * value, const mb_style * initial_style, char * error,
                                uint64_t error_capacity);

/* Replaces the agent's history with the caller's poses: root_xyz [frames, 3] (pelvis position, metres,
 * Y up) and local_rotation_xyzw [frames, joints, 4] (parent-relative quaternions x, y, z, w; joint 0 is
 * the pelvis's world rotation). frames >= 4, joints == 34; every value finite and every quaternion's norm
 * within 1 +- 0.01, else MB_INVALID_ARGUMENT and the agent is unchanged. The next plan starts from the
 * LAST 4 frames (the cursor is placed on frames - 4). Poses are reduced to the G1's degrees of freedom
 * (each hinge keeps its rotation about its own axis). The arrays are copied. */
MB_API mb_status mb_agent_set_context(mb_agent * value, const float * root_xyz, const float * local_rotation_xyzw,
                                      uint64_t frames, uint64_t joints, char * error, uint64_t error_capacity);

/* Gives the agent the side-step styles of upstream's blend-space remap: when a plan's style is named
 * "walk" or "slow_walk" and its movement points more than 45 degrees (and less than 135) to the left or
 * right of the spring's target heading, the target poses come from `walk_left` or `walk_right` instead
 * (the duration mask stays the command style's, as upstream's demo does; mb_motion_get_style_name
 * names the style the targets came from). Both styles are copied; both
 * NULL removes them (then, as in the reference runtime, a plan uses only its command's style). Errors:
 * MB_INVALID_ARGUMENT (value NULL, or exactly one of walk_left / walk_right NULL); the agent is then
 * unchanged. */
MB_API mb_status mb_agent_set_sidestep_styles(mb_agent * value, const mb_style * walk_left,
                                              const mb_style * walk_right, char * error, uint64_t error_capacity);

/* Plans one transition from the agent's 4 history frames at its cursor to the command's style, movement,
 * facing, speed or world target: 24..64 frames (a multiple of 4) whose first 4 frames blend with the
 * history (the seam), plus the 4 placed target poses (mb_motion_get_target_*). The plan becomes the
 * agent's history with the cursor on frame 0 (call mb_agent_advance as it plays). *output receives a new
 * motion owned by the caller. Errors: MB_INVALID_ARGUMENT (value, command or output NULL; the command has
 * no style), MB_COMPUTE_FAILED (inference failed or produced non-finite values), MB_OUT_OF_MEMORY; on
 * failure *output is NULL and the agent is unchanged. Runs on the agent's own working memory, so it may
 * run concurrently with other inference on the same model. */
MB_API mb_status mb_agent_plan(mb_agent * value, const mb_command * command, mb_motion ** output, char * error,
                               uint64_t error_capacity);

/* Plans for `count` agents at once (1..4096, mb_model_get_batch_limit; fused in chunks of
 * mb_model_get_batch_lanes lanes, batch.h): outputs[i] receives agents[i]'s plan for commands[i], exactly
 * as mb_agent_plan would. Every agent must use the same model and appear once. All-or-nothing: on any
 * failure every outputs[i] is NULL and no agent changes. agents, commands and outputs must hold `count`
 * entries, none NULL (outputs' entries are overwritten). Errors as mb_agent_plan, plus
 * MB_INVALID_ARGUMENT for count 0 or > 4096, a repeated agent or agents of different models. */
MB_API mb_status mb_agent_plan_batch(mb_agent * const * agents, const mb_command * const * commands, uint64_t count,
                                     mb_motion ** outputs, char * error, uint64_t error_capacity);

/* Moves the agent's cursor `frames` frames forward in its history (clamped to the last frame); the next
 * plan starts from the 4 frames at the cursor. Call it with the number of frames played since the last
 * plan. Without a history (new agent, reset with NULL) it does nothing. value must not be NULL. */
MB_API mb_status mb_agent_advance(mb_agent * value, uint32_t frames, char * error, uint64_t error_capacity);

/* (Not in the reference runtime.) Replaces the agent's history with MuJoCo qpos frames of the G1
 * [frames, 36] (root position, metres, Z up; root quaternion w, x, y, z; the 29 hinge angles in the
 * joint order of the G1 MJCF), the form mb_motion_get_mujoco_qpos returns. frames >= 4; every value
 * finite and every root quaternion's norm within 1 +- 0.01, else MB_INVALID_ARGUMENT and the agent is
 * unchanged. As mb_agent_set_context, the next plan starts from the LAST 4 frames. The array is copied.
 * value and qpos must not be NULL. */
MB_API mb_status mb_agent_set_context_qpos(mb_agent * value, const float * qpos, uint64_t frames, char * error,
                                           uint64_t error_capacity);

/* (Not in the reference runtime.) Writes the agent's cursor (the history frame the next plan starts
 * from; 0 after a plan, a reset or a context) to *output. value and output must not be NULL. */
MB_API mb_status mb_agent_get_cursor(const mb_agent * value, uint64_t * output, char * error,
                                     uint64_t error_capacity);

/* (Not in the reference runtime.) Writes the agent's whole history as a new motion to *output: its
 * frames (the last plan, or the seeded clip padded to 64 frames, or the 4 context frames; 0 frames
 * without a history) with root translations, local rotations, joint positions and MuJoCo qpos, and no
 * target frames. The motion is owned by the caller (free with mb_motion_free) and does not change when
 * the agent does. Errors: MB_INVALID_ARGUMENT (value or output NULL; *output is then NULL when output
 * is not), MB_OUT_OF_MEMORY. */
MB_API mb_status mb_agent_get_history(const mb_agent * value, mb_motion ** output, char * error,
                                      uint64_t error_capacity);

/* (Not in the reference runtime.) Writes the ground-plane facing of the history frame at the cursor
 * (the pelvis's forward axis, Y zeroed, unit length up to 1e-5) to *x, *y, *z; (0, 0, 1) without a
 * history. Pass it to mb_command_set_facing_direction to keep the current facing. No pointer may be
 * NULL. */
MB_API mb_status mb_agent_get_facing_direction(const mb_agent * value, float * x, float * y, float * z,
                                               char * error, uint64_t error_capacity);

/* (Not in the reference runtime.) Upstream's demo replan rule: writes 1 to *output when the cursor has
 * reached frame 16 or the history's last frame, unless the last plan and `command` both play the idle
 * role (their style is named "idle": the history then plays out and holds its last frame), else 0.
 * A program that shows one frame per step and plans when this says so plays what upstream's demo plays.
 * Errors: MB_INVALID_ARGUMENT (a NULL pointer, or a command without a style). The agent is not
 * changed. */
MB_API mb_status mb_agent_get_replan_due(const mb_agent * value, const mb_command * command, uint32_t * output,
                                         char * error, uint64_t error_capacity);

/* ==== motions =================================================================================== */

/* Frees a motion. NULL is a no-op. Pointers returned by the getters below become invalid. */
MB_API void mb_motion_free(mb_motion * value);

/* Writes the number of frames (24..64 for stateless inference, a multiple of 4) to *output. value and
 * output must not be NULL. */
MB_API mb_status mb_motion_get_frame_count(const mb_motion * value, uint64_t * output, char * error,
                                           uint64_t error_capacity);

/* Writes the number of joints per frame (34) to *output. value and output must not be NULL. */
MB_API mb_status mb_motion_get_joint_count(const mb_motion * value, uint64_t * output, char * error,
                                           uint64_t error_capacity);

/* Writes a pointer to the root translations [frames, 3] (metres) to *output and the number of floats
 * (frames * 3) to *values. The buffer is borrowed from the motion until mb_motion_free; it survives
 * the model and the request that produced it. No pointer may be NULL. */
MB_API mb_status mb_motion_get_root_translations(const mb_motion * value, const float ** output, uint64_t * values,
                                                 char * error, uint64_t error_capacity);

/* Writes a pointer to the local joint rotations [frames, 34, 4] (quaternions x, y, z, w; joint 0 is
 * the root's world rotation) to *output and the number of floats to *values. Borrowed until
 * mb_motion_free. No pointer may be NULL. */
MB_API mb_status mb_motion_get_local_rotations_xyzw(const mb_motion * value, const float ** output,
                                                    uint64_t * values, char * error, uint64_t error_capacity);

/* (Not in the reference runtime.) Writes a pointer to the world joint positions [frames, 34, 3] (metres,
 * Y up; forward kinematics of the motion) to *output and the number of floats to *values. Borrowed until
 * mb_motion_free. No pointer may be NULL. */
MB_API mb_status mb_motion_get_joint_positions(const mb_motion * value, const float ** output, uint64_t * values,
                                               char * error, uint64_t error_capacity);

/* (Not in the reference runtime.) Writes a pointer to the motion as MuJoCo qpos of the G1 [frames, 36]
 * to *output and the number of floats to *values: root position (metres, Z up), root quaternion w, x, y,
 * z, then the 29 hinge angles (radians) in the joint order of the G1 MJCF. Agent plans give the
 * seam-blended qpos upstream's agent plays; stateless inference converts each frame as upstream's
 * converter does (hinge angles about their own axes; other rotation components are dropped). Borrowed
 * until mb_motion_free. No pointer may be NULL. */
MB_API mb_status mb_motion_get_mujoco_qpos(const mb_motion * value, const float ** output, uint64_t * values,
                                           char * error, uint64_t error_capacity);

/* Writes the number of target frames carried by the motion to *output: 4 for agent plans (the placed
 * style poses the planner aimed at), 0 for stateless inference. value and output must not be NULL. */
MB_API mb_status mb_motion_get_target_frame_count(const mb_motion * value, uint64_t * output, char * error,
                                                  uint64_t error_capacity);

/* Writes the target root translations [target frames, 3] and their float count; *output is NULL and
 * *values 0 when the motion has no target frames. Borrowed until mb_motion_free. No pointer may be
 * NULL. */
MB_API mb_status mb_motion_get_target_root_translations(const mb_motion * value, const float ** output,
                                                        uint64_t * values, char * error, uint64_t error_capacity);

/* Writes the target local rotations [target frames, 34, 4] (x, y, z, w) and their float count; *output
 * is NULL and *values 0 when the motion has no target frames. Borrowed until mb_motion_free. No pointer
 * may be NULL. */
MB_API mb_status mb_motion_get_target_local_rotations_xyzw(const mb_motion * value, const float ** output,
                                                           uint64_t * values, char * error,
                                                           uint64_t error_capacity);

/* (Not in the reference runtime.) Writes the target joint positions [target frames, 34, 3] (world,
 * metres, Y up: the placed style poses an agent plan aimed at) and their float count; *output is NULL
 * and *values 0 when the motion has no target frames. Borrowed until mb_motion_free. No pointer may be
 * NULL. */
MB_API mb_status mb_motion_get_target_joint_positions(const mb_motion * value, const float ** output,
                                                      uint64_t * values, char * error, uint64_t error_capacity);

/* (Not in the reference runtime.) Writes the name of the style whose poses an agent plan aimed at
 * (after the side-step remap; "" for stateless inference and agent histories) to *output: a
 * NUL-terminated string borrowed from the motion until mb_motion_free. No pointer may be NULL. */
MB_API mb_status mb_motion_get_style_name(const mb_motion * value, const char ** output, char * error,
                                          uint64_t error_capacity);

/* (Not in the reference runtime.) Writes the number of pose tokens n (frames / 4; 0 for agent
 * histories) to *output. value and output must not be NULL. */
MB_API mb_status mb_motion_get_token_count(const mb_motion * value, uint64_t * output, char * error,
                                           uint64_t error_capacity);

/* (Not in the reference runtime.) Writes a pointer to the sampled pose tokens [n, 8] (one code 0..9 per
 * tokenizer head) and their count (n * 8); *output is NULL and *values 0 for agent histories. Borrowed
 * until mb_motion_free. No pointer may be NULL. */
MB_API mb_status mb_motion_get_tokens(const mb_motion * value, const int32_t ** output, uint64_t * values,
                                      char * error, uint64_t error_capacity);

/* (Not in the reference runtime.) Stateless inference only: writes a pointer to the duration logits the
 * duration was chosen from [12] (-inf where a duration was not allowed) and their count; *output is
 * NULL and *values 0 for agent plans. Borrowed until mb_motion_free. No pointer may be NULL. */
MB_API mb_status mb_motion_get_duration_logits(const mb_motion * value, const float ** output, uint64_t * values,
                                               char * error, uint64_t error_capacity);

/* (Not in the reference runtime.) Stateless inference only: writes a pointer to upstream's predict
 * output, the raw 414-d global features [frames, 414] the motion was decoded from, and their count;
 * *output is NULL and *values 0 for agent plans. Borrowed until mb_motion_free. No pointer may be NULL. */
MB_API mb_status mb_motion_get_global_features(const mb_motion * value, const float ** output, uint64_t * values,
                                               char * error, uint64_t error_capacity);

/* Stages of one inference, carried as uint32_t (for mb_motion_get_stage_time_ms). */
#define MB_STAGE_PREPARE UINT32_C(0) /* validation, recentring, normalisation */
#define MB_STAGE_ROOT    UINT32_C(1) /* root planner */
#define MB_STAGE_POSE    UINT32_C(2) /* pose-token planner */
#define MB_STAGE_DECODER UINT32_C(3) /* VQ decoder */
#define MB_STAGE_FINISH  UINT32_C(4) /* local to global, forward kinematics */
#define MB_STAGE_TOTAL   UINT32_C(5) /* the whole inference */

/* (Not in the reference runtime.) Writes the wall time in milliseconds that `stage` (MB_STAGE_*) of the
 * inference behind this motion took (0 for agent histories) to *output. Errors: MB_INVALID_ARGUMENT (a
 * NULL pointer or an unknown stage). */
MB_API mb_status mb_motion_get_stage_time_ms(const mb_motion * value, uint32_t stage, float * output, char * error,
                                             uint64_t error_capacity);

#ifdef __cplusplus
}
#endif

#include <motionbricks/batch.h>
#include <motionbricks/parity.h>
/* motion out to robot stacks: qpos CSV/NPZ, SONIC reference folders, ZMQ protocol v1 */
#include <motionbricks/robot-export.h>
/* additions in their own headers (not in the reference runtime) */
#include <motionbricks/anim-export.h>
/* the simulated G1 (MuJoCo) and, through it, the SONIC policy */
#include <motionbricks/physics.h>

#endif /* MOTIONBRICKS_MOTIONBRICKS_H */
