// libFuzzer target for the physics inputs. The first byte picks: even → the rest is a `.mbphysics`
// file (parse accepts it with every field in range, or throws mb::error); odd → the rest drives the
// physics C ABI's step entry points on one session of the G1 scene (path in MB_PHYSICS_SCENE): the
// input's bytes become the reference clip (any floats: NaN, huge, unnormalised), its counts (some
// wrong, some huge, never larger than the bytes given unless rejected by count), the source time
// and override targets. Every call must return a status; a session that stepped has finite bodies
#include "format/error.h"
#include "physics/mujoco/mbphysics.h"

#include <motionbricks/physics.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

static void fuzz_mbphysics(const uint8_t * data, size_t size) {
    try {
        const auto c = mb::physics::mbphysics_parse(std::string(reinterpret_cast<const char *>(data), size), "fuzz");
        if (size != mb::physics::k_mbphysics_size) __builtin_trap();
        for (int i = 0; i < mb::physics::k_body_joints; ++i) {
            if (!(c.kp[size_t(i)] > 0 && c.kp[size_t(i)] <= 1000 && c.torque_limit[size_t(i)] > 0)) __builtin_trap();
        }
    } catch (const mb::error &) {
    }
}

static mb_physics * session() {
    static mb_physics * p = [] {
        mb_physics * s     = nullptr;
        const char * scene = std::getenv("MB_PHYSICS_SCENE");
        if (!scene || mb_physics_create(nullptr, scene, nullptr, &s, nullptr, 0) != MB_OK) return (mb_physics *) nullptr;
        return s;
    }();
    return p;
}

template <class T> static T take(const uint8_t *& d, size_t & n) {
    T v{};
    if (n >= sizeof v) {
        std::memcpy(&v, d, sizeof v);
        d += sizeof v;
        n -= sizeof v;
    }
    return v;
}

static void fuzz_step(const uint8_t * d, size_t n) {
    mb_physics * p = session();
    if (!p) return;
    const uint8_t op     = take<uint8_t>(d, n);
    const uint8_t counts = take<uint8_t>(d, n);
    const double  t      = take<double>(d, n);
    if (op & 1) {   // a fresh start from the robot's own pose
        float root[3], local[136];
        mb_physics_reset(p, nullptr, 0);
        if (mb_physics_get_pose(p, root, 3, local, 136, nullptr, 0) != MB_OK) __builtin_trap();
        if (mb_physics_start(p, root, 3, local, 136, nullptr, 0) != MB_OK) __builtin_trap();
    }
    if (op & 2) {   // override targets from the input
        float targets[29] = {0};
        if (n > 0) std::memcpy(targets, d, std::min<size_t>(n, sizeof targets));
        mb_physics_set_action_override(p, targets, (op & 4) ? 29 : uint64_t(counts % 40), nullptr, 0);
    }
    if (op & 16) {  // controller flags: unknown bits must be refused, known ones change nothing here
        const mb_status fs = mb_physics_set_controller_flags(p, counts % 8, nullptr, 0);
        if ((fs == MB_OK) != (counts % 8 < 4)) __builtin_trap();
    }
    std::vector<float> floats(n / 4);
    if (floats.empty()) return;
    std::memcpy(floats.data(), d, floats.size() * 4);
    float actual[90], reference[90];
    mb_status st;
    if (op & 8) {   // G1Skeleton34 clip: frames from the bytes, counts maybe wrong
        uint64_t frames = floats.size() / 139;
        if (counts & 1) frames = uint64_t(1) << (21 + counts % 40);   // above 2^20: rejected before any read
        const uint64_t rc = (counts & 2) ? frames * 3 + 1 : frames * 3;
        const uint64_t qc = frames * 136;
        if (!(counts & 1) && rc > floats.size()) return;
        const float * roots = floats.data();
        const float * rot   = floats.data() + std::min<size_t>(floats.size(), size_t(frames * 3));
        if (!(counts & 1) && frames * 139 > floats.size()) return;
        st = mb_physics_step(p, roots, rc, rot, qc, frames, t, actual, 90, reference, (counts & 4) ? 89 : 90, nullptr, 0);
    } else if (op & 32) {   // a batch of the session (twice when counts & 8: refused before anything moves)
        uint64_t frames = floats.size() / 36;
        if (counts & 1) frames = uint64_t(1) << (21 + counts % 40);
        if (!(counts & 1) && frames * 36 > floats.size()) return;
        mb_physics *  ps[2]     = {p, p};
        const float * clips[2]  = {floats.data(), floats.data()};
        uint64_t      fr[2]     = {frames, frames};
        double        times[2]  = {t, t};
        const uint64_t count    = (counts & 8) ? 2 : 1;
        float          both[180];
        st = mb_physics_step_batch(ps, count, clips, fr, times, both, 90 * count, nullptr, 0);
        if (count == 2 && st != MB_INVALID_ARGUMENT) __builtin_trap();
        std::memcpy(actual, both, sizeof actual);
    } else {        // qpos clip
        uint64_t frames = floats.size() / 36;
        if (counts & 1) frames = uint64_t(1) << (21 + counts % 40);
        const uint64_t values = (counts & 2) ? frames * 36 - 1 : frames * 36;
        if (!(counts & 1) && values > floats.size()) return;
        st = mb_physics_step_qpos(p, floats.data(), values, frames, t, actual, 90, reference, 90, nullptr, 0);
    }
    if (st == MB_OK) {
        for (float v : actual) {
            if (!std::isfinite(v)) __builtin_trap();
        }
    } else if (st != MB_INVALID_ARGUMENT && st != MB_NOT_IMPLEMENTED && st != MB_COMPUTE_FAILED) {
        __builtin_trap();
    }
}

// The fuzzer builds the physics sources alone, without the SONIC network stack; it never attaches a
// policy, so the two SONIC entry points capi-physics links against only have to exist here.
extern "C" mb_status mb_sonic_encode_batch(mb_sonic *, const float *, uint64_t, uint32_t, float *, uint64_t, char *,
                                           uint64_t) {
    return MB_BACKEND_UNAVAILABLE;
}
extern "C" mb_status mb_sonic_decode_batch(mb_sonic *, const float *, uint64_t, uint32_t, float *, uint64_t, char *,
                                           uint64_t) {
    return MB_BACKEND_UNAVAILABLE;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t * data, size_t size) {
    if (size < 1) return 0;
    if (data[0] % 2 == 0) fuzz_mbphysics(data + 1, size - 1);
    else fuzz_step(data + 1, size - 1);
    return 0;
}
