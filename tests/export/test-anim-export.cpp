// anim-export.h: BVH and GLB writers and readers through the C ABI. Round trips of a synthetic
// clip and of an agent plan (FK of the re-read file = the plan's joint positions within 0.1 mm),
// the writer options, a numbered corpus of hostile GLBs and BVHs (each refused with
// MB_INVALID_FORMAT and a message naming the problem), and jump
#include <motionbricks/motionbricks.hpp>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace {

namespace mbx = motionbricks;
using json    = nlohmann::json;

constexpr int    J        = 34;
constexpr double k_fk_tol = 1.0e-4;   // m: re-read FK vs the source's joint positions

// a deterministic clip: a root path and random small rotations about random axes
mbx::motion synthetic(uint64_t frames, uint32_t seed) {
    std::mt19937                          rng(seed);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    std::vector<float>                    root(frames * 3), rot(frames * J * 4);
    float                                 axis[J][3], phase[J];
    for (int j = 0; j < J; ++j) {
        const float x = u(rng), y = u(rng), z = u(rng), n = std::sqrt(x * x + y * y + z * z) + 1e-6f;
        axis[j][0] = x / n, axis[j][1] = y / n, axis[j][2] = z / n;
        phase[j]   = u(rng) * 3.0f;
    }
    for (uint64_t f = 0; f < frames; ++f) {
        const float t   = float(f) / 30.0f;
        root[f * 3 + 0] = 0.3f * t;
        root[f * 3 + 1] = 0.78f + 0.02f * std::sin(6 * t);
        root[f * 3 + 2] = 1.1f * t;
        for (int j = 0; j < J; ++j) {
            const float a = (j == 0 ? 3.0f : 0.8f) * std::sin(t + phase[j]);
            float *     q = &rot[(f * J + uint64_t(j)) * 4];
            for (int k = 0; k < 3; ++k) q[k] = axis[j][k] * std::sin(a / 2);
            q[3] = std::cos(a / 2);
        }
    }
    return mbx::create_motion(root.data(), rot.data(), frames);
}

std::vector<uint8_t> encode(const mbx::motion & m, uint32_t format, float units = 0) {
    mb_motion_write_options o{};
    o.format          = format;
    o.units_per_metre = units;
    return mbx::write_motion(m, o);
}

double max_fk_error(const mbx::motion & a, const mbx::motion & b) {
    EXPECT_EQ(a.frame_count(), b.frame_count());
    const mbx::float_view pa = a.joint_positions(), pb = b.joint_positions();
    double                e  = 0;
    for (uint64_t i = 0; i < std::min(pa.size, pb.size); ++i) e = std::max(e, std::fabs(double(pa[i]) - pb[i]));
    return e;
}

// the status and message of reading `bytes`
std::pair<mb_status, std::string> try_read(const std::vector<uint8_t> & bytes, uint32_t format) {
    char        err[1024];
    mb_motion * m = nullptr;
    const uint8_t empty = 0;
    const mb_status s = mb_motion_read(bytes.empty() ? &empty : bytes.data(), bytes.size(), format, &m, err, sizeof err);
    mb_motion_free(m);
    return {s, err};
}

// ---- synthetic round trips ----

TEST(AnimExport, GlbRoundTripKeepsFk) {
    const mbx::motion    m   = synthetic(45, 1);
    const auto           glb = encode(m, MB_MOTION_FORMAT_GLB);
    const mbx::motion    r   = mbx::read_motion(glb.data(), glb.size());
    EXPECT_LT(max_fk_error(m, r), k_fk_tol);
    // GLB carries float32 quaternions verbatim: rotations are bitwise equal
    const mbx::float_view qa = m.local_rotations_xyzw(), qb = r.local_rotations_xyzw();
    ASSERT_EQ(qa.size, qb.size);
    EXPECT_EQ(0, std::memcmp(qa.data, qb.data, qa.size * 4));
    // and writing the re-read motion gives the same bytes
    EXPECT_EQ(glb, encode(r, MB_MOTION_FORMAT_GLB));
}

TEST(AnimExport, BvhRoundTripKeepsFkInMetresAndCentimetres) {
    const mbx::motion m = synthetic(45, 2);
    for (float units : {1.0f, 100.0f}) {
        const auto        bvh = encode(m, MB_MOTION_FORMAT_BVH, units);
        const mbx::motion r   = mbx::read_motion(bvh.data(), bvh.size(), MB_MOTION_FORMAT_AUTO);
        EXPECT_LT(max_fk_error(m, r), k_fk_tol) << "units " << units;
    }
}

