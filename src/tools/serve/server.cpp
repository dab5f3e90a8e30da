// motionbricks serve: listener and HTTP connections
#include "tools/serve/server.h"
#include "tools/serve/live-physics.h"

#include "tools/serve/http-routes.h"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cstdio>
#include <list>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <sys/resource.h>
#include <thread>
#include <variant>

namespace mb::serve {

namespace beast     = boost::beast;
namespace net       = boost::asio;
namespace websocket = beast::websocket;
using tcp           = net::ip::tcp;

bool parse_listen(const std::string & s, std::string & host, uint16_t & port) {
    const size_t c = s.rfind(':');
    if (c == std::string::npos || c == 0 || c + 1 >= s.size()) return false;
    host = s.substr(0, c);
    if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
    unsigned   p   = 0;
    const auto res = std::from_chars(s.data() + c + 1, s.data() + s.size(), p);
    if (res.ec != std::errc() || res.ptr != s.data() + s.size() || p > 65535) return false;
    port = uint16_t(p);
    return true;
}

std::string make_meta_json(const std::vector<style_info> & styles, const std::vector<joint_info> & skeleton, bool demo) {
    nlohmann::json joints = nlohmann::json::array(), st = nlohmann::json::array();
    for (const joint_info & j : skeleton) {
        joints.push_back({{"name", j.name}, {"parent", j.parent}, {"position", {j.position[0], j.position[1], j.position[2]}}});
    }
    for (const auto & s : styles) st.push_back({{"name", s.name}, {"speed", s.speed}});
    nlohmann::json j = {{"fps", 30}, {"joints", joints}, {"styles", st}, {"kimodo_clips", nlohmann::json::array()},
                        {"demo", demo}, {"protocol_version", k_protocol_version}};
    if (demo) j["demo_reason"] = "untrained random weights and synthetic styles: the motion is not meaningful; run `motionbricks download`";
    return j.dump();
}

namespace {

class http_session;

// the live HTTP connections (a connection upgraded to the stream leaves it; peers are capped
// by the hub). At the cap, or when accept() finds no descriptor left, the connection that has
// waited longest for a request is closed: idle or slow clients cannot lock a new one out
class connection_table {
public:
    // registers `s`; at the cap the oldest waiting connection is evicted, and with none waiting
    // `s` is refused (false: the caller drops it, closing its socket)
    bool admit(const std::shared_ptr<http_session> & s);
    void remove(const http_session * s);
    // `s` now waits for a request (true) or is answering one (false)
    void set_waiting(const http_session * s, bool waiting);
    // closes the connection that has waited longest for a request; false when none waits
    bool evict_oldest_waiting();
    // closes every connection (shutdown)
    void close_all();
    size_t size() const {
        std::lock_guard<std::mutex> lk(mu_);
        return live_.size();
    }
    size_t cap = 512;

private:
    struct entry {
        const http_session *        key;
        std::weak_ptr<http_session> session;
        bool                        waiting = true;
        uint64_t                    since   = 0;   // order in which it began to wait
    };
    mutable std::mutex mu_;
    std::list<entry>   live_;
    uint64_t           clock_ = 0;

    std::shared_ptr<http_session> take_oldest_waiting();   // with mu_ held
};

struct shared_state {
    hub &            h;
    route_context    routes;
    session_limits   limits;
    connection_table conns;
    std::atomic<int> uploads{0};   // upload bodies being read (at most 2: 16 MiB each)
};

class http_session : public std::enable_shared_from_this<http_session> {
public:
    http_session(tcp::socket && s, shared_state & st) : stream_(std::move(s)), st_(st) {}
    ~http_session() { st_.conns.remove(this); }

    void run() {
        net::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->do_read(); });
    }

    // closes the connection from any thread (its pending read then fails and it ends)
    void evict() {
        net::post(stream_.get_executor(), [self = shared_from_this()] {
            beast::error_code ec;
            self->stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
            self->stream_.socket().close(ec);
        });
    }

private:
    beast::tcp_stream                               stream_;
    beast::flat_buffer                              buf_;
    std::optional<http::request_parser<http::string_body>> parser_;
    shared_state &                                  st_;

    void do_read() {
        st_.conns.set_waiting(this, true);
        parser_.emplace();
        parser_->header_limit(8192);
        parser_->body_limit(k_max_upload_bytes);   // the header's Content-Length is checked against this; on_header narrows it
        stream_.expires_after(std::chrono::seconds(40));
        http::async_read_header(stream_, buf_, *parser_,
                                [self = shared_from_this()](beast::error_code ec, size_t) { self->on_header(ec); });
    }

