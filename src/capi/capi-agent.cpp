// motionbricks.h entry points of styles and agents: .mbstyle loading, the stateful agent of
// src/agent behind mb_agent_* (history, plan, batch, advance) and plan → mb_motion
#include "capi/capi-agent.h"
#include "capi/capi-error.h"
#include "capi/handles.h"

#include "agent/agent.h"
#include "format/style.h"
#include "motion/boundary-poses.h"
#include "motion/qpos.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <system_error>
#include <span>
#include <unordered_set>

using mb::capi::fail;
using mb::capi::guard;
using mb::capi::require;

namespace {

constexpr double   k_quat_norm_tol = 0.01;   // |‖q‖ − 1| accepted in a context pose

// a caller's context: at least the 4 frames a plan starts from, and a byte count that fits
void check_context_frames(uint64_t frames, uint64_t bytes_per_frame) {
    if (frames < uint64_t(mb::k_agent_context)) {
        fail(MB_INVALID_ARGUMENT, "a context needs at least 4 frames, got " + std::to_string(frames));
    }
    if (frames > UINT64_MAX / bytes_per_frame) {
        fail(MB_INVALID_ARGUMENT, "frames " + std::to_string(frames) + " is too large");
    }
}

// the length of a quaternion of 4 floats, in double
double quat_norm(const float * q) {
    double n = 0;
    for (int c = 0; c < 4; ++c) n += double(q[c]) * q[c];
    return std::sqrt(n);
}

// the roles the C ABI gives by name (motionbricks.h): a style named "idle" plays the idle role, and
// the agent's side-step styles serve commands whose style is "walk" or "slow_walk"
bool plays_idle(const mb::style_asset & s) {
    return s.name == "idle";
}

bool takes_sidesteps(const mb::style_asset & s) {
    return s.name == "walk" || s.name == "slow_walk";
}

} // namespace

namespace mb::capi {

// the C command → the agent's (both motion space; the agent converts to MuJoCo itself)
mb::agent_command to_agent_command(const mb_agent & agent, const mb_command & c) {
    if (c.style == nullptr) {
        fail(MB_INVALID_ARGUMENT, "the command has no style (mb_command_set_style)");
    }
    mb::agent_command a;
    a.style = &c.style->styles.at(0);
    a.idle  = plays_idle(*a.style);
    if (agent.sidesteps.size() == 2 && takes_sidesteps(*a.style)) {
        a.sidestep_left  = &agent.sidesteps[0];
        a.sidestep_right = &agent.sidesteps[1];
    }
    for (int i = 0; i < 3; ++i) {
        a.movement[i] = c.movement[size_t(i)];
        a.facing[i]   = c.facing[size_t(i)];
        a.target[i]   = c.world_target[size_t(i)];
    }
    a.target_speed   = c.target_speed;
    a.seed           = c.seed;
    a.argmax         = c.sampling_argmax == 1;
    a.has_target     = c.world_target_enabled == 1;
    a.target_heading = c.world_target_heading;
    return a;
}

std::unique_ptr<mb_motion> motion_from_plan(mb::agent_plan && p) {
    using mb::k_n_joints;
    const size_t f = size_t(p.frames);
    const size_t t = size_t(mb::k_agent_context);
    if (p.frames <= 0 || p.root_translations.size() != f * 3 || p.local_rotations_xyzw.size() != f * k_n_joints * 4 ||
        p.target_positions.size() != t * k_n_joints * 3 || p.target_local_rotations_xyzw.size() != t * k_n_joints * 4 ||
        p.joint_positions.size() != f * k_n_joints * 3 || p.qpos.size() != f * mb::k_qpos_dim || p.style == nullptr) {
        fail(MB_INTERNAL_ERROR, "the agent returned a plan of inconsistent shapes (" + std::to_string(p.frames) +
                                    " frames)");
    }
    auto m                  = std::make_unique<mb_motion>();
    m->frames               = uint64_t(f);
    m->token_count          = uint64_t(p.num_tokens);
    m->tokens               = std::move(p.tokens);
    m->style_name           = p.style->name;
    m->timings              = p.timings;
    m->root_translations    = std::move(p.root_translations);
    m->local_rotations_xyzw = std::move(p.local_rotations_xyzw);
    m->joint_positions      = std::move(p.joint_positions);
    m->mujoco_qpos          = std::move(p.qpos);
    m->target_frames        = uint64_t(t);
    m->target_root_translations.resize(t * 3);
    for (size_t i = 0; i < t; ++i) {
        for (size_t c = 0; c < 3; ++c) {
            m->target_root_translations[i * 3 + c] = p.target_positions[i * k_n_joints * 3 + c];   // joint 0
        }
    }
    m->target_joint_positions      = std::move(p.target_positions);
    m->target_local_rotations_xyzw = std::move(p.target_local_rotations_xyzw);
    mb::capi::check_motion(*m, "the plan");
    return m;
}

} // namespace mb::capi

