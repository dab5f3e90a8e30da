// physics.h entry points: argument checks and copies around mb::physics::session (MuJoCo behind
// src/physics/mujoco/sim.h; a build without MuJoCo throws backend_unavailable from there)
#include "capi/capi-error.h"

#include <motionbricks/physics.h>
#include <motionbricks/sonic.h>

#include "physics/mujoco/batch.h"
#include "physics/mujoco/mbphysics.h"
#include "physics/mujoco/session.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

using mb::capi::fail;
using mb::capi::guard;
using mb::capi::require;
namespace ph = mb::physics;

namespace {

// the session's policy: the SONIC handle's batched calls (encoder mode 0, G1 reference motion)
struct sonic_policy final : ph::policy {
    mb_sonic * sonic = nullptr;
    void encode(const float * obs, int batch, float * tokens) override {
        char e[512];
        const mb_status st = mb_sonic_encode_batch(sonic, obs, uint64_t(batch) * MB_SONIC_ENCODER_OBS, uint32_t(batch), tokens,
                                                   uint64_t(batch) * MB_SONIC_TOKENS, e, sizeof e);
        if (st != MB_OK) fail(st == MB_INVALID_ARGUMENT ? MB_COMPUTE_FAILED : st, std::string("SONIC encoder: ") + e);
    }
    void decode(const float * obs, int batch, float * actions) override {
        char e[512];
        const mb_status st = mb_sonic_decode_batch(sonic, obs, uint64_t(batch) * MB_SONIC_DECODER_OBS, uint32_t(batch), actions,
                                                   uint64_t(batch) * MB_SONIC_ACTIONS, e, sizeof e);
        if (st != MB_OK) fail(st == MB_INVALID_ARGUMENT ? MB_COMPUTE_FAILED : st, std::string("SONIC decoder: ") + e);
    }
};

} // namespace

struct mb_physics {
    mb_sonic *                   sonic = nullptr;   // borrowed; NULL: override-driven only
    sonic_policy                 policy;
    std::unique_ptr<ph::session> core;
};

namespace {

void require_available() {
    if (!ph::engine_available()) ph::engine_version();   // throws backend_unavailable
}

// the session behind a handle, after the checks every entry point makes
ph::session & core_of(mb_physics * p) {
    require_available();
    require(p, "physics");
    return *p->core;
}
const ph::session & core_of(const mb_physics * p) {
    return core_of(const_cast<mb_physics *>(p));
}

void check_frames(uint64_t frames, const std::string & at = "") {
    if (frames < 1 || frames > ph::k_max_ref_frames) {
        fail(MB_INVALID_ARGUMENT, at + "frames " + std::to_string(frames) + " is outside 1.." + std::to_string(ph::k_max_ref_frames));
    }
}

// copies v out with the size-query convention: *count = size; data NULL with capacity 0 only asks
template <class T, class U> void copy_out(const std::vector<T> & v, U * data, uint64_t capacity, uint64_t * count) {
    require(count, "count");
    *count = v.size();
    if (data == nullptr && capacity == 0) return;
    require(data, "data");
    if (capacity < v.size()) fail(MB_INVALID_ARGUMENT, "capacity " + std::to_string(capacity) + " is below " + std::to_string(v.size()));
    std::copy(v.begin(), v.end(), data);
}

void check_count(uint64_t got, uint64_t want, const char * what) {
    if (got != want) fail(MB_INVALID_ARGUMENT, std::string(what) + " is " + std::to_string(got) + ", expected " + std::to_string(want));
}

void check_capacity(const float * out, uint64_t capacity, uint64_t need, const char * what) {
    if (out == nullptr && capacity == 0) return;
    require(out, what);
    if (capacity < need) fail(MB_INVALID_ARGUMENT, std::string(what) + " capacity " + std::to_string(capacity) + " is below " + std::to_string(need));
}

void check_pose(const float * root, const float * local) {
    for (int k = 0; k < 3; ++k) {
        if (!std::isfinite(root[k]) || std::fabs(root[k]) > 1e6f) fail(MB_INVALID_ARGUMENT, "root[" + std::to_string(k) + "] is not finite or exceeds 1e6");
    }
    for (int j = 0; j < 34; ++j) {
        const float * q = local + 4 * j;
        double        n = 0;
        for (int k = 0; k < 4; ++k) {
            if (!std::isfinite(q[k])) fail(MB_INVALID_ARGUMENT, "rotation of joint " + std::to_string(j) + " is not finite");
            n += double(q[k]) * q[k];
        }
        if (std::fabs(std::sqrt(n) - 1.0) > 0.01) {
            fail(MB_INVALID_ARGUMENT, "rotation of joint " + std::to_string(j) + " has norm " + std::to_string(std::sqrt(n)) + " (needs 1 +- 0.01)");
        }
    }
}

void write_outputs(const ph::session & s, float * actual, uint64_t actual_capacity, float * reference, uint64_t reference_capacity) {
    if (actual) std::copy(s.actual().begin(), s.actual().end(), actual);
    if (reference) std::copy(s.reference().begin(), s.reference().end(), reference);
    (void) actual_capacity;
    (void) reference_capacity;
}

const ph::collision_shape & shape_at(const mb_physics * p, uint32_t index) {
    const auto & shapes = ph::scene_collision(p->core->model());
    if (index >= shapes.size()) fail(MB_INVALID_ARGUMENT, "collision index " + std::to_string(index) + " is outside 0.." + std::to_string(shapes.size()) + ")");
    return shapes[index];
}

} // namespace

