// SONIC inference against fixtures/sonic: upstream's UniversalTokenModule run on the weights of
// WEIGHTS.md (regenerated here bit for bit), 48 samples in modes 0 and 2 and 8 teleop samples in
// mode 1. Every layer's pre-activation, the actions and the composed actions within the
// reference runtime's gate (max |Δ| ≤ 5e-4 and relative L2 ≤ 1e-5 per tensor); FSQ tokens exact
#include <motionbricks/sonic.h>

#include "format/error.h"
#include "format/bundle.h"
#include "format/mbsonic.h"
#include "sonic/sonic-model.h"
#include "sonic-weights.h"
#include "support/test-device.h"
#include "support/npz.h"
#include "support/test-paths.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;
using mb::sonic::sonic_model;

struct err {
    double max_abs = 0.0, rel_l2 = 0.0;
};

err compare(const float * got, const float * want, int64_t n) {
    double d2 = 0.0, w2 = 0.0, mx = 0.0;
    for (int64_t i = 0; i < n; ++i) {
        const double d = double(got[i]) - double(want[i]);
        mx             = std::max(mx, std::fabs(d));
        d2 += d * d;
        w2 += double(want[i]) * double(want[i]);
    }
    return {mx, w2 > 0.0 ? std::sqrt(d2 / w2) : std::sqrt(d2)};
}

constexpr double k_gate_abs = 5e-4, k_gate_rel = 1e-5;

// the GGUFs this process wrote (90 MB with every encoder), removed at exit
struct temp_files {
    std::map<std::string, std::string> made;
    ~temp_files() {
        std::error_code ec;
        for (const auto & kv : made) fs::remove(kv.second, ec);
    }
};

// a SONIC GGUF of the fixtures' weights, written once per process
std::string fixture_gguf(const std::string & which, const std::vector<std::string> & encoders, const std::string & arch,
                         std::vector<std::string> & mismatches) {
    static temp_files files;
    auto &            made = files.made;
    if (made.count(which)) return made[which];
    const std::string md = mb::test::shared_path("fixtures/sonic/WEIGHTS.md");
    const std::string path = (fs::temp_directory_path() / ("mb-sonic-" + which + "-" + std::to_string(::getpid()) + ".gguf")).string();
    mismatches = mb::test::write_sonic_gguf(path, mb::test::sonic_weight_table(md), encoders, arch);
    made[which] = path;
    return path;
}

struct parity {
    err      enc[5], dec[7], actions, composed;
    int      token_mismatch = 0, samples = 0;
};

void run_fixture(const sonic_model & m, const mb::mbsonic_file & f, parity & p) {
    auto st = m.create_state();
    for (size_t i = 0; i < f.size(); ++i) {
        const mb::mbsonic_sample s = f.sample(i);
        std::map<std::string, std::vector<float>> layers;
        const mb::tap_fn tap = [&](std::string_view name, const float * d, const std::vector<int64_t> & shape) {
            layers[std::string(name)].assign(d, d + shape[0] * shape[1]);
        };
        float tokens[64], actions[29], composed[29];
        m.encode(*st, s.encoder_obs, 1, tokens, tap);
        m.decode(*st, s.decoder_obs, 1, actions, tap);
        float dec_obs[994];
        std::copy(s.decoder_obs, s.decoder_obs + 994, dec_obs);
        std::copy(tokens, tokens + 64, dec_obs);
        m.decode(*st, dec_obs, 1, composed);
        for (int k = 0; k < 5; ++k) {
            const auto & l = layers["encoder_layer_" + std::to_string(k)];
            ASSERT_EQ(int64_t(l.size()), mb::k_mbsonic_encoder_widths[size_t(k)]);
            const err e = compare(l.data(), s.encoder_layers[size_t(k)], int64_t(l.size()));
            p.enc[k].max_abs = std::max(p.enc[k].max_abs, e.max_abs);
            p.enc[k].rel_l2  = std::max(p.enc[k].rel_l2, e.rel_l2);
        }
        for (int k = 0; k < 7; ++k) {
            const auto & l = layers["decoder_layer_" + std::to_string(k)];
            ASSERT_EQ(int64_t(l.size()), mb::k_mbsonic_decoder_widths[size_t(k)]);
            const err e = compare(l.data(), s.decoder_layers[size_t(k)], int64_t(l.size()));
            p.dec[k].max_abs = std::max(p.dec[k].max_abs, e.max_abs);
            p.dec[k].rel_l2  = std::max(p.dec[k].rel_l2, e.rel_l2);
        }
        for (int t = 0; t < 64; ++t) p.token_mismatch += tokens[t] != s.tokens[t];
        const err a = compare(actions, s.actions, 29), c = compare(composed, s.composed, 29);
        p.actions  = {std::max(p.actions.max_abs, a.max_abs), std::max(p.actions.rel_l2, a.rel_l2)};
        p.composed = {std::max(p.composed.max_abs, c.max_abs), std::max(p.composed.rel_l2, c.rel_l2)};
        ++p.samples;
    }
}

