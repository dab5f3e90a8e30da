// the test-only fixture readers: npz arrays and safetensors weights
#include "support/npz.h"
#include "support/safetensors-source.h"
#include "support/shell.h"
#include "support/test-paths.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <stdexcept>

namespace {

std::string write_tmp(const std::string & name, const std::string & bytes) {
    const std::string path = ::testing::TempDir() + name;
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
}

} // namespace

TEST(npz, reads_fixture_case) {
    MB_REQUIRE_SHARED(path, "fixtures/reference-small/cases/idle_pred_argmax.npz");
    mb::test::npz_file z(path);
    const auto & g = z.get("in_global_root_values", {1, 8, 5});
    EXPECT_EQ(g.type, mb::test::npy_dtype::NPY_DTYPE_F32);
    const auto & n = z.get("in_num_tokens", {1});
    EXPECT_EQ(n.to_i64()[0], 18);
    const auto & m = z.get("in_has_local_root_values", {1, 8});
    EXPECT_EQ(m.type, mb::test::npy_dtype::NPY_DTYPE_BOOL);
    EXPECT_EQ(m.to_i64()[3], 0);
    EXPECT_EQ(m.to_i64()[4], 1);
    EXPECT_TRUE(z.get("in_rng_seed").shape.empty());
    EXPECT_THROW(z.get("no_such_array"), std::runtime_error);
    EXPECT_THROW(z.get("in_global_root_values", {1, 8, 4}), std::runtime_error);
}

TEST(npz, converts_fortran_order_arrays) {
    MB_REQUIRE_SHARED(path, "fixtures/reference-small/cases/idle_pred_argmax.npz");
    mb::test::npz_file z(path);
    // stored with fortran_order True; values checked with numpy
    const auto v = z.get("mid_pred_global_root_values", {1, 64, 5}).to_f32();
    EXPECT_NEAR(v[5 + 0], -0.55704784f, 1e-7f);
    EXPECT_NEAR(v[5 + 1], 0.6116395f, 1e-7f);
    EXPECT_NEAR(v[5 + 2], 0.6923326f, 1e-7f);
}

TEST(npz, rejects_corrupt_files) {
    EXPECT_THROW(mb::test::npz_file(write_tmp("empty.npz", "")), std::runtime_error);
    EXPECT_THROW(mb::test::npz_file(write_tmp("junk.npz", std::string(100, 'x'))), std::runtime_error);
    EXPECT_THROW(mb::test::npz_file("/nonexistent/x.npz"), std::runtime_error);
}

TEST(npz, parses_and_rejects_npy_headers) {
    auto npy = [](const std::string & dict, const std::string & payload) {
        std::string h = dict;
        while ((10 + h.size() + 1) % 64) h += ' ';
        h += '\n';
        std::string s = "\x93NUMPY";
        s += char(1);
        s += char(0);
        s += char(h.size() & 0xFF);
        s += char(h.size() >> 8);
        return s + h + payload;
    };
    auto parse = [](const std::string & s) {
        return mb::test::npy_parse(reinterpret_cast<const uint8_t *>(s.data()), s.size(), "t");
    };
    const std::string two_i32("\x01\x00\x00\x00\xfe\xff\xff\xff", 8);
    auto a = parse(npy("{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }", two_i32));
    ASSERT_EQ(a.shape.size(), 1u);
    EXPECT_EQ(a.to_i64()[1], -2);
    // wrong byte count, unknown dtype, fortran order, bad bool
    EXPECT_THROW(parse(npy("{'descr': '<i4', 'fortran_order': False, 'shape': (3,), }", two_i32)), std::runtime_error);
    EXPECT_THROW(parse(npy("{'descr': '<u2', 'fortran_order': False, 'shape': (4,), }", two_i32)), std::runtime_error);
    EXPECT_THROW(parse(npy("{'descr': '<i4', 'fortran_order': 1, 'shape': (2,), }", two_i32)), std::runtime_error);
    // fortran order [[1, 3], [2, 4]] stored column-major as 1 2 3 4 → C order 1 3 2 4
    const std::string four_i32("\x01\0\0\0\x02\0\0\0\x03\0\0\0\x04\0\0\0", 16);
    auto f = parse(npy("{'descr': '<i4', 'fortran_order': True, 'shape': (2, 2), }", four_i32));
    EXPECT_EQ(f.to_i64(), (std::vector<int64_t>{1, 3, 2, 4}));
    EXPECT_THROW(parse(npy("{'descr': '|b1', 'fortran_order': False, 'shape': (8,), }", two_i32)), std::runtime_error);
    EXPECT_THROW(parse(npy("{'descr': '<i4', 'shape': (2,), }", two_i32)), std::runtime_error);
    EXPECT_THROW(parse(npy("{'descr': '<i4', 'fortran_order': False, 'shape': (99999999999999,), }", two_i32)),
                 std::runtime_error);
}

