// the service's HTTP listener (see http-server.h)
#include "tools/infer-service/http-server.h"

#include "tools/infer-service/v2-codec.h"
#include "tools/serve/server.h"   // parse_listen

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <algorithm>
#include <cctype>
#include <list>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>

namespace mb::infer_service {

namespace beast = boost::beast;
namespace http  = beast::http;
namespace net   = boost::asio;
using tcp       = net::ip::tcp;

const std::string * http_request_view::header(const std::string & name) const {
    for (const auto & h : headers) {
        if (h.first == name) return &h.second;
    }
    return nullptr;
}

namespace {

class session;

struct shared {
    http_options            opt;
    http_handler            handler;
    std::atomic<int64_t>    active{0};
    std::atomic<bool>       closing{false};
    std::mutex              mu;
    std::list<std::weak_ptr<session>> live;
};

class session : public std::enable_shared_from_this<session> {
public:
    session(tcp::socket && s, shared & sh) : stream_(std::move(s)), sh_(sh) {}

    void run() {
        net::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->do_read(); });
    }

    // closes the connection from any thread
    void close() {
        net::post(stream_.get_executor(), [self = shared_from_this()] {
            if (self->busy_) {   // a request is being answered: close after its response
                self->close_after_ = true;
                return;
            }
            beast::error_code ec;
            self->stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
            self->stream_.socket().close(ec);
        });
    }

    // refuses a connection over the cap with 503 and closes it
    void refuse() {
        http_answer a;
        a.status = 503;
        a.body   = error_body("too many connections");
        net::dispatch(stream_.get_executor(), [self = shared_from_this(), a = std::move(a)]() mutable {
            self->close_after_ = true;
            self->write(std::move(a), 11);
        });
    }

private:
    beast::tcp_stream                                   stream_;
    beast::flat_buffer                                  buf_;
    std::optional<http::request_parser<http::string_body>> parser_;
    shared &                                            sh_;
    bool                                                busy_        = false;
    bool                                                close_after_ = false;

    void do_read() {
        parser_.emplace();
        parser_->header_limit(16384);
        parser_->body_limit(sh_.opt.max_body_bytes);
        stream_.expires_after(sh_.opt.idle_timeout);
        http::async_read(stream_, buf_, *parser_, [self = shared_from_this()](beast::error_code ec, size_t) { self->on_read(ec); });
    }

    void on_read(beast::error_code ec) {
        if (ec == http::error::end_of_stream) return shut();
        if (ec == http::error::body_limit) {
            close_after_ = true;
            return answer({413, "application/json",
                           error_body("request body larger than the " + std::to_string(sh_.opt.max_body_bytes) + " bytes allowed"), {}},
                          11);
        }
        if (ec == http::error::header_limit || (ec && ec.category() == http::make_error_code(http::error::bad_target).category())) {
            close_after_ = true;
            return answer({400, "application/json", error_body("malformed HTTP request"), {}}, 11);
        }
        if (ec) return shut();
        http::request<http::string_body> req = parser_->release();
        http_request_view v;
        v.method = std::string(req.method_string());
        const std::string target(req.target());
        v.path = target.substr(0, target.find_first_of("?#"));
        for (const auto & f : req) {
            std::string name(f.name_string());
            for (char & c : name) c = char(std::tolower(static_cast<unsigned char>(c)));
            v.headers.emplace_back(std::move(name), std::string(f.value()));
        }
        v.body = std::move(req.body());
        const unsigned version = req.version();
        if (!req.keep_alive()) close_after_ = true;
        busy_ = true;
        ++sh_.active;
        // the reply may come from any thread: it hops onto this connection's strand
        auto self = shared_from_this();
        sh_.handler(std::move(v), [self, version](http_answer a) {
            net::post(self->stream_.get_executor(), [self, version, a = std::move(a)]() mutable { self->answer(std::move(a), version, true); });
        });
    }

    void answer(http_answer a, unsigned version, bool counted = false) {
        if (counted) counted_ = true;
        write(std::move(a), version);
    }

    void write(http_answer a, unsigned version) {
        auto res = std::make_shared<http::response<http::string_body>>(http::status(a.status), version);
        res->set(http::field::server, "motionbricks");
        res->set(http::field::content_type, a.content_type);
        res->set(http::field::cache_control, "no-store");
        for (const auto & h : a.headers) res->set(h.first, h.second);
        const bool keep = !close_after_ && !sh_.closing.load();
        res->keep_alive(keep);
        res->body() = std::move(a.body);
        res->prepare_payload();
        stream_.expires_after(std::chrono::seconds(30));
        http::async_write(stream_, *res, [self = shared_from_this(), res, keep](beast::error_code ec, size_t) {
            self->busy_ = false;
            if (self->counted_) {
                self->counted_ = false;
                --self->sh_.active;
            }
            if (ec) return self->shut();
            if (!keep || self->close_after_) return self->linger();
            self->do_read();
        });
    }