void expect_gate(const parity & p, const char * what) {
    auto check = [&](const err & e, const std::string & name) {
        EXPECT_LE(e.max_abs, k_gate_abs) << what << " " << name;
        EXPECT_LE(e.rel_l2, k_gate_rel) << what << " " << name;
        std::printf("  %-18s max |d| %.3g  rel L2 %.3g\n", name.c_str(), e.max_abs, e.rel_l2);
    };
    std::printf("%s: %d samples, token mismatches %d\n", what, p.samples, p.token_mismatch);
    for (int k = 0; k < 5; ++k) check(p.enc[k], "encoder layer " + std::to_string(k));
    for (int k = 0; k < 7; ++k) check(p.dec[k], "decoder layer " + std::to_string(k));
    check(p.actions, "actions");
    check(p.composed, "composed actions");
    EXPECT_EQ(p.token_mismatch, 0) << what;
}

TEST(sonic_weights, regenerated_bit_exact_from_weights_md) {
    MB_REQUIRE_SHARED(md, "fixtures/sonic/WEIGHTS.md");
    const auto table = mb::test::sonic_weight_table(md);
    // WEIGHTS.md's first self-check values of encoders.g1.module.0.weight and the decoder's last layer
    const auto w0 = mb::test::sonic_weight_values(table[0], 1);
    EXPECT_EQ(w0[0], -0.0506182089f);
    EXPECT_EQ(w0[1], -0.0303569436f);
    const auto last = mb::test::sonic_weight_values(table[42], 1);
    EXPECT_EQ(last[14847], 0.0614557564f);
    std::vector<std::string> mismatches;
    fixture_gguf("all", {"g1", "teleop", "smpl"}, "g1-smpl-mode02-mlp-fsq32-v1", mismatches);
    for (const auto & m : mismatches) ADD_FAILURE() << m;
}

TEST(sonic_parity, modes_0_and_2_match_upstream) {
    MB_REQUIRE_SHARED(fixture, "fixtures/sonic/sonic_ref.mbsonic");
    std::vector<std::string> mismatches;
    const std::string path = fixture_gguf("all", {"g1", "teleop", "smpl"}, "g1-smpl-mode02-mlp-fsq32-v1", mismatches);
    auto m = sonic_model::load(path, 1, mb::test::test_device());
    EXPECT_EQ(m->parameter_count(), 22523613u);
    parity p;
    run_fixture(*m, mb::mbsonic_file::read(fixture), p);
    EXPECT_EQ(p.samples, 48);
    expect_gate(p, "sonic_ref.mbsonic (modes 0, 2)");
}

TEST(sonic_parity, teleop_mode_1_matches_upstream) {
    MB_REQUIRE_SHARED(fixture, "fixtures/sonic/teleop/sonic_ref_teleop_mode1.mbsonic");
    std::vector<std::string> mismatches;
    const std::string path = fixture_gguf("all", {"g1", "teleop", "smpl"}, "g1-smpl-mode02-mlp-fsq32-v1", mismatches);
    auto m = sonic_model::load(path, 2, mb::test::test_device());
    parity p;
    run_fixture(*m, mb::mbsonic_file::read(fixture), p);
    EXPECT_EQ(p.samples, 8);
    expect_gate(p, "teleop (mode 1)");
}

