// the GLB reader (glb.h). Every byte is hostile; the rules, in the order they are checked:
//   header   12 bytes: magic "glTF", version 2, length = the file's size (≤ 16 MiB)
//   chunk 0  u32 length (a multiple of 4, within the file), "JSON", the glTF JSON (bounded parse:
//            depth 8, 20,000 values, no duplicate keys)
//   chunk 1  u32 length (a multiple of 4, within the file), "BIN\0"; nothing after it
//   JSON     top-level keys only asset, scene, scenes, nodes, buffers, bufferViews, accessors,
//            animations, extensionsUsed, extensions, extras (node-only: no meshes, skins,
//            cameras, materials, images); no extensionsRequired; asset.version "2.0"
//   buffers  exactly one, no uri, byteLength ≤ the BIN chunk and within its 3 padding bytes
//   views    buffer 0, byteOffset + byteLength within the buffer, byteStride 4..252 and a
//            multiple of 4, no two views overlapping
//   accessor bufferView given, no sparse, FLOAT, not normalized, byteOffset a multiple of 4,
//            count 1..18,000, byteOffset + stride·(count − 1) + element size within its view
//   nodes    exactly 34, named after g1skel34 (each once), no mesh/skin/camera/matrix/weights,
//            scale 1, finite TRS; children: valid indices, one parent each, no cycle; the
//            parent of every joint is g1skel34's; rest translations = the neutral offsets
//            within 1 mm (no retargeting); the scene's nodes = [the root]
//   animation exactly one; 35 channels: the root's translation and every node's rotation, each
//            once; samplers LINEAR with one shared time track: finite, strictly increasing,
//            30 fps (|t[i] − t[0] − i/30| ≤ 1 ms), ≤ 10 min; outputs VEC3 / VEC4 of that count
//   values   finite, |root| ≤ 1e4 m, quaternion norms 0.9..1.1 (then normalised)
#include "export/glb.h"

#include "format/error.h"
#include "format/json-bounded.h"
#include "motion/g1.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>

namespace mb {

namespace {

using json = nlohmann::json;

constexpr json_bounds k_glb_json_bounds = {.max_bytes = k_glb_max_bytes, .max_depth = 8, .max_values = 20000};
constexpr uint64_t    k_max_items       = 1024;     // bufferViews, accessors, samplers, channels
constexpr double      k_rest_tolerance  = 1.0e-3;   // m, rest translation vs the neutral offset
constexpr double      k_time_tolerance  = 1.0e-3;   // s, a key's time vs frame / 30

struct view_t {
    uint64_t offset = 0, length = 0, stride = 0;   // stride 0 = tightly packed
};

struct accessor_t {
    uint64_t view = 0, offset = 0, count = 0, comps = 0;
};

class glb_parser {
public:
    glb_parser(std::string_view bytes, const std::string & what) : b_(bytes), what_(what) {}

    anim_clip parse() {
        chunks();
        try {
            doc_ = json_parse_bounded(json_text_, k_glb_json_bounds);
        } catch (const json_input_error & e) {
            bad(std::string("JSON chunk: ") + e.what());
        }
        if (!doc_.is_object()) bad("the JSON chunk is not an object");
        top_level();
        buffers();
        views();
        accessors();
        nodes();
        return animation();
    }

private:
    [[noreturn]] void bad(const std::string & m) const { fail(status::invalid_format, what_ + ": " + m); }

    uint32_t u32(uint64_t at) const {
        uint32_t v = 0;
        for (int i = 0; i < 4; ++i) v |= uint32_t(uint8_t(b_[at + uint64_t(i)])) << (8 * i);
        return v;
    }

    // ---- bytes ----
    void chunks() {
        const uint64_t n = b_.size();
        if (n > k_glb_max_bytes) bad(std::to_string(n) + " bytes, a clip GLB holds at most 16 MiB");
        if (n < 12) bad("shorter than the 12-byte GLB header");
        if (std::memcmp(b_.data(), "glTF", 4) != 0) bad("not a GLB file (magic is not \"glTF\")");
        if (u32(4) != 2) bad("GLB version " + std::to_string(u32(4)) + ", only 2 is read");
        if (u32(8) != n) bad("header length " + std::to_string(u32(8)) + " but the file has " + std::to_string(n) + " bytes");
        if (n < 20) bad("no JSON chunk header at offset 12");
        const uint64_t json_len = u32(12);
        if (std::memcmp(b_.data() + 16, "JSON", 4) != 0) bad("chunk 0 is not of type JSON");
        if (json_len > n - 20) bad("JSON chunk length " + std::to_string(json_len) + " runs past the end of the file");
        if (json_len == 0 || json_len % 4) bad("JSON chunk length " + std::to_string(json_len) + " is not a positive multiple of 4");
        json_text_       = b_.substr(20, json_len);
        const uint64_t a = 20 + json_len;
        if (n - a < 8) bad("no BIN chunk after the JSON chunk (offset " + std::to_string(a) + ")");
        const uint64_t bin_len = u32(a);
        if (std::memcmp(b_.data() + a + 4, "BIN\0", 4) != 0) bad("chunk 1 is not of type BIN");
        if (bin_len > n - a - 8) bad("BIN chunk length " + std::to_string(bin_len) + " runs past the end of the file");
        if (bin_len % 4) bad("BIN chunk length " + std::to_string(bin_len) + " is not a multiple of 4");
        if (a + 8 + bin_len != n) bad(std::to_string(n - a - 8 - bin_len) + " bytes after the BIN chunk");
        bin_ = b_.substr(a + 8, bin_len);
    }

