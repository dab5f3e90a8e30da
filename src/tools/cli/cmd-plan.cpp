// motionbricks plan: the agent driven by a control script the way upstream's demo loop
// drives it (one displayed frame per step, replanning when the agent says so), through the
// C ABI (motionbricks.hpp), written as motionbricks-motion-v1 JSON or as a qpos CSV. Exit
// codes: 0 ok, 1 runtime failure (missing or unreadable bundle, compute, I/O), 2 bad usage, bad
// script, unknown style, bad style file, a style or command the plan cannot use, or a bundle that
// is malformed or whose components do not fit together.
//
// Script: a JSON array of segments
//   {"frames": N, "style": NAME, "movement": [x, z], "facing": [x, z], "speed": V, "seed": S,
//    "target": [x, z], "target_heading": H}
// frames 1..100000 (required), style a loaded style's name (required); the rest optional.
// Directions are on the motion-space ground plane (Y up: x left, z forward); only their direction
// counts (the agent normalises movement); movement defaults to none (turn in place), facing to
// the current facing, speed to the style's (negative = the style's), seed to the plan counter (it
// picks the target clip frame); a target (world position, heading about +Y in rad, default 0)
// replaces the spring's goal. A style named "idle" plays the idle role and seeds the history
// (else the first style); styles named walk_left and walk_right are the side steps of walk and
// slow_walk.
//
// The output is streamed: each array goes to its own temporary file as frames are shown, and
// the document is put together at the end, so memory does not grow with the frame count.
#include "format/regular-file.h"
#include "tools/cli/commands.h"
#include "tools/cli/load-model.h"
#include "tools/cli/motion-output.h"
#include "tools/cli/plan-script.h"

#include <motionbricks/motionbricks.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <unistd.h>
#include <vector>

namespace mb::cli {

namespace {

namespace mbx = motionbricks;
using json    = nlohmann::json;

constexpr const char * k_motion_format = "motionbricks-motion-v1";
constexpr int          k_joints        = int(MB_G1_JOINT_COUNT);
constexpr int          k_qpos          = int(MB_G1_QPOS_SIZE);
constexpr int          k_targets       = 4;

// an anonymous temporary file receiving one array's elements, comma-separated
class section {
public:
    section() : f_(std::tmpfile()) {
        if (!f_) throw std::runtime_error(std::string("cannot create a temporary file: ") + std::strerror(errno));
    }
    void put(const std::string & element) {
        if (n_++ > 0) write(",");
        write(element);
    }
    // appends '[' elements ']' to `out`
    void copy_to(std::FILE * out) {
        std::fputc('[', out);
        std::rewind(f_.get());
        char   buf[1 << 16];
        size_t got = 0;
        while ((got = std::fread(buf, 1, sizeof buf, f_.get())) > 0) {
            if (std::fwrite(buf, 1, got, out) != got) throw std::runtime_error("cannot copy a temporary file");
        }
        if (std::ferror(f_.get())) throw std::runtime_error("cannot read a temporary file");
        std::fputc(']', out);
    }

private:
    struct closer {
        void operator()(std::FILE * f) const { std::fclose(f); }
    };
    void write(const std::string & s) {
        if (std::fwrite(s.data(), 1, s.size(), f_.get()) != s.size()) {
            throw std::runtime_error(std::string("cannot write a temporary file: ") + std::strerror(errno));
        }
    }
    std::unique_ptr<std::FILE, closer> f_;
    uint64_t                           n_ = 0;
};

// `path` through PATH.tmp.PID and a rename; remove() unless commit() ran
class atomic_output {
public:
    explicit atomic_output(std::string path) : path_(std::move(path)), tmp_(path_ + ".tmp." + std::to_string(::getpid())) {
        f_ = std::fopen(tmp_.c_str(), "wb");
        if (!f_) throw std::runtime_error("cannot create '" + tmp_ + "': " + std::strerror(errno));
    }
    ~atomic_output() {
        if (f_) std::fclose(f_);
        if (!done_) std::remove(tmp_.c_str());
    }
    std::FILE * file() { return f_; }
    void commit() {
        bool ok = std::ferror(f_) == 0;
        ok      = std::fflush(f_) == 0 && ok;
        ok      = ::fsync(::fileno(f_)) == 0 && ok;
        ok      = std::fclose(f_) == 0 && ok;
        f_      = nullptr;
        if (!ok || std::rename(tmp_.c_str(), path_.c_str()) != 0) {
            throw std::runtime_error("cannot write '" + path_ + "': " + std::strerror(errno));
        }
        done_ = true;
    }

private:
    std::string path_, tmp_;
    std::FILE * f_    = nullptr;
    bool        done_ = false;
};

// the frames shown, streamed: JSON arrays per field, or CSV rows of qpos; or gathered (out is
// null) for a file written whole: qpos rows for a robot .csv/.npz, the clip for BVH/GLB
class shown_frames {
public:
    shown_frames(motion_format f, std::FILE * out) : csv_(f == motion_format::csv), out_(out) {
        if (!out_ && f == motion_format::qpos) {
            keep_ = std::make_unique<std::vector<float>>();
        } else if (!out_) {
            clip_ = std::make_unique<clip_frames>();
        } else if (!csv_) {
            root_ = std::make_unique<section>();
            local_ = std::make_unique<section>();
            joints_ = std::make_unique<section>();
            qpos_ = std::make_unique<section>();
            plans_ = std::make_unique<section>();
        }
    }
    int64_t count() const { return frames_; }

