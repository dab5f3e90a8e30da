// the HTTP side: routes (/api/health, /api/meta, /api/stream, the viewer's static files),
// the security headers every response carries, and the WebSocket upgrade checks
#pragma once

#include <boost/beast/http.hpp>

#include <functional>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace mb::serve {

namespace http = boost::beast::http;

class clip_library;
class frame_history;

using http_request  = http::request<http::string_body>;
using http_response = http::response<http::string_body>;
using file_response = http::response<http::file_body>;   // a static file, read in bounded chunks while sent

struct route_context {
    std::string web_root;       // the viewer's files ("" = none)
    std::string meta_json;      // GET /api/meta body
    std::function<std::string()> health;   // GET /api/health body
    std::function<std::string()> metrics;  // GET /metrics body (Prometheus text)
    std::vector<std::string> allowed_hosts; // Host header names answered (lowercase; IPv6 in brackets)
    clip_library *  clips   = nullptr;      // /api/clips, uploads (clip-routes.cpp); none: not found
    frame_history * history = nullptr;      // /api/motion/recent
    std::function<bool(const std::string &)> owner_token;   // is this the owner's token (uploads)
    std::string mujoco_version;             // non-empty: physics is available (/api/stream)
};

// the largest request body: a GLB upload (16 MiB) on its own route, 16 KiB elsewhere
constexpr uint64_t k_max_upload_bytes = uint64_t(16) << 20;
bool upload_target(const std::string & target);

// the clip routes (clip-routes.cpp): /api/clips, /api/motion/recent, POST /api/kimodo/upload;
// nothing when the request is for another route
std::optional<http_response> handle_clip_http(const http_request & req, const route_context & ctx);

// the Host header's name (port dropped, case ignored) is one of `allowed`; false when absent
bool host_allowed(const http_request & req, const std::vector<std::string> & allowed);

// no-store, nosniff, no-referrer and a same-origin CSP
void add_security_headers(http::response_header<> & h);

// a complete in-memory response: the server name, the content type, the security headers
http_response make_response(const http_request & req, http::status status, std::string body, const char * type);

// answers one plain HTTP request (the socket path is handled before this): a small response
// built in memory, or a viewer file streamed from disk (never read whole into memory)
std::variant<http_response, file_response> handle_http(const http_request & req, const route_context & ctx);

// a small JSON error response with the security headers
http_response make_http_error(const http_request & req, http::status status, const std::string & why);

// the Origin check of the socket: absent, or http(s)://<Host> exactly
bool origin_allowed(const http_request & req);

// the socket's query: resume token (32 lowercase hex digits, else ignored) and an optional
// protocol version ("1" or "1.x"); false when the version's major is not 1 or malformed
bool parse_socket_query(const std::string & target, std::string & token, std::string & error);

// the path of a target without its query
std::string target_path(const std::string & target);

} // namespace mb::serve
