// Kimodo clips and the shown-frame history of `serve` (clips.h)
#include "tools/serve/clips.h"

#include <motionbricks/motionbricks.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <system_error>

namespace mb::serve {

namespace mbx = motionbricks;
namespace fs  = std::filesystem;

namespace {

// heading about +Y of a pelvis quaternion x y z w: the yaw of its forward (+Z) axis
double heading(const float * q) {
    const double x = q[0], y = q[1], z = q[2], w = q[3];
    const double fx = 2 * (x * z + w * y), fz = 1 - 2 * (x * x + y * y);
    return std::atan2(fx, fz);
}

// a ⊗ b, x y z w
void quat_mul(const double * a, const float * b, float * out) {
    const double x = a[3] * b[0] + a[0] * b[3] + a[1] * b[2] - a[2] * b[1];
    const double y = a[3] * b[1] - a[0] * b[2] + a[1] * b[3] + a[2] * b[0];
    const double z = a[3] * b[2] + a[0] * b[1] - a[1] * b[0] + a[2] * b[3];
    const double w = a[3] * b[3] - a[0] * b[0] - a[1] * b[1] - a[2] * b[2];
    out[0] = float(x), out[1] = float(y), out[2] = float(z), out[3] = float(w);
}

std::shared_ptr<clip_asset> clip_of(const mbx::motion & m) {
    auto c    = std::make_shared<clip_asset>();
    c->frames = int64_t(m.frame_count());
    c->root.assign(m.root_translations().begin(), m.root_translations().end());
    c->rotations.assign(m.local_rotations_xyzw().begin(), m.local_rotations_xyzw().end());
    return c;
}

} // namespace

std::shared_ptr<const clip_asset> clip_library::add(const std::string & bytes, const std::string & name, const char * prefix) {
    mbx::motion m(nullptr);
    try {
        m = mbx::read_motion(reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size(), MB_MOTION_FORMAT_GLB);
    } catch (const mbx::error & e) {
        throw std::invalid_argument(e.what());
    }
    if (m.frame_count() < uint64_t(k_clip_min_frames)) throw std::invalid_argument("a clip needs at least 8 frames");
    auto                        c = clip_of(m);
    std::lock_guard<std::mutex> lk(mu_);
    if (clips_.size() >= k_max_clips) throw std::length_error("the clip library holds 256 clips already");
    c->id   = std::string(prefix) + std::to_string(prefix[0] == 'u' ? ++uploads_ : clips_.size() + 1);
    c->name = name.substr(0, 128);
    clips_.push_back(c);
    return c;
}

size_t clip_library::scan(const std::string & dir) {
    std::vector<fs::path> found;
    std::error_code       ec;
    fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec), end;
    if (ec) throw std::runtime_error("--clips '" + dir + "': " + ec.message());
    for (; it != end; it.increment(ec)) {
        if (ec) break;
        if (it.depth() >= k_clip_scan_depth) it.disable_recursion_pending();
        if (it->path().filename() == "animation.glb" && it->is_regular_file(ec)) found.push_back(it->path());
        if (found.size() > k_max_clips) break;
    }
    std::sort(found.begin(), found.end());
    size_t added = 0;
    for (const fs::path & p : found) {
        try {
            const mbx::motion m    = mbx::read_motion_file(p.string(), MB_MOTION_FORMAT_GLB);
            const std::string name = p.parent_path().filename().string();
            if (m.frame_count() < uint64_t(k_clip_min_frames)) throw std::invalid_argument("fewer than 8 frames");
            auto                        c = clip_of(m);
            std::lock_guard<std::mutex> lk(mu_);
            if (clips_.size() >= k_max_clips) break;
            c->id   = "scan-" + std::to_string(clips_.size() + 1);
            c->name = name.empty() ? "clip" : name.substr(0, 128);
            clips_.push_back(c);
            ++added;
        } catch (const std::exception & e) {
            std::fprintf(stderr, "serve: warning: clip '%s' skipped: %s\n", p.string().c_str(), e.what());
        }
    }
    return added;
}

