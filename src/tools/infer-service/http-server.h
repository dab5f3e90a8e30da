// the service's HTTP/1.1 listener (Boost.Beast): keep-alive connections on io threads, a body
// limit answered with 413, a connection cap answered with 503, and a drain that lets every
// request already read finish before the connections close. What to answer is the handler's.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace mb::infer_service {

struct http_request_view {
    std::string method;                 // "GET", "POST", ...
    std::string path;                   // target without its query
    std::string body;
    std::vector<std::pair<std::string, std::string>> headers;   // names lowercase

    const std::string * header(const std::string & lowercase_name) const;
};

struct http_answer {
    unsigned    status = 200;
    std::string content_type = "application/json";
    std::string body;
    std::vector<std::pair<std::string, std::string>> headers;
};

// answers one request: `reply` must be called exactly once, from any thread
using http_reply   = std::function<void(http_answer)>;
using http_handler = std::function<void(http_request_view &&, http_reply)>;

struct http_options {
    std::string listen          = "127.0.0.1:8000";   // host:port (port 0: any free port)
    int         io_threads      = 2;
    size_t      max_body_bytes  = size_t(4) << 20;
    size_t      max_connections = 256;
    std::chrono::seconds idle_timeout{30};
};

class http_server {
public:
    http_server(http_options opt, http_handler h);
    ~http_server();

    void     start();      // binds and starts the io threads; throws std::runtime_error
    uint16_t port() const;
    // runs f on an io thread (response encoding off the compute thread)
    void     post(std::function<void()> f);
    // requests read and not yet answered in full
    int64_t  active() const;
    size_t   connections() const;
    // from now on every response closes its connection
    void     set_closing();
    // closes the listener and every connection, and joins the io threads
    void     stop();

private:
    struct impl;
    std::unique_ptr<impl> p_;
};

} // namespace mb::infer_service
