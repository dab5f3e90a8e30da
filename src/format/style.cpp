// .mbstyle v1 reader and writer.
//
// A GGUF v3 file (alignment 32, all tensors F32 except the mask) with, in write order:
//   general.architecture          STRING   "motionbricks"
//   general.name                  STRING   style name
//   general.alignment             UINT32   32
//   general.file_type             UINT32   0
//   motionbricks.format_version   UINT32   1 (any other value is rejected)
//   motionbricks.component        STRING   "style"
//   motionbricks.skeleton         STRING   "g1skel34"
//   motionbricks.upstream_revision STRING  a0732b642c0333077e127a2f56ab0014c196bca4
//   motionbricks.source_sha256    STRING   64 lowercase hex (the clip source; any source)
//   motionbricks.parameter_count  UINT64   element count of the five tensors
//   motionbricks.style_name       STRING   = general.name
//   motionbricks.style_speed      FLOAT32  configured speed, 0..10 m/s
//   motionbricks.style_frames     UINT32   F, 4..100,000
//   motionbricks.style_index      UINT32   optional; 0..14 in the released set
// and exactly five tensors (sorted by name; GGUF ne = PyTorch shape reversed):
//   allowed_tokens          I32  [11]         binary mask for 6..16 tokens, at least one 1
//   global_headings         F32  [F]          heading about +Y (rad), |h| ≤ 4π
//   global_joint_positions  F32  [F, 34, 3]   joint positions minus root (x, 0, z), each |v| ≤ 5 m
//   global_joint_rotations  F32  [F, 34, 9]   row-major 3×3 global rotations, orthonormal
//   global_root_positions   F32  [F, 3]       root (x, 0, z), each |v| ≤ 10 km
// Every float must be finite; the bounds (style.h k_style_max_*) are physical, see docs/FORMATS.md.
#include "format/style.h"

#include "format/gguf.h"

#include <cmath>
#include <cstdio>
#include <tuple>

