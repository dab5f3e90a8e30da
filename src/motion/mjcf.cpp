// MJCF reader: a small, bounded XML tag scanner plus the hinge-tree extraction
// upstream's mujoco_qpos_converter does with ElementTree:
//   - default classes: <default class="c"> nests; a joint attribute missing on the
//     element comes from its class (the joint's class, else the enclosing childclass),
//     then from the enclosing default classes
//   - hinges: every <joint> below the first <worldbody>, document order; the body
//     holding a joint gives pos/quat; the floating base is the top-level body
//   - the hinge parent is the nearest enclosing body that holds a hinge (else the base)
#include "motion/mjcf.h"

#include "format/regular-file.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <unordered_set>

namespace mb {

namespace {

constexpr size_t k_max_file  = 16u << 20;  // bytes
constexpr size_t k_max_depth = 256;        // element nesting

struct xml_attr {
    std::string_view name;
    std::string_view value;
};

struct xml_tag {
    enum kind_t { OPEN, CLOSE, EMPTY } kind;
    std::string_view      name;
    std::vector<xml_attr> attrs;
    size_t                offset;     // byte offset of '<'

    const std::string_view * get(std::string_view key) const {
        for (const xml_attr & a : attrs) {
            if (a.name == key) return &a.value;
        }
        return nullptr;
    }
};

[[noreturn]] void fail(const std::string & origin, size_t offset, const std::string & what) {
    throw error(status::invalid_format, origin + ": byte " + std::to_string(offset) + ": " + what);
}

bool is_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

bool is_name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
           c == '.' || c == ':';
}

// tokenises the document into tags (text, comments, declarations skipped)
class xml_scanner {
public:
    xml_scanner(std::string_view s, const std::string & origin) : s_(s), origin_(origin) {}

    // false at the end of the document
    bool next(xml_tag & tag) {
        for (;;) {
            size_t lt = s_.find('<', pos_);
            if (lt == std::string_view::npos) return false;
            pos_ = lt;
            if (s_.compare(pos_, 4, "<!--") == 0) {
                skip_past("-->");
                continue;
            }
            if (s_.compare(pos_, 9, "<![CDATA[") == 0) {
                skip_past("]]>");
                continue;
            }
            if (s_.compare(pos_, 2, "<?") == 0) {
                skip_past("?>");
                continue;
            }
            if (s_.compare(pos_, 2, "<!") == 0) {
                skip_past(">");
                continue;
            }
            parse_tag(tag);
            return true;
        }
    }

private:
    void skip_past(std::string_view end) {
        size_t e = s_.find(end, pos_);
        if (e == std::string_view::npos) fail(origin_, pos_, "unterminated markup");
        pos_ = e + end.size();
    }

    std::string_view read_name() {
        size_t b = pos_;
        while (pos_ < s_.size() && is_name_char(s_[pos_])) ++pos_;
        if (pos_ == b) fail(origin_, b, "expected a name");
        return s_.substr(b, pos_ - b);
    }

    void skip_space() {
        while (pos_ < s_.size() && is_space(s_[pos_])) ++pos_;
    }

    void parse_tag(xml_tag & tag) {
        tag.offset = pos_;
        tag.attrs.clear();
        seen_.clear();
        ++pos_;  // '<'
        bool closing = pos_ < s_.size() && s_[pos_] == '/';
        if (closing) ++pos_;
        tag.name = read_name();
        for (;;) {
            skip_space();
            if (pos_ >= s_.size()) fail(origin_, tag.offset, "unterminated tag <" + std::string(tag.name) + ">");
            char c = s_[pos_];
            if (c == '>') {
                ++pos_;
                tag.kind = closing ? xml_tag::CLOSE : xml_tag::OPEN;
                return;
            }
            if (c == '/' && !closing) {
                if (pos_ + 1 >= s_.size() || s_[pos_ + 1] != '>') fail(origin_, pos_, "expected '/>'");
                pos_ += 2;
                tag.kind = xml_tag::EMPTY;
                return;
            }
            if (closing) fail(origin_, pos_, "unexpected text in end tag");
            xml_attr a;
            a.name = read_name();
            skip_space();
            if (pos_ >= s_.size() || s_[pos_] != '=') fail(origin_, pos_, "expected '=' after attribute");
            ++pos_;
            skip_space();
            if (pos_ >= s_.size() || (s_[pos_] != '"' && s_[pos_] != '\'')) fail(origin_, pos_, "expected a quote");
            char q = s_[pos_++];
            size_t e = s_.find(q, pos_);
            if (e == std::string_view::npos) fail(origin_, pos_, "unterminated attribute value");
            a.value = s_.substr(pos_, e - pos_);
            pos_ = e + 1;
            // a hash set, not a scan of the attributes so far: 2 MB of attributes in one tag took 59 s
            if (!seen_.insert(a.name).second) fail(origin_, tag.offset, "duplicate attribute '" + std::string(a.name) + "'");
            tag.attrs.push_back(a);
        }
    }