    // ---- JSON helpers ----
    const json & member(const json & o, const char * key, const std::string & where) const {
        const auto it = o.find(key);
        if (it == o.end()) bad(where + "." + key + " is missing");
        return *it;
    }
    uint64_t index(const json & v, uint64_t limit, const std::string & where) const {
        if (!v.is_number_integer() || (v.is_number_integer() && v.get<int64_t>() < 0)) bad(where + " is not a non-negative integer");
        const uint64_t x = v.get<uint64_t>();
        if (x >= limit) bad(where + " = " + std::to_string(x) + ", beyond " + std::to_string(limit) + " allowed");
        return x;
    }
    uint64_t opt_index(const json & o, const char * key, uint64_t def, uint64_t limit, const std::string & where) const {
        const auto it = o.find(key);
        return it == o.end() ? def : index(*it, limit, where + "." + key);
    }
    const json & array(const json & v, uint64_t max, const std::string & where) const {
        if (!v.is_array()) bad(where + " is not an array");
        if (v.size() > max) bad(where + " has " + std::to_string(v.size()) + " entries, at most " + std::to_string(max));
        return v;
    }
    const json & object(const json & v, const std::string & where) const {
        if (!v.is_object()) bad(where + " is not an object");
        return v;
    }
    void numbers(const json & o, const char * key, int n, double * out, const std::string & where) const {
        const auto it = o.find(key);
        if (it == o.end()) return;
        const std::string w = where + "." + key;
        if (!it->is_array() || it->size() != size_t(n)) bad(w + " is not an array of " + std::to_string(n) + " numbers");
        for (int i = 0; i < n; ++i) {
            const json & x = (*it)[size_t(i)];
            if (!x.is_number() || !std::isfinite(x.get<double>())) bad(w + " holds a value that is not a finite number");
            out[i] = x.get<double>();
        }
    }

    // ---- document ----
    void top_level() {
        static const std::set<std::string> allowed = {"asset", "scene", "scenes", "nodes", "buffers", "bufferViews",
                                                      "accessors", "animations", "extensionsUsed", "extensions", "extras"};
        for (const auto & [k, v] : doc_.items()) {
            if (!allowed.count(k)) bad("top-level \"" + k.substr(0, 64) + "\": a clip GLB is node-only (no meshes, skins, cameras, materials or images)");
        }
        const json & asset = object(member(doc_, "asset", "glTF"), "asset");
        const json & ver   = member(asset, "version", "asset");
        if (!ver.is_string() || ver.get<std::string>() != "2.0") bad("asset.version is not \"2.0\"");
        if (asset.contains("minVersion") && asset["minVersion"] != "2.0") bad("asset.minVersion is not \"2.0\"");
    }

    void buffers() {
        const json & bs = array(member(doc_, "buffers", "glTF"), 1, "buffers");
        if (bs.size() != 1) bad("buffers must hold exactly one buffer (the BIN chunk)");
        const json & b = object(bs[0], "buffers[0]");
        if (b.contains("uri")) bad("buffers[0].uri is set: only the GLB's own BIN chunk is read");
        buffer_len_ = index(member(b, "byteLength", "buffers[0]"), bin_.size() + 1, "buffers[0].byteLength");
        if (bin_.size() - buffer_len_ > 3) bad("buffers[0].byteLength is more than 3 bytes short of the BIN chunk");
    }

