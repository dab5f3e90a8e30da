// serve's live physics through the physics C ABI: start, a tick per hub tick, the frame's fields and
// the collision_shapes event
#include "tools/serve/live-physics.h"

#include "tools/serve/protocol.h"

#include <motionbricks/physics.h>
#include <motionbricks/sonic.h>
#include <openssl/evp.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <unordered_map>

namespace mb::serve {

namespace {

constexpr double k_frames_per_tick = 0.6;   // 30 fps timeline frames per 50 Hz tick

const char * shape_type_name(uint32_t t) {
    switch (t) {
    case 2: return "sphere";
    case 3: return "capsule";
    case 4: return "ellipsoid";
    case 5: return "cylinder";
    case 6: return "box";
    case 7: return "mesh";
    default: return "unknown";
    }
}

// a triangle soup [n, 3, 3] as shared vertices and indices (exact float matches merge)
void index_triangles(const std::vector<float> & soup, std::vector<float> & vertices, std::vector<uint32_t> & indices) {
    struct key_hash {
        size_t operator()(const std::array<uint32_t, 3> & k) const { return (size_t(k[0]) * 73856093u) ^ (size_t(k[1]) * 19349663u) ^ (size_t(k[2]) * 83492791u); }
    };
    std::unordered_map<std::array<uint32_t, 3>, uint32_t, key_hash> seen;
    for (size_t v = 0; v + 3 <= soup.size(); v += 3) {
        std::array<uint32_t, 3> k;
        std::memcpy(k.data(), soup.data() + v, sizeof k);
        auto [it, fresh] = seen.emplace(k, uint32_t(vertices.size() / 3));
        if (fresh) vertices.insert(vertices.end(), soup.begin() + long(v), soup.begin() + long(v) + 3);
        indices.push_back(it->second);
    }
}

} // namespace

std::string sha256_hex(const std::string & s) {
    unsigned char d[EVP_MAX_MD_SIZE];
    unsigned int  n = 0;
    if (EVP_Digest(s.data(), s.size(), d, &n, EVP_sha256(), nullptr) != 1) throw std::runtime_error("SHA-256 unavailable");
    static const char * hex = "0123456789abcdef";
    std::string out;
    for (unsigned i = 0; i < n; ++i) {
        out += hex[d[i] >> 4];
        out += hex[d[i] & 15];
    }
    return out;
}

void sample_qpos(const timeline & tl, double frame, float * qpos) {
    const double  f  = std::max(0.0, frame);
    const int64_t f0 = int64_t(std::floor(f));
    const double  w  = f - double(f0);
    const float * a  = tl.at(f0).qpos;
    const float * b  = tl.at(f0 + 1).qpos;
    double        dot = 0;
    for (int k = 3; k < 7; ++k) dot += double(a[k]) * b[k];
    const double s = dot < 0 ? -1.0 : 1.0;
    for (int k = 0; k < k_qpos_values; ++k) {
        const double bk = (k >= 3 && k < 7) ? s * b[k] : b[k];
        qpos[k]         = float((1 - w) * a[k] + w * bk);
    }
    const double n = std::sqrt(double(qpos[3]) * qpos[3] + double(qpos[4]) * qpos[4] + double(qpos[5]) * qpos[5] + double(qpos[6]) * qpos[6]);
    for (int k = 3; k < 7; ++k) qpos[k] = float(qpos[k] / n);
}

live_physics::live_physics(const live_physics_options & o) {
    char e[1024] = "";
    char v[64]   = "";
    if (mb_physics_engine_version(v, sizeof v, e, sizeof e) != MB_OK) throw std::runtime_error(e);
    version_ = v;
    if (!o.sonic.empty() && mb_sonic_load(o.sonic.c_str(), nullptr, &sonic_, e, sizeof e) != MB_OK) {
        throw std::runtime_error("cannot load the SONIC policy '" + o.sonic + "': " + e);
    }
    if (mb_physics_create(sonic_, o.scene.c_str(), o.config.empty() ? nullptr : o.config.c_str(), &physics_, e, sizeof e) != MB_OK) {
        mb_sonic_free(sonic_);
        throw std::runtime_error("cannot load the physics scene '" + o.scene + "': " + e);
    }
    try {
        if (mb_physics_skeleton(physics_, parents_, 30, e, sizeof e) != MB_OK || mb_physics_collision_count(physics_, &n_shapes_, e, sizeof e) != MB_OK) {
            throw std::runtime_error(e);
        }
        transforms_.resize(size_t(n_shapes_) * 7);
        if (!policy()) {
            kp_.resize(29);
            kd_.resize(29);
            if (mb_physics_get_table(physics_, kp_.data(), kd_.data(), nullptr, nullptr, 29, e, sizeof e) != MB_OK) throw std::runtime_error(e);
            for (float & k : kp_) k *= k_pd_kp_scale;
        }
        make_shapes();
        const std::string why = refresh();
        if (!why.empty()) throw std::runtime_error(why);
    } catch (...) {
        mb_physics_free(physics_);
        mb_sonic_free(sonic_);
        throw;
    }
}

live_physics::~live_physics() {
    mb_physics_free(physics_);
    mb_sonic_free(sonic_);
}

void live_physics::make_shapes() {
    char        e[512] = "";
    std::string defs   = "[";
    for (uint32_t i = 0; i < n_shapes_; ++i) {
        uint32_t type = 0;
        float    size[3];
        char     name[256];
        uint64_t n = 0;
        if (mb_physics_collision_shape(physics_, i, &type, size, 3, name, sizeof name, e, sizeof e) != MB_OK ||
            mb_physics_collision_triangles(physics_, i, nullptr, 0, &n, e, sizeof e) != MB_OK) {
            throw std::runtime_error(e);
        }
        if (i) defs += ',';
        defs += "{\"type\":\"";
        defs += shape_type_name(type);
        defs += "\",\"name\":";
        append_json_string(defs, name);
        defs += ",\"size\":";
        append_floats(defs, size, 3);
        if (n > 0) {
            std::vector<float> soup(n);
            if (mb_physics_collision_triangles(physics_, i, soup.data(), n, &n, e, sizeof e) != MB_OK) throw std::runtime_error(e);
            std::vector<float>    vertices;
            std::vector<uint32_t> indices;
            index_triangles(soup, vertices, indices);
            defs += ",\"vertices\":";
            append_floats(defs, vertices.data(), vertices.size());
            defs += ",\"indices\":[";
            for (size_t k = 0; k < indices.size(); ++k) {
                if (k) defs += ',';
                defs += std::to_string(indices[k]);
            }
            defs += ']';
        }
        defs += '}';
    }
    defs += ']';
    shapes_id_ = sha256_hex(defs);
    shapes_    = std::make_shared<const std::string>("{\"type\":\"collision_shapes\",\"id\":\"" + shapes_id_ + "\",\"shapes\":" + defs + "}");
}

std::string live_physics::refresh() {
    char e[512] = "";
    if (mb_physics_collision_transforms(physics_, transforms_.data(), transforms_.size(), e, sizeof e) != MB_OK) return e;
    return "";
}

std::string live_physics::start(const timeline & tl, int64_t tick) {
    char  e[1024] = "";
    float q[k_qpos_values];
    sample_qpos(tl, double(tick) * k_frames_per_tick, q);
    have_clip_ = false;
    if (mb_physics_reset(physics_, e, sizeof e) != MB_OK) return e;
    if (!policy() && mb_physics_set_gains(physics_, kp_.data(), kd_.data(), 29, e, sizeof e) != MB_OK) return e;
    if (mb_physics_start_qpos(physics_, q, k_qpos_values, e, sizeof e) != MB_OK) return e;
    stepped_ = false;   // the 30 bodies come out of the first step
    return refresh();
}

std::string live_physics::step(const timeline & tl, int64_t tick, uint64_t revision) {
    char         e[1024] = "";
    const double now     = double(tick) * k_frames_per_tick;
    mb_status    st      = MB_OK;
    if (policy()) {
        // a replanned timeline: the controller's clip from now on (its timeline blends into it)
        if (!have_clip_ || revision != clip_revision_) {
            const int64_t n = std::clamp<int64_t>(int64_t(std::ceil(double(tl.end() - 1) - now)) + 1, 2, k_max_clip_frames);
            clip_.resize(size_t(n) * k_qpos_values);
            for (int64_t k = 0; k < n; ++k) sample_qpos(tl, now + double(k), clip_.data() + k * k_qpos_values);
            clip_revision_ = revision;
            have_clip_     = true;
        }
        st = mb_physics_step_qpos(physics_, clip_.data(), clip_.size(), clip_.size() / k_qpos_values, 0.0, actual_, 90, nullptr, 0, e,
                                  sizeof e);
    } else {
        // PD tracking: the reference's hinges now are the targets
        float q[k_qpos_values];
        sample_qpos(tl, now, q);
        st = mb_physics_set_action_override(physics_, q + 7, 29, e, sizeof e);
        if (st == MB_OK) st = mb_physics_step_qpos(physics_, q, k_qpos_values, 1, 0.0, actual_, 90, nullptr, 0, e, sizeof e);
    }
    if (st != MB_OK) return std::string(mb_status_string(st)) + ": " + e;
    stepped_ = true;
    return refresh();
}

void live_physics::append_frame_fields(std::string & s) const {
    double   time = 0;
    uint32_t fallen = 0, contacts = 0;
    mb_physics_status(physics_, &time, &fallen, &contacts, nullptr, 0);
    if (stepped_) {
        s += ",\"physical\":";
        append_floats(s, actual_, 90);
    }
    s += ",\"parents\":[";
    for (int b = 0; b < 30; ++b) {
        if (b) s += ',';
        s += std::to_string(parents_[b]);
    }
    s += "],\"collision_transforms\":";
    append_floats(s, transforms_.data(), transforms_.size());
    s += ",\"contacts\":" + std::to_string(contacts) + ",\"physics_time\":";
    append_float(s, float(time));
    s += ",\"fallen\":";
    s += fallen ? "true" : "false";
}

} // namespace mb::serve
