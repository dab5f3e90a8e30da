// `motionbricks plan` through the real binary: a small random-weight bundle and styles made
// by tools/convert.py (the synthetic clip library and a qpos CSV); output layout, the
// upstream replan cadence, seam continuity, CSV output, and bad input → exit 2
#include "poison-bundle.h"
#include "support/shell.h"
#include "support/test-paths.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

using json   = nlohmann::json;
namespace fs = std::filesystem;
using mb::test::quote;
using mb::test::run;
using mb::test::slurp;

// bundle + styles, once per process; "" with a reason when they cannot be made
struct setup {
    std::string dir, why;
    std::string styles;     // " --style A --style B ..."

    setup() {
        const std::string ckpt = mb::test::shared_path("fixtures/agent-small/G1-clip-synthetic.ckpt");
        const std::string lib  = mb::test::shared_path("fixtures/agent-small/clip_library.npz");
        const std::string conv = std::string(MB_SOURCE_DIR) + "/tools/convert.py";
        if (ckpt.empty() || lib.empty()) {
            why = "../shared/fixtures/agent-small not found";
            return;
        }
        if (!fs::exists(MB_PYTHON)) {
            why = std::string(MB_PYTHON) + " not found";
            return;
        }
        dir = ::testing::TempDir() + "mb-plan-" + std::to_string(::getpid());
        fs::remove_all(dir);
        fs::create_directories(dir);
        const std::string py = std::string(MB_PYTHON) + " " + quote(conv);
        const std::string log = dir + "/setup.log";
        if (run(py + " random-bundle --preset small --seed 3 --quiet --out " + quote(dir + "/bundle"), log) != 0 ||
            run(py + " styles --clips " + quote(ckpt) + " --out " + quote(dir + "/styles"), log) != 0) {
            why = "converter failed: " + slurp(log);
            dir.clear();
            return;
        }
        // a style from a qpos CSV: the synthetic zombie-walk source clip, at 60 fps
        const std::string csv = dir + "/clip.csv";
        const std::string script = "import numpy as np\n"
                                   "z = np.load('" + lib + "')\n"
                                   "o = z['source_offsets']; i = int(z['mode_source_index'][10])\n"
                                   "q = z['source_qpos'][o[i]:o[i + 1]].astype(np.float64)\n"
                                   "m = (q[:-1] + q[1:]) / 2\n"
                                   "a, b = q[:-1, 3:7], q[1:, 3:7]\n"
                                   "m[:, 3:7] = (a + b) / np.linalg.norm(a + b, axis=1, keepdims=True)\n"
                                   "r = np.zeros((2 * len(q) - 1, 36)); r[0::2] = q; r[1::2] = m\n"
                                   "np.savetxt('" + csv + "', r, delimiter=',', fmt='%.9g')\n";
        std::ofstream(dir + "/mkcsv.py") << script;
        if (run(std::string(MB_PYTHON) + " " + quote(dir + "/mkcsv.py"), log) != 0 ||
            run(py + " style --qpos-csv " + quote(csv) + " --quat-order wxyz --fps 60 --frames 10:100 --name csv_zombie"
                     " --speed 0.6 --allowed-tokens 6-11 --out " + quote(dir + "/csv_zombie.mbstyle"), log) != 0) {
            why = "style from CSV failed: " + slurp(log);
            dir.clear();
            return;
        }
        for (const auto & e : fs::directory_iterator(dir + "/styles")) {
            if (e.path().extension() == ".mbstyle") styles += " --style " + quote(e.path().string());
        }
        styles += " --style " + quote(dir + "/csv_zombie.mbstyle");
    }
};

const setup & env() {
    static setup s;
    return s;
}

#define REQUIRE_ENV()                                        \
    const setup & e = env();                                 \
    if (e.dir.empty()) GTEST_SKIP() << "skipped: " << e.why

std::string plan_cmd(const setup & e, const std::string & script, const std::string & out, const std::string & extra = "") {
    return std::string(MB_CLI_PATH) + " plan --model " + quote(e.dir + "/bundle") + e.styles + " --script " +
           quote(script) + " --output " + quote(out) + " --threads 2" + extra;
}

