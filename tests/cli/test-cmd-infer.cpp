// `motionbricks infer` end to end: a bundle converted from the reference-small
// weights (tools/convert.py), every case's request written as JSON, the result
// compared to the fixture; bad requests and bad usage exit 2 and write nothing
#include "poison-bundle.h"
#include "support/npz.h"
#include "support/reference-small.h"
#include "support/shell.h"
#include "support/test-paths.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace {

using json = nlohmann::json;
using namespace mb::test;
namespace fs = std::filesystem;

constexpr const char * k_dir = "fixtures/reference-small";
constexpr double       k_tol = 1e-4;   // global features and joint positions, absolute

// the converted bundle, once per process; "" with a reason when it cannot be made
const std::string & bundle_dir(std::string & why) {
    static std::string dir, reason;
    static bool done = false;
    if (!done) {
        done = true;
        const std::string src = shared_path(k_dir);
        const std::string conv = std::string(MB_SOURCE_DIR) + "/tools/convert.py";
        if (src.empty()) {
            reason = std::string("../shared/") + k_dir + " not found";
        } else if (!fs::exists(MB_PYTHON) || !fs::exists(conv)) {
            reason = std::string(MB_PYTHON) + " or tools/convert.py not found";
        } else {
            const std::string out = ::testing::TempDir() + "mb-infer-bundle-" + std::to_string(::getpid());
            fs::remove_all(out);
            const std::string w = src + "/weights/";
            const std::string cmd = std::string(MB_PYTHON) + " " + quote(conv) + " bundle --pose " + quote(w + "pose.safetensors") +
                                    " --root " + quote(w + "root.safetensors") + " --vqvae " + quote(w + "vqvae.safetensors") +
                                    " --stats " + quote(w + "stats.safetensors") + " --out " + quote(out) +
                                    " --pose-heads 4 --root-heads 4 --quiet";
            const std::string log = out + ".log";
            if (run(cmd, log) != 0) {
                reason = "tools/convert.py bundle failed: " + slurp(log);
            } else {
                dir = out;
            }
        }
    }
    why = reason;
    return dir;
}

json request_of(const npz_file & z, const reference_case & rc) {
    auto rows = [](const npy_array & a, size_t cols) {
        const std::vector<float> v = a.to_f32();
        json out = json::array();
        for (size_t r = 0; r < v.size() / cols; ++r) {
            json row = json::array();
            for (size_t c = 0; c < cols; ++c) row.push_back(v[r * cols + c]);
            out.push_back(row);
        }
        return out;
    };
    auto mask = [](const npy_array & a) {
        json out = json::array();
        for (int64_t v : a.to_i64()) out.push_back(v != 0 ? 1 : 0);
        return out;
    };
    const int64_t nt = z.get("in_num_tokens").to_i64()[0];
    json j = {
        {"format", "motionbricks-inference-request-v1"},
        {"global_root", rows(z.get("in_global_root_values", {1, 8, 5}), 5)},
        {"global_root_mask", mask(z.get("in_has_global_root_values"))},
        {"local_root", rows(z.get("in_local_root_values", {1, 8, 4}), 4)},
        {"local_root_mask", mask(z.get("in_has_local_root_values"))},
        {"poses", rows(z.get("in_local_poses", {1, 8, 303}), 303)},
        {"pose_mask", mask(z.get("in_has_local_poses"))},
        {"num_tokens", nt == 18 ? json(nullptr) : json(nt)},
        {"allowed_num_tokens", z.has("in_allowed_pred_num_tokens") ? mask(z.get("in_allowed_pred_num_tokens")) : json(nullptr)},
        {"sampling", rc.use_argmax ? "argmax" : "gumbel"},
        {"seed", 0},
        {"gumbel_uniforms", nullptr},
        {"num_inference_steps", rc.num_inference_steps},
        {"skip_ending_target_cond", rc.skip_ending_target_cond},
        {"allow_out_of_reach", rc.allow_out_of_reach},
    };
    if (!rc.use_argmax) {
        // [S, 1, 16, 8, 10] → [S][16][8][10]
        const std::vector<float> u = z.get("mid_step_gumbel_uniform").to_f32();
        json steps = json::array();
        for (int s = 0; s < rc.num_inference_steps; ++s) {
            json toks = json::array();
            for (int t = 0; t < 16; ++t) {
                json heads = json::array();
                for (int h = 0; h < 8; ++h) {
                    json codes = json::array();
                    for (int c = 0; c < 10; ++c) codes.push_back(u[size_t(((s * 16 + t) * 8 + h) * 10 + c)]);
                    heads.push_back(codes);
                }
                toks.push_back(heads);
            }
            steps.push_back(toks);
        }
        j["gumbel_uniforms"] = steps;
    }
    return j;
}

