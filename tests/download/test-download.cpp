// motionbricks download against a local HTTP server (Beast, in process): good files,
// corrupted bytes, truncated transfers resumed with Range, a redirect, a hostile manifest,
// offline and non-loopback plain http
#include "tools/download/download.h"

#include "format/sha256.h"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <thread>
#include <unistd.h>

namespace {

namespace beast = boost::beast;
namespace http  = beast::http;
namespace net   = boost::asio;
namespace fs    = std::filesystem;
using tcp       = net::ip::tcp;
using namespace mb::download;

// serves files by path; per path a mode: good, corrupt (one byte flipped), truncate (the
// first response stops half-way; Range requests are honoured), redirect
class file_server {
public:
    enum mode { good, corrupt, truncate_once, redirect };
    file_server() : acc_(ioc_, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0)) {
        port_   = acc_.local_endpoint().port();
        thread_ = std::thread([this] { loop(); });
    }
    ~file_server() {
        stop_ = true;
        beast::error_code ec;
        tcp::socket       s(ioc_);
        s.connect(acc_.local_endpoint(), ec);   // wake the accept
        thread_.join();
    }
    void put(const std::string & path, std::string body, mode m = good) {
        std::lock_guard<std::mutex> lk(mu_);
        files_[path] = {std::move(body), m};
    }
    uint16_t port() const { return port_; }
    std::vector<std::string> ranges() {
        std::lock_guard<std::mutex> lk(mu_);
        return ranges_;
    }
    std::string prefix() const { return "/" + std::string(k_release_repo) + "/resolve/" + k_release_revision + "/"; }

private:
    net::io_context ioc_;
    tcp::acceptor   acc_;
    uint16_t        port_ = 0;
    std::atomic<bool> stop_{false};
    std::thread     thread_;
    std::mutex      mu_;
    std::map<std::string, std::pair<std::string, mode>> files_;
    std::vector<std::string> ranges_;

    void loop() {
        while (!stop_) {
            tcp::socket       s(ioc_);
            beast::error_code ec;
            acc_.accept(s, ec);
            if (ec || stop_) continue;
            serve_one(s);
        }
    }
    void serve_one(tcp::socket & s) {
        beast::flat_buffer               buf;
        http::request<http::empty_body>  req;
        beast::error_code                ec;
        http::read(s, buf, req, ec);
        if (ec) return;
        std::string target(req.target());
        std::string body;
        mode        m     = good;
        bool        found = false;
        {
            std::lock_guard<std::mutex> lk(mu_);
            const std::string rel = target.rfind(prefix(), 0) == 0 ? target.substr(prefix().size()) : target;
            auto it = files_.find(rel);
            if (it != files_.end()) {
                body  = it->second.first;
                m     = it->second.second;
                found = true;
                if (m == truncate_once) it->second.second = good;
            }
            ranges_.push_back(std::string(req[http::field::range]));
        }
        if (!found) {
            http::response<http::string_body> res{http::status::not_found, 11};
            res.body() = "no";
            res.prepare_payload();
            http::write(s, res, ec);
            return;
        }
        if (m == redirect) {
            http::response<http::empty_body> res{http::status::found, 11};
            res.set(http::field::location, "/moved" + target);
            res.content_length(0);
            http::write(s, res, ec);
            std::lock_guard<std::mutex> lk(mu_);
            files_["/moved" + target] = {body, good};
            return;
        }
        if (m == corrupt) body[body.size() / 2] ^= 0x55;
        size_t start = 0;
        const std::string range(req[http::field::range]);
        if (!range.empty()) start = std::stoul(range.substr(6));
        std::string head = start ? "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes " + std::to_string(start) + "-" +
                                       std::to_string(body.size() - 1) + "/" + std::to_string(body.size()) + "\r\n"
                                 : "HTTP/1.1 200 OK\r\n";
        head += "Content-Length: " + std::to_string(body.size() - start) + "\r\nConnection: close\r\n\r\n";
        const std::string payload = body.substr(start, m == truncate_once ? (body.size() - start) / 2 : std::string::npos);
        net::write(s, net::buffer(head), ec);
        net::write(s, net::buffer(payload), ec);
        s.shutdown(tcp::socket::shutdown_both, ec);
    }
};

std::string pattern(size_t n, int seed) {
    std::string s(n, '\0');
    uint32_t    x = uint32_t(seed) * 2654435761u + 1;
    for (auto & c : s) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        c = char(x);
    }
    return s;
}

