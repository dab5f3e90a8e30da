/*
 * inference.h — stateless MotionBricks inference: sparse keyframe constraints in, one motion out.
 *
 * A request holds eight constraint slots: slots 0..3 are four source (context) frames, slots 4..7
 * four target frames that the generated clip must end on. Fill it either from poses with
 * mb_inference_request_set_boundary_poses (boundary 0 = source, 1 = target) or with raw features
 * (mb_inference_request_set_features, all three fields). mb_model_infer then predicts a duration of
 * 24..64 frames (a multiple of 4; the target slots land on the last four frames), samples pose
 * tokens, decodes them and returns root translations and local rotations. No style, agent, spring,
 * seam blend or world placement is involved: place both boundaries in one common frame yourself.
 *
 *     mb_inference_request * request = NULL;
 *     mb_motion *            motion  = NULL;
 *     char error[512];
 *     mb_inference_request_create(&request, error, sizeof error);
 *     mb_inference_request_set_boundary_poses(request, model, 0, source_roots, 12, source_xyzw, 544,
 *                                             error, sizeof error);
 *     mb_inference_request_set_boundary_poses(request, model, 1, target_roots, 12, target_xyzw, 544,
 *                                             error, sizeof error);
 *     if (mb_model_infer(model, request, &motion, error, sizeof error) != MB_OK) { ... }
 *     mb_inference_request_free(request);          // the motion does not need the request...
 *     mb_model_free(model);                        // ...nor the model
 *     const float * roots = NULL; uint64_t n = 0;
 *     mb_motion_get_root_translations(motion, &roots, &n, error, sizeof error);
 *     mb_motion_free(motion);
 *
 * Conventions, error buffers and thread rules are those of motionbricks.h. A request is not
 * synchronised: do not mutate it while another thread uses it. Inference calls on one model may run
 * concurrently; requests and motions are independent of it once a call returns.
 */
#ifndef MOTIONBRICKS_INFERENCE_H
#define MOTIONBRICKS_INFERENCE_H

#include <motionbricks/motionbricks.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ==== request fields ============================================================================ */

typedef struct mb_inference_request mb_inference_request;

/* Field selectors (uint32_t). Features are raw (not normalised), Y up, metres, radians, 30 fps. */
#define MB_INFERENCE_GLOBAL_ROOT UINT32_C(0) /* 8 x 5 floats: x, height, z, cos(yaw), sin(yaw) */
#define MB_INFERENCE_LOCAL_ROOT  UINT32_C(1) /* 8 x 4 floats: yaw velocity, x velocity, z velocity, height */
#define MB_INFERENCE_POSE        UINT32_C(2) /* 8 x 303 floats: 33 x [x - root.x, y, z - root.z], 34 x 6D */
#define MB_INFERENCE_DURATIONS   UINT32_C(3) /* mask only: 11 choices, index i allows 24 + 4 i frames */

/* ==== requests ================================================================================== */

/* Creates an empty request with the defaults: every feature mask slot enabled except local-root slot
 * 3 (the unknown outgoing source velocity), all 11 durations allowed, seed 0, Gumbel sampling
 * (argmax 0). Features start as zeros and count as unset: mb_model_infer needs all three fields (or
 * both boundaries). *output receives a new request owned by the caller; free it with
 * mb_inference_request_free. Errors: MB_INVALID_ARGUMENT (output NULL), MB_OUT_OF_MEMORY. */
MB_API mb_status mb_inference_request_create(mb_inference_request ** output, char * error, uint64_t error_capacity);

/* Frees a request. NULL is a no-op. Motions inferred from it stay valid. */
MB_API void mb_inference_request_free(mb_inference_request * request);

/* Copies `count` floats into feature field `field` (GLOBAL_ROOT 40, LOCAL_ROOT 32, POSE 2424; exact
 * counts) and marks the field as supplied for both boundaries. Every value must be finite with
 * |v| <= 1e4. Errors (the request is left unchanged): MB_INVALID_ARGUMENT for a NULL request or data,
 * an unknown field or MB_INFERENCE_DURATIONS, a wrong count, or a bad value (the message names its
 * index). Cos/sin pairs are checked at inference, where masks are known. */
MB_API mb_status mb_inference_request_set_features(mb_inference_request * request, uint32_t field, const float * data,
                                                   uint64_t count, char * error, uint64_t error_capacity);

/* Copies feature field `field` into data[0 .. n) and writes n (40, 32 or 2424) to *count. With data
 * NULL and capacity 0 only *count is written (a size query). Unset fields read as zeros. Errors:
 * MB_INVALID_ARGUMENT for a NULL request or count, an unknown field, or capacity < n (with *count set
 * to n). */