namespace {

using mb::capi::motion_from_plan;
using mb::capi::to_agent_command;

// plans one agent; the agent is unchanged unless a motion is returned (on its own state)
std::unique_ptr<mb_motion> plan_one(mb_agent & a, const mb::agent_command & cmd) {
    auto backup = std::make_unique<mb::agent>(*a.core);
    try {
        mb::agent_plan p = a.core->plan(cmd);
        return motion_from_plan(std::move(p));
    } catch (...) {
        a.core = std::move(backup);
        throw;
    }
}

// "agents[3] is NULL" (built by appending: GCC 12 misreads literal + std::string&& under -Wrestrict)
std::string lane_message(const char * array, uint64_t i, const std::string & tail) {
    std::string m(array);
    m += '[';
    m += std::to_string(i);
    m += "] ";
    m += tail;
    return m;
}

void check_style_file(const std::string & path) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (!fs::exists(path, ec)) {
        fail(MB_IO_ERROR, "style file '" + path + "' does not exist");
    }
    if (!fs::is_regular_file(path, ec)) {
        fail(MB_IO_ERROR, "style path '" + path + "' is not a regular file");
    }
    if (!std::ifstream(path, std::ios::binary).is_open()) {
        fail(MB_IO_ERROR, "style file '" + path + "' cannot be opened for reading");
    }
}

} // namespace

extern "C" {

// ---- styles ----------------------------------------------------------------------------------

MB_API mb_status mb_style_load(const mb_model * model, const char * style_path, mb_style ** output, char * error,
                               uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        require(output, "output");
        *output = nullptr;
        require(model, "model");
        require(style_path, "style_path");
        if (*style_path == '\0') {
            fail(MB_INVALID_ARGUMENT, "style_path is empty");
        }
        check_style_file(style_path);
        auto s = std::make_unique<mb_style>();
        // style_read validates everything (skeleton g1skel34 included); what it reports is about the file
        s->styles.push_back(mb::style_read(style_path));
        *output = s.release();
        return MB_OK;
    });
}

MB_API void mb_style_free(mb_style * value) {
    delete value;
}

MB_API mb_status mb_style_get_name(const mb_style * value, const char ** output, char * error,
                                   uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        require(value, "style");
        require(output, "output");
        *output = value->styles.at(0).name.c_str();
        return MB_OK;
    });
}

MB_API mb_status mb_style_set_speed(mb_style * value, float metres_per_second, char * error,
                                    uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        require(value, "style");
        if (!std::isfinite(metres_per_second) || metres_per_second < 0.0f) {
            fail(MB_INVALID_ARGUMENT, "style speed must be finite and >= 0");
        }
        value->styles.at(0).speed = metres_per_second;
        return MB_OK;
    });
}

MB_API mb_status mb_style_get_speed(const mb_style * value, float * output, char * error, uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        require(value, "style");
        require(output, "output");
        *output = value->styles.at(0).speed;
        return MB_OK;
    });
}

// ---- agents ----------------------------------------------------------------------------------

MB_API mb_status mb_agent_create(const mb_model * model, mb_agent ** output, char * error,
                                 uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        require(output, "output");
        *output = nullptr;
        require(model, "model");
        auto a   = std::make_unique<mb_agent>();
        a->model = model;
        a->state = model->net->create_state();
        a->core  = std::make_unique<mb::agent>(*model->net);
        a->core->use_state(a->state.get());
        *output  = a.release();
        return MB_OK;
    });
}

MB_API void mb_agent_free(mb_agent * value) {
    delete value;
}

MB_API mb_status mb_agent_reset(mb_agent * value, const mb_style * initial_style, char * error,
                                uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        require(value, "agent");
        if (initial_style == nullptr) {
            value->core->clear();
        } else {
            value->core->reset(initial_style->styles.at(0));
        }
        return MB_OK;
    });
}