// runs `cmd` through /bin/sh (output discarded) and returns the peak resident set of that child
// in KiB (the shell execs the last command, so it is the CLI's), or -1 when it did not exit 0
long peak_rss_kib(const std::string & cmd) {
    const pid_t pid = ::fork();
    if (pid == 0) {
        const std::string c = "exec " + cmd + " >/dev/null 2>&1";
        ::execl("/bin/sh", "sh", "-c", c.c_str(), (char *) nullptr);
        ::_exit(127);
    }
    int           status = 0;
    struct rusage ru {};
    if (pid < 0 || ::wait4(pid, &status, 0, &ru) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return -1;
    return ru.ru_maxrss;
}

} // namespace

TEST(cmd_plan, ten_second_script_is_continuous) {
    REQUIRE_ENV();
    const std::string script = e.dir + "/script.json";
    std::ofstream(script) << R"([
        {"frames": 40, "style": "idle"},
        {"frames": 90, "style": "walk", "movement": [0, 1], "facing": [0, 1]},
        {"frames": 100, "style": "csv_zombie", "movement": [1, 0], "facing": [1, 1], "speed": 0.4},
        {"frames": 40, "style": "walk", "target": [2, 3], "target_heading": 1.5},
        {"frames": 30, "style": "idle"}
    ])";
    const std::string out = e.dir + "/motion.json";
    ASSERT_EQ(run(plan_cmd(e, script, out), e.dir + "/plan.log"), 0) << slurp(e.dir + "/plan.log");
    const json d = json::parse(slurp(out));
    EXPECT_EQ(d["format"], "motionbricks-motion-v1");
    EXPECT_EQ(d["fps"], 30);
    ASSERT_EQ(d["frames"], 300);
    ASSERT_EQ(d["qpos"].size(), 300u);
    ASSERT_EQ(d["joint_positions"].size(), 300u);
    ASSERT_EQ(d["joint_positions"][0].size(), 34u);
    ASSERT_EQ(d["local_rotations_xyzw"][299].size(), 34u);
    ASSERT_EQ(d["root_translations"].size(), 300u);
    EXPECT_EQ(d["joint_names"][7], "left_toe_base");
    EXPECT_EQ(d["parents"][26], 17);

    // the upstream cadence: the first plan after 16 shown frames, then every 16 frames while
    // not idle → idle; every plan 24..64 frames; the idle tail plays out without replanning
    const json & plans = d["plans"];
    ASSERT_GE(plans.size(), 10u);
    EXPECT_EQ(plans[0]["first_frame"], 16);
    EXPECT_EQ(plans[0]["style"], "idle");
    bool zombie = false;
    for (size_t p = 0; p < plans.size(); ++p) {
        EXPECT_GE(plans[p]["frames"].get<int>(), 24);
        EXPECT_LE(plans[p]["frames"].get<int>(), 64);
        EXPECT_EQ(plans[p]["targets"]["joint_positions"].size(), 4u);
        zombie = zombie || plans[p]["style"] == "csv_zombie";
        if (p > 1 && plans[p - 1]["style"] != "idle") {
            EXPECT_EQ(plans[p]["first_frame"].get<int>() - plans[p - 1]["first_frame"].get<int>(), 16);
        }
    }
    EXPECT_TRUE(zombie);

    // continuity: at each seam the root's ground-plane step is the old plan's own next step,
    // so no seam step exceeds the largest step inside the plans
    double inside = 0, seam = 0;
    std::vector<bool> is_seam(300, false);
    for (const auto & p : plans) {
        if (p["first_frame"].get<int>() < 300) is_seam[p["first_frame"].get<size_t>()] = true;
    }
    for (int f = 1; f < 300; ++f) {
        double step = 0;
        for (int c = 0; c < 2; ++c) step = std::max(step, std::fabs(d["qpos"][f][c].get<double>() - d["qpos"][f - 1][c].get<double>()));
        (is_seam[f] ? seam : inside) = std::max(is_seam[f] ? seam : inside, step);
        for (int c = 0; c < 36; ++c) ASSERT_TRUE(std::isfinite(d["qpos"][f][c].get<double>()));
    }
    EXPECT_LE(seam, inside + 1e-5);
    std::printf("  300 frames, %zu plans; max root xy step: %.3g m at seams, %.3g m inside plans\n", plans.size(), seam,
                inside);

    // the CSV form: the same qpos
    const std::string csv = e.dir + "/motion.csv";
    ASSERT_EQ(run(plan_cmd(e, script, csv, " --format csv"), e.dir + "/plan.log"), 0) << slurp(e.dir + "/plan.log");
    std::ifstream in(csv);
    std::string   line;
    int           rows = 0;
    while (std::getline(in, line)) {
        int commas = 0;
        for (char ch : line) commas += ch == ',';
        EXPECT_EQ(commas, 35);
        if (rows == 123) {
            EXPECT_NEAR(std::stod(line), d["qpos"][123][0].get<double>(), 1e-5);
        }
        ++rows;
    }
    EXPECT_EQ(rows, 300);
}

