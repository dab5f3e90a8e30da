// a WebSocket test client
#include "ws-client.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/http.hpp>

#include <future>
#include <strings.h>

namespace mb::test {

namespace beast     = boost::beast;
namespace http      = beast::http;
namespace net       = boost::asio;
namespace websocket = beast::websocket;
using tcp           = net::ip::tcp;

client_loop::client_loop() : work_(net::make_work_guard(ioc_)) {
    thread_ = std::thread([this] { ioc_.run(); });
}

client_loop::~client_loop() {
    work_.reset();
    ioc_.stop();
    thread_.join();
}

ws_client::ws_client(std::shared_ptr<client_loop> loop) : loop_(loop ? std::move(loop) : std::make_shared<client_loop>()) {}

ws_client::~ws_client() {
    // everything touching ws_ runs on the loop; wait for it to drop the stream
    std::promise<void> done;
    auto               f = done.get_future();
    net::post(loop_->ioc(), [this, &done] {
        if (ws_) {
            beast::error_code ec;
            beast::get_lowest_layer(*ws_).socket().close(ec);
        }
        done.set_value();
    });
    f.wait();
    // pending handlers hold no pointer past this point once they see the closed socket
    std::unique_lock<std::mutex> lk(mu_);
    cv_.wait_for(lk, std::chrono::seconds(5), [&] { return closed_.load() || !read_started_; });
    lk.unlock();
    std::promise<void> done2;
    auto               f2 = done2.get_future();
    net::post(loop_->ioc(), [this, &done2] {
        ws_.reset();
        done2.set_value();
    });
    f2.wait();
    // handlers of the aborted operations were queued before this barrier
    for (int i = 0; i < 2; ++i) {
        std::promise<void> barrier;
        auto               fb = barrier.get_future();
        net::post(loop_->ioc(), [&barrier] { barrier.set_value(); });
        fb.wait();
    }
}

bool ws_client::connect(uint16_t port, const client_options & o) {
    opt_ = o;
    std::promise<bool> result;
    auto               fut = result.get_future();
    net::post(loop_->ioc(), [&, port] {
        try {
            ws_ = std::make_unique<websocket::stream<beast::tcp_stream>>(loop_->ioc());
            auto & sock = beast::get_lowest_layer(*ws_).socket();
            sock.open(tcp::v4());
            if (o.rcvbuf > 0) sock.set_option(net::socket_base::receive_buffer_size(o.rcvbuf));
            sock.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), port));
            if (!o.origin.empty()) {
                ws_->set_option(websocket::stream_base::decorator([origin = o.origin](websocket::request_type & r) {
                    r.set(http::field::origin, origin);
                }));
            }
            ws_->read_message_max(16 << 20);
            websocket::response_type res;
            beast::error_code        ec;
            const std::string host = o.host.empty() ? "127.0.0.1:" + std::to_string(port) : o.host;
            ws_->handshake(res, host, o.target, ec);
            http_status_ = res.result_int();
            if (ec) {
                // the refusal's status: the same upgrade request by hand
                http_status_ = 0;
                beast::tcp_stream probe(loop_->ioc());
                probe.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), port));
                http::request<http::empty_body> req{http::verb::get, o.target, 11};
                req.set(http::field::host, host);
                req.set(http::field::upgrade, "websocket");
                req.set(http::field::connection, "Upgrade");
                req.set(http::field::sec_websocket_key, "dGhlIHNhbXBsZSBub25jZQ==");
                req.set(http::field::sec_websocket_version, "13");
                if (!o.origin.empty()) req.set(http::field::origin, o.origin);
                http::write(probe, req);
                beast::flat_buffer                 b;
                http::response<http::string_body> r;
                beast::error_code                  rec;
                http::read(probe, b, r, rec);
                http_status_ = r.result_int();
                probe.socket().close(rec);
                result.set_value(false);
                return;
            }
            ws_->control_callback([this](websocket::frame_type kind, beast::string_view) {
                if (kind == websocket::frame_type::pong) ++pongs_;
            });
            if (o.read) {
                read_started_ = true;
                do_read();
            }
            result.set_value(true);
        } catch (const std::exception &) {
            result.set_value(false);
        }
    });
    return fut.get();
}

void ws_client::do_read() {
    ws_->async_read(buf_, [this](beast::error_code ec, size_t) {
        if (ec) {
            close_code_ = ws_->reason().code;
            {
                std::lock_guard<std::mutex> lk(mu_);
                closed_ = true;
            }
            cv_.notify_all();
            return;
        }
        std::string s = beast::buffers_to_string(buf_.data());
        buf_.consume(buf_.size());
        ++messages_;
        const bool is_frame = s.compare(0, 16, "{\"type\":\"frame\",") == 0;
        if (is_frame) ++frames_;
        {
            std::lock_guard<std::mutex> lk(mu_);
            if (s.compare(0, 18, "{\"type\":\"targets\",") == 0) {
                const json j = json::parse(s, nullptr, false);
                if (j.is_object() && j.contains("revision")) revisions_.push_back(j["revision"].get<uint64_t>());
            }
            if (!is_frame || opt_.keep_frames) inbox_.push_back(std::move(s));
        }
        cv_.notify_all();
        do_read();
    });
}

