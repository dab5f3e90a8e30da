// motionbricks serve: listener and HTTP connections
#include "tools/serve/server.h"

#include "tools/serve/http-routes.h"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <nlohmann/json.hpp>

#include <charconv>
#include <optional>
#include <stdexcept>
#include <thread>

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

struct shared_state {
    hub &          h;
    route_context  routes;
    session_limits limits;
};

class http_session : public std::enable_shared_from_this<http_session> {
public:
    http_session(tcp::socket && s, shared_state & st) : stream_(std::move(s)), st_(st) {}

    void run() {
        net::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->do_read(); });
    }

private:
    beast::tcp_stream                               stream_;
    beast::flat_buffer                              buf_;
    std::optional<http::request_parser<http::string_body>> parser_;
    shared_state &                                  st_;

    void do_read() {
        parser_.emplace();
        parser_->header_limit(8192);
        parser_->body_limit(16384);
        stream_.expires_after(std::chrono::seconds(40));
        http::async_read(stream_, buf_, *parser_,
                         [self = shared_from_this()](beast::error_code ec, size_t) { self->on_read(ec); });
    }

    void on_read(beast::error_code ec) {
        if (ec == http::error::end_of_stream) return shutdown();
        if (ec) {
            if (ec == http::error::header_limit || ec == http::error::body_limit || ec.category() == http::make_error_code(http::error::bad_target).category()) {
                http_request dummy;
                return write(make_http_error(dummy, http::status::bad_request, "bad request"), false);
            }
            return shutdown();
        }
        http_request req = parser_->release();
        if (websocket::is_upgrade(req)) return upgrade(std::move(req));
        http_response res = handle_http(req, st_.routes);
        const bool    ka  = res.keep_alive();
        write(std::move(res), ka);
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

    void write(http_response res, bool keep_alive) {
        res.keep_alive(keep_alive);
        auto sp = std::make_shared<http_response>(std::move(res));
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

} // namespace

struct server::impl {
    server_options           opt;
    planner &                pl;
    hub                      h;
    net::io_context          ioc;
    tcp::acceptor            acceptor;
    shared_state             st;
    std::vector<std::thread> threads;
    uint16_t                 port = 0;
    bool                     running = false;

    impl(server_options o, planner & p)
        : opt(std::move(o)), pl(p), h(p, opt.hub), ioc(std::max(1, opt.io_threads)), acceptor(net::make_strand(ioc)),
          st{h, {}, opt.limits} {
        st.routes.web_root  = opt.web_root;
        st.routes.meta_json = make_meta_json(pl.styles(), pl.skeleton(), opt.demo);
        st.routes.health    = [this] {
            const hub_stats s = h.stats();
            const nlohmann::json j = {{"ok", true},          {"demo", opt.demo},       {"viewers", s.viewers},
                                      {"ticks", s.ticks},    {"slow_ticks", s.slow_ticks}, {"plans", s.plans},
                                      {"plan_failures", s.plan_failures}, {"last_planner_ms", s.last_planner_ms}};
            return j.dump();
        };
    }

    void do_accept() {
        acceptor.async_accept(net::make_strand(ioc), [this](beast::error_code ec, tcp::socket s) {
            if (ec == net::error::operation_aborted) return;
            if (!ec) std::make_shared<http_session>(std::move(s), st)->run();
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
    });
    p_->h.stop();   // closes every viewer
    // let the close frames go out, then stop the network
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    p_->ioc.stop();
    for (auto & t : p_->threads) t.join();
    p_->threads.clear();
}

} // namespace mb::serve