    void views() {
        const json & vs = array(member(doc_, "bufferViews", "glTF"), k_max_items, "bufferViews");
        for (size_t i = 0; i < vs.size(); ++i) {
            const std::string w = "bufferViews[" + std::to_string(i) + "]";
            const json &      v = object(vs[i], w);
            index(member(v, "buffer", w), 1, w + ".buffer");
            view_t t;
            t.offset = opt_index(v, "byteOffset", 0, buffer_len_ + 1, w);
            t.length = index(member(v, "byteLength", w), buffer_len_ + 1, w + ".byteLength");
            if (t.length == 0) bad(w + ".byteLength is 0");
            if (t.length > buffer_len_ - t.offset) bad(w + " (offset " + std::to_string(t.offset) + ", length " + std::to_string(t.length) + ") runs past the buffer's " + std::to_string(buffer_len_) + " bytes");
            if (t.offset % 4) bad(w + ".byteOffset is not a multiple of 4");
            t.stride = opt_index(v, "byteStride", 0, 253, w);
            if (v.contains("byteStride") && (t.stride < 4 || t.stride % 4)) bad(w + ".byteStride must be 4..252 and a multiple of 4");
            views_.push_back(t);
        }
        std::vector<view_t> sorted = views_;
        std::sort(sorted.begin(), sorted.end(), [](const view_t & a, const view_t & b) { return a.offset < b.offset; });
        for (size_t i = 1; i < sorted.size(); ++i) {
            if (sorted[i].offset < sorted[i - 1].offset + sorted[i - 1].length) {
                bad("bufferViews overlap (at buffer byte " + std::to_string(sorted[i].offset) + ")");
            }
        }
    }

    void accessors() {
        const json & as = array(member(doc_, "accessors", "glTF"), k_max_items, "accessors");
        for (size_t i = 0; i < as.size(); ++i) {
            const std::string w = "accessors[" + std::to_string(i) + "]";
            const json &      a = object(as[i], w);
            if (a.contains("sparse")) bad(w + " is sparse: not read");
            accessor_t t;
            t.view = index(member(a, "bufferView", w), views_.size(), w + ".bufferView");
            if (member(a, "componentType", w) != 5126) bad(w + ".componentType is not FLOAT (5126)");
            if (a.contains("normalized") && a["normalized"] != false) bad(w + ".normalized is set on a FLOAT accessor");
            const json & type = member(a, "type", w);
            if (type == "SCALAR") {
                t.comps = 1;
            } else if (type == "VEC3") {
                t.comps = 3;
            } else if (type == "VEC4") {
                t.comps = 4;
            } else {
                bad(w + ".type is not SCALAR, VEC3 or VEC4");
            }
            t.count = index(member(a, "count", w), uint64_t(k_clip_max_frames) + 1, w + ".count");
            if (t.count == 0) bad(w + ".count is 0");
            const view_t & v = views_[t.view];
            t.offset          = opt_index(a, "byteOffset", 0, v.length, w);
            if (t.offset % 4) bad(w + ".byteOffset is not a multiple of 4");
            const uint64_t elem   = 4 * t.comps;
            const uint64_t stride = v.stride ? v.stride : elem;
            if (stride < elem) bad(w + ": its view's byteStride " + std::to_string(stride) + " is smaller than an element (" + std::to_string(elem) + " bytes)");
            // count ≤ 18,000 and stride ≤ 252: no overflow in 64 bits
            const uint64_t need = t.offset + stride * (t.count - 1) + elem;
            if (need > v.length) bad(w + ": " + std::to_string(t.count) + " elements of stride " + std::to_string(stride) + " from byte " + std::to_string(t.offset) + " need " + std::to_string(need) + " bytes, its view has " + std::to_string(v.length));
            acc_.push_back(t);
        }
    }

    // accessor `i` as floats [count, comps]
    std::vector<float> read(uint64_t i, uint64_t comps, const std::string & role) const {
        const accessor_t & a = acc_[i];
        if (a.comps != comps) bad("accessors[" + std::to_string(i) + "] (" + role + ") has " + std::to_string(a.comps) + " components, " + std::to_string(comps) + " expected");
        const view_t &     v      = views_[a.view];
        const uint64_t     stride = v.stride ? v.stride : 4 * comps;
        std::vector<float> out(a.count * comps);
        for (uint64_t e = 0; e < a.count; ++e) {
            std::memcpy(&out[e * comps], bin_.data() + v.offset + a.offset + e * stride, 4 * comps);
        }
        return out;
    }

