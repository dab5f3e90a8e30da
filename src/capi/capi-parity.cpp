// parity.h: open-loop agent plans (the unblended upstream output placed in the world) for the
// parity runner; the agent is left unchanged
#include "capi/capi-agent.h"
#include "capi/capi-error.h"
#include "capi/handles.h"

#include "agent/agent.h"
#include "motion/rotation.h"

#include <motionbricks/parity.h>

#include <string>
#include <vector>

using mb::capi::guard;
using mb::capi::require;

namespace {

// q = a ⊗ b for a in w, x, y, z and b, q in x, y, z, w
void quat_mul_wxyz_xyzw(const double * a, const float * b, float * q) {
    const double bw = b[3], bx = b[0], by = b[1], bz = b[2];
    q[3] = float(a[0] * bw - a[1] * bx - a[2] * by - a[3] * bz);
    q[0] = float(a[0] * bx + a[1] * bw + a[2] * bz - a[3] * by);
    q[1] = float(a[0] * by - a[1] * bz + a[2] * bw + a[3] * bx);
    q[2] = float(a[0] * bz + a[1] * by - a[2] * bx + a[3] * bw);
}

// x ← R x + d on `n` points of 3 floats
void place(const double * r, const double * d, const float * in, size_t n, float * out) {
    for (size_t i = 0; i < n; ++i) {
        const double v[3] = {in[i * 3], in[i * 3 + 1], in[i * 3 + 2]};
        double       w[3];
        mb::mat_vec(r, v, w);
        for (int c = 0; c < 3; ++c) out[i * 3 + c] = float(w[c] + d[c]);
    }
}

} // namespace

MB_API mb_status mb_agent_plan_open_loop(mb_agent * value, const mb_command * command,
                                         void (*tap)(void *, const char *, const float *, const uint64_t *, uint32_t),
                                         void * user, mb_motion ** output, char * error, uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        require(output, "output");
        *output = nullptr;
        require(value, "value");
        require(command, "command");
        const mb::agent_command cmd = mb::capi::to_agent_command(*value, *command);
        std::string             name;
        std::vector<uint64_t>   shape;
        mb::trace_fn            trace;
        if (tap != nullptr) {
            trace = [&](std::string_view n, const float * data, const std::vector<int64_t> & s) {
                name.assign(n);
                shape.assign(s.begin(), s.end());
                tap(user, name.c_str(), data, shape.data(), uint32_t(shape.size()));
            };
        }
        mb::agent       copy(*value->core);   // plans on the agent's state; its history stays as it was
        mb::agent_trace t;
        mb::agent_plan  p = copy.plan(cmd, &t, trace);

        // predict's FK (canonical) → world, replacing the playback's blended, hinge-reduced transforms
        const mb::predict_result & res = t.result;
        const size_t               F   = size_t(res.frames);
        const size_t               J   = size_t(mb::k_n_joints);
        place(t.world_rotation, t.world_offset, res.root_translations.data(), F, p.root_translations.data());
        place(t.world_rotation, t.world_offset, res.joint_positions.data(), F * J, p.joint_positions.data());
        double qr[4];
        mb::matrix_to_quat_wxyz(t.world_rotation, qr);
        p.local_rotations_xyzw = res.local_rotations_xyzw;
        for (size_t f = 0; f < F; ++f) {
            float * root = &p.local_rotations_xyzw[f * J * 4];
            const float q[4] = {root[0], root[1], root[2], root[3]};
            quat_mul_wxyz_xyzw(qr, q, root);
        }
        p.qpos = t.qpos_uncanon;
        std::unique_ptr<mb_motion> m = mb::capi::motion_from_plan(std::move(p));
        m->global_features = res.global_features;
        m->duration_logits.assign(res.num_token_logits.begin(), res.num_token_logits.end());
        *output = m.release();
        return MB_OK;
    });
}