std::vector<double> flat(const json & j) {
    std::vector<double> out;
    if (j.is_array()) {
        for (const auto & e : j) {
            const std::vector<double> sub = flat(e);
            out.insert(out.end(), sub.begin(), sub.end());
        }
    } else {
        out.push_back(j.is_null() ? -INFINITY : j.get<double>());
    }
    return out;
}

class cmd_infer : public ::testing::Test {
protected:
    void SetUp() override {
        std::string why;
        bundle_ = bundle_dir(why);
        if (bundle_.empty()) GTEST_SKIP() << "skipped: " << why;
        work_ = ::testing::TempDir() + "mb-infer-" + std::to_string(::getpid()) + "-" +
                ::testing::UnitTest::GetInstance()->current_test_info()->name();
        fs::remove_all(work_);
        fs::create_directories(work_);
    }
    // runs infer on `req` (text); returns the exit code
    int infer(const std::string & req, const std::string & extra = "") {
        std::ofstream(work_ + "/req.json") << req;
        return run(std::string(MB_CLI_PATH) + " infer --model " + quote(bundle_) + " --request " + quote(work_ + "/req.json") +
                       " --output " + quote(work_ + "/res.json") + " --threads 1 " + extra,
                   work_ + "/stderr.txt");
    }
    std::string bundle_, work_;
};

} // namespace

TEST_F(cmd_infer, every_reference_case_matches_upstream) {
    const std::string dir = shared_path(k_dir);
    double worst_g = 0.0, worst_j = 0.0;
    for (const auto & rc : reference_cases(dir)) {
        SCOPED_TRACE(rc.name);
        npz_file z(rc.file);
        ASSERT_EQ(infer(request_of(z, rc).dump()), 0) << slurp(work_ + "/stderr.txt");
        const json r = json::parse(slurp(work_ + "/res.json"));
        EXPECT_EQ(r.at("format"), "motionbricks-inference-result-v1");
        const int64_t n = z.get("out_pred_num_tokens").to_i64()[0];
        ASSERT_EQ(r.at("num_tokens").get<int64_t>(), n);
        ASSERT_EQ(r.at("frames").get<int64_t>(), 4 * n);
        EXPECT_EQ(r.at("fps").get<int>(), 30);
        EXPECT_EQ(r.size(), 10u);

        // tokens exact
        const std::vector<int64_t> tok = z.get("mid_pred_pose_tokens", {1, 16, 8}).to_i64();
        const std::vector<double> got_tok = flat(r.at("tokens"));
        ASSERT_EQ(got_tok.size(), size_t(n * 8));
        for (size_t i = 0; i < got_tok.size(); ++i) ASSERT_EQ(int64_t(got_tok[i]), tok[i]) << i;

        // masked logits: null where −inf
        const std::vector<float> logits = z.get("mid_num_token_logits", {1, 12}).to_f32();
        const std::vector<double> got_l = flat(r.at("num_token_logits"));
        ASSERT_EQ(got_l.size(), 12u);
        for (size_t k = 0; k < 12; ++k) {
            if (std::isinf(logits[k])) {
                EXPECT_TRUE(std::isinf(got_l[k])) << k;
            } else {
                EXPECT_NEAR(got_l[k], logits[k], 1e-4) << k;
            }
        }

        const std::vector<float> out = z.get("out_pred_global_poses", {1, 64, 414}).to_f32();
        const std::vector<float> joints = z.get("derived_posed_joints", {1, 64, 34, 3}).to_f32();
        const std::vector<double> g = flat(r.at("global_features")), jp = flat(r.at("joint_positions"));
        const std::vector<double> rt = flat(r.at("root_translations")), q = flat(r.at("local_rotations_xyzw"));
        ASSERT_EQ(g.size(), size_t(4 * n * 414));
        ASSERT_EQ(jp.size(), size_t(4 * n * 102));
        ASSERT_EQ(rt.size(), size_t(4 * n * 3));
        ASSERT_EQ(q.size(), size_t(4 * n * 136));
        for (size_t i = 0; i < g.size(); ++i) worst_g = std::max(worst_g, std::fabs(g[i] - out[i]));
        for (size_t i = 0; i < jp.size(); ++i) worst_j = std::max(worst_j, std::fabs(jp[i] - joints[i]));
        for (size_t f = 0; f < size_t(4 * n); ++f) {
            for (size_t i = 0; i < 3; ++i) EXPECT_EQ(rt[f * 3 + i], g[f * 414 + i]);
        }
        for (size_t k = 0; k < q.size(); k += 4) {
            ASSERT_NEAR(q[k] * q[k] + q[k + 1] * q[k + 1] + q[k + 2] * q[k + 2] + q[k + 3] * q[k + 3], 1.0, 1e-4);
        }
    }
    EXPECT_LE(worst_g, k_tol);
    EXPECT_LE(worst_j, k_tol);
    std::printf("  infer vs upstream: max abs error global_features %.3g, joint_positions %.3g\n", worst_g, worst_j);
}

