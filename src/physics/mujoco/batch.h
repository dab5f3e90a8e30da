// one tick of several physics sessions that share one SONIC policy: every policy-driven session's
// observation goes through one batched encoder and one batched decoder call, and the tick is all or
// nothing (a failure puts every session's robot and controller back as they were)
#pragma once

#include "physics/mujoco/session.h"

#include <cstddef>
#include <cstdint>

namespace mb::physics {

// ticks sessions s[0 .. n) towards their clips qpos[i] [frames[i], 36] at times[i]; the caller has
// checked the arguments and that the sessions are distinct and share one policy (or none). Throws
// mb::error, the message prefixed "session i: " with the failing one, after restoring every session
// (robot state, fall flag, controller history, previous action, timeline, clip identity)
void step_batch(session * const * s, size_t n, const float * const * qpos, const uint64_t * frames, const double * times);

} // namespace mb::physics