TEST(AnimExport, BvhLayout) {
    const auto        bvh = encode(synthetic(3, 3), MB_MOTION_FORMAT_BVH);
    const std::string t(bvh.begin(), bvh.end());
    EXPECT_EQ(0u, t.find("HIERARCHY\nROOT pelvis_skel\n"));
    EXPECT_NE(std::string::npos, t.find("CHANNELS 6 Xposition Yposition Zposition Yrotation Xrotation Zrotation"));
    EXPECT_NE(std::string::npos, t.find("MOTION\nFrames: 3\nFrame Time: 0.0333333\n"));
    size_t joints = 0;
    for (size_t at = 0; (at = t.find("JOINT ", at)) != std::string::npos; ++at) ++joints;
    EXPECT_EQ(33u, joints);
}

TEST(AnimExport, WriterOptions) {
    const mbx::motion       m = synthetic(10, 4);
    mb_motion_write_options o{};
    uint64_t                size = 0;
    char                    err[512];
    o.format = 7;
    EXPECT_EQ(MB_INVALID_ARGUMENT, mb_motion_write(m.get(), &o, nullptr, 0, &size, err, sizeof err));
    o.format          = MB_MOTION_FORMAT_GLB;
    o.units_per_metre = 100;
    EXPECT_EQ(MB_INVALID_ARGUMENT, mb_motion_write(m.get(), &o, nullptr, 0, &size, err, sizeof err));
    EXPECT_NE(nullptr, std::strstr(err, "GLB"));
    o.units_per_metre = 0;
    o.first_frame     = 10;
    EXPECT_EQ(MB_INVALID_ARGUMENT, mb_motion_write(m.get(), &o, nullptr, 0, &size, err, sizeof err));
    o.first_frame = 4;
    o.frame_count = 7;
    EXPECT_EQ(MB_INVALID_ARGUMENT, mb_motion_write(m.get(), &o, nullptr, 0, &size, err, sizeof err));
    o.frame_count = 6;
    ASSERT_EQ(MB_OK, mb_motion_write(m.get(), &o, nullptr, 0, &size, err, sizeof err)) << err;
    std::vector<uint8_t> buf(size);
    uint64_t             got = 0;
    EXPECT_EQ(MB_INVALID_ARGUMENT, mb_motion_write(m.get(), &o, buf.data(), size - 1, &got, err, sizeof err));
    EXPECT_EQ(size, got);
    ASSERT_EQ(MB_OK, mb_motion_write(m.get(), &o, buf.data(), size, &got, err, sizeof err)) << err;
    const mbx::motion r = mbx::read_motion(buf.data(), buf.size());
    EXPECT_EQ(6u, r.frame_count());
    EXPECT_FLOAT_EQ(m.root_translations()[4 * 3 + 2], r.root_translations()[2]);
}

TEST(AnimExport, CreateRefusesBadValues) {
    std::vector<float> root(3, 0.0f), rot(J * 4, 0.0f);
    for (int j = 0; j < J; ++j) rot[size_t(j) * 4 + 3] = 1.0f;
    char        err[512];
    mb_motion * m = nullptr;
    ASSERT_EQ(MB_OK, mb_motion_create(root.data(), rot.data(), 1, &m, err, sizeof err)) << err;
    mb_motion_free(m);
    EXPECT_EQ(MB_INVALID_ARGUMENT, mb_motion_create(root.data(), rot.data(), 0, &m, err, sizeof err));
    rot[3] = 2.0f;
    EXPECT_EQ(MB_INVALID_ARGUMENT, mb_motion_create(root.data(), rot.data(), 1, &m, err, sizeof err));
    EXPECT_NE(nullptr, std::strstr(err, "norm"));
    rot[3] = 1.0f;
    root[1] = NAN;
    EXPECT_EQ(MB_INVALID_ARGUMENT, mb_motion_create(root.data(), rot.data(), 1, &m, err, sizeof err));
    EXPECT_EQ(nullptr, m);
}

// ---- hostile GLBs ----

struct glb_parts {
    json        doc;
    std::string bin;
};

glb_parts split(const std::vector<uint8_t> & g) {
    uint32_t jl = 0, bl = 0;
    std::memcpy(&jl, &g[12], 4);
    std::memcpy(&bl, &g[20 + jl], 4);
    return {json::parse(std::string(g.begin() + 20, g.begin() + 20 + jl)), std::string(g.begin() + 28 + jl, g.begin() + 28 + jl + bl)};
}