    // a GLB upload may carry 16 MiB, only from the owner (checked before its body is read) and
    // at most two at a time; every other request keeps the 16 KiB body limit
    void on_header(beast::error_code ec) {
        if (ec) return on_read(ec);
        const bool upload = upload_target(std::string(parser_->get().target())) && parser_->get().method() == http::verb::post;
        if (!upload) {
            const auto n = parser_->content_length();
            if (n && *n > 16384) return on_read(http::error::body_limit);
            parser_->body_limit(16384);
        }
        if (upload) {
            if (!host_allowed(parser_->get(), st_.routes.allowed_hosts)) {
                st_.conns.set_waiting(this, false);
                return write(make_http_error(parser_->get(), http::status::forbidden, "host not allowed"), false);
            }
            const auto tok = parser_->get().find("X-Motionbricks-Token");
            if (tok == parser_->get().end() || !st_.routes.owner_token || !st_.routes.owner_token(std::string(tok->value()))) {
                st_.conns.set_waiting(this, false);
                return write(make_http_error(parser_->get(), http::status::forbidden, "only the owner may upload clips (X-Motionbricks-Token)"), false);
            }
            if (st_.uploads.fetch_add(1) >= 2) {
                st_.uploads.fetch_sub(1);
                st_.conns.set_waiting(this, false);
                return write(make_http_error(parser_->get(), http::status::service_unavailable, "two uploads are in progress"), false);
            }
            uploading_ = true;
            parser_->body_limit(k_max_upload_bytes);
            stream_.expires_after(std::chrono::seconds(120));
        }
        http::async_read(stream_, buf_, *parser_, [self = shared_from_this()](beast::error_code ec2, size_t) {
            if (self->uploading_) self->st_.uploads.fetch_sub(1);
            self->uploading_ = false;
            self->on_read(ec2);
        });
    }
    bool uploading_ = false;

    void on_read(beast::error_code ec) {
        st_.conns.set_waiting(this, false);
        if (ec == http::error::end_of_stream) return shutdown();
        if (ec) {
            if (ec == http::error::header_limit || ec == http::error::body_limit || ec.category() == http::make_error_code(http::error::bad_target).category()) {
                http_request dummy;
                return write(make_http_error(dummy, http::status::bad_request, "bad request"), false);
            }
            return shutdown();
        }
        http_request req = parser_->release();
        // DNS rebinding: a page of evil.example whose name now resolves to 127.0.0.1 sends
        // Host: evil.example; only this server's own names are answered
        if (!host_allowed(req, st_.routes.allowed_hosts)) {
            return write(make_http_error(req, http::status::forbidden, "host not allowed"), false);
        }
        if (websocket::is_upgrade(req)) return upgrade(std::move(req));
        std::visit([this](auto && res) {
            const bool ka = res.keep_alive();
            write(std::move(res), ka);
        }, handle_http(req, st_.routes));
    }

    void upgrade(http_request req) {
        if (target_path(std::string(req.target())) != "/api/stream/socket") {
            return write(make_http_error(req, http::status::not_found, "not found"), false);
        }
        if (!origin_allowed(req)) return write(make_http_error(req, http::status::forbidden, "origin not allowed"), false);
        std::string token, why;
        if (!parse_socket_query(std::string(req.target()), token, why)) {
            return write(make_http_error(req, http::status::bad_request, why), false);
        }
        if (!st_.h.try_reserve_peer()) {
            return write(make_http_error(req, http::status::service_unavailable, "too many viewers"), false);
        }
        auto ws = std::make_shared<ws_session>(std::move(stream_), st_.h, st_.limits);
        ws->run(std::move(req), std::move(token));
    }

    template <class Response>
    void write(Response res, bool keep_alive) {
        res.keep_alive(keep_alive);
        auto sp = std::make_shared<Response>(std::move(res));
        stream_.expires_after(std::chrono::seconds(10));
        http::async_write(stream_, *sp, [self = shared_from_this(), sp, keep_alive](beast::error_code ec, size_t) {
            if (ec || !keep_alive) return self->shutdown();
            self->do_read();
        });
    }

    void shutdown() {
        beast::error_code ec;
        stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
        stream_.close();
    }
};

bool connection_table::admit(const std::shared_ptr<http_session> & s) {
    std::shared_ptr<http_session> victim;
    {
        std::lock_guard<std::mutex> lk(mu_);
        if (live_.size() >= cap) {
            victim = take_oldest_waiting();
            if (!victim) return false;
        }
        live_.push_back({s.get(), s, true, ++clock_});
    }
    if (victim) victim->evict();
    return true;
}

void connection_table::remove(const http_session * s) {
    std::lock_guard<std::mutex> lk(mu_);
    live_.remove_if([s](const entry & e) { return e.key == s; });
}

