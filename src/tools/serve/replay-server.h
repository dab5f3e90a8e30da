// `serve --replay FILE.mbreplay` and `serve --comparison REPORT.json`: the viewer's playback
// modes, with no model loaded. The file is validated once at start; the viewer fetches it from
// /api/replay or /api/comparison and /api/meta says which mode to run
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mb::serve {

struct playback_options {
    std::string              mode;          // "replay" or "comparison"
    std::string              path;          // the .mbreplay or report file
    std::string              listen;        // host:port (port 0: any free port)
    std::string              web_root;      // the viewer's files
    std::vector<std::string> allow_hosts;   // Host names answered besides loopback and the listen host
};

// reads and checks the file (a refused file: false and `why`, exit 2 for the caller), then serves
// until SIGINT/SIGTERM (blocked by the caller, waited for on the calling thread) arrives;
// `on_listening` gets the bound port
bool serve_playback(const playback_options & opt, std::string & why, void (*on_listening)(uint16_t port));

} // namespace mb::serve