void u32(std::vector<uint8_t> & o, uint32_t v) {
    for (int i = 0; i < 4; ++i) o.push_back(uint8_t(v >> (8 * i)));
}

std::vector<uint8_t> join(const std::string & text_in, const std::string & bin) {
    std::string text = text_in;
    while (text.size() % 4) text.push_back(' ');
    std::vector<uint8_t> o = {'g', 'l', 'T', 'F'};
    u32(o, 2);
    u32(o, uint32_t(28 + text.size() + bin.size()));
    u32(o, uint32_t(text.size()));
    o.insert(o.end(), {'J', 'S', 'O', 'N'});
    o.insert(o.end(), text.begin(), text.end());
    u32(o, uint32_t(bin.size()));
    o.insert(o.end(), {'B', 'I', 'N', 0});
    o.insert(o.end(), bin.begin(), bin.end());
    return o;
}

std::vector<uint8_t> join(const glb_parts & p) {
    return join(p.doc.dump(), p.bin);
}

void put_float(std::string & bin, size_t at, float v) {
    std::memcpy(&bin[at], &v, 4);
}

struct hostile {
    const char *                                   name;
    const char *                                   expect;   // a part of the message
    std::function<std::vector<uint8_t>(glb_parts)> make;
};

TEST(AnimExport, HostileGlbsAreRefused) {
    const std::vector<uint8_t> good = encode(synthetic(8, 5), MB_MOTION_FORMAT_GLB);
    ASSERT_EQ(MB_OK, try_read(good, MB_MOTION_FORMAT_GLB).first);
    auto edit = [](std::function<void(glb_parts &)> f) {
        return [f](glb_parts p) {
            f(p);
            return join(p);
        };
    };
    auto raw = [&good](std::function<void(std::vector<uint8_t> &)> f) {
        return [f, &good](glb_parts) {
            std::vector<uint8_t> g = good;
            f(g);
            return g;
        };
    };
    const size_t rot0 = 8 * 4 + 8 * 12;   // the first rotation track in the BIN chunk
    const std::vector<hostile> cases = {
        {"empty file", "shorter than", raw([](auto & g) { g.clear(); })},
        {"11 bytes", "shorter than", raw([](auto & g) { g.resize(11); })},
        {"bad magic", "magic", raw([](auto & g) { g[0] = 'x'; })},
        {"version 1", "version 1", raw([](auto & g) { g[4] = 1; })},
        {"header length", "header length", raw([](auto & g) { g[8] ^= 4; })},
        {"JSON chunk length past the file", "runs past the end", raw([](auto & g) { g[14] = 0x7f; })},
        {"JSON chunk length not a multiple of 4", "multiple of 4", raw([](auto & g) { g[12] += 1; })},
        {"chunk 0 not JSON", "not of type JSON", raw([](auto & g) { g[16] = 'X'; })},
        {"no BIN chunk", "no BIN chunk", [](glb_parts p) {
             auto g = join(p.doc.dump(), "");
             g.resize(g.size() - 8);
             const uint32_t n = uint32_t(g.size());
             std::memcpy(&g[8], &n, 4);
             return g;
         }},
        {"BIN length past the file", "runs past the end", [](glb_parts p) {
             auto g = join(p);
             const uint32_t jl = uint32_t(p.doc.dump().size() + 3) / 4 * 4;
             g[20 + jl + 3] = 0x40;
             return g;
         }},
        {"bytes after the BIN chunk", "after the BIN chunk", [](glb_parts p) {
             auto g = join(p);
             g.insert(g.end(), 8, 0);
             const uint32_t n = uint32_t(g.size());
             std::memcpy(&g[8], &n, 4);
             return g;
         }},
        {"JSON not valid", "not valid JSON", [](glb_parts p) { return join("{\"asset\":", p.bin); }},
        {"JSON duplicate key", "twice", [](glb_parts p) { return join("{\"asset\":{},\"asset\":{}}", p.bin); }},
        {"JSON nested too deep", "deeper", [](glb_parts p) { return join("{\"extras\":" + std::string(40, '[') + std::string(40, ']') + "}", p.bin); }},
        {"a mesh (not node-only)", "node-only", edit([](glb_parts & p) { p.doc["meshes"] = json::array(); })},
        {"asset version 1.0", "asset.version", edit([](glb_parts & p) { p.doc["asset"]["version"] = "1.0"; })},
        {"extensionsRequired", "node-only", edit([](glb_parts & p) { p.doc["extensionsRequired"] = {"KHR_draco_mesh_compression"}; })},
        {"external buffer uri", "uri", edit([](glb_parts & p) { p.doc["buffers"][0]["uri"] = "x.bin"; })},
        {"two buffers", "at most 1", edit([](glb_parts & p) { p.doc["buffers"].push_back(p.doc["buffers"][0]); })},
        {"buffer longer than BIN", "byteLength", edit([](glb_parts & p) { p.doc["buffers"][0]["byteLength"] = p.bin.size() + 4; })},
        {"bufferView past the buffer", "runs past the buffer", edit([](glb_parts & p) { p.doc["bufferViews"][35]["byteOffset"] = p.bin.size() - 16; })},
        {"overlapping bufferViews", "overlap", edit([](glb_parts & p) { p.doc["bufferViews"][1]["byteOffset"] = 16; })},
        {"byteStride 2", "byteStride", edit([](glb_parts & p) { p.doc["bufferViews"][1]["byteStride"] = 2; })},
        {"byteStride smaller than an element", "smaller than an element", edit([](glb_parts & p) { p.doc["bufferViews"][1]["byteStride"] = 8; })},
        {"accessor count x stride past the view", "need", edit([](glb_parts & p) { p.doc["accessors"][2]["count"] = 9; })},
        {"accessor byteOffset past the view", "need", edit([](glb_parts & p) { p.doc["accessors"][2]["byteOffset"] = 16; })},
        {"accessor byteOffset not aligned", "multiple of 4", edit([](glb_parts & p) { p.doc["accessors"][2]["byteOffset"] = 2; })},
        {"accessor componentType unsigned short", "componentType", edit([](glb_parts & p) { p.doc["accessors"][2]["componentType"] = 5123; })},
        {"accessor normalized", "normalized", edit([](glb_parts & p) { p.doc["accessors"][2]["normalized"] = true; })},
        {"accessor sparse", "sparse", edit([](glb_parts & p) { p.doc["accessors"][2]["sparse"] = json::object(); })},
        {"accessor bufferView out of range", "bufferView", edit([](glb_parts & p) { p.doc["accessors"][2]["bufferView"] = 99; })},
        {"accessor bufferView negative", "non-negative", edit([](glb_parts & p) { p.doc["accessors"][2]["bufferView"] = -1; })},
        {"accessor bufferView 1.5", "non-negative integer", edit([](glb_parts & p) { p.doc["accessors"][2]["bufferView"] = 1.5; })},
        {"accessor count 0", "count is 0", edit([](glb_parts & p) { p.doc["accessors"][2]["count"] = 0; })},
        {"accessor count 18001", "count", edit([](glb_parts & p) { p.doc["accessors"][2]["count"] = 18001; })},
        {"accessor type MAT4", "type", edit([](glb_parts & p) { p.doc["accessors"][2]["type"] = "MAT4"; })},
        {"33 nodes", "33 entries", edit([](glb_parts & p) { p.doc["nodes"].erase(33); })},
        {"wrong node name", "not a g1skel34 joint", edit([](glb_parts & p) { p.doc["nodes"][3]["name"] = "Hips"; })},
        {"duplicate node name", "used twice", edit([](glb_parts & p) { p.doc["nodes"][3]["name"] = "pelvis_skel"; })},
        {"node cycle", "cycle", edit([](glb_parts & p) { p.doc["nodes"][1]["children"].push_back(0); })},
        {"node is its own child", "itself", edit([](glb_parts & p) { p.doc["nodes"][7]["children"] = {7}; })},
        {"node with two parents", "two parents", edit([](glb_parts & p) { p.doc["nodes"][8]["children"].push_back(2); })},
        {"wrong topology", "has parent", edit([](glb_parts & p) {
             p.doc["nodes"][3]["children"] = json::array();
             p.doc["nodes"][10]["children"].push_back(4);
         })},
        {"node with a mesh", "node-only", edit([](glb_parts & p) { p.doc["nodes"][2]["mesh"] = 0; })},
        {"node with a matrix", "matrix", edit([](glb_parts & p) { p.doc["nodes"][2]["matrix"] = json::array(); })},
        {"node scale 2", "scale", edit([](glb_parts & p) { p.doc["nodes"][2]["scale"] = {2, 2, 2}; })},
        {"rest translation 1 cm off", "retargeting", edit([](glb_parts & p) { p.doc["nodes"][4]["translation"][1] = p.doc["nodes"][4]["translation"][1].get<double>() + 0.01; })},
        {"scene of another node", "scene", edit([](glb_parts & p) { p.doc["scenes"][0]["nodes"] = {1}; })},
        {"NaN key time", "not finite", edit([](glb_parts & p) { put_float(p.bin, 8, NAN); })},
        {"non-monotonic key times", "strictly increasing", edit([](glb_parts & p) { put_float(p.bin, 12, 0.01f); })},
        {"60 fps key times", "30 fps", edit([](glb_parts & p) {
             for (int i = 0; i < 8; ++i) put_float(p.bin, size_t(i) * 4, float(i) / 60.0f);
         })},
        {"NaN rotation value", "not finite", edit([](glb_parts & p) { put_float(p.bin, rot0 + 4, NAN); })},
        {"quaternion of norm 2", "norm", edit([](glb_parts & p) {
             for (int k = 0; k < 4; ++k) put_float(p.bin, rot0 + size_t(k) * 4, 1.0f);
         })},
        {"root at 1e5 m", "1e4", edit([](glb_parts & p) { put_float(p.bin, 8 * 4, 1e5f); })},
        {"STEP interpolation", "not LINEAR", edit([](glb_parts & p) { p.doc["animations"][0]["samplers"][3]["interpolation"] = "STEP"; })},
        {"34 channels", "35", edit([](glb_parts & p) { p.doc["animations"][0]["channels"].erase(5); })},
        {"two rotation channels of one joint", "two rotation channels", edit([](glb_parts & p) { p.doc["animations"][0]["channels"][5]["target"]["node"] = 3; })},
        {"translation channel on a non-root node", "only the root", edit([](glb_parts & p) { p.doc["animations"][0]["channels"][0]["target"]["node"] = 3; })},
        {"scale channel", "not rotation or translation", edit([](glb_parts & p) { p.doc["animations"][0]["channels"][5]["target"]["path"] = "scale"; })},
        {"two animations", "at most 1", edit([](glb_parts & p) { p.doc["animations"].push_back(p.doc["animations"][0]); })},
        {"rotation output VEC3", "components", edit([](glb_parts & p) { p.doc["animations"][0]["samplers"][3]["output"] = 1; })},
        {"sampler with its own time track", "own time track", edit([](glb_parts & p) {
             p.doc["accessors"].push_back({{"bufferView", 0}, {"componentType", 5126}, {"count", 4}, {"type", "SCALAR"}});
             p.doc["animations"][0]["samplers"][3]["input"] = p.doc["accessors"].size() - 1;
         })},
    };
    ASSERT_GE(cases.size(), 30u);
    const char * dump = std::getenv("MB_GLB_CORPUS_DIR");   // fuzz seeds, when asked
    int          n    = 0;
    for (const hostile & h : cases) {
        const std::vector<uint8_t> bytes = h.make(split(good));
        const auto [status, msg]         = try_read(bytes, MB_MOTION_FORMAT_GLB);
        EXPECT_EQ(MB_INVALID_FORMAT, status) << "#" << n << " " << h.name << ": " << msg;
        EXPECT_NE(std::string::npos, msg.find(h.expect)) << "#" << n << " " << h.name << ": " << msg;
        if (dump) std::ofstream(std::string(dump) + "/hostile-" + std::to_string(n), std::ios::binary).write(reinterpret_cast<const char *>(bytes.data()), std::streamsize(bytes.size()));
        ++n;
    }
}