    // frame `f` of `m` (a plan or the agent's history)
    void add(const mbx::motion & m, uint64_t f) {
        const float * q = m.mujoco_qpos().data + f * k_qpos;
        ++frames_;
        if (keep_) {
            keep_->insert(keep_->end(), q, q + k_qpos);
            return;
        }
        if (clip_) {
            clip_->add(m, f);
            return;
        }
        if (csv_) {
            char buf[32];
            for (int c = 0; c < k_qpos; ++c) {
                std::snprintf(buf, sizeof(buf), c ? ",%.7g" : "%.7g", double(q[c]));
                csv_text_ += buf;
            }
            csv_text_ += '\n';
            if (csv_text_.size() > (size_t(1) << 16)) flush_csv();
            return;
        }
        root_->put(rows(m.root_translations().data + f * 3, 1, 3)[0].dump());
        local_->put(rows(m.local_rotations_xyzw().data + f * k_joints * 4, k_joints, 4).dump());
        joints_->put(rows(m.joint_positions().data + f * k_joints * 3, k_joints, 3).dump());
        qpos_->put(rows(q, 1, k_qpos)[0].dump());
    }
    void add_plan(const mbx::motion & plan) {
        if (csv_ || clip_ || keep_) return;
        json targets = json::array();
        for (int f = 0; f < k_targets; ++f) targets.push_back(rows(plan.target_joint_positions().data + size_t(f) * k_joints * 3, k_joints, 3));
        const json p = {{"first_frame", frames_}, {"frames", plan.frame_count()}, {"style", plan.style_name()},
                        {"targets", {{"joint_positions", targets}}}};
        plans_->put(p.dump());
    }
    // the document with nlohmann's key order (sorted) and compact layout, as a DOM dump would give;
    // CSV rows went out as they came
    void finish(const mbx::model & model) {
        std::FILE * out = out_;
        if (clip_ || keep_) return;
        if (csv_) {
            flush_csv();
            return;
        }
        json names = json::array(), parents = json::array();
        for (uint32_t j = 0; j < uint32_t(k_joints); ++j) {
            names.push_back(model.joint_name(j));
            parents.push_back(model.joint_parent(j));
        }
        auto text = [&](const std::string & s) { std::fputs(s.c_str(), out); };
        text("{\"format\":" + json(k_motion_format).dump() + ",\"fps\":30,\"frames\":" + std::to_string(frames_) +
             ",\"joint_names\":" + names.dump() + ",\"joint_positions\":");
        joints_->copy_to(out);
        text(",\"local_rotations_xyzw\":");
        local_->copy_to(out);
        text(",\"parents\":" + parents.dump() + ",\"plans\":");
        plans_->copy_to(out);
        text(",\"qpos\":");
        qpos_->copy_to(out);
        text(",\"root_translations\":");
        root_->copy_to(out);
        text("}\n");
    }

private:
    void flush_csv() {
        if (std::fwrite(csv_text_.data(), 1, csv_text_.size(), out_) != csv_text_.size()) {
            throw std::runtime_error(std::string("cannot write the output: ") + std::strerror(errno));
        }
        csv_text_.clear();
    }

