// the readers of untrusted text (issue 19.3, 19.11, 19.13a): `infer` requests, `plan` scripts,
// WebSocket client messages and the release MANIFEST.json go through one bounded parser
// (src/format/json-bounded.h) and every named input file through one regular-file reader
// (src/format/regular-file.h). Peak memory is measured (wait4's ru_maxrss of a child), not assumed
#include "format/json-bounded.h"
#include "format/regular-file.h"
#include "motion/mjcf.h"
#include "support/child.h"
#include "tools/cli/infer-request.h"
#include "tools/cli/plan-script.h"
#include "tools/download/download.h"
#include "tools/serve/protocol.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sys/stat.h>
#include <unistd.h>

namespace {

using json = nlohmann::json;
using namespace mb;
using namespace mb::test;
namespace fs = std::filesystem;

constexpr long k_rss_bound_kb = 100 * 1024;   // a hostile text of any size stays under this

std::string temp_path(const std::string & name) {
    return ::testing::TempDir() + "mb-text-inputs-" + std::to_string(::getpid()) + "-" + name;
}

void write_file(const std::string & path, const std::string & bytes) {
    std::ofstream(path, std::ios::binary) << bytes;
}

// a valid request with every documented field (argmax, no uniforms)
json valid_request() {
    auto mat = [](int r, int c) { return json(std::vector<std::vector<double>>(size_t(r), std::vector<double>(size_t(c), 0.0))); };
    return json{{"format", cli::k_request_format},
                {"global_root", mat(8, 5)},
                {"local_root", mat(8, 4)},
                {"poses", mat(8, 303)},
                {"global_root_mask", std::vector<int>(8, 1)},
                {"local_root_mask", std::vector<int>(8, 1)},
                {"pose_mask", std::vector<int>(8, 1)},
                {"num_tokens", nullptr},
                {"allowed_num_tokens", std::vector<int>(11, 1)},
                {"sampling", "argmax"},
                {"seed", 1},
                {"gumbel_uniforms", nullptr},
                {"num_inference_steps", 1},
                {"skip_ending_target_cond", false},
                {"allow_out_of_reach", false}};
}

// parse_infer_request(text) in a child: exit 2 when it throws bad_request, 0 when it accepts
child_result infer_in_child(const std::string & text) {
    return run_function([&] {
        try {
            cli::parse_infer_request(text);
            return 0;
        } catch (const cli::bad_request &) {
            return 2;
        }
    }, 60);
}

child_result script_in_child(const std::string & text) {
    return run_function([&] {
        try {
            cli::parse_plan_script(text, [](const std::string &) { return 0; });
            return 0;
        } catch (const cli::bad_script &) {
            return 2;
        }
    }, 60);
}

TEST(JsonBounded, DepthValuesBytesAndDuplicateKeys) {
    const json_bounds b{.max_bytes = 64, .max_depth = 2, .max_values = 5};
    EXPECT_EQ(json_parse_bounded(R"({"a":[1,2]})", b), json::parse(R"({"a":[1,2]})"));
    EXPECT_THROW(json_parse_bounded("[[[1]]]", b), json_input_error);          // depth 3
    EXPECT_THROW(json_parse_bounded("[1,2,3,4,5]", b), json_input_error);      // 6 values
    EXPECT_THROW(json_parse_bounded(std::string(65, ' ') + "1", b), json_input_error);
    EXPECT_THROW(json_parse_bounded(R"({"a":1,"a":2})", b), json_input_error);
    EXPECT_NO_THROW(json_parse_bounded(R"([{"a":1},{"a":2}])", b));             // same key, two objects
    EXPECT_THROW(json_parse_bounded("[1] x", b), json_input_error);
    EXPECT_THROW(json_parse_bounded("1e999", b), json_input_error);
    try {
        json_parse_bounded(R"({"k":{"x":1,"x":1}})", b);
        FAIL();
    } catch (const json_input_error & e) {
        EXPECT_NE(std::string(e.what()).find("\"x\" twice"), std::string::npos) << e.what();
    }
}

// 19.3: 64 MiB of '[' reached 5 GB before the bounds; now a text just under the byte bound is
// rejected at the depth bound, a flat array at the value bound, both far under 100 MB
TEST(TextInputs, HostileRequestsStayUnder100MB) {
    const size_t n = cli::k_request_bounds.max_bytes - 1;
    const child_result deep = infer_in_child(std::string(n, '['));
    EXPECT_EQ(deep.exit_code, 2);
    EXPECT_LT(deep.max_rss_kb, k_rss_bound_kb) << "peak RSS " << deep.max_rss_kb << " kB";
    std::string flat = "[0";
    while (flat.size() + 3 < n) flat += ",0";
    flat += "]";
    const child_result wide = infer_in_child(flat);
    EXPECT_EQ(wide.exit_code, 2);
    EXPECT_LT(wide.max_rss_kb, k_rss_bound_kb) << "peak RSS " << wide.max_rss_kb << " kB";
    EXPECT_EQ(infer_in_child(valid_request().dump()).exit_code, 0);
    EXPECT_EQ(infer_in_child(valid_request().dump(4)).exit_code, 0);
}

// 19.3: a 16 MiB script reached 1.27 GB; within the byte bound, objects and segments are bounded
TEST(TextInputs, HostileScriptsStayUnder100MB) {
    const size_t n   = cli::k_script_bounds.max_bytes - 1;
    std::string  seg = R"({"frames":1,"style":"walk","movement":[0,1],"facing":[0,1]})";
    std::string  s   = "[" + seg;
    while (s.size() + seg.size() + 2 < n) s += "," + seg;
    s += "]";
    const child_result many = script_in_child(s);
    EXPECT_EQ(many.exit_code, 2);
    EXPECT_LT(many.max_rss_kb, k_rss_bound_kb) << "peak RSS " << many.max_rss_kb << " kB";
    const child_result deep = script_in_child(std::string(n, '['));
    EXPECT_EQ(deep.exit_code, 2);
    EXPECT_LT(deep.max_rss_kb, k_rss_bound_kb) << "peak RSS " << deep.max_rss_kb << " kB";
    // the largest valid script: k_max_segments segments of every field, indented
    json big = json::array();
    for (size_t i = 0; i < cli::k_max_segments; ++i) {
        big.push_back({{"frames", 100}, {"style", "walk"}, {"movement", {0.12345678901234567, -0.98765432109876543}},
                       {"facing", {0.5, 0.5}}, {"speed", 1.2345678901234567}, {"seed", 18446744073709551615ull},
                       {"target", {123456.78901234567, -123456.78901234567}}, {"target_heading", 3.1415926535897931}});
    }
    const std::string text = big.dump(4);
    EXPECT_LT(text.size(), cli::k_script_bounds.max_bytes);
    EXPECT_EQ(script_in_child(text).exit_code, 0);
}

// the CLI end to end: 64 MiB of '[' as --request (5 GB and 12.9 s before) is refused by its size
TEST(TextInputs, CliRequestOf64MiBIsRefusedCheaply) {
    const std::string path = temp_path("open-brackets.json");
    write_file(path, std::string(size_t(64) << 20, '['));
    const child_result r = run_program({MB_CLI_PATH, "infer", "--model", "/nonexistent", "--request", path, "--output",
                                        temp_path("out.json")}, 60, temp_path("err.txt"));
    fs::remove(path);
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_LT(r.max_rss_kb, k_rss_bound_kb) << "peak RSS " << r.max_rss_kb << " kB";
}

// 19.13a: a key given twice was accepted, the last one winning
TEST(TextInputs, DuplicateKeysAreRejected) {
    std::string req = valid_request().dump();   // keys sorted: allow_out_of_reach comes first
    req.insert(1, R"("allow_out_of_reach":true,)");
    EXPECT_EQ(infer_in_child(req).exit_code, 2);
    EXPECT_EQ(script_in_child(R"([{"frames":1,"frames":2,"style":"walk"}])").exit_code, 2);
    EXPECT_EQ(serve::parse_client_message(R"({"type":"control","seq":1,"seq":2})").kind, serve::parse_result::error);
    EXPECT_EQ(serve::parse_client_message(R"({"type":"ping","type":"reset","seq":1})").kind, serve::parse_result::error);
    const std::string file = R"({"path":"styles/walk.mbstyle","bytes":1,"sha256":")" + std::string(64, 'a') + "\"}";
    EXPECT_NO_THROW(download::parse_distribution_manifest(R"({"format":"motionbricks-gguf-distribution-v1","files":[)" + file + "]}"));
    EXPECT_THROW(download::parse_distribution_manifest(R"({"format":"motionbricks-gguf-distribution-v1","format":"x","files":[)" + file + "]}"),
                 download::download_error);
}