TEST(AnimExport, HostileBvhsAreRefused) {
    const auto        good = encode(synthetic(4, 6), MB_MOTION_FORMAT_BVH);
    const std::string g(good.begin(), good.end());
    ASSERT_EQ(MB_OK, try_read(good, MB_MOTION_FORMAT_BVH).first);
    auto sub = [&g](const std::string & a, const std::string & b) {
        std::string t  = g;
        const size_t i = t.find(a);
        EXPECT_NE(std::string::npos, i) << a;
        if (i != std::string::npos) t.replace(i, a.size(), b);
        return std::vector<uint8_t>(t.begin(), t.end());
    };
    const size_t motion = g.find("MOTION");
    const std::vector<std::pair<std::vector<uint8_t>, const char *>> cases = {
        {sub("HIERARCHY", "HIERARCHX"), "expected \"HIERARCHY\""},
        {sub("JOINT left_knee_skel", "JOINT LeftKnee"), "not a g1skel34 joint"},
        {sub("JOINT left_knee_skel", "JOINT left_hip_roll_skel"), "appears twice"},
        {sub("CHANNELS 3 Yrotation Xrotation Zrotation", "CHANNELS 3 Yrotation Yrotation Zrotation"), "repeated"},
        {sub("CHANNELS 3 Yrotation Xrotation Zrotation", "CHANNELS 3 Xposition Xrotation Zrotation"), "not allowed"},
        {sub("CHANNELS 3", "CHANNELS 4"), "channels"},
        {sub("OFFSET 0.052000", "OFFSET 0.062000"), "retargeting"},
        {sub("Frames: 4", "Frames: 5"), "not a number"},
        {sub("Frames: 4", "Frames: 18001"), "1..18000"},
        {sub("Frame Time: 0.0333333", "Frame Time: 0.0166667"), "30 fps"},
        {sub("Frame Time: 0.0333333", "Frame Time: nan"), "not finite"},
        {std::vector<uint8_t>(good.begin(), good.begin() + long(motion) + 60), "not a number"},
        {[&] { auto v = good; v.insert(v.end(), {'1', '\n'}); return v; }(), "after the last frame"},
        {[&] {
             std::string t = "HIERARCHY\n";
             for (int i = 0; i < 70; ++i) t += "ROOT pelvis_skel { OFFSET 0 0 0 CHANNELS 6 Xposition Yposition Zposition Xrotation Yrotation Zrotation JOINT ";
             return std::vector<uint8_t>(t.begin(), t.end());
         }(), "joint"},
    };
    int n = 0;
    for (const auto & [bytes, expect] : cases) {
        const auto [status, msg] = try_read(bytes, MB_MOTION_FORMAT_BVH);
        EXPECT_EQ(MB_INVALID_FORMAT, status) << "#" << n << ": " << msg;
        EXPECT_NE(std::string::npos, msg.find(expect)) << "#" << n << ": " << msg;
        ++n;
    }
}

