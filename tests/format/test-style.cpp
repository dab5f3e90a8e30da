// .mbstyle v1: writer → reader round trip, the agent-small clip library as styles,
// and a numbered corpus of broken files that the reader must reject
#include "format/gguf.h"
#include "format/style.h"

#include "support/clip-library.h"
#include "support/lenient-npz.h"
#include "support/test-paths.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>

using namespace mb;

namespace {

std::string temp_path(const std::string & name) {
    return (std::filesystem::temp_directory_path() / ("mb-test-style-" + std::to_string(::getpid()) + "-" + name)).string();
}

// a small valid style: a slow turn with an arm swing, rotations about +Y
style_asset make_style(uint32_t frames) {
    style_asset s;
    s.name          = "test_walk";
    s.speed         = 0.7f;
    s.frames        = frames;
    s.index         = 3;
    s.source_sha256 = std::string(64, 'a');
    s.joint_positions.resize(size_t(frames) * 34 * 3);
    s.joint_rotations.resize(size_t(frames) * 34 * 9);
    s.root_positions.resize(size_t(frames) * 3);
    s.headings.resize(frames);
    for (uint32_t f = 0; f < frames; ++f) {
        const float h = 0.05f * f;
        s.headings[f] = h;
        s.root_positions[f * 3 + 0] = 0.03f * f;
        s.root_positions[f * 3 + 2] = 0.01f * f;
        for (int j = 0; j < 34; ++j) {
            float * p = &s.joint_positions[(size_t(f) * 34 + j) * 3];
            p[0] = 0.01f * j;
            p[1] = 0.8f - 0.02f * j;
            p[2] = 0.001f * f;
            float * r = &s.joint_rotations[(size_t(f) * 34 + j) * 9];
            const float a = h + 0.01f * j;
            const float m[9] = {std::cos(a), 0, std::sin(a), 0, 1, 0, -std::sin(a), 0, std::cos(a)};
            for (int i = 0; i < 9; ++i) r[i] = m[i];
        }
    }
    s.allowed_tokens = {1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0};
    return s;
}

void expect_same(const style_asset & a, const style_asset & b) {
    EXPECT_EQ(a.name, b.name);
    EXPECT_EQ(a.speed, b.speed);
    EXPECT_EQ(a.frames, b.frames);
    EXPECT_EQ(a.index, b.index);
    EXPECT_EQ(a.source_sha256, b.source_sha256);
    EXPECT_EQ(a.joint_positions, b.joint_positions);
    EXPECT_EQ(a.joint_rotations, b.joint_rotations);
    EXPECT_EQ(a.root_positions, b.root_positions);
    EXPECT_EQ(a.headings, b.headings);
    EXPECT_EQ(a.allowed_tokens, b.allowed_tokens);
}

std::string read_bytes(const std::string & path) {
    std::ifstream in(path, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void write_bytes(const std::string & path, const std::string & bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), std::streamsize(bytes.size()));
}

// the writer's layout, built by hand so a test can break any part of it
struct raw_style {
    std::vector<gguf_write_kv>     kvs;
    std::vector<gguf_write_tensor> tensors;
    style_asset                    s;       // owns the tensor data

