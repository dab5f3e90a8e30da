// motionbricks download: HTTPS client (Boost.Beast + OpenSSL), pinned hashes, atomic
// resumable writes. Synchronous I/O; a watchdog shuts the socket down when no byte moves
// for the timeout, so a dead network never hangs the command
#include "tools/download/download.h"

#include "format/json-bounded.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <nlohmann/json.hpp>
#include <openssl/evp.h>

#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

namespace mb::download {

const char * const k_release_repo     = "LocalAI-io/MotionBricks-G1-GGML";
const char * const k_release_revision = "cc2a47603dbc203a4f18f35dd06ed3611833f506";
const char * const k_release_base_url = "https://huggingface.co";

namespace beast = boost::beast;
namespace http  = beast::http;
namespace net   = boost::asio;
namespace ssl   = net::ssl;
namespace fs    = std::filesystem;
using tcp       = net::ip::tcp;

const std::vector<remote_file> & pinned_bundle_files() {
    // reference-runtime §4 (the release's MANIFEST.json as a pinned third-party package copies it)
    static const std::vector<remote_file> k_files = {
        {"g1-f32/manifest.json", 1101, "35321e8f760316e9a0e73619e23af4089deeedcc8efe7e7266fddbdb8d3c3cfc"},
        {"g1-f32/support.gguf", 5472, "5d41cae4bc494e612ef19e25f599351aafbc9ef1cb46d4ac3f1e42bb7ab07200"},
        {"g1-f32/vq-decoder.gguf", 49753440, "6a1114b6906b07fab9deb18d602b4e731e1b5794318b1643ffd0605692f62d1e"},
        {"g1-f32/root.gguf", 136504000, "46268d77e5c15449d68a39ce6ec7145e9eb457c5114d5dca934bd3ab539b29db"},
        {"g1-f32/pose.gguf", 546369984, "6db82e5a67a355052f283bbcab104b71ecfc333dc8d9017c3812eb6f9650756e"},
    };
    return k_files;
}

namespace {

constexpr int      k_max_redirects = 5;
constexpr uint64_t k_max_file      = uint64_t(4) << 30;   // no distribution file is near this

struct url_parts {
    bool        tls = true;
    std::string host, port, target;
};

bool is_loopback(const std::string & host) {
    return host == "127.0.0.1" || host == "::1" || host == "[::1]" || host == "localhost";
}

url_parts parse_url(const std::string & u) {
    url_parts   p;
    std::string rest;
    if (u.rfind("https://", 0) == 0) {
        p.tls = true;
        rest  = u.substr(8);
    } else if (u.rfind("http://", 0) == 0) {
        p.tls = false;
        rest  = u.substr(7);
    } else {
        throw download_error("unsupported URL '" + u + "' (https:// only)");
    }
    const size_t slash = rest.find('/');
    std::string  hp    = rest.substr(0, slash);
    p.target           = slash == std::string::npos ? "/" : rest.substr(slash);
    if (hp.find('@') != std::string::npos) throw download_error("URLs with credentials are not accepted: '" + u + "'");
    size_t colon = hp.rfind(':');
    if (!hp.empty() && hp[0] == '[') {
        const size_t close = hp.find(']');
        if (close == std::string::npos) throw download_error("bad URL '" + u + "'");
        p.host = hp.substr(1, close - 1);
        colon  = hp.find(':', close);
    } else {
        p.host = hp.substr(0, colon);
    }
    p.port = colon == std::string::npos ? (p.tls ? "443" : "80") : hp.substr(colon + 1);
    if (p.host.empty() || p.port.empty()) throw download_error("bad URL '" + u + "'");
    for (char c : p.port) {
        if (c < '0' || c > '9') throw download_error("bad port in URL '" + u + "'");
    }
    return p;
}

// shuts a socket down when nothing moved for `timeout`
class watchdog {
public:
    watchdog(int fd, std::chrono::seconds timeout) : fd_(fd), timeout_(timeout), last_(now_ms()) {
        thread_ = std::thread([this] { run(); });
    }
    ~watchdog() {
        {
            std::lock_guard<std::mutex> lk(mu_);
            stop_ = true;
        }
        cv_.notify_all();
        thread_.join();
    }
    void touch() { last_.store(now_ms()); }
    bool fired() const { return fired_.load(); }

private:
    int                     fd_;
    std::chrono::seconds    timeout_;
    std::atomic<int64_t>    last_;
    std::atomic<bool>       fired_{false};
    std::mutex              mu_;
    std::condition_variable cv_;
    bool                    stop_ = false;
    std::thread             thread_;