TEST(sonic_model, rejects_bad_files_and_inputs) {
    MB_REQUIRE_SHARED(md, "fixtures/sonic/WEIGHTS.md");
    std::vector<std::string> mismatches;
    // a G1-only file: mode 2 and mode 1 are refused, mode 0 works
    const std::string g1 = fixture_gguf("g1", {"g1"}, "g1-mode0-mlp-fsq32-v1", mismatches);
    auto              m  = sonic_model::load(g1, 1);
    EXPECT_EQ(m->parameter_count(), 14415453u);
    auto               st = m->create_state();
    std::vector<float> obs(2 * mb::sonic::k_encoder_obs, 0.0f);
    float              tokens[128];
    obs[0] = 2.0f;
    EXPECT_NE(m->check_encoder_obs(obs.data(), 1).find("no SMPL encoder"), std::string::npos);
    EXPECT_THROW(m->encode(*st, obs.data(), 1, tokens), mb::error);
    obs[0] = 0.5f;
    EXPECT_NE(m->check_encoder_obs(obs.data(), 1).find("is not 0"), std::string::npos);
    obs[0] = 0.0f;
    obs[mb::sonic::k_encoder_obs] = 2.0f;    // row 1 in another mode
    EXPECT_NE(m->check_encoder_obs(obs.data(), 2).find("mixes"), std::string::npos);
    obs[mb::sonic::k_encoder_obs] = 0.0f;
    obs[7]                        = NAN;
    EXPECT_NE(m->check_encoder_obs(obs.data(), 2).find("not finite"), std::string::npos);
    obs[7] = 2e6f;
    EXPECT_NE(m->check_encoder_obs(obs.data(), 2).find("1e6"), std::string::npos);
    obs[7] = 0.0f;
    EXPECT_EQ(m->check_encoder_obs(obs.data(), 2), "");
    EXPECT_NE(m->check_encoder_obs(obs.data(), 0).find("outside 1..64"), std::string::npos);
    EXPECT_NE(m->check_encoder_obs(obs.data(), 65).find("outside 1..64"), std::string::npos);
    m->encode(*st, obs.data(), 2, tokens);
    for (float t : tokens) EXPECT_TRUE(t >= -1.0f && t <= 15.0f / 16.0f && std::fmod(t * 16.0f, 1.0f) == 0.0f) << t;

    // a MotionBricks component is not a SONIC file; a missing file is an I/O error
    try {
        sonic_model::load("/nonexistent/sonic.gguf");
        ADD_FAILURE() << "loaded a missing file";
    } catch (const mb::error & e) {
        EXPECT_EQ(e.code(), mb::status::io_error);
    }
    // a wrong architecture string is an incompatible model; a truncated file a format error
    const auto        table = mb::test::sonic_weight_table(md);
    const std::string wrong = (fs::temp_directory_path() / "mb-sonic-wrong-arch.gguf").string();
    mb::test::write_sonic_gguf(wrong, table, {"g1"}, "g1-mode0-mlp-fsq64-v9");
    try {
        sonic_model::load(wrong);
        ADD_FAILURE() << "loaded an unknown architecture";
    } catch (const mb::error & e) {
        EXPECT_EQ(e.code(), mb::status::incompatible_model);
        EXPECT_NE(std::string(e.what()).find("fsq64"), std::string::npos);
    }
    // finite weights that overflow (the fuzzer's first finding): NaN latents are a compute failure,
    // not NaN tokens
    {
        std::vector<std::vector<float>> values;
        std::vector<mb::bundle_tensor>  tensors;
        for (const auto & t : table) {
            if (t.gguf_name.rfind("encoder.", 0) != 0 && t.gguf_name.rfind("decoder.", 0) != 0) continue;
            values.push_back(mb::test::sonic_weight_values(t, 1));
            if (t.gguf_name == "encoder.0.bias" || t.gguf_name == "decoder.0.bias") {
                for (float & v : values.back()) v = 3e38f;
            }
            tensors.push_back({t.gguf_name, mb::dtype::DTYPE_F32, t.shape, values.back().data()});
        }
        mb::gguf_write_kv a;
        a.key  = "sonic.architecture";
        a.type = mb::gguf_type::GGUF_TYPE_STRING;
        a.str  = "g1-mode0-mlp-fsq32-v1";
        const std::string huge = (fs::temp_directory_path() / "mb-sonic-huge.gguf").string();
        mb::bundle_write_component(huge, "sonic", tensors, {std::string(40, '0'), std::string(64, '0')}, {a});
        auto hm = sonic_model::load(huge, 1);
        auto hs = hm->create_state();
        std::vector<float> zeros(mb::sonic::k_encoder_obs, 0.0f), out(64, 7.0f);
        for (int pass = 0; pass < 2; ++pass) {
            try {
                if (pass == 0) hm->encode(*hs, zeros.data(), 1, out.data());
                else hm->decode(*hs, zeros.data(), 1, out.data());
                ADD_FAILURE() << "overflowing weights gave a result";
            } catch (const mb::error & e) {
                EXPECT_EQ(e.code(), mb::status::compute_failed);
                EXPECT_NE(std::string(e.what()).find("not finite"), std::string::npos) << e.what();
            }
        }
        fs::remove(huge);
    }
    fs::resize_file(wrong, 4096);
    EXPECT_THROW(sonic_model::load(wrong), mb::error);
    fs::remove(wrong);
}

