// motionbricks serve, end to end on loopback: HTTP routes and headers, static-file safety,
// and the WebSocket animation protocol v1 — every message type, every ack state, every
// limit and malformed input — through a Beast WebSocket client against an in-process server
// running a small random-weight bundle with the demo styles
#include "serve-fixture.h"
#include "ws-client.h"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <netinet/in.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

namespace {

using mb::test::json;
using mb::test::test_server;
using mb::test::ws_client;

constexpr double k_wait = 20.0;   // seconds; generous for a loaded CI machine

bool is_hex32(const std::string & s) {
    if (s.size() != 32) return false;
    for (char c : s) {
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
    }
    return true;
}

json hello_of(ws_client & c) {
    auto h = c.wait_for("hello", k_wait);
    EXPECT_TRUE(h.has_value()) << "no hello";
    return h ? *h : json();
}

// an owner connection with its hello read
struct owner_conn {
    ws_client c;
    json      hello;
    int64_t   seq = 0;
    explicit owner_conn(uint16_t port) {
        EXPECT_TRUE(c.connect(port));
        hello = hello_of(c);
        EXPECT_TRUE(hello.value("owner", false));
    }
    int64_t send(json j) {
        j["seq"] = ++seq;
        c.send_json(j);
        return seq;
    }
    std::optional<json> ack(int64_t s, const std::string & state, double t = k_wait) {
        auto a = c.wait_for("ack", t, [&](const json & a) { return a["seq"] == s && a["state"] == state; });
        if (!a) ADD_FAILURE() << "no ack " << state << " for seq " << s << "; skipped:\n" << c.dropped();
        return a;
    }
    // every (seq, state) in any order (acks of different commands may interleave)
    bool acks(std::vector<std::pair<int64_t, std::string>> want, double t = k_wait) {
        while (!want.empty()) {
            auto a = c.wait_for("ack", t, [&](const json & a) {
                for (const auto & w : want) {
                    if (a["seq"] == w.first && a["state"] == w.second) return true;
                }
                return false;
            });
            if (!a) {
                ADD_FAILURE() << "missing ack " << want.front().second << " for seq " << want.front().first;
                return false;
            }
            for (size_t i = 0; i < want.size(); ++i) {
                if ((*a)["seq"] == want[i].first && (*a)["state"] == want[i].second) want.erase(want.begin() + long(i));
            }
        }
        return true;
    }
};

void expect_security_headers(const mb::test::http_reply & r) {
    EXPECT_EQ(r.header("Cache-Control"), "no-store");
    EXPECT_EQ(r.header("X-Content-Type-Options"), "nosniff");
    EXPECT_EQ(r.header("Referrer-Policy"), "no-referrer");
    EXPECT_NE(r.header("Content-Security-Policy").find("default-src 'self'"), std::string::npos);
}

TEST(ServeHttp, ApiRoutesAndSecurityHeaders) {
    MB_REQUIRE_SERVE_ASSETS();
    test_server s;
    auto        h = mb::test::http_get(s.port(), "/api/health");
    EXPECT_EQ(h.status, 200);
    expect_security_headers(h);
    EXPECT_TRUE(json::parse(h.body)["ok"].get<bool>());

    auto m = mb::test::http_get(s.port(), "/api/meta");
    ASSERT_EQ(m.status, 200);
    expect_security_headers(m);
    const json meta = json::parse(m.body);
    EXPECT_EQ(meta["fps"], 30);
    ASSERT_EQ(meta["joints"].size(), 34u);
    EXPECT_EQ(meta["joints"][0]["parent"], -1);
    EXPECT_EQ(meta["joints"][0]["position"].size(), 3u);
    EXPECT_TRUE(meta["joints"][1]["name"].is_string());
    ASSERT_EQ(meta["styles"].size(), mb::test::get_serve_assets().styles.size());
    bool walk = false;
    for (const auto & st : meta["styles"]) walk = walk || (st["name"] == "walk" && st["speed"].get<double>() == 1.0);
    EXPECT_TRUE(walk);
    EXPECT_TRUE(meta.contains("demo"));

    auto d = mb::test::http_get(s.port(), "/api/stream");
    ASSERT_EQ(d.status, 200);
    const json disc = json::parse(d.body);
    EXPECT_EQ(disc["available"], true);
    EXPECT_EQ(disc["version"], 1);
    EXPECT_EQ(disc["physics"], false);

    for (const char * path : {"/api/nope", "/missing.js", "/api/stream/socket"}) {
        auto r = mb::test::http_get(s.port(), path);
        EXPECT_GE(r.status, 400) << path;
        expect_security_headers(r);
    }
    EXPECT_EQ(mb::test::http_get(s.port(), "/api/plan", "POST").status, 410);
    EXPECT_EQ(mb::test::http_get(s.port(), "/api/meta", "POST").status, 405);
}

TEST(ServeHttp, StaticFilesAreConfinedToTheWebRoot) {
    MB_REQUIRE_SERVE_ASSETS();
    test_server s;
    auto        idx = mb::test::http_get(s.port(), "/");
    ASSERT_EQ(idx.status, 200);
    EXPECT_EQ(idx.header("Content-Type"), "text/html; charset=utf-8");
    EXPECT_NE(idx.body.find("viewer"), std::string::npos);
    expect_security_headers(idx);
    auto js = mb::test::http_get(s.port(), "/vendor/three.module.js");
    ASSERT_EQ(js.status, 200);
    EXPECT_EQ(js.header("Content-Type"), "text/javascript; charset=utf-8");
    auto head = mb::test::http_get(s.port(), "/app.js", "HEAD");
    EXPECT_EQ(head.status, 200);
    EXPECT_TRUE(head.body.empty());
    for (const char * bad : {"/../secret.txt", "/%2e%2e/secret.txt", "/vendor/../../secret.txt", "/escape.txt", "/.hidden",
                             "/%2E%2E%2Fsecret.txt", "/app.js%00.html", "/..%5csecret.txt", "/%zz"}) {
        auto r = mb::test::http_get(s.port(), bad);
        EXPECT_NE(r.status, 200) << bad;
        EXPECT_EQ(r.body.find("outside the web root"), std::string::npos) << bad;
        expect_security_headers(r);
    }
}

// issue 19.13b: the whole web/ tree was served (node_modules, package.json, scripts/)
TEST(ServeHttp, OnlyTheViewersFilesAreServed) {
    MB_REQUIRE_SERVE_ASSETS();
    namespace fs = std::filesystem;
    const std::string web = mb::test::get_serve_assets().dir + "/web-tree";
    fs::create_directories(web + "/vendor");
    fs::create_directories(web + "/node_modules/three");
    fs::create_directories(web + "/scripts");
    for (const char * f : {"/index.html", "/app.js", "/style.css", "/favicon.svg", "/vendor/three.module.js", "/package.json",
                           "/package-lock.json", "/README.md", "/scripts/vendor.mjs", "/scripts/x.js", "/node_modules/three/index.js",
                           "/vendor/VERSION"}) {
        std::ofstream(web + f) << "x";
    }
    mb::serve::server_options opt;
    opt.web_root = web;
    test_server s(opt);
    for (const char * ok : {"/", "/index.html", "/app.js", "/style.css", "/favicon.svg", "/vendor/three.module.js"}) {
        EXPECT_EQ(mb::test::http_get(s.port(), ok).status, 200) << ok;
    }
    for (const char * no : {"/package.json", "/package-lock.json", "/README.md", "/scripts/vendor.mjs", "/scripts/x.js",
                            "/node_modules/three/index.js", "/vendor/VERSION", "/scripts/", "/vendor/"}) {
        EXPECT_EQ(mb::test::http_get(s.port(), no).status, 404) << no;
    }
}

// issue 19.13c: each static response read the whole file into memory (20 clients that never
// read a large file held 1.37 GB). 20 such clients of a 32 MiB file now cost the server process
// (this one) far less than one copy of the file
TEST(ServeHttp, StaticFilesAreStreamed) {
    MB_REQUIRE_SERVE_ASSETS();
    namespace fs = std::filesystem;
    const std::string web = mb::test::get_serve_assets().dir + "/web-big";
    fs::create_directories(web + "/vendor");
    std::ofstream(web + "/index.html") << "x";
    {
        std::ofstream big(web + "/vendor/big.js", std::ios::binary);
        const std::string mib(size_t(1) << 20, 'x');
        for (int i = 0; i < 32; ++i) big << mib;
    }
    mb::serve::server_options opt;
    opt.web_root = web;
    test_server      s(opt);
    const double     rss0 = mb::test::status_mb(::getpid(), "VmRSS:");
    std::vector<int> fds;
    for (int i = 0; i < 20; ++i) {
        const int fd  = ::socket(AF_INET, SOCK_STREAM, 0);
        int       buf = 4096;
        ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
        sockaddr_in a{};
        a.sin_family      = AF_INET;
        a.sin_port        = htons(s.port());
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr *>(&a), sizeof(a)), 0);
        const std::string req = "GET /vendor/big.js HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
        ASSERT_EQ(::send(fd, req.data(), req.size(), 0), ssize_t(req.size()));
        fds.push_back(fd);   // never read
    }
    std::this_thread::sleep_for(std::chrono::seconds(2));
    const double grew = mb::test::status_mb(::getpid(), "VmRSS:") - rss0;
    EXPECT_LT(grew, 24.0) << "RSS grew by " << grew << " MB with 20 stalled downloads of a 32 MiB file";
    std::printf("20 stalled downloads of 32 MiB: RSS +%.1f MB\n", grew);
    for (int fd : fds) ::close(fd);
    EXPECT_EQ(mb::test::http_get(s.port(), "/vendor/big.js", "HEAD").header("Content-Length"), std::to_string(32u << 20));
    EXPECT_EQ(mb::test::http_get(s.port(), "/vendor/big.js").body.size(), size_t(32) << 20);
}

