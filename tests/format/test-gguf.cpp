// GGUF v3 reader and writer: round trip, determinism, atomicity, and a numbered
// corpus of hand-made corrupt files each rejected with a message naming the field
#include "format-test-util.h"

#include "format/gguf.h"
#include "format/tensor-names.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <optional>
#include <vector>

using mb::gguf_file;
using mb::gguf_type;
using mb::test::gguf_bytes;
using mb::test::temp_dir;

namespace {

struct sample {
    std::vector<float>   a = std::vector<float>(2 * 3 * 4);   // ne {4,3,2}
    std::vector<int32_t> b = {-1, 0, 1, 2, 3};                // ne {5}
    std::vector<float>   c = std::vector<float>(8);           // ne {1,2,1,4}
    sample() {
        for (size_t k = 0; k < a.size(); ++k) a[k] = 0.25f * static_cast<float>(k) - 3.0f;
        for (size_t k = 0; k < c.size(); ++k) c[k] = std::ldexp(1.0f, static_cast<int>(k) - 4);
    }
    std::vector<mb::gguf_write_kv> kvs() const {
        std::vector<mb::gguf_write_kv> kv(7);
        kv[0].key = "general.architecture"; kv[0].type = gguf_type::GGUF_TYPE_STRING;  kv[0].str = "motionbricks";
        kv[1].key = "general.alignment";    kv[1].type = gguf_type::GGUF_TYPE_UINT32;  kv[1].u = 32;
        kv[2].key = "test.u64";             kv[2].type = gguf_type::GGUF_TYPE_UINT64;  kv[2].u = 1ull << 40;
        kv[3].key = "test.i32";             kv[3].type = gguf_type::GGUF_TYPE_INT32;   kv[3].i = -7;
        kv[4].key = "test.f32";             kv[4].type = gguf_type::GGUF_TYPE_FLOAT32; kv[4].f = 1.5;
        kv[5].key = "test.bool";            kv[5].type = gguf_type::GGUF_TYPE_BOOL;    kv[5].u = 1;
        kv[6].key = "test.utf8";            kv[6].type = gguf_type::GGUF_TYPE_STRING;  kv[6].str = "h\xc3\xa9llo \xe2\x82\xac";
        return kv;
    }
    std::vector<mb::gguf_write_tensor> tensors() const {
        return {
            {"alpha", mb::dtype::DTYPE_F32, {4, 3, 2}, a.data()},
            {"beta", mb::dtype::DTYPE_I32, {5}, b.data()},
            {"gamma", mb::dtype::DTYPE_F32, {1, 2, 1, 4}, c.data()},
        };
    }
};

// the message of the mb::error that opening `bytes` throws ("" when it opens); a malformed file is
// always invalid_format, never another status
std::string open_error(const temp_dir & dir, const std::string & bytes) {
    std::string path = dir.file("case.gguf");
    mb::test::write_bytes(path, bytes);
    try {
        auto f = gguf_file::open(path);
        // touch everything the reader hands out
        volatile uint8_t sink = 0;
        for (const auto & t : f->tensors()) {
            const auto * p = static_cast<const uint8_t *>(t.data);
            for (uint64_t k = 0; k < t.n_bytes; ++k) sink = sink ^ p[k];
        }
        (void) sink;
        return "";
    } catch (const mb::error & e) {
        if (e.code() != mb::status::invalid_format) return std::string("WRONG STATUS: ") + e.what();
        return e.what();
    }
}

// the status of the mb::error that f() throws (nullopt when it returns)
template <class F> std::optional<mb::status> status_thrown(F && f) {
    try {
        f();
    } catch (const mb::error & e) {
        return e.code();
    }
    return std::nullopt;
}

} // namespace