// the C ABI: single calls equal the model, batches of 4 and 64 equal single rows bitwise, layer
// traces, and every argument check leaves the outputs unchanged
TEST(sonic_capi, single_batch_layers_and_errors) {
    MB_REQUIRE_SHARED(fixture, "fixtures/sonic/sonic_ref.mbsonic");
    std::vector<std::string> mismatches;
    const std::string path = fixture_gguf("all", {"g1", "teleop", "smpl"}, "g1-smpl-mode02-mlp-fsq32-v1", mismatches);
    char      e[512];
    mb_sonic * s = nullptr;
    ASSERT_EQ(mb_sonic_load(path.c_str(), nullptr, &s, e, sizeof e), MB_OK) << e;
    const mb::mbsonic_file f = mb::mbsonic_file::read(fixture);
    // rows of mode 0 (the fixture alternates modes): 64 of them, cycling
    std::vector<float> enc, dec;
    for (size_t i = 0; enc.size() < 64 * 1762; i = (i + 1) % f.size()) {
        const mb::mbsonic_sample x = f.sample(i);
        if (x.encoder_obs[0] != 0.0f) continue;
        enc.insert(enc.end(), x.encoder_obs, x.encoder_obs + 1762);
        dec.insert(dec.end(), x.decoder_obs, x.decoder_obs + 994);
    }
    uint64_t none_yet = 7;
    ASSERT_EQ(mb_sonic_layer(s, 1, 2, nullptr, 0, &none_yet, e, sizeof e), MB_OK) << e;
    EXPECT_EQ(none_yet, 0u) << "layers before any call";
    std::vector<float> tok1(64 * 64), act1(64 * 29);
    for (int r = 0; r < 64; ++r) {
        ASSERT_EQ(mb_sonic_encode(s, enc.data() + r * 1762, 1762, tok1.data() + r * 64, 64, e, sizeof e), MB_OK) << e;
        ASSERT_EQ(mb_sonic_decode(s, dec.data() + r * 994, 994, act1.data() + r * 29, 29, e, sizeof e), MB_OK) << e;
    }
    uint64_t n = 0;
    ASSERT_EQ(mb_sonic_layer(s, 0, 6, nullptr, 0, &n, e, sizeof e), MB_OK);
    EXPECT_EQ(n, 29u);
    std::vector<float> layer(n);
    ASSERT_EQ(mb_sonic_layer(s, 0, 6, layer.data(), n, &n, e, sizeof e), MB_OK);
    EXPECT_EQ(layer, std::vector<float>(act1.end() - 29, act1.end())) << "decoder layer 6 is the actions";
    for (uint32_t b : {4u, 64u}) {
        std::vector<float> tok(b * 64, -7.0f), act(b * 29, -7.0f);
        ASSERT_EQ(mb_sonic_encode_batch(s, enc.data(), b * 1762, b, tok.data(), tok.size(), e, sizeof e), MB_OK) << e;
        ASSERT_EQ(mb_sonic_decode_batch(s, dec.data(), b * 994, b, act.data(), act.size(), e, sizeof e), MB_OK) << e;
        EXPECT_EQ(tok, std::vector<float>(tok1.begin(), tok1.begin() + b * 64)) << "batch " << b;
        EXPECT_EQ(act, std::vector<float>(act1.begin(), act1.begin() + b * 29)) << "batch " << b;
        ASSERT_EQ(mb_sonic_layer(s, 1, 0, nullptr, 0, &n, e, sizeof e), MB_OK);
        EXPECT_EQ(n, b * 2048u);
    }
    // errors: nothing written
    std::vector<float> out(64 * 64, 5.0f), bad = enc;
    EXPECT_EQ(mb_sonic_encode(s, enc.data(), 1761, out.data(), 64, e, sizeof e), MB_INVALID_ARGUMENT);
    EXPECT_EQ(mb_sonic_encode(s, enc.data(), 1762, out.data(), 63, e, sizeof e), MB_INVALID_ARGUMENT);
    EXPECT_EQ(mb_sonic_encode(nullptr, enc.data(), 1762, out.data(), 64, e, sizeof e), MB_INVALID_ARGUMENT);
    EXPECT_EQ(mb_sonic_encode(s, nullptr, 1762, out.data(), 64, e, sizeof e), MB_INVALID_ARGUMENT);
    bad[100] = NAN;
    EXPECT_EQ(mb_sonic_encode(s, bad.data(), 1762, out.data(), 64, e, sizeof e), MB_INVALID_ARGUMENT);
    EXPECT_NE(std::string(e).find("not finite"), std::string::npos) << e;
    bad[100] = 0.0f;
    bad[0]   = 3.0f;
    EXPECT_EQ(mb_sonic_encode(s, bad.data(), 1762, out.data(), 64, e, sizeof e), MB_INVALID_ARGUMENT);
    bad[0]        = 0.0f;
    bad[1762 * 2] = 2.0f;    // row 2 in mode 2
    EXPECT_EQ(mb_sonic_encode_batch(s, bad.data(), 4 * 1762, 4, out.data(), 4 * 64, e, sizeof e), MB_INVALID_ARGUMENT);
    EXPECT_NE(std::string(e).find("mixes"), std::string::npos) << e;
    EXPECT_EQ(mb_sonic_encode_batch(s, enc.data(), 65 * 1762, 65, out.data(), 65 * 64, e, sizeof e), MB_INVALID_ARGUMENT);
    EXPECT_EQ(mb_sonic_encode_batch(s, enc.data(), 0, 0, out.data(), 0, e, sizeof e), MB_INVALID_ARGUMENT);
    EXPECT_EQ(out, std::vector<float>(64 * 64, 5.0f)) << "a refused call wrote its output";
    EXPECT_EQ(mb_sonic_layer(s, 2, 0, nullptr, 0, &n, e, sizeof e), MB_INVALID_ARGUMENT);
    EXPECT_EQ(mb_sonic_layer(s, 1, 5, nullptr, 0, &n, e, sizeof e), MB_INVALID_ARGUMENT);
    EXPECT_EQ(mb_sonic_layer(s, 0, 0, layer.data(), 1, &n, e, sizeof e), MB_INVALID_ARGUMENT);
    mb_sonic_free(s);
    mb_sonic_free(nullptr);

    mb_sonic * none = reinterpret_cast<mb_sonic *>(&n);
    EXPECT_EQ(mb_sonic_load("/nonexistent.gguf", nullptr, &none, e, sizeof e), MB_IO_ERROR);
    EXPECT_EQ(none, nullptr);
    EXPECT_EQ(mb_sonic_load(nullptr, nullptr, &none, e, sizeof e), MB_INVALID_ARGUMENT);
}

