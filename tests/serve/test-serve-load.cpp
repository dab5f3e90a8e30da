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
#include <unistd.h>

namespace {

using mb::test::json;

using mb::test::slurp;

// utime + stime in seconds
double cpu_seconds(pid_t pid) {
    std::string s = slurp("/proc/" + std::to_string(pid) + "/stat");
    const size_t rp = s.rfind(')');
    if (rp == std::string::npos) return 0;
    std::istringstream in(s.substr(rp + 2));
    std::string        f;
    std::vector<std::string> v;
    while (in >> f) v.push_back(f);
    if (v.size() < 13) return 0;
    return double(std::stoull(v[11]) + std::stoull(v[12])) / double(sysconf(_SC_CLK_TCK));
}

double status_mb(pid_t pid, const char * key) {
    std::istringstream in(slurp("/proc/" + std::to_string(pid) + "/status"));
    std::string        line;
    while (std::getline(in, line)) {
        if (line.rfind(key, 0) == 0) return std::stod(line.substr(std::strlen(key) + 1)) / 1024.0;
    }
    return 0;
}

struct server_process {
    pid_t       pid = -1;
    uint16_t    port = 0;
    std::string log;
    server_process(const std::vector<std::string> & args, const std::string & logfile) : log(logfile) {
        pid = fork();
        if (pid == 0) {
            FILE * f = std::freopen(logfile.c_str(), "w", stderr);
            (void) f;
            std::vector<char *> argv;
            for (const auto & a : args) argv.push_back(const_cast<char *>(a.c_str()));
            argv.push_back(nullptr);
            execv(argv[0], argv.data());
            _exit(127);
        }
        for (int i = 0; i < 1200 && port == 0; ++i) {   // model loading may take a while on a busy machine
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
            const std::string s = slurp(logfile);
            const size_t      p = s.find("listening on http://127.0.0.1:");
            if (p != std::string::npos) port = uint16_t(std::stoi(s.substr(p + 30)));
            int st = 0;
            if (waitpid(pid, &st, WNOHANG) == pid) {
                pid = -1;
                break;
            }
        }
    }
    ~server_process() {
        if (pid > 0) {
            kill(pid, SIGTERM);
            int st = 0;
            for (int i = 0; i < 100 && waitpid(pid, &st, WNOHANG) == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
            if (waitpid(pid, &st, WNOHANG) == 0) {
                kill(pid, SIGKILL);
                waitpid(pid, &st, 0);
            }
        }
    }
};

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