TEST(gguf, round_trip) {
    temp_dir dir;
    sample   s;
    std::string path = dir.file("rt.gguf");
    mb::gguf_write(path, s.kvs(), s.tensors());
    auto f = gguf_file::open(path);

    ASSERT_EQ(f->kvs().size(), 7u);
    EXPECT_EQ(f->kvs()[0].key, "general.architecture");         // write order kept
    EXPECT_EQ(*f->get_string("general.architecture"), "motionbricks");
    EXPECT_EQ(*f->get_u32("general.alignment"), 32u);
    EXPECT_EQ(*f->get_u64("test.u64"), 1ull << 40);
    EXPECT_EQ(f->kv("test.i32")->i, -7);
    EXPECT_EQ(f->kv("test.f32")->f, 1.5);
    EXPECT_EQ(f->kv("test.bool")->u, 1u);
    EXPECT_EQ(*f->get_string("test.utf8"), "h\xc3\xa9llo \xe2\x82\xac");
    EXPECT_FALSE(f->get_u32("absent").has_value());
    EXPECT_THROW(f->get_u32("test.u64"), mb::error);            // wrong type is an error, not absent
    EXPECT_EQ(*f->meta_uint("test.u64"), 1ull << 40);
    EXPECT_THROW(f->meta_uint("test.i32"), mb::error);
    EXPECT_EQ(f->alignment(), 32u);

    ASSERT_EQ(f->tensors().size(), 3u);
    const mb::tensor_view * a = f->find("alpha");
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(a->type, mb::dtype::DTYPE_F32);
    EXPECT_EQ(a->n_dims, 3u);
    EXPECT_EQ(a->ne[0], 4);
    EXPECT_EQ(a->ne[1], 3);
    EXPECT_EQ(a->ne[2], 2);
    EXPECT_EQ(a->ne[3], 1);
    EXPECT_EQ(mb::torch_shape_string(*a), "[2, 3, 4]");
    EXPECT_EQ(0, std::memcmp(a->data, s.a.data(), s.a.size() * 4));
    const mb::tensor_view * b = f->find("beta");
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(b->type, mb::dtype::DTYPE_I32);
    EXPECT_EQ(0, std::memcmp(b->data, s.b.data(), s.b.size() * 4));
    const mb::tensor_view * c = f->find("gamma");
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(c->n_dims, 4u);
    EXPECT_EQ(c->n_elements(), 8);
    EXPECT_EQ(0, std::memcmp(c->data, s.c.data(), s.c.size() * 4));
    EXPECT_EQ(f->find("delta"), nullptr);

    // each tensor sits at an aligned file offset; the file ends on the alignment (trailing padding)
    EXPECT_EQ(f->file_size() % 32, 0u);
    const uint8_t * base = static_cast<const uint8_t *>(f->tensors()[0].data);
    for (const auto & t : f->tensors()) {
        EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data) % 32, 0u) << t.name;
        EXPECT_GE(static_cast<const uint8_t *>(t.data), base);
    }
    // offsets: alpha 96 bytes -> padded to 96, beta 20 -> 32, gamma at 128
    EXPECT_EQ(static_cast<const uint8_t *>(b->data) - base, 96);
    EXPECT_EQ(static_cast<const uint8_t *>(c->data) - base, 128);
}

TEST(gguf, writer_is_deterministic_and_atomic) {
    temp_dir dir;
    sample   s;
    mb::gguf_write(dir.file("one.gguf"), s.kvs(), s.tensors());
    mb::gguf_write(dir.file("two.gguf"), s.kvs(), s.tensors());
    std::string one = mb::test::read_bytes(dir.file("one.gguf"));
    EXPECT_FALSE(one.empty());
    EXPECT_EQ(one, mb::test::read_bytes(dir.file("two.gguf")));
    EXPECT_FALSE(std::filesystem::exists(dir.file("one.gguf.tmp")));

    // overwriting replaces the file whole
    mb::gguf_write(dir.file("one.gguf"), s.kvs(), {});
    EXPECT_LT(mb::test::read_bytes(dir.file("one.gguf")).size(), one.size());

    // a failing write leaves the old file and no temp file behind
    mb::gguf_write(dir.file("one.gguf"), s.kvs(), s.tensors());
    auto bad = s.tensors();
    bad[1].name = "alpha";
    EXPECT_EQ(status_thrown([&] { mb::gguf_write(dir.file("one.gguf"), s.kvs(), bad); }),
              std::optional<mb::status>(mb::status::invalid_argument));
    EXPECT_EQ(one, mb::test::read_bytes(dir.file("one.gguf")));
    EXPECT_FALSE(std::filesystem::exists(dir.file("one.gguf.tmp")));
}