// convert.py sonic finds the layers of the exported ONNX graphs by topology (Gemm encoders,
// MatMul + Add decoder); the reduced-width exports then match upstream's outputs, and the 1762-
// and 1751-input encoder exports (same weights, two exporters) convert to the same tensors
TEST(sonic_convert, onnx_small_matches_upstream) {
    MB_REQUIRE_SHARED(dir, "fixtures/sonic/onnx-small");
    const fs::path tmp = fs::temp_directory_path() / ("mb-sonic-onnx-" + std::to_string(::getpid()));
    fs::create_directories(tmp);
    auto convert = [&](const std::string & enc, const std::string & out) {
        const std::string cmd = std::string("'") + MB_PYTHON + "' '" + MB_SRC + "/tools/convert.py' sonic --encoder '" + dir +
                                "/" + enc + "' --decoder '" + dir + "/model_decoder.onnx' --out '" + out + "' 2>&1";
        return std::system(cmd.c_str());
    };
    const std::string a = (tmp / "a.gguf").string(), b = (tmp / "b.gguf").string();
    ASSERT_EQ(convert("model_encoder_1762.onnx", a), 0);
    ASSERT_EQ(convert("model_encoder_1751.onnx", b), 0);
    {
        auto fa = mb::gguf_file::open(a), fb = mb::gguf_file::open(b);
        ASSERT_EQ(fa->tensors().size(), 44u);
        ASSERT_EQ(fa->tensors().size(), fb->tensors().size());
        for (size_t i = 0; i < fa->tensors().size(); ++i) {
            const auto & ta = fa->tensors()[i];
            const auto & tb = fb->tensors()[i];
            ASSERT_EQ(ta.name, tb.name);
            ASSERT_EQ(ta.n_bytes, tb.n_bytes);
            EXPECT_EQ(std::memcmp(ta.data, tb.data, ta.n_bytes), 0) << ta.name;
        }
    }
    auto                 m  = sonic_model::load(a, 1, mb::test::test_device());
    auto                 st = m->create_state();
    const mb::test::npz_file ref(dir + "/reference.npz");
    const auto           enc = ref.get("enc_in_1762").to_f32(), dec = ref.get("dec_in").to_f32();
    const auto           tok = ref.get("tokens").to_f32(), act = ref.get("actions").to_f32();
    const int64_t        n   = ref.get("mode").shape[0];
    double               worst = 0.0, worst_rel = 0.0;
    int                  token_mismatch = 0;
    for (int64_t i = 0; i < n; ++i) {
        std::map<std::string, std::vector<float>> layers;
        const mb::tap_fn tap = [&](std::string_view name, const float * d, const std::vector<int64_t> & shape) {
            layers[std::string(name)].assign(d, d + shape[0] * shape[1]);
        };
        float tokens[64], actions[29];
        m->encode(*st, enc.data() + i * 1762, 1, tokens, tap);
        m->decode(*st, dec.data() + i * 994, 1, actions, tap);
        for (int t = 0; t < 64; ++t) token_mismatch += tokens[t] != tok[size_t(i * 64 + t)];
        const err e = compare(actions, act.data() + i * 29, 29);
        worst = std::max(worst, e.max_abs);
        worst_rel = std::max(worst_rel, e.rel_l2);
        for (int k = 0; k < 5; ++k) {
            const auto want = ref.get("enc_layer" + std::to_string(k)).to_f32();
            const auto & got = layers["encoder_layer_" + std::to_string(k)];
            const err    l   = compare(got.data(), want.data() + i * int64_t(got.size()), int64_t(got.size()));
            worst = std::max(worst, l.max_abs);
            worst_rel = std::max(worst_rel, l.rel_l2);
        }
        for (int k = 0; k < 7; ++k) {
            const auto want = ref.get("dec_layer" + std::to_string(k)).to_f32();
            const auto & got = layers["decoder_layer_" + std::to_string(k)];
            const err    l   = compare(got.data(), want.data() + i * int64_t(got.size()), int64_t(got.size()));
            worst = std::max(worst, l.max_abs);
            worst_rel = std::max(worst_rel, l.rel_l2);
        }
    }
    std::printf("onnx-small (%lld samples): max |d| %.3g, rel L2 %.3g, token mismatches %d\n", (long long) n, worst,
                worst_rel, token_mismatch);
    EXPECT_LE(worst, k_gate_abs);
    EXPECT_LE(worst_rel, k_gate_rel);
    EXPECT_EQ(token_mismatch, 0);
    fs::remove_all(tmp);
}

