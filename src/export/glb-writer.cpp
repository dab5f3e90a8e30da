// the GLB writer (glb.h). File layout (little endian):
//   header  magic "glTF", version 2, total length
//   chunk 0 length, "JSON", the glTF JSON padded with spaces to 4 bytes
//   chunk 1 length, "BIN\0", buffer 0: times [F] f32, root translations [F, 3] f32, then the
//           34 rotation tracks [F, 4] f32 (x y z w) in joint order, each its own bufferView
#include "export/glb.h"

#include "format/error.h"
#include "motion/g1.h"

#include <nlohmann/json.hpp>

#include <cstring>

namespace mb {

namespace {

using json = nlohmann::json;

constexpr int k_float = 5126;   // glTF componentType FLOAT

void put_u32(std::string & s, uint32_t v) {
    for (int i = 0; i < 4; ++i) s.push_back(char((v >> (8 * i)) & 0xff));
}

void put_floats(std::string & bin, const float * v, size_t n) {
    const size_t at = bin.size();
    bin.resize(at + n * 4);
    std::memcpy(&bin[at], v, n * 4);
}

} // namespace

std::string glb_write(const anim_clip & in) {
    anim_clip clip = in;
    clip_check_normalise(clip, "glb");
    const size_t F = size_t(clip.frames);

    // buffer 0: times, root, then one rotation track per joint
    std::string        bin;
    json               views = json::array(), accessors = json::array();
    std::vector<float> v(F);
    auto view = [&](const float * data, size_t n, const char * type, size_t count) {
        const size_t at = bin.size();
        put_floats(bin, data, n);
        views.push_back({{"buffer", 0}, {"byteOffset", at}, {"byteLength", n * 4}});
        accessors.push_back({{"bufferView", views.size() - 1}, {"componentType", k_float}, {"count", count},
                             {"type", type}});
    };
    for (size_t f = 0; f < F; ++f) v[f] = float(double(f) / k_clip_fps);
    view(v.data(), F, "SCALAR", F);
    accessors.back()["min"] = {v.front()};
    accessors.back()["max"] = {v.back()};
    view(clip.root.data(), F * 3, "VEC3", F);
    v.resize(F * 4);
    for (int j = 0; j < k_n_joints; ++j) {
        for (size_t f = 0; f < F; ++f) {
            std::memcpy(&v[f * 4], &clip.local_xyzw[(f * k_n_joints + size_t(j)) * 4], 16);
        }
        view(v.data(), F * 4, "VEC4", F);
    }

    // nodes: names, rest offsets, children; the root at the first frame's position
    json nodes = json::array();
    for (int j = 0; j < k_n_joints; ++j) {
        double off[3];
        joint_offset(j, off);
        json n = {{"name", k_g1_joint_names[j]}};
        if (j == 0) {
            n["translation"] = {clip.root[0], clip.root[1], clip.root[2]};
        } else {
            n["translation"] = {float(off[0]), float(off[1]), float(off[2])};
        }
        json children = json::array();
        for (int c = 0; c < k_n_joints; ++c) {
            if (k_g1_parents[c] == j) children.push_back(c);
        }
        if (!children.empty()) n["children"] = children;
        nodes.push_back(n);
    }

    // one animation: root translation (accessor 1), rotations (2..35), input = accessor 0
    json samplers = json::array(), channels = json::array();
    samplers.push_back({{"input", 0}, {"output", 1}, {"interpolation", "LINEAR"}});
    channels.push_back({{"sampler", 0}, {"target", {{"node", 0}, {"path", "translation"}}}});
    for (int j = 0; j < k_n_joints; ++j) {
        samplers.push_back({{"input", 0}, {"output", 2 + j}, {"interpolation", "LINEAR"}});
        channels.push_back({{"sampler", 1 + j}, {"target", {{"node", j}, {"path", "rotation"}}}});
    }

    const json doc = {
        {"asset", {{"version", "2.0"}, {"generator", "motionbricks"}}},
        {"scene", 0},
        {"scenes", {{{"name", "g1skel34"}, {"nodes", {0}}}}},
        {"nodes", nodes},
        {"buffers", {{{"byteLength", bin.size()}}}},
        {"bufferViews", views},
        {"accessors", accessors},
        {"animations", {{{"name", "motion"}, {"samplers", samplers}, {"channels", channels}}}},
    };
    std::string text = doc.dump();
    while (text.size() % 4) text.push_back(' ');
    while (bin.size() % 4) bin.push_back('\0');   // already aligned: floats only

    std::string out;
    out.reserve(28 + text.size() + bin.size());
    out += "glTF";
    put_u32(out, 2);
    put_u32(out, uint32_t(12 + 8 + text.size() + 8 + bin.size()));
    put_u32(out, uint32_t(text.size()));
    out += "JSON";
    out += text;
    put_u32(out, uint32_t(bin.size()));
    out.append("BIN\0", 4);
    out += bin;
    MB_ASSERT(out.size() <= k_glb_max_bytes, "an 18,000-frame clip fits in 16 MiB");
    return out;
}

} // namespace mb