    bool                     csv_;
    std::FILE *              out_;
    int64_t                  frames_ = 0;
    std::string              csv_text_;
    std::unique_ptr<section> root_, local_, joints_, qpos_, plans_;
    std::unique_ptr<clip_frames> clip_;
    std::unique_ptr<std::vector<float>> keep_;

public:
    const clip_frames *        clip() const { return clip_.get(); }
    const std::vector<float> * qpos() const { return keep_.get(); }
};

int usage() {
    std::fprintf(stderr, "usage: motionbricks plan --model DIR --style FILE.mbstyle [--style FILE ...] --script SCRIPT.json "
                         "--output MOTION.json|.csv|.npz|.bvh|.glb [--format json|csv|bvh|glb] [--units m|cm] %s %s\n"
                         "  (the format: --format, else the output's extension: .csv/.npz a robot qpos file, --format csv\n"
                         "  plan's bare qpos rows; --units: BVH lengths, default m)\n",
                 tools::k_model_options_usage, qpos_options_usage());
    return 2;
}

int find_style(const std::vector<mbx::style> & styles, const std::string & name) {
    for (size_t i = 0; i < styles.size(); ++i) {
        if (styles[i].name() == name) return int(i);
    }
    return -1;
}

// the command of one step of segment `seg`
mbx::command step_command(const plan_segment & seg, const mbx::style & style, uint64_t seed,
                          const std::array<float, 3> & current_facing) {
    mbx::command c;
    c.set_style(style);
    c.set_target_speed(seg.speed);
    c.set_seed(seed);
    c.set_sampling_argmax(true);
    if (seg.has_move) c.set_movement_direction(seg.movement[0], 0, seg.movement[1]);
    if (seg.has_facing) {
        c.set_facing_direction(seg.facing[0], 0, seg.facing[1]);
    } else {
        c.set_facing_direction(current_facing[0], current_facing[1], current_facing[2]);   // keep the current facing
    }
    if (seg.has_target) c.set_world_target(seg.target[0], 0, seg.target[1], seg.target_heading, true);
    return c;
}

} // namespace

int cmd_plan(int argc, char ** argv) {
    std::string              model_dir, script_path, output_path, format_flag;
    float                    units = 1.0f;
    qpos_output              qout;
    std::vector<std::string> style_paths;
    tools::model_options     mopt;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (i + 1 >= argc) {
            std::fprintf(stderr, "motionbricks plan: '%s' needs a value\n", a.c_str());
            return usage();
        }
        const std::string v = argv[++i];
        if (const int r = tools::parse_model_option("plan", a, v, mopt); r != 0) {
            if (r < 0) return 2;
        } else if (a == "--model") {
            model_dir = v;
        } else if (a == "--style") {
            style_paths.push_back(v);
        } else if (a == "--script") {
            script_path = v;
        } else if (a == "--output") {
            output_path = v;
        } else if (a == "--format") {
            format_flag = v;
        } else if (a == "--units") {
            try {
                units = parse_units(v);
            } catch (const std::invalid_argument & e) {
                std::fprintf(stderr, "motionbricks plan: %s\n", e.what());
                return 2;
            }
        } else if (const int r = parse_qpos_option("plan", a, v, qout); r != 0) {
            if (r < 0) return 2;
        } else {
            std::fprintf(stderr, "motionbricks plan: unknown option '%s'\n", a.c_str());
            return usage();
        }
    }
    if (model_dir.empty() || style_paths.empty() || script_path.empty() || output_path.empty()) return usage();
    motion_format format = motion_format::json;
    try {
        format = pick_motion_format(output_path, format_flag);
    } catch (const std::invalid_argument & e) {
        std::fprintf(stderr, "motionbricks plan: %s\n", e.what());
        return 2;
    }
    const bool anim    = format == motion_format::bvh || format == motion_format::glb;
    const bool to_file = anim || format == motion_format::qpos;   // written whole at the end

    std::string script_text;
    try {
        script_text = read_regular_file(script_path, k_script_bounds.max_bytes);
    } catch (const std::exception & e) {
        std::fprintf(stderr, "motionbricks plan: bad script: %s\n", e.what());
        return 2;
    }
    int                        load_exit = 0;
    std::optional<mbx::model>  model     = load_model("plan", model_dir, mopt, load_exit);
    if (!model) return load_exit;

