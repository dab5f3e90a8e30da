// the two models the service answers for, as v2 tensors: their metadata (inputs and outputs
// with names, datatypes and shapes), v2 inputs → C ABI requests, and motions → v2 outputs.
//
//   motionbricks        stateless inference (mb_model_infer): upstream predict's arguments in,
//                       the plan out (docs/DEPLOY.md lists every tensor)
//   motionbricks-agent  one agent plan (mb_agent_plan) whose state the client carries: the
//                       context frames in, the new context (the plan's frames) out
#pragma once

#include "tools/infer-service/v2-codec.h"

#include <motionbricks/motionbricks.hpp>

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace mb::infer_service {

inline constexpr const char * k_model_infer   = "motionbricks";
inline constexpr const char * k_model_agent   = "motionbricks-agent";
inline constexpr const char * k_model_version = "1";

// GET /v2/models/{name} (name is one of the two models)
std::string model_metadata_json(const std::string & name);

// a decoded stateless request
struct infer_job_input {
    motionbricks::inference_request request;
    std::vector<requested_output>   outputs;   // resolved: never empty, every name known
};

// a decoded agent request; the style is borrowed from the service's style table
struct agent_job_input {
    motionbricks::command          command;
    std::vector<float>             context_roots;   // [F, 3]; empty: start from the style's clip
    std::vector<float>             context_xyzw;    // [F, 34, 4]
    const mb_style *               style = nullptr;
    std::vector<requested_output>  outputs;
};

// throws request_error (400) naming the input and the problem: unknown or missing inputs, wrong
// datatype or shape, values the C ABI refuses (NaN, out of range, bad masks)
infer_job_input decode_infer(const infer_request & r);
agent_job_input decode_agent(const infer_request & r, const std::map<std::string, motionbricks::style> & styles);

// the requested outputs of a plan (the agent's context outputs come from its history)
std::vector<tensor> infer_outputs(const motionbricks::motion & m, const std::vector<requested_output> & want);
std::vector<tensor> agent_outputs(const motionbricks::motion & plan, const motionbricks::motion & history,
                                  const std::vector<requested_output> & want);

// a request that passes the checks (zero poses, facing +z) for the warm-up plan
motionbricks::inference_request warmup_request();

} // namespace mb::infer_service
