// motionbricks serve: the listener, HTTP connections and their upgrade to the stream
// socket; io threads for the network, the hub's own loop thread, the planning worker
#pragma once

#include "tools/serve/hub.h"
#include "tools/serve/planner.h"
#include "tools/serve/ws-session.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace mb::serve {

constexpr int k_default_max_connections = 512;

struct server_options {
    std::string listen    = "127.0.0.1:8080";   // host:port (port 0 = any free port)
    std::string web_root;                       // viewer files ("" = none)
    int         io_threads = 2;
    bool        demo       = false;             // random weights / synthetic styles: tell the viewer
    int         max_connections = 0;            // HTTP connections at once (0: k_default_max_connections fitted to RLIMIT_NOFILE)
    std::vector<std::string> allow_hosts;       // Host names answered besides loopback and the listen host
    hub_options hub;
    session_limits limits;
};

// "host:port" → parts; false when malformed
bool parse_listen(const std::string & s, std::string & host, uint16_t & port);

// /api/meta: fps, joints (names, parents, rest positions), styles with speeds, demo flag
std::string make_meta_json(const std::vector<style_info> & styles, const std::vector<joint_info> & skeleton, bool demo);

class server {
public:
    server(server_options opt, planner & p);
    ~server();

    // binds and starts serving; throws std::runtime_error (bad address, port in use)
    void     start();
    uint16_t port() const;
    void     stop();
    hub &    get_hub();

private:
    struct impl;
    std::unique_ptr<impl> p_;
};

} // namespace mb::serve
