// the HTTP side of the server
#include "tools/serve/http-routes.h"

#include "tools/serve/protocol.h"
#include "tools/serve/static-files.h"

#include <nlohmann/json.hpp>

#include <cctype>
#include <sstream>

namespace mb::serve {

namespace beast = boost::beast;

namespace {

const char * k_csp = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; "
                     "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; "
                     "form-action 'self'; frame-ancestors 'none'";

bool is_hex32(const std::string & s) {
    if (s.size() != 32) return false;
    for (char c : s) {
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
    }
    return true;
}

} // namespace

void add_security_headers(http::response_header<> & h) {
    h.set(http::field::cache_control, "no-store");
    h.set("X-Content-Type-Options", "nosniff");
    h.set("Referrer-Policy", "no-referrer");
    h.set("Content-Security-Policy", k_csp);
    h.set("X-Frame-Options", "DENY");
}

http_response make_response(const http_request & req, http::status status, std::string body, const char * type) {
    http_response res{status, req.version()};
    res.set(http::field::server, "motionbricks");
    res.set(http::field::content_type, type);
    add_security_headers(res.base());
    res.keep_alive(req.keep_alive());
    res.body() = std::move(body);
    res.prepare_payload();
    return res;
}

std::string target_path(const std::string & target) {
    return target.substr(0, target.find_first_of("?#"));
}

http_response make_http_error(const http_request & req, http::status status, const std::string & why) {
    const nlohmann::json j = {{"error", why}};
    return make_response(req, status, j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), "application/json");
}

bool origin_allowed(const http_request & req) {
    const auto it = req.find(http::field::origin);
    if (it == req.end()) return true;
    const std::string origin(it->value());
    const auto        h = req.find(http::field::host);
    if (h == req.end() || h->value().empty()) return false;
    const std::string host(h->value());
    return origin == "http://" + host || origin == "https://" + host;
}

bool host_allowed(const http_request & req, const std::vector<std::string> & allowed) {
    const auto it = req.find(http::field::host);
    if (it == req.end()) return false;
    std::string host(it->value());
    // "[v6]:port", "[v6]", "name:port", "name"
    const size_t colon = host.rfind(':');
    if (colon != std::string::npos && host.find(']', colon) == std::string::npos) host.resize(colon);
    for (char & c : host) c = char(std::tolower(static_cast<unsigned char>(c)));
    if (host.empty()) return false;
    for (const std::string & a : allowed) {
        if (host == a) return true;
    }
    return false;
}

bool parse_socket_query(const std::string & target, std::string & token, std::string & error) {
    token.clear();
    const size_t q = target.find('?');
    if (q == std::string::npos) return true;
    std::stringstream ss(target.substr(q + 1));
    std::string       kv;
    while (std::getline(ss, kv, '&')) {
        const size_t      eq = kv.find('=');
        const std::string k  = kv.substr(0, eq);
        const std::string v  = eq == std::string::npos ? "" : kv.substr(eq + 1);
        if (k == "resume") {
            if (is_hex32(v)) token = v;
        } else if (k == "version") {
            const std::string major = v.substr(0, v.find('.'));
            if (major != std::to_string(k_protocol_version)) {
                error = "unsupported protocol version '" + v.substr(0, 16) + "' (this server speaks 1)";
                return false;
            }
        }
    }
    return true;
}

std::variant<http_response, file_response> handle_http(const http_request & req, const route_context & ctx) {
    const std::string path = target_path(std::string(req.target()));
    const bool        get  = req.method() == http::verb::get || req.method() == http::verb::head;
    // the reference's pre-stream endpoints are gone while the stream hub runs
    static const char * k_gone[] = {"/api/session", "/api/plan", "/api/kimodo/start", "/api/kimodo/finish", "/api/live-physics"};
    for (const char * g : k_gone) {
        if (path == g) return make_http_error(req, http::status::gone, "replaced by the stream protocol (/api/stream)");
    }
    if (path == "/metrics" && ctx.metrics) {
        if (!get) return make_http_error(req, http::status::method_not_allowed, "method not allowed");
        return make_response(req, http::status::ok, ctx.metrics(), "text/plain; version=0.0.4; charset=utf-8");
    }
    if (path.rfind("/api/", 0) == 0 || path == "/api") {
        if (auto r = handle_clip_http(req, ctx)) return std::move(*r);
        if (!get) return make_http_error(req, http::status::method_not_allowed, "method not allowed");
        if (path == "/api/health") return make_response(req, http::status::ok, ctx.health ? ctx.health() : "{\"ok\":true}", "application/json");
        if (path == "/api/meta") return make_response(req, http::status::ok, ctx.meta_json, "application/json");
        if (path == "/api/stream") {
            const nlohmann::json j = {{"available", true}, {"version", k_protocol_version}, {"physics", !ctx.mujoco_version.empty()},
                                      {"mujoco_version", ctx.mujoco_version}};
            return make_response(req, http::status::ok, j.dump(), "application/json");
        }
        if (path == "/api/stream/socket") return make_http_error(req, http::status::upgrade_required, "WebSocket upgrade required");
        return make_http_error(req, http::status::not_found, "not found");
    }
    if (!get) return make_http_error(req, http::status::method_not_allowed, "method not allowed");
    if (ctx.web_root.empty()) return make_http_error(req, http::status::not_found, "no viewer files are installed");
    const static_file f = resolve_static(ctx.web_root, std::string(req.target()));
    if (f.status != 200) {
        return make_http_error(req, http::status(f.status), f.status == 403 ? "forbidden" : f.status == 400 ? "bad path" : "not found");
    }
    // streamed: 20 clients that never read a large file held 1.37 GB when it was read whole
    beast::error_code ec;
    http::file_body::value_type body;
    body.open(f.path.c_str(), beast::file_mode::scan, ec);
    if (ec) return make_http_error(req, http::status::internal_server_error, "cannot read file");
    file_response res{http::status::ok, req.version()};
    res.set(http::field::server, "motionbricks");
    res.set(http::field::content_type, f.content_type);
    add_security_headers(res.base());
    res.keep_alive(req.keep_alive());
    const uint64_t n = body.size();
    if (req.method() != http::verb::head) res.body() = std::move(body);
    res.content_length(n);
    return res;
}

} // namespace mb::serve
