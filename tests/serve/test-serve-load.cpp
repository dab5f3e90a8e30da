// load test: the real `motionbricks serve` process with 1 owner + 64 spectators on
// loopback for MB_SERVE_LOAD_SECONDS (default 20; 60 for the figure; any longer
// value is a soak). Reports delivered frames/s per viewer (median, min), reliable-event
// loss (targets revisions every viewer must see without a gap: must be 0), disconnects,
// server CPU (% of one core) and RSS
#include "serve-fixture.h"
#include "ws-client.h"

#include "support/shell.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <sys/wait.h>
#include <thread>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace {

using mb::test::json;

using mb::test::cpu_seconds;
using mb::test::server_process;
using mb::test::slurp;
using mb::test::status_mb;

TEST(ServeLoad, OwnerAnd64Spectators) {
    MB_REQUIRE_SERVE_ASSETS();
    const auto & a       = mb::test::get_serve_assets();
    const char * env     = std::getenv("MB_SERVE_LOAD_SECONDS");
    const int    seconds = env ? std::max(1, std::atoi(env)) : 20;
    const int    n_spec  = 64;
    server_process srv({MB_CLI_PATH, "serve", "--model", a.bundle, "--styles", a.styles_dir, "--listen", "127.0.0.1:0",
                        "--max-peers", "80", "--threads", "1", "--web", a.web},
                       a.dir + "/load-server.log");
    ASSERT_GT(srv.port, 0) << "the server did not start: " << slurp(srv.log);

    // clients on two io threads (the server has its own process)
    std::vector<std::shared_ptr<mb::test::client_loop>> loops = {std::make_shared<mb::test::client_loop>(),
                                                                 std::make_shared<mb::test::client_loop>()};
    mb::test::client_options co;
    co.keep_frames = false;
    mb::test::ws_client owner(loops[0]);
    ASSERT_TRUE(owner.connect(srv.port, co));
    auto h = owner.wait_for("hello", 30);
    ASSERT_TRUE(h && (*h)["owner"] == true);
    std::vector<std::unique_ptr<mb::test::ws_client>> specs;
    for (int i = 0; i < n_spec; ++i) {
        specs.push_back(std::make_unique<mb::test::ws_client>(loops[size_t(i % 2)]));
        ASSERT_TRUE(specs.back()->connect(srv.port, co)) << "spectator " << i << " refused: HTTP " << specs.back()->http_status();
    }

    // the owner walks, turning every 2 s; every viewer pings every 10 s like the reference
    // client (the server's read deadline is 40 s)
    const uint64_t  f_owner0 = owner.frames();
    std::vector<uint64_t> f0;
    for (auto & s : specs) f0.push_back(s->frames());
    const double  cpu0 = cpu_seconds(srv.pid);
    const auto    t0   = std::chrono::steady_clock::now();
    int64_t       seq  = 0;
    for (int step = 0; std::chrono::steady_clock::now() - t0 < std::chrono::seconds(seconds); ++step) {
        if (step % 20 == 0) {
            const double ang = 0.7 * double(step / 20);
            owner.send_json({{"type", "control"}, {"seq", ++seq}, {"style", "walk"}, {"move", {std::sin(ang), std::cos(ang)}},
                             {"facing", {std::sin(ang), std::cos(ang)}}});
        }
        if (step % 100 == 0) {
            owner.send_json({{"type", "ping"}});
            for (auto & s : specs) s->send_json({{"type", "ping"}});
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double cpu  = cpu_seconds(srv.pid) - cpu0;
    const double rss  = status_mb(srv.pid, "VmRSS:"), hwm = status_mb(srv.pid, "VmHWM:");
    std::this_thread::sleep_for(std::chrono::milliseconds(500));   // let in-flight events land

    // frame rates
    std::vector<double> fps;
    int                 disconnected = 0;
    for (size_t i = 0; i < specs.size(); ++i) {
        fps.push_back(double(specs[i]->frames() - f0[i]) / secs);
        disconnected += specs[i]->closed() ? 1 : 0;
    }
    std::sort(fps.begin(), fps.end());
    const double median = fps[fps.size() / 2], lo = fps.front();
    const double owner_fps = double(owner.frames() - f_owner0) / secs;

    // reliable events: every spectator saw every targets revision the owner saw, in order, no gaps
    const std::vector<uint64_t> ref = owner.target_revisions();
    uint64_t lost = 0, gaps = 0;
    for (auto & s : specs) {
        const std::vector<uint64_t> got = s->target_revisions();
        for (size_t k = 1; k < got.size(); ++k) gaps += got[k] != got[k - 1] + 1 && got[k] > got[k - 1] ? 1 : 0;
        for (uint64_t r : ref) {
            if (!got.empty() && r >= got.front() && !std::binary_search(got.begin(), got.end(), r)) ++lost;
        }
    }
    const json health = json::parse(mb::test::http_get(srv.port, "/api/health").body);
    std::printf("load: %d spectators + 1 owner for %.1f s: frames/s per spectator median %.1f (min %.1f, owner %.1f); "
                "targets revisions %zu, reliable events lost %llu, gaps %llu, disconnected %d; server CPU %.1f%% of one core, "
                "RSS %.1f MB (peak %.1f MB); plans %s, slow_ticks %s, stalls n/a\n",
                n_spec, secs, median, lo, owner_fps, ref.size(), (unsigned long long) lost, (unsigned long long) gaps, disconnected,
                100.0 * cpu / secs, rss, hwm, health["plans"].dump().c_str(), health["slow_ticks"].dump().c_str());
    ::testing::Test::RecordProperty("median_fps", std::to_string(median));
    ::testing::Test::RecordProperty("server_cpu_percent", std::to_string(100.0 * cpu / secs));
    ::testing::Test::RecordProperty("server_rss_mb", std::to_string(rss));
    EXPECT_EQ(disconnected, 0);
    EXPECT_EQ(lost, 0u);
    EXPECT_EQ(gaps, 0u);
    EXPECT_GT(ref.size(), 1u) << "no plans during the run";
    EXPECT_GE(median, 20.0) << "frames are delivered far below the 50 Hz tick";
    EXPECT_EQ(health["viewers"].get<int>(), n_spec + 1);
}

} // namespace

namespace {

// the CLI's argument checks and error paths, through the real binary
int run_cli(const std::string & args, std::string & err) {
    const std::string log = ::testing::TempDir() + "mb-serve-cli-" + std::to_string(::getpid()) + ".log";
    const int         st  = std::system((std::string(MB_CLI_PATH) + " " + args + " >/dev/null 2>" + log).c_str());
    err                   = slurp(log);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

TEST(ServeCli, BadUsageAndOfflineDownload) {
    std::string err;
    EXPECT_EQ(run_cli("serve --listen nowhere", err), 2) << err;
    EXPECT_EQ(run_cli("serve --threads 0", err), 2) << err;
    EXPECT_EQ(run_cli("serve --max-peers x", err), 2) << err;
    EXPECT_EQ(run_cli("serve --bogus 1", err), 2) << err;
    EXPECT_EQ(run_cli("serve --model /nonexistent --styles /nonexistent", err), 2) << err;   // no styles
    EXPECT_EQ(run_cli("download --revision a/b", err), 2) << err;
    EXPECT_EQ(run_cli("download --base-url http://example.com --dir /tmp/x", err), 1) << err;
    EXPECT_NE(err.find("refusing plain http"), std::string::npos) << err;
    // a loopback port nobody listens on stands for "offline"
    EXPECT_EQ(run_cli("download --quiet --base-url http://127.0.0.1:1 --dir " + ::testing::TempDir() + "mb-dl-cli", err), 1);
    EXPECT_NE(err.find("cannot connect"), std::string::npos) << err;
}

} // namespace

namespace {

// GET /api/health on a fresh connection with 5 s send/receive timeouts: the status, 0 without an answer
int health_status(uint16_t port, std::string * body = nullptr) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return 0;
    timeval tv{5, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    sockaddr_in a{};
    a.sin_family      = AF_INET;
    a.sin_port        = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    std::string reply;
    if (::connect(fd, reinterpret_cast<sockaddr *>(&a), sizeof(a)) == 0) {
        const std::string req = "GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
        if (::send(fd, req.data(), req.size(), MSG_NOSIGNAL) == ssize_t(req.size())) {
            char    buf[4096];
            ssize_t n = 0;
            while ((n = ::recv(fd, buf, sizeof(buf), 0)) > 0) reply.append(buf, size_t(n));
        }
    }
    ::close(fd);
    if (reply.rfind("HTTP/1.1 ", 0) != 0) return 0;
    if (body) *body = reply.substr(std::min(reply.size(), reply.find("\r\n\r\n") + 4));
    return std::atoi(reply.c_str() + 9);
}

// `n` idle loopback connections that never send a byte (the kernel's backlog accepts them)
std::vector<int> flood(uint16_t port, int n) {
    std::vector<int> fds;
    for (int i = 0; i < n; ++i) {
        const int   fd = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in a{};
        a.sin_family      = AF_INET;
        a.sin_port        = htons(port);
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (fd < 0) break;
        if (::connect(fd, reinterpret_cast<sockaddr *>(&a), sizeof(a)) != 0) {
            ::close(fd);
            break;
        }
        fds.push_back(fd);
    }
    return fds;
}

// issue 19.5: the server under `ulimit -n 64` and 300 idle connections. Before, accept() failed
// with EMFILE in a loop (about 120 % of a core) and /api/health never answered. Now the connection
// cap (fitted to the limit by default) or, past an explicit cap, a paused accept with the oldest
// waiting connection closed, keeps CPU low and health answering. CPU is the server's own time over
// 3 s, bounded at a fifth of a core (the idle server used 0.02 s; the spinning one 1.1 s on a loaded 2-core machine)
void descriptor_flood(const std::vector<std::string> & extra, bool expect_pauses) {
    MB_REQUIRE_SERVE_ASSETS();
    const auto &             a    = mb::test::get_serve_assets();
    std::vector<std::string> args = {MB_CLI_PATH, "serve", "--model", a.bundle, "--styles", a.styles_dir, "--listen",
                                     "127.0.0.1:0", "--threads", "1", "--web", a.web};
    args.insert(args.end(), extra.begin(), extra.end());
    server_process srv(args, a.dir + "/flood-server.log", 64);
    ASSERT_GT(srv.port, 0) << "the server did not start: " << slurp(srv.log);
    ASSERT_EQ(health_status(srv.port), 200);

    std::vector<int> fds = flood(srv.port, 300);
    EXPECT_EQ(fds.size(), 300u);
    std::this_thread::sleep_for(std::chrono::seconds(3));   // the accept loop works through the backlog
    const double cpu0 = cpu_seconds(srv.pid);
    std::this_thread::sleep_for(std::chrono::seconds(3));
    const double cpu = cpu_seconds(srv.pid) - cpu0;
    EXPECT_LT(cpu, 0.6) << "server CPU " << cpu << " s over 3 s under the flood";

    std::string body;
    int         status = 0;
    for (int i = 0; i < 3 && status != 200; ++i) status = health_status(srv.port, &body);
    EXPECT_EQ(status, 200) << "/api/health did not answer under the flood: " << slurp(srv.log);
    if (status == 200) {
        const json h = json::parse(body);
        EXPECT_EQ(h["accept_pauses"].get<uint64_t>() > 0, expect_pauses) << body;
        std::printf("flood: server CPU %.2f s over 3 s, health %s\n", cpu, body.c_str());
    }
    for (int fd : fds) ::close(fd);
}

TEST(ServeProcess, DescriptorLimitFitsTheConnectionCap) {
    descriptor_flood({}, false);
}

TEST(ServeProcess, DescriptorExhaustionPausesAccept) {
    descriptor_flood({"--max-connections", "1000"}, true);
}

} // namespace
