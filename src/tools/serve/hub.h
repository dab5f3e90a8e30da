// the stream hub: the one server loop that owns the timeline. It wakes every 5 ms, advances
// an integer 50 Hz tick (reference frame = tick × 0.6 at 30 fps), keeps one plan in flight
// on the planning worker, splices results into the timeline, and fans frames and reliable
// events out to every viewer's queue. Sessions talk to it only through its inbox
#pragma once

#include "tools/serve/planner.h"
#include "tools/serve/protocol.h"
#include "tools/serve/timeline.h"
#include "tools/serve/viewer-queue.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace mb::serve {

class clip_library;
class frame_history;
class live_physics;
class replay_recorder;

struct hub_options {
    double reclaim_seconds = 30;    // after the owner left, a new connection may claim ownership
    int    max_peers       = 8;     // WebSocket viewers at once
    double spectator_idle_seconds = 60;   // a spectator silent this long (pings aside) gives its slot to a refused viewer
    clip_library *  clips   = nullptr;    // play_clip's clips (none: play_clip is rejected); outlives the hub
    frame_history * history = nullptr;    // receives every frame the clock passes (downloads); outlives the hub
    replay_recorder * recorder = nullptr; // serve --record: told each frame shown and each plan (borrowed)
    live_physics *  physics = nullptr;    // the simulated robot the `physics` message toggles (none: rejected); outlives the hub
    // after every 50 Hz tick, on the hub thread (robot-tap.h: serve --zmq / --record-qpos); may be empty
    std::function<void(const timeline & tl, int64_t tick, uint64_t epoch)> on_tick;
};

struct hub_stats {
    uint64_t ticks = 0, slow_ticks = 0, plans = 0, plan_failures = 0, stalls = 0;
    double   last_planner_ms = 0;
    size_t   viewers = 0;
    uint64_t physics_ticks = 0;            // physics steps run in the 50 Hz loop
    double   physics_last_ms = 0, physics_max_ms = 0;
};

class hub {
public:
    hub(planner & p, hub_options opt);
    ~hub();

    void start();
    // ends the loop and closes every viewer; afterwards the hub holds no viewer_link
    void stop();

    // peer slots: reserve before the WebSocket handshake, release when the connection ends
    bool try_reserve_peer();
    void release_peer();
    int  peers() const { return peers_.load(); }   // slots held: viewers not yet destroyed
    // for /metrics: frame messages broadcast, viewers dropped for not keeping up
    void     count_dropped_viewer() { ++dropped_viewers_; }
    uint64_t frames_sent() const { return frames_sent_.load(); }
    uint64_t dropped_viewers() const { return dropped_viewers_.load(); }

    // a connected viewer; the hub answers with hello + a snapshot. Returns the viewer id
    uint64_t attach(std::shared_ptr<viewer_link> v, const std::string & resume_token);
    void     detach(uint64_t id);
    // a parsed message of viewer `id` (pings are answered by the session itself);
    // `rejected` non-empty: the message was well formed but invalid (ack rejected)
    void     post_message(uint64_t id, const client_message & m, const std::string & rejected = "");

    hub_stats stats() const;
    // `token` is the current owner's (any thread; for the owner-only HTTP upload)
    bool is_owner_token(const std::string & token) const;

private:
    std::atomic<uint64_t> frames_sent_{0}, dropped_viewers_{0};
    using clock = std::chrono::steady_clock;

    struct event {
        enum kind_t { attach, detach, message, result } kind = message;
        uint64_t                     id = 0;
        std::shared_ptr<viewer_link> link;
        std::string                  token, rejected;
        client_message               msg;
        std::shared_ptr<plan_result> plan;
    };
    struct viewer {
        std::shared_ptr<viewer_link> link;
        bool                         owner = false;
        clock::time_point            active{};          // attach, or its last message other than a ping
        bool                         evicting = false;  // closed to free its slot, not yet detached
    };
    struct pending_cmd {
        client_message msg;
    };
    struct waiting_ack {
        int64_t seq = 0;
        int64_t at  = 0;    // frame at which it takes effect
    };

