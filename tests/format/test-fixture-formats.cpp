// .mbparity and .mbreplay: round trips, byte-identical rewrites, truncation at every offset,
// numbered corrupt corpora (each rejected naming the file and the field; nothing written on a
// refused write) and random mutations that must fail cleanly
#include "fixture-samples.h"
#include "format-test-util.h"

#include "format/error.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <fstream>
#include <random>

namespace {

using namespace mb;
using mb::test::temp_dir;

constexpr float k_nan = std::numeric_limits<float>::quiet_NaN();
constexpr float k_inf = std::numeric_limits<float>::infinity();

void put_u32(std::string & b, size_t off, uint32_t v) { std::memcpy(&b[off], &v, 4); }
void put_f32(std::string & b, size_t off, float v) { std::memcpy(&b[off], &v, 4); }

// the reader's message, "" when it accepts; "WRONG STATUS" when it throws anything but invalid_format
template <class Parse> std::string parse_error(Parse parse, const std::string & bytes) {
    try {
        parse(bytes);
        return "";
    } catch (const mb::error & e) {
        return e.code() == status::invalid_format ? e.what() : std::string("WRONG STATUS ") + e.what();
    } catch (const std::exception & e) {
        return std::string("WRONG STATUS ") + e.what();
    }
}

std::string parity_error(const std::string & b) {
    return parse_error([](const std::string & x) { mbparity_parse(x, "case.mbparity"); }, b);
}
std::string replay_error(const std::string & b) {
    return parse_error([](const std::string & x) { mbreplay_parse(x, "case.mbreplay"); }, b);
}

struct corrupt_case {
    const char *                      name;
    std::function<void(std::string &)> mutate;
    const char *                      field;
};

// ---- .mbparity ---------------------------------------------------------------------------------

const std::string & parity_bytes() {
    static const std::string b = mbparity_serialize(mb::test::sample_parity());
    return b;
}

// byte offsets of plan p's fields in parity_bytes() (plan 0: 24 frames, plan 1: 28)
constexpr size_t k_plan0 = 36 + 34 * 4 + 34 * 3 * 4;
size_t plan_size(size_t F) { return 48 + 4 * (12 + 544 + F * (3 + 136 + 102) + 12 + 544 + 408); }
size_t plan_at(int p) { return k_plan0 + (p == 0 ? 0 : plan_size(24)); }
size_t context_roots(int p) { return plan_at(p) + 48; }
size_t context_local(int p) { return context_roots(p) + 48; }
size_t expected_roots(int p) { return context_local(p) + 544 * 4; }
size_t frames_of(int p) { return p == 0 ? 24 : 28; }
size_t expected_local(int p) { return expected_roots(p) + frames_of(p) * 12; }
size_t expected_joints(int p) { return expected_local(p) + frames_of(p) * 544; }
size_t target_roots(int p) { return expected_joints(p) + frames_of(p) * 408; }
size_t target_local(int p) { return target_roots(p) + 48; }
size_t target_joints(int p) { return target_local(p) + 544 * 4; }

const corrupt_case k_parity_cases[] = {
    {"01 empty file", [](std::string & b) { b.clear(); }, "magic"},
    {"02 seven bytes", [](std::string & b) { b.resize(7); }, "magic"},
    {"03 bad magic", [](std::string & b) { b[0] = 'X'; }, "magic"},
    {"04 a replay's magic", [](std::string & b) { std::memcpy(&b[0], "MBRPLY1", 8); }, "not a .mbparity"},
    {"05 version 0", [](std::string & b) { put_u32(b, 8, 0); }, "version"},
    {"06 version 2", [](std::string & b) { put_u32(b, 8, 2); }, "version"},
    {"07 fps 0", [](std::string & b) { put_u32(b, 12, 0); }, "fps"},
    {"08 fps 1001", [](std::string & b) { put_u32(b, 12, 1001); }, "fps"},
    {"09 plan count 0", [](std::string & b) { put_u32(b, 16, 0); }, "plan count"},
    {"10 plan count 10001", [](std::string & b) { put_u32(b, 16, 10001); }, "plan count"},
    {"11 plan count 3, two present", [](std::string & b) { put_u32(b, 16, 3); }, "truncated"},
    {"12 plan count 2^32-1", [](std::string & b) { put_u32(b, 16, 0xFFFFFFFFu); }, "plan count"},
    {"13 joints 33", [](std::string & b) { put_u32(b, 20, 33); }, "joints"},
    {"14 joints 35", [](std::string & b) { put_u32(b, 20, 35); }, "joints"},
    {"15 context frames 3", [](std::string & b) { put_u32(b, 24, 3); }, "context frames"},
    {"16 target frames 5", [](std::string & b) { put_u32(b, 28, 5); }, "target frames"},
    {"17 flags 1", [](std::string & b) { put_u32(b, 32, 1); }, "flags"},
    {"18 root parent 0", [](std::string & b) { put_u32(b, 36, 0); }, "parents[0]"},
    {"19 joint 5 its own parent", [](std::string & b) { put_u32(b, 36 + 5 * 4, 5); }, "parents[5]"},
    {"20 joint 5 parent after it", [](std::string & b) { put_u32(b, 36 + 5 * 4, 7); }, "parents[5]"},
    {"21 joint 3 parent -2", [](std::string & b) { put_u32(b, 36 + 3 * 4, uint32_t(-2)); }, "parents[3]"},
    {"22 neutral NaN", [](std::string & b) { put_f32(b, 172 + 40, k_nan); }, "neutral joints[10]"},
    {"23 neutral +Inf", [](std::string & b) { put_f32(b, 172, k_inf); }, "neutral joints[0]"},
    {"24 expected frames 20", [](std::string & b) { put_u32(b, plan_at(0) + 4, 20); }, "expected frames"},
    {"25 expected frames 68", [](std::string & b) { put_u32(b, plan_at(0) + 4, 68); }, "expected frames"},
    {"26 expected frames 26", [](std::string & b) { put_u32(b, plan_at(0) + 4, 26); }, "multiple of 4"},
    {"27 expected frames 2^32-1", [](std::string & b) { put_u32(b, plan_at(1) + 4, 0xFFFFFFFFu); }, "plan 1 expected frames"},
    {"28 mode -1", [](std::string & b) { put_u32(b, plan_at(0) + 8, uint32_t(-1)); }, "mode"},
    {"29 mode 15", [](std::string & b) { put_u32(b, plan_at(1) + 8, 15); }, "plan 1 mode"},
    {"30 reserved 1", [](std::string & b) { put_u32(b, plan_at(0) + 12, 1); }, "reserved"},
    {"31 movement NaN", [](std::string & b) { put_f32(b, plan_at(0) + 24, k_nan); }, "plan 0 movement[0]"},
    {"32 facing -Inf", [](std::string & b) { put_f32(b, plan_at(1) + 44, -k_inf); }, "plan 1 facing[2]"},
    {"33 context root NaN", [](std::string & b) { put_f32(b, context_roots(0) + 4, k_nan); }, "context roots[1]"},
    {"34 context quaternion zero", [](std::string & b) { put_f32(b, context_local(0) + 12, 0); }, "context local rotations quaternion 0"},
    {"35 context quaternion norm² 1.0201", [](std::string & b) { put_f32(b, context_local(1) + 28, 1.01f); }, "squared norm"},
    {"36 expected quaternion norm² 0.9801", [](std::string & b) { put_f32(b, expected_local(0) + 16 * 5 + 12, 0.99f); },
     "expected local rotations quaternion 5"},
    {"37 expected quaternion NaN", [](std::string & b) { put_f32(b, expected_local(1), k_nan); }, "expected local rotations[0]"},
    {"38 expected root NaN", [](std::string & b) { put_f32(b, expected_roots(1) + 8, k_nan); }, "plan 1 expected roots[2]"},
    {"39 expected joint +Inf", [](std::string & b) { put_f32(b, expected_joints(0) + 400, k_inf); }, "expected joint positions[100]"},
    {"40 target root NaN", [](std::string & b) { put_f32(b, target_roots(0), k_nan); }, "target roots[0]"},
    {"41 target quaternion norm² 4", [](std::string & b) { put_f32(b, target_local(1) + 12, 2.0f); }, "target local rotations"},
    {"42 target joint NaN", [](std::string & b) { put_f32(b, target_joints(1) + 4 * 407, k_nan); }, "target joint positions[407]"},
    {"43 one trailing byte", [](std::string & b) { b.push_back('\0'); }, "trailing"},
    {"44 last byte missing", [](std::string & b) { b.pop_back(); }, "truncated"},
    {"45 plan 1 says 24 frames (bytes left over)", [](std::string & b) { put_u32(b, plan_at(1) + 4, 24); }, "trailing"},
    {"46 plan 1 says 32 frames (bytes missing)", [](std::string & b) { put_u32(b, plan_at(1) + 4, 32); }, "truncated"},
};

TEST(mbparity, round_trip_is_byte_identical) {
    const parity_fixture f = mbparity_parse(parity_bytes(), "sample");
    ASSERT_EQ(f.plans.size(), 2u);
    EXPECT_EQ(f.plans[1].frames, 28u);
    EXPECT_EQ(f.plans[1].seed, 0x1'0000'0000ull + 1486);
    EXPECT_EQ(f.plans[0].expected_joints.size(), 24u * 34 * 3);
    EXPECT_EQ(parity_bytes().size(), k_plan0 + plan_size(24) + plan_size(28));
    EXPECT_EQ(mbparity_serialize(f), parity_bytes());
    temp_dir dir;
    mbparity_write(dir.file("a.mbparity"), f);
    EXPECT_EQ(mb::test::read_bytes(dir.file("a.mbparity")), parity_bytes());
    EXPECT_EQ(mbparity_serialize(mbparity_read(dir.file("a.mbparity"))), parity_bytes());
}

TEST(mbparity, corrupt_corpus) {
    ASSERT_EQ(parity_error(parity_bytes()), "");
    ASSERT_GE(std::size(k_parity_cases), 30u);
    for (const corrupt_case & c : k_parity_cases) {
        std::string b = parity_bytes();
        c.mutate(b);
        const std::string msg = parity_error(b);
        EXPECT_NE(msg, "") << c.name << ": accepted";
        EXPECT_EQ(msg.find("WRONG STATUS"), std::string::npos) << c.name << ": " << msg;
        EXPECT_NE(msg.find(c.field), std::string::npos) << c.name << ": message lacks '" << c.field << "': " << msg;
        EXPECT_EQ(msg.rfind("case.mbparity: ", 0), 0u) << c.name << ": message lacks the file: " << msg;
    }
}

TEST(mbparity, truncation_at_every_offset_is_rejected) {
    const std::string & b = parity_bytes();
    for (size_t n = 0; n < b.size(); n += (n < 1024 ? 1 : 61)) {
        const std::string msg = parity_error(b.substr(0, n));
        ASSERT_NE(msg.find("truncated"), std::string::npos) << n << " bytes: " << msg;
    }
}

TEST(mbparity, refused_write_changes_nothing) {
    temp_dir dir;
    const std::string path = dir.file("keep.mbparity");
    mbparity_write(path, mb::test::sample_parity());
    parity_fixture bad = mb::test::sample_parity();
    bad.plans[1].expected_local_xyzw[7] = 3.0f;
    try {
        mbparity_write(path, bad);
        FAIL() << "an invalid fixture was written";
    } catch (const mb::error & e) {
        EXPECT_EQ(e.code(), status::invalid_argument);
        EXPECT_NE(std::string(e.what()).find("plan 1 expected local rotations quaternion 1"), std::string::npos) << e.what();
    }
    EXPECT_EQ(mb::test::read_bytes(path), parity_bytes());
    EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
    bad = mb::test::sample_parity();
    bad.plans[0].expected_roots.pop_back();
    EXPECT_THROW(mbparity_serialize(bad), mb::error);
}

TEST(mbparity, missing_file_and_directory_are_io_errors) {
    temp_dir dir;
    for (const std::string & p : {dir.file("absent.mbparity"), dir.path.string()}) {
        try {
            mbparity_read(p);
            FAIL() << p;
        } catch (const mb::error & e) {
            EXPECT_EQ(e.code(), status::io_error) << e.what();
        }
    }
}

// ---- .mbreplay ---------------------------------------------------------------------------------

const std::string & replay_bytes() {
    static const std::string b = mbreplay_serialize(mb::test::sample_replay());
    return b;
}

// field offsets of sample_replay(): F 40, J 5, Q 7, P 3
constexpr size_t k_rF = 40, k_rJ = 5, k_rQ = 7, k_rP = 3;
constexpr size_t r_parents = 40, r_modes = r_parents + 4 * k_rJ, r_active = r_modes + 4 * k_rF, r_qpos = r_active + 4 * k_rF,
                 r_pos = r_qpos + 4 * k_rF * k_rQ, r_first = r_pos + 4 * k_rF * k_rJ * 3, r_pmode = r_first + 4 * k_rP,
                 r_plen = r_pmode + 4 * k_rP, r_target = r_plen + 4 * k_rP, r_end = r_target + 4 * k_rP * 4 * k_rJ * 3;

const corrupt_case k_replay_cases[] = {
    {"01 empty file", [](std::string & b) { b.clear(); }, "magic"},
    {"02 three bytes", [](std::string & b) { b.resize(3); }, "magic"},
    {"03 bad magic", [](std::string & b) { b[6] = '2'; }, "magic"},
    {"04 a parity fixture's magic", [](std::string & b) { std::memcpy(&b[0], "MBPARI1", 8); }, "not a .mbreplay"},
    {"05 header cut at 20 bytes", [](std::string & b) { b.resize(20); }, "truncated"},
    {"06 version 0", [](std::string & b) { put_u32(b, 8, 0); }, "version"},
    {"07 version 2", [](std::string & b) { put_u32(b, 8, 2); }, "version"},
    {"08 fps 0", [](std::string & b) { put_u32(b, 12, 0); }, "fps"},
    {"09 fps 1001", [](std::string & b) { put_u32(b, 12, 1001); }, "fps"},
    {"10 frames 0", [](std::string & b) { put_u32(b, 16, 0); }, "frames"},
    {"11 frames 1,000,001", [](std::string & b) { put_u32(b, 16, 1000001); }, "frames"},
    {"12 joints 0", [](std::string & b) { put_u32(b, 20, 0); }, "joints"},
    {"13 joints 65", [](std::string & b) { put_u32(b, 20, 65); }, "joints"},
    {"14 qpos 0", [](std::string & b) { put_u32(b, 24, 0); }, "qpos"},
    {"15 qpos 257", [](std::string & b) { put_u32(b, 24, 257); }, "qpos"},
    {"16 plans above frames", [](std::string & b) { put_u32(b, 28, 41); }, "exceed frames"},
    {"17 target frames 3", [](std::string & b) { put_u32(b, 32, 3); }, "target frames"},
    {"18 flags 1", [](std::string & b) { put_u32(b, 36, 1); }, "flags"},
    {"19 dimensions beyond 512 MiB", [](std::string & b) {
         put_u32(b, 16, 1000000); put_u32(b, 20, 64); put_u32(b, 24, 256);
     }, "512 MiB"},
    {"20 frames 41 (payload short)", [](std::string & b) { put_u32(b, 16, 41); }, "truncated"},
    {"21 joints 4 (payload long)", [](std::string & b) { put_u32(b, 20, 4); }, "trailing"},
    {"22 last byte missing", [](std::string & b) { b.pop_back(); }, "truncated"},
    {"23 one trailing byte", [](std::string & b) { b.push_back('x'); }, "trailing"},
    {"24 root parent 0", [](std::string & b) { put_u32(b, r_parents, 0); }, "parents[0]"},
    {"25 joint 2 its own parent", [](std::string & b) { put_u32(b, r_parents + 8, 2); }, "parents[2]"},
    {"26 joint 4 parent -1", [](std::string & b) { put_u32(b, r_parents + 16, uint32_t(-1)); }, "parents[4]"},
    {"27 mode -1", [](std::string & b) { put_u32(b, r_modes + 12, uint32_t(-1)); }, "modes[3]"},
    {"28 mode 15", [](std::string & b) { put_u32(b, r_modes + 4 * 39, 15); }, "modes[39]"},
    {"29 active plan -2", [](std::string & b) { put_u32(b, r_active, uint32_t(-2)); }, "active plan[0]"},
    {"30 active plan = plan count", [](std::string & b) { put_u32(b, r_active + 4 * 20, 3); }, "active plan[20]"},
    {"31 qpos NaN", [](std::string & b) { put_f32(b, r_qpos + 4 * 100, k_nan); }, "qpos[100]"},
    {"32 joint position +Inf", [](std::string & b) { put_f32(b, r_pos + 4 * 7, k_inf); }, "joint positions[7]"},
    {"33 first playback frame = frames", [](std::string & b) { put_u32(b, r_first + 8, 40); }, "first playback frame[2]"},
    {"34 first playback frames out of order", [](std::string & b) { put_u32(b, r_first + 4, 3); }, "precedes"},
    {"35 plan mode 15", [](std::string & b) { put_u32(b, r_pmode + 4, 15); }, "plan mode[1]"},
    {"36 plan length 0", [](std::string & b) { put_u32(b, r_plen, 0); }, "plan length[0]"},
    {"37 target position NaN", [](std::string & b) { put_f32(b, r_end - 4, k_nan); }, "target positions[179]"},
    {"38 plans 0 (payload long)", [](std::string & b) { put_u32(b, 28, 0); }, "trailing"},
};

TEST(mbreplay, round_trip_is_byte_identical) {
    EXPECT_EQ(replay_bytes().size(), r_end);
    const replay_session s = mbreplay_parse(replay_bytes(), "sample");
    EXPECT_EQ(s.frames(), 40u);
    EXPECT_EQ(s.plans(), 3u);
    EXPECT_EQ(s.active_plan[3], -1);
    EXPECT_EQ(mbreplay_serialize(s), replay_bytes());
    temp_dir dir;
    mbreplay_write(dir.file("a.mbreplay"), s);
    EXPECT_EQ(mbreplay_serialize(mbreplay_read(dir.file("a.mbreplay"))), replay_bytes());
}

TEST(mbreplay, corrupt_corpus) {
    ASSERT_EQ(replay_error(replay_bytes()), "");
    ASSERT_GE(std::size(k_replay_cases), 30u);
    for (const corrupt_case & c : k_replay_cases) {
        std::string b = replay_bytes();
        c.mutate(b);
        const std::string msg = replay_error(b);
        EXPECT_NE(msg, "") << c.name << ": accepted";
        EXPECT_EQ(msg.find("WRONG STATUS"), std::string::npos) << c.name << ": " << msg;
        EXPECT_NE(msg.find(c.field), std::string::npos) << c.name << ": message lacks '" << c.field << "': " << msg;
        EXPECT_EQ(msg.rfind("case.mbreplay: ", 0), 0u) << c.name << ": message lacks the file: " << msg;
    }
}

TEST(mbreplay, truncation_at_every_offset_is_rejected) {
    const std::string & b = replay_bytes();
    for (size_t n = 0; n < b.size(); ++n) {
        const std::string msg = replay_error(b.substr(0, n));
        ASSERT_NE(msg.find("truncated"), std::string::npos) << n << " bytes: " << msg;
    }
}

TEST(mbreplay, refused_write_changes_nothing) {
    temp_dir dir;
    const std::string path = dir.file("keep.mbreplay");
    mbreplay_write(path, mb::test::sample_replay());
    replay_session bad = mb::test::sample_replay();
    bad.active_plan[9] = 7;
    EXPECT_THROW(mbreplay_write(path, bad), mb::error);
    EXPECT_EQ(mb::test::read_bytes(path), replay_bytes());
    EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
}

// random byte flips of both formats: accepted or refused with invalid_format, never anything else
TEST(fixture_formats, random_mutations_fail_cleanly) {
    std::mt19937 rng(7);
    for (const std::string * base : {&parity_bytes(), &replay_bytes()}) {
        const bool parity = base == &parity_bytes();
        for (int it = 0; it < 400; ++it) {
            std::string b = *base;
            const int   flips = 1 + int(rng() % 4);
            for (int k = 0; k < flips; ++k) b[rng() % b.size()] = char(rng());
            const std::string msg = parity ? parity_error(b) : replay_error(b);
            EXPECT_EQ(msg.find("WRONG STATUS"), std::string::npos) << msg;
        }
    }
}

} // namespace