    void nodes() {
        const json & ns = array(member(doc_, "nodes", "glTF"), k_n_joints, "nodes");
        if (ns.size() != size_t(k_n_joints)) bad("nodes has " + std::to_string(ns.size()) + " entries, a g1skel34 clip has 34");
        joint_of_.assign(ns.size(), -1);
        std::vector<int> node_of(k_n_joints, -1);
        for (size_t i = 0; i < ns.size(); ++i) {
            const std::string w = "nodes[" + std::to_string(i) + "]";
            const json &      n = object(ns[i], w);
            for (const char * k : {"mesh", "skin", "camera", "matrix", "weights"}) {
                if (n.contains(k)) bad(w + "." + k + " is set: a clip GLB is node-only, with TRS transforms");
            }
            const json & name = member(n, "name", w);
            if (!name.is_string()) bad(w + ".name is not a string");
            const std::string s = name.get<std::string>();
            int               j = -1;
            for (int k = 0; k < k_n_joints; ++k) {
                if (s == k_g1_joint_names[k]) j = k;
            }
            if (j < 0) bad(w + ".name \"" + s.substr(0, 64) + "\" is not a g1skel34 joint");
            if (node_of[size_t(j)] >= 0) bad(w + ".name \"" + s + "\" is used twice");
            node_of[size_t(j)] = int(i);
            joint_of_[i]       = j;
            double scale[3] = {1, 1, 1}, rot[4] = {0, 0, 0, 1}, tr[3] = {0, 0, 0};
            numbers(n, "scale", 3, scale, w);
            numbers(n, "rotation", 4, rot, w);
            numbers(n, "translation", 3, tr, w);
            if (std::fabs(scale[0] - 1) > 1e-6 || std::fabs(scale[1] - 1) > 1e-6 || std::fabs(scale[2] - 1) > 1e-6) bad(w + ".scale is not 1");
            if (j != 0) {
                double off[3];
                joint_offset(j, off);
                for (int k = 0; k < 3; ++k) {
                    if (std::fabs(tr[k] - off[k]) > k_rest_tolerance) bad(w + " (" + s + "): rest translation differs from the g1skel34 offset by more than 1 mm (no retargeting)");
                }
            }
        }
        // hierarchy: one parent each, no cycle, g1skel34's parents
        std::vector<int> parent(ns.size(), -1);
        for (size_t i = 0; i < ns.size(); ++i) {
            const auto it = ns[i].find("children");
            if (it == ns[i].end()) continue;
            const std::string w = "nodes[" + std::to_string(i) + "].children";
            for (const json & c : array(*it, k_n_joints, w)) {
                const uint64_t ci = index(c, ns.size(), w + "[]");
                if (ci == i) bad(w + " holds the node itself (a cycle)");
                if (parent[ci] >= 0) bad("nodes[" + std::to_string(ci) + "] has two parents");
                parent[ci] = int(i);
            }
        }
        for (size_t i = 0; i < ns.size(); ++i) {
            int    at   = int(i);
            size_t hops = 0;
            while (parent[size_t(at)] >= 0) {
                at = parent[size_t(at)];
                if (++hops > ns.size()) bad("the node hierarchy has a cycle through nodes[" + std::to_string(i) + "]");
            }
        }
        for (size_t i = 0; i < ns.size(); ++i) {
            const int j  = joint_of_[i];
            const int pj = parent[i] < 0 ? -1 : joint_of_[size_t(parent[i])];
            if (pj != k_g1_parents[j]) {
                bad(std::string("node ") + k_g1_joint_names[j] + " has parent " + (pj < 0 ? "none" : k_g1_joint_names[pj]) +
                    ", g1skel34 has " + (k_g1_parents[j] < 0 ? "none" : k_g1_joint_names[k_g1_parents[j]]));
            }
        }
        root_node_ = uint64_t(node_of[0]);
        if (doc_.contains("scenes")) {
            const json & sc = array(doc_["scenes"], 16, "scenes");
            const uint64_t s = opt_index(doc_, "scene", 0, std::max<uint64_t>(sc.size(), 1), "glTF");
            if (!sc.empty()) {
                const json & nodes = array(member(object(sc[s], "scenes[]"), "nodes", "scenes[]"), k_n_joints, "scenes[].nodes");
                if (nodes.size() != 1 || index(nodes[0], ns.size(), "scenes[].nodes[0]") != root_node_) bad("the scene's nodes are not [the root node]");
            }
        } else if (doc_.contains("scene")) {
            bad("scene is set without scenes");
        }
    }