    planner &   planner_;
    hub_options opt_;

    // inbox (any thread)
    mutable std::mutex      mu_;
    std::condition_variable cv_;
    std::deque<event>       inbox_;
    bool                    stop_ = false;
    std::thread             thread_;
    std::atomic<uint64_t>   next_id_{1};
    std::atomic<int>        peers_{0};
    std::atomic<uint64_t>   refused_{0};     // viewers turned away because every slot was taken
    uint64_t                refused_seen_ = 0;   // hub thread: refusals already answered
    hub_stats               stats_;          // guarded by mu_ (copied from the loop)
    std::string             owner_token_shared_;   // guarded by mu_: owner_token_ while an owner is attached

    // ---- loop state (hub thread only) ----
    std::map<uint64_t, viewer> viewers_;
    uint64_t    owner_id_ = 0;
    std::string owner_token_;
    bool        had_owner_ = false;
    clock::time_point owner_lost_at_{};
    int64_t     last_seq_ = 0;

    uint64_t    epoch_ = 1;
    int64_t     tick_  = 0;
    uint64_t    slow_ticks_ = 0;
    bool        paused_ = false;
    bool        stalled_ = false;            // the clock waits for a late plan
    std::string failed_;                     // planner failure: resume rejected until reset
    bool        physics_on_ = false;         // the `physics` toggle
    std::string physics_error_;              // the simulation stopped (the kinematic stream goes on) until reset or physics off
    clock::time_point deadline_{};
    clock::time_point last_sent_{};

    timeline    timeline_;
    int64_t     next_plan_ = 12;
    bool        in_flight_ = false;
    int64_t     in_flight_at_ = 0;
    std::vector<int64_t> in_flight_seqs_;
    bool        in_flight_jump_ = false;
    bool        in_flight_idle_ = false;
    uint64_t    plan_seed_ = 0;
    bool        last_plan_idle_ = false;

    std::string ctl_style_ = "walk";
    float       ctl_move_[2]   = {0, 0};
    float       ctl_facing_[2] = {0, 1};
    std::deque<pending_cmd>  pending_;
    std::vector<waiting_ack> waiting_;

    int64_t     jump_at_ = -1, jump_end_ = -1;   // frames of the playing action (jump or clip)
    const char * action_kind_ = "jump";          // the frame's kind while it plays: "jump" or "kimodo"
    int64_t     recorded_ = -1;                  // last frame given to opt_.history
    uint64_t    revision_ = 0;
    std::string shown_style_;
    struct style_mark { int64_t at; std::string style; };
    std::deque<style_mark> style_marks_;
    message_ptr targets_msg_;
    message_ptr last_frame_;

    void run();
    void handle(event & e);
    void on_attach(event & e);
    void on_detach(uint64_t id);
    void on_message(uint64_t id, const client_message & m, const std::string & rejected);
    void on_result(plan_result & r);
    void evict_idle_spectator(clock::time_point now);
    void advance_clock(clock::time_point now);
    void maybe_plan();
    void start_clip(const client_message & m, int64_t at, const std::vector<int64_t> & seqs);
    void share_owner_token();
    void reset_world();
    void emit_frame();
    void on_physics(uint64_t id, const client_message & m);
    void step_physics();
    bool physics_running() const { return physics_on_ && physics_error_.empty(); }
    bool holding_now() const;
    void send_to(uint64_t id, const std::string & text);
    void broadcast_reliable(const message_ptr & m);
    void broadcast_pose(const message_ptr & m);
    void ack(uint64_t id, int64_t seq, const char * state, const std::string & error);
    bool    control_zero() const;
    bool    hold_mode() const;
    message_ptr make_targets(const plan_result * r);
};

} // namespace mb::serve