// GET /metrics (Prometheus text): peers, frames sent, dropped viewers
TEST(ServeHttp, MetricsCountPeersAndFrames) {
    MB_REQUIRE_SERVE_ASSETS();
    test_server s;
    ws_client   viewer;
    ASSERT_TRUE(viewer.connect(s.port()));
    for (int i = 0; i < 5; ++i) ASSERT_TRUE(viewer.wait_for("frame", k_wait).has_value());
    const auto r = mb::test::http_get(s.port(), "/metrics");
    ASSERT_EQ(r.status, 200);
    const auto value = [&](const std::string & name) {
        const size_t at = r.body.find("\n" + name + " ");
        EXPECT_NE(at, std::string::npos) << name << "\n" << r.body;
        return at == std::string::npos ? -1.0 : std::stod(r.body.substr(at + name.size() + 2));
    };
    EXPECT_EQ(value("motionbricks_serve_peers"), 1.0);
    EXPECT_GE(value("motionbricks_serve_frames_sent_total"), 5.0);
    EXPECT_EQ(value("motionbricks_serve_dropped_viewers_total"), 0.0);
    EXPECT_NE(r.body.find("# TYPE motionbricks_serve_frames_sent_total counter"), std::string::npos);
    EXPECT_EQ(mb::test::http_get(s.port(), "/metrics", "POST").status, 405);
}

