#include "physics/idle-readapt.h"

#include <cmath>

namespace mb::physics {

void idle_readapt_step(idle_readapt & r, ref_frame & frame, const double * q_mujoco) {
    // :3315-3321 store the planner targets on first entry
    if (!r.stored) {
        for (int i : k_lower_body_isaac) r.original[i] = frame.q[i];
        r.stored = true;
        r.state  = readapt_state::idle;
    }
    // :3324-3329 the mean error; motor_state[mujoco_to_isaaclab[idx]] is Isaac joint idx's motor
    double total = 0;
    for (int i : k_lower_body_isaac) total += std::abs(frame.q[i] - q_mujoco[k_mujoco_of_isaac[i]]);
    const double err = total / 12.0;
    // :3332-3350 transitions
    switch (r.state) {
    case readapt_state::idle:
        if (err > k_adapt_trigger) r.state = readapt_state::adapting;
        else if (err < k_recover_trigger) r.state = readapt_state::recovering;
        break;
    case readapt_state::adapting:
        if (err < k_adapt_stop) r.state = readapt_state::idle;
        break;
    case readapt_state::recovering:
        if (err > k_adapt_trigger) r.state = readapt_state::adapting;
        break;
    }
    // :3353-3365 the blend
    for (int i : k_lower_body_isaac) {
        if (r.state == readapt_state::adapting) {
            frame.q[i] = k_readapt_keep * frame.q[i] + k_readapt_pull * q_mujoco[k_mujoco_of_isaac[i]];
        } else if (r.state == readapt_state::recovering) {
            frame.q[i] = k_readapt_keep * frame.q[i] + k_readapt_pull * r.original[i];
        }
    }
}

}  // namespace mb::physics