    // closes after the peer stops sending: a client still sending a body that was refused (413)
    // would otherwise get a reset instead of the answer. Discards at most 64 MiB, for 5 s
    void linger() {
        beast::error_code ec;
        stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
        stream_.expires_after(std::chrono::seconds(5));
        discard_ = std::make_shared<std::vector<char>>(65536);
        do_discard(0);
    }

    void do_discard(size_t seen) {
        stream_.async_read_some(net::buffer(*discard_), [self = shared_from_this(), seen](beast::error_code ec, size_t n) {
            if (ec || seen + n > (size_t(64) << 20)) return self->stream_.close();
            self->do_discard(seen + n);
        });
    }

    std::shared_ptr<std::vector<char>> discard_;

    void shut() {
        beast::error_code ec;
        stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
        stream_.close();
    }

    bool counted_ = false;   // the response being written is of a request counted in `active`
};

} // namespace

struct http_server::impl {
    shared                   sh;
    net::io_context          ioc;
    tcp::acceptor            acceptor;
    std::vector<std::thread> threads;
    uint16_t                 port = 0;
    bool                     running = false;

    impl(http_options o, http_handler h) : ioc(std::max(1, o.io_threads)), acceptor(net::make_strand(ioc)) {
        sh.opt     = std::move(o);
        sh.handler = std::move(h);
    }

    size_t live_count() {
        std::lock_guard<std::mutex> lk(sh.mu);
        sh.live.remove_if([](const std::weak_ptr<session> & w) { return w.expired(); });
        return sh.live.size();
    }

    void do_accept() {
        acceptor.async_accept(net::make_strand(ioc), [this](beast::error_code ec, tcp::socket s) {
            if (ec == net::error::operation_aborted || !acceptor.is_open()) return;
            if (ec) {
                // out of descriptors or memory: pause instead of spinning (as serve does)
                auto t = std::make_shared<net::steady_timer>(acceptor.get_executor(), std::chrono::milliseconds(50));
                t->async_wait([this, t](beast::error_code) { do_accept(); });
                return;
            }
            auto ses = std::make_shared<session>(std::move(s), sh);
            if (live_count() >= sh.opt.max_connections) {
                ses->refuse();
            } else {
                {
                    std::lock_guard<std::mutex> lk(sh.mu);
                    sh.live.push_back(ses);
                }
                ses->run();
            }
            do_accept();
        });
    }
};

http_server::http_server(http_options opt, http_handler h) : p_(std::make_unique<impl>(std::move(opt), std::move(h))) {}

http_server::~http_server() { stop(); }

void http_server::start() {
    std::string host;
    uint16_t    port = 0;
    if (!serve::parse_listen(p_->sh.opt.listen, host, port)) {
        throw std::runtime_error("--listen must be HOST:PORT, got '" + p_->sh.opt.listen + "'");
    }
    beast::error_code ec;
    const auto        addr = net::ip::make_address(host, ec);
    if (ec) throw std::runtime_error("--listen: '" + host + "' is not an IP address");
    const tcp::endpoint ep(addr, port);
    p_->acceptor.open(ep.protocol(), ec);
    if (!ec) p_->acceptor.set_option(net::socket_base::reuse_address(true), ec);
    if (!ec) p_->acceptor.bind(ep, ec);
    if (!ec) p_->acceptor.listen(net::socket_base::max_listen_connections, ec);
    if (ec) throw std::runtime_error("cannot listen on " + p_->sh.opt.listen + ": " + ec.message());
    p_->port = p_->acceptor.local_endpoint().port();
    p_->do_accept();
    for (int i = 0; i < std::max(1, p_->sh.opt.io_threads); ++i) p_->threads.emplace_back([this] { p_->ioc.run(); });
    p_->running = true;
}

uint16_t http_server::port() const { return p_->port; }

void http_server::post(std::function<void()> f) { net::post(p_->ioc, std::move(f)); }

int64_t http_server::active() const { return p_->sh.active.load(); }

size_t http_server::connections() const { return p_->live_count(); }

void http_server::set_closing() { p_->sh.closing = true; }

void http_server::stop() {
    if (!p_ || !p_->running) return;
    p_->running = false;
    p_->sh.closing = true;
    net::post(p_->acceptor.get_executor(), [this] {
        beast::error_code ec;
        p_->acceptor.close(ec);
    });
    std::vector<std::shared_ptr<session>> all;
    {
        std::lock_guard<std::mutex> lk(p_->sh.mu);
        for (auto & w : p_->sh.live) {
            if (auto s = w.lock()) all.push_back(std::move(s));
        }
    }
    for (auto & s : all) s->close();
    // responses being written finish (bounded by their write deadline), then the network stops
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (p_->sh.active.load() > 0 && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    p_->ioc.stop();
    for (auto & t : p_->threads) t.join();
    p_->threads.clear();
}

} // namespace mb::infer_service