namespace mb {

const char * const k_style_upstream_revision = "a0732b642c0333077e127a2f56ab0014c196bca4";
const char * const k_style_release_sha256    = "7ea40c20130c8a9799d83c0438750b51a5be9b1e09357c4928887961fc992d33";

namespace {

constexpr const char * k_t_mask      = "allowed_tokens";
constexpr const char * k_t_headings  = "global_headings";
constexpr const char * k_t_positions = "global_joint_positions";
constexpr const char * k_t_rotations = "global_joint_rotations";
constexpr const char * k_t_root      = "global_root_positions";

bool is_sha256_hex(const std::string & s) {
    if (s.size() != 64) return false;
    for (char c : s) {
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
    }
    return true;
}

// "" or the first non-finite element of `v` as "name[i]"
std::string check_finite(const std::vector<float> & v, const char * name) {
    for (size_t i = 0; i < v.size(); ++i) {
        if (!std::isfinite(v[i])) return std::string(name) + "[" + std::to_string(i) + "] is not finite";
    }
    return "";
}

// a float for messages, exact ("3.40000006e+38", "10.5"), not std::to_string's "%f"
std::string num(float v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.9g", double(v));
    return buf;
}

[[noreturn]] void fail(const std::string & path, const std::string & what) {
    throw error(status::invalid_format, path + ": " + what);
}

} // namespace

std::string style_validate(const style_asset & s) {
    if (s.name.empty()) return "style name is empty";
    if (!(s.speed >= 0 && s.speed <= k_style_max_speed)) {
        return "style speed " + num(s.speed) + " must be within 0.." + num(k_style_max_speed) + " m/s";
    }
    if (s.frames < k_style_min_frames || s.frames > k_style_max_frames) {
        return "style frames " + std::to_string(s.frames) + " outside 4..100000";
    }
    if (!is_sha256_hex(s.source_sha256)) return "source sha256 must be 64 lowercase hex digits";
    const size_t f = s.frames;
    if (s.joint_positions.size() != f * k_style_joints * 3) return "global_joint_positions must be [frames, 34, 3]";
    if (s.joint_rotations.size() != f * k_style_joints * 9) return "global_joint_rotations must be [frames, 34, 9]";
    if (s.root_positions.size() != f * 3) return "global_root_positions must be [frames, 3]";
    if (s.headings.size() != f) return "global_headings must be [frames]";
    for (const auto & [v, n] : {std::pair{&s.joint_positions, k_t_positions}, std::pair{&s.joint_rotations, k_t_rotations},
                                std::pair{&s.root_positions, k_t_root}, std::pair{&s.headings, k_t_headings}}) {
        std::string e = check_finite(*v, n);
        if (!e.empty()) return e;
    }
    // magnitudes a G1 clip can have (finite but absurd values would fail every plan instead)
    for (const auto & [v, n, bound, unit] :
         {std::tuple{&s.joint_positions, k_t_positions, k_style_max_joint_offset, " m"},
          std::tuple{&s.root_positions, k_t_root, k_style_max_root_distance, " m"},
          std::tuple{&s.headings, k_t_headings, k_style_max_heading, " rad"}}) {
        for (size_t i = 0; i < v->size(); ++i) {
            if (std::fabs((*v)[i]) > bound) {
                return std::string(n) + "[" + std::to_string(i) + "] = " + num((*v)[i]) + " exceeds " + num(bound) +
                       unit + " in magnitude";
            }
        }
    }
    // rotations: orthonormal with det +1 (within k_style_rotation_tol)
    for (size_t r = 0; r < f * k_style_joints; ++r) {
        const float * m = &s.joint_rotations[r * 9];
        float worst = 0;
        for (int i = 0; i < 3; ++i) {
            for (int j = 0; j < 3; ++j) {
                float d = m[0 * 3 + i] * m[0 * 3 + j] + m[1 * 3 + i] * m[1 * 3 + j] + m[2 * 3 + i] * m[2 * 3 + j];
                worst   = std::max(worst, std::fabs(d - (i == j ? 1.0f : 0.0f)));
            }
        }
        const float det = m[0] * (m[4] * m[8] - m[5] * m[7]) - m[1] * (m[3] * m[8] - m[5] * m[6]) +
                          m[2] * (m[3] * m[7] - m[4] * m[6]);
        if (worst > k_style_rotation_tol || det <= 0) {
            return "global_joint_rotations frame " + std::to_string(r / k_style_joints) + " joint " +
                   std::to_string(r % k_style_joints) + " is not a rotation (|RtR - I| = " + std::to_string(worst) +
                   ", det = " + std::to_string(det) + ")";
        }
    }
    int allowed = 0;
    for (int i = 0; i < k_style_mask_len; ++i) {
        if (s.allowed_tokens[i] != 0 && s.allowed_tokens[i] != 1) {
            return "allowed_tokens[" + std::to_string(i) + "] = " + std::to_string(s.allowed_tokens[i]) + " is not 0 or 1";
        }
        allowed += s.allowed_tokens[i];
    }
    if (allowed == 0) return "allowed_tokens allows no duration";
    return "";
}

style_asset style_read(const std::string & path) {
    std::unique_ptr<gguf_file> f = gguf_file::open(path);
    // exact string keys
    auto need_string = [&](const char * key) -> std::string {
        const std::optional<std::string_view> v = f->get_string(key);
        if (!v) fail(path, std::string("missing metadata '") + key + "'");
        return std::string(*v);
    };
    auto need_u32 = [&](const char * key) -> uint32_t {
        const std::optional<uint32_t> v = f->get_u32(key);
        if (!v) fail(path, std::string("missing metadata '") + key + "'");
        return *v;
    };
    auto expect = [&](const char * key, const std::string & want) {
        const std::string got = need_string(key);
        if (got != want) fail(path, std::string(key) + " is \"" + got + "\", expected \"" + want + "\"");
    };

    expect("general.architecture", "motionbricks");
    expect("motionbricks.component", "style");
    expect("motionbricks.skeleton", "g1skel34");
    const uint32_t version = need_u32("motionbricks.format_version");
    if (version != k_style_format_version) {
        fail(path, "motionbricks.format_version " + std::to_string(version) + " is not supported (this reader knows 1)");
    }
    expect("motionbricks.upstream_revision", k_style_upstream_revision);

    style_asset s;
    s.source_sha256 = need_string("motionbricks.source_sha256");
    if (!is_sha256_hex(s.source_sha256)) fail(path, "motionbricks.source_sha256 must be 64 lowercase hex digits");
    s.name = need_string("motionbricks.style_name");
    if (s.name.empty()) fail(path, "motionbricks.style_name is empty");
    if (const gguf_kv * gn = f->kv("general.name"); gn) {
        if (gn->type != gguf_type::GGUF_TYPE_STRING || gn->str != s.name) {
            fail(path, "general.name differs from motionbricks.style_name \"" + s.name + "\"");
        }
    }
    const gguf_kv * speed = f->kv("motionbricks.style_speed");
    if (!speed) fail(path, "missing metadata 'motionbricks.style_speed'");
    if (speed->type != gguf_type::GGUF_TYPE_FLOAT32) fail(path, "motionbricks.style_speed must be FLOAT32");
    s.speed = static_cast<float>(speed->f);
    if (!std::isfinite(s.speed) || s.speed < 0) fail(path, "motionbricks.style_speed must be finite and >= 0");
    s.frames = need_u32("motionbricks.style_frames");
    if (s.frames < k_style_min_frames || s.frames > k_style_max_frames) {
        fail(path, "motionbricks.style_frames " + std::to_string(s.frames) + " outside 4..100000");
    }
    if (const gguf_kv * idx = f->kv("motionbricks.style_index"); idx) {
        if (idx->type != gguf_type::GGUF_TYPE_UINT32) fail(path, "motionbricks.style_index must be UINT32");
        s.index = static_cast<uint32_t>(idx->u);
    }
    if (const gguf_kv * pc = f->kv("motionbricks.parameter_count"); pc && pc->type != gguf_type::GGUF_TYPE_UINT64) {
        fail(path, "motionbricks.parameter_count must be UINT64");
    }

    // exactly the five tensors, each with its type and shape
    if (f->tensors().size() != 5) {
        fail(path, "has " + std::to_string(f->tensors().size()) + " tensors, a style has exactly 5");
    }
    const int64_t fr = s.frames;
    auto take = [&](const char * name, dtype type, std::initializer_list<int64_t> shape) -> const tensor_view & {
        const tensor_view * t = f->find(name);
        if (!t) fail(path, std::string("missing tensor '") + name + "'");
        if (t->type != type) {
            fail(path, std::string("tensor '") + name + "' must be " + (type == dtype::DTYPE_F32 ? "F32" : "I32"));
        }
        bool     ok = shape.size() == t->n_dims;
        uint32_t i  = t->n_dims;
        if (ok) {
            for (int64_t d : shape) {
                if (t->ne[--i] != d) ok = false;
            }
        }
        if (!ok) {
            std::string want = "[";
            for (int64_t d : shape) want += (want.size() > 1 ? ", " : "") + std::to_string(d);
            fail(path, std::string("tensor '") + name + "' has shape " + torch_shape_string(*t) + ", expected " + want + "]");
        }
        return *t;
    };
    auto copy = [](const tensor_view & t, std::vector<float> & out) {
        out.assign(t.f32(), t.f32() + t.n_elements());
    };
    copy(take(k_t_positions, dtype::DTYPE_F32, {fr, k_style_joints, 3}), s.joint_positions);
    copy(take(k_t_rotations, dtype::DTYPE_F32, {fr, k_style_joints, 9}), s.joint_rotations);
    copy(take(k_t_root, dtype::DTYPE_F32, {fr, 3}), s.root_positions);
    copy(take(k_t_headings, dtype::DTYPE_F32, {fr}), s.headings);
    const tensor_view & mask = take(k_t_mask, dtype::DTYPE_I32, {k_style_mask_len});
    for (int i = 0; i < k_style_mask_len; ++i) s.allowed_tokens[i] = mask.i32()[i];

    const std::string problem = style_validate(s);
    if (!problem.empty()) fail(path, problem);
    return s;
}

void style_write(const std::string & path, const style_asset & s) {
    const std::string problem = style_validate(s);
    if (!problem.empty()) {
        throw error(status::invalid_argument, path + ": refusing to write an invalid style: " + problem);
    }

    const int64_t  fr     = s.frames;
    const uint64_t params = uint64_t(fr) * (k_style_joints * 3 + k_style_joints * 9 + 3 + 1) + k_style_mask_len;

    auto entry = [](const char * k, gguf_type t) {
        gguf_write_kv kv;
        kv.key  = k;
        kv.type = t;
        return kv;
    };
    auto str = [&](const char * k, std::string v) {
        gguf_write_kv kv = entry(k, gguf_type::GGUF_TYPE_STRING);
        kv.str           = std::move(v);
        return kv;
    };
    auto u32 = [&](const char * k, uint64_t v) {
        gguf_write_kv kv = entry(k, gguf_type::GGUF_TYPE_UINT32);
        kv.u             = v;
        return kv;
    };
    std::vector<gguf_write_kv> kvs;
    kvs.push_back(str("general.architecture", "motionbricks"));
    kvs.push_back(str("general.name", s.name));
    kvs.push_back(u32("general.alignment", 32));
    kvs.push_back(u32("general.file_type", 0));
    kvs.push_back(u32("motionbricks.format_version", k_style_format_version));
    kvs.push_back(str("motionbricks.component", "style"));
    kvs.push_back(str("motionbricks.skeleton", "g1skel34"));
    kvs.push_back(str("motionbricks.upstream_revision", k_style_upstream_revision));
    kvs.push_back(str("motionbricks.source_sha256", s.source_sha256));
    {
        gguf_write_kv kv = entry("motionbricks.parameter_count", gguf_type::GGUF_TYPE_UINT64);
        kv.u = params;
        kvs.push_back(kv);
    }
    kvs.push_back(str("motionbricks.style_name", s.name));
    {
        gguf_write_kv kv = entry("motionbricks.style_speed", gguf_type::GGUF_TYPE_FLOAT32);
        kv.f = s.speed;
        kvs.push_back(kv);
    }
    kvs.push_back(u32("motionbricks.style_frames", s.frames));
    if (s.index) kvs.push_back(u32("motionbricks.style_index", *s.index));

    // sorted by name, ne = PyTorch shape reversed
    std::vector<gguf_write_tensor> ts;
    ts.push_back({k_t_mask, dtype::DTYPE_I32, {k_style_mask_len}, s.allowed_tokens.data()});
    ts.push_back({k_t_headings, dtype::DTYPE_F32, {fr}, s.headings.data()});
    ts.push_back({k_t_positions, dtype::DTYPE_F32, {3, k_style_joints, fr}, s.joint_positions.data()});
    ts.push_back({k_t_rotations, dtype::DTYPE_F32, {9, k_style_joints, fr}, s.joint_rotations.data()});
    ts.push_back({k_t_root, dtype::DTYPE_F32, {3, fr}, s.root_positions.data()});
    gguf_write(path, kvs, ts, 32);
}

} // namespace mb
