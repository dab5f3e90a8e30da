// the planning worker: the agent (src/agent) on its own thread
#include "tools/serve/planner.h"

#include "agent/agent.h"
#include "format/bundle.h"
#include "motion/qpos.h"

#include <chrono>
#include <cmath>
#include <set>
#include <stdexcept>

namespace mb::serve {

struct planner::impl {
    std::unique_ptr<motion_model> model;
    std::unique_ptr<agent>        ag;
};

namespace {

// local = parent⁻¹ · global for one frame of row-major global rotations [34, 9] → xyzw [34, 4]
void local_quats(const float * G, float * out) {
    for (int j = 0; j < k_joints; ++j) {
        double    l[9];
        const int p = k_g1_parents[j];
        for (int r = 0; r < 3; ++r) {
            for (int c = 0; c < 3; ++c) {
                if (p < 0) {
                    l[r * 3 + c] = G[j * 9 + r * 3 + c];
                } else {
                    l[r * 3 + c] = double(G[p * 9 + 0 * 3 + r]) * G[j * 9 + 0 * 3 + c] +
                                   double(G[p * 9 + 1 * 3 + r]) * G[j * 9 + 1 * 3 + c] +
                                   double(G[p * 9 + 2 * 3 + r]) * G[j * 9 + 2 * 3 + c];
                }
            }
        }
        double q[4];
        matrix_to_quat_wxyz(l, q);
        const double n = std::sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
        const double s = n > 0 ? 1.0 / n : 0.0;
        out[j * 4 + 0] = float(q[1] * s);
        out[j * 4 + 1] = float(q[2] * s);
        out[j * 4 + 2] = float(q[3] * s);
        out[j * 4 + 3] = n > 0 ? float(q[0] * s) : 1.0f;
    }
}

} // namespace

std::vector<timeline_frame> planner::to_frames(const float * qpos, int frames) {
    static const qpos_converter conv;
    std::vector<timeline_frame> out(static_cast<size_t>(frames));
    std::vector<float>          pos(size_t(k_joints) * 3), rot(size_t(k_joints) * 9);
    for (int f = 0; f < frames; ++f) {
        timeline_frame & t = out[size_t(f)];
        for (int c = 0; c < k_qpos_values; ++c) t.qpos[c] = qpos[size_t(f) * k_qpos_values + size_t(c)];
        conv.qpos_to_transforms(t.qpos, pos.data(), rot.data());
        for (int c = 0; c < 3; ++c) t.root[c] = pos[size_t(c)];
        local_quats(rot.data(), t.rotations);
    }
    return out;
}

planner::planner(const std::string & model_dir, const std::vector<std::string> & style_paths, int n_threads)
    : p_(std::make_unique<impl>()) {
    std::vector<style_asset> styles;
    std::set<std::string>    names;
    for (const std::string & path : style_paths) {
        styles.push_back(style_read(path));
        if (!names.insert(styles.back().name).second) throw std::runtime_error("two styles are named '" + styles.back().name + "'");
        styles_.push_back({styles.back().name, styles.back().speed});
    }
    if (styles.empty()) throw std::runtime_error("no styles");
    p_->model = motion_model::create(bundle_load(model_dir), n_threads);
    p_->ag    = std::make_unique<agent>(*p_->model, std::move(styles));
    const std::vector<float> & buf = p_->ag->buffer();
    initial_ = to_frames(buf.data(), int(buf.size() / k_qpos_values));
    worker_  = std::thread([this] { run(); });
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
            agent_command cmd;
            cmd.style = style;
            // motion (x, z) = MuJoCo (y, x)
            cmd.movement[0]  = req.move[1];
            cmd.movement[1]  = req.move[0];
            cmd.facing[0]    = req.facing[1];
            cmd.facing[1]    = req.facing[0];
            cmd.target_speed = req.speed;
            cmd.seed         = req.seed;
            cmd.argmax       = false;   // Gumbel sampling seeded per plan, like the reference server
            p_->ag->set_context(req.context.data(), k_context_frames);
            const agent_plan plan = p_->ag->plan(cmd);
            res.frames = to_frames(plan.qpos.data(), plan.frames);
            res.style  = styles_[size_t(plan.style)].name;
            res.target_joints.assign(plan.target_positions.begin(), plan.target_positions.end());
            res.target_roots.resize(size_t(k_context_frames) * 3);
            res.target_rotations.resize(size_t(k_context_frames) * k_joints * 4);
            for (int f = 0; f < k_context_frames; ++f) {
                for (int c = 0; c < 3; ++c) res.target_roots[size_t(f * 3 + c)] = plan.target_positions[size_t(f) * k_joints * 3 + size_t(c)];
                local_quats(&plan.target_rotations[size_t(f) * k_joints * 9], &res.target_rotations[size_t(f) * k_joints * 4]);
            }
            // safety guard: coordinates beyond 10 km stop the session
            for (const timeline_frame & t : res.frames) {
                for (float v : t.root) {
                    if (!std::isfinite(v) || std::fabs(v) > 1e4f) throw std::runtime_error("planner output root outside 10 km");
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
