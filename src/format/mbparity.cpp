// .mbparity v1 reader and writer. Little-endian; every float F32, finite.
//
//   offset 0   magic            8 bytes "MBPARI1\0"
//          8   version          U32 1 (any other value is rejected)
//         12   fps              U32 1..1000
//         16   plan count       U32 1..10,000
//         20   joints           U32 34
//         24   context frames   U32 4
//         28   target frames    U32 4
//         32   flags            U32 0
//         36   parents          I32 [34]     root −1, parent[j] in 0..j−1 for j > 0
//        172   neutral joints   F32 [34, 3]  motion space, metres
//        580   plans, each (F = its expected frame count):
//                command frame      U32
//                expected frames F  U32 24..64, a multiple of 4
//                mode               I32 0..14
//                reserved           U32 0
//                seed               U64
//                movement, facing   F32 [3], [3]
//                context roots      F32 [4, 3]
//                context local XYZW F32 [4, 34, 4]
//                expected roots     F32 [F, 3]
//                expected local XYZW F32 [F, 34, 4]
//                expected FK        F32 [F, 34, 3]
//                target roots       F32 [4, 3]
//                target local XYZW  F32 [4, 34, 4]
//                target FK          F32 [4, 34, 3]
// Quaternion squared norms within (0.99, 1.01). No byte after the last plan; at most 512 MiB.
// Animation data is right-handed, Y up, Z forward; the expected motion is upstream's unblended
// 414-feature output placed in the world (docs/FORMATS.md).
#include "format/mbparity.h"

#include "format/fixture-io.h"
#include "format/regular-file.h"

#include <cmath>

