// one WebSocket viewer: framing limits (text only, UTF-8, 4 KiB messages, 120 messages/s,
// 40 s read deadline, 2 s write deadline), parsing, and the writer draining its queue
#pragma once

#include "tools/serve/http-routes.h"
#include "tools/serve/viewer-queue.h"

#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>

#include <atomic>
#include <chrono>
#include <deque>
#include <memory>

namespace mb::serve {

class hub;

struct session_limits {
    std::chrono::milliseconds read_deadline{40000};
    std::chrono::milliseconds write_deadline{2000};
};

class ws_session : public viewer_link, public std::enable_shared_from_this<ws_session> {
public:
    // the caller has reserved a peer slot; the session releases it when it ends
    ws_session(boost::beast::tcp_stream && stream, hub & h, session_limits limits);
    ~ws_session() override;

    // completes the WebSocket handshake for `req` and attaches to the hub
    void run(http_request req, std::string resume_token);

    void send_reliable(message_ptr m) override;
    void send_reply(message_ptr m) override;
    void send_pose(message_ptr m) override;
    void close(const std::string & why) override;

private:
    using clock = std::chrono::steady_clock;

    boost::beast::websocket::stream<boost::beast::tcp_stream> ws_;
    hub &                     hub_;
    session_limits            limits_;
    viewer_queue              queue_;
    boost::beast::flat_buffer buf_;
    boost::asio::steady_timer write_timer_;
    boost::asio::steady_timer close_timer_;
    std::string               token_;
    uint64_t                  id_       = 0;
    bool                      attached_ = false;
    bool                      writing_  = false;
    bool                      closing_  = false;   // a close frame is (to be) sent
    bool                      dead_     = false;   // the socket is closed
    bool                      close_sent_ = false;
    boost::beast::websocket::close_code close_code_ = boost::beast::websocket::close_code::normal;
    std::string               close_why_;
    std::deque<clock::time_point> recent_;         // arrival times within the last second

    void on_accept(boost::beast::error_code ec);
    void do_read();
    void on_read(boost::beast::error_code ec, size_t n);
    void handle_text(const std::string & text);
    void do_write();
    void start_close(boost::beast::websocket::close_code code, const std::string & why);
    void hard_close();
    void kick();
};

} // namespace mb::serve