void connection_table::set_waiting(const http_session * s, bool waiting) {
    std::lock_guard<std::mutex> lk(mu_);
    for (entry & e : live_) {
        if (e.key != s) continue;
        if (waiting && !e.waiting) e.since = ++clock_;
        e.waiting = waiting;
        return;
    }
}

std::shared_ptr<http_session> connection_table::take_oldest_waiting() {
    auto best = live_.end();
    for (auto it = live_.begin(); it != live_.end(); ++it) {
        if (it->waiting && (best == live_.end() || it->since < best->since)) best = it;
    }
    if (best == live_.end()) return nullptr;
    std::shared_ptr<http_session> v = best->session.lock();
    live_.erase(best);   // counted as gone now: its descriptor closes on its own strand
    return v;
}

bool connection_table::evict_oldest_waiting() {
    std::shared_ptr<http_session> v;
    {
        std::lock_guard<std::mutex> lk(mu_);
        v = take_oldest_waiting();
    }
    if (v) v->evict();
    return v != nullptr;
}

void connection_table::close_all() {
    std::vector<std::shared_ptr<http_session>> all;
    {
        std::lock_guard<std::mutex> lk(mu_);
        for (const entry & e : live_) {
            if (auto s = e.session.lock()) all.push_back(std::move(s));
        }
        live_.clear();
    }
    for (const auto & s : all) s->evict();
}

// accept() failures that mean "no descriptor or memory now": retried after a pause, not at once
bool is_resource_shortage(const beast::error_code & ec) {
    return ec == net::error::no_descriptors || ec == boost::system::errc::too_many_files_open_in_system ||
           ec == net::error::no_buffer_space || ec == net::error::no_memory;
}

} // namespace

struct server::impl {
    server_options           opt;
    planner &                pl;
    hub                      h;
    shared_state             st;         // before ioc: handlers still queued in it hold sessions, which use st and h when destroyed
    net::io_context          ioc;
    tcp::acceptor            acceptor;
    std::vector<std::thread> threads;
    net::steady_timer        accept_timer;
    std::chrono::milliseconds accept_backoff{0};
    std::atomic<uint64_t>    accept_pauses{0};   // accept() found no descriptor (EMFILE, ENFILE, ...)
    uint16_t                 port = 0;
    bool                     running = false;

    impl(server_options o, planner & p)
        : opt(std::move(o)), pl(p), h(p, opt.hub), st{h, {}, opt.limits, {}}, ioc(std::max(1, opt.io_threads)),
          acceptor(net::make_strand(ioc)), accept_timer(acceptor.get_executor()) {
        st.routes.web_root  = opt.web_root;
        st.routes.meta_json = make_meta_json(pl.styles(), pl.skeleton(), opt.demo);
        st.routes.clips       = opt.hub.clips;
        st.routes.history     = opt.hub.history;
        st.routes.owner_token = [this](const std::string & t) { return h.is_owner_token(t); };
        if (opt.hub.physics) st.routes.mujoco_version = opt.hub.physics->version();
        st.routes.health    = [this] {
            const hub_stats s = h.stats();
            const nlohmann::json j = {{"ok", true},          {"demo", opt.demo},       {"viewers", s.viewers},
                                      {"ticks", s.ticks},    {"slow_ticks", s.slow_ticks}, {"plans", s.plans},
                                      {"plan_failures", s.plan_failures}, {"last_planner_ms", s.last_planner_ms},
                                      {"connections", st.conns.size()}, {"accept_pauses", accept_pauses.load()},
                                      {"physics", opt.hub.physics != nullptr}, {"physics_ticks", s.physics_ticks},
                                      {"physics_last_ms", s.physics_last_ms}, {"physics_max_ms", s.physics_max_ms}};
            return j.dump();
        };
        st.routes.metrics = [this] {
            const hub_stats s = h.stats();
            std::string     m;
            const auto      put = [&](const char * name, const char * type, const char * help, uint64_t v) {
                m += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n" + name + " " +
                     std::to_string(v) + "\n";
            };
            put("motionbricks_serve_peers", "gauge", "WebSocket peer slots held", uint64_t(h.peers()));
            put("motionbricks_serve_viewers", "gauge", "viewers attached to the stream", s.viewers);
            put("motionbricks_serve_frames_sent_total", "counter", "frame messages broadcast", h.frames_sent());
            put("motionbricks_serve_dropped_viewers_total", "counter", "viewers dropped for not keeping up", h.dropped_viewers());
            put("motionbricks_serve_plans_total", "counter", "plans made", s.plans);
            put("motionbricks_serve_plan_failures_total", "counter", "plans that failed", s.plan_failures);
            put("motionbricks_serve_slow_ticks_total", "counter", "ticks later than their deadline", s.slow_ticks);
            put("motionbricks_serve_http_connections", "gauge", "open HTTP connections", st.conns.size());
            put("motionbricks_serve_accept_pauses_total", "counter", "accept() pauses for want of descriptors", accept_pauses.load());
            return m;
        };
    }