void ws_client::enqueue(std::string bytes, bool text) {
    net::post(loop_->ioc(), [this, bytes = std::move(bytes), text]() mutable {
        out_.emplace_back(std::move(bytes), text);
        do_write();
    });
}

void ws_client::do_write() {
    if (writing_ || out_.empty() || !ws_ || closed_) return;
    writing_ = true;
    ws_->text(out_.front().second);
    ws_->async_write(net::buffer(out_.front().first), [this](beast::error_code ec, size_t) {
        writing_ = false;
        out_.pop_front();
        if (ec) return;
        do_write();
    });
}

void ws_client::send(const std::string & text) { enqueue(text, true); }

void ws_client::ws_ping(const std::string & payload) {
    net::post(loop_->ioc(), [this, payload] {
        if (!ws_ || closed_) return;
        websocket::ping_data d(payload.c_str());
        ws_->async_ping(d, [](beast::error_code) {});
    });
}
void ws_client::send_binary(const std::string & bytes) { enqueue(bytes, false); }

void ws_client::close() {
    net::post(loop_->ioc(), [this] {
        if (ws_) {
            beast::error_code ec;
            beast::get_lowest_layer(*ws_).socket().close(ec);
        }
    });
}

std::optional<std::string> ws_client::next_raw(double timeout_s) {
    std::unique_lock<std::mutex> lk(mu_);
    cv_.wait_for(lk, std::chrono::duration<double>(timeout_s), [&] { return !inbox_.empty() || closed_; });
    if (inbox_.empty()) return std::nullopt;
    std::string s = std::move(inbox_.front());
    inbox_.pop_front();
    return s;
}

std::optional<json> ws_client::wait_for(const std::string & type, double timeout_s, const std::function<bool(const json &)> & pred) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    for (;;) {
        const double left = std::chrono::duration<double>(end - std::chrono::steady_clock::now()).count();
        if (left <= 0) return std::nullopt;
        auto s = next_raw(left);
        if (!s) return std::nullopt;
        json j = json::parse(*s, nullptr, false);
        if (j.is_discarded() || !j.is_object()) continue;
        if (j.value("type", "") == type && (!pred || pred(j))) return j;
        if (j.value("type", "") != "frame") {
            std::lock_guard<std::mutex> lk(mu_);
            dropped_.push_back(s->substr(0, 200));
            if (dropped_.size() > 30) dropped_.pop_front();
        }
    }
}

std::string ws_client::dropped() {
    std::lock_guard<std::mutex> lk(mu_);
    std::string                 out;
    for (const auto & d : dropped_) out += d + "\n";
    return out + (closed_ ? "(closed, code " + std::to_string(close_code_.load()) + ")" : "(open)");
}

bool ws_client::wait_closed(double timeout_s) {
    std::unique_lock<std::mutex> lk(mu_);
    return cv_.wait_for(lk, std::chrono::duration<double>(timeout_s), [&] { return closed_.load(); });
}

std::vector<uint64_t> ws_client::target_revisions() {
    std::lock_guard<std::mutex> lk(mu_);
    return revisions_;
}

std::string http_reply::header(const std::string & name) const {
    for (const auto & h : headers) {
        if (!strcasecmp(h.first.c_str(), name.c_str())) return h.second;
    }
    return "";
}

http_reply http_get(uint16_t port, const std::string & target, const std::string & method, const std::string & host,
                    const std::string & origin) {
    http_reply        r;
    net::io_context   ioc;
    beast::tcp_stream s(ioc);
    s.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), port));
    http::request<http::empty_body> req{http::string_to_verb(method), target, 11};
    req.set(http::field::host, host.empty() ? "127.0.0.1:" + std::to_string(port) : host);
    if (!origin.empty()) req.set(http::field::origin, origin);
    http::write(s, req);
    beast::flat_buffer buf;
    http::response_parser<http::string_body> p;
    if (method == "HEAD") p.skip(true);
    http::read(s, buf, p);
    const auto & res = p.get();
    r.status = res.result_int();
    for (const auto & f : res) r.headers.emplace_back(std::string(f.name_string()), std::string(f.value()));
    r.body = res.body();
    beast::error_code ec;
    s.socket().shutdown(tcp::socket::shutdown_both, ec);
    return r;
}

} // namespace mb::test