    std::string_view                     s_;
    const std::string &                  origin_;
    size_t                               pos_ = 0;
    std::unordered_set<std::string_view> seen_;   // attribute names of the current tag
};

// whitespace-separated numbers; exactly `n` of them
template <size_t N>
std::array<double, N> parse_numbers(std::string_view v, const std::string & origin, size_t offset,
                                    const std::string & what) {
    std::array<double, N> out{};
    std::string text(v);
    const char * p = text.c_str();
    size_t       n = 0;
    for (;;) {
        while (is_space(*p)) ++p;
        if (*p == '\0') break;
        if (n == N) fail(origin, offset, what + ": more than " + std::to_string(N) + " numbers in \"" + text + "\"");
        char * end = nullptr;
        errno      = 0;
        double d   = std::strtod(p, &end);
        if (end == p || errno == ERANGE || !std::isfinite(d) || (*end != '\0' && !is_space(*end))) {
            fail(origin, offset, what + ": bad number in \"" + text + "\"");
        }
        out[n++] = d;
        p        = end;
    }
    if (n != N) fail(origin, offset, what + ": expected " + std::to_string(N) + " numbers in \"" + text + "\"");
    return out;
}

// a default class: its own joint attributes and its enclosing class
struct default_class {
    std::string                        parent;      // "" at the top
    std::map<std::string, std::string> joint;       // attributes of its direct <joint> child
};

struct open_element {
    std::string_view name;
    int              body = -1;          // index into bodies when this is a <body>
    std::string      cls;                // <default>: its class; <body>: effective childclass
    // what an element inside this one inherits, kept per level so that no tag scans the stack
    bool             in_default = false; // this or an enclosing element is a <default>
    std::string      inner_default;      // innermost enclosing-or-self default class
    int              inner_body = -1;    // innermost enclosing-or-self body
    std::string      inner_childclass;   // that body's effective childclass
};

struct body_info {
    std::string           name;
    int                   parent_body;   // enclosing body (-1 for top level)
    std::array<double, 3> pos{};
    std::array<double, 4> quat{1, 0, 0, 0};
    bool                  has_quat = false;
    int                   hinge    = -1;  // index into hinges when it holds one
    bool                  freejoint = false;
    size_t                offset   = 0;
};

} // namespace