TEST(safetensors, reads_root_weights_with_prefix_stripped) {
    MB_REQUIRE_SHARED(path, "fixtures/reference-small/weights/root.safetensors");
    mb::test::safetensors_source src(path, "backbone_net.", {{"motionbricks.n_head", 4}});
    const mb::tensor_view * t = src.find("_shared_transformer_model.layers.0.self_attn.in_proj_weight");
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->n_dims, 2u);
    EXPECT_EQ(t->ne[1], 3 * t->ne[0]);
    EXPECT_EQ(src.find("backbone_net._no_local_pose_emb"), nullptr);
    EXPECT_NE(src.find("_no_local_pose_emb"), nullptr);
    EXPECT_EQ(src.meta_uint("motionbricks.n_head").value_or(0), 4u);
    EXPECT_FALSE(src.meta_uint("motionbricks.other").has_value());
}

TEST(safetensors, reads_f64_stats) {
    MB_REQUIRE_SHARED(path, "fixtures/reference-small/weights/stats.safetensors");
    mb::test::safetensors_source src(path);
    EXPECT_EQ(src.dtype_of("mean"), "F64");
    EXPECT_EQ(src.f64("std").size(), 418u);
    EXPECT_EQ(src.find("mean"), nullptr);
}

TEST(safetensors, rejects_corrupt_files) {
    auto st = [](const std::string & json, size_t data_bytes) {
        std::string s(8, '\0');
        for (int i = 0; i < 8; ++i) s[i] = char((json.size() >> (8 * i)) & 0xFF);
        return s + json + std::string(data_bytes, '\0');
    };
    using mb::test::safetensors_source;
    EXPECT_NO_THROW(safetensors_source(write_tmp("ok.st", st(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 8))));
    EXPECT_THROW(safetensors_source(write_tmp("short.st", st(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8))),
                 std::runtime_error);
    EXPECT_THROW(safetensors_source(write_tmp("oob.st", st(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", 8))),
                 std::runtime_error);
    EXPECT_THROW(safetensors_source(write_tmp("dt.st", st(R"({"a":{"dtype":"Q4","shape":[2],"data_offsets":[0,8]}})", 8))),
                 std::runtime_error);
    EXPECT_THROW(safetensors_source(write_tmp("json.st", st(R"({"a":)", 8))), std::runtime_error);
    EXPECT_THROW(safetensors_source(write_tmp("tiny.st", "abc")), std::runtime_error);
    EXPECT_THROW(safetensors_source(write_tmp("ovl.st", st(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                                          R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8))),
                 std::runtime_error);
}

namespace {

using mb::test::slurp;

// corrupted copies of `bytes` (flipped bytes and truncations) either load or throw runtime_error
template <typename Load>
void survive_corruption(const std::string & bytes, const std::string & name, Load load) {
    uint64_t state = 0x9E3779B97F4A7C15ull;
    auto next = [&]() {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        return state;
    };
    for (int i = 0; i < 300; ++i) {
        std::string b = bytes;
        if (i % 3 == 0) {
            b.resize(size_t(next() % bytes.size()));
        } else {
            for (int k = 0; k < 1 + i % 4; ++k) b[size_t(next() % b.size())] = char(next());
        }
        const std::string path = write_tmp(name, b);
        try {
            load(path);
        } catch (const std::runtime_error &) {
        }
    }
}

} // namespace

TEST(npz, survives_corrupted_fixture) {
    MB_REQUIRE_SHARED(path, "fixtures/reference-small/cases/strafe_fixed8_3steps_gumbel.npz");
    survive_corruption(slurp(path), "corrupt.npz", [](const std::string & p) { mb::test::npz_file z(p); });
}

TEST(safetensors, survives_corrupted_weights) {
    MB_REQUIRE_SHARED(path, "fixtures/reference-small/weights/root.safetensors");
    survive_corruption(slurp(path), "corrupt.safetensors",
                       [](const std::string & p) { mb::test::safetensors_source s(p, "backbone_net."); });
}