extern "C" {

MB_API mb_status mb_physics_engine_version(char * buffer, uint64_t capacity, char * error, uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        const std::string v = ph::engine_version();
        require(buffer, "buffer");
        if (capacity < v.size() + 1) fail(MB_INVALID_ARGUMENT, "capacity " + std::to_string(capacity) + " is below " + std::to_string(v.size() + 1));
        std::memcpy(buffer, v.c_str(), v.size() + 1);
        return MB_OK;
    });
}

MB_API mb_status mb_physics_create(mb_sonic * sonic, const char * scene_xml, const char * config_file, mb_physics ** output,
                                   char * error, uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        require(output, "output");
        *output = nullptr;
        require_available();
        require(scene_xml, "scene_xml");
        const ph::physics_config config = config_file ? ph::mbphysics_read(config_file) : ph::physics_config_release();
        auto p          = std::make_unique<mb_physics>();
        p->sonic        = sonic;
        p->policy.sonic = sonic;
        p->core         = std::make_unique<ph::session>(scene_xml, config, sonic ? &p->policy : nullptr);
        *output  = p.release();
        return MB_OK;
    });
}

MB_API void mb_physics_free(mb_physics * physics) {
    delete physics;
}

MB_API mb_status mb_physics_reset(mb_physics * physics, char * error, uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        core_of(physics);
        physics->core->reset();
        return MB_OK;
    });
}

MB_API mb_status mb_physics_start(mb_physics * physics, const float * root_xyz, uint64_t root_count,
                                  const float * local_rotation_xyzw, uint64_t rotation_count, char * error,
                                  uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        core_of(physics);
        require(root_xyz, "root_xyz");
        require(local_rotation_xyzw, "local_rotation_xyzw");
        check_count(root_count, 3, "root_count");
        check_count(rotation_count, 136, "rotation_count");
        check_pose(root_xyz, local_rotation_xyzw);
        if (physics->core->started()) fail(MB_INVALID_ARGUMENT, "the session has started already (mb_physics_reset first)");
        float qpos[ph::k_qpos36];
        ph::pose_to_qpos(root_xyz, local_rotation_xyzw, qpos);
        physics->core->start(qpos);
        return MB_OK;
    });
}

