// motionbricks download: the published G1 F32 bundle and styles, verified (see
// src/tools/download/download.h for what is pinned and what MANIFEST.json vouches for)
#include "tools/cli/commands.h"
#include "tools/download/download.h"

#include <cstdio>
#include <string>

namespace mb::cli {

int cmd_download(int argc, char ** argv) {
    download::download_options o;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--quiet") {
            o.progress = false;
            continue;
        }
        if (i + 1 >= argc) {
            std::fprintf(stderr, "usage: motionbricks download [--dir models] [--revision REV] [--base-url URL] [--quiet]\n");
            return 2;
        }
        const std::string v = argv[++i];
        if (a == "--dir") {
            o.dir = v;
        } else if (a == "--revision") {
            if (v.empty() || v.size() > 64 || v.find_first_of("/?#% ") != std::string::npos) {
                std::fprintf(stderr, "motionbricks download: bad --revision\n");
                return 2;
            }
            o.revision = v;
        } else if (a == "--base-url") {
            o.base_url = v;
        } else {
            std::fprintf(stderr, "motionbricks download: unknown option '%s'\n", a.c_str());
            return 2;
        }
    }
    try {
        download::check_url_allowed(o.base_url + "/");
        download::download_release(o);
    } catch (const std::exception & e) {
        std::fprintf(stderr, "motionbricks download: error: %s\n", e.what());
        return 1;
    }
    return 0;
}

} // namespace mb::cli