    // styles (a bad or missing style file is bad input), then the script against their names
    std::vector<mbx::style> styles;
    std::set<std::string>   names;
    for (const std::string & p : style_paths) {
        try {
            styles.push_back(mbx::style::load(*model, p));
        } catch (const mbx::error & e) {
            std::fprintf(stderr, "motionbricks plan: bad style: %s\n", e.what());
            return 2;
        }
        if (!names.insert(styles.back().name()).second) {
            std::fprintf(stderr, "motionbricks plan: two styles are named '%s'\n", styles.back().name().c_str());
            return 2;
        }
    }
    std::vector<plan_segment> script;
    try {
        script = parse_plan_script(script_text, [&](const std::string & n) { return find_style(styles, n); });
    } catch (const std::exception & e) {
        std::fprintf(stderr, "motionbricks plan: bad script: %s\n", e.what());
        return 2;
    }
    int64_t total = 0;
    for (const plan_segment & seg : script) total += seg.frames;
    if (anim && uint64_t(total) > MB_MOTION_FILE_MAX_FRAMES) {
        std::fprintf(stderr, "motionbricks plan: bad script: %lld frames, a BVH or GLB file holds at most 18000 (10 min)\n",
                     (long long) total);
        return 2;
    }

    // upstream's loop: show the frame at the cursor, advance, replan when due
    std::vector<double> plan_ms;
    int64_t             frames = 0;
    try {
        mbx::agent ag(*model);
        const int  idle = find_style(styles, "idle");
        ag.reset(styles[size_t(idle >= 0 ? idle : 0)]);
        const int left = find_style(styles, "walk_left"), right = find_style(styles, "walk_right");
        if (left >= 0 && right >= 0) ag.set_sidestep_styles(styles[size_t(left)], styles[size_t(right)]);

        std::optional<atomic_output> out;
        if (!to_file) out.emplace(output_path);
        shown_frames  shown(format, out ? out->file() : nullptr);
        mbx::motion   playing      = ag.history();   // what the cursor moves through
        uint64_t      plan_counter = 0;
        for (size_t si = 0; si < script.size(); ++si) {
            const plan_segment & seg = script[si];
            for (int i = 0; i < seg.frames; ++i) {
                shown.add(playing, ag.cursor());
                const std::array<float, 3> facing = ag.facing_direction();
                ag.advance(1);
                const uint64_t     seed = seg.seed ? *seg.seed + plan_counter : plan_counter;
                const mbx::command cmd  = step_command(seg, styles[size_t(seg.style)], seed, facing);
                if (!ag.replan_due(cmd)) continue;
                const auto t0 = std::chrono::steady_clock::now();
                try {
                    playing = ag.plan(cmd);
                } catch (const mbx::error & e) {
                    if (e.status() != MB_INVALID_ARGUMENT) throw;
                    // a command or style the agent cannot use: the message names which
                    std::fprintf(stderr, "motionbricks plan: segment %zu, plan %llu at frame %lld: %s\n", si,
                                 (unsigned long long) plan_counter, (long long) shown.count(), e.what());
                    return 2;
                }
                plan_ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
                ++plan_counter;
                shown.add_plan(playing);
            }
        }
        frames = shown.count();
        shown.finish(*model);
        if (out) {
            out->commit();
        } else if (shown.qpos()) {
            write_qpos_output(output_path, shown.qpos()->data(), uint64_t(frames), qout);
        } else {
            write_motion_file(shown.clip()->motion(), output_path, format, units);
        }
    } catch (const mbx::error & e) {
        const bool bad = e.status() == MB_INVALID_ARGUMENT;   // a command the library refuses
        std::fprintf(stderr, "motionbricks plan: %s: %s\n", bad ? "bad script" : "planning failed", e.what());
        return bad ? 2 : 1;
    } catch (const std::exception & e) {
        std::fprintf(stderr, "motionbricks plan: %s\n", e.what());
        return 1;
    }
    std::vector<double> sorted = plan_ms;
    std::sort(sorted.begin(), sorted.end());
    std::fprintf(stderr, "motionbricks plan: %lld frames, %zu plans, median %.1f ms per plan\n", (long long) frames,
                 plan_ms.size(), sorted.empty() ? 0.0 : sorted[sorted.size() / 2]);
    return 0;
}

} // namespace mb::cli
