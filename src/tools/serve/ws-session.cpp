// one WebSocket viewer
#include "tools/serve/ws-session.h"

#include "tools/serve/hub.h"
#include "tools/serve/protocol.h"

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>

namespace mb::serve {

namespace beast     = boost::beast;
namespace net       = boost::asio;
namespace websocket = beast::websocket;

ws_session::ws_session(beast::tcp_stream && stream, hub & h, session_limits limits)
    : ws_(std::move(stream)), hub_(h), limits_(limits), write_timer_(ws_.get_executor()), close_timer_(ws_.get_executor()) {}

ws_session::~ws_session() { hub_.release_peer(); }

void ws_session::run(http_request req, std::string resume_token) {
    token_ = std::move(resume_token);
    // the WebSocket layer owns the timeouts from here (tcp_stream's are switched off)
    beast::get_lowest_layer(ws_).expires_never();
    websocket::stream_base::timeout t{};
    t.handshake_timeout = std::chrono::seconds(10);
    t.idle_timeout      = limits_.read_deadline;   // no message (or control frame) for this long: closed
    t.keep_alive_pings  = false;
    ws_.set_option(t);
    ws_.read_message_max(k_max_message);
    ws_.auto_fragment(false);
    ws_.set_option(websocket::stream_base::decorator([](websocket::response_type & res) {
        res.set(http::field::server, "motionbricks");
        add_security_headers(res.base());
    }));
    auto self = shared_from_this();
    auto r    = std::make_shared<http_request>(std::move(req));
    ws_.async_accept(*r, [self, r](beast::error_code ec) { self->on_accept(ec); });
}

void ws_session::on_accept(beast::error_code ec) {
    if (ec) {
        hard_close();
        return;
    }
    id_       = hub_.attach(shared_from_this(), token_);
    attached_ = true;
    do_read();
}

void ws_session::do_read() {
    ws_.async_read(buf_, [self = shared_from_this()](beast::error_code ec, size_t n) { self->on_read(ec, n); });
}

void ws_session::on_read(beast::error_code ec, size_t) {
    if (ec) {
        // closed by the peer, a framing violation (binary is checked below; bad UTF-8,
        // oversize and control-frame limits are Beast's), the read deadline or a hard close
        hard_close();
        if (attached_) {
            attached_ = false;
            hub_.detach(id_);
        }
        return;
    }
    if (!ws_.got_text()) {
        buf_.consume(buf_.size());
        start_close(websocket::close_code::unknown_data, "text frames only");
        do_read();
        return;
    }
    const auto now = clock::now();
    recent_.push_back(now);
    while (!recent_.empty() && now - recent_.front() >= std::chrono::seconds(1)) recent_.pop_front();
    if (recent_.size() > size_t(k_max_rate)) {
        buf_.consume(buf_.size());
        start_close(websocket::close_code::policy_error, "more than 120 messages per second");
        do_read();
        return;
    }
    const std::string text = beast::buffers_to_string(buf_.data());
    buf_.consume(buf_.size());
    if (!closing_) handle_text(text);
    do_read();
}

void ws_session::handle_text(const std::string & text) {
    const parse_result r = parse_client_message(text);
    if (r.kind == parse_result::error) {
        send_reply(std::make_shared<const std::string>(make_error(r.why)));
        return;
    }
    if (r.msg.type == msg_type::ping) {
        send_reply(std::make_shared<const std::string>(make_pong()));
        return;
    }
    hub_.post_message(id_, r.msg, r.kind == parse_result::rejected ? r.why : std::string());
}

// ---- writing (any thread → the session's strand) --------------------------------------

void ws_session::send_reliable(message_ptr m) {
    if (!queue_.push_reliable(std::move(m))) {
        // a viewer that cannot keep up with reliable events is dropped
        hub_.count_dropped_viewer();
        net::post(ws_.get_executor(), [self = shared_from_this()] { self->hard_close(); });
        return;
    }
    kick();
}

void ws_session::send_reply(message_ptr m) {
    if (!queue_.push_reliable(std::move(m), true)) {
        hub_.count_dropped_viewer();
        net::post(ws_.get_executor(), [self = shared_from_this()] { self->hard_close(); });
        return;
    }
    kick();
}

void ws_session::send_pose(message_ptr m) {
    queue_.set_pose(std::move(m));
    kick();
}

void ws_session::close(const std::string & why) {
    net::post(ws_.get_executor(), [self = shared_from_this(), why] { self->start_close(websocket::close_code::going_away, why); });
}

void ws_session::kick() {
    net::post(ws_.get_executor(), [self = shared_from_this()] { self->do_write(); });
}

void ws_session::do_write() {
    if (writing_ || dead_ || closing_) return;
    message_ptr m = queue_.pop();
    if (!m) return;
    writing_ = true;
    ws_.text(true);
    write_timer_.expires_after(limits_.write_deadline);
    write_timer_.async_wait([self = shared_from_this()](beast::error_code ec) {
        if (ec) return;
        self->hub_.count_dropped_viewer();   // the write deadline passed: the viewer is gone or stuck
        self->hard_close();
    });
    ws_.async_write(net::buffer(*m), [self = shared_from_this(), m](beast::error_code ec, size_t) {
        self->write_timer_.cancel();
        self->writing_ = false;
        if (ec) {
            self->hard_close();
            return;
        }
        if (self->closing_) {
            self->start_close(self->close_code_, self->close_why_);
            return;
        }
        self->do_write();
    });
}

void ws_session::start_close(websocket::close_code code, const std::string & why) {
    if (dead_ || close_sent_) return;
    if (!closing_) {
        closing_    = true;
        close_code_ = code;
        close_why_  = why;
    }
    if (writing_) return;   // the close frame waits for the pending write; its completion comes back here
    close_sent_ = true;
    websocket::close_reason reason(close_code_);
    reason.reason = close_why_.substr(0, 120);
    close_timer_.expires_after(limits_.write_deadline);
    close_timer_.async_wait([self = shared_from_this()](beast::error_code ec) {
        if (!ec) self->hard_close();
    });
    // the pending read completes when the peer answers; the timer bounds the wait
    ws_.async_close(reason, [self = shared_from_this()](beast::error_code) {});
}

void ws_session::hard_close() {
    if (dead_) return;
    dead_ = true;
    beast::error_code ec;
    beast::get_lowest_layer(ws_).socket().shutdown(net::ip::tcp::socket::shutdown_both, ec);
    beast::get_lowest_layer(ws_).socket().close(ec);
    write_timer_.cancel();
    close_timer_.cancel();
}

} // namespace mb::serve
