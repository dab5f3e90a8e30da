// the `motionbricks` CLI subcommands; each returns the process exit code
// (0 ok, 1 runtime failure, 2 bad usage or bad input)
#pragma once

namespace mb::cli {

struct command {
    const char * name;                         // subcommand word
    const char * usage;                        // one line, without the program name
    int (*run)(int argc, char ** argv);        // argv[0] is the subcommand word
};

int cmd_abi(int argc, char ** argv);
int cmd_inspect(int argc, char ** argv);
int cmd_dump(int argc, char ** argv);
int cmd_infer(int argc, char ** argv);
int cmd_plan(int argc, char ** argv);
int cmd_convert_motion(int argc, char ** argv);
int cmd_serve(int argc, char ** argv);
int cmd_serve_infer(int argc, char ** argv);
int cmd_download(int argc, char ** argv);
int cmd_parity(int argc, char ** argv);
int cmd_compare_reports(int argc, char ** argv);
int cmd_replay_info(int argc, char ** argv);
int cmd_export_sonic(int argc, char ** argv);
int cmd_stream_zmq(int argc, char ** argv);
int cmd_bench(int argc, char ** argv);
int cmd_sonic_parity(int argc, char ** argv);
int cmd_bench_sonic(int argc, char ** argv);    // `bench sonic`
int cmd_bench_physics(int argc, char ** argv);  // `bench physics`
int cmd_physics_run(int argc, char ** argv);

} // namespace mb::cli
