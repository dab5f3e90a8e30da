// the BVH reader (bvh.h). Rules, in the order they are checked:
//   text     ≤ 64 MiB; tokens separated by whitespace; "HIERARCHY" first
//   joints   "ROOT"/"JOINT" name "{" "OFFSET" x y z "CHANNELS" n names... children "}"; at most
//            34 joints and 64 levels; each g1skel34 name once, under g1skel34's parent; "End
//            Site" { OFFSET x y z } anywhere, no channels
//   channels the root: 6, each of X/Y/Z position and rotation once; every other joint: 3, each
//            of X/Y/Z rotation once; any order (R = the product in the listed order)
//   offsets  finite; = the neutral offsets × one unit u (from the knee→ankle bone, 1e-3 ≤ u ≤
//            1e3) within 1 mm·u; the root's offset is added to its position
//   motion   "MOTION" "Frames:" F (1..18,000) "Frame Time:" 1/30 ± 1e-4 s, then exactly F × 105
//            finite numbers and nothing else
#include "export/bvh.h"

#include "format/error.h"
#include "motion/g1.h"
#include "motion/rotation.h"

#include <charconv>
#include <cmath>
#include <cstring>
#include <numbers>

namespace mb {

namespace {

constexpr int    k_max_depth     = 64;
constexpr int    k_channels      = 6 + (k_n_joints - 1) * 3;   // 105 numbers a frame
constexpr double k_rest_tolerance = 1.0e-3;                   // m (times the unit)

struct bvh_joint {
    int    g1 = -1;          // g1skel34 index
    double offset[3] = {};   // file units
    int    pos_at[3] = {-1, -1, -1};   // position channel slot of X, Y, Z (root only)
    int    rot_axis[3] = {};           // axes of the 3 rotation channels, listed order
    int    rot_at = 0;                 // slot of the first channel of this joint in a frame
    int    rot_slot[3] = {};           // slot of each rotation channel
};

class bvh_parser {
public:
    bvh_parser(std::string_view t, const std::string & what) : t_(t), what_(what) {}

    anim_clip parse() {
        if (t_.size() > k_bvh_max_bytes) bad(std::to_string(t_.size()) + " bytes, a BVH holds at most 64 MiB");
        expect("HIERARCHY");
        expect("ROOT");
        joint(-1, 0);
        if (int(joints_.size()) != k_n_joints) bad("the hierarchy has " + std::to_string(joints_.size()) + " joints, g1skel34 has 34");
        const double unit = check_offsets();
        expect("MOTION");
        expect("Frames:");
        const double frames = number("the frame count");
        if (frames != std::floor(frames) || frames < 1 || frames > double(k_clip_max_frames)) bad("Frames: must be an integer 1..18000");
        expect("Frame");
        expect("Time:");
        const double ft = number("the frame time");
        if (std::fabs(ft - 1.0 / k_clip_fps) > 1e-4) bad("Frame Time " + std::to_string(ft) + " s: a clip is sampled at 30 fps");

        anim_clip clip;
        clip.frames = int64_t(frames);
        clip.root.resize(size_t(clip.frames) * 3);
        clip.local_xyzw.resize(size_t(clip.frames) * k_n_joints * 4);
        double v[k_channels];
        for (int64_t f = 0; f < clip.frames; ++f) {
            for (double & x : v) x = number("frame " + std::to_string(f));
            for (const bvh_joint & j : joints_) {
                double m[9];
                mat_identity(m);
                for (int k = 0; k < 3; ++k) {
                    double r[9];
                    axis_rotation(j.rot_axis[k], v[j.rot_slot[k]] * std::numbers::pi / 180.0, r);
                    mat_mul(m, r, m);
                }
                double q[4];
                matrix_to_quat_wxyz(m, q);
                float * o = &clip.local_xyzw[(size_t(f) * k_n_joints + size_t(j.g1)) * 4];
                o[0]      = float(q[1]);
                o[1]      = float(q[2]);
                o[2]      = float(q[3]);
                o[3]      = float(q[0]);
                if (j.g1 == 0) {
                    for (int k = 0; k < 3; ++k) clip.root[size_t(f) * 3 + size_t(k)] = float((v[j.pos_at[k]] + j.offset[k]) / unit);
                }
            }
        }
        skip_space();
        if (at_ != t_.size()) bad("text after the last frame (line " + std::to_string(line_) + ")");
        clip_check_normalise(clip, what_);
        return clip;
    }

private:
    [[noreturn]] void bad(const std::string & m) const { fail(status::invalid_format, what_ + ": " + m); }

    static void axis_rotation(int axis, double a, double * m) {
        const double c = std::cos(a), s = std::sin(a);
        if (axis == 0) {
            const double r[9] = {1, 0, 0, 0, c, -s, 0, s, c};
            std::memcpy(m, r, sizeof r);
        } else if (axis == 1) {
            rot_y(a, m);
        } else {
            const double r[9] = {c, -s, 0, s, c, 0, 0, 0, 1};
            std::memcpy(m, r, sizeof r);
        }
    }