    explicit raw_style(const style_asset & src) : s(src) {
        auto add = [&](const char * k, gguf_type t) -> gguf_write_kv & {
            gguf_write_kv kv;
            kv.key  = k;
            kv.type = t;
            kvs.push_back(kv);
            return kvs.back();
        };
        add("general.architecture", gguf_type::GGUF_TYPE_STRING).str = "motionbricks";
        add("general.name", gguf_type::GGUF_TYPE_STRING).str         = s.name;
        add("general.alignment", gguf_type::GGUF_TYPE_UINT32).u      = 32;
        add("general.file_type", gguf_type::GGUF_TYPE_UINT32).u      = 0;
        add("motionbricks.format_version", gguf_type::GGUF_TYPE_UINT32).u = 1;
        add("motionbricks.component", gguf_type::GGUF_TYPE_STRING).str = "style";
        add("motionbricks.skeleton", gguf_type::GGUF_TYPE_STRING).str  = "g1skel34";
        add("motionbricks.upstream_revision", gguf_type::GGUF_TYPE_STRING).str = k_style_upstream_revision;
        add("motionbricks.source_sha256", gguf_type::GGUF_TYPE_STRING).str     = s.source_sha256;
        add("motionbricks.parameter_count", gguf_type::GGUF_TYPE_UINT64).u     = 1;
        add("motionbricks.style_name", gguf_type::GGUF_TYPE_STRING).str        = s.name;
        add("motionbricks.style_speed", gguf_type::GGUF_TYPE_FLOAT32).f        = s.speed;
        add("motionbricks.style_frames", gguf_type::GGUF_TYPE_UINT32).u        = s.frames;
        const int64_t f = s.frames;
        tensors.push_back({"allowed_tokens", dtype::DTYPE_I32, {11}, s.allowed_tokens.data()});
        tensors.push_back({"global_headings", dtype::DTYPE_F32, {f}, s.headings.data()});
        tensors.push_back({"global_joint_positions", dtype::DTYPE_F32, {3, 34, f}, s.joint_positions.data()});
        tensors.push_back({"global_joint_rotations", dtype::DTYPE_F32, {9, 34, f}, s.joint_rotations.data()});
        tensors.push_back({"global_root_positions", dtype::DTYPE_F32, {3, f}, s.root_positions.data()});
    }

    gguf_write_kv & kv(const std::string & key) {
        for (auto & k : kvs) {
            if (k.key == key) return k;
        }
        throw std::runtime_error("no kv " + key);
    }
    gguf_write_tensor & tensor(const std::string & name) {
        for (auto & t : tensors) {
            if (t.name == name) return t;
        }
        throw std::runtime_error("no tensor " + name);
    }
    void drop_kv(const std::string & key) {
        for (size_t i = 0; i < kvs.size(); ++i) {
            if (kvs[i].key == key) kvs.erase(kvs.begin() + long(i));
        }
    }
    void write(const std::string & path) const { gguf_write(path, kvs, tensors, 32); }
};

} // namespace

TEST(style, write_read_round_trip_is_identical) {
    const std::string path = temp_path("rt.mbstyle");
    const style_asset s    = make_style(40);
    style_write(path, s);
    const style_asset back = style_read(path);
    expect_same(s, back);
    // deterministic: writing what was read gives the same bytes
    const std::string path2 = temp_path("rt2.mbstyle");
    style_write(path2, back);
    EXPECT_EQ(read_bytes(path), read_bytes(path2));
    // the hand-built layout (the published key set) reads back the same
    raw_style raw(s);
    raw.write(path2);
    style_asset r = style_read(path2);
    EXPECT_FALSE(r.index.has_value());
    r.index = s.index;
    expect_same(s, r);
    // the metadata as the published release writes it
    auto f = gguf_file::open(path);
    EXPECT_EQ(f->get_string("motionbricks.style_name").value(), "test_walk");
    EXPECT_EQ(f->get_u32("motionbricks.style_frames").value(), 40u);
    EXPECT_EQ(f->get_u32("motionbricks.style_index").value(), 3u);
    EXPECT_EQ(f->get_u64("motionbricks.parameter_count").value(), 40u * (102 + 306 + 3 + 1) + 11);
    EXPECT_EQ(f->kv("motionbricks.style_speed")->type, gguf_type::GGUF_TYPE_FLOAT32);
    std::remove(path.c_str());
    std::remove(path2.c_str());
}

