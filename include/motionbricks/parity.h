/* motionbricks/parity.h: open-loop plan evaluation, for checking this runtime against upstream
 * fixtures (`.mbparity`, `motionbricks parity`). Not in the reference runtime's C ABI.
 *
 *     mb_agent_set_context(agent, roots, local_xyzw, 4, 34, err, sizeof err);   // a recorded context
 *     mb_motion * m = NULL;
 *     if (mb_agent_plan_open_loop(agent, command, NULL, NULL, &m, err, sizeof err) == MB_OK) {
 *         // m: upstream's unblended output placed in the world, and the 4 placed targets
 *         mb_motion_free(m);
 *     }
 */
#ifndef MOTIONBRICKS_PARITY_H
#define MOTIONBRICKS_PARITY_H

#include <motionbricks/motionbricks.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ==== open-loop plans =========================================================================== */

/* Plans exactly as mb_agent_plan would from the agent's 4 history frames at its cursor, but leaves the
 * agent unchanged (its history, cursor and idle state stay as they were) and returns the plan as
 * upstream's model produced it, before the agent's playback: the root translations [F, 3], local
 * rotations [F, 34, 4] (x, y, z, w) and joint positions [F, 34, 3] are the forward kinematics of the
 * predicted 414-d features, moved into the world by the same rigid map that places the plan's qpos
 * (no seam blend, and no reduction to the G1's hinge degrees of freedom); the MuJoCo qpos [F, 36] is
 * the converted plan before the seam blend; the global features [F, 414] are predict's output in the
 * plan's canonical frame; tokens, duration logits ([12]), stage times, style name and the 4 target
 * frames are those of mb_agent_plan. When tap is not NULL it receives every named intermediate of the
 * inference, in the order computed, as mb_model_infer_traced's tap does (its type is mb_tap_callback of
 * inference.h; same callback rules; user may be NULL). *output receives a new motion owned by the caller (free with mb_motion_free); NULL on failure.
 * Errors: as mb_agent_plan. Runs on the agent's own working memory: one call per agent at a time. */
MB_API mb_status mb_agent_plan_open_loop(mb_agent * value, const mb_command * command,
                                         void (*tap)(void * user, const char * name, const float * data,
                                                     const uint64_t * shape, uint32_t n_dims),
                                         void * user, mb_motion ** output, char * error,
                                         uint64_t error_capacity);

#ifdef __cplusplus
}
#endif

#endif /* MOTIONBRICKS_PARITY_H */
