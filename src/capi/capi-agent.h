// what the agent entry points share with the other agent-driven ones (capi-parity.cpp)
#pragma once

#include "capi/handles.h"

#include "agent/agent.h"

#include <memory>

namespace mb::capi {

// the C command → the agent's (both motion space); fails with MB_INVALID_ARGUMENT without a style
mb::agent_command to_agent_command(const mb_agent & agent, const mb_command & c);

// an agent plan as a motion (checked finite); fails with MB_COMPUTE_FAILED / MB_INTERNAL_ERROR
std::unique_ptr<mb_motion> motion_from_plan(mb::agent_plan && p);

} // namespace mb::capi
