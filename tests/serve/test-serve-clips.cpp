// serve's clips and downloads: the library scan (animation.glb, bad files skipped), the
// owner-only upload, play_clip (aligned entry, frames of kind "kimodo" with a rising progress,
// planning resumes after it), and GET /api/motion/recent as GLB and BVH
#include "serve-fixture.h"
#include "tools/serve/clips.h"
#include "ws-client.h"

#include <motionbricks/motionbricks.hpp>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

namespace {

namespace mbx   = motionbricks;
namespace fs    = std::filesystem;
namespace http  = boost::beast::http;
using json      = nlohmann::json;
using mb::test::test_server;
using mb::test::ws_client;

constexpr double k_wait = 20.0;

// a 40-frame clip: the pelvis bobbing in place, turned 90° from +Z, arms swinging
std::string clip_glb() {
    const uint64_t     F = 40;
    std::vector<float> root(F * 3), rot(F * 34 * 4, 0.0f);
    for (uint64_t f = 0; f < F; ++f) {
        root[f * 3 + 0] = 5.0f;
        root[f * 3 + 1] = 0.75f + 0.03f * std::sin(float(f) * 0.3f);
        root[f * 3 + 2] = -2.0f;
        for (int j = 0; j < 34; ++j) rot[(f * 34 + uint64_t(j)) * 4 + 3] = 1.0f;
        rot[f * 34 * 4 + 1] = std::sin(0.785398f);   // pelvis: 90° about +Y
        rot[f * 34 * 4 + 3] = std::cos(0.785398f);
        float * arm = &rot[(f * 34 + 18) * 4];       // left shoulder pitch
        arm[0]      = std::sin(0.4f * std::sin(float(f) * 0.2f));
        arm[3]      = std::cos(0.4f * std::sin(float(f) * 0.2f));
    }
    const mbx::motion       m = mbx::create_motion(root.data(), rot.data(), F);
    mb_motion_write_options o{};
    o.format                    = MB_MOTION_FORMAT_GLB;
    const std::vector<uint8_t> b = mbx::write_motion(m, o);
    return std::string(b.begin(), b.end());
}

// one HTTP request to the test server: status and body
std::pair<int, std::string> request(uint16_t port, http::verb verb, const std::string & target, const std::string & body = "",
                                    const std::string & token = "") {
    boost::asio::io_context        ioc;
    boost::asio::ip::tcp::resolver res(ioc);
    boost::beast::tcp_stream       s(ioc);
    s.connect(res.resolve("127.0.0.1", std::to_string(port)));
    http::request<http::string_body> req{verb, target, 11};
    req.set(http::field::host, "127.0.0.1:" + std::to_string(port));
    if (!token.empty()) req.set("X-Motionbricks-Token", token);
    req.body() = body;
    req.prepare_payload();
    http::write(s, req);
    boost::beast::flat_buffer          buf;
    http::response_parser<http::string_body> r;
    r.body_limit(64 << 20);
    http::read(s, buf, r);
    return {int(r.get().result_int()), r.get().body()};
}

TEST(ServeClips, ScanSkipsBadFiles) {
    const std::string dir = ::testing::TempDir() + "mb-clips-" + std::to_string(::getpid());
    fs::remove_all(dir);
    fs::create_directories(dir + "/wave");
    fs::create_directories(dir + "/broken");
    std::ofstream(dir + "/wave/animation.glb", std::ios::binary) << clip_glb();
    std::ofstream(dir + "/broken/animation.glb") << "not a glb";
    std::ofstream(dir + "/wave/other.glb", std::ios::binary) << clip_glb();   // not named animation.glb
    mb::serve::clip_library lib;
    EXPECT_EQ(1u, lib.scan(dir));
    const json list = json::parse(lib.list_json());
    ASSERT_EQ(1u, list.size());
    EXPECT_EQ("wave", list[0]["name"]);
    EXPECT_EQ(40, list[0]["frames"]);
    fs::remove_all(dir);
}

TEST(ServeClips, UploadPlayAndDownload) {
    MB_REQUIRE_SERVE_ASSETS();
    mb::serve::clip_library  lib;
    mb::serve::frame_history hist;
    mb::serve::server_options opt;
    opt.hub.clips   = &lib;
    opt.hub.history = &hist;
    test_server s(opt);

    ws_client c;
    ASSERT_TRUE(c.connect(s.port()));
    const auto hello = c.wait_for("hello", k_wait);
    ASSERT_TRUE(hello && (*hello)["owner"] == true);
    const std::string token = (*hello)["token"];

    // upload: owner only, the reader's rules
    const std::string glb = clip_glb();
    EXPECT_EQ(403, request(s.port(), http::verb::post, "/api/kimodo/upload", glb).first);
    EXPECT_EQ(403, request(s.port(), http::verb::post, "/api/kimodo/upload", glb, std::string(32, 'a')).first);
    EXPECT_EQ(400, request(s.port(), http::verb::post, "/api/kimodo/upload", "glTF junk", token).first);
    const auto up = request(s.port(), http::verb::post, "/api/kimodo/upload?name=wave", glb, token);
    ASSERT_EQ(200, up.first) << up.second;
    const std::string id = json::parse(up.second)["id"];
    const json        list = json::parse(request(s.port(), http::verb::get, "/api/clips").second);
    ASSERT_EQ(1u, list.size());
    EXPECT_EQ("wave", list[0]["name"]);
    const json meta = json::parse(request(s.port(), http::verb::get, "/api/meta").second);
    EXPECT_EQ(list, meta["kimodo_clips"]);

    // play it: rejected when unknown; else kind "kimodo", progress rising, then planning again
    int64_t seq = 0;
    c.send_json({{"type", "play_clip"}, {"seq", ++seq}, {"clip", "nope"}});
    EXPECT_TRUE(c.wait_for("ack", k_wait, [&](const json & a) { return a["seq"] == seq && a["state"] == "rejected"; }));
    auto before = c.wait_for("frame", k_wait);
    ASSERT_TRUE(before.has_value());
    c.send_json({{"type", "play_clip"}, {"seq", ++seq}, {"clip", id}});
    EXPECT_TRUE(c.wait_for("ack", k_wait, [&](const json & a) { return a["seq"] == seq && a["state"] == "scheduled"; }));
    c.send_json({{"type", "jump"}, {"seq", ++seq}});   // an action is active
    EXPECT_TRUE(c.wait_for("ack", k_wait, [&](const json & a) { return a["seq"] == seq && a["state"] == "rejected"; }));
    double first_progress = -1, last_progress = -1;
    json   first;
    for (;;) {
        auto f = c.wait_for("frame", k_wait);
        ASSERT_TRUE(f.has_value()) << "the clip never finished";
        if ((*f)["kind"] == "kimodo") {
            if (first_progress < 0) {
                first          = *f;
                first_progress = (*f)["progress"];
            }
            last_progress = (*f)["progress"];
        } else if (first_progress >= 0) {
            break;   // back to planned motion
        }
    }
    EXPECT_LT(first_progress, 0.2);
    EXPECT_GT(last_progress, 0.8);
    // entered where the robot was (the clip was authored 5 m away), not where it was authored
    EXPECT_LT(std::hypot(first["root"][0].get<double>() - (*before)["root"][0].get<double>(),
                         first["root"][2].get<double>() - (*before)["root"][2].get<double>()), 0.5);
    // planning resumed: frames of a newer plan (revision) follow the clip
    const int64_t clip_rev = first["revision"];
    EXPECT_TRUE(c.wait_for("frame", k_wait, [&](const json & f) { return f["kind"] == "motion" && f["revision"].get<int64_t>() > clip_rev; }));

    // downloads of the last seconds
    const auto g = request(s.port(), http::verb::get, "/api/motion/recent?format=glb&seconds=1");
    ASSERT_EQ(200, g.first) << g.second;
    const mbx::motion m = mbx::read_motion(reinterpret_cast<const uint8_t *>(g.second.data()), g.second.size());
    EXPECT_EQ(30u, m.frame_count());   // the clock has run more than 1 s by now
    const auto b = request(s.port(), http::verb::get, "/api/motion/recent?format=bvh&seconds=1");
    ASSERT_EQ(200, b.first);
    EXPECT_EQ(0u, b.second.find("HIERARCHY"));
    EXPECT_EQ(400, request(s.port(), http::verb::get, "/api/motion/recent?format=fbx").first);
    EXPECT_EQ(400, request(s.port(), http::verb::get, "/api/motion/recent?format=glb&seconds=61").first);
}

} // namespace
