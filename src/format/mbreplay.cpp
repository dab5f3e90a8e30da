// .mbreplay v1 reader and writer. Little-endian.
//
//   offset 0   magic                 8 bytes "MBRPLY1\0"
//          8   version               U32 1 (any other value is rejected)
//         12   fps                   U32 1..1000
//         16   frames                U32 1..1,000,000
//         20   joints J              U32 1..64
//         24   qpos Q                U32 1..256
//         28   plans P               U32 0..frames
//         32   target frames         U32 4
//         36   flags                 U32 0
//         40   parents               I32 [J]          root −1, parent[j] in 0..j−1
//              modes                 I32 [frames]     0..14
//              active plan           I32 [frames]     −1 (pre-roll) or 0..P−1
//              qpos                  F32 [frames, Q]
//              joint world positions F32 [frames, J, 3]
//              first playback frame  U32 [P]          < frames, non-decreasing
//              plan mode             I32 [P]          0..14
//              generated plan length U32 [P]          1..1,000,000
//              target positions      F32 [P, 4, J, 3]
// The file is exactly 40 + 4 × (the words above) bytes, at most 512 MiB; every float finite.
// Coordinates are right-handed, Y up, Z forward.
#include "format/mbreplay.h"

#include "format/fixture-io.h"
#include "format/regular-file.h"

#include <cmath>