TEST_F(cmd_infer, trace_writes_every_stage) {
    const std::string dir = shared_path(k_dir);
    const reference_case rc = reference_cases(dir).at(0);
    npz_file z(rc.file);
    ASSERT_EQ(infer(request_of(z, rc).dump(), "--trace " + quote(work_ + "/trace")), 0) << slurp(work_ + "/stderr.txt");
    const json m = json::parse(slurp(work_ + "/trace/trace.json"));
    EXPECT_EQ(m.at("format"), "motionbricks-trace-v1");
    bool seen = false;
    for (const auto & a : m.at("arrays")) {
        const std::string bytes = slurp(work_ + "/trace/" + a.at("file").get<std::string>());
        const npy_array arr = npy_parse(reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size(), a.at("file"));
        EXPECT_EQ(arr.shape, a.at("shape").get<std::vector<int64_t>>());
        if (a.at("name") == "pred_global_root_values") {
            seen = true;
            const std::vector<float> got = arr.to_f32(), ref = z.get("mid_pred_global_root_values").to_f32();
            for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], ref[i], 1e-4) << i;
        }
    }
    EXPECT_TRUE(seen);
    for (const char * stage : {"num_token_logits", "step_pose_logits", "pred_pose_tokens", "decoder_recon_state",
                               "pred_global_poses", "joint_positions"}) {
        bool found = false;
        for (const auto & a : m.at("arrays")) found = found || a.at("name") == stage;
        EXPECT_TRUE(found) << stage;
    }
}

TEST_F(cmd_infer, bad_requests_exit_2_and_write_nothing) {
    const std::string dir = shared_path(k_dir);
    const reference_case rc = reference_cases(dir).at(0);
    const json good = request_of(npz_file(rc.file), rc);
    ASSERT_EQ(infer(good.dump()), 0) << slurp(work_ + "/stderr.txt");
    fs::remove(work_ + "/res.json");

    struct bad {
        const char * what;
        json         req;
    };
    std::vector<bad> bads;
    auto with = [&](const char * what, auto edit) {
        json j = good;
        edit(j);
        bads.push_back({what, j});
    };
    with("unknown format", [](json & j) { j["format"] = "motionbricks-inference-request-v2"; });
    with("missing field", [](json & j) { j.erase("seed"); });
    with("extra field", [](json & j) { j["temperature"] = 1.0; });
    with("short global_root", [](json & j) { j["global_root"].erase(7); });
    with("long pose row", [](json & j) { j["poses"][2].push_back(0.0); });
    with("string value", [](json & j) { j["local_root"][1][1] = "0.5"; });
    with("magnitude", [](json & j) { j["poses"][0][0] = 2e4; });
    with("mask 2", [](json & j) { j["pose_mask"][3] = 2; });
    with("slot 0 off", [](json & j) { j["global_root_mask"][0] = 0; });
    with("heading not unit", [](json & j) { j["global_root"][5][3] = 0.2; });
    with("num_tokens 5", [](json & j) { j["num_tokens"] = 5; });
    with("num_tokens 17", [](json & j) { j["num_tokens"] = 17; });
    with("no allowed durations", [](json & j) { j["allowed_num_tokens"] = json::array({0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}); });
    with("allowed size", [](json & j) { j["allowed_num_tokens"] = json::array({1, 1}); });
    with("sampling", [](json & j) { j["sampling"] = "topk"; });
    with("negative seed", [](json & j) { j["seed"] = -1; });
    with("steps 0", [](json & j) { j["num_inference_steps"] = 0; });
    with("steps 17", [](json & j) { j["num_inference_steps"] = 17; });
    with("uniforms with argmax", [](json & j) { j["gumbel_uniforms"] = json::array(); });
    with("uniforms wrong size", [](json & j) {
        j["sampling"] = "gumbel";
        j["gumbel_uniforms"] = json::array({json::array()});
    });
    with("bool flag as int", [](json & j) { j["allow_out_of_reach"] = 0; });
    for (const bad & b : bads) {
        EXPECT_EQ(infer(b.req.dump()), 2) << b.what;
        EXPECT_FALSE(fs::exists(work_ + "/res.json")) << b.what;
        EXPECT_NE(slurp(work_ + "/stderr.txt").find("bad request"), std::string::npos) << b.what;
    }
    // not JSON, NaN / Inf literals, a huge number that overflows to inf
    std::string text = good.dump();
    for (const std::string & raw : {std::string("{"), std::string("[]"), text.substr(0, text.size() / 2),
                                    std::string(text).replace(text.find("\"seed\":0"), 8, "\"seed\":NaN"),
                                    std::string(text).replace(text.find("\"seed\":0"), 8, "\"seed\":1e400")}) {
        EXPECT_EQ(infer(raw), 2) << raw.substr(0, 60);
        EXPECT_FALSE(fs::exists(work_ + "/res.json"));
    }
    {
        json j = good;
        j["poses"][1][1] = HUGE_VAL;   // dumps as null
        EXPECT_EQ(infer(j.dump()), 2);
        // first pose value replaced by a literal that overflows a double
        std::string t = good.dump();
        const size_t at = t.find("\"poses\":[[") + 10;
        t.replace(at, t.find(',', at) - at, "1e400");
        EXPECT_EQ(infer(t), 2);
    }
    EXPECT_FALSE(fs::exists(work_ + "/res.json"));
}