TEST(gguf, writer_rejects_bad_input) {
    temp_dir    dir;
    sample      s;
    std::string p = dir.file("w.gguf");
    auto        t = s.tensors();
    t[0].name = std::string(64, 'x');
    EXPECT_THROW(mb::gguf_write(p, s.kvs(), t), mb::error);
    t = s.tensors();
    t[0].ne = {4, 0, 2};
    EXPECT_THROW(mb::gguf_write(p, s.kvs(), t), mb::error);
    t = s.tensors();
    t[0].ne = {1, 1, 1, 1, 24};
    EXPECT_THROW(mb::gguf_write(p, s.kvs(), t), mb::error);
    auto kv = s.kvs();
    kv.push_back(kv[0]);
    EXPECT_THROW(mb::gguf_write(p, kv, s.tensors()), mb::error);
    EXPECT_THROW(mb::gguf_write(p, s.kvs(), s.tensors(), 24), mb::error);   // not a power of two
    EXPECT_THROW(mb::gguf_write(p, s.kvs(), s.tensors(), 64), mb::error);   // disagrees with general.alignment
    EXPECT_FALSE(std::filesystem::exists(p));
}

TEST(gguf, other_alignment_round_trips) {
    temp_dir dir;
    sample   s;
    auto     kv = s.kvs();
    kv[1].u = 64;
    mb::gguf_write(dir.file("a64.gguf"), kv, s.tensors(), 64);
    auto f = gguf_file::open(dir.file("a64.gguf"));
    EXPECT_EQ(f->alignment(), 64u);
    EXPECT_EQ(f->file_size() % 64, 0u);
    for (const auto & t : f->tensors()) EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data) % 64, 0u);
    EXPECT_EQ(0, std::memcmp(f->find("gamma")->data, s.c.data(), 32));
}

TEST(gguf, truncation_at_every_offset_is_rejected) {
    temp_dir dir;
    // tensors sized to a multiple of the alignment, so the file has no trailing padding
    std::vector<float> x(16, 1.0f), y(8, 2.0f);
    std::vector<mb::gguf_write_kv> kv(2);
    kv[0].key = "general.architecture"; kv[0].type = gguf_type::GGUF_TYPE_STRING; kv[0].str = "motionbricks";
    kv[1].key = "n";                    kv[1].type = gguf_type::GGUF_TYPE_UINT32; kv[1].u = 3;
    mb::gguf_write(dir.file("full.gguf"), kv, {{"x", mb::dtype::DTYPE_F32, {16}, x.data()},
                                              {"y", mb::dtype::DTYPE_F32, {4, 2}, y.data()}});
    std::string full = mb::test::read_bytes(dir.file("full.gguf"));
    ASSERT_EQ(open_error(dir, full), "");
    for (size_t n = 0; n < full.size(); ++n) {
        std::string msg = open_error(dir, full.substr(0, n));
        ASSERT_NE(msg, "") << "prefix of " << n << " bytes was accepted";
        EXPECT_EQ(msg.find("WRONG STATUS"), std::string::npos) << msg;
        EXPECT_NE(msg.find("offset"), std::string::npos) << msg;
        EXPECT_NE(msg.find("case.gguf"), std::string::npos) << msg;
    }
}

