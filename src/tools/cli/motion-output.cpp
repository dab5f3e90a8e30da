// motion files of the CLI (motion-output.h)
#include "tools/cli/motion-output.h"

#include "format/json-bounded.h"
#include "format/regular-file.h"

#include <nlohmann/json.hpp>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <unistd.h>

namespace mb::cli {

namespace {

namespace mbx = motionbricks;
using json    = nlohmann::json;

constexpr int k_joints = int(MB_G1_JOINT_COUNT);

// a motion-v1 document of 18,000 frames holds about 6.5 M values in ~50 MB
constexpr json_bounds k_motion_json_bounds = {.max_bytes = size_t(128) << 20, .max_depth = 8, .max_values = 12000000};

// ".csv" for "a/B.CSV"; "" without an extension
std::string lower_extension(const std::string & path) {
    const size_t dot = path.rfind('.'), slash = path.rfind('/');
    if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return "";
    std::string e = path.substr(dot);
    for (char & c : e) c = char(std::tolower(static_cast<unsigned char>(c)));
    return e;
}

void write_text(const std::string & text, const std::string & path) {
    const std::string tmp = path + ".tmp." + std::to_string(::getpid());
    std::FILE *       f   = std::fopen(tmp.c_str(), "wb");
    if (!f) throw file_error("cannot create '" + tmp + "': " + std::strerror(errno));
    bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
    ok      = std::fflush(f) == 0 && ok;
    ok      = ::fsync(::fileno(f)) == 0 && ok;
    ok      = std::fclose(f) == 0 && ok;
    if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
        std::remove(tmp.c_str());
        throw file_error("cannot write '" + path + "': " + std::strerror(errno));
    }
}

// floats of a JSON array of `n` rows of `cols` numbers (or rows of rows: [n][a][b], a·b = cols)
void floats(const json & v, const char * key, uint64_t n, int cols, std::vector<float> & out) {
    const auto it = v.find(key);
    if (it == v.end() || !it->is_array() || it->size() != n) throw std::runtime_error(std::string(key) + " is not an array of 'frames' rows");
    out.clear();
    for (const json & r : *it) {
        const size_t before = out.size();
        auto         num    = [&](const json & x) {
            if (!x.is_number()) throw std::runtime_error(std::string(key) + " holds a value that is not a number");
            out.push_back(x.get<float>());
        };
        if (!r.is_array()) throw std::runtime_error(std::string(key) + " holds a row that is not an array");
        for (const json & x : r) {
            if (x.is_array()) {
                for (const json & y : x) num(y);
            } else {
                num(x);
            }
        }
        if (out.size() - before != size_t(cols)) throw std::runtime_error(std::string(key) + " has a row of the wrong size");
    }
}

// the CLI's own readers and writers throw mb::error; programs see the public error type
[[noreturn]] void rethrow_public(const mb::error & e) {
    throw mbx::error(e.code() == mb::status::io_error ? MB_IO_ERROR : MB_INVALID_FORMAT, e.what());
}

json read_motion_json(const std::string & path) {
    try {
        return json_parse_bounded(read_regular_file(path, k_motion_json_bounds.max_bytes), k_motion_json_bounds);
    } catch (const mb::error & e) {
        rethrow_public(e);
    }
}

} // namespace

double r7(float v) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.7g", double(v));
    return std::strtod(buf, nullptr);
}

nlohmann::json rows(const float * v, uint64_t n, int cols) {
    json a = json::array();
    for (uint64_t i = 0; i < n; ++i) {
        json r = json::array();
        for (int c = 0; c < cols; ++c) r.push_back(r7(v[i * uint64_t(cols) + uint64_t(c)]));
        a.push_back(std::move(r));
    }
    return a;
}

motion_format pick_motion_format(const std::string & path, const std::string & flag) {
    if (flag.empty()) {
        const std::string e = lower_extension(path);
        if (e == ".csv" || e == ".npz") return motion_format::qpos;
        if (e == ".bvh") return motion_format::bvh;
        if (e == ".glb") return motion_format::glb;
        return motion_format::json;
    }
    if (flag == "json") return motion_format::json;
    if (flag == "csv") return motion_format::csv;
    if (flag == "bvh") return motion_format::bvh;
    if (flag == "glb") return motion_format::glb;
    throw std::invalid_argument(std::string("--format must be ") + k_motion_format_names);
}

bool is_qpos_output(const std::string & path) {
    const std::string e = lower_extension(path);
    return e == ".csv" || e == ".npz";
}

const char * qpos_options_usage() {
    return "[--qpos-rate 30|50] [--quat-order wxyz|xyzw] [--qpos-header yes|no]";
}

int parse_qpos_option(const char * cmd, const std::string & a, const std::string & v, qpos_output & out) {
    if (a == "--qpos-rate") {
        if (v != "30" && v != "50") {
            std::fprintf(stderr, "motionbricks %s: --qpos-rate must be 30 or 50\n", cmd);
            return -1;
        }
        out.rate = v == "30" ? 30 : 50;
        return 1;
    }
    if (a == "--quat-order") {
        if (v != "wxyz" && v != "xyzw") {
            std::fprintf(stderr, "motionbricks %s: --quat-order must be wxyz or xyzw\n", cmd);
            return -1;
        }
        out.xyzw = v == "xyzw";
        return 1;
    }
    if (a == "--qpos-header") {
        if (v != "yes" && v != "no") {
            std::fprintf(stderr, "motionbricks %s: --qpos-header must be yes or no\n", cmd);
            return -1;
        }
        out.header = v == "yes";
        return 1;
    }
    return 0;
}