// the largest magnitudes a style may hold are accepted; the bounds are the documented ones
TEST(style, magnitudes_at_the_bounds_are_accepted) {
    style_asset s = make_style(8);
    EXPECT_EQ(mb::k_style_max_speed, 10.0f);
    EXPECT_EQ(mb::k_style_max_joint_offset, 5.0f);
    EXPECT_EQ(mb::k_style_max_root_distance, 1e4f);
    EXPECT_NEAR(mb::k_style_max_heading, 4 * 3.14159265f, 1e-5f);
    s.speed              = mb::k_style_max_speed;
    s.joint_positions[4] = -mb::k_style_max_joint_offset;
    s.root_positions[3]  = mb::k_style_max_root_distance;
    s.headings[7]        = mb::k_style_max_heading;
    EXPECT_EQ(mb::style_validate(s), "");
    s.speed = std::nextafter(mb::k_style_max_speed, 100.0f);
    EXPECT_NE(mb::style_validate(s).find("style speed"), std::string::npos) << mb::style_validate(s);
}

TEST(style, writer_refuses_invalid_styles) {
    const std::string path = temp_path("bad-write.mbstyle");
    style_asset s = make_style(8);
    s.allowed_tokens.fill(0);
    EXPECT_THROW(style_write(path, s), std::runtime_error);
    s = make_style(8);
    s.headings.pop_back();
    EXPECT_THROW(style_write(path, s), std::runtime_error);
    EXPECT_FALSE(std::filesystem::exists(path));
}

// the agent-small clip library (upstream's own clip preprocessing) as 15 styles, as its README rebuilds them
TEST(style, agent_small_clip_library_round_trips) {
    MB_REQUIRE_SHARED(lib, "fixtures/agent-small/clip_library.npz");
    const auto                     z      = mb::test::npz_numeric(lib);
    const std::vector<style_asset> styles = mb::test::clip_library_styles(z);
    ASSERT_EQ(styles.size(), 15u);
    for (const style_asset & s : styles) {
        SCOPED_TRACE(s.name);
        const std::string path = temp_path("mode.mbstyle");
        style_write(path, s);
        expect_same(s, style_read(path));
        std::remove(path.c_str());
    }
}