TEST(gguf, missing_and_special_files) {
    temp_dir dir;
    // what cannot be opened as a regular file is an I/O error, not a format error
    const auto io = std::optional<mb::status>(mb::status::io_error);
    EXPECT_EQ(status_thrown([&] { gguf_file::open(dir.file("absent.gguf")); }), io);
    EXPECT_EQ(status_thrown([&] { gguf_file::open(dir.path.string()); }), io);   // a directory
    // a FIFO without a writer: rejected at once instead of blocking in open()
    ASSERT_EQ(mkfifo(dir.file("fifo").c_str(), 0600), 0);
    EXPECT_EQ(status_thrown([&] { gguf_file::open(dir.file("fifo")); }), io);
}

// one hand-made corrupt file: what it is, its bytes, and a phrase the error must contain
struct corrupt_case {
    const char *                 name;
    std::function<std::string()> make;
    const char *                 field;
};

static std::string valid_one_tensor(uint32_t type = 0, uint64_t offset = 0, uint64_t ne0 = 8) {
    gguf_bytes g;
    g.header(1, 1).kv_str("general.architecture", "motionbricks").info1("w", ne0, type, offset).pad().zeros(32);
    return g.b;
}

static const corrupt_case k_cases[] = {
    {"01 empty file", [] { return std::string(); }, "header"},
    {"02 header only part", [] { return std::string("GGUF\3\0\0\0", 8); }, "header"},
    {"03 bad magic", [] { std::string b = valid_one_tensor(); b[0] = 'X'; return b; }, "magic"},
    {"04 big-endian version", [] { gguf_bytes g; g.raw("GGUF").raw(std::string("\0\0\0\3", 4)).u64(0).u64(0); return g.b; },
     "byte-swapped"},
    {"05 version 1", [] { gguf_bytes g; g.header(0, 0, 1); return g.b; }, "version"},
    {"06 version 2", [] { gguf_bytes g; g.header(0, 0, 2); return g.b; }, "version"},
    {"07 version 4", [] { gguf_bytes g; g.header(0, 0, 4); return g.b; }, "version"},
    {"08 kv count 2^63", [] { gguf_bytes g; g.header(0, 1ull << 63).kv_u32("a", 1); return g.b; }, "kv count"},
    {"09 tensor count 2^63", [] { gguf_bytes g; g.header(1ull << 63, 0).info1("w", 8, 0, 0); return g.b; }, "tensor count"},
    {"10 kv count larger than present", [] { gguf_bytes g; g.header(0, 2).kv_u32("a", 1).zeros(16); return g.b; }, "kv[1]"},
    {"11 key length 2^63", [] { gguf_bytes g; g.header(0, 1).u64(1ull << 63).raw("abcdefgh"); return g.b; }, "kv[0] key length"},
    {"12 key length past end", [] { gguf_bytes g; g.header(0, 1).u64(100).raw("abcdefghijkl"); return g.b; }, "kv[0] key length"},
    {"13 empty key", [] { gguf_bytes g; g.header(0, 1).kv_u32("", 1).zeros(8); return g.b; }, "empty key"},
    {"14 key not UTF-8", [] { gguf_bytes g; g.header(0, 1).kv_u32("a\xff", 1); return g.b; }, "UTF-8"},
    {"15 key with NUL", [] { gguf_bytes g; g.header(0, 1).kv_u32(std::string_view("a\0b", 3), 1); return g.b; }, "NUL"},
    {"16 string value length 2^63", [] { gguf_bytes g; g.header(0, 1).str("k").u32(8).u64(1ull << 63).raw("xxxxxxxx"); return g.b; },
     "kv 'k' length"},
    {"17 string value overlong UTF-8", [] { gguf_bytes g; g.header(0, 1).kv_str("k", "\xc0\x80"); return g.b; }, "UTF-8"},
    {"18 string value surrogate", [] { gguf_bytes g; g.header(0, 1).kv_str("k", "\xed\xa0\x80"); return g.b; }, "UTF-8"},
    {"19 string value truncated sequence", [] { gguf_bytes g; g.header(0, 1).kv_str("k", "ok\xe2\x82"); return g.b; }, "UTF-8"},
    {"20 string value above U+10FFFF", [] { gguf_bytes g; g.header(0, 1).kv_str("k", "\xf4\x90\x80\x80"); return g.b; }, "UTF-8"},
    {"21 unknown value type", [] { gguf_bytes g; g.header(0, 1).str("k").u32(13).u64(0); return g.b; }, "kv 'k' type"},
    {"22 unknown array element type", [] { gguf_bytes g; g.header(0, 1).str("k").u32(9).u32(99).u64(0); return g.b; },
     "element type"},
    {"23 array count 2^62 of UINT8", [] { gguf_bytes g; g.header(0, 1).str("k").u32(9).u32(0).u64(1ull << 62).zeros(16); return g.b; },
     "kv 'k' count"},
    {"24 array count 2^62 of STRING", [] { gguf_bytes g; g.header(0, 1).str("k").u32(9).u32(8).u64(1ull << 62).zeros(16); return g.b; },
     "kv 'k' count"},
    {"25 array of arrays count 2^62", [] { gguf_bytes g; g.header(0, 1).str("k").u32(9).u32(9).u64(1ull << 62).zeros(32); return g.b; },
     "kv 'k' count"},
    {"26 nested array bomb (deep)", [] {
         gguf_bytes g;
         g.header(0, 1).str("k").u32(9);
         for (int d = 0; d < 64; ++d) g.u32(9).u64(1);
         g.u32(0).u64(0);
         return g.b;
     }, "nested"},
    {"27 inner array count past end", [] { gguf_bytes g; g.header(0, 1).str("k").u32(9).u32(9).u64(1).u32(6).u64(1000).zeros(8); return g.b; },
     "kv 'k'[0] count"},
    {"28 BOOL value 2", [] { gguf_bytes g; g.header(0, 1).str("k").u32(7).u8(2); return g.b; }, "BOOL"},
    {"29 duplicate key", [] { gguf_bytes g; g.header(0, 2).kv_u32("k", 1).kv_u32("k", 2); return g.b; }, "duplicate key"},
    {"30 alignment of type UINT64", [] { gguf_bytes g; g.header(0, 1).str("general.alignment").u32(10).u64(32); return g.b; },
     "general.alignment"},
    {"31 alignment 0", [] { gguf_bytes g; g.header(0, 1).kv_u32("general.alignment", 0); return g.b; }, "power of two"},
    {"32 alignment 48", [] { gguf_bytes g; g.header(0, 1).kv_u32("general.alignment", 48); return g.b; }, "power of two"},
    {"33 alignment 2^30 pushes data past the end", [] {
         gguf_bytes g;
         g.header(1, 1).kv_u32("general.alignment", 1u << 30).info1("w", 8, 0, 0).pad().zeros(32);
         return g.b;
     }, "data section"},
    {"34 empty tensor name", [] { gguf_bytes g; g.header(1, 0).info1("", 8, 0, 0).pad().zeros(32); return g.b; }, "tensor[0] name"},
    {"35 tensor name of 64 bytes", [] { gguf_bytes g; g.header(1, 0).info1(std::string(64, 'n'), 8, 0, 0).pad().zeros(32); return g.b; },
     "tensor[0] name"},
    {"36 tensor name not UTF-8", [] { gguf_bytes g; g.header(1, 0).info1("w\x80", 8, 0, 0).pad().zeros(32); return g.b; }, "UTF-8"},
    {"37 tensor name length 2^63", [] { gguf_bytes g; g.header(1, 0).u64(1ull << 63).zeros(40); return g.b; }, "tensor[0] name length"},
    {"38 duplicate tensor name", [] {
         gguf_bytes g;
         g.header(2, 0).info1("w", 8, 0, 0).info1("w", 8, 0, 32).pad().zeros(64);
         return g.b;
     }, "duplicate tensor name"},
    {"39 n_dims 0", [] { gguf_bytes g; g.header(1, 0).str("w").u32(0).u32(0).u64(0).pad().zeros(32); return g.b; }, "n_dims"},
    {"40 n_dims 5", [] {
         gguf_bytes g;
         g.header(1, 0).str("w").u32(5).u64(1).u64(1).u64(1).u64(1).u64(8).u32(0).u64(0).pad().zeros(32);
         return g.b;
     }, "n_dims"},
    {"41 dimension 0", [] { gguf_bytes g; g.header(1, 0).str("w").u32(2).u64(8).u64(0).u32(0).u64(0).pad().zeros(32); return g.b; },
     "ne[1]"},
    {"42 dimension 2^63", [] { gguf_bytes g; g.header(1, 0).str("w").u32(1).u64(1ull << 63).u32(0).u64(0).pad().zeros(32); return g.b; },
     "ne[0]"},
    {"43 element count overflow", [] {
         gguf_bytes g;
         g.header(1, 0).str("w").u32(3).u64(1ull << 31).u64(1ull << 31).u64(1ull << 31).u32(0).u64(0).pad().zeros(32);
         return g.b;
     }, "overflows"},
    {"44 byte count overflow", [] {
         gguf_bytes g;
         g.header(1, 0).str("w").u32(2).u64(1ull << 30).u64(1ull << 31).u32(0).u64(0).pad().zeros(32);
         return g.b;
     }, "outside"},
    {"45 tensor type F16", [] { return valid_one_tensor(1); }, "unsupported tensor type 1"},
    {"46 tensor type Q4_0", [] { return valid_one_tensor(2); }, "unsupported tensor type 2"},
    {"47 tensor type 2^31", [] { return valid_one_tensor(0x80000000u); }, "tensor 'w' type"},
    {"48 misaligned data offset", [] { return valid_one_tensor(0, 16); }, "not a multiple of the alignment"},
    {"49 data outside the file", [] { return valid_one_tensor(0, 1ull << 40); }, "outside"},
    {"50 offset near 2^64 (wraps when added)", [] { return valid_one_tensor(0, 0xFFFFFFFFFFFFFFE0ull); }, "outside"},
    {"51 data runs past the end", [] { return valid_one_tensor(0, 0, 9); }, "outside"},
    {"52 overlapping tensors", [] {
         gguf_bytes g;
         g.header(2, 0).info1("a", 16, 0, 0).info1("b", 8, 0, 32).pad().zeros(96);
         return g.b;
     }, "overlaps"},
    {"53 same offset twice", [] {
         gguf_bytes g;
         g.header(2, 0).info1("a", 8, 0, 0).info1("b", 8, 0, 0).pad().zeros(64);
         return g.b;
     }, "overlaps"},
    {"54 tensor count larger than present", [] {
         gguf_bytes g;
         g.header(2, 0).info1("a", 8, 0, 0).zeros(40);
         return g.b;
     }, "tensor[1]"},
    {"55 data not 4-byte aligned (alignment 2)", [] {
         gguf_bytes g;
         // the data section starts right after the infos (2-byte alignment): pick an offset
         // that puts the tensor at a file offset of 2 mod 4
         for (uint64_t off : {0, 2}) {
             gguf_bytes g;
             g.header(1, 1).kv_u32("general.alignment", 2).info1("w", 8, 0, off).pad(2);
             if ((g.b.size() + off) % 4 == 2) return g.zeros(64).b;
         }
         return std::string();
     }, "4-byte aligned"},
    {"56 BOOL array element 7", [] { gguf_bytes g; g.header(0, 1).str("k").u32(9).u32(7).u64(3).u8(0).u8(1).u8(7); return g.b; }, "BOOL"},
    {"57 tensor name with NUL", [] { gguf_bytes g; g.header(1, 0).info1(std::string_view("w\0x", 3), 8, 0, 0).pad().zeros(32); return g.b; },
     "NUL"},
    // reduced types: Q8_0 rows must be whole 32-value blocks of 34 bytes, and every byte present
    {"58 Q8_0 row of 8 values", [] { return valid_one_tensor(8); }, "not whole 32-value blocks"},
    {"59 Q8_0 row of 48 values", [] { return valid_one_tensor(8, 0, 48); }, "not whole 32-value blocks"},
    {"60 Q8_0 block truncated", [] {
         gguf_bytes g;   // 2 blocks need 68 bytes; 64 are there
         g.header(1, 1).kv_str("general.architecture", "motionbricks").info1("w", 64, 8, 0).pad().zeros(64);
         return g.b;
     }, "outside"},
    {"61 BF16 data truncated", [] {
         gguf_bytes g;   // 40 values need 80 bytes; 64 are there
         g.header(1, 1).kv_str("general.architecture", "motionbricks").info1("w", 40, 30, 0).pad().zeros(64);
         return g.b;
     }, "outside"},
    {"62 Q8_0 2-D rows of 33", [] {
         gguf_bytes g;
         g.header(1, 1).kv_str("general.architecture", "motionbricks").str("w").u32(2).u64(33).u64(2).u32(8).u64(0)
             .pad().zeros(96);
         return g.b;
     }, "not whole 32-value blocks"},
};

