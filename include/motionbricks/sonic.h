/*
 * sonic.h — the GEAR-SONIC whole-body policy (original release): an encoder observation → FSQ
 * tokens, and tokens + proprioceptive history → 29 joint actions (Isaac Lab order). The same
 * seven functions as the reference runtime's sonic.h; where its exact argument lists are not
 * documented, these are the ones that runtime's documentation describes.
 *     mb_sonic * s = NULL;
 *     char error[512];
 *     if (mb_sonic_load("sonic.gguf", NULL, &s, error, sizeof error) != MB_OK) { ... }
 *     float tokens[64], actions[29];
 *     mb_sonic_encode(s, encoder_obs, 1762, tokens, 64, error, sizeof error);
 *     decoder_obs[0..64) = tokens;                       // the decoder reads the tokens first
 *     mb_sonic_decode(s, decoder_obs, 994, actions, 29, error, sizeof error);
 *     mb_sonic_free(s);
 * Encoder observation [1762]: [0] the mode (0 G1 robot motion, 1 teleop when the file has that
 * encoder, 2 SMPL human motion when it has that one), then gear_sonic_deploy's slices (10 frames
 * of reference joint positions [4, 294), velocities [294, 584), anchor orientations [601, 661), ...;
 * docs/FORMATS.md). Decoder observation [994]: tokens 64, then 10-tick histories of base angular
 * velocity 3, joint positions − default 29, joint velocities 29, previous actions 29, projected
 * gravity 3. Every value must be finite with |v| ≤ 1e6.
 * A handle serialises its own calls (one computes at a time); use one handle per thread for
 * parallel work. Conventions and error buffers are those of motionbricks.h.
 */
#ifndef MOTIONBRICKS_SONIC_H
#define MOTIONBRICKS_SONIC_H

#include <motionbricks/motionbricks.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mb_sonic mb_sonic;

#define MB_SONIC_MAX_BATCH       UINT32_C(64)
#define MB_SONIC_ENCODER_OBS     UINT32_C(1762)
#define MB_SONIC_DECODER_OBS     UINT32_C(994)
#define MB_SONIC_TOKENS          UINT32_C(64)
#define MB_SONIC_ACTIONS         UINT32_C(29)

/* Loads a SONIC GGUF (component "sonic"; sonic.architecture "g1-mode0-mlp-fsq32-v1" or
 * "g1-smpl-mode02-mlp-fsq32-v1"; tensors encoder.{0..4}, decoder.{0..6}, optional smpl_encoder.{0..4}
 * and teleop_encoder.{0..4}). The structure is checked, not the weights' hashes. options may be NULL
 * (device, threads; precision must be F32). Errors: MB_INVALID_ARGUMENT, MB_IO_ERROR, MB_INVALID_FORMAT,
 * MB_INCOMPATIBLE_MODEL (another architecture), MB_BACKEND_UNAVAILABLE, MB_OUT_OF_MEMORY. */
MB_API mb_status mb_sonic_load(const char * gguf_file, const mb_runtime_options * options, mb_sonic ** output,
                               char * error, uint64_t error_capacity);

/* Frees a handle. NULL is a no-op. */
MB_API void mb_sonic_free(mb_sonic * sonic);

/* Encodes one observation: obs_count must be 1762 and token_count 64. Errors (tokens unchanged):
 * MB_INVALID_ARGUMENT (NULL pointer, wrong counts, a non-finite or too large value, an unknown mode or
 * one this file has no encoder for), MB_COMPUTE_FAILED. */
MB_API mb_status mb_sonic_encode(mb_sonic * sonic, const float * obs, uint64_t obs_count, float * tokens,
                                 uint64_t token_count, char * error, uint64_t error_capacity);

/* Decodes one observation: obs_count 994, action_count 29. Errors as for mb_sonic_encode. */
MB_API mb_status mb_sonic_decode(mb_sonic * sonic, const float * obs, uint64_t obs_count, float * actions,
                                 uint64_t action_count, char * error, uint64_t error_capacity);

/* batch_size (1..64) observations packed request-major: obs_count = batch_size · 1762 and
 * token_count = batch_size · 64. Every row must select the same mode. Row i equals mb_sonic_encode
 * of row i. Errors as for mb_sonic_encode. */
MB_API mb_status mb_sonic_encode_batch(mb_sonic * sonic, const float * obs, uint64_t obs_count, uint32_t batch_size,
                                       float * tokens, uint64_t token_count, char * error, uint64_t error_capacity);

/* The same for the decoder: obs_count = batch_size · 994, action_count = batch_size · 29. */
MB_API mb_status mb_sonic_decode_batch(mb_sonic * sonic, const float * obs, uint64_t obs_count, uint32_t batch_size,
                                       float * actions, uint64_t action_count, char * error, uint64_t error_capacity);

/* Copies a layer of the last encode (encoder 1: layers 0..4) or decode (encoder 0: layers 0..6) call:
 * the Linear output before SiLU, [batch, width] (encoder layer 4 is the raw latent, decoder layer 6
 * the actions). Writes the value count to *count; data NULL with capacity 0 is a size query (0 before
 * any call). Errors: MB_INVALID_ARGUMENT (NULL sonic or count, encoder > 1, layer out of range,
 * capacity below the count). */
MB_API mb_status mb_sonic_layer(const mb_sonic * sonic, uint32_t encoder, uint32_t layer, float * data,
                                uint64_t capacity, uint64_t * count, char * error, uint64_t error_capacity);

#ifdef __cplusplus
}
#endif

#endif /* MOTIONBRICKS_SONIC_H */