// the Python writers (tools/reference/mbfixtures.py) → the C++ readers → byte-identical rewrites
TEST(fixture_formats, python_writer_files_read_and_rewrite_byte_identically) {
    const std::string py = MB_PYTHON;
    if (!std::filesystem::exists(py)) GTEST_SKIP() << "skipped: " << py << " not found";
    temp_dir          dir;
    const std::string script = dir.file("w.py");
    std::ofstream(script) << "import sys\n"
                             "sys.path.insert(0, '" MB_SOURCE_DIR "/tools/reference')\n"
                             "import numpy as np\n"
                             "from mbfixtures import write_mbparity, write_mbreplay\n"
                             "g = np.random.default_rng(5)\n"
                             "def q(*s):\n"
                             "    v = g.normal(size=s + (4,)); return v / np.linalg.norm(v, axis=-1, keepdims=True)\n"
                             "par = [-1, 0, 1, 2, 3, 4, 5, 6, 0, 8, 9, 10, 11, 12, 13, 0, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24,"
                             " 17, 26, 27, 28, 29, 30, 31, 32]\n"
                             "plans = []\n"
                             "for i, F in enumerate([64, 36, 24]):\n"
                             "    plans.append(dict(command_frame=16 * i, frames=F, mode=i, seed=2**40 + i, movement=g.normal(size=3),"
                             " facing=g.normal(size=3), context_roots=g.normal(size=(4, 3)), context_local_xyzw=q(4, 34),"
                             " expected_roots=g.normal(size=(F, 3)), expected_local_xyzw=q(F, 34), expected_joints=g.normal(size=(F, 34, 3)),"
                             " target_roots=g.normal(size=(4, 3)), target_local_xyzw=q(4, 34), target_joints=g.normal(size=(4, 34, 3))))\n"
                             "write_mbparity(sys.argv[1], 30, par, g.normal(size=(34, 3)), plans)\n"
                             "write_mbreplay(sys.argv[2], 50, [-1, 0, 0, 2], g.integers(0, 15, 90), np.r_[[-1] * 10, [0] * 40, [1] * 40],"
                             " g.normal(size=(90, 36)), g.normal(size=(90, 4, 3)), [10, 50], [2, 14], [64, 24], g.normal(size=(2, 4, 4, 3)))\n";
    const std::string cmd = py + " " + script + " " + dir.file("a.mbparity") + " " + dir.file("a.mbreplay");
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    const std::string pb = mb::test::read_bytes(dir.file("a.mbparity")), rb = mb::test::read_bytes(dir.file("a.mbreplay"));
    const parity_fixture f = mbparity_read(dir.file("a.mbparity"));
    EXPECT_EQ(f.plans.size(), 3u);
    EXPECT_EQ(f.plans[2].seed, (1ull << 40) + 2);
    EXPECT_EQ(mbparity_serialize(f), pb);
    const replay_session s = mbreplay_read(dir.file("a.mbreplay"));
    EXPECT_EQ(s.frames(), 90u);
    EXPECT_EQ(s.plan_mode[1], 14);
    EXPECT_EQ(mbreplay_serialize(s), rb);
}