TEST(AnimExport, ReadFileRefusesNonRegularAndOversized) {
    char        err[512];
    mb_motion * m = nullptr;
    EXPECT_EQ(MB_IO_ERROR, mb_motion_read_file("/", MB_MOTION_FORMAT_AUTO, &m, err, sizeof err));
    const std::string big = ::testing::TempDir() + "big.glb";
    {
        std::ofstream f(big, std::ios::binary);
        f.seekp(std::streamoff(MB_MOTION_GLB_MAX_BYTES));
        f.put('x');
    }
    EXPECT_EQ(MB_IO_ERROR, mb_motion_read_file(big.c_str(), MB_MOTION_FORMAT_GLB, &m, err, sizeof err));
    std::filesystem::remove(big);
    EXPECT_EQ(nullptr, m);
}

// ---- an agent plan (bundle and styles from the CTest fixtures) ----

struct plan_env {
    std::string bundle, style;
    plan_env() {
        const char * b = std::getenv("MB_TEST_BUNDLE");
        const char * s = std::getenv("MB_TEST_STYLE");
        if (b && s && std::filesystem::exists(b) && std::filesystem::exists(s)) bundle = b, style = s;
    }
};

TEST(AnimExport, PlanFkSurvivesGlbAndBvh) {
    const plan_env env;
    if (env.bundle.empty()) GTEST_SKIP() << "skipped: MB_TEST_BUNDLE / MB_TEST_STYLE not set";
    mbx::runtime_options opt;
    opt.set_threads(1);
    const mbx::model m = mbx::model::load(env.bundle, &opt);
    const mbx::style s = mbx::style::load(m, env.style);
    mbx::agent       a(m);
    a.reset(s);
    mbx::command c;
    c.set_style(s);
    c.set_movement_direction(0.6f, 0, 0.8f);
    c.set_sampling_argmax(true);
    const mbx::motion plan = a.plan(c);
    double            glb_err = 0, bvh_err = 0, bvh_cm_err = 0;
    for (auto [fmt, units, err] : {std::tuple{MB_MOTION_FORMAT_GLB, 0.0f, &glb_err}, std::tuple{MB_MOTION_FORMAT_BVH, 1.0f, &bvh_err},
                                   std::tuple{MB_MOTION_FORMAT_BVH, 100.0f, &bvh_cm_err}}) {
        const auto        bytes = encode(plan, fmt, units);
        const mbx::motion r     = mbx::read_motion(bytes.data(), bytes.size());
        *err                    = max_fk_error(plan, r);
        // and the motion read back round-trips again to the same FK
        const auto        again = encode(r, fmt, units);
        EXPECT_LT(max_fk_error(r, mbx::read_motion(again.data(), again.size())), k_fk_tol);
    }
    std::printf("plan of %llu frames: max |FK(re-read) - plan joint positions|: GLB %.3g m, BVH %.3g m, BVH(cm) %.3g m\n",
                (unsigned long long) plan.frame_count(), glb_err, bvh_err, bvh_cm_err);
    EXPECT_LT(glb_err, k_fk_tol);
    EXPECT_LT(bvh_err, k_fk_tol);
    EXPECT_LT(bvh_cm_err, k_fk_tol);
}

} // namespace