TEST(gguf, corrupt_corpus) {
    temp_dir dir;
    // the cases start from valid files: check the base ones open
    ASSERT_EQ(open_error(dir, valid_one_tensor()), "");
    ASSERT_GE(std::size(k_cases), 30u);
    for (const auto & c : k_cases) {
        std::string msg = open_error(dir, c.make());
        EXPECT_NE(msg, "") << c.name << ": accepted";
        EXPECT_EQ(msg.find("WRONG STATUS"), std::string::npos) << c.name << ": " << msg;
        EXPECT_NE(msg.find(c.field), std::string::npos) << c.name << ": message lacks '" << c.field << "': " << msg;
        EXPECT_NE(msg.find("case.gguf"), std::string::npos) << c.name << ": message lacks the file: " << msg;
        EXPECT_NE(msg.find("offset"), std::string::npos) << c.name << ": message lacks an offset: " << msg;
    }
}

TEST(gguf, i32_tensor_type_26_accepted) {
    temp_dir dir;
    EXPECT_EQ(open_error(dir, valid_one_tensor(26)), "");
}

TEST(gguf, bf16_and_q8_0_sizes) {
    temp_dir dir;
    EXPECT_EQ(open_error(dir, valid_one_tensor(30)), "");   // 8 BF16 values: 16 bytes
    gguf_bytes g;   // one Q8_0 block: 34 bytes
    g.header(1, 1).kv_str("general.architecture", "motionbricks").info1("w", 32, 8, 0).pad().zeros(64);
    EXPECT_EQ(open_error(dir, g.b), "");
    mb::test::write_bytes(dir.file("q.gguf"), g.b);
    auto f = gguf_file::open(dir.file("q.gguf"));
    ASSERT_EQ(f->tensors().size(), 1u);
    EXPECT_EQ(f->tensors()[0].type, mb::dtype::DTYPE_Q8_0);
    EXPECT_EQ(f->tensors()[0].n_bytes, 34u);
    EXPECT_EQ(f->tensors()[0].n_elements(), 32);
}