MB_API mb_status mb_physics_step(mb_physics * physics, const float * roots, uint64_t root_count, const float * rotations,
                                 uint64_t rotation_count, uint64_t frames, double source_time, float * actual_xyz,
                                 uint64_t actual_capacity, float * reference_xyz, uint64_t reference_capacity,
                                 char * error, uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        core_of(physics);
        require(roots, "roots");
        require(rotations, "rotations");
        check_frames(frames);
        check_count(root_count, 3 * frames, "root_count");
        check_count(rotation_count, 136 * frames, "rotation_count");
        check_capacity(actual_xyz, actual_capacity, 90, "actual_xyz");
        check_capacity(reference_xyz, reference_capacity, 90, "reference_xyz");
        if (!std::isfinite(source_time) || source_time < 0) fail(MB_INVALID_ARGUMENT, "source_time must be finite and >= 0");
        for (uint64_t f = 0; f < frames; ++f) check_pose(roots + 3 * f, rotations + 136 * f);   // the whole clip, as the reference
        const uint64_t id = ph::clip_hash(rotations, 136 * frames, ph::clip_hash(roots, 3 * frames, frames));
        if (physics->core->needs_clip(id)) {
            // a new clip for the controller: all of it as qpos
            std::vector<float> all(size_t(frames) * ph::k_qpos36);
            for (uint64_t f = 0; f < frames; ++f) ph::pose_to_qpos(roots + 3 * f, rotations + 136 * f, all.data() + ph::k_qpos36 * f);
            physics->core->step(all.data(), frames, source_time, id);
            write_outputs(*physics->core, actual_xyz, actual_capacity, reference_xyz, reference_capacity);
            return MB_OK;
        }
        // else only the two frames around source_time are converted to qpos
        const double   u     = source_time * ph::k_reference_fps;
        const uint64_t first = u >= double(frames - 1) ? frames - 1 : uint64_t(u);
        const uint64_t n     = std::min<uint64_t>(2, frames - first);
        float          clip[2 * ph::k_qpos36];
        for (uint64_t k = 0; k < n; ++k) ph::pose_to_qpos(roots + 3 * (first + k), rotations + 136 * (first + k), clip + ph::k_qpos36 * k);
        physics->core->step(clip, n, std::max(0.0, source_time - double(first) / ph::k_reference_fps), id);
        write_outputs(*physics->core, actual_xyz, actual_capacity, reference_xyz, reference_capacity);
        return MB_OK;
    });
}

MB_API mb_status mb_physics_skeleton(const mb_physics * physics, int32_t * parents, uint64_t count, char * error,
                                     uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        core_of(physics);
        require(parents, "parents");
        check_count(count, MB_PHYSICS_BODIES, "count");
        const auto & info = ph::scene_describe(physics->core->model());
        std::copy(info.parents.begin(), info.parents.end(), parents);
        return MB_OK;
    });
}

MB_API mb_status mb_physics_status(const mb_physics * physics, double * time, uint32_t * fallen, uint32_t * contacts,
                                   char * error, uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        core_of(physics);
        if (time) *time = physics->core->time();
        if (fallen) *fallen = physics->core->fallen() ? 1 : 0;
        if (contacts) *contacts = physics->core->mujoco().contacts();
        return MB_OK;
    });
}

MB_API mb_status mb_physics_collision_count(const mb_physics * physics, uint32_t * count, char * error,
                                            uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        core_of(physics);
        require(count, "count");
        *count = uint32_t(ph::scene_collision(physics->core->model()).size());
        return MB_OK;
    });
}

MB_API mb_status mb_physics_collision_shape(const mb_physics * physics, uint32_t index, uint32_t * type, float * size,
                                            uint64_t size_count, char * name, uint64_t name_capacity, char * error,
                                            uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        core_of(physics);
        require(type, "type");
        require(size, "size");
        check_count(size_count, 3, "size_count");
        if (name == nullptr && name_capacity > 0) fail(MB_INVALID_ARGUMENT, "name is NULL with a capacity");
        const ph::collision_shape & c = shape_at(physics, index);
        *type = c.type;
        std::copy(c.size.begin(), c.size.end(), size);
        mb::capi::write_error(name, name_capacity, c.name);   // the same safe, NUL-terminated truncation
        return MB_OK;
    });
}