    void do_accept() {
        acceptor.async_accept(net::make_strand(ioc), [this](beast::error_code ec, tcp::socket s) {
            if (ec == net::error::operation_aborted || !acceptor.is_open()) return;
            if (is_resource_shortage(ec)) {
                // out of descriptors: retrying at once spun at 120 % CPU and starved /api/health.
                // Free one (the longest-waiting connection) and retry after a pause that doubles
                // up to 1 s while the shortage lasts; open connections keep being served
                ++accept_pauses;
                st.conns.evict_oldest_waiting();
                accept_backoff = std::clamp(accept_backoff * 2, std::chrono::milliseconds(10), std::chrono::milliseconds(1000));
                accept_timer.expires_after(accept_backoff);
                accept_timer.async_wait([this](beast::error_code e) {
                    if (!e) do_accept();
                });
                return;
            }
            accept_backoff = std::chrono::milliseconds(0);
            if (!ec) {
                auto session = std::make_shared<http_session>(std::move(s), st);
                if (st.conns.admit(session)) session->run();   // else dropped: its socket closes here
            }
            do_accept();
        });
    }
};

server::server(server_options opt, planner & p) : p_(std::make_unique<impl>(std::move(opt), p)) {}

server::~server() { stop(); }

void server::start() {
    std::string host;
    uint16_t    port = 0;
    if (!parse_listen(p_->opt.listen, host, port)) throw std::runtime_error("--listen must be HOST:PORT, got '" + p_->opt.listen + "'");
    beast::error_code ec;
    const auto        addr = net::ip::make_address(host, ec);
    if (ec) throw std::runtime_error("--listen: '" + host + "' is not an IP address");
    const tcp::endpoint ep(addr, port);
    p_->acceptor.open(ep.protocol(), ec);
    if (!ec) p_->acceptor.set_option(net::socket_base::reuse_address(true), ec);
    if (!ec) p_->acceptor.bind(ep, ec);
    if (!ec) p_->acceptor.listen(net::socket_base::max_listen_connections, ec);
    if (ec) throw std::runtime_error("cannot listen on " + p_->opt.listen + ": " + ec.message());
    p_->port = p_->acceptor.local_endpoint().port();
    // by default the connection cap stays below the descriptor limit, leaving room for the
    // stream's peers, the model's files and the io machinery, so that EMFILE is the exception
    // (an explicit --max-connections is taken as given; EMFILE then pauses accepting)
    rlimit rl{};
    size_t cap = size_t(p_->opt.max_connections > 0 ? p_->opt.max_connections : k_default_max_connections);
    if (p_->opt.max_connections <= 0 && ::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
        const size_t reserve = 32 + size_t(std::max(0, p_->opt.hub.max_peers));
        cap = std::min(cap, rl.rlim_cur > reserve + 8 ? size_t(rl.rlim_cur) - reserve : size_t(8));
    }
    p_->st.conns.cap = cap;
    p_->st.routes.allowed_hosts = {"localhost", "127.0.0.1", "[::1]"};
    if (host != "0.0.0.0" && host != "::") p_->st.routes.allowed_hosts.push_back(host.find(':') != std::string::npos ? "[" + host + "]" : host);
    for (const std::string & a : p_->opt.allow_hosts) p_->st.routes.allowed_hosts.push_back(a);
    std::fprintf(stderr, "serve: at most %zu HTTP connections\n", cap);
    p_->h.start();
    p_->do_accept();
    for (int i = 0; i < std::max(1, p_->opt.io_threads); ++i) p_->threads.emplace_back([this] { p_->ioc.run(); });
    p_->running = true;
}

uint16_t server::port() const { return p_->port; }

hub & server::get_hub() { return p_->h; }

void server::stop() {
    if (!p_ || !p_->running) return;
    p_->running = false;
    net::post(p_->acceptor.get_executor(), [this] {
        beast::error_code ec;
        p_->acceptor.close(ec);
        p_->accept_timer.cancel();
    });
    // the hub closes every viewer and holds none afterwards: a session kept by it once outlived
    // the io_context and crashed when the hub was destroyed
    p_->h.stop();
    p_->st.conns.close_all();
    // the network runs on until the viewers' close handshakes end (each bounded by the write
    // deadline). One still in its WebSocket handshake is cut off here; its handlers are
    // destroyed with the io_context, before st and h, which they use
    const auto deadline = std::chrono::steady_clock::now() + p_->opt.limits.write_deadline + std::chrono::milliseconds(250);
    while (p_->h.peers() > 0 && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    p_->ioc.stop();
    for (auto & t : p_->threads) t.join();
    p_->threads.clear();
}

} // namespace mb::serve