TEST(ServeStream, HelloSnapshotAndFrames) {
    MB_REQUIRE_SERVE_ASSETS();
    test_server s;
    ws_client   owner;
    ASSERT_TRUE(owner.connect(s.port()));
    const json h = hello_of(owner);
    EXPECT_EQ(h["version"], 1);
    EXPECT_EQ(h["owner"], true);
    EXPECT_TRUE(is_hex32(h.value("token", ""))) << h.dump();
    EXPECT_EQ(h["last_seq"], 0);
    EXPECT_EQ(h["physics_available"], false);
    EXPECT_DOUBLE_EQ(h["buffer_seconds"].get<double>(), 0.15);
    ASSERT_TRUE(owner.wait_for("targets", k_wait).has_value());

    // frames: layout, unit quaternions, tick/time consistent, ticks increasing
    int64_t last_tick = -1;
    for (int i = 0; i < 20; ++i) {
        auto f = owner.wait_for("frame", k_wait);
        ASSERT_TRUE(f.has_value());
        ASSERT_EQ((*f)["root"].size(), 3u);
        ASSERT_EQ((*f)["rotations"].size(), 136u);
        for (int j = 0; j < 34; ++j) {
            double n = 0;
            for (int c = 0; c < 4; ++c) n += std::pow((*f)["rotations"][size_t(j * 4 + c)].get<double>(), 2);
            EXPECT_NEAR(std::sqrt(n), 1.0, 0.02);
        }
        for (const char * k : {"epoch", "tick", "time", "contacts", "physics", "physics_time", "fallen", "paused", "holding",
                               "planning", "kind", "progress", "revision", "style", "slow_ticks"}) {
            EXPECT_TRUE(f->contains(k)) << k;
        }
        const int64_t t = (*f)["tick"].get<int64_t>();
        EXPECT_NEAR((*f)["time"].get<double>(), double(t) / 50.0, 1e-3);
        EXPECT_GE(t, last_tick);
        last_tick = t;
    }

    // a second connection is a spectator without a token, and gets the snapshot too
    ws_client spec;
    ASSERT_TRUE(spec.connect(s.port()));
    const json hs = hello_of(spec);
    EXPECT_EQ(hs["owner"], false);
    EXPECT_FALSE(hs.contains("token"));
    EXPECT_TRUE(spec.wait_for("targets", k_wait).has_value());
    EXPECT_TRUE(spec.wait_for("frame", k_wait).has_value());
}