struct dl_fixture : ::testing::Test {
    file_server      srv;
    download_options opt;
    std::string      dir;
    void SetUp() override {
        dir = ::testing::TempDir() + "mb-dl-" + std::to_string(::getpid()) + "-" +
              ::testing::UnitTest::GetInstance()->current_test_info()->name();
        fs::remove_all(dir);
        opt.dir       = dir;
        opt.base_url  = "http://127.0.0.1:" + std::to_string(srv.port());
        opt.progress  = false;
        opt.timeout_s = 10;
    }
    void TearDown() override { fs::remove_all(dir); }
    remote_file add(const std::string & path, const std::string & body, file_server::mode m = file_server::good) {
        srv.put(path, body, m);
        return {path, body.size(), mb::sha256_hex(body)};
    }
    std::string read(const std::string & rel) {
        std::ifstream f(dir + "/" + rel, std::ios::binary);
        return std::string(std::istreambuf_iterator<char>(f), {});
    }
};

TEST_F(dl_fixture, GoodFileIsVerifiedAndSkippedNextTime) {
    const std::string body = pattern(300000, 1);
    const remote_file f    = add("g1-f32/support.gguf", body);
    EXPECT_TRUE(download_file(opt, f));
    EXPECT_EQ(read("g1-f32/support.gguf"), body);
    EXPECT_FALSE(fs::exists(dir + "/g1-f32/support.gguf.part"));
    EXPECT_FALSE(download_file(opt, f));   // already present and verified: nothing transferred
}

TEST_F(dl_fixture, CorruptedFileIsRejectedAndRemoved) {
    const std::string body = pattern(100000, 2);
    remote_file       f    = add("styles/walk.mbstyle", body, file_server::corrupt);
    try {
        download_file(opt, f);
        FAIL() << "a corrupted file was accepted";
    } catch (const download_error & e) {
        EXPECT_NE(std::string(e.what()).find("SHA-256 mismatch"), std::string::npos) << e.what();
    }
    EXPECT_FALSE(fs::exists(dir + "/styles/walk.mbstyle"));
    EXPECT_FALSE(fs::exists(dir + "/styles/walk.mbstyle.part"));
}

TEST_F(dl_fixture, TruncatedTransferResumesWithRange) {
    const std::string body = pattern(500000, 3);
    const remote_file f    = add("g1-f32/root.gguf", body, file_server::truncate_once);
    opt.retries            = 0;
    EXPECT_THROW(download_file(opt, f), download_error);   // the first transfer stops half-way
    ASSERT_TRUE(fs::exists(dir + "/g1-f32/root.gguf.part"));
    EXPECT_EQ(fs::file_size(dir + "/g1-f32/root.gguf.part"), body.size() / 2);
    EXPECT_FALSE(fs::exists(dir + "/g1-f32/root.gguf"));
    EXPECT_TRUE(download_file(opt, f));                    // resumed
    EXPECT_EQ(read("g1-f32/root.gguf"), body);
    const auto r = srv.ranges();
    ASSERT_GE(r.size(), 2u);
    EXPECT_EQ(r.back(), "bytes=" + std::to_string(body.size() / 2) + "-");
}

TEST_F(dl_fixture, TruncatedTransferRetriesAutomatically) {
    const std::string body = pattern(200000, 4);
    const remote_file f    = add("g1-f32/vq-decoder.gguf", body, file_server::truncate_once);
    opt.retries            = 2;
    EXPECT_TRUE(download_file(opt, f));
    EXPECT_EQ(read("g1-f32/vq-decoder.gguf"), body);
}

TEST_F(dl_fixture, WrongSizeAndRedirect) {
    const std::string body = pattern(1000, 5);
    remote_file       f    = add("g1-f32/manifest.json", body, file_server::redirect);
    EXPECT_TRUE(download_file(opt, f));   // followed the redirect
    EXPECT_EQ(read("g1-f32/manifest.json"), body);
    remote_file small = add("styles/idle.mbstyle", body);
    small.bytes       = 500;               // the server sends more than pinned
    EXPECT_THROW(download_file(opt, small), download_error);
    remote_file big = add("styles/run.mbstyle", body);
    big.bytes       = 5000;                // the server sends less than pinned
    opt.retries     = 0;
    EXPECT_THROW(download_file(opt, big), download_error);
    EXPECT_FALSE(fs::exists(dir + "/styles/run.mbstyle"));
}