    static int64_t now_ms() {
        return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
    }
    void run() {
        std::unique_lock<std::mutex> lk(mu_);
        while (!stop_) {
            cv_.wait_for(lk, std::chrono::milliseconds(200));
            if (!stop_ && now_ms() - last_.load() > std::chrono::duration_cast<std::chrono::milliseconds>(timeout_).count()) {
                fired_ = true;
                ::shutdown(fd_, SHUT_RDWR);
                return;
            }
        }
    }
};

struct response_info {
    unsigned                status = 0;
    std::string             location;
    std::optional<uint64_t> length;        // Content-Length
    uint64_t                range_start = 0;   // 206: first byte of the range
};

using data_fn = std::function<void(const char *, size_t)>;

// one GET on a connected stream: headers into `info`, the body (2xx only) into `sink`
template <class Stream>
void do_get(Stream & s, watchdog & wd, const url_parts & u, uint64_t offset, response_info & info, const data_fn & sink) {
    http::request<http::empty_body> req{http::verb::get, u.target, 11};
    req.set(http::field::host, u.host);
    req.set(http::field::user_agent, "motionbricks-download/1");
    req.set(http::field::accept_encoding, "identity");
    req.set(http::field::connection, "close");
    if (offset > 0) req.set(http::field::range, "bytes=" + std::to_string(offset) + "-");
    http::write(s, req);
    wd.touch();
    beast::flat_buffer                      buf;
    http::response_parser<http::buffer_body> p;
    p.body_limit(k_max_file);
    p.header_limit(64 * 1024);
    http::read_header(s, buf, p);
    wd.touch();
    const auto & h = p.get();
    info.status    = h.result_int();
    if (h.find(http::field::location) != h.end()) info.location = std::string(h[http::field::location]);
    if (p.content_length()) info.length = *p.content_length();
    if (info.status == 206) {
        const std::string cr(h[http::field::content_range]);   // "bytes A-B/T"
        unsigned long long a = 0, b = 0;
        if (std::sscanf(cr.c_str(), "bytes %llu-%llu", &a, &b) != 2) throw download_error("bad Content-Range '" + cr + "'");
        info.range_start = a;
    }
    if (info.status != 200 && info.status != 206) return;
    std::vector<char> chunk(size_t(1) << 16);
    while (!p.is_done()) {
        p.get().body().data = chunk.data();
        p.get().body().size = chunk.size();
        beast::error_code ec;
        http::read(s, buf, p, ec);
        if (ec == http::error::need_buffer) ec = {};
        // bytes that arrived before a broken connection are kept (they are resumed from)
        const size_t n = chunk.size() - p.get().body().size;
        wd.touch();
        if (n) sink(chunk.data(), n);
        if (ec) throw beast::system_error(ec);
    }
}

// GET with redirects (each hop checked against the https/loopback rule)
response_info http_get(const download_options & o, std::string url, uint64_t offset, const data_fn & sink) {
    for (int hop = 0; hop <= k_max_redirects; ++hop) {
        check_url_allowed(url);
        const url_parts u = parse_url(url);
        response_info   info;
        net::io_context ioc;
        try {
            tcp::resolver resolver(ioc);
            beast::error_code rec;
            const auto results = resolver.resolve(u.host, u.port, rec);
            if (rec) throw download_error("cannot resolve " + u.host + " (offline?): " + rec.message());
            if (u.tls) {
                ssl::context ctx(ssl::context::tls_client);
                ctx.set_default_verify_paths();
                if (!o.ca_file.empty()) ctx.load_verify_file(o.ca_file);
                ctx.set_verify_mode(ssl::verify_peer);
                ssl::stream<tcp::socket> s(ioc, ctx);
                if (!SSL_set_tlsext_host_name(s.native_handle(), u.host.c_str())) throw download_error("cannot set TLS SNI");
                s.set_verify_callback(ssl::host_name_verification(u.host));
                beast::error_code ec;
                net::connect(s.next_layer(), results, ec);
                if (ec) throw download_error("cannot connect to " + u.host + ":" + u.port + " (offline?): " + ec.message());
                watchdog wd(s.next_layer().native_handle(), std::chrono::seconds(o.timeout_s));
                try {
                    s.handshake(ssl::stream_base::client);
                    do_get(s, wd, u, offset, info, sink);
                } catch (const beast::system_error &) {
                    if (wd.fired()) throw download_error("no data for " + std::to_string(o.timeout_s) + " s: timed out");
                    throw;
                }
                beast::error_code ignore;
                s.next_layer().close(ignore);
            } else {
                tcp::socket s(ioc);
                beast::error_code ec;
                net::connect(s, results, ec);
                if (ec) throw download_error("cannot connect to " + u.host + ":" + u.port + " (offline?): " + ec.message());
                watchdog wd(s.native_handle(), std::chrono::seconds(o.timeout_s));
                try {
                    do_get(s, wd, u, offset, info, sink);
                } catch (const beast::system_error &) {
                    if (wd.fired()) throw download_error("no data for " + std::to_string(o.timeout_s) + " s: timed out");
                    throw;
                }
                beast::error_code ignore;
                s.shutdown(tcp::socket::shutdown_both, ignore);
            }
        } catch (const beast::system_error & e) {
            throw download_error(url + ": " + e.code().message());
        }
        if (info.status >= 300 && info.status < 400 && !info.location.empty()) {
            // relative redirects keep the scheme and host
            if (info.location.rfind("http", 0) != 0) {
                const url_parts base = parse_url(url);
                std::string     host = base.host.find(':') != std::string::npos ? "[" + base.host + "]" : base.host;
                info.location = (base.tls ? "https://" : "http://") + host + ":" + base.port +
                                (info.location[0] == '/' ? "" : "/") + info.location;
            }
            url = info.location;
            continue;
        }
        if (info.status == 416) return info;
        if (info.status != 200 && info.status != 206) {
            throw download_error(url + ": HTTP " + std::to_string(info.status));
        }
        return info;
    }
    throw download_error("too many redirects for " + url);
}

class sha256_ctx {
public:
    sha256_ctx() : ctx_(EVP_MD_CTX_new()) {
        if (!ctx_ || EVP_DigestInit_ex(ctx_, EVP_sha256(), nullptr) != 1) throw download_error("SHA-256 unavailable");
    }
    ~sha256_ctx() { EVP_MD_CTX_free(ctx_); }
    sha256_ctx(const sha256_ctx &)             = delete;
    sha256_ctx & operator=(const sha256_ctx &) = delete;
    void update(const void * p, size_t n) { EVP_DigestUpdate(ctx_, p, n); }
    std::string hex() {
        unsigned char d[32];
        unsigned      n = 0;
        EVP_DigestFinal_ex(ctx_, d, &n);
        static const char k[] = "0123456789abcdef";
        std::string       s;
        for (unsigned i = 0; i < n; ++i) {
            s += k[d[i] >> 4];
            s += k[d[i] & 15];
        }
        return s;
    }

private:
    EVP_MD_CTX * ctx_;
};

// hashes a whole file into `h`; `size` receives its length
bool hash_file(const std::string & path, sha256_ctx & h, uint64_t & size) {
    std::FILE * f = std::fopen(path.c_str(), "rb");
    if (!f) return false;
    std::vector<char> buf(size_t(1) << 20);
    size = 0;
    size_t n;
    while ((n = std::fread(buf.data(), 1, buf.size(), f)) > 0) {
        h.update(buf.data(), n);
        size += n;
    }
    const bool ok = !std::ferror(f);
    std::fclose(f);
    return ok;
}

bool verified(const std::string & path, const remote_file & f) {
    std::error_code ec;
    if (!fs::is_regular_file(path, ec) || fs::file_size(path, ec) != f.bytes) return false;
    sha256_ctx h;
    uint64_t   n = 0;
    return hash_file(path, h, n) && n == f.bytes && h.hex() == f.sha256;
}

class progress_bar {
public:
    progress_bar(bool on, std::string name, uint64_t total) : on_(on), name_(std::move(name)), total_(total) {}
    void update(uint64_t done, bool final = false) {
        if (!on_) return;
        const auto now = std::chrono::steady_clock::now();
        if (!final && now - last_ < std::chrono::milliseconds(tty_ ? 100 : 2000)) return;
        last_ = now;
        const double secs = std::chrono::duration<double>(now - start_).count();
        const double pct  = total_ ? 100.0 * double(done) / double(total_) : 100.0;
        const int    w    = 30;
        const int    fill = int(pct / 100.0 * w);
        std::string  bar(size_t(fill), '#');
        bar += std::string(size_t(w - fill), '.');
        std::fprintf(stderr, "%s  %-24s [%s] %5.1f%% %8.1f / %.1f MB %6.1f MB/s%s", tty_ ? "\r" : "", name_.c_str(), bar.c_str(), pct,
                     double(done) / 1e6, double(total_) / 1e6, secs > 0 ? double(done - first_) / 1e6 / secs : 0.0,
                     final || !tty_ ? "\n" : "");
        std::fflush(stderr);
    }
    void start(uint64_t first) { first_ = first; }

private:
    bool        on_;
    bool        tty_ = ::isatty(2) == 1;
    std::string name_;
    uint64_t    total_, first_ = 0;
    std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now(), last_{};
};

bool valid_hex64(const std::string & s) {
    if (s.size() != 64) return false;
    for (char c : s) {
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
    }
    return true;
}

bool safe_relative_path(const std::string & p) {
    if (p.empty() || p.size() > 200 || p[0] == '/') return false;
    size_t i = 0;
    while (i <= p.size()) {
        size_t j = p.find('/', i);
        if (j == std::string::npos) j = p.size();
        const std::string seg = p.substr(i, j - i);
        if (seg.empty() || seg[0] == '.') return false;
        for (char c : seg) {
            if (!(std::isalnum((unsigned char) c) || c == '-' || c == '_' || c == '.')) return false;
        }
        i = j + 1;
    }
    return true;
}

} // namespace

std::string file_url(const download_options & o, const std::string & path) {
    std::string base = o.base_url;
    while (!base.empty() && base.back() == '/') base.pop_back();
    return base + "/" + o.repo + "/resolve/" + o.revision + "/" + path;
}

void check_url_allowed(const std::string & url) {
    const url_parts u = parse_url(url);
    if (!u.tls && !is_loopback(u.host)) throw download_error("refusing plain http to '" + u.host + "' (https only; http is allowed for loopback test servers)");
}

std::string fetch_small(const download_options & o, const std::string & path, size_t limit) {
    std::string body;
    http_get(o, file_url(o, path), 0, [&](const char * p, size_t n) {
        if (body.size() + n > limit) throw download_error(path + " is larger than " + std::to_string(limit) + " bytes");
        body.append(p, n);
    });
    return body;
}

std::vector<remote_file> parse_distribution_manifest(const std::string & text) {
    // at most 1000 files (checked below) of 4 values each, 3 levels deep (object > files > file),
    // within fetch_small's 1 MiB
    static constexpr json_bounds k_bounds = {.max_bytes = size_t(1) << 20, .max_depth = 3, .max_values = 8192};
    nlohmann::json j;
    try {
        j = json_parse_bounded(text, k_bounds);
    } catch (const json_input_error & e) {
        throw download_error(std::string("MANIFEST.json: ") + e.what());
    }
    if (!j.is_object()) throw download_error("MANIFEST.json must be an object");
    if (!j.contains("format") || j["format"] != "motionbricks-gguf-distribution-v1") {
        throw download_error("MANIFEST.json: format must be motionbricks-gguf-distribution-v1");
    }
    if (!j.contains("files") || !j["files"].is_array() || j["files"].empty() || j["files"].size() > 1000) {
        throw download_error("MANIFEST.json: files must be a non-empty array");
    }
    std::vector<remote_file> out;
    std::set<std::string>    seen;
    for (const auto & e : j["files"]) {
        if (!e.is_object() || !e.contains("path") || !e["path"].is_string() || !e.contains("bytes") ||
            !e["bytes"].is_number_unsigned() || !e.contains("sha256") || !e["sha256"].is_string()) {
            throw download_error("MANIFEST.json: each file needs path, bytes and sha256");
        }
        remote_file f{e["path"].get<std::string>(), e["bytes"].get<uint64_t>(), e["sha256"].get<std::string>()};
        const bool under = f.path.rfind("g1-f32/", 0) == 0 || f.path.rfind("styles/", 0) == 0;
        const auto ends  = [&](const char * s) {
            const size_t n = std::strlen(s);
            return f.path.size() > n && f.path.compare(f.path.size() - n, n, s) == 0;
        };
        if (!under || !safe_relative_path(f.path) || !(ends(".gguf") || ends(".mbstyle") || ends(".json"))) {
            throw download_error("MANIFEST.json: path '" + f.path.substr(0, 80) + "' is not allowed");
        }
        if (!valid_hex64(f.sha256)) throw download_error("MANIFEST.json: bad sha256 for " + f.path);
        if (f.bytes == 0 || f.bytes > k_max_file) throw download_error("MANIFEST.json: bad size for " + f.path);
        if (!seen.insert(f.path).second) throw download_error("MANIFEST.json: " + f.path + " listed twice");
        out.push_back(f);
    }
    return out;
}

bool download_file(const download_options & o, const remote_file & f) {
    if (!safe_relative_path(f.path)) throw download_error("bad path '" + f.path + "'");
    const std::string dest = (fs::path(o.dir) / f.path).string();
    const std::string part = dest + ".part";
    std::error_code   ec;
    fs::create_directories(fs::path(dest).parent_path(), ec);
    if (ec) throw download_error("cannot create " + fs::path(dest).parent_path().string() + ": " + ec.message());
    if (verified(dest, f)) {
        if (o.progress) std::fprintf(stderr, "  %-24s already present, verified\n", f.path.c_str());
        return false;
    }
    for (int attempt = 0;; ++attempt) {
        // resume: hash what the .part already holds
        auto     hp   = std::make_unique<sha256_ctx>();
        uint64_t have = 0;
        if (fs::exists(part, ec) && (!hash_file(part, *hp, have) || have > f.bytes)) {
            fs::remove(part, ec);
            hp   = std::make_unique<sha256_ctx>();
            have = 0;
        }
        sha256_ctx & h = *hp;
        progress_bar bar(o.progress, f.path, f.bytes);
        bar.start(have);
        std::FILE * out = nullptr;
        auto        close_out = [&] {
            if (out) std::fclose(out);
            out = nullptr;
        };
        uint64_t written = have;
        try {
            if (have < f.bytes) {
                out = std::fopen(part.c_str(), have ? "ab" : "wb");
                if (!out) throw download_error("cannot write " + part + ": " + std::strerror(errno));
                const response_info info = http_get(o, file_url(o, f.path), have, [&](const char * p, size_t n) {
                    if (written + n > f.bytes) throw download_error(f.path + ": the server sent more than the pinned " + std::to_string(f.bytes) + " bytes");
                    if (std::fwrite(p, 1, n, out) != n) throw download_error("cannot write " + part + ": " + std::strerror(errno));
                    h.update(p, n);
                    written += n;
                    bar.update(written);
                });
                if (info.status == 416) {
                    throw download_error(f.path + ": the server rejected the resume range");
                }
                if (have > 0 && info.status == 200) {
                    // the server ignored the range and sent everything: start over
                    close_out();
                    fs::remove(part, ec);
                    if (attempt < o.retries) continue;
                    throw download_error(f.path + ": the server does not support resuming");
                }
                if (info.status == 206 && info.range_start != have) throw download_error(f.path + ": the server resumed at the wrong offset");
                if (std::fflush(out) != 0 || ::fsync(::fileno(out)) != 0) throw download_error("cannot write " + part + ": " + std::strerror(errno));
                close_out();
            }
            bar.update(written, true);
            if (written != f.bytes) {
                throw download_error(f.path + ": transfer ended at " + std::to_string(written) + " of " + std::to_string(f.bytes) + " bytes (truncated)");
            }
            const std::string got = h.hex();
            if (got != f.sha256) {
                fs::remove(part, ec);   // a complete file with the wrong bytes is useless for resuming
                throw download_error(f.path + ": SHA-256 mismatch (expected " + f.sha256 + ", got " + got + "); the file was removed");
            }
            fs::rename(part, dest, ec);
            if (ec) throw download_error("cannot rename " + part + ": " + ec.message());
            return true;
        } catch (const download_error & e) {
            close_out();
            const std::string what = e.what();
            // a broken transfer that made progress is resumed; wrong bytes are not retried
            const bool fatal = what.find("SHA-256") != std::string::npos || what.find("more than") != std::string::npos ||
                               what.find("cannot write") != std::string::npos;
            const bool retry = attempt < o.retries && written > have && !fatal;
            if (!retry) throw;
            if (o.progress) std::fprintf(stderr, "  %s: %s; resuming\n", f.path.c_str(), what.c_str());
        }
    }
}

int download_release(const download_options & o) {
    const bool pinned_rev = o.revision == k_release_revision;
    std::fprintf(stderr, "motionbricks download: %s at %s from %s into %s\n", o.repo.c_str(), o.revision.c_str(), o.base_url.c_str(),
                 o.dir.c_str());
    // the release manifest: no pinned hash is known for it, so it is trusted as fetched over TLS
    // from the immutable revision; the bundle files are checked against the pins regardless
    const std::string              text     = fetch_small(o, "MANIFEST.json", size_t(1) << 20);
    const std::vector<remote_file> manifest = parse_distribution_manifest(text);
    std::vector<remote_file>       files;
    for (const remote_file & pin : pinned_bundle_files()) {
        const remote_file * listed = nullptr;
        for (const auto & m : manifest) {
            if (m.path == pin.path) listed = &m;
        }
        if (pinned_rev) {
            if (listed && (listed->bytes != pin.bytes || listed->sha256 != pin.sha256)) {
                throw download_error("MANIFEST.json disagrees with the pinned hash of " + pin.path + "; refusing");
            }
            files.push_back(pin);
        } else {
            if (!listed) throw download_error("MANIFEST.json at an unpinned revision does not list " + pin.path);
            std::fprintf(stderr, "motionbricks download: warning: revision %s is not the pinned one; %s is verified against MANIFEST.json only\n",
                         o.revision.c_str(), pin.path.c_str());
            files.push_back(*listed);
        }
    }
    for (const auto & m : manifest) {
        bool is_pinned = false;
        for (const auto & pin : pinned_bundle_files()) is_pinned = is_pinned || pin.path == m.path;
        if (!is_pinned) files.push_back(m);
    }
    int written = 0;
    for (const auto & f : files) written += download_file(o, f) ? 1 : 0;
    // keep the manifest beside the files (atomically)
    const std::string mpath = (fs::path(o.dir) / "MANIFEST.json").string();
    {
        std::FILE * out = std::fopen((mpath + ".part").c_str(), "wb");
        if (!out || std::fwrite(text.data(), 1, text.size(), out) != text.size() || std::fclose(out) != 0) {
            throw download_error("cannot write " + mpath);
        }
        std::error_code ec;
        fs::rename(mpath + ".part", mpath, ec);
        if (ec) throw download_error("cannot write " + mpath + ": " + ec.message());
    }
    std::fprintf(stderr, "motionbricks download: %zu files verified (%d transferred) in %s\n", files.size(), written, o.dir.c_str());
    return written;
}

} // namespace mb::download
