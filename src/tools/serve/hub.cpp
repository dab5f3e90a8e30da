// the stream hub: timeline, tick clock, planning schedule, ownership and fan-out
#include "tools/serve/hub.h"
#include "tools/serve/replay-recorder.h"

#include "tools/serve/clips.h"
#include "tools/serve/live-physics.h"
#include "tools/serve/tokens.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>

namespace mb::serve {

namespace {

constexpr auto    k_wake          = std::chrono::milliseconds(5);
constexpr auto    k_tick          = std::chrono::milliseconds(20);     // 50 Hz
constexpr auto    k_behind_limit  = std::chrono::milliseconds(200);
constexpr auto    k_hold_resend   = std::chrono::milliseconds(100);
constexpr int     k_max_catch_up  = 4;
constexpr double  k_frames_per_tick = 0.6;                            // 30 fps / 50 Hz
constexpr int64_t k_lead          = 12;                               // frames between request and boundary
constexpr int64_t k_replan        = 16;

int64_t frame_floor(int64_t tick) { return (tick * 3) / 5; }
int64_t frame_ceil(int64_t tick) { return (tick * 3 + 4) / 5; }
} // namespace

hub::hub(planner & p, hub_options opt) : planner_(p), opt_(opt) {
    reset_world();
    epoch_ = 1;
}

hub::~hub() {
    stop();
    // a plan still running would hand its result to this hub: wait for it
    while (planner_.busy()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

void hub::start() {
    deadline_ = clock::now() + k_tick;
    thread_   = std::thread([this] { run(); });
}

void hub::stop() {
    {
        std::lock_guard<std::mutex> lk(mu_);
        stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
    // viewers attached after the loop's last batch still sit in the inbox. Held there, they
    // outlived the server's io_context and were destroyed with the hub, on a dead socket
    // service (ServeLimits crashed ~1 run in 7): closed and let go now
    std::deque<event> left;
    {
        std::lock_guard<std::mutex> lk(mu_);
        left.swap(inbox_);
    }
    for (event & e : left) {
        if (e.link) e.link->close("server shutting down");
    }
}

bool hub::try_reserve_peer() {
    int n = peers_.load();
    while (n < opt_.max_peers) {
        if (peers_.compare_exchange_weak(n, n + 1)) return true;
    }
    refused_.fetch_add(1);   // the hub may free a slot held by an idle spectator
    cv_.notify_all();
    return false;
}

void hub::release_peer() { peers_.fetch_sub(1); }

uint64_t hub::attach(std::shared_ptr<viewer_link> v, const std::string & resume_token) {
    event e;
    e.kind  = event::attach;
    e.id    = next_id_.fetch_add(1);
    e.link  = std::move(v);
    e.token = resume_token;
    const uint64_t id = e.id;
    {
        std::lock_guard<std::mutex> lk(mu_);
        if (!stop_) {
            inbox_.push_back(std::move(e));
            cv_.notify_all();
            return id;
        }
    }
    e.link->close("server shutting down");   // stopped: nothing would ever let go of it
    return id;
}

void hub::detach(uint64_t id) {
    event e;
    e.kind = event::detach;
    e.id   = id;
    {
        std::lock_guard<std::mutex> lk(mu_);
        inbox_.push_back(std::move(e));
    }
    cv_.notify_all();
}

void hub::post_message(uint64_t id, const client_message & m, const std::string & rejected) {
    event e;
    e.kind     = event::message;
    e.id       = id;
    e.msg      = m;
    e.rejected = rejected;
    {
        std::lock_guard<std::mutex> lk(mu_);
        inbox_.push_back(std::move(e));
    }
    cv_.notify_all();
}

hub_stats hub::stats() const {
    std::lock_guard<std::mutex> lk(mu_);
    return stats_;
}

// ---- the loop -------------------------------------------------------------------------

void hub::run() {
    for (;;) {
        std::deque<event> batch;
        {
            std::unique_lock<std::mutex> lk(mu_);
            cv_.wait_for(lk, k_wake, [&] { return stop_ || !inbox_.empty(); });
            if (stop_) break;
            batch.swap(inbox_);
        }
        for (event & e : batch) handle(e);
        evict_idle_spectator(clock::now());
        advance_clock(clock::now());
        maybe_plan();
        std::lock_guard<std::mutex> lk(mu_);
        stats_.viewers    = viewers_.size();
        stats_.slow_ticks = slow_ticks_;
    }
    for (auto & v : viewers_) v.second.link->close("server shutting down");
    viewers_.clear();
}

void hub::handle(event & e) {
    switch (e.kind) {
    case event::attach: on_attach(e); break;
    case event::detach: on_detach(e.id); break;
    case event::message: on_message(e.id, e.msg, e.rejected); break;
    case event::result: on_result(*e.plan); break;
    }
}

void hub::send_to(uint64_t id, const std::string & text) {
    auto it = viewers_.find(id);
    if (it != viewers_.end()) it->second.link->send_reply(std::make_shared<const std::string>(text));
}

void hub::broadcast_reliable(const message_ptr & m) {
    for (auto & v : viewers_) v.second.link->send_reliable(m);
}

void hub::broadcast_pose(const message_ptr & m) {
    for (auto & v : viewers_) v.second.link->send_pose(m);
}

void hub::ack(uint64_t id, int64_t seq, const char * state, const std::string & error) {
    send_to(id, make_ack(seq, state, error, epoch_));
}

void hub::on_attach(event & e) {
    const clock::time_point now = clock::now();
    viewer v;
    v.link = e.link;
    if (owner_id_ == 0) {
        if (had_owner_ && token_equal(e.token, owner_token_)) {
            v.owner = true;     // the owner is back
        } else if (!had_owner_ || now - owner_lost_at_ >= std::chrono::duration<double>(opt_.reclaim_seconds)) {
            v.owner      = true;        // first owner, or reclaim after the grace period
            owner_token_ = make_token();
            last_seq_    = 0;
            had_owner_   = true;
        }
    } else if (token_equal(e.token, owner_token_)) {
        // the owner reconnected before its old connection ended: the old one goes
        auto it = viewers_.find(owner_id_);
        if (it != viewers_.end()) {
            it->second.owner = false;
            it->second.link->close("replaced by a resumed owner connection");
        }
        v.owner = true;
    }
    if (v.owner) owner_id_ = e.id;
    share_owner_token();
    v.active       = now;
    viewers_[e.id] = v;
    v.link->send_reliable(std::make_shared<const std::string>(make_hello(v.owner, owner_token_, last_seq_, epoch_, opt_.physics ? opt_.physics->control() : "")));
    // snapshot: the collision shapes (physics builds), targets and the last frame
    if (opt_.physics) v.link->send_reliable(opt_.physics->shapes());
    v.link->send_reliable(targets_msg_ ? targets_msg_ : make_targets(nullptr));
    if (last_frame_) v.link->send_pose(last_frame_);
    std::fprintf(stderr, "serve: viewer %llu connected as %s (%zu connected)\n", (unsigned long long) e.id,
                 v.owner ? "owner" : "spectator", viewers_.size());
}

// issue 19.13d: 8 peers that only ping held every slot for good. When a viewer was turned away,
// the spectator silent longest (pings do not count) gives up its slot if silent for at least
// spectator_idle_seconds; one at a time, and the owner never. The refused viewer's client
// retries (the web viewer reconnects after 750 ms) and finds the slot
void hub::evict_idle_spectator(clock::time_point now) {
    const uint64_t r = refused_.load();
    if (r == refused_seen_) return;
    refused_seen_ = r;
    viewer * idle = nullptr;
    for (auto & v : viewers_) {
        if (v.second.evicting) return;   // a slot is already on its way
        if (!v.second.owner && (!idle || v.second.active < idle->active)) idle = &v.second;
    }
    if (!idle || now - idle->active < std::chrono::duration<double>(opt_.spectator_idle_seconds)) return;
    idle->evicting = true;
    idle->link->close("idle spectator: the slot went to a waiting viewer");
}

void hub::on_detach(uint64_t id) {
    auto it = viewers_.find(id);
    if (it == viewers_.end()) return;
    viewers_.erase(it);
    if (id == owner_id_) {
        owner_id_      = 0;
        owner_lost_at_ = clock::now();
        paused_        = true;    // owner loss pauses the world
        share_owner_token();
        std::fprintf(stderr, "serve: owner %llu left; paused\n", (unsigned long long) id);
    }
}

void hub::on_message(uint64_t id, const client_message & m, const std::string & rejected) {
    auto vit = viewers_.find(id);
    if (vit == viewers_.end()) return;
    vit->second.active = clock::now();
    if (id != owner_id_) {
        ack(id, m.seq, "rejected", "spectator cannot control simulation");
        return;
    }
    // the sequence space wraps: after 2^53-1 counting starts again at 1 (a seq that high used
    // to leave the owner with nothing it could send)
    const bool wrapped = last_seq_ == k_max_seq && m.seq >= 1;
    if (m.seq <= last_seq_ && !wrapped) {
        ack(id, m.seq, "duplicate", "seq must be strictly increasing");
        return;
    }
    last_seq_ = m.seq;
    if (!rejected.empty()) {
        ack(id, m.seq, "rejected", rejected);
        return;
    }
    const double now_s = double(tick_) / 50.0;
    switch (m.type) {
    case msg_type::play_clip:
        if (!opt_.clips || !opt_.clips->find(m.clip)) {
            ack(id, m.seq, "rejected", opt_.clips ? "unknown clip '" + m.clip.substr(0, 64) + "'" : "no clips are available on this server");
            return;
        }
        [[fallthrough]];
    case msg_type::control:
    case msg_type::jump: {
        if (m.type == msg_type::control && m.has_style && planner_.find_style(m.style) < 0) {
            ack(id, m.seq, "rejected", "unknown style '" + m.style.substr(0, 64) + "'");
            return;
        }
        if (m.type != msg_type::control) {
            const bool playing = jump_at_ >= 0 && frame_floor(tick_) < jump_end_;
            bool       queued  = in_flight_jump_;
            for (const auto & p : pending_) queued = queued || p.msg.type != msg_type::control;
            if (playing || queued) {
                ack(id, m.seq, "rejected", "an action is already active");
                return;
            }
        }
        if (pending_.size() >= k_max_commands) {
            send_to(id, make_error("command queue full"));
            return;
        }
        pending_.push_back({m});
        ack(id, m.seq, "received", "");
        return;
    }
    case msg_type::pause:
        paused_ = true;
        send_to(id, make_ack_applied(m.seq, epoch_, now_s));
        return;
    case msg_type::resume:
        if (!failed_.empty() || !physics_error_.empty()) {
            const std::string & why = failed_.empty() ? physics_error_ : failed_;
            ack(id, m.seq, "rejected", "the simulation failed (" + why + "); reset" + (failed_.empty() ? " or turn physics off" : "") + " first");
            return;
        }
        if (paused_) deadline_ = clock::now() + k_tick;
        paused_ = false;
        send_to(id, make_ack_applied(m.seq, epoch_, now_s));
        return;
    case msg_type::reset:
        reset_world();
        broadcast_reliable(make_targets(nullptr));
        send_to(id, make_ack_applied(m.seq, epoch_, 0.0));
        emit_frame();
        return;
    case msg_type::physics: on_physics(id, m); return;
    case msg_type::ping: send_to(id, make_pong()); return;
    }
}

void hub::reset_world() {
    // stale results of the old epoch are discarded when they arrive
    ++epoch_;
    tick_ = 0;
    timeline_.reset(planner_.initial());
    next_plan_      = k_lead;
    plan_seed_      = 0;
    last_plan_idle_ = false;
    failed_.clear();
    physics_error_.clear();
    if (physics_on_) {
        const std::string why = opt_.physics->start(timeline_, 0);
        if (!why.empty()) physics_error_ = "physics: " + why;
    }
    for (const auto & w : waiting_) ack(owner_id_, w.seq, "superseded", "reset");
    for (const auto & p : pending_) ack(owner_id_, p.msg.seq, "superseded", "reset");
    for (int64_t s : in_flight_seqs_) ack(owner_id_, s, "superseded", "reset");
    waiting_.clear();
    pending_.clear();
    in_flight_seqs_.clear();
    in_flight_jump_ = false;
    stalled_        = false;
    ctl_style_     = "walk";
    ctl_move_[0]   = ctl_move_[1] = 0;
    ctl_facing_[0] = 0;
    ctl_facing_[1] = 1;
    jump_at_ = jump_end_ = -1;
    recorded_ = -1;
    if (opt_.history) opt_.history->clear();
    targets_msg_.reset();
    style_marks_.clear();
    shown_style_ = planner_.find_style("idle") >= 0 ? "idle" : planner_.styles().front().name;
    deadline_    = clock::now() + k_tick;
}

bool hub::control_zero() const { return std::hypot(ctl_move_[0], ctl_move_[1]) < 1e-3f; }

bool hub::hold_mode() const { return last_plan_idle_ && control_zero() && pending_.empty(); }

void hub::advance_clock(clock::time_point now) {
    const bool frozen = paused_ || !failed_.empty();
    if (!frozen) {
        if (now - deadline_ > k_behind_limit) {
            ++slow_ticks_;
            deadline_ = now + k_tick;   // never larger timesteps
        }
        int n = 0;
        while (now >= deadline_ && n < k_max_catch_up) {
            const int64_t next = tick_ + 1;
            // a late plan makes the clock wait before its reserved boundary
            if (in_flight_ && frame_floor(next) + 1 >= in_flight_at_) {
                stalled_  = true;
                deadline_ = now + k_tick;
                std::lock_guard<std::mutex> lk(mu_);
                ++stats_.stalls;
                break;
            }
            tick_    = next;
            stalled_ = false;
            deadline_ += k_tick;
            ++n;
            {
                std::lock_guard<std::mutex> lk(mu_);
                ++stats_.ticks;
            }
            // commands whose boundary was reached are applied
            const int64_t f = frame_floor(tick_);
            for (size_t i = 0; i < waiting_.size();) {
                if (f >= waiting_[i].at) {
                    send_to(owner_id_, make_ack_applied(waiting_[i].seq, epoch_, double(tick_) / 50.0));
                    waiting_.erase(waiting_.begin() + long(i));
                } else {
                    ++i;
                }
            }
            while (!style_marks_.empty() && f >= style_marks_.front().at) {
                shown_style_ = style_marks_.front().style;
                style_marks_.pop_front();
            }
            if (opt_.history && f > recorded_) {
                for (int64_t k = std::max(recorded_ + 1, f - 1); k <= f; ++k) opt_.history->push(timeline_.at(k));
                recorded_ = f;
            }
            if (opt_.recorder) opt_.recorder->frame(f, timeline_.at(f), shown_style_);
            if (opt_.on_tick) opt_.on_tick(timeline_, tick_, epoch_);
            if (physics_running()) step_physics();
            // drop frames well behind the clock (one frame always stays)
            timeline_.drop_before(f);
        }
        // a held pose still has a moving physical robot: frames every tick then
        if (n > 0 && (!holding_now() || physics_running())) {
            emit_frame();
            return;
        }
    }
    // paused, holding or waiting for the planner: re-send the last frame at most every 100 ms
    if (now - last_sent_ >= k_hold_resend) emit_frame();
}

bool hub::holding_now() const {
    return !in_flight_ && hold_mode() && frame_floor(tick_) + 1 >= timeline_.end() - 1;
}

void hub::emit_frame() {
    const double  fr  = double(tick_) * k_frames_per_tick;
    const int64_t f0  = frame_floor(tick_);
    const float   w   = float(fr - double(f0));
    float root[3], rot[k_joints * 4];
    timeline_.sample(f0, w, root, rot);
    const bool holding = holding_now();
    const bool jumping = jump_at_ >= 0 && f0 >= jump_at_ && f0 < jump_end_;

    std::string s;
    s.reserve(2048);
    s += "{\"type\":\"frame\",\"epoch\":" + std::to_string(epoch_) + ",\"tick\":" + std::to_string(tick_) + ",\"time\":";
    append_float(s, float(double(tick_) / 50.0));
    s += ",\"root\":";
    append_floats(s, root, 3);
    s += ",\"rotations\":";
    append_floats(s, rot, size_t(k_joints) * 4);
    if (physics_on_) {
        s += ",\"physics\":true";
        opt_.physics->append_frame_fields(s);
    } else {
        s += ",\"contacts\":0,\"physics\":false,\"physics_time\":0,\"fallen\":false";
    }
    s += ",\"paused\":";
    s += paused_ ? "true" : "false";
    s += ",\"holding\":";
    s += holding ? "true" : "false";
    s += ",\"planning\":";
    s += stalled_ && in_flight_ ? "true" : "false";
    if (!failed_.empty() || !physics_error_.empty()) {
        s += ",\"error\":";
        append_json_string(s, failed_.empty() ? physics_error_ : failed_);
    }
    s += ",\"kind\":\"";
    s += jumping ? action_kind_ : "motion";
    s += "\",\"progress\":";
    append_float(s, jumping ? float(fr - double(jump_at_)) / float(jump_end_ - jump_at_) : 0.0f);
    s += ",\"revision\":" + std::to_string(revision_) + ",\"style\":";
    append_json_string(s, shown_style_);
    s += ",\"slow_ticks\":" + std::to_string(slow_ticks_) + "}";
    last_frame_ = std::make_shared<const std::string>(std::move(s));
    last_sent_  = clock::now();
    ++frames_sent_;
    broadcast_pose(last_frame_);
}

message_ptr hub::make_targets(const plan_result * r) {
    std::string s = "{\"type\":\"targets\",\"revision\":" + std::to_string(revision_) + ",\"targets\":";
    if (!r) {
        s += "null,\"style\":";
        append_json_string(s, ctl_style_);
    } else {
        s += "{\"frames\":" + std::to_string(k_context_frames) + ",\"joints\":";
        append_floats(s, r->target_joints.data(), r->target_joints.size());
        s += ",\"roots\":";
        append_floats(s, r->target_roots.data(), r->target_roots.size());
        s += ",\"rotations\":";
        append_floats(s, r->target_rotations.data(), r->target_rotations.size());
        s += "},\"style\":";
        append_json_string(s, r->style);
    }
    s += "}";
    return std::make_shared<const std::string>(std::move(s));
}

void hub::maybe_plan() {
    if (in_flight_ || !failed_.empty() || paused_) return;
    // the worker hands a result over before it is idle again: wait for that, so that submit
    // below cannot fail after the queued commands were taken
    if (planner_.busy()) return;
    const int64_t cf      = frame_ceil(tick_);
    const bool    playing = jump_at_ >= 0 && frame_floor(tick_) < jump_end_;
    int64_t       at      = 0;
    if (!pending_.empty()) {
        // commands changed: plan as soon as possible, unless an action plays in full first
        if (playing && cf < next_plan_ - k_lead) return;
        at = playing ? std::max(cf + k_lead, next_plan_) : cf + k_lead;
    } else if (!hold_mode() && cf >= next_plan_ - k_lead) {
        at = std::max(cf + k_lead, next_plan_);
    } else {
        return;
    }

    // coalesce the queued commands: controls fold into the state, the last one is scheduled
    // with this plan and earlier ones are superseded; a jump ends the batch
    bool    jump     = false;
    int64_t last_ctl = -1;
    std::vector<int64_t> seqs;
    std::optional<client_message> clip;
    while (!pending_.empty() && !jump && !clip) {
        const client_message m = pending_.front().msg;
        pending_.pop_front();
        if (m.type == msg_type::jump) {
            jump = true;
            seqs.push_back(m.seq);
            continue;
        }
        if (m.type == msg_type::play_clip) {
            clip = m;
            continue;
        }
        if (last_ctl >= 0) ack(owner_id_, last_ctl, "superseded", "");
        last_ctl = m.seq;
        if (m.has_style) ctl_style_ = m.style;
        if (m.has_move) {
            ctl_move_[0] = m.move[0];
            ctl_move_[1] = m.move[1];
        }
        if (m.has_facing) {
            const float n  = std::hypot(m.facing[0], m.facing[1]);
            ctl_facing_[0] = m.facing[0] / n;
            ctl_facing_[1] = m.facing[1] / n;
        }
    }
    if (last_ctl >= 0) seqs.push_back(last_ctl);
    if (clip) return start_clip(*clip, at, seqs);

    plan_request req;
    req.epoch = epoch_;
    req.at    = at;
    req.context.resize(size_t(k_context_frames) * k_qpos_values);
    for (int f = 0; f < k_context_frames; ++f) {
        const timeline_frame & t = timeline_.at(at + f);
        std::copy(t.qpos, t.qpos + k_qpos_values, req.context.begin() + long(f) * k_qpos_values);
    }
    req.facing[0] = ctl_facing_[0];
    req.facing[1] = ctl_facing_[1];
    const float mag  = std::hypot(ctl_move_[0], ctl_move_[1]);
    const int   idle = planner_.find_style("idle");
    if (jump) {
        // one action plan: a temporary 5 m/s target speed along movement (or facing)
        req.style = ctl_style_ == "idle" && planner_.find_style("walk") >= 0 ? "walk" : ctl_style_;
        if (mag > 1e-3f) {
            req.move[0] = ctl_move_[0] / mag;
            req.move[1] = ctl_move_[1] / mag;
        } else {
            req.move[0] = ctl_facing_[0];
            req.move[1] = ctl_facing_[1];
        }
        req.speed = MB_JUMP_SPEED;
        req.jump  = true;
    } else if (mag < 1e-3f) {
        // zero movement: idle (when present) at speed 0, and the stop pose is then held
        req.style = idle >= 0 ? "idle" : ctl_style_;
        req.speed = 0;
    } else {
        req.style   = ctl_style_;
        req.move[0] = ctl_move_[0] / mag;
        req.move[1] = ctl_move_[1] / mag;
        const int s = planner_.find_style(ctl_style_);
        req.speed   = mag >= 0.99f ? -1.0f : planner_.styles()[size_t(s)].speed * mag;
    }
    req.seed        = ++plan_seed_;
    if (std::getenv("MB_SERVE_DEBUG")) {
        std::fprintf(stderr, "serve: plan %llu at %lld (frame %lld) style %s speed %g jump %d seqs %zu\n", (unsigned long long) req.seed,
                     (long long) at, (long long) cf, req.style.c_str(), double(req.speed), int(jump), seqs.size());
    }
    in_flight_      = true;
    in_flight_at_   = at;
    in_flight_seqs_ = seqs;
    in_flight_jump_ = jump;
    in_flight_idle_ = !jump && mag < 1e-3f;
    const bool ok   = planner_.submit(std::move(req), [this](plan_result r) {
        event e;
        e.kind = event::result;
        e.plan = std::make_shared<plan_result>(std::move(r));
        {
            std::lock_guard<std::mutex> lk(mu_);
            inbox_.push_back(std::move(e));
        }
        cv_.notify_all();
    });
    if (!ok) in_flight_ = false;   // cannot happen: only this thread submits and the worker was idle
}

void hub::on_result(plan_result & r) {
    const bool mine = in_flight_;
    const bool jump = in_flight_jump_;
    if (std::getenv("MB_SERVE_DEBUG")) {
        std::fprintf(stderr, "serve: result at %lld ok %d frames %zu %s mine %d seqs %zu\n", (long long) r.at, int(r.ok), r.frames.size(),
                     r.error.c_str(), int(mine), in_flight_seqs_.size());
    }
    in_flight_      = false;
    in_flight_jump_ = false;
    if (!mine || r.epoch != epoch_) return;   // stale: a reset happened meanwhile
    {
        std::lock_guard<std::mutex> lk(mu_);
        stats_.last_planner_ms = r.planner_ms;
        ++(r.ok ? stats_.plans : stats_.plan_failures);
    }
    std::vector<int64_t> seqs;
    seqs.swap(in_flight_seqs_);
    if (!r.ok || r.frames.size() < size_t(k_context_frames) + 1) {
        failed_ = r.ok ? "planner returned too few frames" : r.error;
        for (int64_t s : seqs) ack(owner_id_, s, "rejected", failed_);
        broadcast_reliable(std::make_shared<const std::string>(make_error(failed_)));
        std::fprintf(stderr, "serve: %s\n", failed_.c_str());
        emit_frame();
        return;
    }
    const int64_t at     = r.at;
    const int64_t frames = int64_t(r.frames.size());
    timeline_.splice(at, std::move(r.frames));   // eased into from the replaced frames
    if (jump) {
        jump_at_     = at;
        jump_end_    = at + frames - k_context_frames;
        next_plan_   = jump_end_;
        action_kind_ = "jump";
    } else {
        next_plan_ = at + std::min<int64_t>(k_replan, frames - k_context_frames);
    }
    last_plan_idle_ = in_flight_idle_;
    ++revision_;
    style_marks_.push_back({at, r.style});
    if (opt_.recorder) opt_.recorder->plan(at, r.style, int(frames), r.target_joints);
    targets_msg_ = make_targets(&r);
    broadcast_reliable(targets_msg_);
    for (int64_t s : seqs) {
        send_to(owner_id_, make_ack_scheduled(s, epoch_, double(at) / 30.0, r.planner_ms));
        waiting_.push_back({s, at});
    }
}

} // namespace mb::serve

namespace mb::serve {

bool hub::is_owner_token(const std::string & token) const {
    std::lock_guard<std::mutex> lk(mu_);
    return !owner_token_shared_.empty() && token_equal(token, owner_token_shared_);
}

void hub::share_owner_token() {
    std::lock_guard<std::mutex> lk(mu_);
    owner_token_shared_ = owner_id_ ? owner_token_ : std::string();
}

// a clip in place of a plan: aligned to the pose at `at`, eased in by the timeline's 8-frame
// crossfade, played once; the next plan starts from its last 4 frames with the current controls
void hub::start_clip(const client_message & m, int64_t at, const std::vector<int64_t> & seqs) {
    const std::shared_ptr<const clip_asset> c = opt_.clips ? opt_.clips->find(m.clip) : nullptr;
    std::vector<timeline_frame>             frames;
    std::string                             why = c ? "" : "unknown clip";
    if (c) {
        try {
            frames = align_clip(*c, timeline_.at(at));
        } catch (const std::exception & e) {
            why = e.what();
        }
    }
    if (!why.empty()) {
        ack(owner_id_, m.seq, "rejected", why);
        for (int64_t s : seqs) ack(owner_id_, s, "rejected", why);
        return;
    }
    const int64_t n = int64_t(frames.size());
    timeline_.splice(at, std::move(frames));
    jump_at_        = at;
    jump_end_       = at + n - k_context_frames;
    next_plan_      = jump_end_;
    action_kind_    = "kimodo";
    last_plan_idle_ = false;   // planning resumes after the clip, idle or not
    ++revision_;
    for (int64_t s : seqs) {
        send_to(owner_id_, make_ack_scheduled(s, epoch_, double(at) / 30.0, 0.0));
        waiting_.push_back({s, at});
    }
    send_to(owner_id_, make_ack_scheduled(m.seq, epoch_, double(at) / 30.0, 0.0));
    waiting_.push_back({m.seq, at});
}

} // namespace mb::serve

namespace mb::serve {

// `physics {enabled}`: on starts the robot afresh at the pose now (the state cleared; the scene
// stays compiled), off drops it; either clears a stopped simulation's error
void hub::on_physics(uint64_t id, const client_message & m) {
    if (!opt_.physics) {
        ack(id, m.seq, "rejected", "physics is not available on this server");
        return;
    }
    physics_error_.clear();
    physics_on_ = false;
    if (m.enabled) {
        const std::string why = opt_.physics->start(timeline_, tick_);
        if (!why.empty()) {
            ack(id, m.seq, "rejected", "physics: " + why);
            return;
        }
        physics_on_ = true;
    }
    std::fprintf(stderr, "serve: physics %s (%s)\n", physics_on_ ? "on" : "off", opt_.physics->control());
    send_to(id, make_ack_applied(m.seq, epoch_, double(tick_) / 50.0));
    emit_frame();
}

// one physics tick in the loop (measured on the loaded 2-core VM: PD tracking up to 15 ms, a SONIC
// tick 12 ms, the first 29 ms; the clock catches up to 4 ticks per wake); a failure stops the
// simulation, not the clock
void hub::step_physics() {
    const auto        t0  = clock::now();
    const std::string why = opt_.physics->step(timeline_, tick_, revision_);
    const double      ms  = std::chrono::duration<double, std::milli>(clock::now() - t0).count();
    {
        std::lock_guard<std::mutex> lk(mu_);
        ++stats_.physics_ticks;
        stats_.physics_last_ms = ms;
        stats_.physics_max_ms  = std::max(stats_.physics_max_ms, ms);
    }
    if (why.empty()) return;
    physics_error_ = "physics: " + why;
    broadcast_reliable(std::make_shared<const std::string>(make_error(physics_error_)));
    std::fprintf(stderr, "serve: simulation stopped: %s\n", physics_error_.c_str());
}

} // namespace mb::serve