    anim_clip animation() {
        const json & anims = array(member(doc_, "animations", "glTF"), 1, "animations");
        if (anims.size() != 1) bad("animations must hold exactly one animation");
        const json & an       = object(anims[0], "animations[0]");
        const json & samplers = array(member(an, "samplers", "animations[0]"), k_max_items, "animations[0].samplers");
        const json & channels = array(member(an, "channels", "animations[0]"), k_max_items, "animations[0].channels");
        if (channels.size() != size_t(k_n_joints) + 1) bad("animations[0] has " + std::to_string(channels.size()) + " channels, a clip has 35 (root translation + 34 rotations)");
        std::vector<int64_t> rot_sampler(k_n_joints, -1);
        int64_t              tr_sampler = -1;
        for (size_t i = 0; i < channels.size(); ++i) {
            const std::string w = "animations[0].channels[" + std::to_string(i) + "]";
            const json &      c = object(channels[i], w);
            const uint64_t    s = index(member(c, "sampler", w), samplers.size(), w + ".sampler");
            const json &      t = object(member(c, "target", w), w + ".target");
            const uint64_t    n = index(member(t, "node", w + ".target"), joint_of_.size(), w + ".target.node");
            const json &      p = member(t, "path", w + ".target");
            const int         j = joint_of_[n];
            if (p == "rotation") {
                if (rot_sampler[size_t(j)] >= 0) bad(std::string("two rotation channels for ") + k_g1_joint_names[j]);
                rot_sampler[size_t(j)] = int64_t(s);
            } else if (p == "translation") {
                if (n != root_node_) bad(w + ": a translation channel on " + k_g1_joint_names[j] + ", only the root's is read");
                if (tr_sampler >= 0) bad("two translation channels for the root");
                tr_sampler = int64_t(s);
            } else {
                bad(w + ".target.path is not rotation or translation");
            }
        }
        if (tr_sampler < 0) bad("no translation channel for the root");

        // samplers: LINEAR, one shared time track
        std::vector<float> times;
        std::set<uint64_t> inputs_seen;
        auto sampler = [&](int64_t si, uint64_t comps, const std::string & role) {
            const std::string w = "animations[0].samplers[" + std::to_string(si) + "]";
            const json &      s = object(samplers[size_t(si)], w);
            if (s.contains("interpolation") && s["interpolation"] != "LINEAR") bad(w + " (" + role + ") is not LINEAR");
            const uint64_t in  = index(member(s, "input", w), acc_.size(), w + ".input");
            const uint64_t out = index(member(s, "output", w), acc_.size(), w + ".output");
            if (inputs_seen.insert(in).second) {
                std::vector<float> t = read(in, 1, role + " times");
                if (times.empty()) {
                    times = std::move(t);
                    check_times(times);
                } else if (t != times) {
                    bad(w + " (" + role + ") has its own time track; a clip shares one");
                }
            }
            if (acc_[in].count != acc_[out].count) bad(w + " (" + role + "): input and output counts differ");
            return read(out, comps, role);
        };
        anim_clip clip;
        clip.root   = sampler(tr_sampler, 3, "root translation");
        clip.frames = int64_t(times.size());
        clip.local_xyzw.resize(size_t(clip.frames) * k_n_joints * 4);
        for (int j = 0; j < k_n_joints; ++j) {
            if (rot_sampler[size_t(j)] < 0) bad(std::string("no rotation channel for ") + k_g1_joint_names[j]);
            const std::vector<float> q = sampler(rot_sampler[size_t(j)], 4, std::string(k_g1_joint_names[j]) + " rotation");
            for (int64_t f = 0; f < clip.frames; ++f) {
                std::memcpy(&clip.local_xyzw[(size_t(f) * k_n_joints + size_t(j)) * 4], &q[size_t(f) * 4], 16);
            }
        }
        clip_check_normalise(clip, what_);
        return clip;
    }

    void check_times(const std::vector<float> & t) const {
        for (size_t i = 0; i < t.size(); ++i) {
            if (!std::isfinite(t[i])) bad("key time " + std::to_string(i) + " is not finite");
            if (i > 0 && !(t[i] > t[i - 1])) bad("key times are not strictly increasing at key " + std::to_string(i));
        }
        for (size_t i = 0; i < t.size(); ++i) {
            if (std::fabs(double(t[i]) - double(t[0]) - double(i) / k_clip_fps) > k_time_tolerance) {
                bad("key " + std::to_string(i) + " at " + std::to_string(t[i]) + " s: a clip is sampled at 30 fps");
            }
        }
    }

    std::string_view        b_;
    std::string             what_;
    std::string_view        json_text_, bin_;
    json                    doc_;
    uint64_t                buffer_len_ = 0;
    std::vector<view_t>     views_;
    std::vector<accessor_t> acc_;
    std::vector<int>        joint_of_;   // node → g1skel34 joint
    uint64_t                root_node_ = 0;
};

} // namespace

anim_clip glb_read(std::string_view bytes, const std::string & what) {
    return glb_parser(bytes, what).parse();
}

} // namespace mb