std::shared_ptr<const clip_asset> clip_library::add_upload(const std::string & bytes, const std::string & name) {
    return add(bytes, name.empty() ? "upload" : name, "upload-");
}

std::shared_ptr<const clip_asset> clip_library::find(const std::string & id) const {
    std::lock_guard<std::mutex> lk(mu_);
    for (const auto & c : clips_) {
        if (c->id == id) return c;
    }
    return nullptr;
}

size_t clip_library::size() const {
    std::lock_guard<std::mutex> lk(mu_);
    return clips_.size();
}

std::string clip_library::list_json() const {
    std::lock_guard<std::mutex> lk(mu_);
    nlohmann::json              a = nlohmann::json::array();
    for (const auto & c : clips_) {
        a.push_back({{"id", c->id}, {"name", c->name}, {"frames", c->frames}, {"fps", 30}, {"duration", double(c->frames) / 30.0}});
    }
    return a.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::vector<timeline_frame> align_clip(const clip_asset & c, const timeline_frame & start) {
    const double d      = heading(start.rotations) - heading(&c.rotations[0]);
    const double cy     = std::cos(d), sy = std::sin(d);
    const double yaw[4] = {0, std::sin(d / 2), 0, std::cos(d / 2)};
    std::vector<float> root(c.root.size()), rot = c.rotations;
    for (int64_t f = 0; f < c.frames; ++f) {
        const double x = c.root[size_t(f) * 3] - c.root[0], z = c.root[size_t(f) * 3 + 2] - c.root[2];
        // about +Y: x' = x cos + z sin, z' = −x sin + z cos
        root[size_t(f) * 3 + 0] = float(start.root[0] + x * cy + z * sy);
        root[size_t(f) * 3 + 1] = c.root[size_t(f) * 3 + 1];
        root[size_t(f) * 3 + 2] = float(start.root[2] - x * sy + z * cy);
        float * q = &rot[size_t(f) * k_joints * 4];
        quat_mul(yaw, q, q);
    }
    try {
        const mbx::motion           m = mbx::create_motion(root.data(), rot.data(), uint64_t(c.frames));
        const mbx::float_view       qp = m.mujoco_qpos();
        std::vector<timeline_frame> out(size_t(c.frames));
        for (size_t f = 0; f < out.size(); ++f) {
            std::memcpy(out[f].qpos, qp.data + f * k_qpos_values, sizeof out[f].qpos);
            std::memcpy(out[f].root, &root[f * 3], sizeof out[f].root);
            std::memcpy(out[f].rotations, &rot[f * k_joints * 4], sizeof out[f].rotations);
        }
        return out;
    } catch (const mbx::error & e) {
        throw std::runtime_error(std::string("aligning the clip: ") + e.what());
    }
}

void frame_history::push(const timeline_frame & f) {
    std::lock_guard<std::mutex> lk(mu_);
    frames_.push_back(f);
    if (frames_.size() > k_capacity) frames_.pop_front();
}

void frame_history::clear() {
    std::lock_guard<std::mutex> lk(mu_);
    frames_.clear();
}

std::string frame_history::encode(double seconds, uint32_t format) const {
    std::vector<float> root, rot;
    {
        std::lock_guard<std::mutex> lk(mu_);
        const size_t n     = std::min(frames_.size(), size_t(std::clamp(seconds, 0.0, 60.0) * 30.0 + 0.5));
        for (size_t i = frames_.size() - n; i < frames_.size(); ++i) {
            root.insert(root.end(), frames_[i].root, frames_[i].root + 3);
            rot.insert(rot.end(), frames_[i].rotations, frames_[i].rotations + k_joints * 4);
        }
    }
    if (root.empty()) return {};
    try {
        const mbx::motion       m = mbx::create_motion(root.data(), rot.data(), root.size() / 3);
        mb_motion_write_options o{};
        o.format                   = format;
        const std::vector<uint8_t> b = mbx::write_motion(m, o);
        return std::string(b.begin(), b.end());
    } catch (const mbx::error & e) {
        throw std::runtime_error(e.what());
    }
}

} // namespace mb::serve