TEST(cmd_plan, bad_input_exits_2) {
    REQUIRE_ENV();
    const std::string out = e.dir + "/bad.json";
    const std::string log = e.dir + "/bad.log";
    const std::vector<std::pair<std::string, std::string>> scripts = {
        {"not json", "[{"},
        {"number beyond double", R"([{"frames": 10, "style": "walk", "speed": 2e804}])"},
        {"not an array", R"({"frames": 3})"},
        {"empty", "[]"},
        {"unknown style", R"([{"frames": 10, "style": "moonwalk"}])"},
        {"zero frames", R"([{"frames": 0, "style": "walk"}])"},
        {"fractional frames", R"([{"frames": 1.5, "style": "walk"}])"},
        {"missing style", R"([{"frames": 10}])"},
        {"bad movement", R"([{"frames": 10, "style": "walk", "movement": [1]}])"},
        {"zero facing", R"([{"frames": 10, "style": "walk", "facing": [0, 0]}])"},
        {"string speed", R"([{"frames": 10, "style": "walk", "speed": "fast"}])"},
        {"unknown field", R"([{"frames": 10, "style": "walk", "jump": true}])"},
        {"negative seed", R"([{"frames": 10, "style": "walk", "seed": -1}])"},
        {"heading without target", R"([{"frames": 10, "style": "walk", "target_heading": 1}])"},
        {"bad target", R"([{"frames": 10, "style": "walk", "target": [1, null]}])"},
    };
    for (const auto & [what, text] : scripts) {
        const std::string script = e.dir + "/bad-script.json";
        std::ofstream(script) << text;
        EXPECT_EQ(run(plan_cmd(e, script, out), log), 2) << what << ": " << slurp(log);
        EXPECT_NE(slurp(log).find("motionbricks plan:"), std::string::npos) << what;
        EXPECT_FALSE(fs::exists(out)) << what;
    }
    const std::string script = e.dir + "/ok-script.json";
    std::ofstream(script) << R"([{"frames": 20, "style": "walk"}])";
    // a broken style file
    const std::string broken = e.dir + "/broken.mbstyle";
    std::ofstream(broken) << "GGUF but not really";
    EXPECT_EQ(run(std::string(MB_CLI_PATH) + " plan --model " + quote(e.dir + "/bundle") + " --style " + quote(broken) +
                      " --script " + quote(script) + " --output " + quote(out), log), 2);
    // the same style twice
    const std::string walk = e.dir + "/styles/walk.mbstyle";
    EXPECT_EQ(run(std::string(MB_CLI_PATH) + " plan --model " + quote(e.dir + "/bundle") + " --style " + quote(walk) +
                      " --style " + quote(walk) + " --script " + quote(script) + " --output " + quote(out), log), 2);
    // usage
    EXPECT_EQ(run(std::string(MB_CLI_PATH) + " plan --model " + quote(e.dir + "/bundle"), log), 2);
    EXPECT_EQ(run(plan_cmd(e, script, out, " --format xml"), log), 2);
    // a bundle whose files are there but do not fit together is bad input: root.gguf is a pose
    // component, or pose.gguf is cut short
    for (const char * what : {"swapped", "truncated"}) {
        const std::string bad = e.dir + "/bundle-" + what;
        fs::remove_all(bad);
        fs::copy(e.dir + "/bundle", bad);
        if (std::string(what) == "swapped") {
            fs::copy_file(bad + "/pose.gguf", bad + "/root.gguf", fs::copy_options::overwrite_existing);
        } else {
            fs::resize_file(bad + "/pose.gguf", fs::file_size(bad + "/pose.gguf") / 2);
        }
        EXPECT_EQ(run(std::string(MB_CLI_PATH) + " plan --model " + quote(bad) + " --style " + quote(walk) +
                          " --script " + quote(script) + " --output " + quote(out), log), 2) << what;
        EXPECT_NE(slurp(log).find("cannot load model"), std::string::npos) << what << ": " << slurp(log);
    }
    // a missing bundle is a runtime failure
    EXPECT_EQ(run(std::string(MB_CLI_PATH) + " plan --model " + quote(e.dir + "/nope") + " --style " + quote(walk) +
                      " --script " + quote(script) + " --output " + quote(out), log), 1);
    EXPECT_FALSE(fs::exists(out));
}