MB_API mb_status mb_physics_collision_triangles(const mb_physics * physics, uint32_t index, float * xyz, uint64_t capacity,
                                                uint64_t * count, char * error, uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        core_of(physics);
        copy_out(shape_at(physics, index).triangles, xyz, capacity, count);
        return MB_OK;
    });
}

MB_API mb_status mb_physics_collision_transforms(const mb_physics * physics, float * transforms, uint64_t count, char * error,
                                                 uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        core_of(physics);
        require(transforms, "transforms");
        check_count(count, 7 * ph::scene_collision(physics->core->model()).size(), "count");
        physics->core->collision_transforms(transforms);
        return MB_OK;
    });
}

MB_API mb_status mb_physics_trace(const mb_physics * physics, uint32_t field, double * data, uint64_t capacity,
                                  uint64_t * count, char * error, uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        core_of(physics);
        if (field >= uint32_t(ph::k_trace_fields)) fail(MB_INVALID_ARGUMENT, "trace field " + std::to_string(field) + " is outside 0..5");
        copy_out(physics->core->trace(int(field)), data, capacity, count);
        return MB_OK;
    });
}

// ---- additions (not in the reference runtime) ----------------------------------------------------

MB_API mb_status mb_physics_step_qpos(mb_physics * physics, const float * qpos, uint64_t values, uint64_t frames,
                                      double source_time, float * actual_xyz, uint64_t actual_capacity,
                                      float * reference_xyz, uint64_t reference_capacity, char * error,
                                      uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        core_of(physics);
        require(qpos, "qpos");
        check_frames(frames);
        check_count(values, uint64_t(ph::k_qpos36) * frames, "values");
        check_capacity(actual_xyz, actual_capacity, 90, "actual_xyz");
        check_capacity(reference_xyz, reference_capacity, 90, "reference_xyz");
        physics->core->step(qpos, frames, source_time);
        write_outputs(*physics->core, actual_xyz, actual_capacity, reference_xyz, reference_capacity);
        return MB_OK;
    });
}

MB_API mb_status mb_physics_start_qpos(mb_physics * physics, const float * qpos, uint64_t count, char * error,
                                       uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        core_of(physics);
        require(qpos, "qpos");
        check_count(count, MB_PHYSICS_QPOS, "count");
        physics->core->start(qpos);
        return MB_OK;
    });
}

