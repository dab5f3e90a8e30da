// shared setup of the serve tests: a small random-weight bundle and the demo styles made
// once per process by tools/convert.py, and a server on a free loopback port
#pragma once

#include "tools/serve/server.h"

#include <memory>
#include <sys/types.h>
#include <string>
#include <vector>

namespace mb::test {

struct serve_assets {
    std::string dir, why;                   // why: the reason assets are missing (skip)
    std::string bundle, styles_dir, web;
    std::vector<std::string> styles;
};

// made on first use; `why` non-empty when python3/numpy or the converter is unavailable
const serve_assets & get_serve_assets();

// the planner over those assets (one per process; servers borrow it one at a time)
serve::planner & get_planner();

// a running server; stopped on destruction
struct test_server {
    explicit test_server(serve::server_options opt = {});
    ~test_server();
    uint16_t port() const { return srv->port(); }
    std::unique_ptr<serve::server> srv;
};

// the real `motionbricks serve` process (argv), stderr into `logfile`; `port` is 0 when it did not
// start. `nofile` > 0: its RLIMIT_NOFILE (soft and hard), as `ulimit -n` would set it
struct server_process {
    pid_t       pid  = -1;
    uint16_t    port = 0;
    std::string log;
    server_process(const std::vector<std::string> & args, const std::string & logfile, long nofile = 0);
    ~server_process();
};

// a process's user + system CPU time (s), and a /proc/PID/status field in MB ("VmRSS:")
double cpu_seconds(pid_t pid);
double status_mb(pid_t pid, const char * key);

} // namespace mb::test

#define MB_REQUIRE_SERVE_ASSETS()                                                         \
    do {                                                                                  \
        if (!mb::test::get_serve_assets().why.empty()) {                                  \
            GTEST_SKIP() << "skipped: " << mb::test::get_serve_assets().why;              \
        }                                                                                 \
    } while (0)
