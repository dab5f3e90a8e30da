// motionbricks: command-line entry point; dispatches to one file per subcommand
#include "tools/cli/commands.h"

#include <cstdio>
#include <cstring>

namespace mb::cli {

// the ABI version of include/motionbricks/motionbricks.h
int cmd_abi(int argc, char **) {
    if (argc != 1) {
        std::fprintf(stderr, "usage: motionbricks abi\n");
        return 2;
    }
    std::printf("motionbricks ABI 1\n");
    return 0;
}

static const command k_commands[] = {
    {"abi", "abi", cmd_abi},
    {"inspect", "inspect [--json] BUNDLE_DIR", cmd_inspect},
    {"dump", "dump [--json] FILE.gguf", cmd_dump},
    {"infer", "infer --model DIR --request REQUEST.json --output RESULT.json [--threads N] [--device cpu|cuda|auto] [--precision f32|tf32|bf16] [--trace DIR]", cmd_infer},
    {"plan", "plan --model DIR --style FILE.mbstyle [--style ...] --script SCRIPT.json --output MOTION.json|.csv|.npz|.bvh|.glb [--format json|csv|bvh|glb] [--units m|cm] [--qpos-rate 30|50] [--quat-order wxyz|xyzw] [--qpos-header yes|no] [--threads N] [--device D] [--precision P]", cmd_plan},
    {"convert-motion", "convert-motion IN OUT [--format json|bvh|glb] [--units m|cm] [--qpos-rate 30|50] [--quat-order wxyz|xyzw] [--qpos-header yes|no]", cmd_convert_motion},
    {"serve", "serve [--model DIR] [--styles DIR] [--listen 127.0.0.1:8080] [--threads N] [--device D] [--precision P] [--web DIR] [--max-peers N] [--clips DIR] [--record FILE.mbreplay] | serve --replay FILE.mbreplay | serve --comparison REPORT.json", cmd_serve},
    {"serve-infer", "serve-infer --model DIR [--styles DIR] [--listen 127.0.0.1:8000] [--threads N] [--batch-window-ms 2] [--max-batch 16] [--max-queue 256] [--drain-seconds 30] (Open Inference Protocol v2)", cmd_serve_infer},
    {"bench", "bench --model DIR [--device D] [--precision P] [--threads N] [--tokens 6,10,16,0] [--batch 1,8] [--iterations 21]", cmd_bench},
    {"sonic-parity", "sonic-parity MODEL.gguf FIXTURE.mbsonic [--device D] [--threads N] [--report-all]", cmd_sonic_parity},
    {"parity", "parity FIXTURE.mbparity --model DIR --styles DIR --report REPORT.json [--device cpu|cuda] [--threads N] [--trace-dir DIR]", cmd_parity},
    {"compare-reports", "compare-reports LEFT.json RIGHT.json --output C.json [--hardware NAME] [--driver TEXT] [--left-traces DIR --right-traces DIR]", cmd_compare_reports},
    {"replay-info", "replay-info REPLAY_FILE", cmd_replay_info},
    {"download", "download [--dir models] [--revision REV] [--base-url URL]", cmd_download},
    {"export-sonic", "export-sonic --out DIR (SCRIPT.json --model DIR --style FILE ... | --qpos FILE.csv|.npz) [--mjcf FILE]", cmd_export_sonic},
    {"physics-run", "physics-run --scene SCENE.xml --trace TRACE.csv (SCRIPT.json --model DIR --style FILE ... | --qpos FILE) [--config FILE.mbphysics] [--kp-scale S]", cmd_physics_run},
    {"stream-zmq", "stream-zmq (SCRIPT.json --model DIR --style FILE ... | --qpos FILE) [--zmq tcp://127.0.0.1:5556] [--zmq-topic pose] [--pace 1]", cmd_stream_zmq},
};

} // namespace mb::cli

static void print_usage(FILE * f) {
    std::fprintf(f, "usage:\n");
    for (const auto & c : mb::cli::k_commands) std::fprintf(f, "  motionbricks %s\n", c.usage);
}

int main(int argc, char ** argv) {
    if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
        print_usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    for (const auto & c : mb::cli::k_commands) {
        if (!std::strcmp(argv[1], c.name)) return c.run(argc - 1, argv + 1);
    }
    std::fprintf(stderr, "motionbricks: unknown command '%s'\n", argv[1]);
    print_usage(stderr);
    return 2;
}
