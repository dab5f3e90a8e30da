// a WebSocket test client (Boost.Beast, async on an io_context thread): connects with an
// optional Origin, sends text or binary, collects messages with timeouts, reports the close
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>
#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace mb::test {

using json = nlohmann::json;

// an io_context with one thread, shareable by many clients (the load test)
class client_loop {
public:
    client_loop();
    ~client_loop();
    boost::asio::io_context & ioc() { return ioc_; }

private:
    boost::asio::io_context ioc_;
    boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_;
    std::thread thread_;
};

struct client_options {
    std::string target = "/api/stream/socket";
    std::string origin;                 // sent when non-empty
    std::string host;                   // the Host header ("" = 127.0.0.1:PORT)
    int         rcvbuf = 0;             // SO_RCVBUF before connecting (slow-client tests)
    bool        read   = true;          // false: never read (a stuck viewer)
    bool        keep_frames = true;     // false: frames are only counted (load test)
};

class ws_client {
public:
    explicit ws_client(std::shared_ptr<client_loop> loop = nullptr);
    ~ws_client();

    // true when the WebSocket handshake succeeded; else `http_status` holds the answer (0: no answer)
    bool connect(uint16_t port, const client_options & o = {});
    int  http_status() const { return http_status_; }

    void send(const std::string & text);
    void send_json(const json & j) { send(j.dump()); }
    void send_binary(const std::string & bytes);
    void ws_ping(const std::string & payload);      // a WebSocket-level ping (≤ 125 bytes)
    uint64_t ws_pongs() const { return pongs_.load(); }
    void close();

    // the next message (frames included when keep_frames), or nullopt after `timeout_s`
    std::optional<std::string> next_raw(double timeout_s);
    // the next message of `type` whose fields satisfy `pred` (others are dropped)
    std::optional<json> wait_for(const std::string & type, double timeout_s,
                                 const std::function<bool(const json &)> & pred = {});
    // true once the server closed the connection (within timeout_s)
    bool wait_closed(double timeout_s);
    bool closed() const { return closed_.load(); }
    int  close_code() const { return close_code_.load(); }

    // counters (all messages, including those not kept)
    uint64_t frames() const { return frames_.load(); }
    uint64_t messages() const { return messages_.load(); }
    std::vector<uint64_t> target_revisions();   // every targets.revision received, in order
    std::string dropped();                      // the last non-frame messages wait_for skipped (diagnostics)

private:
    std::shared_ptr<client_loop> loop_;
    std::unique_ptr<boost::beast::websocket::stream<boost::beast::tcp_stream>> ws_;
    boost::beast::flat_buffer buf_;
    client_options            opt_;
    int                       http_status_ = 0;
    std::mutex                mu_;
    std::condition_variable   cv_;
    std::deque<std::string>   inbox_;
    std::vector<uint64_t>     revisions_;
    std::deque<std::string>   dropped_;
    std::deque<std::pair<std::string, bool>> out_;   // (bytes, text)
    bool                      writing_ = false;
    std::atomic<bool>         read_started_{false};
    std::atomic<bool>         closed_{false};
    std::atomic<int>          close_code_{0};
    std::atomic<uint64_t>     frames_{0}, messages_{0}, pongs_{0};

    void do_read();
    void do_write();
    void enqueue(std::string bytes, bool text);
};

// a plain HTTP GET: status, headers and body
struct http_reply {
    int                                status = 0;
    std::vector<std::pair<std::string, std::string>> headers;
    std::string                        body;
    std::string header(const std::string & name) const;
};
// `host`: the Host header ("" = 127.0.0.1:PORT); `origin` sent when non-empty
http_reply http_get(uint16_t port, const std::string & target, const std::string & method = "GET", const std::string & host = "",
                    const std::string & origin = "");

} // namespace mb::test