TEST(style, rejects_broken_files) {
    const style_asset good = make_style(12);
    using mutate_fn = std::function<void(raw_style &)>;
    const std::vector<std::pair<std::string, mutate_fn>> cases = {
        {"01 wrong architecture", [](raw_style & r) { r.kv("general.architecture").str = "llama"; }},
        {"02 wrong component", [](raw_style & r) { r.kv("motionbricks.component").str = "pose"; }},
        {"03 wrong skeleton", [](raw_style & r) { r.kv("motionbricks.skeleton").str = "smpl22"; }},
        {"04 unknown format version", [](raw_style & r) { r.kv("motionbricks.format_version").u = 2; }},
        {"05 format version as string", [](raw_style & r) {
             auto & k = r.kv("motionbricks.format_version");
             k.type   = gguf_type::GGUF_TYPE_STRING;
             k.str    = "1";
         }},
        {"06 missing format version", [](raw_style & r) { r.drop_kv("motionbricks.format_version"); }},
        {"07 wrong upstream revision", [](raw_style & r) { r.kv("motionbricks.upstream_revision").str = std::string(40, '0'); }},
        {"08 short source sha256", [](raw_style & r) { r.kv("motionbricks.source_sha256").str = "abc"; }},
        {"09 uppercase source sha256", [](raw_style & r) { r.kv("motionbricks.source_sha256").str = std::string(64, 'A'); }},
        {"10 missing style name", [](raw_style & r) { r.drop_kv("motionbricks.style_name"); }},
        {"11 empty style name", [](raw_style & r) {
             r.kv("motionbricks.style_name").str = "";
             r.kv("general.name").str            = "";
         }},
        {"12 general.name differs", [](raw_style & r) { r.kv("general.name").str = "other"; }},
        {"13 NaN speed", [](raw_style & r) { r.kv("motionbricks.style_speed").f = std::nan(""); }},
        {"14 negative speed", [](raw_style & r) { r.kv("motionbricks.style_speed").f = -0.5; }},
        {"15 speed as UINT32", [](raw_style & r) {
             auto & k = r.kv("motionbricks.style_speed");
             k.type   = gguf_type::GGUF_TYPE_UINT32;
             k.u      = 1;
         }},
        {"16 missing speed", [](raw_style & r) { r.drop_kv("motionbricks.style_speed"); }},
        {"17 frames disagree with tensors", [](raw_style & r) { r.kv("motionbricks.style_frames").u = 11; }},
        {"18 missing frame count", [](raw_style & r) { r.drop_kv("motionbricks.style_frames"); }},
        {"19 style index as string", [](raw_style & r) {
             gguf_write_kv k;
             k.key  = "motionbricks.style_index";
             k.type = gguf_type::GGUF_TYPE_STRING;
             k.str  = "3";
             r.kvs.push_back(k);
         }},
        {"20 parameter count as UINT32", [](raw_style & r) { r.kv("motionbricks.parameter_count").type = gguf_type::GGUF_TYPE_UINT32; }},
        {"21 missing tensor", [](raw_style & r) { r.tensors.pop_back(); }},
        {"22 extra tensor", [](raw_style & r) {
             r.tensors.push_back({"extra", dtype::DTYPE_F32, {3}, r.s.headings.data()});
         }},
        {"23 joint positions [F, 33, 3]", [](raw_style & r) { r.tensor("global_joint_positions").ne = {3, 33, 12}; }},
        {"24 rotations [F, 34, 3, 3]", [](raw_style & r) { r.tensor("global_joint_rotations").ne = {3, 3, 34, 12}; }},
        {"25 rotations as I32", [](raw_style & r) { r.tensor("global_joint_rotations").type = dtype::DTYPE_I32; }},
        {"26 root positions [F, 2]", [](raw_style & r) { r.tensor("global_root_positions").ne = {2, 12}; }},
        {"27 headings [F + 1]", [](raw_style & r) { r.tensor("global_headings").ne = {11}; }},
        {"28 mask [12]", [](raw_style & r) { r.tensor("allowed_tokens").ne = {10}; }},
        {"29 mask as F32", [](raw_style & r) { r.tensor("allowed_tokens").type = dtype::DTYPE_F32; }},
        {"30 mask value 2", [](raw_style & r) { r.s.allowed_tokens[3] = 2; }},
        {"31 mask value -1", [](raw_style & r) { r.s.allowed_tokens[0] = -1; }},
        {"32 mask allows nothing", [](raw_style & r) { r.s.allowed_tokens.fill(0); }},
        {"33 NaN joint position", [](raw_style & r) { r.s.joint_positions[77] = std::nan(""); }},
        {"34 infinite root position", [](raw_style & r) { r.s.root_positions[5] = INFINITY; }},
        {"35 NaN heading", [](raw_style & r) { r.s.headings[11] = std::nan(""); }},
        {"36 NaN rotation", [](raw_style & r) { r.s.joint_rotations[9 * 40] = std::nan(""); }},
        {"37 scaled rotation", [](raw_style & r) {
             for (int i = 0; i < 9; ++i) r.s.joint_rotations[9 * 50 + i] *= 1.01f;
         }},
        {"38 reflection", [](raw_style & r) {
             for (int i = 0; i < 3; ++i) r.s.joint_rotations[9 * 60 + i] *= -1.0f;
         }},
        {"39 three frames", [](raw_style & r) {
             r.kv("motionbricks.style_frames").u = 3;
             for (auto & t : r.tensors) {
                 if (t.name != "allowed_tokens") t.ne.back() = 3;
             }
         }},
        {"40 missing skeleton", [](raw_style & r) { r.drop_kv("motionbricks.skeleton"); }},
        // magnitudes beyond anything physical (they used to pass and fail every plan as a bad script)
        {"46 speed 3.4e38", [](raw_style & r) { r.kv("motionbricks.style_speed").f = 3.4e38; }},
        {"47 speed 10.5 m/s", [](raw_style & r) { r.kv("motionbricks.style_speed").f = 10.5; }},
        {"48 joint position 1e38", [](raw_style & r) { r.s.joint_positions[77] = 1e38f; }},
        {"49 joint 5.5 m from the root", [](raw_style & r) { r.s.joint_positions[3 * 40 + 1] = -5.5f; }},
        {"50 root position 1e38", [](raw_style & r) { r.s.root_positions[6] = 1e38f; }},
        {"51 root 10.5 km away", [](raw_style & r) { r.s.root_positions[2] = 10500.0f; }},
        {"52 heading 1e38", [](raw_style & r) { r.s.headings[3] = 1e38f; }},
        {"53 heading beyond 4 pi", [](raw_style & r) { r.s.headings[3] = -13.0f; }},
    };
    const std::string path = temp_path("broken.mbstyle");
    for (const auto & [what, mutate] : cases) {
        raw_style r(good);
        mutate(r);
        r.write(path);
        try {
            style_read(path);
            ADD_FAILURE() << what << ": accepted";
        } catch (const mb::error & e) {
            // the message names the file; a malformed file is a format error
            EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << what << ": " << e.what();
            EXPECT_EQ(e.code(), mb::status::invalid_format) << what << ": " << e.what();
            std::printf("  %-32s → %s\n", what.c_str(), std::string(e.what()).substr(path.size() + 2).c_str());
        }
    }
    // byte-level damage: bad magic, truncation, a file that is not there
    style_write(path, good);
    const std::string bytes = read_bytes(path);
    std::string       bad   = bytes;
    bad[0]                  = 'X';
    write_bytes(path, bad);
    EXPECT_THROW(style_read(path), std::runtime_error) << "41 bad magic";
    write_bytes(path, bytes.substr(0, bytes.size() - 100));
    EXPECT_THROW(style_read(path), std::runtime_error) << "42 truncated";
    write_bytes(path, bytes.substr(0, 20));
    EXPECT_THROW(style_read(path), std::runtime_error) << "43 header only";
    std::remove(path.c_str());
    EXPECT_THROW(style_read(path), std::runtime_error) << "44 missing file";
    // a frame count over the limit (checked before any tensor is touched)
    raw_style big(good);
    big.kv("motionbricks.style_frames").u = 100001;
    big.write(path);
    EXPECT_THROW(style_read(path), std::runtime_error) << "45 too many frames";
    std::remove(path.c_str());
}