TEST(tensor_names, compaction) {
    // short names are kept
    EXPECT_EQ(mb::compact_tensor_name("norm1.weight"), "norm1.weight");
    std::string n63(63, 'a');
    EXPECT_EQ(mb::compact_tensor_name(n63), n63);
    // the release's only long names (exactly 64 bytes)
    std::string n = "_root_token_transformer_model.layers.1.self_attn.out_proj.weight";
    ASSERT_EQ(n.size(), 64u);
    EXPECT_EQ(mb::compact_tensor_name(n), "_root_token_transformer_model.layers.1.attn.out_proj.weight");
    // every substitution applies in order
    EXPECT_EQ(mb::compact_tensor_name("_root_token_transformer_encoder.layers.0.self_attn.in_proj_weight.xxxxxxxx"),
              "root.l.0.attn.qkv.weight.xxxxxxxx");
    EXPECT_EQ(mb::compact_tensor_name("_conv_output.external_cond_blocks.0.target_cond_blocks.1.in_proj_bias.xx"),
              "_conv_output.xcond.0.tcond.1.qkv.bias.xx");
    // still too long: 48 bytes + '.' + 12 hex digits of SHA-256("x" * 100)
    std::string x100(100, 'x');
    std::string c = mb::compact_tensor_name(x100);
    EXPECT_EQ(c.size(), 61u);
    EXPECT_EQ(c.substr(0, 49), std::string(48, 'x') + ".");
    EXPECT_EQ(c.substr(49), "09ecb6ebc8bc");
    // a cut inside a UTF-8 character is refused (47 ASCII bytes, then 2-byte characters)
    std::string utf8 = std::string(47, 'y');
    for (int k = 0; k < 10; ++k) utf8 += "\xc3\xa9";
    EXPECT_THROW(mb::compact_tensor_name(utf8), std::runtime_error);
    EXPECT_NO_THROW(mb::compact_tensor_name("y" + utf8));
    // collisions are reported
    std::vector<std::string> names = {n, "_root_token_transformer_model.layers.1.attn.out_proj.weight"};
    EXPECT_THROW(mb::compact_tensor_names(names), std::runtime_error);
}

