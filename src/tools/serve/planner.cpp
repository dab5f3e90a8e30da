// the planning worker: the agent of the C ABI (motionbricks.hpp) on its own thread
#include "tools/serve/planner.h"

#include <motionbricks/motionbricks.hpp>

#include <chrono>
#include <cmath>
#include <optional>
#include <set>
#include <stdexcept>

namespace mb::serve {

namespace mbx = motionbricks;

struct planner::impl {
    std::optional<mbx::model> model;
    std::vector<mbx::style>   styles;
    std::optional<mbx::agent> ag;
};

namespace {

// the frames of a motion (its qpos, roots and local rotations) as timeline frames
std::vector<timeline_frame> to_frames(const mbx::motion & m) {
    const uint64_t              n = m.frame_count();
    const mbx::float_view       q = m.mujoco_qpos(), r = m.root_translations(), l = m.local_rotations_xyzw();
    std::vector<timeline_frame> out(static_cast<size_t>(n));
    for (uint64_t f = 0; f < n; ++f) {
        timeline_frame & t = out[size_t(f)];
        for (int c = 0; c < k_qpos_values; ++c) t.qpos[c] = q[f * k_qpos_values + uint64_t(c)];
        for (int c = 0; c < 3; ++c) t.root[c] = r[f * 3 + uint64_t(c)];
        for (int c = 0; c < k_joints * 4; ++c) t.rotations[c] = l[f * k_joints * 4 + uint64_t(c)];
    }
    return out;
}

} // namespace

planner::planner(const std::string & model_dir, const std::vector<std::string> & style_paths,
                 const tools::model_options & mopt)
    : p_(std::make_unique<impl>()) {
    const mbx::runtime_options options = tools::to_runtime_options(mopt);
    p_->model = mbx::model::load(model_dir, &options);
    std::set<std::string> names;
    for (const std::string & path : style_paths) {
        p_->styles.push_back(mbx::style::load(*p_->model, path));
        const std::string name = p_->styles.back().name();
        if (!names.insert(name).second) throw std::runtime_error("two styles are named '" + name + "'");
        styles_.push_back({name, p_->styles.back().speed()});
    }
    if (p_->styles.empty()) throw std::runtime_error("no styles");
    for (uint32_t j = 0; j < p_->model->joint_count(); ++j) {
        joint_info ji{p_->model->joint_name(j), p_->model->joint_parent(j), {}};
        const std::array<float, 3> pos = p_->model->neutral_joint_position(j);
        for (int c = 0; c < 3; ++c) ji.position[c] = pos[size_t(c)];
        skeleton_.push_back(ji);
    }
    // the history upstream's reset builds: the idle clip (else the first style's), padded
    p_->ag.emplace(*p_->model);
    const int idle = find_style("idle");
    p_->ag->reset(p_->styles[size_t(idle >= 0 ? idle : 0)]);
    const int left = find_style("walk_left"), right = find_style("walk_right");
    if (left >= 0 && right >= 0) p_->ag->set_sidestep_styles(p_->styles[size_t(left)], p_->styles[size_t(right)]);
    initial_ = to_frames(p_->ag->history());
    worker_ = std::thread([this] { run(); });
}

planner::~planner() {
    {
        std::lock_guard<std::mutex> lk(mu_);
        stop_ = true;
    }
    cv_.notify_all();
    if (worker_.joinable()) worker_.join();
}

int planner::find_style(const std::string & name) const {
    for (size_t i = 0; i < styles_.size(); ++i) {
        if (styles_[i].name == name) return int(i);
    }
    return -1;
}

bool planner::submit(plan_request req, std::function<void(plan_result)> done) {
    {
        std::lock_guard<std::mutex> lk(mu_);
        if (has_job_ || busy_ || stop_) return false;
        job_     = std::move(req);
        done_    = std::move(done);
        has_job_ = true;
        busy_    = true;
    }
    cv_.notify_all();
    return true;
}

bool planner::busy() const {
    std::lock_guard<std::mutex> lk(mu_);
    return busy_;
}

void planner::run() {
    for (;;) {
        plan_request                     req;
        std::function<void(plan_result)> done;
        {
            std::unique_lock<std::mutex> lk(mu_);
            cv_.wait(lk, [&] { return stop_ || has_job_; });
            if (stop_) return;
            req      = std::move(job_);
            done     = std::move(done_);
            has_job_ = false;
        }
        plan_result res;
        res.epoch     = req.epoch;
        res.at        = req.at;
        const auto t0 = std::chrono::steady_clock::now();
        try {
            const int style = find_style(req.style);
            if (style < 0) throw std::invalid_argument("unknown style '" + req.style + "'");
            if (req.context.size() != size_t(k_context_frames) * k_qpos_values) throw std::invalid_argument("context must be 4 frames");
            mbx::command cmd;
            cmd.set_style(p_->styles[size_t(style)]);
            cmd.set_movement_direction(req.move[0], 0, req.move[1]);
            cmd.set_facing_direction(req.facing[0], 0, req.facing[1]);
            cmd.set_target_speed(req.speed);
            cmd.set_seed(req.seed);
            cmd.set_sampling_argmax(false);   // Gumbel sampling seeded per plan, like the reference server
            p_->ag->set_context_qpos(req.context.data(), k_context_frames);
            const mbx::motion plan = req.jump ? mbx::plan_jump(*p_->ag, cmd) : p_->ag->plan(cmd);
            res.frames = to_frames(plan);
            res.style  = plan.style_name();
            const mbx::float_view tj = plan.target_joint_positions(), tr = plan.target_root_translations(),
                                  tl = plan.target_local_rotations_xyzw();
            res.target_joints.assign(tj.begin(), tj.end());
            res.target_roots.assign(tr.begin(), tr.end());
            res.target_rotations.assign(tl.begin(), tl.end());
            // the session's policy on top of the library's finiteness check: beyond 10 km it stops
            for (const timeline_frame & t : res.frames) {
                for (float v : t.root) {
                    if (std::fabs(v) > 1e4f) throw std::runtime_error("planner output root outside 10 km");
                }
            }
            res.ok = true;
        } catch (const std::exception & e) {
            res.ok    = false;
            res.error = std::string("planning failed: ") + e.what();
            res.frames.clear();
        }
        res.planner_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        // busy until the result is handed over, so an owner can wait for it before going away
        if (done) done(std::move(res));
        {
            std::lock_guard<std::mutex> lk(mu_);
            busy_ = false;
        }
    }
}

} // namespace mb::serve