TEST_F(dl_fixture, ReleaseUsesPinsAndManifest) {
    // a fake release: the bundle files cannot match the real pins, so a manifest that lists
    // them with other hashes is refused before anything is written
    const std::string style = pattern(4096, 6);
    nlohmann::json    m     = {{"format", "motionbricks-gguf-distribution-v1"},
                               {"files", {{{"path", "styles/walk.mbstyle"}, {"bytes", style.size()}, {"sha256", mb::sha256_hex(style)}},
                                          {{"path", "g1-f32/support.gguf"}, {"bytes", 5472}, {"sha256", std::string(64, 'a')}}}}};
    srv.put("MANIFEST.json", m.dump());
    srv.put("styles/walk.mbstyle", style);
    try {
        download_release(opt);
        FAIL() << "a manifest disagreeing with the pins was accepted";
    } catch (const download_error & e) {
        EXPECT_NE(std::string(e.what()).find("pinned"), std::string::npos) << e.what();
    }
    EXPECT_FALSE(fs::exists(dir + "/styles/walk.mbstyle"));
    // an unpinned revision is verified against the manifest alone
    const std::string sup = pattern(5472, 7);
    download_options  o2  = opt;
    o2.revision           = "main";
    nlohmann::json files  = nlohmann::json::array();
    for (const auto & pin : pinned_bundle_files()) {
        const std::string b = pin.path == "g1-f32/support.gguf" ? sup : pattern(100 + pin.path.size(), 8);
        files.push_back({{"path", pin.path}, {"bytes", b.size()}, {"sha256", mb::sha256_hex(b)}});
        srv.put("/" + std::string(k_release_repo) + "/resolve/main/" + pin.path, b);
    }
    files.push_back({{"path", "styles/walk.mbstyle"}, {"bytes", style.size()}, {"sha256", mb::sha256_hex(style)}});
    srv.put("/" + std::string(k_release_repo) + "/resolve/main/MANIFEST.json",
            nlohmann::json({{"format", "motionbricks-gguf-distribution-v1"}, {"files", files}}).dump());
    srv.put("/" + std::string(k_release_repo) + "/resolve/main/styles/walk.mbstyle", style);
    EXPECT_EQ(download_release(o2), 6);
    EXPECT_EQ(read("g1-f32/support.gguf"), sup);
    EXPECT_EQ(read("styles/walk.mbstyle"), style);
    EXPECT_TRUE(fs::exists(dir + "/MANIFEST.json"));
}

TEST(Download, ManifestValidation) {
    const std::string h = std::string(64, 'a');
    auto bad = [&](const nlohmann::json & files) {
        return nlohmann::json({{"format", "motionbricks-gguf-distribution-v1"}, {"files", files}}).dump();
    };
    EXPECT_EQ(parse_distribution_manifest(bad({{{"path", "styles/a.mbstyle"}, {"bytes", 3}, {"sha256", h}}})).size(), 1u);
    for (const char * p : {"../x.gguf", "styles/../../x.gguf", "/etc/x.json", "other/x.gguf", "styles/x.sh", "styles/.x.json",
                                  "styles//x.json", "styles/a b.json"}) {
        EXPECT_THROW(parse_distribution_manifest(bad({{{"path", p}, {"bytes", 3}, {"sha256", h}}})), download_error) << p;
    }
    EXPECT_THROW(parse_distribution_manifest(bad({{{"path", "styles/a.json"}, {"bytes", 3}, {"sha256", "AB"}}})), download_error);
    EXPECT_THROW(parse_distribution_manifest(bad({{{"path", "styles/a.json"}, {"bytes", -3}, {"sha256", h}}})), download_error);
    EXPECT_THROW(parse_distribution_manifest(bad({{{"path", "styles/a.json"}, {"bytes", 3}, {"sha256", h}},
                                                  {{"path", "styles/a.json"}, {"bytes", 3}, {"sha256", h}}})),
                 download_error);
    EXPECT_THROW(parse_distribution_manifest("{\"format\":\"other\",\"files\":[]}"), download_error);
    EXPECT_THROW(parse_distribution_manifest("not json"), download_error);
}

