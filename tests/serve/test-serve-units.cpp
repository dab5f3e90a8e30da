// serve pieces without a network: message parsing and validation, the per-viewer queue,
// Origin and socket-query checks, static path resolution, tokens
#include "tools/serve/http-routes.h"
#include "tools/serve/protocol.h"
#include "tools/serve/static-files.h"
#include "tools/serve/timeline.h"
#include "tools/serve/tokens.h"
#include "tools/serve/viewer-queue.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <limits>
#include <fstream>
#include <set>
#include <unistd.h>

namespace {

using namespace mb::serve;

TEST(ServeProtocol, ParsesEveryType) {
    auto r = parse_client_message(R"({"type":"control","seq":3,"style":"walk","move":[0.5,-0.5],"facing":[0,1]})");
    ASSERT_EQ(r.kind, parse_result::ok) << r.why;
    EXPECT_EQ(r.msg.type, msg_type::control);
    EXPECT_EQ(r.msg.seq, 3);
    EXPECT_EQ(r.msg.style, "walk");
    EXPECT_FLOAT_EQ(r.msg.move[1], -0.5f);
    EXPECT_TRUE(r.msg.has_facing);
    for (const char * t : {"jump", "pause", "resume", "reset"}) {
        auto q = parse_client_message(std::string("{\"type\":\"") + t + "\",\"seq\":1}");
        EXPECT_EQ(q.kind, parse_result::ok) << t;
        EXPECT_STREQ(msg_type_name(q.msg.type), t);
    }
    EXPECT_EQ(parse_client_message(R"({"type":"ping"})").kind, parse_result::ok);
    EXPECT_EQ(parse_client_message(R"({"type":"play_clip","seq":1,"clip":"x"})").kind, parse_result::ok);
    EXPECT_EQ(parse_client_message(R"({"type":"physics","seq":1,"enabled":false})").kind, parse_result::ok);
    EXPECT_EQ(parse_client_message(R"({"type":"control","seq":9007199254740991})").kind, parse_result::ok);
}

TEST(ServeProtocol, ErrorsAndRejections) {
    for (const char * bad : {"", "null", "{}", "[]", "{\"type\":1}", "{\"type\":\"x\",\"seq\":1}", "{\"type\":\"pause\"}",
                             "{\"type\":\"pause\",\"seq\":1,\"extra\":0}", "{\"type\":\"pause\",\"seq\":\"1\"}",
                             "{\"type\":\"pause\",\"seq\":9007199254740992}", "{\"type\":\"pause\",\"seq\":1}x",
                             "{\"type\":\"control\",\"seq\":1,\"move\":[0,0,0]}", "{\"type\":\"control\",\"seq\":1,\"facing\":null}"}) {
        EXPECT_EQ(parse_client_message(bad).kind, parse_result::error) << bad;
    }
    for (const char * rej : {R"({"type":"control","seq":1,"move":[1.1,0]})", R"({"type":"control","seq":1,"facing":[0,0]})",
                             R"({"type":"control","seq":1,"facing":[0,1.2]})", R"({"type":"control","seq":1,"style":""})"}) {
        auto r = parse_client_message(rej);
        EXPECT_EQ(r.kind, parse_result::rejected) << rej;
        EXPECT_EQ(r.msg.seq, 1);
    }
    EXPECT_EQ(parse_client_message(std::string(4097, ' ')).kind, parse_result::error);
}

TEST(ServeProtocol, EventsAreJson) {
    const auto h = nlohmann::json::parse(make_hello(true, "ab", 7, 2));
    EXPECT_EQ(h["version"], 1);
    EXPECT_EQ(h["token"], "ab");
    EXPECT_FALSE(nlohmann::json::parse(make_hello(false, "ab", 7, 2)).contains("token"));
    EXPECT_EQ(nlohmann::json::parse(make_ack(4, "duplicate", "x", 1))["state"], "duplicate");
    EXPECT_EQ(nlohmann::json::parse(make_ack_scheduled(4, 1, 0.5, 3))["at"], 0.5);
    EXPECT_EQ(nlohmann::json::parse(make_ack_applied(4, 1, 0.25))["time"], 0.25);
    EXPECT_EQ(nlohmann::json::parse(make_error("bad \xff"))["type"], "error");
    std::string s;
    const float v[3] = {1.5f, -0.000123456f, std::numeric_limits<float>::infinity()};
    append_floats(s, v, 3);
    EXPECT_EQ(s, "[1.5,-0.000123456,0]");
}

TEST(ServeQueue, ReliableBoundAndNewestPose) {
    viewer_queue q(3);
    for (int i = 0; i < 3; ++i) EXPECT_TRUE(q.push_reliable(std::make_shared<const std::string>("r" + std::to_string(i))));
    EXPECT_FALSE(q.push_reliable(std::make_shared<const std::string>("overflow")));
    q.set_pose(std::make_shared<const std::string>("p1"));
    q.set_pose(std::make_shared<const std::string>("p2"));
    EXPECT_EQ(q.poses_replaced(), 1u);
    EXPECT_EQ(*q.pop(), "r0");
    EXPECT_EQ(*q.pop(), "r1");
    EXPECT_EQ(*q.pop(), "r2");
    EXPECT_EQ(*q.pop(), "p2");
    EXPECT_EQ(q.pop(), nullptr);
    EXPECT_EQ(k_max_reliable, 32u);
}

TEST(ServeHttpChecks, OriginAndQuery) {
    http_request r;
    r.set(http::field::host, "127.0.0.1:8080");
    EXPECT_TRUE(origin_allowed(r));
    r.set(http::field::origin, "http://127.0.0.1:8080");
    EXPECT_TRUE(origin_allowed(r));
    r.set(http::field::origin, "https://127.0.0.1:8080");
    EXPECT_TRUE(origin_allowed(r));
    for (const char * o : {"http://127.0.0.1:8081", "http://localhost:8080", "null", "ftp://127.0.0.1:8080", ""}) {
        r.set(http::field::origin, o);
        EXPECT_FALSE(origin_allowed(r)) << o;
    }
    std::string token, err;
    EXPECT_TRUE(parse_socket_query("/api/stream/socket?resume=0123456789abcdef0123456789abcdef", token, err));
    EXPECT_EQ(token, "0123456789abcdef0123456789abcdef");
    EXPECT_TRUE(parse_socket_query("/api/stream/socket?resume=nothex", token, err));
    EXPECT_EQ(token, "");
    EXPECT_TRUE(parse_socket_query("/api/stream/socket?version=1.3", token, err));
    EXPECT_FALSE(parse_socket_query("/api/stream/socket?version=2", token, err));
    EXPECT_FALSE(parse_socket_query("/api/stream/socket?version=", token, err));
}

TEST(ServeHttpChecks, HostNames) {
    const std::vector<std::string> allowed = {"localhost", "127.0.0.1", "[::1]", "viewer.lan"};
    http_request                   r;
    EXPECT_FALSE(host_allowed(r, allowed));   // no Host header
    for (const char * ok : {"127.0.0.1:8080", "127.0.0.1", "localhost:1", "LocalHost:8080", "[::1]:8080", "[::1]", "viewer.lan:80"}) {
        r.set(http::field::host, ok);
        EXPECT_TRUE(host_allowed(r, allowed)) << ok;
    }
    for (const char * bad : {"evil.example:8080", "evil.example", "127.0.0.1.evil.example", "localhost.evil.example:8080",
                             "::1", "[::1]x", "", ":8080", "viewer.lan.evil:80", "127.0.0.2:8080"}) {
        r.set(http::field::host, bad);
        EXPECT_FALSE(host_allowed(r, allowed)) << bad;
    }
}

TEST(ServeStatic, Resolution) {
    namespace fs = std::filesystem;
    const std::string dir = ::testing::TempDir() + "mb-static-" + std::to_string(::getpid());
    fs::remove_all(dir);
    fs::create_directories(dir + "/web/sub");
    std::ofstream(dir + "/web/index.html") << "i";
    std::ofstream(dir + "/web/sub/index.html") << "s";
    std::ofstream(dir + "/web/a.css") << "c";
    std::ofstream(dir + "/out.txt") << "o";
    fs::create_symlink(dir + "/out.txt", dir + "/web/link.txt");
    fs::create_symlink(dir, dir + "/web/up");
    const std::string root = dir + "/web";
    EXPECT_EQ(resolve_static(root, "/").status, 200);
    EXPECT_EQ(resolve_static(root, "/?x=1").status, 200);
    EXPECT_EQ(resolve_static(root, "/a.css").content_type, "text/css; charset=utf-8");
    // only the viewer's files: top level and vendor/, page file kinds (issue 19.13b)
    EXPECT_EQ(resolve_static(root, "/sub/").status, 404);
    EXPECT_EQ(resolve_static(root, "/sub").status, 404);
    EXPECT_EQ(resolve_static(root, "/link.txt").status, 404);
    EXPECT_EQ(resolve_static(root, "/up/out.txt").status, 404);
    fs::create_symlink(dir + "/out.txt", dir + "/web/link.js");
    EXPECT_EQ(resolve_static(root, "/link.js").status, 403);   // a symlink out of the root
    EXPECT_NE(resolve_static(root, "/../out.txt").status, 200);
    EXPECT_NE(resolve_static(root, "/%2e%2e/out.txt").status, 200);
    EXPECT_NE(resolve_static(root, "/sub/%2E%2E/%2E%2E/out.txt").status, 200);
    EXPECT_EQ(resolve_static(root, "/a.css%00").status, 403);
    EXPECT_EQ(resolve_static(root, "/%").status, 400);
    EXPECT_EQ(resolve_static(root, "relative").status, 400);
    EXPECT_EQ(resolve_static(root, "/missing").status, 404);
    EXPECT_EQ(resolve_static(root, "//a.css").status, 404);
    fs::remove_all(dir);
}

// the timeline on its own (moved out of the hub): splice with the eased crossfade, the held
// frame past the end, dropping old frames, sampling
TEST(ServeTimeline, SpliceCrossfadeAndSample) {
    auto frame = [](float x) {
        timeline_frame f{};
        f.root[0] = x;
        for (int j = 0; j < k_joints; ++j) f.rotations[j * 4 + 3] = 1;   // identity, x y z w
        f.qpos[0] = x;
        return f;
    };
    timeline t;
    t.reset({frame(0), frame(1), frame(2), frame(3)});
    EXPECT_EQ(t.end(), 4);
    EXPECT_EQ(t.at(-5).root[0], 0);
    EXPECT_EQ(t.at(99).root[0], 3);
    // a plan at frame 2 of roots 10, 11, ...: frames 0, 1 stay, the first 8 are eased
    std::vector<timeline_frame> plan;
    for (int k = 0; k < 12; ++k) plan.push_back(frame(10.0f + float(k)));
    t.splice(2, plan);
    EXPECT_EQ(t.end(), 14);
    EXPECT_EQ(t.at(1).root[0], 1);
    for (int k = 0; k < 12; ++k) {
        const float old = k == 0 ? 2.0f : 3.0f;   // replaced frames 2, 3, then the held 3
        const float u   = float(k + 1) / float(k_crossfade + 1);
        const float w   = k < k_crossfade ? u * u * (3 - 2 * u) : 1.0f;
        EXPECT_NEAR(t.at(2 + k).root[0], old + (10.0f + float(k) - old) * w, 1e-5f) << k;
        EXPECT_EQ(t.at(2 + k).qpos[0], 10.0f + float(k)) << k;   // qpos is the plan's
    }
    float root[3], rot[k_joints * 4];
    t.sample(0, 0.25f, root, rot);
    EXPECT_FLOAT_EQ(root[0], 0.25f);
    EXPECT_FLOAT_EQ(rot[3], 1.0f);
    // past the end: the last frame is held just before the boundary
    t.splice(20, {frame(50)});
    EXPECT_EQ(t.end(), 21);
    EXPECT_EQ(t.at(19).root[0], 21.0f);
    t.drop_before(100);
    EXPECT_EQ(t.at(0).root[0], t.at(20).root[0]);   // one frame always stays
}

TEST(ServeTokens, RandomHex) {
    std::set<std::string> seen;
    for (int i = 0; i < 100; ++i) {
        const std::string t = make_token();
        ASSERT_EQ(t.size(), 32u);
        EXPECT_EQ(t.find_first_not_of("0123456789abcdef"), std::string::npos);
        EXPECT_TRUE(seen.insert(t).second);
    }
    EXPECT_TRUE(token_equal("ab", "ab"));
    EXPECT_FALSE(token_equal("ab", "ac"));
    EXPECT_FALSE(token_equal("", ""));
}

} // namespace