MB_API mb_status mb_physics_step_batch(mb_physics * const * sessions, uint64_t count, const float * const * qpos,
                                       const uint64_t * frames, const double * source_times, float * actual_xyz,
                                       uint64_t actual_capacity, char * error, uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        require_available();
        require(sessions, "sessions");
        require(qpos, "qpos");
        require(frames, "frames");
        require(source_times, "source_times");
        if (count < 1 || count > MB_PHYSICS_MAX_BATCH) fail(MB_INVALID_ARGUMENT, "count " + std::to_string(count) + " is outside 1..64");
        check_capacity(actual_xyz, actual_capacity, 90 * count, "actual_xyz");
        // every input first: nothing moves on a bad one
        for (uint64_t i = 0; i < count; ++i) {
            const std::string at = "session " + std::to_string(i) + ": ";
            if (!sessions[i]) fail(MB_INVALID_ARGUMENT, at + "NULL");
            for (uint64_t k = 0; k < i; ++k) {
                if (sessions[k] == sessions[i]) fail(MB_INVALID_ARGUMENT, at + "the same session as " + std::to_string(k));
            }
            if (sessions[i]->sonic != sessions[0]->sonic) fail(MB_INVALID_ARGUMENT, at + "another SONIC handle than session 0's");
            if (!qpos[i]) fail(MB_INVALID_ARGUMENT, at + "qpos is NULL");
            check_frames(frames[i], at);
            if (!std::isfinite(source_times[i]) || source_times[i] < 0) fail(MB_INVALID_ARGUMENT, at + "source_time must be finite and >= 0");
            if (!sessions[i]->core->started()) fail(MB_INVALID_ARGUMENT, at + "not started (mb_physics_start first)");
            if (!sessions[i]->core->has_override() && !sessions[i]->sonic) {
                fail(MB_NOT_IMPLEMENTED, at + "no SONIC handle and no action override");
            }
            try {
                ph::check_qpos_clip(qpos[i], frames[i]);
            } catch (const mb::error & e) {
                fail(MB_INVALID_ARGUMENT, at + e.what());
            }
        }
        std::vector<ph::session *> cores(static_cast<size_t>(count));
        for (uint64_t i = 0; i < count; ++i) cores[size_t(i)] = sessions[i]->core.get();
        ph::step_batch(cores.data(), size_t(count), qpos, frames, source_times);
        for (uint64_t i = 0; actual_xyz && i < count; ++i) {
            std::copy(sessions[i]->core->actual().begin(), sessions[i]->core->actual().end(), actual_xyz + 90 * i);
        }
        return MB_OK;
    });
}

MB_API mb_status mb_physics_set_action_override(mb_physics * physics, const float * targets, uint64_t count, char * error,
                                                uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        core_of(physics);
        if (targets == nullptr && count == 0) {
            physics->core->set_override(nullptr);
            return MB_OK;
        }
        require(targets, "targets");
        check_count(count, MB_PHYSICS_JOINTS, "count");
        double t[ph::k_body_joints];
        for (int i = 0; i < ph::k_body_joints; ++i) t[i] = targets[i];
        physics->core->set_override(t);
        return MB_OK;
    });
}

MB_API mb_status mb_physics_set_gains(mb_physics * physics, const float * kp, const float * kd, uint64_t count,
                                      char * error, uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        core_of(physics);
        const ph::physics_config & c = physics->core->config();
        if (kp == nullptr && kd == nullptr && count == 0) {
            physics->core->mujoco().set_gains(c.kp.data(), c.kd.data(), c.torque_limit.data());
            return MB_OK;
        }
        require(kp, "kp");
        require(kd, "kd");
        check_count(count, MB_PHYSICS_JOINTS, "count");
        double p[ph::k_body_joints], d[ph::k_body_joints];
        for (int i = 0; i < ph::k_body_joints; ++i) {
            p[i] = kp[i];
            d[i] = kd[i];
        }
        physics->core->mujoco().set_gains(p, d, c.torque_limit.data());
        return MB_OK;
    });
}

MB_API mb_status mb_physics_get_table(const mb_physics * physics, float * kp, float * kd, float * default_angles,
                                      float * torque_limits, uint64_t count, char * error, uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        core_of(physics);
        check_count(count, MB_PHYSICS_JOINTS, "count");
        const ph::physics_config & c = physics->core->config();
        for (int i = 0; i < ph::k_body_joints; ++i) {
            if (kp) kp[i] = float(c.kp[size_t(i)]);
            if (kd) kd[i] = float(c.kd[size_t(i)]);
            if (default_angles) default_angles[i] = float(c.default_angle[size_t(i)]);
            if (torque_limits) torque_limits[i] = float(c.torque_limit[size_t(i)]);
        }
        return MB_OK;
    });
}