TEST(ServeStream, ControlAckStatesAndPlanning) {
    MB_REQUIRE_SERVE_ASSETS();
    test_server s;
    owner_conn  o(s.port());
    auto        first = o.c.wait_for("frame", k_wait);
    ASSERT_TRUE(first.has_value());
    const json  r0 = (*first)["root"];

    // received → scheduled (at, planner_ms) → applied (time)
    const int64_t a = o.send({{"type", "control"}, {"style", "walk"}, {"move", {0.0, 1.0}}, {"facing", {0.0, 1.0}}});
    ASSERT_TRUE(o.ack(a, "received").has_value());
    auto sch = o.ack(a, "scheduled");
    ASSERT_TRUE(sch.has_value());
    EXPECT_GT((*sch)["at"].get<double>(), 0.0);
    EXPECT_GE((*sch)["planner_ms"].get<double>(), 0.0);
    auto app = o.ack(a, "applied");
    ASSERT_TRUE(app.has_value());
    EXPECT_GE((*app)["time"].get<double>() + 1e-6, (*sch)["at"].get<double>() - 1.0 / 30.0);

    // planning keeps going while moving: target revisions increase, the pose changes
    auto t1 = o.c.wait_for("targets", k_wait, [](const json & t) { return !t["targets"].is_null(); });
    ASSERT_TRUE(t1.has_value());
    EXPECT_EQ((*t1)["targets"]["joints"].size(), 4u * 34 * 3);
    EXPECT_EQ((*t1)["targets"]["roots"].size(), 12u);
    EXPECT_EQ((*t1)["targets"]["rotations"].size(), 4u * 34 * 4);
    const uint64_t rev = (*t1)["revision"].get<uint64_t>();
    auto t2 = o.c.wait_for("targets", k_wait, [&](const json & t) { return t["revision"].get<uint64_t>() > rev; });
    ASSERT_TRUE(t2.has_value());
    auto later = o.c.wait_for("frame", k_wait);
    ASSERT_TRUE(later.has_value());
    EXPECT_NE((*later)["rotations"], (*first)["rotations"]);
    EXPECT_EQ((*later)["style"].get<std::string>().rfind("walk", 0), 0u);
    (void) r0;
}

TEST(ServeStream, SupersededDuplicateAndRejected) {
    MB_REQUIRE_SERVE_ASSETS();
    test_server s;
    owner_conn  o(s.port());
    // pause so that commands queue, then three controls: the first two are superseded
    const int64_t p = o.send({{"type", "pause"}});
    ASSERT_TRUE(o.ack(p, "applied").has_value());
    const int64_t c1 = o.send({{"type", "control"}, {"move", {1.0, 0.0}}});
    const int64_t c2 = o.send({{"type", "control"}, {"style", "slow_walk"}});
    const int64_t c3 = o.send({{"type", "control"}, {"facing", {1.0, 0.0}}});
    for (int64_t c : {c1, c2, c3}) ASSERT_TRUE(o.ack(c, "received").has_value()) << c;
    const int64_t r = o.send({{"type", "resume"}});
    ASSERT_TRUE(o.ack(r, "applied").has_value());
    EXPECT_TRUE(o.ack(c1, "superseded").has_value());
    EXPECT_TRUE(o.ack(c2, "superseded").has_value());
    EXPECT_TRUE(o.ack(c3, "scheduled").has_value());

    // duplicate: seq 0, a repeated seq, a lower seq
    o.c.send_json({{"type", "control"}, {"seq", 0}});
    EXPECT_TRUE(o.ack(0, "duplicate").has_value());
    o.c.send_json({{"type", "control"}, {"seq", o.seq}});
    EXPECT_TRUE(o.ack(o.seq, "duplicate").has_value());
    o.c.send_json({{"type", "pause"}, {"seq", 1}});
    EXPECT_TRUE(o.ack(1, "duplicate").has_value());

    // issue 19.13e: 2^53-1 used up the sequence space; it now wraps to 1
    o.c.send_json({{"type", "pause"}, {"seq", mb::serve::k_max_seq}});
    EXPECT_TRUE(o.ack(mb::serve::k_max_seq, "applied").has_value());
    o.seq = 0;
    const int64_t w1 = o.send({{"type", "pause"}});
    EXPECT_TRUE(o.ack(w1, "applied").has_value());
    o.c.send_json({{"type", "pause"}, {"seq", w1}});
    EXPECT_TRUE(o.ack(w1, "duplicate").has_value());
    o.seq = 100;

    // rejected: bad values, unknown style, unavailable features
    const std::vector<json> bad = {
        {{"type", "control"}, {"move", {1.0, 1.0}}},          // |move| > 1.01
        {{"type", "control"}, {"facing", {0.01, 0.0}}},       // |facing| < 0.1
        {{"type", "control"}, {"facing", {2.0, 0.0}}},        // |facing| > 1.01
        {{"type", "control"}, {"style", "no_such_style"}},
        {{"type", "play_clip"}, {"clip", "dance"}},
        {{"type", "physics"}, {"enabled", true}},
    };
    for (const json & b : bad) {
        const int64_t q = o.send(b);
        auto          a = o.ack(q, "rejected");
        EXPECT_TRUE(a.has_value()) << b.dump();
        if (a) {
            EXPECT_FALSE((*a)["error"].get<std::string>().empty());
        }
    }

    // a spectator cannot control
    ws_client spec;
    ASSERT_TRUE(spec.connect(s.port()));
    hello_of(spec);
    spec.send_json({{"type", "control"}, {"seq", 1000}, {"move", {0.0, 1.0}}});
    auto a = spec.wait_for("ack", k_wait, [](const json & j) { return j["seq"] == 1000; });
    ASSERT_TRUE(a.has_value());
    EXPECT_EQ((*a)["state"], "rejected");
    EXPECT_EQ((*a)["error"], "spectator cannot control simulation");
}

