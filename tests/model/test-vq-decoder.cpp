// VQ dequantisation and the conditioned conv decoder against upstream on every
// reference-small case, fed the recorded decoder inputs of each case
#include "model-fixtures.h"

#include "backend/backend.h"
#include "model/vq-decoder.h"
#include "support/test-paths.h"

#include <gtest/gtest.h>

namespace {

using namespace mb;
using namespace mb::test;

// decoder output tolerance, relative to max(1, max |ref|) (float32 summation order only)
// (measured on the CPU backend: 2.5e-5 absolute on magnitudes of about 20)
constexpr double k_rel_recon = 2e-5;

constexpr int64_t k_n  = 16;    // padded token grid
constexpr int64_t k_f  = 64;    // padded frame grid
constexpr int64_t k_hd = 8;     // token heads

struct vq_env {
    safetensors_source       src;
    std::unique_ptr<backend> loader = backend_cpu_create(1);
    vq_decoder               net;
    explicit vq_env(const std::string & dir)
        : src(dir + "/weights/vqvae.safetensors", "pose_net.", {{"motionbricks.dilation_growth", 3}}),
          net(vq_decoder::load(src, *loader)) {}
};

// the recorded decoder inputs of a case over its first `frames` frames
struct decoder_inputs {
    std::vector<float>   codes;     // [frames/4, code_dim]
    std::vector<float>   ext;       // [frames, 2]
    std::vector<float>   tgt;       // [frames, 304]
    std::vector<uint8_t> has;       // [frames]

    decoder_inputs(const npz_file & z, int64_t code_dim, int64_t frames)
        : codes(span_f32(z.get("mid_decoder_codes", {1, k_n, code_dim}), 0, frames / 4 * code_dim)),
          ext(span_f32(z.get("mid_decoder_external_cond", {1, k_f, 2}), 0, frames * 2)),
          tgt(span_f32(z.get("mid_decoder_target_cond", {1, k_f, 304}), 0, frames * 304)),
          has(span_u8(z.get("mid_decoder_has_target_cond", {1, k_f}), 0, frames)) {}
};

class vq_decoder_parity : public reference_small_test {};

TEST_F(vq_decoder_parity, hparams_from_shapes) {
    vq_env env(dir_);
    EXPECT_EQ(env.net.hp.n_tok_head, 8);
    EXPECT_EQ(env.net.hp.n_code, 10);
    EXPECT_EQ(env.net.hp.head_dim, 8);
    EXPECT_EQ(env.net.hp.code_dim, 64);
    EXPECT_EQ(env.net.hp.frames_per_token, 4);
    EXPECT_EQ(env.net.hp.out_dim, 413);
    EXPECT_EQ(env.net.hp.ext_dim, 2);
    EXPECT_EQ(env.net.hp.tgt_dim, 304);
    const cond_decoder_hparams & d = env.net.dec.hp;
    EXPECT_EQ(d.width, 64);
    EXPECT_EQ(d.down_t, 2);
    EXPECT_EQ(d.depth, 2);
    ASSERT_EQ(env.net.dec.stages.size(), 2u);
    // reverse dilation: block 0 has growth^(depth−1)
    EXPECT_EQ(env.net.dec.stages[0].res[0].dilation, 3);
    EXPECT_EQ(env.net.dec.stages[0].res[1].dilation, 1);
}

TEST_F(vq_decoder_parity, codes_and_decoder_every_case) {
    vq_env           env(dir_);
    auto             be = backend_cpu_create(1);
    vq_decoder_state st(*be, env.net.hp, env.net.dec.hp, k_n);
    const int64_t    D = env.net.hp.code_dim, O = env.net.hp.out_dim;

    for (const reference_case & rc : reference_cases(dir_)) {
        SCOPED_TRACE(rc.name);
        npz_file      z(rc.file);
        const int64_t n = z.get("out_pred_num_tokens").to_i64().at(0);

        const auto           tokens = span_i32(z.get("mid_pred_pose_tokens", {1, k_n, k_hd}), 0, n * k_hd);
        const decoder_inputs in(z, D, 4 * n);

        // decoder on the n valid tokens, from the recorded codes and conditions
        std::vector<float> y((size_t) (4 * n * O));
        env.net.decode_codes(*be, st, in.codes.data(), n, in.ext.data(), in.tgt.data(), in.has.data(), y.data());
        EXPECT_TRUE(near_rel(y, span_f32(z.get("mid_decoder_recon_state", {1, k_f, O}), 0, 4 * n * O), k_rel_recon,
                             "recon_state"));

        // the full tokens path: dequantisation is a copy (exactly equal codes), then the same frames
        std::vector<float> y2((size_t) (4 * n * O));
        tap_record         taps;
        env.net.decode(*be, st, tokens.data(), n, in.ext.data(), in.tgt.data(), in.has.data(), y2.data(), taps.fn());
        EXPECT_EQ(taps.at("decoder_codes", {n, D}), in.codes) << "decoder codes";
        EXPECT_EQ(y2, y) << "decode(tokens) vs decode_codes(codes)";
    }
}

TEST_F(vq_decoder_parity, padded_grid_with_token_mask) {
    // upstream's fixed 16-token formulation: padded positions are masked, padded frames are 0
    vq_env           env(dir_);
    auto             be = backend_cpu_create(2);
    vq_decoder_state st(*be, env.net.hp, env.net.dec.hp, k_n);
    const int64_t    D = env.net.hp.code_dim, O = env.net.hp.out_dim;

    for (const reference_case & rc : reference_cases(dir_)) {
        SCOPED_TRACE(rc.name);
        npz_file      z(rc.file);
        const int64_t n = z.get("out_pred_num_tokens").to_i64().at(0);

        const decoder_inputs in(z, D, k_f);
        std::vector<float>   y((size_t) (k_f * O));
        const auto           codes = upload(*be, in.codes), ext = upload(*be, in.ext), tgt = upload(*be, in.tgt);
        const auto           has = upload(*be, in.has), out = be->alloc(y.size() * sizeof(float));
        env.net.dec.forward(*be, codes->as<const float>(), k_n, n, ext->as<const float>(), tgt->as<const float>(),
                            has->as<const uint8_t>(), out->as<float>(), st.dec);
        be->get(out->as<const float>(), y.data(), (int64_t) y.size());
        EXPECT_TRUE(near_rel(y, span_f32(z.get("mid_decoder_recon_state", {1, k_f, O}), 0, k_f * O), k_rel_recon,
                             "recon_state on the padded grid"));
        for (int64_t i = 4 * n * O; i < k_f * O; ++i) ASSERT_EQ(y[(size_t) i], 0.0f) << "padded frame value " << i;
    }
}

TEST_F(vq_decoder_parity, rejects_bad_tokens) {
    vq_env               env(dir_);
    auto                 be = backend_cpu_create(1);
    vq_decoder_state     st(*be, env.net.hp, env.net.dec.hp, k_n);
    std::vector<int32_t> tokens(6 * k_hd, 0);
    std::vector<float>   ext(24 * 2), y((size_t) (24 * env.net.hp.out_dim));
    tokens[5] = 10;   // [MASK] is not a code
    EXPECT_THROW(env.net.decode(*be, st, tokens.data(), 6, ext.data(), nullptr, nullptr, y.data()),
                 mb::error);
    tokens[5] = -1;
    EXPECT_THROW(env.net.decode(*be, st, tokens.data(), 6, ext.data(), nullptr, nullptr, y.data()),
                 mb::error);
}

} // namespace