// ---- jump ----

namespace {

// both-foot clearance: the highest frame of the lower foot (ankle roll or toe, whichever is
// lower), above the lower foot's height at frame 0; root arc: the pelvis's rise over frame 0
struct arc {
    double clearance = 0, root_rise = 0, travel = 0;
};

arc measure(const mbx::motion & m) {
    const mbx::float_view p = m.joint_positions(), r = m.root_translations(), t = m.target_root_translations();
    auto foot = [&](uint64_t f, int a, int b) { return std::min(p[(f * J + uint64_t(a)) * 3 + 1], p[(f * J + uint64_t(b)) * 3 + 1]); };
    auto lower = [&](uint64_t f) { return std::min(foot(f, 6, 7), foot(f, 13, 14)); };
    arc a;
    const double ground = lower(0), pelvis = r[1];
    for (uint64_t f = 0; f < m.frame_count(); ++f) {
        a.clearance = std::max(a.clearance, double(lower(f)) - ground);
        a.root_rise = std::max(a.root_rise, double(r[f * 3 + 1]) - pelvis);
    }
    a.travel = std::hypot(double(t[9]) - r[0], double(t[11]) - r[2]);   // last target root vs the start
    return a;
}

} // namespace

TEST(AnimExport, JumpPlansAtFiveMetresPerSecond) {
    const plan_env env;
    if (env.bundle.empty()) GTEST_SKIP() << "skipped: MB_TEST_BUNDLE / MB_TEST_STYLE not set";
    mbx::runtime_options opt;
    opt.set_threads(1);
    const mbx::model m = mbx::model::load(env.bundle, &opt);
    const mbx::style s = mbx::style::load(m, env.style);
    mbx::command     c;
    c.set_style(s);
    c.set_facing_direction(0, 0, 1);   // no movement: the jump goes along the facing
    c.set_target_speed(2.0f);
    c.set_seed(3);
    c.set_sampling_argmax(true);
    mbx::agent walker(m), jumper(m);
    walker.reset(s);
    jumper.reset(s);
    mbx::command moving;
    moving.set_style(s);
    moving.set_facing_direction(0, 0, 1);
    moving.set_movement_direction(0, 0, 1);
    moving.set_target_speed(2.0f);
    moving.set_seed(3);
    moving.set_sampling_argmax(true);
    const mbx::motion walk = walker.plan(moving);
    const mbx::motion jump = mbx::plan_jump(jumper, c);
    const arc         w = measure(walk), j = measure(jump);
    std::printf("walk at 2 m/s: clearance %.3f m, root rise %.3f m, target travel %.2f m (%llu frames)\n"
                "jump at %.0f m/s: clearance %.3f m, root rise %.3f m, target travel %.2f m (%llu frames)\n",
                w.clearance, w.root_rise, w.travel, (unsigned long long) walk.frame_count(), double(MB_JUMP_SPEED), j.clearance,
                j.root_rise, j.travel, (unsigned long long) jump.frame_count());
    // the springs place the jump's targets 2.5x as far per second (what the weights do with that
    // is not testable on random weights)
    EXPECT_GT(j.travel, 1.5 * w.travel);
    // the command itself is unchanged
    float speed = 0;
    char  err[256];
    ASSERT_EQ(MB_OK, mb_command_get_target_speed(c.get(), &speed, err, sizeof err));
    EXPECT_EQ(2.0f, speed);
}
