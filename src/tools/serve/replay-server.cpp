// the playback modes' HTTP server (see replay-server.h): one thread, one request per connection,
// the same routes, security headers and Host check as the streaming server for the viewer files
#include "tools/serve/replay-server.h"

#include "format/json-bounded.h"
#include "format/mbreplay.h"
#include "format/regular-file.h"
#include "tools/serve/http-routes.h"
#include "tools/serve/server.h"

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <csignal>
#include <thread>

namespace mb::serve {

namespace {

namespace asio  = boost::asio;
namespace beast = boost::beast;
using tcp       = asio::ip::tcp;

constexpr uint64_t k_max_report = 512ull << 20;

// the report's required shape, checked before the viewer sees it (the viewer's reader checks the rest)
std::string check_report(const std::string & text) {
    const nlohmann::json r = json_parse_bounded(text, {k_max_report, 8, 32u << 20});
    if (!r.is_object() || r.value("format", "") != "motionbricks-open-loop-report-v1") return "not a motionbricks-open-loop-report-v1";
    if (!r.contains("plans") || !r["plans"].is_array() || r["plans"].empty()) return "no plans";
    if (!r.contains("parents") || !r["parents"].is_array()) return "no parents";
    return "";
}

} // namespace

bool serve_playback(const playback_options & opt, std::string & why, void (*on_listening)(uint16_t)) {
    std::string body, type;
    try {
        if (opt.mode == "replay") {
            body = read_regular_file(opt.path, k_mbreplay_max_bytes);
            mbreplay_parse(body, opt.path);
            type = "application/octet-stream";
        } else {
            body = read_regular_file(opt.path, k_max_report);
            if (const std::string e = check_report(body); !e.empty()) throw std::runtime_error(opt.path + ": " + e);
            type = "application/json";
        }
    } catch (const std::exception & e) {
        why = e.what();
        return false;
    }
    std::string host;
    uint16_t    port = 0;
    parse_listen(opt.listen, host, port);
    route_context ctx;
    ctx.web_root      = opt.web_root;
    ctx.meta_json     = std::string("{\"format\":\"motionbricks-playback-meta-v1\",\"mode\":\"") + opt.mode + "\",\"data\":\"/api/" + opt.mode + "\"}";
    ctx.allowed_hosts = {"localhost", "127.0.0.1", "[::1]"};
    if (host != "0.0.0.0" && host != "::") ctx.allowed_hosts.push_back(host.find(':') != std::string::npos ? "[" + host + "]" : host);
    for (const std::string & a : opt.allow_hosts) ctx.allowed_hosts.push_back(a);

    asio::io_context io;
    tcp::acceptor    acceptor(io);
    try {
        const tcp::endpoint ep(asio::ip::make_address(host), port);
        acceptor.open(ep.protocol());
        acceptor.set_option(asio::socket_base::reuse_address(true));
        acceptor.bind(ep);
        acceptor.listen();
    } catch (const std::exception & e) {
        why = opt.listen + ": " + e.what();
        return false;
    }
    on_listening(acceptor.local_endpoint().port());

    const std::string data_path = "/api/" + opt.mode;
    std::function<void()> accept = [&] {
        acceptor.async_accept([&](beast::error_code ec, tcp::socket sock) {
            if (ec) return;   // closed: stopping
            beast::tcp_stream stream(std::move(sock));
            stream.expires_after(std::chrono::seconds(10));
            beast::flat_buffer                    buf;
            http::request_parser<http::string_body> parser;
            parser.body_limit(64 * 1024);
            beast::error_code                     rec;
            http::read(stream, buf, parser, rec);
            if (!rec) {
                http_request req = parser.release();
                if (!host_allowed(req, ctx.allowed_hosts)) {
                    auto res = make_http_error(req, http::status::forbidden, "host not allowed");
                    http::write(stream, res, rec);
                } else if (target_path(std::string(req.target())) == data_path && req.method() == http::verb::get) {
                    http_response res{http::status::ok, req.version()};
                    res.set(http::field::content_type, type);
                    add_security_headers(res.base());
                    res.body() = body;
                    res.keep_alive(false);
                    res.prepare_payload();
                    http::write(stream, res, rec);
                } else {
                    std::visit([&](auto && res) {
                        res.keep_alive(false);
                        http::write(stream, res, rec);
                    }, handle_http(req, ctx));
                }
            }
            stream.socket().shutdown(tcp::socket::shutdown_both, rec);
            accept();
        });
    };
    accept();
    // the network on its own thread; this one waits for the signal (the calling thread is the one
    // a process-directed signal reaches first: a library's thread, as OpenBLAS starts at load,
    // has it unblocked and would take the default action)
    std::thread net([&] { io.run(); });
    sigset_t    set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    int sig = 0;
    sigwait(&set, &sig);
    asio::post(io, [&] { acceptor.close(); });
    net.join();
    return true;
}

} // namespace mb::serve