// a style written by the python converter from a qpos CSV is accepted by the reader and
// holds upstream's buffers for that clip library mode (walk_zombie, 90 frames)
TEST(style, python_converter_output_is_accepted) {
    MB_REQUIRE_SHARED(lib, "fixtures/agent-small/clip_library.npz");
    if (!std::filesystem::exists(MB_PYTHON)) GTEST_SKIP() << "skipped: " << MB_PYTHON << " not found";
    const auto z    = mb::test::npz_numeric(lib);
    const int  m    = 10;
    const auto src  = z.at("source_qpos").to_f64();
    const auto offs = z.at("source_offsets").to_i64();
    const auto sidx = z.at("mode_source_index").to_i64();
    const auto a    = z.at("mode_start_frame").to_i64()[m];
    const auto b    = z.at("mode_end_frame").to_i64()[m];
    const std::string csv = temp_path("clip.csv");
    const std::string out = temp_path("zombie.mbstyle");
    {
        std::FILE * f = std::fopen(csv.c_str(), "w");
        ASSERT_NE(f, nullptr);
        for (int64_t r = offs[sidx[m]]; r < offs[sidx[m] + 1]; ++r) {
            for (int c = 0; c < 36; ++c) std::fprintf(f, c ? ",%.9g" : "%.9g", src[r * 36 + c]);
            std::fprintf(f, "\n");
        }
        std::fclose(f);
    }
    const std::string cmd = std::string(MB_PYTHON) + " " + MB_SOURCE_DIR + "/tools/convert.py style --qpos-csv " + csv +
                            " --quat-order wxyz --fps 30 --frames " + std::to_string(a) + ":" + std::to_string(b) +
                            " --name walk_zombie --speed 0.6 --allowed-tokens 6-11 --index 10 --out " + out +
                            " 2>/dev/null";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    const style_asset s = style_read(out);
    EXPECT_EQ(s.name, "walk_zombie");
    EXPECT_EQ(s.frames, 90u);
    EXPECT_FLOAT_EQ(s.speed, 0.6f);
    EXPECT_EQ(s.index, std::optional<uint32_t>(10));
    const int64_t fmax = z.at("global_headings").shape[1];
    const auto    jp   = z.at("global_joint_positions").to_f32();
    const auto    jr   = z.at("global_joint_rotations").to_f32();
    const auto    hr   = z.at("global_headings_raw").to_f32();
    double ep = 0, er = 0, eh = 0;
    for (size_t i = 0; i < s.joint_positions.size(); ++i) ep = std::max(ep, (double) std::fabs(s.joint_positions[i] - jp[m * fmax * 102 + i]));
    for (size_t i = 0; i < s.joint_rotations.size(); ++i) er = std::max(er, (double) std::fabs(s.joint_rotations[i] - jr[m * fmax * 306 + i]));
    for (size_t i = 0; i < s.headings.size(); ++i) eh = std::max(eh, (double) std::fabs(s.headings[i] - hr[m * fmax + i]));
    EXPECT_LE(ep, 1e-5);
    EXPECT_LE(er, 1e-5);
    EXPECT_LE(eh, 1e-5);
    std::printf("  python-made walk_zombie: max err positions %.2e, rotations %.2e, headings %.2e\n", ep, er, eh);
    std::remove(csv.c_str());
    std::remove(out.c_str());
}