TEST(ServeStream, MalformedMessagesGetErrors) {
    MB_REQUIRE_SERVE_ASSETS();
    test_server s;
    owner_conn  o(s.port());
    const std::vector<std::string> bad = {
        "not json",
        "[1,2]",
        "{\"type\":\"control\",\"seq\":1} {}",                 // trailing JSON
        "{\"seq\":1}",                                         // no type
        "{\"type\":\"teleport\",\"seq\":1}",                   // unknown type
        "{\"type\":\"control\",\"seq\":1,\"speed\":3}",        // unknown field
        "{\"type\":\"control\"}",                              // no seq
        "{\"type\":\"control\",\"seq\":-1}",
        "{\"type\":\"control\",\"seq\":1.5}",
        "{\"type\":\"control\",\"seq\":9007199254740992}",     // 2^53
        "{\"type\":\"control\",\"seq\":1,\"move\":[1]}",
        "{\"type\":\"control\",\"seq\":1,\"move\":[\"a\",0]}",
        "{\"type\":\"control\",\"seq\":1,\"style\":5}",
        "{\"type\":\"physics\",\"seq\":1,\"enabled\":\"yes\"}",
        "{\"type\":\"play_clip\",\"seq\":1}",
        "{\"type\":\"control\",\"seq\":1,\"move\":[1e999,0]}",
        std::string(4096, ' '),                                // the largest message: still answered
    };
    for (const std::string & b : bad) {
        o.c.send(b);
        EXPECT_TRUE(o.c.wait_for("error", k_wait).has_value()) << b.substr(0, 80);
    }
    // the connection and the loop are fine: ping, and a valid command is still acknowledged
    o.c.send_json({{"type", "ping"}});
    EXPECT_TRUE(o.c.wait_for("pong", k_wait).has_value());
    const int64_t q = o.send({{"type", "pause"}});
    EXPECT_TRUE(o.ack(q, "applied").has_value());
    EXPECT_FALSE(o.c.closed());
}

TEST(ServeStream, PauseResumeResetPingJump) {
    MB_REQUIRE_SERVE_ASSETS();
    test_server s;
    owner_conn  o(s.port());
    const uint64_t epoch = o.hello["epoch"].get<uint64_t>();
    const int64_t  p     = o.send({{"type", "pause"}});
    ASSERT_TRUE(o.ack(p, "applied").has_value());
    auto pf = o.c.wait_for("frame", k_wait, [](const json & f) { return f["paused"] == true; });
    ASSERT_TRUE(pf.has_value());
    const int64_t t0 = (*pf)["tick"].get<int64_t>();
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    auto pf2 = o.c.wait_for("frame", k_wait, [](const json & f) { return f["paused"] == true; });
    ASSERT_TRUE(pf2.has_value());
    EXPECT_EQ((*pf2)["tick"].get<int64_t>(), t0);   // the clock stands still

    const int64_t r = o.send({{"type", "resume"}});
    ASSERT_TRUE(o.ack(r, "applied").has_value());
    auto rf = o.c.wait_for("frame", k_wait, [&](const json & f) { return f["paused"] == false && f["tick"].get<int64_t>() > t0; });
    ASSERT_TRUE(rf.has_value());

    o.c.send_json({{"type", "ping"}});
    EXPECT_TRUE(o.c.wait_for("pong", k_wait).has_value());

    // jump: one action plan; a second jump while it is active is rejected
    const int64_t w = o.send({{"type", "control"}, {"move", {0.0, 1.0}}});
    ASSERT_TRUE(o.ack(w, "applied").has_value());
    const int64_t j1 = o.send({{"type", "jump"}});
    const int64_t j2 = o.send({{"type", "jump"}});
    EXPECT_TRUE(o.acks({{j1, "received"}, {j2, "rejected"}, {j1, "scheduled"}, {j1, "applied"}}));
    auto jf = o.c.wait_for("frame", k_wait, [](const json & f) { return f["kind"] == "jump"; });
    ASSERT_TRUE(jf.has_value());
    EXPECT_GE((*jf)["progress"].get<double>(), 0.0);
    EXPECT_LE((*jf)["progress"].get<double>(), 1.0);

    // reset: targets cleared (broadcast before the ack), a new epoch, the clock restarts
    auto          before = o.c.wait_for("frame", k_wait);
    ASSERT_TRUE(before.has_value());
    const int64_t z = o.send({{"type", "reset"}});
    EXPECT_TRUE(o.c.wait_for("targets", k_wait, [](const json & t) { return t["targets"].is_null(); }).has_value());
    auto za = o.ack(z, "applied");
    ASSERT_TRUE(za.has_value());
    EXPECT_GT((*za)["epoch"].get<uint64_t>(), epoch);
    auto zf = o.c.wait_for("frame", k_wait, [&](const json & f) { return f["epoch"].get<uint64_t>() > epoch; });
    ASSERT_TRUE(zf.has_value());
    EXPECT_LT((*zf)["tick"].get<int64_t>(), (*before)["tick"].get<int64_t>());
}