MB_API mb_status mb_agent_set_context(mb_agent * value, const float * root_xyz, const float * local_rotation_xyzw,
                                      uint64_t frames, uint64_t joints, char * error, uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        using mb::k_n_joints;
        require(value, "agent");
        require(root_xyz, "root_xyz");
        require(local_rotation_xyzw, "local_rotation_xyzw");
        if (joints != uint64_t(k_n_joints)) {
            fail(MB_INVALID_ARGUMENT, "joints must be " + std::to_string(k_n_joints) + ", got " + std::to_string(joints));
        }
        check_context_frames(frames, uint64_t(k_n_joints) * 4 * sizeof(float));
        // every frame is validated; the last 4 become the history
        for (uint64_t f = 0; f < frames; ++f) {
            for (int c = 0; c < 3; ++c) {
                if (!std::isfinite(root_xyz[f * 3 + c])) {
                    fail(MB_INVALID_ARGUMENT, "root_xyz of frame " + std::to_string(f) + " is not finite");
                }
            }
            for (int j = 0; j < k_n_joints; ++j) {
                const float * q = &local_rotation_xyzw[(f * k_n_joints + j) * 4];
                for (int c = 0; c < 4; ++c) {
                    if (!std::isfinite(q[c])) {
                        fail(MB_INVALID_ARGUMENT, "rotation of frame " + std::to_string(f) + ", joint " +
                                                      std::to_string(j) + " is not finite");
                    }
                }
                const double n = quat_norm(q);
                if (std::fabs(n - 1.0) > k_quat_norm_tol) {
                    fail(MB_INVALID_ARGUMENT, "rotation of frame " + std::to_string(f) + ", joint " + std::to_string(j) +
                                                  " has norm " + std::to_string(n) + " (needs 1 +- 0.01)");
                }
            }
        }
        const mb::model_support & sup = value->model->support();
        float                     qpos[mb::k_agent_context * mb::k_qpos_dim];
        for (int i = 0; i < mb::k_agent_context; ++i) {
            const uint64_t f = frames - uint64_t(mb::k_agent_context) + uint64_t(i);
            double         pos[k_n_joints * 3];
            double         rot[k_n_joints * 9];
            mb::boundary_forward_kinematics(sup, &root_xyz[f * 3], &local_rotation_xyzw[f * k_n_joints * 4], pos, rot);
            mb::capi::converter().global_rotations_to_qpos(&root_xyz[f * 3], rot, &qpos[i * mb::k_qpos_dim]);
        }
        value->core->set_context(qpos, mb::k_agent_context);
        return MB_OK;
    });
}

MB_API mb_status mb_agent_set_sidestep_styles(mb_agent * value, const mb_style * walk_left,
                                              const mb_style * walk_right, char * error, uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        require(value, "agent");
        if ((walk_left == nullptr) != (walk_right == nullptr)) {
            fail(MB_INVALID_ARGUMENT, "walk_left and walk_right must both be given or both be NULL");
        }
        std::vector<mb::style_asset> sidesteps;
        if (walk_left != nullptr) {
            sidesteps = {walk_left->styles.at(0), walk_right->styles.at(0)};   // [left, right]
        }
        value->sidesteps = std::move(sidesteps);
        return MB_OK;
    });
}

MB_API mb_status mb_agent_plan(mb_agent * value, const mb_command * command, mb_motion ** output, char * error,
                               uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        require(output, "output");
        *output = nullptr;
        require(value, "agent");
        require(command, "command");
        const mb::agent_command    cmd = to_agent_command(*value, *command);
        std::unique_ptr<mb_motion> m   = plan_one(*value, cmd);
        *output = m.release();
        return MB_OK;
    });
}

MB_API mb_status mb_agent_plan_batch(mb_agent * const * agents, const mb_command * const * commands, uint64_t count,
                                     mb_motion ** outputs, char * error, uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        mb::capi::begin_batch(outputs, count);
        require(agents, "agents");
        require(commands, "commands");

        // validate every lane before any runs
        std::vector<mb::agent_command>       lanes;
        std::unordered_set<const mb_agent *> seen;
        lanes.reserve(size_t(count));
        for (uint64_t i = 0; i < count; ++i) {
            if (agents[i] == nullptr) {
                fail(MB_INVALID_ARGUMENT, lane_message("agents", i, "is NULL"));
            }
            if (commands[i] == nullptr) {
                fail(MB_INVALID_ARGUMENT, lane_message("commands", i, "is NULL"));
            }
            if (!seen.insert(agents[i]).second) {
                fail(MB_INVALID_ARGUMENT, lane_message("agents", i, "appears more than once in the batch"));
            }
            if (agents[i]->model != agents[0]->model) {
                fail(MB_INVALID_ARGUMENT, lane_message("agents", i, "uses a different model than agents[0]"));
            }
            try {
                lanes.push_back(to_agent_command(*agents[i], *commands[i]));
            } catch (const mb::error & e) {
                fail(e.code(), lane_message("commands", i, e.what()));
            }
        }

        // fused lanes: per span of batch_lanes() × batch_states() agents, every agent prepares its
        // request, the requests run through the networks together (on CUDA, several chunks in flight
        // on the model's pooled states), then every agent finishes its plan. On a failure every agent
        // is rolled back (preparing may have seeded an empty history)
        std::vector<std::unique_ptr<mb_motion>> motions(static_cast<size_t>(count));
        std::vector<std::unique_ptr<mb::agent>> backups(static_cast<size_t>(count));
        for (size_t i = 0; i < backups.size(); ++i) {
            backups[i] = std::make_unique<mb::agent>(*agents[i]->core);
        }
        const mb::motion_model &        net   = *agents[0]->model->net;
        const size_t                    chunk = size_t(net.batch_lanes() * net.batch_states());
        std::vector<mb::agent_trace>    traces(std::min(chunk, size_t(count)));
        std::vector<mb::predict_request> reqs(traces.size());
        std::vector<mb::predict_result>  results(traces.size());
        size_t i = 0;   // the agent at fault when something throws
        try {
            for (size_t c0 = 0; c0 < size_t(count); c0 += chunk) {
                const size_t nc = std::min(chunk, size_t(count) - c0);
                for (size_t k = 0; k < nc; ++k) {
                    i = c0 + k;
                    agents[i]->core->begin_plan(lanes[i], traces[k]);
                    reqs[k] = traces[k].request;
                }
                size_t failed = SIZE_MAX;
                try {
                    net.predict_batch(std::span(reqs.data(), nc), std::span(results.data(), nc), &failed);
                } catch (...) {
                    i = failed == SIZE_MAX ? c0 : c0 + failed;
                    throw;
                }
                for (size_t k = 0; k < nc; ++k) {
                    i                = c0 + k;
                    traces[k].result = std::move(results[k]);
                    motions[i]       = motion_from_plan(agents[i]->core->finish_plan(lanes[i], traces[k]));
                }
            }
        } catch (...) {
            for (size_t k = 0; k < size_t(count); ++k) {
                agents[k]->core = std::move(backups[k]);
            }
            try {
                throw;
            } catch (const mb::error & e) {
                fail(e.code(), lane_message("agents", i, e.what()));
            }
        }
        for (size_t i = 0; i < motions.size(); ++i) {
            outputs[i] = motions[i].release();
        }
        return MB_OK;
    });
}