namespace mb {

namespace {

constexpr char     k_magic[9] = {'M', 'B', 'P', 'A', 'R', 'I', '1', '\0', '\0'};
constexpr uint32_t k_j        = k_mbparity_joints;
constexpr uint32_t k_w        = k_mbparity_window;

std::string where(size_t plan, const char * field) { return "plan " + std::to_string(plan) + " " + field; }

// "" or the first non-finite value of v
std::string check_finite(const float * v, size_t n, const std::string & field) {
    for (size_t i = 0; i < n; ++i) {
        if (!std::isfinite(v[i])) return field + "[" + std::to_string(i) + "] is not finite";
    }
    return "";
}

std::string check_finite(const std::vector<float> & v, const std::string & field) {
    return check_finite(v.data(), v.size(), field);
}

// "" or the first quaternion whose squared norm is outside (0.99, 1.01) (values already finite)
std::string check_quats(const std::vector<float> & q, const std::string & field) {
    for (size_t i = 0; i + 4 <= q.size(); i += 4) {
        const double n2 = double(q[i]) * q[i] + double(q[i + 1]) * q[i + 1] + double(q[i + 2]) * q[i + 2] +
                          double(q[i + 3]) * q[i + 3];
        if (!(n2 > k_mbparity_quat_lo && n2 < k_mbparity_quat_hi)) {
            return field + " quaternion " + std::to_string(i / 4) + " has squared norm " + num9(n2) +
                   " (must be within 0.99..1.01)";
        }
    }
    return "";
}

std::string check_size(const std::vector<float> & v, size_t want, const std::string & field) {
    if (v.size() == want) return "";
    return field + " has " + std::to_string(v.size()) + " values, expected " + std::to_string(want);
}

} // namespace

std::string mbparity_validate(const parity_fixture & f) {
    if (f.fps < 1 || f.fps > k_mbparity_max_fps) return "fps " + std::to_string(f.fps) + " must be 1..1000";
    if (f.plans.empty() || f.plans.size() > k_mbparity_max_plans) {
        return "plan count " + std::to_string(f.plans.size()) + " must be 1..10000";
    }
    if (f.parents[0] != -1) return "parents[0] = " + std::to_string(f.parents[0]) + " must be -1 (the root)";
    for (uint32_t j = 1; j < k_j; ++j) {
        if (f.parents[j] < 0 || f.parents[j] >= int32_t(j)) {
            return "parents[" + std::to_string(j) + "] = " + std::to_string(f.parents[j]) + " must be within 0.." +
                   std::to_string(j - 1);
        }
    }
    if (auto e = check_finite(f.neutral.data(), f.neutral.size(), "neutral joints"); !e.empty()) return e;
    for (size_t p = 0; p < f.plans.size(); ++p) {
        const parity_plan & pl = f.plans[p];
        if (pl.frames < k_mbparity_min_frames || pl.frames > k_mbparity_max_frames || pl.frames % 4 != 0) {
            return where(p, "expected frames ") + std::to_string(pl.frames) + " must be 24..64 and a multiple of 4";
        }
        if (pl.mode < 0 || pl.mode > k_mbparity_max_mode) {
            return where(p, "mode ") + std::to_string(pl.mode) + " must be 0..14";
        }
        const size_t F = pl.frames;
        struct array_check {
            const std::vector<float> * v;
            size_t                     n;
            const char *               name;
            bool                       quats;
        };
        const array_check arrays[] = {
            {&pl.context_roots, k_w * 3, "context roots", false},
            {&pl.context_local_xyzw, k_w * k_j * 4, "context local rotations", true},
            {&pl.expected_roots, F * 3, "expected roots", false},
            {&pl.expected_local_xyzw, F * k_j * 4, "expected local rotations", true},
            {&pl.expected_joints, F * k_j * 3, "expected joint positions", false},
            {&pl.target_roots, k_w * 3, "target roots", false},
            {&pl.target_local_xyzw, k_w * k_j * 4, "target local rotations", true},
            {&pl.target_joints, k_w * k_j * 3, "target joint positions", false},
        };
        if (auto e = check_finite(pl.movement, 3, where(p, "movement")); !e.empty()) return e;
        if (auto e = check_finite(pl.facing, 3, where(p, "facing")); !e.empty()) return e;
        for (const array_check & a : arrays) {
            if (auto e = check_size(*a.v, a.n, where(p, a.name)); !e.empty()) return e;
            if (auto e = check_finite(*a.v, where(p, a.name)); !e.empty()) return e;
            if (a.quats) {
                if (auto e = check_quats(*a.v, where(p, a.name)); !e.empty()) return e;
            }
        }
    }
    return "";
}

parity_fixture mbparity_parse(std::string_view bytes, const std::string & name) {
    if (bytes.size() > k_mbparity_max_bytes) {
        throw error(status::invalid_format, name + ": " + std::to_string(bytes.size()) + " bytes (at most 512 MiB)");
    }
    le_reader      r(bytes, name);
    parity_fixture f;
    r.magic(k_magic, ".mbparity");
    const uint64_t at_version = r.offset();
    if (const uint32_t v = r.u32("version"); v != k_mbparity_version) {
        r.fail_at(at_version, "version", std::to_string(v) + " is not supported (this reader knows 1)");
    }
    const uint64_t at_fps = r.offset();
    f.fps                 = r.u32("fps");
    if (f.fps < 1 || f.fps > k_mbparity_max_fps) r.fail_at(at_fps, "fps", std::to_string(f.fps) + " must be 1..1000");
    const uint64_t at_count = r.offset();
    const uint32_t count    = r.u32("plan count");
    if (count < 1 || count > k_mbparity_max_plans) {
        r.fail_at(at_count, "plan count", std::to_string(count) + " must be 1..10000");
    }
    auto expect = [&](const char * field, uint32_t want) {
        const uint64_t at = r.offset();
        if (const uint32_t v = r.u32(field); v != want) {
            r.fail_at(at, field, std::to_string(v) + " must be " + std::to_string(want));
        }
    };
    expect("joints", k_j);
    expect("context frames", k_w);
    expect("target frames", k_w);
    expect("flags", 0);
    r.raw32(f.parents.data(), k_j, "parents");
    r.raw32(f.neutral.data(), k_j * 3, "neutral joints");

    // the smallest plan is 24 frames: a count the bytes cannot hold fails before anything is allocated
    constexpr uint64_t k_min_plan = 4 * (4 + 2 + 6 + 2 * (k_w * 3 + k_w * k_j * 4) + k_w * k_j * 3 + 24 * (3 + k_j * 7));
    if (uint64_t(count) * k_min_plan > r.remaining()) {
        r.fail("plans", "truncated: " + std::to_string(count) + " plans need at least " +
                            std::to_string(uint64_t(count) * k_min_plan) + " bytes, " +
                            std::to_string(r.remaining()) + " left");
    }
    f.plans.resize(count);
    for (uint32_t p = 0; p < count; ++p) {
        parity_plan & pl = f.plans[p];
        const std::string at = "plan " + std::to_string(p) + " ";
        pl.command_frame = r.u32("command frame");
        const uint64_t at_frames = r.offset();
        pl.frames        = r.u32("expected frames");
        if (pl.frames < k_mbparity_min_frames || pl.frames > k_mbparity_max_frames || pl.frames % 4 != 0) {
            r.fail_at(at_frames, at + "expected frames", std::to_string(pl.frames) + " must be 24..64 and a multiple of 4");
        }
        const uint64_t at_mode = r.offset();
        pl.mode                = r.i32("mode");
        if (pl.mode < 0 || pl.mode > k_mbparity_max_mode) r.fail_at(at_mode, at + "mode", std::to_string(pl.mode) + " must be 0..14");
        const uint64_t at_reserved = r.offset();
        if (const uint32_t v = r.u32("reserved"); v != 0) r.fail_at(at_reserved, at + "reserved", std::to_string(v) + " must be 0");
        pl.seed = r.u64("seed");
        r.raw32(pl.movement, 3, "movement");
        r.raw32(pl.facing, 3, "facing");
        const size_t F = pl.frames;
        auto arr = [&](std::vector<float> & v, size_t n, const char * field) {
            v.resize(n);
            r.raw32(v.data(), n, field);
        };
        arr(pl.context_roots, k_w * 3, "context roots");
        arr(pl.context_local_xyzw, k_w * k_j * 4, "context local rotations");
        arr(pl.expected_roots, F * 3, "expected roots");
        arr(pl.expected_local_xyzw, F * k_j * 4, "expected local rotations");
        arr(pl.expected_joints, F * k_j * 3, "expected joint positions");
        arr(pl.target_roots, k_w * 3, "target roots");
        arr(pl.target_local_xyzw, k_w * k_j * 4, "target local rotations");
        arr(pl.target_joints, k_w * k_j * 3, "target joint positions");
    }
    r.finish();
    if (const std::string e = mbparity_validate(f); !e.empty()) throw error(status::invalid_format, name + ": " + e);
    return f;
}

parity_fixture mbparity_read(const std::string & path) {
    return mbparity_parse(read_regular_file(path, k_mbparity_max_bytes), path);
}

std::string mbparity_serialize(const parity_fixture & f) {
    if (const std::string e = mbparity_validate(f); !e.empty()) throw error(status::invalid_argument, "mbparity: " + e);
    le_writer w;
    w.bytes(std::string_view(k_magic, 8));
    for (uint32_t v : {k_mbparity_version, f.fps, uint32_t(f.plans.size()), k_j, k_w, k_w, 0u}) w.u32(v);
    w.raw32(f.parents.data(), k_j);
    w.raw32(f.neutral.data(), k_j * 3);
    for (const parity_plan & pl : f.plans) {
        w.u32(pl.command_frame);
        w.u32(pl.frames);
        w.i32(pl.mode);
        w.u32(0);
        w.u64(pl.seed);
        w.raw32(pl.movement, 3);
        w.raw32(pl.facing, 3);
        for (const std::vector<float> * v : {&pl.context_roots, &pl.context_local_xyzw, &pl.expected_roots,
                                              &pl.expected_local_xyzw, &pl.expected_joints, &pl.target_roots,
                                              &pl.target_local_xyzw, &pl.target_joints}) {
            w.raw32(v->data(), v->size());
        }
    }
    if (w.str().size() > k_mbparity_max_bytes) throw error(status::invalid_argument, "mbparity: larger than 512 MiB");
    return std::move(w.str());
}

void mbparity_write(const std::string & path, const parity_fixture & f) { write_file_atomic(path, mbparity_serialize(f)); }

} // namespace mb