mjcf_model mjcf_parse(std::string_view xml, const std::string & origin) {
    if (xml.size() > k_max_file) fail(origin, 0, "file larger than 16 MiB");

    xml_scanner                          sc(xml, origin);
    xml_tag                              tag;
    std::vector<open_element>            stack;
    std::map<std::string, default_class> classes;
    std::vector<body_info>               bodies;
    struct raw_joint {
        int                                body;
        std::string                        cls;   // class attribute or enclosing childclass
        std::map<std::string, std::string> attrs;
        size_t                             offset;
    };
    std::vector<raw_joint> joints;
    int  worldbody_seen  = 0;       // 1 while inside the first worldbody, 2 after it
    bool saw_root        = false;

    while (sc.next(tag)) {
        if (tag.kind == xml_tag::CLOSE) {
            if (stack.empty() || stack.back().name != tag.name) {
                fail(origin, tag.offset, "mismatched end tag </" + std::string(tag.name) + ">");
            }
            if (tag.name == "worldbody" && worldbody_seen == 1) worldbody_seen = 2;
            stack.pop_back();
            continue;
        }
        if (!saw_root) {
            if (tag.name != "mujoco") fail(origin, tag.offset, "root element must be <mujoco>");
            saw_root = true;
        } else if (stack.empty()) {
            fail(origin, tag.offset, "content after the root element");
        }

        open_element el;
        el.name = tag.name;
        // innermost enclosing default class / body childclass
        const open_element * up                   = stack.empty() ? nullptr : &stack.back();
        const bool           in_default           = up && up->in_default;
        const std::string    enclosing_default    = up ? up->inner_default : std::string();
        const int            enclosing_body       = up ? up->inner_body : -1;
        const std::string    enclosing_childclass = up ? up->inner_childclass : std::string();

        if (tag.name == "default") {
            const std::string_view * c = tag.get("class");
            std::string              name = c ? std::string(*c) : std::string("main");
            if (classes.count(name)) fail(origin, tag.offset, "duplicate default class '" + name + "'");
            classes[name].parent = enclosing_default;
            el.cls               = name;
        } else if (in_default && tag.name == "joint") {
            default_class & dc = classes[enclosing_default];
            if (dc.joint.empty()) {
                for (const xml_attr & a : tag.attrs) dc.joint[std::string(a.name)] = std::string(a.value);
            }
        } else if (tag.name == "worldbody") {
            if (worldbody_seen == 0) worldbody_seen = 1;
        } else if (worldbody_seen == 1 && tag.name == "body") {
            body_info b;
            const std::string_view * n = tag.get("name");
            b.name        = n ? std::string(*n) : "";
            b.parent_body = enclosing_body;
            b.offset      = tag.offset;
            if (const std::string_view * p = tag.get("pos")) b.pos = parse_numbers<3>(*p, origin, tag.offset, "body pos");
            if (const std::string_view * q = tag.get("quat")) {
                b.quat     = parse_numbers<4>(*q, origin, tag.offset, "body quat");
                b.has_quat = true;
            }
            const std::string_view * cc = tag.get("childclass");
            el.cls  = cc ? std::string(*cc) : enclosing_childclass;
            el.body = (int) bodies.size();
            bodies.push_back(b);
        } else if (worldbody_seen == 1 && tag.name == "freejoint") {
            if (enclosing_body < 0) fail(origin, tag.offset, "freejoint outside a body");
            bodies[enclosing_body].freejoint = true;
        } else if (worldbody_seen == 1 && tag.name == "joint" && tag.get("type") && *tag.get("type") == "free") {
            // MuJoCo's other spelling of <freejoint> (gear_sonic_deploy's g1_29dof.xml)
            if (enclosing_body < 0) fail(origin, tag.offset, "free joint outside a body");
            bodies[enclosing_body].freejoint = true;
        } else if (worldbody_seen == 1 && tag.name == "joint") {
            if (enclosing_body < 0) fail(origin, tag.offset, "joint outside a body");
            raw_joint j;
            j.body = enclosing_body;
            const std::string_view * c = tag.get("class");
            j.cls    = c ? std::string(*c) : enclosing_childclass;
            j.offset = tag.offset;
            for (const xml_attr & a : tag.attrs) j.attrs[std::string(a.name)] = std::string(a.value);
            joints.push_back(std::move(j));
        }

        if (tag.kind == xml_tag::OPEN) {
            if (stack.size() >= k_max_depth) fail(origin, tag.offset, "elements nested too deeply");
            const bool is_default  = tag.name == "default";
            const bool is_body     = el.body >= 0;
            el.in_default          = in_default || is_default;
            el.inner_default       = is_default ? el.cls : enclosing_default;
            el.inner_body          = is_body ? el.body : enclosing_body;
            el.inner_childclass    = is_body ? el.cls : enclosing_childclass;
            stack.push_back(std::move(el));
        }
    }
    if (!saw_root) fail(origin, 0, "no <mujoco> element");
    if (!stack.empty()) fail(origin, xml.size(), "unclosed element <" + std::string(stack.back().name) + ">");
    if (worldbody_seen == 0) fail(origin, 0, "no <worldbody>");

    // the floating base: the single top-level body, holding the freejoint
    mjcf_model model;
    int        base = -1;
    for (size_t i = 0; i < bodies.size(); ++i) {
        if (bodies[i].parent_body >= 0) continue;
        if (base >= 0) fail(origin, bodies[i].offset, "more than one top-level body");
        base = (int) i;
    }
    if (base < 0) fail(origin, 0, "no body in the first worldbody");
    if (!bodies[base].freejoint) fail(origin, bodies[base].offset, "the top-level body has no freejoint");
    model.base_body = bodies[base].name;

    // resolves a joint attribute through the class chain
    auto lookup = [&](const raw_joint & j, const std::string & key) -> const std::string * {
        auto it = j.attrs.find(key);
        if (it != j.attrs.end()) return &it->second;
        std::string cls   = j.cls.empty() ? std::string("main") : j.cls;
        size_t      guard = 0;
        while (!cls.empty() && guard++ < k_max_depth) {
            auto c = classes.find(cls);
            if (c == classes.end()) {
                if (cls == "main") return nullptr;
                fail(origin, j.offset, "unknown joint class '" + cls + "'");
            }
            auto a = c->second.joint.find(key);
            if (a != c->second.joint.end()) return &a->second;
            cls = c->second.parent;
        }
        return nullptr;
    };

    for (const raw_joint & j : joints) {
        body_info & b = bodies[j.body];
        if (b.freejoint) fail(origin, j.offset, "the floating base also holds a hinge");
        if (b.hinge >= 0) fail(origin, j.offset, "body '" + b.name + "' holds more than one joint");
        const std::string * type = lookup(j, "type");
        if (type && *type != "hinge") fail(origin, j.offset, "unsupported joint type '" + *type + "'");

        mjcf_hinge h;
        auto       name = j.attrs.find("name");
        if (name == j.attrs.end() || name->second.empty()) fail(origin, j.offset, "joint without a name");
        h.joint    = name->second;
        h.body     = b.name;
        h.pos      = b.pos;
        h.quat     = b.quat;
        h.has_quat = b.has_quat;
        const std::string * axis = lookup(j, "axis");
        if (!axis) fail(origin, j.offset, "joint '" + h.joint + "' has no axis");
        std::array<double, 3> a = parse_numbers<3>(*axis, origin, j.offset, "joint axis");
        h.axis = -1;
        for (int k = 0; k < 3; ++k) {
            if (a[k] == 1.0 && a[(k + 1) % 3] == 0.0 && a[(k + 2) % 3] == 0.0) h.axis = k;
        }
        if (h.axis < 0) fail(origin, j.offset, "joint '" + h.joint + "': axis must be a positive unit x, y or z");
        const std::string * range = lookup(j, "range");
        h.has_range = range != nullptr;
        h.range     = {0, 0};
        if (range) {
            std::array<double, 2> r = parse_numbers<2>(*range, origin, j.offset, "joint range");
            h.range = {r[0], r[1]};
        }
        // the parent: nearest enclosing body holding a hinge; every body in between must be the base
        int p = b.parent_body;
        if (p < 0) fail(origin, j.offset, "hinge on a top-level body");
        if (p != base && bodies[p].hinge < 0) {
            fail(origin, j.offset, "body '" + bodies[p].name + "' between hinges has no joint (unsupported)");
        }
        h.parent = p == base ? 0 : bodies[p].hinge + 1;
        b.hinge  = (int) model.hinges.size();
        model.hinges.push_back(std::move(h));
    }
    if (model.hinges.empty()) fail(origin, 0, "no hinge joints");
    return model;
}