MB_API mb_status mb_inference_request_get_features(const mb_inference_request * request, uint32_t field,
                                                   float * data, uint64_t capacity, uint64_t * count, char * error,
                                                   uint64_t error_capacity);

/* Copies a 0/1 mask: 8 entries for a feature field (slot enabled), 11 for MB_INFERENCE_DURATIONS
 * (index i allows 6 + i tokens = 24 + 4 i frames). Errors (the request is left unchanged):
 * MB_INVALID_ARGUMENT for a NULL request or data, an unknown field, a wrong count, a value other than
 * 0/1, no duration enabled, or global-root slot 0 disabled (it anchors the output's position and
 * heading). */
MB_API mb_status mb_inference_request_set_mask(mb_inference_request * request, uint32_t field, const uint32_t * data,
                                               uint64_t count, char * error, uint64_t error_capacity);

/* Copies the mask of `field` as 0/1 values into data[0 .. n) and writes n (8 or 11) to *count. data
 * NULL with capacity 0 is a size query. Errors as for mb_inference_request_get_features. */
MB_API mb_status mb_inference_request_get_mask(const mb_inference_request * request, uint32_t field, uint32_t * data,
                                               uint64_t capacity, uint64_t * count, char * error,
                                               uint64_t error_capacity);

/* Sets the seed of the Gumbel noise generator (any value; default 0). Each inference restarts the
 * generator from it, so equal requests give equal motions. request must not be NULL. */
MB_API mb_status mb_inference_request_set_seed(mb_inference_request * request, uint64_t seed, char * error,
                                               uint64_t error_capacity);

/* Writes the seed to *seed. request and seed must not be NULL. */
MB_API mb_status mb_inference_request_get_seed(const mb_inference_request * request, uint64_t * seed, char * error,
                                               uint64_t error_capacity);

/* Selects pose-token sampling: 0 (default) Gumbel at temperature 1, 1 argmax. The duration is always
 * the argmax over the allowed choices. Other values → MB_INVALID_ARGUMENT. */
MB_API mb_status mb_inference_request_set_sampling_argmax(mb_inference_request * request, uint32_t enabled,
                                                          char * error, uint64_t error_capacity);

/* Writes the sampling flag (0 or 1) to *enabled. request and enabled must not be NULL. */
MB_API mb_status mb_inference_request_get_sampling_argmax(const mb_inference_request * request, uint32_t * enabled,
                                                          char * error, uint64_t error_capacity);

/* Encodes four consecutive 30 fps poses as one boundary (0 = source slots 0..3, 1 = target slots
 * 4..7): roots[4, 3] are root (pelvis) positions, local_xyzw[4, 34, 4] local joint rotations as
 * quaternions x, y, z, w (joint 0 = root world rotation). Forward kinematics over the model's
 * skeleton gives joint positions and global rotations; the encoder writes global root (x, y, z, cos
 * and sin of the heading atan2(R02, R22)), local root (30 fps forward differences of heading and x/z,
 * height; the target's last velocity repeats the previous one) and pose rows (joint positions minus
 * root x/z, then 6D global rotations, with the virtual endpoints 7, 14, 25, 33 given the identity
 * orientation as upstream does). That half's masks are reset to enabled, except source local-root
 * slot 3; set custom masks afterwards. Durations, seed and sampling are unchanged. model is borrowed
 * only for the call. Errors (the request is left unchanged): MB_INVALID_ARGUMENT for a NULL pointer,
 * boundary > 1, root_count != 12, rotation_count != 544, a non-finite value or |v| > 1e4, or a
 * quaternion whose norm is outside 1 +/- 0.01. */
MB_API mb_status mb_inference_request_set_boundary_poses(mb_inference_request * request, const mb_model * model,
                                                         uint32_t boundary, const float * roots, uint64_t root_count,
                                                         const float * local_xyzw, uint64_t rotation_count,
                                                         char * error, uint64_t error_capacity);

/* (Not in the reference runtime.) Forces the duration: `count` pose tokens (6..16, 4 frames each)
 * instead of the argmax over the allowed durations; 0 (default) predicts it. Other values →
 * MB_INVALID_ARGUMENT. request must not be NULL. */
MB_API mb_status mb_inference_request_set_token_count(mb_inference_request * request, uint32_t count, char * error,
                                                      uint64_t error_capacity);

/* (Not in the reference runtime.) Sets the number of masked-decoding steps of the pose-token planner,
 * 1..16 (default 1, as upstream's demo), else MB_INVALID_ARGUMENT. request must not be NULL. */
MB_API mb_status mb_inference_request_set_inference_steps(mb_inference_request * request, uint32_t steps,
                                                          char * error, uint64_t error_capacity);