TEST(ServeStream, CommandQueueFull) {
    MB_REQUIRE_SERVE_ASSETS();
    test_server s;
    owner_conn  o(s.port());
    const int64_t p = o.send({{"type", "pause"}});
    ASSERT_TRUE(o.ack(p, "applied").has_value());
    int64_t last = 0;
    for (int i = 0; i < 64; ++i) last = o.send({{"type", "control"}, {"move", {0.0, 0.5}}});
    ASSERT_TRUE(o.ack(last, "received").has_value());
    o.send({{"type", "control"}, {"move", {0.0, 0.5}}});
    auto e = o.c.wait_for("error", k_wait);
    ASSERT_TRUE(e.has_value());
    EXPECT_EQ((*e)["error"], "command queue full");
}

TEST(ServeLimits, FramingViolationsClose) {
    MB_REQUIRE_SERVE_ASSETS();
    test_server s;
    {
        ws_client c;   // binary frames: closed
        ASSERT_TRUE(c.connect(s.port()));
        hello_of(c);
        c.send_binary("{\"type\":\"ping\"}");
        EXPECT_TRUE(c.wait_closed(k_wait));
        EXPECT_EQ(c.close_code(), 1003);
    }
    {
        ws_client c;   // invalid UTF-8 in a text frame: closed
        ASSERT_TRUE(c.connect(s.port()));
        hello_of(c);
        c.send(std::string("{\"type\":\"ping\",\"x\":\"\xff\xfe\"}"));
        EXPECT_TRUE(c.wait_closed(k_wait));
    }
    {
        ws_client c;   // 4097 bytes: closed
        ASSERT_TRUE(c.connect(s.port()));
        hello_of(c);
        c.send(std::string(4097, ' '));
        EXPECT_TRUE(c.wait_closed(k_wait));
    }
    {
        ws_client c;   // more than 120 messages within a second: closed
        ASSERT_TRUE(c.connect(s.port()));
        hello_of(c);
        for (int i = 0; i < 130; ++i) c.send("{\"type\":\"ping\"}");
        EXPECT_TRUE(c.wait_closed(k_wait));
        EXPECT_EQ(c.close_code(), 1008);
    }
    {
        ws_client c;   // 100 messages are fine
        ASSERT_TRUE(c.connect(s.port()));
        hello_of(c);
        for (int i = 0; i < 100; ++i) c.send("{\"type\":\"ping\"}");
        int pongs = 0;
        while (pongs < 100 && c.wait_for("pong", k_wait)) ++pongs;
        EXPECT_EQ(pongs, 100);
        EXPECT_FALSE(c.closed());
    }
    {
        ws_client c;   // WebSocket-level ping (control frame, 125-byte payload): answered with a pong
        ASSERT_TRUE(c.connect(s.port()));
        hello_of(c);
        c.ws_ping(std::string(125, 'p'));
        for (int i = 0; i < 200 && c.ws_pongs() == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
        EXPECT_EQ(c.ws_pongs(), 1u);
        EXPECT_FALSE(c.closed());
    }
    // the server is still healthy
    EXPECT_EQ(mb::test::http_get(s.port(), "/api/health").status, 200);
}

// issue 19.8 (DNS rebinding): a page of evil.example whose name resolves to 127.0.0.1 sends
// Host: evil.example:P and Origin: http://evil.example:P, which matched each other and got a socket
TEST(ServeLimits, ForeignHostGetsNoSocketAndNoApi) {
    MB_REQUIRE_SERVE_ASSETS();
    mb::serve::server_options opt;
    opt.allow_hosts = {"viewer.lan"};
    test_server       s(opt);
    const std::string p    = std::to_string(s.port());
    const std::string evil = "evil.example:" + p;
    {
        ws_client                c;
        mb::test::client_options o;
        o.host   = evil;
        o.origin = "http://" + evil;
        EXPECT_FALSE(c.connect(s.port(), o));
        EXPECT_EQ(c.http_status(), 403);
    }
    for (const char * path : {"/api/health", "/api/meta", "/api/stream", "/", "/app.js"}) {
        EXPECT_EQ(mb::test::http_get(s.port(), path, "GET", evil, "http://" + evil).status, 403) << path;
        EXPECT_EQ(mb::test::http_get(s.port(), path, "GET", "127.0.0.1.evil.example:" + p).status, 403) << path;
    }
    // this server's own names: loopback, and one allowed by --allow-host
    for (const std::string & h : {"127.0.0.1:" + p, "localhost:" + p, std::string("LOCALHOST"), "[::1]:" + p, "viewer.lan:" + p}) {
        EXPECT_EQ(mb::test::http_get(s.port(), "/api/health", "GET", h).status, 200) << h;
        ws_client                c;
        mb::test::client_options o;
        o.host   = h;
        o.origin = "http://" + h;
        EXPECT_TRUE(c.connect(s.port(), o)) << h << ": HTTP " << c.http_status();
    }
}

// issue 19.13d: peers that only ping held every slot for good. A viewer turned away now takes the
// slot of the spectator silent longest, once it has been silent spectator_idle_seconds; without
// anyone waiting, silent spectators stay, and the owner is never the one to go
TEST(ServeLimits, IdleSpectatorGivesWayToARefusedViewer) {
    MB_REQUIRE_SERVE_ASSETS();
    mb::serve::server_options opt;
    opt.hub.max_peers              = 2;
    opt.hub.spectator_idle_seconds = 1;
    test_server s(opt);
    owner_conn  o(s.port());
    ws_client   idle;
    ASSERT_TRUE(idle.connect(s.port()));
    ASSERT_TRUE(idle.wait_for("hello", k_wait).has_value());
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    EXPECT_FALSE(idle.closed());   // nobody waits: it stays
    // the refusal closes the idle spectator; on a loaded machine its slot can already be free
    // when the late viewer's handshake is decided, so 101 is as right as 503 here
    ws_client  late;
    const bool late_in = late.connect(s.port());
    if (!late_in) EXPECT_EQ(late.http_status(), 503);
    EXPECT_TRUE(idle.wait_closed(k_wait)) << "the idle spectator kept its slot";
    bool in = late_in;
    for (int i = 0; i < 100 && !in; ++i) {
        ws_client retry;
        in = retry.connect(s.port());
        if (!in) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    EXPECT_TRUE(in) << "the refused viewer never got the freed slot";
    EXPECT_FALSE(o.c.closed());
    const int64_t p = o.send({{"type", "pause"}});
    EXPECT_TRUE(o.ack(p, "applied").has_value());
}

TEST(ServeLimits, OriginVersionAndMaxPeers) {
    MB_REQUIRE_SERVE_ASSETS();
    mb::serve::server_options opt;
    opt.hub.max_peers = 3;
    test_server s(opt);
    const std::string host = "127.0.0.1:" + std::to_string(s.port());
    {
        ws_client c;
        mb::test::client_options o;
        o.origin = "http://evil.example";
        EXPECT_FALSE(c.connect(s.port(), o));
        EXPECT_EQ(c.http_status(), 403);
    }
    {
        ws_client c;
        mb::test::client_options o;
        o.origin = "https://" + host + ".evil.example";
        EXPECT_FALSE(c.connect(s.port(), o));
        EXPECT_EQ(c.http_status(), 403);
    }
    {
        ws_client c;
        mb::test::client_options o;
        o.target = "/api/stream/socket?version=2";
        EXPECT_FALSE(c.connect(s.port(), o));
        EXPECT_EQ(c.http_status(), 400);
    }
    ws_client a, b, c, d;
    mb::test::client_options same;
    same.origin = "http://" + host;
    same.target = "/api/stream/socket?version=1";
    ASSERT_TRUE(a.connect(s.port(), same));
    ASSERT_TRUE(b.connect(s.port()));
    ASSERT_TRUE(c.connect(s.port()));
    EXPECT_FALSE(d.connect(s.port()));
    EXPECT_EQ(d.http_status(), 503);
    // a slot frees when a viewer leaves
    c.close();
    ASSERT_TRUE(c.wait_closed(k_wait));
    bool ok = false;
    for (int i = 0; i < 100 && !ok; ++i) {
        ws_client e;
        ok = e.connect(s.port());
        if (!ok) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    EXPECT_TRUE(ok);
}

TEST(ServeLimits, ReadDeadlineAndStuckViewer) {
    MB_REQUIRE_SERVE_ASSETS();
    mb::serve::server_options opt;
    opt.hub.reclaim_seconds   = 0;   // the silent first viewer was the owner
    opt.limits.read_deadline  = std::chrono::milliseconds(1500);
    opt.limits.write_deadline = std::chrono::milliseconds(500);
    test_server s(opt);
    // silent client: closed after the read deadline
    ws_client quiet;
    ASSERT_TRUE(quiet.connect(s.port()));
    EXPECT_TRUE(quiet.wait_closed(k_wait));
    // the client sees the close before the hub has the detach; a viewer attached in between was
    // a spectator (3 failures in 50 loaded runs)
    for (int i = 0; i < 2000 && s.srv->get_hub().stats().viewers > 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));

    // a viewer that never reads (tiny receive buffer) is dropped; another keeps getting frames
    owner_conn o(s.port());
    const int64_t r = o.send({{"type", "resume"}});   // the first owner's loss paused the world
    ASSERT_TRUE(o.ack(r, "applied").has_value());
    const int64_t w = o.send({{"type", "control"}, {"move", {0.0, 1.0}}});   // keep frames coming at 50 Hz
    ASSERT_TRUE(o.ack(w, "applied").has_value());
    ws_client stuck;
    mb::test::client_options so;
    so.rcvbuf = 1024;
    so.read   = false;
    ASSERT_TRUE(stuck.connect(s.port(), so));
    const auto t0 = std::chrono::steady_clock::now();
    const uint64_t f0 = o.c.frames();
    bool dropped = false;
    while (std::chrono::steady_clock::now() - t0 < std::chrono::seconds(30) && !dropped) {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        o.c.send_json({{"type", "ping"}});   // keep the owner's read deadline fresh
        const json h = json::parse(mb::test::http_get(s.port(), "/api/health").body);
        dropped      = h["viewers"].get<int>() == 1;
    }
    EXPECT_TRUE(dropped) << "the stuck viewer was not dropped";
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_GT(double(o.c.frames() - f0) / secs, 15.0) << "the owner's frames slowed down";
}

TEST(ServeOwnership, OwnerLossPausesResumeAndReclaim) {
    MB_REQUIRE_SERVE_ASSETS();
    mb::serve::server_options opt;
    opt.hub.reclaim_seconds = 2;
    test_server s(opt);
    ws_client   spec;
    std::string token;
    int64_t     seq = 0;
    {
        owner_conn o(s.port());
        token = o.hello["token"].get<std::string>();
        ASSERT_TRUE(spec.connect(s.port()));
        EXPECT_EQ(hello_of(spec)["owner"], false);
        seq = o.send({{"type", "control"}, {"move", {0.0, 1.0}}});
        ASSERT_TRUE(o.ack(seq, "received").has_value());
    }
    // owner gone: the world pauses
    EXPECT_TRUE(spec.wait_for("frame", k_wait, [](const json & f) { return f["paused"] == true; }).has_value());
    // a new connection inside the grace period is a spectator
    {
        ws_client c;
        ASSERT_TRUE(c.connect(s.port()));
        EXPECT_EQ(hello_of(c)["owner"], false);
    }
    // the owner resumes with its token: owner again, last_seq kept, and it can resume the world
    {
        ws_client back;
        mb::test::client_options o;
        o.target = "/api/stream/socket?resume=" + token;
        ASSERT_TRUE(back.connect(s.port(), o));
        const json h = hello_of(back);
        EXPECT_EQ(h["owner"], true);
        EXPECT_EQ(h["token"], token);
        EXPECT_EQ(h["last_seq"], seq);
        back.send_json({{"type", "resume"}, {"seq", seq + 1}});
        EXPECT_TRUE(back.wait_for("ack", k_wait, [&](const json & a) { return a["seq"] == seq + 1 && a["state"] == "applied"; }));
        EXPECT_TRUE(spec.wait_for("frame", k_wait, [](const json & f) { return f["paused"] == false; }).has_value());
    }
    // after the grace period a new connection claims ownership with a new token
    std::this_thread::sleep_for(std::chrono::milliseconds(2300));
    ws_client claim;
    ASSERT_TRUE(claim.connect(s.port()));
    const json h = hello_of(claim);
    EXPECT_EQ(h["owner"], true);
    EXPECT_NE(h["token"], token);
    EXPECT_EQ(h["last_seq"], 0);
    // the spectator stayed a spectator throughout
    spec.send_json({{"type", "resume"}, {"seq", 99}});
    auto a = spec.wait_for("ack", k_wait, [](const json & j) { return j["seq"] == 99; });
    ASSERT_TRUE(a.has_value());
    EXPECT_EQ((*a)["state"], "rejected");
}

} // namespace

namespace {

// a viewer that only counts its close calls
struct counting_link : mb::serve::viewer_link {
    std::atomic<int> closes{0};
    void send_reliable(mb::serve::message_ptr) override {}
    void send_reply(mb::serve::message_ptr) override {}
    void send_pose(mb::serve::message_ptr) override {}
    void close(const std::string &) override { ++closes; }
};

// ServeLimits crashed ~1 run in 7 in server::~server: a session attached after the hub's loop
// took its last batch stayed in the inbox, outlived the io_context and was destroyed with the
// hub. A stopped hub holds no viewer: the ones it had and any attached later are closed and let go
TEST(ServeShutdown, StoppedHubHoldsNoViewer) {
    mb::serve::hub h(mb::test::get_planner(), {});
    h.start();
    auto before = std::make_shared<counting_link>();
    std::weak_ptr<counting_link> before_w = before;
    h.attach(before, "");
    before.reset();
    h.stop();
    auto after = std::make_shared<counting_link>();
    std::weak_ptr<counting_link> after_w = after;
    h.attach(after, "");
    EXPECT_EQ(after->closes.load(), 1);
    after.reset();
    EXPECT_TRUE(before_w.expired()) << "the hub still holds a viewer attached before stop";
    EXPECT_TRUE(after_w.expired()) << "the hub still holds a viewer attached after stop";
}

} // namespace