namespace mb {

namespace {

constexpr char k_magic[9] = {'M', 'B', 'R', 'P', 'L', 'Y', '1', '\0', '\0'};

std::string idx(const char * field, size_t i) { return std::string(field) + "[" + std::to_string(i) + "]"; }

std::string check_finite(const std::vector<float> & v, const char * field) {
    for (size_t i = 0; i < v.size(); ++i) {
        if (!std::isfinite(v[i])) return idx(field, i) + " is not finite";
    }
    return "";
}

// 32-bit words of the payload, in 64 bits (every factor is bounded, so this cannot overflow)
uint64_t payload_words(uint64_t frames, uint64_t joints, uint64_t qpos, uint64_t plans) {
    return joints + 2 * frames + frames * qpos + frames * joints * 3 + 3 * plans + plans * k_mbreplay_targets * joints * 3;
}

} // namespace

std::string mbreplay_validate(const replay_session & s) {
    const uint64_t F = s.modes.size(), P = s.plan_first_frame.size(), J = s.joints, Q = s.qpos_size;
    if (s.fps < 1 || s.fps > k_mbreplay_max_fps) return "fps " + std::to_string(s.fps) + " must be 1..1000";
    if (F < 1 || F > k_mbreplay_max_frames) return "frames " + std::to_string(F) + " must be 1..1000000";
    if (J < 1 || J > k_mbreplay_max_joints) return "joints " + std::to_string(J) + " must be 1..64";
    if (Q < 1 || Q > k_mbreplay_max_qpos) return "qpos " + std::to_string(Q) + " must be 1..256";
    if (P > F) return "plans " + std::to_string(P) + " exceed frames " + std::to_string(F);
    struct sz {
        uint64_t have, want;
        const char * name;
    };
    for (const sz & c : {sz{s.parents.size(), J, "parents"}, sz{s.active_plan.size(), F, "active plan"},
                         sz{s.qpos.size(), F * Q, "qpos"}, sz{s.positions.size(), F * J * 3, "joint positions"},
                         sz{s.plan_mode.size(), P, "plan mode"}, sz{s.plan_frames.size(), P, "plan length"},
                         sz{s.target_positions.size(), P * k_mbreplay_targets * J * 3, "target positions"}}) {
        if (c.have != c.want) {
            return std::string(c.name) + " has " + std::to_string(c.have) + " values, expected " + std::to_string(c.want);
        }
    }
    if (payload_words(F, J, Q, P) * 4 + 40 > k_mbreplay_max_bytes) return "the file would exceed 512 MiB";
    if (s.parents[0] != -1) return "parents[0] = " + std::to_string(s.parents[0]) + " must be -1 (the root)";
    for (size_t j = 1; j < J; ++j) {
        if (s.parents[j] < 0 || s.parents[j] >= int32_t(j)) {
            return idx("parents", j) + " = " + std::to_string(s.parents[j]) + " must be within 0.." + std::to_string(j - 1);
        }
    }
    for (size_t i = 0; i < F; ++i) {
        if (s.modes[i] < 0 || s.modes[i] > k_mbreplay_max_mode) return idx("modes", i) + " = " + std::to_string(s.modes[i]) + " must be 0..14";
        if (s.active_plan[i] < -1 || s.active_plan[i] >= int64_t(P)) {
            return idx("active plan", i) + " = " + std::to_string(s.active_plan[i]) + " must be -1.." + std::to_string(int64_t(P) - 1);
        }
    }
    for (size_t p = 0; p < P; ++p) {
        if (s.plan_first_frame[p] >= F) {
            return idx("first playback frame", p) + " = " + std::to_string(s.plan_first_frame[p]) + " must be below frames " + std::to_string(F);
        }
        if (p > 0 && s.plan_first_frame[p] < s.plan_first_frame[p - 1]) {
            return idx("first playback frame", p) + " = " + std::to_string(s.plan_first_frame[p]) + " precedes the previous plan's " +
                   std::to_string(s.plan_first_frame[p - 1]);
        }
        if (s.plan_mode[p] < 0 || s.plan_mode[p] > k_mbreplay_max_mode) return idx("plan mode", p) + " = " + std::to_string(s.plan_mode[p]) + " must be 0..14";
        if (s.plan_frames[p] < 1 || s.plan_frames[p] > k_mbreplay_max_frames) {
            return idx("plan length", p) + " = " + std::to_string(s.plan_frames[p]) + " must be 1..1000000";
        }
    }
    if (auto e = check_finite(s.qpos, "qpos"); !e.empty()) return e;
    if (auto e = check_finite(s.positions, "joint positions"); !e.empty()) return e;
    if (auto e = check_finite(s.target_positions, "target positions"); !e.empty()) return e;
    return "";
}

replay_session mbreplay_parse(std::string_view bytes, const std::string & name) {
    if (bytes.size() > k_mbreplay_max_bytes) {
        throw error(status::invalid_format, name + ": " + std::to_string(bytes.size()) + " bytes (at most 512 MiB)");
    }
    le_reader r(bytes, name);
    r.magic(k_magic, ".mbreplay");
    struct field {
        const char * name;
        uint32_t     lo, hi;
    };
    // header: each value checked where it is read, so the message has its offset
    uint32_t h[8];
    const field fields[8] = {{"version", k_mbreplay_version, k_mbreplay_version}, {"fps", 1, k_mbreplay_max_fps},
                             {"frames", 1, k_mbreplay_max_frames},                {"joints", 1, k_mbreplay_max_joints},
                             {"qpos", 1, k_mbreplay_max_qpos},                    {"plans", 0, k_mbreplay_max_frames},
                             {"target frames", k_mbreplay_targets, k_mbreplay_targets}, {"flags", 0, 0}};
    for (int i = 0; i < 8; ++i) {
        const uint64_t at = r.offset();
        h[i]              = r.u32(fields[i].name);
        if (h[i] < fields[i].lo || h[i] > fields[i].hi) {
            r.fail_at(at, fields[i].name, std::to_string(h[i]) + " must be " +
                                              (fields[i].lo == fields[i].hi ? std::to_string(fields[i].lo)
                                                                            : std::to_string(fields[i].lo) + ".." + std::to_string(fields[i].hi)));
        }
    }
    const uint32_t F = h[2], J = h[3], Q = h[4], P = h[5];
    if (P > F) r.fail_at(28, "plans", std::to_string(P) + " exceed frames " + std::to_string(F));
    const uint64_t want = 40 + 4 * payload_words(F, J, Q, P);
    if (want > k_mbreplay_max_bytes) r.fail_at(16, "header", "dimensions need " + std::to_string(want) + " bytes (at most 512 MiB)");
    if (bytes.size() < want) {
        r.fail("payload", "truncated: the header needs " + std::to_string(want) + " bytes, the file has " + std::to_string(bytes.size()));
    }
    if (bytes.size() > want) {
        r.fail_at(want, "end", std::to_string(bytes.size() - want) + " trailing bytes after the last field");
    }
    replay_session s;
    s.fps       = h[1];
    s.joints    = J;
    s.qpos_size = Q;
    auto rd = [&](auto & v, uint64_t n, const char * f) {
        v.resize(n);
        r.raw32(v.data(), n, f);
    };
    rd(s.parents, J, "parents");
    rd(s.modes, F, "modes");
    rd(s.active_plan, F, "active plan");
    rd(s.qpos, uint64_t(F) * Q, "qpos");
    rd(s.positions, uint64_t(F) * J * 3, "joint positions");
    rd(s.plan_first_frame, P, "first playback frame");
    rd(s.plan_mode, P, "plan mode");
    rd(s.plan_frames, P, "plan length");
    rd(s.target_positions, uint64_t(P) * k_mbreplay_targets * J * 3, "target positions");
    r.finish();
    if (const std::string e = mbreplay_validate(s); !e.empty()) throw error(status::invalid_format, name + ": " + e);
    return s;
}

replay_session mbreplay_read(const std::string & path) {
    return mbreplay_parse(read_regular_file(path, k_mbreplay_max_bytes), path);
}

std::string mbreplay_serialize(const replay_session & s) {
    if (const std::string e = mbreplay_validate(s); !e.empty()) throw error(status::invalid_argument, "mbreplay: " + e);
    le_writer w;
    w.bytes(std::string_view(k_magic, 8));
    for (uint32_t v : {k_mbreplay_version, s.fps, s.frames(), s.joints, s.qpos_size, s.plans(), k_mbreplay_targets, 0u}) w.u32(v);
    w.raw32(s.parents.data(), s.parents.size());
    w.raw32(s.modes.data(), s.modes.size());
    w.raw32(s.active_plan.data(), s.active_plan.size());
    w.raw32(s.qpos.data(), s.qpos.size());
    w.raw32(s.positions.data(), s.positions.size());
    w.raw32(s.plan_first_frame.data(), s.plan_first_frame.size());
    w.raw32(s.plan_mode.data(), s.plan_mode.size());
    w.raw32(s.plan_frames.data(), s.plan_frames.size());
    w.raw32(s.target_positions.data(), s.target_positions.size());
    return std::move(w.str());
}

void mbreplay_write(const std::string & path, const replay_session & s) { write_file_atomic(path, mbreplay_serialize(s)); }

} // namespace mb