/* (Not in the reference runtime.) Supplies the Gumbel noise explicitly, for replaying a reference run:
 * `count` = steps * 16 * 8 * 10 uniforms in [0, 1] ([steps, 16 tokens, 8 heads, 10 codes]), copied;
 * count 0 clears them (the seed's generator is used). mb_model_infer then needs Gumbel sampling and
 * `steps` equal to the request's inference steps. Errors (the request is left unchanged):
 * MB_INVALID_ARGUMENT for a NULL request, data NULL with count > 0, a count that is not a multiple of
 * 1280 or above 16 * 1280, or a value outside [0, 1] (NaN included). */
MB_API mb_status mb_inference_request_set_gumbel_uniforms(mb_inference_request * request, const float * data,
                                                          uint64_t count, char * error, uint64_t error_capacity);

/* (Not in the reference runtime.) Upstream's skip_ending_target_cond: 1 drops the target frames'
 * conditioning from the pose planner, 0 (default) keeps it. Other values → MB_INVALID_ARGUMENT.
 * request must not be NULL. */
MB_API mb_status mb_inference_request_set_skip_ending_target_cond(mb_inference_request * request, uint32_t enabled,
                                                                  char * error, uint64_t error_capacity);

/* (Not in the reference runtime.) Upstream's allow_out_of_reach: 1 lets the root planner answer "out of
 * reach" (mb_model_infer then fails with MB_COMPUTE_FAILED), 0 (default) masks that choice. Other values
 * → MB_INVALID_ARGUMENT. request must not be NULL. */
MB_API mb_status mb_inference_request_set_allow_out_of_reach(mb_inference_request * request, uint32_t enabled,
                                                             char * error, uint64_t error_capacity);

/* ==== inference ================================================================================= */

/* Runs stateless inference. The request is validated completely before anything runs: all three
 * feature fields (or both boundaries) must have been supplied, and every enabled global-root slot
 * needs cos^2 + sin^2 within 1 +/- 0.02. Output: 24..64 frames, a multiple of 4, including the
 * boundary regions; no target frames. The request is not modified. *output receives a new motion
 * owned by the caller (free with mb_motion_free); it stays valid after the model and the request are
 * freed. On failure *output is NULL. Errors: MB_INVALID_ARGUMENT (NULL pointer, incomplete or invalid
 * request), MB_COMPUTE_FAILED (inference failed or produced non-finite values), MB_OUT_OF_MEMORY.
 * Calls sharing a model may run concurrently (each on working memory borrowed from the model's pool). */
MB_API mb_status mb_model_infer(const mb_model * model, const mb_inference_request * request, mb_motion ** output,
                                char * error, uint64_t error_capacity);

/* Runs mb_model_infer for `count` (1..4096, mb_model_get_batch_limit) independent requests, fused in
 * chunks of mb_model_get_batch_lanes lanes (batch.h); durations may differ. outputs must
 * hold `count` pointers and receives one new motion per request, in order (free each with
 * mb_motion_free). Every request is validated before any runs. On any failure every outputs[i] is
 * NULL and the message names the failing request's index. requests and outputs must not be NULL; no
 * requests[i] may be NULL (the same request may appear more than once). Errors as for mb_model_infer,
 * plus MB_INVALID_ARGUMENT for count 0 or > 4096. */
MB_API mb_status mb_model_infer_batch(const mb_model * model, const mb_inference_request * const * requests,
                                      uint64_t count, mb_motion ** outputs, char * error, uint64_t error_capacity);

/* ==== traced inference ========================================================================== */

/* Receives one named intermediate of a traced inference. name is NUL-terminated; data holds the
 * product of shape[0..n_dims) floats, row-major, in upstream's axis order (integers such as tokens
 * and masks are given as floats). name, data and shape are borrowed and valid only during the call:
 * copy what you keep. Names are stable (stage, then network intermediates such as
 * "root_shared_tf_out", "decoder_codes", "pred_global_poses"); names starting with "step_" arrive
 * once per decoding step with shape[0] == 1. user is the pointer given to mb_model_infer_traced.
 * The callback runs on the calling thread and must not call back into the library with the same
 * model. */
typedef void (*mb_tap_callback)(void * user, const char * name, const float * data, const uint64_t * shape,
                                uint32_t n_dims);

/* Runs mb_model_infer and reports every named intermediate to tap, in the order computed: the same
 * motion as mb_model_infer, bitwise. tap must not be NULL; user may be NULL. Ownership, errors and
 * threads as for mb_model_infer. */
MB_API mb_status mb_model_infer_traced(const mb_model * model, const mb_inference_request * request,
                                       mb_tap_callback tap, void * user, mb_motion ** output, char * error,
                                       uint64_t error_capacity);

#ifdef __cplusplus
}
#endif

#endif /* MOTIONBRICKS_INFERENCE_H */