TEST(tensor_names, find_tries_the_compacted_name) {
    temp_dir           dir;
    std::vector<float> v(4, 1.0f);
    std::string        full = "_root_token_transformer_model.layers.2.self_attn.out_proj.weight";
    mb::gguf_write(dir.file("c.gguf"), {}, {{mb::compact_tensor_name(full), mb::dtype::DTYPE_F32, {4}, v.data()}});
    auto f = gguf_file::open(dir.file("c.gguf"));
    ASSERT_NE(f->find(full), nullptr);
    EXPECT_EQ(f->find(full), f->find("_root_token_transformer_model.layers.2.attn.out_proj.weight"));
}

TEST(gguf, random_mutations_fail_cleanly) {
    // a deterministic stand-in for the fuzzer in builds without clang: byte flips and
    // overwrites of a valid file either open or raise mb::error, never anything else
    temp_dir dir;
    sample   s;
    mb::gguf_write(dir.file("base.gguf"), s.kvs(), s.tensors());
    const std::string base = mb::test::read_bytes(dir.file("base.gguf"));
    uint64_t          state = 0x9E3779B97F4A7C15ull;
    auto              next  = [&] {
        uint64_t z = (state += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    };
    int opened = 0, rejected = 0;
    for (int it = 0; it < 2000; ++it) {
        std::string b = base;
        int         n = 1 + static_cast<int>(next() % 4);
        for (int k = 0; k < n; ++k) {
            size_t at = next() % b.size();
            switch (next() % 3) {
                case 0: b[at] = static_cast<char>(b[at] ^ (1u << (next() % 8))); break;
                case 1: b[at] = static_cast<char>(next()); break;
                default: b[at] = static_cast<char>(0xFF); break;
            }
        }
        std::string path = dir.file("m.gguf");
        mb::test::write_bytes(path, b);
        try {
            auto f = gguf_file::open(path);
            for (const auto & t : f->tensors()) ASSERT_EQ(f->find(t.name), &t);
            ++opened;
        } catch (const mb::error &) {
            ++rejected;
        }
    }
    EXPECT_GT(opened, 0);
    EXPECT_GT(rejected, 0);
}