// the 15 styles the python converter makes from the synthetic clip checkpoint (restricted
// unpickler, upstream's two heading corrections) are accepted and equal the agent's library
TEST(style, python_library_from_checkpoint_is_accepted) {
    MB_REQUIRE_SHARED(ckpt, "fixtures/agent-small/G1-clip-synthetic.ckpt");
    MB_REQUIRE_SHARED(lib, "fixtures/agent-small/clip_library.npz");
    if (!std::filesystem::exists(MB_PYTHON)) GTEST_SKIP() << "skipped: " << MB_PYTHON << " not found";
    const std::string dir = temp_path("lib");
    const std::string cmd = std::string(MB_PYTHON) + " " + MB_SOURCE_DIR + "/tools/convert.py styles --clips " + ckpt +
                            " --source-sha256 " + std::string(64, '0') + " --out " + dir + " 2>/dev/null";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    const auto z       = mb::test::npz_numeric(lib);
    const auto heads   = z.at("global_headings").to_f32();     // after upstream's load-time corrections
    const auto nframes = z.at("num_frames_per_clip").to_i64();
    const auto mask    = z.at("mode_allowed_pred_num_tokens").to_i64();
    const int64_t fmax = z.at("global_headings").shape[1];
    const char * const *           names  = mb::test::k_clip_modes;
    const std::vector<style_asset> styles = mb::test::clip_library_styles(z);
    for (int m = 0; m < 15; ++m) {
        SCOPED_TRACE(names[m]);
        const std::string path = dir + "/" + names[m] + ".mbstyle";
        const style_asset s    = style_read(path);
        // the two writers agree byte for byte on the same style
        const std::string mine = temp_path("cpp.mbstyle");
        style_write(mine, styles[m]);
        EXPECT_EQ(read_bytes(mine), read_bytes(path));
        std::remove(mine.c_str());
        EXPECT_EQ(s.name, names[m]);
        EXPECT_EQ(s.index, std::optional<uint32_t>(m));
        ASSERT_EQ(int64_t(s.frames), nframes[m]);
        for (uint32_t f = 0; f < s.frames; ++f) EXPECT_EQ(s.headings[f], heads[m * fmax + f]) << "frame " << f;
        for (int i = 0; i < 11; ++i) EXPECT_EQ(s.allowed_tokens[i], mask[m * 11 + i]);
    }
    std::filesystem::remove_all(dir);
}