// the output is streamed (issue 19): peak memory does not grow with the frame count. Building the
// document in memory cost about 26 KB per frame (6000 frames: ~170 MB; measured 519 MB at 20000)
TEST(cmd_plan, memory_is_flat_in_the_frame_count) {
    REQUIRE_ENV();
    long rss[2] = {0, 0};
    const int frames[2] = {1000, 6000};
    for (int i = 0; i < 2; ++i) {
        const std::string script = e.dir + "/long-" + std::to_string(frames[i]) + ".json";
        std::ofstream(script) << "[{\"frames\": " << frames[i] << ", \"style\": \"walk\", \"movement\": [0, 1]}]";
        rss[i] = peak_rss_kib(plan_cmd(e, script, e.dir + "/long.json"));
        ASSERT_GT(rss[i], 0) << "plan of " << frames[i] << " frames failed";
    }
    std::printf("  peak RSS: %ld KiB at %d frames, %ld KiB at %d frames\n", rss[0], frames[0], rss[1], frames[1]);
    EXPECT_LT(rss[1], 64 * 1024);                  // the CLI on the small bundle (measured ~21 MB)
    EXPECT_LT(rss[1] - rss[0], 16 * 1024);         // 5000 more frames: the old layout needed ~130 MB more
    std::ifstream f(e.dir + "/long.json");
    const json d = json::parse(f);
    EXPECT_EQ(d["frames"], frames[1]);
    EXPECT_EQ(d["qpos"].size(), size_t(frames[1]));
}

// a bundle whose root or VQ-decoder weights are NaN, Inf or a finite 1e38 (which overflows) never
// gives success: the load or the plan's own output check fails it, naming the problem, nothing written
TEST(cmd_plan, non_finite_weights_fail_and_write_nothing) {
    REQUIRE_ENV();
    const std::string script = e.dir + "/poison-script.json", out = e.dir + "/poison.json", log = e.dir + "/poison.log";
    std::ofstream(script) << R"([{"frames": 40, "style": "walk", "movement": [0, 1]}])";
    for (const mb::test::poison_case & pc : mb::test::poison_cases()) {
        SCOPED_TRACE(std::string(pc.file) + " " + pc.label);
        const std::string bad = e.dir + "/bundle-poison";
        ASSERT_TRUE(mb::test::poison_bundle(e.dir + "/bundle", bad, pc.file, pc.tensor, pc.value));
        const int code = run(std::string(MB_CLI_PATH) + " plan --model " + quote(bad) + e.styles + " --script " +
                                 quote(script) + " --output " + quote(out) + " --threads 2", log);
        EXPECT_NE(code, 0) << slurp(log);
        EXPECT_NE(slurp(log).find("finite"), std::string::npos) << slurp(log);
        EXPECT_FALSE(fs::exists(out));
    }
}

// a failure names the input that caused it: a direction too large for a direction is the script's
TEST(cmd_plan, huge_direction_is_bad_script) {
    REQUIRE_ENV();
    const std::string script = e.dir + "/huge.json", out = e.dir + "/huge-out.json", log = e.dir + "/huge.log";
    std::ofstream(script) << R"([{"frames": 40, "style": "walk", "movement": [0, 1e38]}])";
    EXPECT_EQ(run(plan_cmd(e, script, out), log), 2) << slurp(log);
    EXPECT_NE(slurp(log).find("segment 0"), std::string::npos) << slurp(log);
    EXPECT_NE(slurp(log).find("movement"), std::string::npos) << slurp(log);
    EXPECT_FALSE(fs::exists(out));
}

// only the direction of a movement counts (issue 19): [0, 10] walks as far as [0, 1]
TEST(cmd_plan, movement_length_does_not_matter) {
    REQUIRE_ENV();
    std::vector<json> docs;
    for (const char * mv : {"[0, 1]", "[0, 10]"}) {
        const std::string script = e.dir + "/len.json", out = e.dir + "/len-out.json";
        std::ofstream(script) << "[{\"frames\": 30, \"style\": \"idle\"}, {\"frames\": 60, \"style\": \"walk\", "
                                 "\"movement\": " << mv << "}]";
        ASSERT_EQ(run(plan_cmd(e, script, out), e.dir + "/len.log"), 0) << slurp(e.dir + "/len.log");
        std::ifstream f(out);
        docs.push_back(json::parse(f));
    }
    EXPECT_EQ(docs[0]["root_translations"], docs[1]["root_translations"]);
}