MB_API mb_status mb_agent_advance(mb_agent * value, uint32_t frames, char * error, uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        require(value, "agent");
        if (value->core->has_context()) {
            // the cursor clamps to the history's last frame; a bound keeps the int sum from overflowing
            value->core->advance(int(std::min<uint32_t>(frames, uint32_t(1) << 24)));
        }
        return MB_OK;
    });
}

// ---- agent extras (not in the reference runtime) -----------------------------------------------

MB_API mb_status mb_agent_set_context_qpos(mb_agent * value, const float * qpos, uint64_t frames, char * error,
                                           uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        constexpr uint64_t d = uint64_t(mb::k_qpos_dim);
        require(value, "agent");
        require(qpos, "qpos");
        check_context_frames(frames, d * sizeof(float));
        for (uint64_t f = 0; f < frames; ++f) {
            const float * q = &qpos[f * d];
            for (uint64_t c = 0; c < d; ++c) {
                if (!std::isfinite(q[c])) {
                    fail(MB_INVALID_ARGUMENT, "qpos[" + std::to_string(f) + "][" + std::to_string(c) + "] is not finite");
                }
            }
            const double n = quat_norm(q + 3);   // qpos[3:7]: the root quaternion, w first
            if (std::fabs(n - 1.0) > k_quat_norm_tol) {
                fail(MB_INVALID_ARGUMENT, "the root quaternion of qpos frame " + std::to_string(f) + " has norm " +
                                              std::to_string(n) + " (needs 1 +- 0.01)");
            }
        }
        value->core->set_context(&qpos[(frames - uint64_t(mb::k_agent_context)) * d], mb::k_agent_context);
        return MB_OK;
    });
}

MB_API mb_status mb_agent_get_cursor(const mb_agent * value, uint64_t * output, char * error, uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        require(value, "agent");
        require(output, "output");
        *output = uint64_t(value->core->cursor());
        return MB_OK;
    });
}

MB_API mb_status mb_agent_get_history(const mb_agent * value, mb_motion ** output, char * error,
                                      uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        require(output, "output");
        *output = nullptr;
        require(value, "agent");
        const std::vector<float> & b = value->core->buffer();
        *output = mb::capi::motion_from_qpos(b.data(), int64_t(b.size() / size_t(mb::k_qpos_dim))).release();
        return MB_OK;
    });
}

MB_API mb_status mb_agent_get_facing_direction(const mb_agent * value, float * x, float * y, float * z, char * error,
                                               uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        require(value, "agent");
        require(x, "x");
        require(y, "y");
        require(z, "z");
        float f[3];
        value->core->facing(f);
        *x = f[0];
        *y = f[1];
        *z = f[2];
        return MB_OK;
    });
}

MB_API mb_status mb_agent_get_replan_due(const mb_agent * value, const mb_command * command, uint32_t * output,
                                         char * error, uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        require(value, "agent");
        require(command, "command");
        require(output, "output");
        *output = value->core->replan_due(to_agent_command(*value, *command)) ? 1u : 0u;
        return MB_OK;
    });
}

} // extern "C"