TEST_F(cmd_infer, bad_usage_and_bad_model) {
    const std::string dir = shared_path(k_dir);
    const reference_case rc = reference_cases(dir).at(0);
    std::ofstream(work_ + "/req.json") << request_of(npz_file(rc.file), rc).dump();
    const std::string cli = std::string(MB_CLI_PATH) + " infer ";
    const std::string log = work_ + "/stderr.txt";
    EXPECT_EQ(run(cli + "--model " + quote(bundle_) + " --request " + quote(work_ + "/req.json"), log), 2);
    EXPECT_EQ(run(cli + "--model " + quote(bundle_) + " --request " + quote(work_ + "/req.json") + " --output " +
                      quote(work_ + "/res.json") + " --frobnicate 1", log), 2);
    EXPECT_EQ(run(cli + "--model " + quote(bundle_) + " --request " + quote(work_ + "/req.json") + " --output " +
                      quote(work_ + "/res.json") + " --threads 0", log), 2);
    EXPECT_EQ(run(cli + "--model " + quote(bundle_) + " --request " + quote(work_ + "/missing.json") + " --output " +
                      quote(work_ + "/res.json"), log), 2);
    EXPECT_EQ(run(cli + "--model " + quote(work_ + "/no-bundle") + " --request " + quote(work_ + "/req.json") +
                      " --output " + quote(work_ + "/res.json"), log), 1);
    EXPECT_NE(slurp(log).find("cannot load model"), std::string::npos);
    EXPECT_FALSE(fs::exists(work_ + "/res.json"));
}

// a bundle whose root or VQ-decoder weights are NaN, Inf or a finite 1e38 (which overflows) never
// gives success: the load or the library's output check fails the call, exit 1, nothing written
TEST_F(cmd_infer, non_finite_weights_fail_and_write_nothing) {
    const std::string dir = shared_path(k_dir);
    const reference_case rc = reference_cases(dir).at(0);
    const std::string req = request_of(npz_file(rc.file), rc).dump();
    for (const poison_case & pc : poison_cases()) {
        SCOPED_TRACE(std::string(pc.file) + " " + pc.label);
        const std::string bad = work_ + "/bundle";
        ASSERT_TRUE(poison_bundle(bundle_, bad, pc.file, pc.tensor, pc.value));
        std::ofstream(work_ + "/req.json") << req;
        const int code = run(std::string(MB_CLI_PATH) + " infer --model " + quote(bad) + " --request " +
                                 quote(work_ + "/req.json") + " --output " + quote(work_ + "/res.json") + " --threads 1",
                             work_ + "/stderr.txt");
        const std::string err = slurp(work_ + "/stderr.txt");
        EXPECT_NE(code, 0) << err;
        EXPECT_NE(err.find("finite"), std::string::npos) << err;
        EXPECT_FALSE(fs::exists(work_ + "/res.json"));
    }
}
