// the robot-export layer (src/export, robot-export.h, the serve stream): resampling, qpos CSV/NPZ
// round trips and their numbered corrupt-input tables, protocol v1 messages, the incremental stream
// against the offline resampling, and the publisher's endpoint rule
#include "export/g1-isaaclab.h"
#include "export/npz.h"
#include "export/qpos-file.h"
#include "export/qpos-resample.h"
#include "export/sonic-v1.h"
#include "tools/serve/sonic-stream.h"
#ifdef MB_HAVE_ZMQ
#include "tools/serve/zmq-publisher.h"

#include <zmq.h>
#endif

#include <motionbricks/motionbricks.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <random>
#include <unistd.h>

namespace {

using namespace mb;

// a random but valid clip [frames, 36]: smooth-ish root, unit quaternions of either sign
std::vector<float> random_clip(int frames, uint32_t seed) {
    std::mt19937                          rng(seed);
    std::uniform_real_distribution<float> u(-1, 1);
    std::vector<float>                    q(size_t(frames) * k_qpos_dim);
    for (int f = 0; f < frames; ++f) {
        float * r = &q[size_t(f) * k_qpos_dim];
        for (int c = 0; c < k_qpos_dim; ++c) r[c] = u(rng);
        const float n = std::sqrt(r[3] * r[3] + r[4] * r[4] + r[5] * r[5] + r[6] * r[6]);
        for (int c = 3; c < 7; ++c) r[c] /= n;
    }
    return q;
}

std::string err_of(const std::function<void()> & f) {
    try {
        f();
    } catch (const mb::error & e) {
        return e.what();
    }
    return "";
}

TEST(Resample, UpstreamFrameCountAndPositions) {
    EXPECT_EQ(resampled_frames(1, 50), 1);
    EXPECT_EQ(resampled_frames(3, 50), 5);
    EXPECT_EQ(resampled_frames(100, 50), 166);   // floor(100 / 30 * 50)
    EXPECT_EQ(resampled_frames(100, 30), 100);
    const std::vector<float>  q   = random_clip(10, 1);
    const std::vector<double> r50 = qpos_resample(q.data(), 10, 50);
    ASSERT_EQ(r50.size(), size_t(16) * k_qpos_dim);
    // frame 5 is 30 fps frame 3 exactly; frame 15 (position 9) the last
    for (int c = 0; c < k_qpos_dim; ++c) {
        EXPECT_EQ(r50[5 * k_qpos_dim + c], double(q[3 * k_qpos_dim + c]));
        EXPECT_EQ(r50[15 * k_qpos_dim + c], double(q[9 * k_qpos_dim + c]));
    }
    // frame 1 (position 0.6): hinges linear
    EXPECT_NEAR(r50[1 * k_qpos_dim + 10], 0.4 * q[10] + 0.6 * q[k_qpos_dim + 10], 1e-7);
}

TEST(IsaacLab, MapsAreInverse) {
    for (int k = 0; k < k_qpos_hinges; ++k) EXPECT_EQ(k_mujoco_of_isaaclab[k_isaaclab_of_mujoco[k]], k);
    EXPECT_EQ(mujoco_body_of_isaaclab_body(9), 15);   // torso_link: the child of waist_pitch (hinge 14)
}

TEST(QposCsv, RoundTripsBothOrdersRatesAndHeaders) {
    const std::vector<float> q = random_clip(31, 2);
    for (int rate : {30, 50}) {
        const std::vector<double> want = qpos_resample(q.data(), 31, rate);
        for (quat_order o : {quat_order::wxyz, quat_order::xyzw}) {
            for (bool header : {true, false}) {
                qpos_write_options opt;
                opt.rate   = rate;
                opt.order  = o;
                opt.header = header;
                const std::string text = qpos_csv_text(want, opt);
                const qpos_clip   c    = parse_qpos_csv(text, "t.csv", rate, header ? quat_order::wxyz : o, header);
                ASSERT_EQ(c.qpos.size(), want.size());
                for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(c.qpos[i], want[i], 1e-8 * std::max(1.0, std::fabs(want[i])));
                if (rate == 30) {
                    for (size_t i = 0; i < want.size(); ++i) ASSERT_EQ(float(c.qpos[i]), q[i]) << "float32 exact at 30 fps";
                }
            }
        }
    }
}

TEST(QposNpz, RoundTripsAndIsDeterministic) {
    const std::vector<float> q = random_clip(20, 3);
    for (quat_order o : {quat_order::wxyz, quat_order::xyzw}) {
        qpos_write_options opt;
        opt.rate  = 50;
        opt.order = o;
        const std::vector<double> want  = qpos_resample(q.data(), 20, 50);
        const std::string         bytes = qpos_npz_bytes(want, opt);
        EXPECT_EQ(bytes, qpos_npz_bytes(want, opt));
        const qpos_clip c = parse_qpos_npz(bytes, "t.npz");
        EXPECT_EQ(c.fps, 50);
        EXPECT_EQ(c.qpos, want);
    }
}

// numbered corrupt CSVs: each must fail naming the problem
TEST(QposCsv, CorruptInputs) {
    std::string good = "0,0,0,1";   // 36 values
    for (int i = 0; i < 32; ++i) good += ",0";
    good += "\n";
    const std::vector<std::string> names = qpos_column_names(quat_order::wxyz);
    std::string hdr;
    for (size_t i = 0; i < names.size(); ++i) hdr += (i ? "," : "") + names[i];
    struct bad_case {
        const char * what;
        std::string  text;
        const char * expect;
    };
    std::string nan_row = good, inf_row = good, word_row = good, empty_cell = good, zq = good, wrong_hdr = hdr;
    nan_row.replace(0, 1, "nan");
    inf_row.replace(0, 1, "-inf");
    word_row.replace(0, 1, "1.0x");
    empty_cell.replace(0, 1, "");
    zq.replace(6, 1, "0");
    wrong_hdr.replace(wrong_hdr.find("root_x"), 6, "root_X");
    const bad_case cases[] = {
        {"1 35 columns", good.substr(0, good.size() - 3) + "\n", "35 columns"},
        {"2 37 columns", good.substr(0, good.size() - 1) + ",0\n", "37 columns"},
        {"3 NaN", good + nan_row, "non-finite"},
        {"4 Inf", good + inf_row, "non-finite"},
        {"5 trailing garbage", good + word_row, "not a number"},
        {"6 empty cell", good + empty_cell, "not a number"},
        {"7 zero quaternion", zq, "zero root quaternion"},
        {"8 empty file", "", "no qpos rows"},
        {"9 header only", hdr + "\n", "no qpos rows"},
        {"10 wrong header name", wrong_hdr + "\n" + good, "root_X"},
        {"11 header order disagrees", hdr + "\n" + good, "header says wxyz"},
        {"12 header not first", good + hdr + "\n", "not a number"},
    };
    for (const bad_case & c : cases) {
        const bool strict = std::string(c.what).rfind("11", 0) == 0;
        const std::string e = err_of([&] { parse_qpos_csv(c.text, "bad.csv", 30, strict ? quat_order::xyzw : quat_order::wxyz, !strict); });
        EXPECT_NE(e.find(c.expect), std::string::npos) << c.what << ": " << e;
        EXPECT_NE(e.find("bad.csv"), std::string::npos) << c.what;
    }
    EXPECT_EQ(parse_qpos_csv(good + "\r\n" + good, "ok.csv", 30, quat_order::wxyz, false).frames(), 2);
    // a missing file is an I/O error naming it
    try {
        read_qpos_csv("/nonexistent/q.csv", 30, quat_order::wxyz, true);
        FAIL();
    } catch (const mb::error & e) {
        EXPECT_EQ(e.code(), status::io_error);
        EXPECT_NE(std::string(e.what()).find("/nonexistent/q.csv"), std::string::npos);
    }
}

// numbered corrupt NPZs
TEST(QposNpz, CorruptInputs) {
    const std::vector<float>  q    = random_clip(4, 4);
    const std::vector<double> want = qpos_resample(q.data(), 4, 30);
    const std::string         good = qpos_npz_bytes(want, {});
    auto entries = [&] { return npz_decode(good, "g"); };
    auto rebuild = [&](const std::function<void(std::map<std::string, npy_array> &)> & edit) {
        auto a = entries();
        edit(a);
        return npz_encode(a);
    };
    std::string bad_crc = good, deflate = good, trailing = good + "x", bad_magic = good, short_zip = good.substr(0, good.size() - 30);
    bad_crc[14] = char(bad_crc[14] ^ 1);
    deflate[8] = 8;                                    // local method
    const size_t cd = good.find("PK\1\2");
    deflate[cd + 10] = 8;                              // central method
    bad_magic[good.find("\x93NUMPY") + 1] = 'X';
    struct bad_case {
        const char * what;
        std::string  bytes;
        const char * expect;
    };
    const bad_case cases[] = {
        {"1 crc", bad_crc, "disagrees"},
        {"2 deflate", deflate, "np.savez"},
        {"3 trailing byte", trailing, "end record"},
        {"4 truncated", short_zip, "zip"},
        {"5 npy magic", bad_magic, "crc32"},
        {"6 too small", "PK", "too small"},
        {"7 no fps", rebuild([](auto & a) { a.erase("fps"); }), "no 'fps'"},
        {"8 extra entry", rebuild([](auto & a) { a["x"] = a["fps"]; }), "5 entries"},
        {"9 qpos f4", rebuild([](auto & a) { a["qpos"].descr = "<f4"; a["qpos"].data.resize(a["qpos"].data.size() / 2); }), "qpos must be"},
        {"10 qpos 35 columns", rebuild([](auto & a) { a["qpos"].shape = {4 * 36 / 35 + 0, 35}; }), "needs"},
        {"11 fps 0", rebuild([](auto & a) { std::memset(a["fps"].data.data(), 0, 8); }), "fps 0"},
        {"12 joint name", rebuild([](auto & a) { a["joint_names"].data[0] = 'X'; }), "joint_names[0]"},
        {"13 quat order", rebuild([](auto & a) { a["quat_order"].data[0] = 'q'; }), "quat_order"},
        {"14 NaN", rebuild([](auto & a) { const double n = NAN; std::memcpy(a["qpos"].data.data(), &n, 8); }), "non-finite"},
        {"15 big-endian", rebuild([](auto & a) { a["qpos"].descr = ">f8"; }), "unsupported"},
    };
    for (const bad_case & c : cases) {
        const std::string e = err_of([&] { parse_qpos_npz(c.bytes, "bad.npz"); });
        EXPECT_NE(e.find(c.expect), std::string::npos) << c.what << ": " << e;
    }
}

TEST(SonicV1, MessageLayout) {
    double jp[2 * 29], jv[2 * 29], bq[8] = {1, 0, 0, 0, 0, 1, 0, 0};
    for (int i = 0; i < 58; ++i) {
        jp[i] = i * 0.01;
        jv[i] = -i;
    }
    const int64_t idx[2] = {7, 8};
    uint64_t      size   = 0;
    ASSERT_EQ(mb_robot_stream_encode("pose", jp, jv, bq, idx, 2, nullptr, 0, &size, nullptr, 0), MB_OK);
    EXPECT_EQ(size, 4 + 1280 + 2 * (58 * 8 + 32 + 8));
    std::vector<uint8_t> m(size);
    char                 e[256];
    EXPECT_EQ(mb_robot_stream_encode("pose", jp, jv, bq, idx, 2, m.data(), size - 1, &size, e, sizeof e), MB_INVALID_ARGUMENT);
    EXPECT_NE(std::string(e).find("needs"), std::string::npos);
    ASSERT_EQ(mb_robot_stream_encode("pose", jp, jv, bq, idx, 2, m.data(), size, &size, e, sizeof e), MB_OK);
    ASSERT_EQ(std::memcmp(m.data(), "pose", 4), 0);
    const char *      h   = reinterpret_cast<const char *>(m.data() + 4);
    const size_t      len = strnlen(h, 1280);
    for (size_t i = len; i < 1280; ++i) ASSERT_EQ(h[i], 0);
    const auto j = nlohmann::json::parse(std::string(h, len));
    EXPECT_EQ(j["v"], 1);
    EXPECT_EQ(j["endian"], "le");
    EXPECT_EQ(j["count"], 2);
    EXPECT_EQ(j["fields"][0]["name"], "joint_pos");
    EXPECT_EQ(j["fields"][2]["shape"], nlohmann::json::array({2, 4}));
    EXPECT_EQ(j["fields"][3]["dtype"], "i64");
    double back = 0;
    std::memcpy(&back, m.data() + 4 + 1280 + 8 * 57, 8);
    EXPECT_EQ(back, jp[57]);
    int64_t last = 0;
    std::memcpy(&last, m.data() + size - 8, 8);
    EXPECT_EQ(last, 8);
    jp[3] = NAN;
    EXPECT_EQ(mb_robot_stream_encode("pose", jp, jv, bq, idx, 2, m.data(), size, &size, e, sizeof e), MB_INVALID_ARGUMENT);
}

// the incremental stream gives exactly the offline 50 Hz resampling, whatever the push pattern
TEST(SonicStream, EqualsOfflineResampling) {
    for (int frames : {1, 2, 3, 4, 31, 100}) {
        const std::vector<float>  q    = random_clip(frames, uint32_t(frames));
        const std::vector<double> want = qpos_resample(q.data(), frames, 50);
        const int64_t             K    = int64_t(want.size() / k_qpos_dim);
        std::vector<std::vector<uint8_t>> got;
        serve::sonic_stream s("pose", [&](const uint8_t * d, size_t n) { got.emplace_back(d, d + n); });
        for (int f = 0; f < frames; ++f) s.push(&q[size_t(f) * k_qpos_dim]);
        s.finish();
        ASSERT_EQ(int64_t(got.size()), K) << frames;
        for (int64_t k = 0; k < K; ++k) {
            const uint8_t * p = got[size_t(k)].data() + 4 + 1280;
            double jp[29], jv[29], bq[4];
            int64_t idx = 0;
            std::memcpy(jp, p, sizeof jp);
            std::memcpy(jv, p + 232, sizeof jv);
            std::memcpy(bq, p + 464, sizeof bq);
            std::memcpy(&idx, p + 496, 8);
            ASSERT_EQ(idx, k);
            for (int j = 0; j < 29; ++j) {
                ASSERT_EQ(jp[j], want[size_t(k) * k_qpos_dim + 7 + k_mujoco_of_isaaclab[j]]);
                const int64_t a = k + 1 < K ? k : k - 1;
                const double  v = a < 0 ? 0.0 : (want[size_t(a + 1) * k_qpos_dim + 7 + k_mujoco_of_isaaclab[j]] - want[size_t(a) * k_qpos_dim + 7 + k_mujoco_of_isaaclab[j]]) * 50;
                ASSERT_NEAR(jv[j], v, 1e-9);
            }
            for (int c = 0; c < 4; ++c) ASSERT_NEAR(bq[c], want[size_t(k) * k_qpos_dim + 3 + c], 1e-12);
        }
        // a second clip continues frame_index
        s.push(q.data());
        s.finish();
        int64_t idx = 0;
        std::memcpy(&idx, got.back().data() + got.back().size() - 8, 8);
        EXPECT_EQ(idx, K) << "1-frame clip → 1 frame, numbered on";
    }
}

TEST(CApi, WriterErrorsLeaveNothing) {
    const std::vector<float> q    = random_clip(5, 5);
    const std::string        path = testing::TempDir() + "/mb-robot-" + std::to_string(::getpid()) + ".csv";
    char                     e[256];
    EXPECT_EQ(mb_qpos_write_file(nullptr, 5, path.c_str(), MB_QPOS_FORMAT_CSV, 30, 0, e, sizeof e), MB_INVALID_ARGUMENT);
    EXPECT_EQ(mb_qpos_write_file(q.data(), 0, path.c_str(), MB_QPOS_FORMAT_CSV, 30, 0, e, sizeof e), MB_INVALID_ARGUMENT);
    EXPECT_EQ(mb_qpos_write_file(q.data(), 5, path.c_str(), MB_QPOS_FORMAT_CSV, 40, 0, e, sizeof e), MB_INVALID_ARGUMENT);
    EXPECT_NE(std::string(e).find("30 or 50"), std::string::npos);
    EXPECT_EQ(mb_qpos_write_file(q.data(), 5, path.c_str(), 7, 30, 0, e, sizeof e), MB_INVALID_ARGUMENT);
    EXPECT_EQ(mb_qpos_write_file(q.data(), 5, path.c_str(), MB_QPOS_FORMAT_CSV, 30, 8, e, sizeof e), MB_INVALID_ARGUMENT);
    std::vector<float> nan = q;
    nan[40] = NAN;
    EXPECT_EQ(mb_qpos_write_file(nan.data(), 5, path.c_str(), MB_QPOS_FORMAT_NPZ, 30, 0, e, sizeof e), MB_INVALID_ARGUMENT);
    EXPECT_FALSE(std::filesystem::exists(path));
    EXPECT_EQ(mb_qpos_write_file(q.data(), 5, "/nonexistent/dir/q.csv", MB_QPOS_FORMAT_CSV, 30, 0, e, sizeof e), MB_IO_ERROR);
    // written and read back through the C ABI: the same qpos
    ASSERT_EQ(mb_qpos_write_file(q.data(), 5, path.c_str(), MB_QPOS_FORMAT_CSV, 30, MB_QPOS_QUAT_XYZW, e, sizeof e), MB_OK) << e;
    mb_motion * m = nullptr;
    ASSERT_EQ(mb_motion_read_qpos_file(path.c_str(), MB_QPOS_FORMAT_CSV, 0, &m, e, sizeof e), MB_OK) << e;
    const float * back = nullptr;
    uint64_t      n    = 0;
    ASSERT_EQ(mb_motion_get_mujoco_qpos(m, &back, &n, e, sizeof e), MB_OK);
    ASSERT_EQ(n, q.size());
    for (size_t i = 0; i < n; ++i) EXPECT_EQ(back[i], q[i]);
    mb_motion_free(m);
    ASSERT_EQ(mb_qpos_write_file(q.data(), 5, path.c_str(), MB_QPOS_FORMAT_CSV, 50, 0, e, sizeof e), MB_OK);
    EXPECT_EQ(mb_motion_read_qpos_file(path.c_str(), MB_QPOS_FORMAT_CSV, 0, &m, e, sizeof e), MB_OK) << "a CSV says no rate";
    mb_motion_free(m);
    std::filesystem::remove(path);
}

#ifdef MB_HAVE_ZMQ
TEST(ZmqPublisher, LoopbackOnlyUnlessAllowed) {
    EXPECT_TRUE(serve::zmq_endpoint_is_local("tcp://127.0.0.1:5556"));
    EXPECT_TRUE(serve::zmq_endpoint_is_local("tcp://localhost:1"));
    EXPECT_TRUE(serve::zmq_endpoint_is_local("tcp://[::1]:1"));
    EXPECT_TRUE(serve::zmq_endpoint_is_local("ipc:///tmp/x"));
    EXPECT_FALSE(serve::zmq_endpoint_is_local("tcp://0.0.0.0:5556"));
    EXPECT_FALSE(serve::zmq_endpoint_is_local("tcp://*:5556"));
    EXPECT_FALSE(serve::zmq_endpoint_is_local("tcp://192.168.1.2:5556"));
    EXPECT_FALSE(serve::zmq_endpoint_is_local("tcp://127.0.0.1.evil.com:5556"));
    serve::zmq_publisher_options o;
    o.endpoint = "tcp://0.0.0.0:0";
    EXPECT_THROW(serve::zmq_publisher p(o), std::runtime_error);
    o.endpoint = "tcp://127.0.0.1:0";
    serve::zmq_publisher p(o);
    EXPECT_NE(p.endpoint().find("127.0.0.1:"), std::string::npos);
    // no subscriber: sending never blocks
    const std::string msg(2000, 'x');
    for (int i = 0; i < 10000; ++i) p.send(msg.data(), msg.size());
    EXPECT_FALSE(p.wait_subscriber(10));
    // a subscriber that never reads: 40 MB (far past its queue and the socket buffers) still goes
    // out without blocking, the excess dropped
    void * ctx = zmq_ctx_new();
    void * sub = zmq_socket(ctx, ZMQ_SUB);
    const int one = 1;
    zmq_setsockopt(sub, ZMQ_RCVHWM, &one, sizeof one);
    zmq_setsockopt(sub, ZMQ_SUBSCRIBE, "", 0);
    ASSERT_EQ(zmq_connect(sub, p.endpoint().c_str()), 0);
    ASSERT_TRUE(p.wait_subscriber(5000));
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 20000; ++i) EXPECT_TRUE(p.send(msg.data(), msg.size()));
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 5.0);
    zmq_close(sub);
    zmq_ctx_term(ctx);
}
#endif

} // namespace