TEST(Download, PinsAndUrls) {
    const auto & pins = pinned_bundle_files();
    ASSERT_EQ(pins.size(), 5u);
    uint64_t total = 0;
    for (const auto & p : pins) total += p.bytes;
    EXPECT_EQ(total, 732633997u);   // "0.73 GB"
    download_options o;
    EXPECT_EQ(file_url(o, "g1-f32/pose.gguf"),
              "https://huggingface.co/LocalAI-io/MotionBricks-G1-GGML/resolve/cc2a47603dbc203a4f18f35dd06ed3611833f506/g1-f32/pose.gguf");
    EXPECT_THROW(check_url_allowed("http://example.com/x"), download_error);
    EXPECT_THROW(check_url_allowed("ftp://127.0.0.1/x"), download_error);
    EXPECT_NO_THROW(check_url_allowed("http://127.0.0.1:9/x"));
    EXPECT_NO_THROW(check_url_allowed("https://huggingface.co/x"));
}

TEST(Download, OfflineIsAClearError) {
    // a loopback port with no listener
    net::io_context ioc;
    tcp::acceptor   a(ioc, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0));
    const uint16_t  port = a.local_endpoint().port();
    a.close();
    download_options o;
    o.base_url = "http://127.0.0.1:" + std::to_string(port);
    o.dir      = ::testing::TempDir() + "mb-dl-offline";
    o.progress = false;
    try {
        fetch_small(o, "MANIFEST.json", 1000);
        FAIL();
    } catch (const download_error & e) {
        EXPECT_NE(std::string(e.what()).find("cannot connect"), std::string::npos) << e.what();
    }
}

} // namespace

namespace {

TEST(Download, TlsToAPlainServerFailsCleanly) {
    file_server      srv;
    download_options o;
    o.base_url  = "https://127.0.0.1:" + std::to_string(srv.port());
    o.progress  = false;
    o.timeout_s = 5;
    EXPECT_THROW(fetch_small(o, "MANIFEST.json", 1000), download_error);
}

TEST(Download, SilentServerTimesOut) {
    // a listener that never answers: the watchdog ends the transfer
    net::io_context ioc;
    tcp::acceptor   a(ioc, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0));
    download_options o;
    o.base_url  = "http://127.0.0.1:" + std::to_string(a.local_endpoint().port());
    o.progress  = false;
    o.timeout_s = 1;
    const auto t0 = std::chrono::steady_clock::now();
    try {
        fetch_small(o, "MANIFEST.json", 1000);
        FAIL();
    } catch (const download_error & e) {
        EXPECT_NE(std::string(e.what()).find("timed out"), std::string::npos) << e.what();
    }
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
}

} // namespace

namespace {

// a one-file HTTPS server with a self-signed certificate for 127.0.0.1 (made by the openssl CLI)
TEST(Download, HttpsWithCertificateAndHostVerification) {
    namespace ssl         = net::ssl;
    const std::string dir = ::testing::TempDir() + "mb-dl-tls-" + std::to_string(::getpid());
    fs::create_directories(dir);
    const std::string gen = "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 "
                            "-keyout " + dir + "/key.pem -out " + dir + "/cert.pem >/dev/null 2>&1";
    if (std::system(gen.c_str()) != 0) GTEST_SKIP() << "skipped: the openssl CLI cannot make a test certificate";
    const std::string body = pattern(70000, 9);
    ssl::context      sctx(ssl::context::tls_server);
    sctx.use_certificate_chain_file(dir + "/cert.pem");
    sctx.use_private_key_file(dir + "/key.pem", ssl::context::pem);
    net::io_context ioc;
    tcp::acceptor   acc(ioc, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0));
    const uint16_t  port = acc.local_endpoint().port();
    std::thread     server([&] {
        for (int i = 0; i < 2; ++i) {   // the untrusted attempt, then the trusted one
            tcp::socket       s(ioc);
            beast::error_code ec;
            acc.accept(s, ec);
            if (ec) return;
            ssl::stream<tcp::socket> tls(std::move(s), sctx);
            tls.handshake(ssl::stream_base::server, ec);
            if (ec) continue;
            beast::flat_buffer              buf;
            http::request<http::empty_body> req;
            http::read(tls, buf, req, ec);
            http::response<http::string_body> res{http::status::ok, 11};
            res.body() = body;
            res.prepare_payload();
            http::write(tls, res, ec);
            tls.shutdown(ec);
        }
    });
    download_options o;
    o.base_url  = "https://127.0.0.1:" + std::to_string(port);
    o.progress  = false;
    o.timeout_s = 10;
    EXPECT_THROW(fetch_small(o, "x.json", 1 << 20), download_error);   // not a trusted certificate
    o.ca_file = dir + "/cert.pem";
    EXPECT_EQ(fetch_small(o, "x.json", 1 << 20), body);
    server.join();
    fs::remove_all(dir);
}

} // namespace