    void skip_space() {
        while (at_ < t_.size() && (t_[at_] == ' ' || t_[at_] == '\t' || t_[at_] == '\r' || t_[at_] == '\n')) {
            if (t_[at_] == '\n') ++line_;
            ++at_;
        }
    }
    std::string_view token() {
        skip_space();
        const size_t b = at_;
        while (at_ < t_.size() && !(t_[at_] == ' ' || t_[at_] == '\t' || t_[at_] == '\r' || t_[at_] == '\n')) ++at_;
        return t_.substr(b, at_ - b);
    }
    std::string here() const { return " (line " + std::to_string(line_) + ")"; }
    void expect(const char * word) {
        const std::string_view w = token();
        if (w != word) bad(std::string("expected \"") + word + "\", found \"" + std::string(w.substr(0, 32)) + "\"" + here());
    }
    double number(const std::string & what) {
        const std::string_view w = token();
        double                 x = 0;
        const char *           b = w.data();
        const char *           e = w.data() + w.size();
        if (!w.empty() && *b == '+') ++b;
        const auto r = std::from_chars(b, e, x);
        if (w.empty() || r.ec != std::errc() || r.ptr != e) bad(what + ": \"" + std::string(w.substr(0, 32)) + "\" is not a number" + here());
        if (!std::isfinite(x)) bad(what + ": a value is not finite" + here());
        return x;
    }

    // one ROOT/JOINT (its keyword already read) and its subtree
    void joint(int parent_g1, int depth) {
        if (depth >= k_max_depth) bad("the hierarchy is nested deeper than 64 levels" + here());
        if (joints_.size() >= size_t(k_n_joints)) bad("the hierarchy has more than 34 joints" + here());
        const std::string name(token());
        bvh_joint         j;
        for (int k = 0; k < k_n_joints; ++k) {
            if (name == k_g1_joint_names[k]) j.g1 = k;
        }
        if (j.g1 < 0) bad("joint \"" + name.substr(0, 64) + "\" is not a g1skel34 joint" + here());
        if (seen_[j.g1]) bad("joint \"" + name + "\" appears twice" + here());
        seen_[j.g1] = true;
        if (k_g1_parents[j.g1] != parent_g1) bad("joint \"" + name + "\" is not under its g1skel34 parent" + here());
        expect("{");
        expect("OFFSET");
        for (double & o : j.offset) o = number("OFFSET of " + name);
        expect("CHANNELS");
        const double n    = number("CHANNELS of " + name);
        const int    want = j.g1 == 0 ? 6 : 3;
        if (n != want) bad("joint \"" + name + "\" has " + std::to_string(n) + " channels, " + std::to_string(want) + " expected" + here());
        int rot = 0;
        bool rot_seen[3] = {}, pos_seen[3] = {};
        for (int c = 0; c < want; ++c) {
            const std::string_view ch = token();
            const int              slot = slots_ + c;
            const int              axis = ch.size() == 9 ? ch[0] - 'X' : -1;
            if (ch.size() == 9 && ch.substr(1) == "rotation" && axis >= 0 && axis < 3 && !rot_seen[axis]) {
                rot_seen[axis]   = true;
                j.rot_axis[rot]  = axis;
                j.rot_slot[rot++] = slot;
            } else if (j.g1 == 0 && ch.size() == 9 && ch.substr(1) == "position" && axis >= 0 && axis < 3 && !pos_seen[axis]) {
                pos_seen[axis] = true;
                j.pos_at[axis] = slot;
            } else {
                bad("joint \"" + name + "\": channel \"" + std::string(ch.substr(0, 32)) + "\" is unknown, repeated or not allowed here" + here());
            }
        }
        slots_ += want;
        joints_.push_back(j);
        bool end_site = false;
        for (;;) {
            const std::string_view w = token();
            if (w == "}") return;
            if (w == "JOINT") {
                joint(j.g1, depth + 1);
            } else if (w == "End" && !end_site) {
                expect("Site");
                expect("{");
                expect("OFFSET");
                for (int k = 0; k < 3; ++k) number("End Site OFFSET of " + name);
                expect("}");
                end_site = true;
            } else {
                bad("joint \"" + name + "\": expected JOINT, End Site or }, found \"" + std::string(w.substr(0, 32)) + "\"" + here());
            }
        }
    }

    // the unit (file length per metre) from the left knee→ankle bone; every offset must agree
    double check_offsets() const {
        const bvh_joint * by[k_n_joints] = {};
        for (const bvh_joint & j : joints_) by[j.g1] = &j;
        double ref[3];
        joint_offset(5, ref);
        const double * o    = by[5]->offset;
        const double   unit = std::sqrt(o[0] * o[0] + o[1] * o[1] + o[2] * o[2]) /
                              std::sqrt(ref[0] * ref[0] + ref[1] * ref[1] + ref[2] * ref[2]);
        if (!(unit >= 1e-3 && unit <= 1e3)) bad("the skeleton's unit (" + std::to_string(unit) + " per metre) is outside 1e-3..1e3");
        for (int g = 1; g < k_n_joints; ++g) {
            double off[3];
            joint_offset(g, off);
            for (int k = 0; k < 3; ++k) {
                if (std::fabs(by[g]->offset[k] - off[k] * unit) > k_rest_tolerance * unit) {
                    bad(std::string("OFFSET of ") + k_g1_joint_names[g] + " differs from the g1skel34 offset by more than 1 mm (no retargeting)");
                }
            }
        }
        for (int k = 0; k < 3; ++k) {
            if (std::fabs(by[0]->offset[k]) > k_clip_max_coord * unit) bad("the root OFFSET is beyond 1e4 m");
        }
        return unit;
    }

    std::string_view       t_;
    std::string            what_;
    size_t                 at_ = 0, line_ = 1;
    std::vector<bvh_joint> joints_;
    bool                   seen_[k_n_joints] = {};
    int                    slots_ = 0;
};

} // namespace

anim_clip bvh_read(std::string_view text, const std::string & what) {
    return bvh_parser(text, what).parse();
}

} // namespace mb
