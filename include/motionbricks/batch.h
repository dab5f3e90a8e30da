/*
 * batch.h — (Not in the reference runtime.) Limits of the batched entry points.
 *
 * mb_model_infer_batch and mb_agent_plan_batch take up to mb_model_get_batch_limit requests or
 * agents per call. They run the requests as fused lanes: a chunk of up to mb_model_get_batch_lanes
 * requests goes through the networks together, so every weight read is shared by the chunk's lanes
 * (lanes are grouped by their token count and decoding steps and sampling; larger batches run chunk
 * by chunk). Every lane's motion equals the same request run alone: token counts and tokens exact,
 * features within 1e-5.
 *
 *     uint64_t limit = 0, lanes = 0;
 *     mb_model_get_batch_limit(model, &limit, error, sizeof error);   // 4096
 *     mb_model_get_batch_lanes(model, &lanes, error, sizeof error);   // 64 on the CPU, 256 on CUDA
 *
 * Conventions and thread rules are those of motionbricks.h.
 */
#ifndef MOTIONBRICKS_BATCH_H
#define MOTIONBRICKS_BATCH_H

#include <motionbricks/motionbricks.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ==== batch limits ============================================================================== */

/* Writes the largest `count` mb_model_infer_batch and mb_agent_plan_batch accept (4096, the same for
 * every model and device) to *output. model and output must not be NULL (MB_INVALID_ARGUMENT). */
MB_API mb_status mb_model_get_batch_limit(const mb_model * model, uint64_t * output, char * error,
                                          uint64_t error_capacity);

/* Writes how many requests of a batch run fused through the networks at once on this model's
 * device to *output (64 on the CPU, 256 on CUDA); a batch of more runs in chunks of that many. model
 * and output must not be NULL (MB_INVALID_ARGUMENT). */
MB_API mb_status mb_model_get_batch_lanes(const mb_model * model, uint64_t * output, char * error,
                                          uint64_t error_capacity);

#ifdef __cplusplus
}
#endif

#endif /* MOTIONBRICKS_BATCH_H */