// 19.11: a FIFO as --request blocked forever, a directory was "larger than 64 MiB"
TEST(TextInputs, NonRegularFilesAreRefusedUpFront) {
    const std::string fifo = temp_path("fifo");
    const std::string dir  = temp_path("dir");
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    fs::create_directories(dir);
    const std::string err = temp_path("err.txt");
    for (const auto & [path, kind] : {std::pair{fifo, "a FIFO"}, std::pair{dir, "a directory"}}) {
        const child_result r = run_program({MB_CLI_PATH, "infer", "--model", "/nonexistent", "--request", path, "--output",
                                            temp_path("out.json")}, 20, err);
        EXPECT_FALSE(r.timed_out) << path;
        EXPECT_EQ(r.exit_code, 2) << path;
        std::ifstream     f(err);
        const std::string text((std::istreambuf_iterator<char>(f)), {});
        EXPECT_NE(text.find(std::string("not a regular file (") + kind + ")"), std::string::npos) << text;
        // the plan script and the MJCF reader use the same reader; in a child, so a regression cannot hang the suite
        const child_result p = run_function([&] {
            try {
                read_regular_file(path, cli::k_script_bounds.max_bytes);
            } catch (const file_error &) {
                try {
                    mjcf_load(path);
                } catch (const std::runtime_error &) {
                    return 2;
                }
            }
            return 0;
        }, 20);
        EXPECT_FALSE(p.timed_out) << path;
        EXPECT_EQ(p.exit_code, 2) << path;
    }
    fs::remove(fifo);
    fs::remove(dir);
}

} // namespace
