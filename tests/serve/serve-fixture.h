// shared setup of the serve tests: a small random-weight bundle and the demo styles made
// once per process by tools/convert.py, and a server on a free loopback port
#pragma once

#include "tools/serve/server.h"

#include <memory>
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

} // namespace mb::test

#define MB_REQUIRE_SERVE_ASSETS()                                                         \
    do {                                                                                  \
        if (!mb::test::get_serve_assets().why.empty()) {                                  \
            GTEST_SKIP() << "skipped: " << mb::test::get_serve_assets().why;              \
        }                                                                                 \
    } while (0)