mjcf_model mjcf_load(const std::string & path) {
    return mjcf_parse(read_regular_file(path, k_max_file), path);
}

const mjcf_model & mjcf_g1() {
    // the hinge tree of upstream assets/skeletons/g1/g1.xml, in document order
    static const mjcf_model model = [] {
        struct row {
            const char * joint;
            const char * body;
            int          parent;
            double       px, py, pz;
            bool         has_quat;
            double       qw, qx, qy, qz;
            int          axis;
            double       lo, hi;
        };
        static const row rows[] = {
            {"left_hip_pitch_joint",       "left_hip_pitch_link",       0,  0,         0.064452,   -0.1027,   false, 1, 0, 0, 0, 1, -2.5307, 2.8798},
            {"left_hip_roll_joint",        "left_hip_roll_link",        1,  0,         0.052,      -0.030465, true, 0.996179, 0, -0.0873386, 0, 0, -0.5236, 2.9671},
            {"left_hip_yaw_joint",         "left_hip_yaw_link",         2,  0.025001,  0,          -0.12412,  false, 1, 0, 0, 0, 2, -2.7576, 2.7576},
            {"left_knee_joint",            "left_knee_link",            3,  -0.078273, 0.0021489,  -0.17734,  true, 0.996179, 0, 0.0873386, 0, 1, -0.087267, 2.8798},
            {"left_ankle_pitch_joint",     "left_ankle_pitch_link",     4,  0,         -9.4445e-05, -0.30001, false, 1, 0, 0, 0, 1, -0.87267, 0.5236},
            {"left_ankle_roll_joint",      "left_ankle_roll_link",      5,  0,         0,          -0.017558, false, 1, 0, 0, 0, 0, -0.2618, 0.2618},
            {"right_hip_pitch_joint",      "right_hip_pitch_link",      0,  0,         -0.064452,  -0.1027,   false, 1, 0, 0, 0, 1, -2.5307, 2.8798},
            {"right_hip_roll_joint",       "right_hip_roll_link",       7,  0,         -0.052,     -0.030465, true, 0.996179, 0, -0.0873386, 0, 0, -2.9671, 0.5236},
            {"right_hip_yaw_joint",        "right_hip_yaw_link",        8,  0.025001,  0,          -0.12412,  false, 1, 0, 0, 0, 2, -2.7576, 2.7576},
            {"right_knee_joint",           "right_knee_link",           9,  -0.078273, -0.0021489, -0.17734,  true, 0.996179, 0, 0.0873386, 0, 1, -0.087267, 2.8798},
            {"right_ankle_pitch_joint",    "right_ankle_pitch_link",    10, 0,         9.4445e-05, -0.30001,  false, 1, 0, 0, 0, 1, -0.87267, 0.5236},
            {"right_ankle_roll_joint",     "right_ankle_roll_link",     11, 0,         0,          -0.017558, false, 1, 0, 0, 0, 0, -0.2618, 0.2618},
            {"waist_yaw_joint",            "waist_yaw_link",            0,  0,         0,          0,         false, 1, 0, 0, 0, 2, -2.618, 2.618},
            {"waist_roll_joint",           "waist_roll_link",           13, -0.0039635, 0,         0.044,     false, 1, 0, 0, 0, 0, -0.52, 0.52},
            {"waist_pitch_joint",          "torso_link",                14, 0,         0,          0,         false, 1, 0, 0, 0, 1, -0.52, 0.52},
            {"left_shoulder_pitch_joint",  "left_shoulder_pitch_link",  15, 0.0039563, 0.10022,    0.24778,   true, 0.990264, 0.139201, 1.38722e-05, -9.86868e-05, 1, -3.0892, 2.6704},
            {"left_shoulder_roll_joint",   "left_shoulder_roll_link",   16, 0,         0.038,      -0.013831, true, 0.990268, -0.139172, 0, 0, 0, -1.5882, 2.2515},
            {"left_shoulder_yaw_joint",    "left_shoulder_yaw_link",    17, 0,         0.00624,    -0.1032,   false, 1, 0, 0, 0, 2, -2.618, 2.618},
            {"left_elbow_joint",           "left_elbow_link",           18, 0.015783,  0,          -0.080518, false, 1, 0, 0, 0, 1, -1.0472, 2.0944},
            {"left_wrist_roll_joint",      "left_wrist_roll_link",      19, 0.1,       0.00188791, -0.01,     false, 1, 0, 0, 0, 0, -1.97222, 1.97222},
            {"left_wrist_pitch_joint",     "left_wrist_pitch_link",     20, 0.038,     0,          0,         false, 1, 0, 0, 0, 1, -1.61443, 1.61443},
            {"left_wrist_yaw_joint",       "left_wrist_yaw_link",       21, 0.046,     0,          0,         false, 1, 0, 0, 0, 2, -1.61443, 1.61443},
            {"right_shoulder_pitch_joint", "right_shoulder_pitch_link", 15, 0.0039563, -0.10021,   0.24778,   true, 0.990264, -0.139201, 1.38722e-05, 9.86868e-05, 1, -3.0892, 2.6704},
            {"right_shoulder_roll_joint",  "right_shoulder_roll_link",  23, 0,         -0.038,     -0.013831, true, 0.990268, 0.139172, 0, 0, 0, -2.2515, 1.5882},
            {"right_shoulder_yaw_joint",   "right_shoulder_yaw_link",   24, 0,         -0.00624,   -0.1032,   false, 1, 0, 0, 0, 2, -2.618, 2.618},
            {"right_elbow_joint",          "right_elbow_link",          25, 0.015783,  0,          -0.080518, false, 1, 0, 0, 0, 1, -1.0472, 2.0944},
            {"right_wrist_roll_joint",     "right_wrist_roll_link",     26, 0.1,       -0.00188791, -0.01,    false, 1, 0, 0, 0, 0, -1.97222, 1.97222},
            {"right_wrist_pitch_joint",    "right_wrist_pitch_link",    27, 0.038,     0,          0,         false, 1, 0, 0, 0, 1, -1.61443, 1.61443},
            {"right_wrist_yaw_joint",      "right_wrist_yaw_link",      28, 0.046,     0,          0,         false, 1, 0, 0, 0, 2, -1.61443, 1.61443},
        };
        mjcf_model m;
        m.base_body = "pelvis";
        for (const row & r : rows) {
            mjcf_hinge h;
            h.joint     = r.joint;
            h.body      = r.body;
            h.parent    = r.parent;
            h.pos       = {r.px, r.py, r.pz};
            h.quat      = {r.qw, r.qx, r.qy, r.qz};
            h.has_quat  = r.has_quat;
            h.axis      = r.axis;
            h.range     = {r.lo, r.hi};
            h.has_range = true;
            m.hinges.push_back(h);
        }
        return m;
    }();
    return model;
}

} // namespace mb