MB_API mb_status mb_physics_get_state(const mb_physics * physics, double * qpos, uint64_t qpos_capacity, uint64_t * qpos_count,
                                      double * qvel, uint64_t qvel_capacity, uint64_t * qvel_count, char * error,
                                      uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        core_of(physics);
        const ph::robot & r  = physics->core->mujoco();
        const uint64_t    nq = uint64_t(r.nq()), nv = uint64_t(r.nv());
        if ((qpos == nullptr) != (qpos_capacity == 0) || (qvel == nullptr) != (qvel_capacity == 0)) {
            fail(MB_INVALID_ARGUMENT, "a buffer is NULL with a capacity, or given with capacity 0");
        }
        if (qpos && qpos_capacity < nq) fail(MB_INVALID_ARGUMENT, "qpos_capacity is below nq " + std::to_string(nq));
        if (qvel && qvel_capacity < nv) fail(MB_INVALID_ARGUMENT, "qvel_capacity is below nv " + std::to_string(nv));
        if (qpos_count) *qpos_count = nq;
        if (qvel_count) *qvel_count = nv;
        if (qpos) std::copy(r.qpos(), r.qpos() + nq, qpos);
        if (qvel) std::copy(r.qvel(), r.qvel() + nv, qvel);
        return MB_OK;
    });
}

MB_API mb_status mb_physics_get_mujoco_qpos(const mb_physics * physics, float * qpos, uint64_t count, char * error,
                                            uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        core_of(physics);
        require(qpos, "qpos");
        check_count(count, MB_PHYSICS_QPOS, "count");
        physics->core->qpos36(qpos);
        return MB_OK;
    });
}

MB_API mb_status mb_physics_get_pose(const mb_physics * physics, float * root_xyz, uint64_t root_count,
                                     float * local_rotation_xyzw, uint64_t rotation_count, char * error,
                                     uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        core_of(physics);
        require(root_xyz, "root_xyz");
        require(local_rotation_xyzw, "local_rotation_xyzw");
        check_count(root_count, 3, "root_count");
        check_count(rotation_count, 136, "rotation_count");
        physics->core->pose(root_xyz, local_rotation_xyzw);
        return MB_OK;
    });
}

MB_API mb_status mb_physics_get_scene(const mb_physics * physics, uint32_t * nq, uint32_t * nv, uint32_t * nu,
                                      char * names, uint64_t names_capacity, uint64_t * length, char * error,
                                      uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        core_of(physics);
        const auto & info = ph::scene_describe(physics->core->model());
        if (nq) *nq = uint32_t(info.nq);
        if (nv) *nv = uint32_t(info.nv);
        if (nu) *nu = uint32_t(info.nu);
        std::string list;
        for (const std::string & p : info.placeholders) {
            if (!list.empty()) list += '\n';
            list += p;
        }
        if (length) *length = list.size();
        if (names == nullptr && names_capacity == 0) return MB_OK;
        require(names, "names");
        if (names_capacity < list.size() + 1) fail(MB_INVALID_ARGUMENT, "names_capacity is below " + std::to_string(list.size() + 1));
        std::memcpy(names, list.c_str(), list.size() + 1);
        return MB_OK;
    });
}

MB_API mb_status mb_physics_set_controller_flags(mb_physics * physics, uint32_t flags, char * error, uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        core_of(physics);
        const uint32_t known = MB_PHYSICS_CONTROL_IDLE_READAPT | MB_PHYSICS_CONTROL_VELOCITY_STOP;
        if (flags & ~known) fail(MB_INVALID_ARGUMENT, "unknown controller flags " + std::to_string(flags & ~known));
        static_assert(MB_PHYSICS_CONTROL_IDLE_READAPT == ph::k_control_idle_readapt);
        static_assert(MB_PHYSICS_CONTROL_VELOCITY_STOP == ph::k_control_velocity_stop);
        physics->core->set_controller_flags(flags);
        return MB_OK;
    });
}

MB_API mb_status mb_physics_get_controller_flags(const mb_physics * physics, uint32_t * flags, char * error,
                                                 uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        const ph::session & s = core_of(physics);
        require(flags, "flags");
        *flags = s.controller_flags();
        return MB_OK;
    });
}

} // extern "C"
