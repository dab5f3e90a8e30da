// whole-agent benchmark: ms per agent plan including everything (canonicalisation, springs,
// targets, predict, qpos conversion, un-canonicalisation, seam blend, world transforms),
// replanning every 16 frames as the upstream demo does.
//   MB_BENCH_BUNDLE=DIR  a model bundle (e.g. tools/convert.py random-bundle --preset full)
//   MB_BENCH_STYLES=DIR  .mbstyle files (e.g. tools/convert.py styles --clips ...); the
//                        benchmark walks with the style named "walk" (else the first)
// Without them every benchmark is skipped with a message.
#include "agent/agent.h"
#include "format/bundle.h"

#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace {

using namespace mb;

struct bench_setup {
    std::unique_ptr<motion_model> model;
    std::vector<style_asset>      styles;
    std::string                   why;
    int                           threads = 0;
};

bench_setup & setup(int threads) {
    static bench_setup s;
    if (s.model && s.threads == threads) return s;
    s = bench_setup();
    s.threads                 = threads;
    const char * bundle_dir   = std::getenv("MB_BENCH_BUNDLE");
    const char * styles_dir   = std::getenv("MB_BENCH_STYLES");
    if (!bundle_dir || !styles_dir) {
        s.why = "set MB_BENCH_BUNDLE and MB_BENCH_STYLES";
        return s;
    }
    try {
        for (const auto & e : std::filesystem::directory_iterator(styles_dir)) {
            if (e.path().extension() == ".mbstyle") s.styles.push_back(style_read(e.path().string()));
        }
        if (s.styles.empty()) throw std::runtime_error(std::string("no .mbstyle in ") + styles_dir);
        s.model = motion_model::create(bundle_load(bundle_dir), threads);
    } catch (const std::exception & e) {
        s.model.reset();
        s.why = e.what();
    }
    return s;
}

void agent_plan_bench(benchmark::State & state) {
    bench_setup & s = setup((int) state.range(0));
    if (!s.model) {
        state.SkipWithError(s.why.c_str());
        return;
    }
    const style_asset * walk = &s.styles[0];
    const style_asset * idle = &s.styles[0];
    for (const style_asset & st : s.styles) {
        if (st.name == "walk") walk = &st;
        if (st.name == "idle") idle = &st;
    }
    agent a(*s.model);
    a.reset(*idle);
    agent_command cmd;
    cmd.style       = walk;
    cmd.movement[2] = 1;   // forward
    int frames = 0;
    for (auto _ : state) {
        a.advance(k_agent_replan);
        const agent_plan p = a.plan(cmd);
        frames += p.frames;
        ++cmd.seed;
        benchmark::DoNotOptimize(p.qpos.data());
    }
    state.counters["frames_per_plan"] = benchmark::Counter(double(frames) / double(state.iterations()));
}

} // namespace

BENCHMARK(agent_plan_bench)->Arg(1)->Arg(2)->ArgNames({"thr"})->Unit(benchmark::kMillisecond)->MinTime(2.0)->Repetitions(5);

BENCHMARK_MAIN();