TEST(sonic_fsq, rounds_half_to_even_on_32_levels) {
    // b = tanh(l + shift)·half_l − 0.5: saturated latents give the end levels
    EXPECT_EQ(mb::sonic::fsq_token(100.0f), 15.0f / 16.0f);
    EXPECT_EQ(mb::sonic::fsq_token(-100.0f), -1.0f);
    EXPECT_EQ(mb::sonic::fsq_token(-0.03223699703812599f), 0.0f);    // b = −0.5 → round-half-even → 0 (−0)
}

TEST(mbsonic, rejects_broken_files) {
    auto make = [](uint32_t n, size_t extra) {
        std::string b = "MBSONIC1";
        b.append(reinterpret_cast<const char *>(&n), 4);
        b.append(size_t(n) * mb::k_mbsonic_sample_floats * 4 + extra, '\0');
        return b;
    };
    EXPECT_EQ(mb::mbsonic_file::parse(make(2, 0), "ok").size(), 2u);
    const std::pair<std::string, std::string> broken[] = {
        {"", "truncated header"},
        {"MBSONIC2" + std::string(4, '\1'), "bad magic"},
        {make(0, 0), "outside 1..20000"},
        {make(2, 0).substr(0, 100), "truncated"},
        {make(1, 3), "trailing bytes"},
        {[&] {
             std::string b = make(1, 0);
             const float nan = NAN;
             std::memcpy(&b[12 + 4 * 1800], &nan, 4);    // decoder obs
             return b;
         }(),
         "decoder obs holds a non-finite"},
    };
    for (const auto & [bytes, msg] : broken) {
        try {
            mb::mbsonic_file::parse(bytes, "x.mbsonic");
            ADD_FAILURE() << "accepted: " << msg;
        } catch (const mb::error & e) {
            EXPECT_EQ(e.code(), mb::status::invalid_format);
            EXPECT_NE(std::string(e.what()).find(msg), std::string::npos) << e.what();
        }
    }
}

} // namespace