void write_qpos_output(const std::string & path, const float * qpos, uint64_t frames, const qpos_output & o) {
    const uint32_t format = lower_extension(path) == ".npz" ? MB_QPOS_FORMAT_NPZ : MB_QPOS_FORMAT_CSV;
    const uint32_t flags  = (o.xyzw ? MB_QPOS_QUAT_XYZW : 0) | (o.header ? 0 : MB_QPOS_NO_HEADER);
    mbx::write_qpos_file(qpos, frames, path, format, o.rate, flags);
}

float parse_units(const std::string & v) {
    if (v == "m") return 1.0f;
    if (v == "cm") return 100.0f;
    throw std::invalid_argument("--units must be m or cm");
}

void clip_frames::add(const mbx::motion & m, uint64_t f) {
    const float * r = m.root_translations().data + f * 3;
    const float * q = m.local_rotations_xyzw().data + f * uint64_t(k_joints) * 4;
    root_.insert(root_.end(), r, r + 3);
    rot_.insert(rot_.end(), q, q + k_joints * 4);
}

mbx::motion clip_frames::motion() const {
    return mbx::create_motion(root_.data(), rot_.data(), count());
}

void write_motion_file(const mbx::motion & m, const std::string & path, motion_format f, float units, const qpos_output & q) {
    if (f == motion_format::qpos) {
        write_qpos_output(path, m.mujoco_qpos().data, m.frame_count(), q);
        return;
    }
    if (f == motion_format::bvh || f == motion_format::glb) {
        mb_motion_write_options o{};
        o.format          = f == motion_format::bvh ? MB_MOTION_FORMAT_BVH : MB_MOTION_FORMAT_GLB;
        o.units_per_metre = f == motion_format::bvh ? units : 1.0f;
        mbx::write_motion_file(m, path, o);
        return;
    }
    if (f != motion_format::json) throw std::invalid_argument("a whole motion is written as json, qpos (.csv/.npz), bvh or glb");
    const uint64_t F = m.frame_count();
    json           names = json::array(), parents = json::array();
    for (uint32_t j = 0; j < uint32_t(k_joints); ++j) {
        const char * name   = nullptr;
        int32_t      parent = 0;
        char         err[256];
        if (mb_skeleton_get_joint(j, &name, &parent, err, sizeof err) != MB_OK) throw std::runtime_error(err);
        names.push_back(name);
        parents.push_back(parent);
    }
    json joints = json::array(), local = json::array();
    for (uint64_t i = 0; i < F; ++i) {
        joints.push_back(rows(m.joint_positions().data + i * k_joints * 3, k_joints, 3));
        local.push_back(rows(m.local_rotations_xyzw().data + i * k_joints * 4, k_joints, 4));
    }
    const json doc = {{"format", "motionbricks-motion-v1"}, {"fps", 30}, {"frames", F}, {"joint_names", names},
                      {"joint_positions", joints}, {"local_rotations_xyzw", local}, {"parents", parents},
                      {"plans", json::array()}, {"qpos", rows(m.mujoco_qpos().data, F, int(MB_G1_QPOS_SIZE))},
                      {"root_translations", rows(m.root_translations().data, F, 3)}};
    try {
        write_text(doc.dump() + "\n", path);
    } catch (const mb::error & e) {
        rethrow_public(e);
    }
}

mbx::motion read_motion_file(const std::string & path, const qpos_output & q) {
    const std::string e = lower_extension(path);
    if (e == ".csv" || e == ".npz") {
        return mbx::read_qpos_file(path, e == ".npz" ? MB_QPOS_FORMAT_NPZ : MB_QPOS_FORMAT_CSV, q.xyzw ? MB_QPOS_QUAT_XYZW : 0);
    }
    if (e != ".json") return mbx::read_motion_file(path);
    const json d = read_motion_json(path);
    if (!d.is_object() || d.value("format", "") != "motionbricks-motion-v1") {
        throw std::runtime_error(path + ": not a motionbricks-motion-v1 document");
    }
    const auto fr = d.find("frames");
    if (fr == d.end() || !fr->is_number_unsigned() || fr->get<uint64_t>() < 1 || fr->get<uint64_t>() > MB_MOTION_FILE_MAX_FRAMES) {
        throw std::runtime_error(path + ": frames must be 1..18000");
    }
    const uint64_t     F = fr->get<uint64_t>();
    std::vector<float> root, rot;
    try {
        floats(d, "root_translations", F, 3, root);
        floats(d, "local_rotations_xyzw", F, k_joints * 4, rot);
    } catch (const std::runtime_error & e) {
        throw std::runtime_error(path + ": " + e.what());
    }
    return mbx::create_motion(root.data(), rot.data(), F);
}

} // namespace mb::cli
