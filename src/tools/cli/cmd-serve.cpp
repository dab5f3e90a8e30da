// motionbricks serve: the viewer and the WebSocket animation protocol v1 on one port.
// Model fallback: --model, else models/g1-f32 (+ models/styles), else a cached demo: a
// full-size random-weight bundle and synthetic styles made once by tools/convert.py
// (untrained weights: the motion means nothing; the log and /api/meta say so)
#include "tools/cli/commands.h"
#include "tools/serve/clips.h"
#include "tools/serve/live-physics.h"
#include "tools/serve/replay-recorder.h"
#include "tools/serve/replay-server.h"
#include "tools/cli/serve-robot.h"
#include "tools/serve/server.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

namespace mb::cli {

namespace {

namespace fs = std::filesystem;

int usage() {
    std::fprintf(stderr, "usage: motionbricks serve [--model DIR] [--styles DIR] [--listen 127.0.0.1:8080] %s "
                         "[--web DIR] [--max-peers N] [--max-connections N] [--allow-host NAME ...] [--spectator-idle-seconds 60] [--clips DIR] [--record FILE.mbreplay] %s\n"
                         "       [--sonic FILE.gguf] [--physics-scene scene_43dof.xml] [--physics-config FILE.mbphysics]\n"
                         "       motionbricks serve --replay FILE.mbreplay | --comparison REPORT.json [--listen ...] [--web DIR] [--allow-host NAME ...]\n",
                 tools::k_model_options_usage, serve_robot_usage());
    return 2;
}

bool parse_int(const std::string & v, int lo, int hi, int & out) {
    const auto r = std::from_chars(v.data(), v.data() + v.size(), out);
    return r.ec == std::errc() && r.ptr == v.data() + v.size() && out >= lo && out <= hi;
}

std::vector<std::string> style_files(const std::string & dir) {
    std::vector<std::string> out;
    std::error_code          ec;
    for (const auto & e : fs::directory_iterator(dir, ec)) {
        if (e.is_regular_file() && e.path().extension() == ".mbstyle") out.push_back(e.path().string());
    }
    std::sort(out.begin(), out.end());
    return out;
}

// a directory relative to the working directory, else to the source tree
std::string find_dir(const std::string & rel, const char * marker) {
    for (const std::string & base : {std::string("."), std::string(MB_SOURCE_DIR)}) {
        const fs::path p = fs::path(base) / rel;
        if (fs::exists(p / marker)) return p.string();
    }
    return "";
}

int run_py(const std::string & args) {
    const std::string cmd = "/usr/bin/python3 '" + std::string(MB_SOURCE_DIR) + "/tools/convert.py' " + args;
    std::fprintf(stderr, "serve: running %s\n", cmd.c_str());
    return std::system(cmd.c_str());
}

// the G1 scene of the shared data directory, beside the working directory or the source tree
std::string default_scene() {
    for (const std::string & base : {std::string(".."), std::string(MB_SOURCE_DIR) + "/.."}) {
        const fs::path p = fs::path(base) / "shared/data/upstream/mjcf/scene_43dof.xml";
        if (fs::is_regular_file(p)) return p.string();
    }
    return "";
}

// live physics when this build has MuJoCo and the scene loads; asked for explicitly (--sonic,
// --physics-scene, --physics-config) it must load, else it is announced as unavailable
int open_physics(serve::live_physics_options o, bool explicit_ask, std::unique_ptr<serve::live_physics> & out) {
    if (o.scene.empty()) o.scene = default_scene();
    if (o.scene.empty()) {
        if (explicit_ask) {
            std::fprintf(stderr, "motionbricks serve: no physics scene: pass --physics-scene scene_43dof.xml\n");
            return 2;
        }
        std::fprintf(stderr, "serve: physics unavailable: no G1 scene (../shared/data/upstream/mjcf/scene_43dof.xml; --physics-scene)\n");
        return 0;
    }
    try {
        out = std::make_unique<serve::live_physics>(o);
    } catch (const std::exception & e) {
        if (explicit_ask) {
            std::fprintf(stderr, "motionbricks serve: physics: %s\n", e.what());
            return 2;
        }
        std::fprintf(stderr, "serve: physics unavailable: %s\n", e.what());
        return 0;
    }
    std::fprintf(stderr, "serve: physics available (MuJoCo %s, %s, %u collision shapes, %zu bytes of shapes)\n", out->version().c_str(),
                 out->control(), unsigned(out->shape_count()), out->shapes()->size());
    return 0;
}

} // namespace

namespace {

void print_listening(uint16_t port) {
    std::fprintf(stderr, "serve: listening on port %u (playback, no model)\n", unsigned(port));
    std::fflush(stderr);
}

// --replay / --comparison: the viewer's playback modes, no model (replay-server.h)
int serve_playback_mode(serve::playback_options po) {
    if (po.web_root.empty()) po.web_root = MB_SERVE_WEB_DIR;
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    std::string why;
    if (!serve::serve_playback(po, why, print_listening)) {
        std::fprintf(stderr, "motionbricks serve: %s\n", why.c_str());
        return 2;
    }
    std::fprintf(stderr, "serve: stopping\n");
    return 0;
}

} // namespace

int cmd_serve(int argc, char ** argv) {
    std::string         model_dir, styles_dir, web_dir, clips_dir, replay_path, comparison_path, record_path;
    serve::server_options opt;
    tools::model_options mopt;
    serve_robot_options robot;
    serve::live_physics_options physics_opt;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--help" || a == "-h") {
            usage();
            return 0;
        }
        if (i + 1 >= argc) {
            std::fprintf(stderr, "motionbricks serve: '%s' needs a value\n", a.c_str());
            return usage();
        }
        const std::string v = argv[++i];
        int               n = 0;
        if (const int r = tools::parse_model_option("serve", a, v, mopt); r != 0) {
            if (r < 0) return 2;
        } else if (a == "--model") {
            model_dir = v;
        } else if (a == "--styles") {
            styles_dir = v;
        } else if (a == "--listen") {
            std::string host;
            uint16_t    port = 0;
            if (!serve::parse_listen(v, host, port)) {
                std::fprintf(stderr, "motionbricks serve: --listen must be HOST:PORT\n");
                return 2;
            }
            opt.listen = v;
        } else if (a == "--web") {
            web_dir = v;
        } else if (a == "--clips") {
            clips_dir = v;
        } else if (a == "--replay") {
            replay_path = v;
        } else if (a == "--comparison") {
            comparison_path = v;
        } else if (a == "--record") {
            record_path = v;
        } else if (a == "--sonic") {
            physics_opt.sonic = v;
        } else if (a == "--physics-scene") {
            physics_opt.scene = v;
        } else if (a == "--physics-config") {
            physics_opt.config = v;
        } else if (a == "--max-peers") {
            if (!parse_int(v, 1, 4096, n)) {
                std::fprintf(stderr, "motionbricks serve: --max-peers must be an integer 1..4096\n");
                return 2;
            }
            opt.hub.max_peers = n;
        } else if (a == "--max-connections") {
            if (!parse_int(v, 1, 65536, n)) {
                std::fprintf(stderr, "motionbricks serve: --max-connections must be an integer 1..65536\n");
                return 2;
            }
            opt.max_connections = n;
        } else if (a == "--allow-host") {
            // a name the server is reached by besides loopback and the --listen host (DNS rebinding check)
            std::string h = v;
            for (char & c : h) c = char(std::tolower(static_cast<unsigned char>(c)));
            if (h.empty() || h.size() > 253 || h.find_first_of("/ @?#") != std::string::npos) {
                std::fprintf(stderr, "motionbricks serve: --allow-host must be a host name (IPv6 in brackets)\n");
                return 2;
            }
            opt.allow_hosts.push_back(h);
        } else if (a == "--spectator-idle-seconds") {
            if (!parse_int(v, 1, 86400, n)) {
                std::fprintf(stderr, "motionbricks serve: --spectator-idle-seconds must be an integer 1..86400\n");
                return 2;
            }
            opt.hub.spectator_idle_seconds = n;
        } else if (a == "--reclaim-seconds") {   // testing: the owner reclaim grace period
            if (!parse_int(v, 0, 3600, n)) {
                std::fprintf(stderr, "motionbricks serve: --reclaim-seconds must be an integer 0..3600\n");
                return 2;
            }
            opt.hub.reclaim_seconds = n;
        } else if (const int r = parse_serve_robot_option(a, v, robot); r != 0) {
            if (r < 0) return 2;
        } else {
            std::fprintf(stderr, "motionbricks serve: unknown option '%s'\n", a.c_str());
            return usage();
        }
    }

    if (!replay_path.empty() || !comparison_path.empty()) {
        if (!replay_path.empty() && !comparison_path.empty()) {
            std::fprintf(stderr, "motionbricks serve: --replay and --comparison exclude each other\n");
            return 2;
        }
        if (!model_dir.empty() || !styles_dir.empty() || !record_path.empty() || !clips_dir.empty() || !physics_opt.sonic.empty() ||
            !physics_opt.scene.empty() || !physics_opt.config.empty()) {
            std::fprintf(stderr, "motionbricks serve: --replay and --comparison load no model (drop --model/--styles/--record/--clips/--sonic/--physics-*)\n");
            return 2;
        }
        serve::playback_options po;
        po.mode        = replay_path.empty() ? "comparison" : "replay";
        po.path        = replay_path.empty() ? comparison_path : replay_path;
        po.listen      = opt.listen;
        po.web_root    = web_dir;
        po.allow_hosts = opt.allow_hosts;
        return serve_playback_mode(po);
    }

    // the model: explicit, published, or the cached demo
    bool demo_model = false, demo_styles = false;
    if (model_dir.empty()) {
        model_dir = find_dir("models/g1-f32", "pose.gguf");
        if (model_dir.empty()) {
            demo_model = true;
            model_dir  = std::string(MB_SOURCE_DIR) + "/build/demo/g1-random-full";
            if (!fs::exists(model_dir + "/manifest.json") &&
                run_py("random-bundle --preset full --seed 1 --out '" + model_dir + "'") != 0) {
                std::fprintf(stderr, "motionbricks serve: no model: run `motionbricks download` (or pass --model DIR)\n");
                return 1;
            }
        }
    }
    if (styles_dir.empty() && !demo_model) styles_dir = find_dir("models/styles", "walk.mbstyle");
    if (styles_dir.empty()) {
        demo_styles = true;
        styles_dir  = std::string(MB_SOURCE_DIR) + "/build/demo/styles";
        if (style_files(styles_dir).empty() && run_py("demo-styles --out '" + styles_dir + "'") != 0) {
            std::fprintf(stderr, "motionbricks serve: no styles: run `motionbricks download` (or pass --styles DIR)\n");
            return 1;
        }
    }
    const std::vector<std::string> styles = style_files(styles_dir);
    if (styles.empty()) {
        std::fprintf(stderr, "motionbricks serve: no .mbstyle files in '%s'\n", styles_dir.c_str());
        return 2;
    }
    opt.demo = demo_model || demo_styles;
    if (opt.demo) {
        std::fprintf(stderr,
                     "\n"
                     "  ************************************************************************\n"
                     "  *  DEMO MODE: %-57s*\n"
                     "  *  the motion is NOT meaningful. Get the published model with:         *\n"
                     "  *      motionbricks download                                           *\n"
                     "  ************************************************************************\n\n",
                     demo_model ? "random untrained weights and synthetic styles;"
                                : "synthetic styles (no models/styles found);");
    }

    if (web_dir.empty()) web_dir = MB_SERVE_WEB_DIR;
    if (!fs::is_directory(web_dir)) {
        std::fprintf(stderr, "serve: warning: viewer directory '%s' not found; serving the API only\n", web_dir.c_str());
        web_dir.clear();
    }
    opt.web_root = web_dir;

    // signals go to sigwait below, not to the worker threads started next
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);

    std::unique_ptr<serve::planner> pl;
    try {
        std::fprintf(stderr, "serve: loading %s with %zu styles from %s\n", model_dir.c_str(), styles.size(), styles_dir.c_str());
        pl = std::make_unique<serve::planner>(model_dir, styles, mopt);
    } catch (const std::exception & e) {
        std::fprintf(stderr, "motionbricks serve: cannot load the model: %s\n", e.what());
        return 1;
    }
    // Kimodo clips (--clips: every animation.glb below DIR; the owner may upload more) and the
    // history the viewer downloads
    serve::clip_library  clips;
    serve::frame_history history;
    if (!clips_dir.empty()) {
        try {
            std::fprintf(stderr, "serve: %zu clips from %s\n", clips.scan(clips_dir), clips_dir.c_str());
        } catch (const std::exception & e) {
            std::fprintf(stderr, "motionbricks serve: %s\n", e.what());
            return 2;
        }
    }
    opt.hub.clips   = &clips;
    opt.hub.history = &history;
    std::unique_ptr<serve::replay_recorder> recorder;
    if (!record_path.empty()) {
        recorder         = std::make_unique<serve::replay_recorder>(pl->skeleton());
        opt.hub.recorder = recorder.get();
    }
    std::unique_ptr<serve::robot_tap> tap;   // outlives the server, whose hub calls it
    try {
        tap = make_robot_tap(robot, opt.hub);
    } catch (const std::exception & e) {
        std::fprintf(stderr, "motionbricks serve: %s\n", e.what());
        return 2;
    }
    std::unique_ptr<serve::live_physics> physics;   // outlives the server, whose hub steps it
    const bool ask = !physics_opt.sonic.empty() || !physics_opt.scene.empty() || !physics_opt.config.empty();
    if (const int rc = open_physics(physics_opt, ask, physics); rc != 0) return rc;
    opt.hub.physics = physics.get();
    serve::server srv(opt, *pl);
    try {
        srv.start();
    } catch (const std::exception & e) {
        std::fprintf(stderr, "motionbricks serve: %s\n", e.what());
        return 1;
    }
    std::string host;
    uint16_t    port = 0;
    serve::parse_listen(opt.listen, host, port);
    if (host.find(':') != std::string::npos) host = "[" + host + "]";
    std::fprintf(stderr, "serve: listening on http://%s:%u/%s\n", host.c_str(), unsigned(srv.port()), opt.demo ? "  (DEMO MODE)" : "");
    std::fflush(stderr);
    int sig = 0;
    sigwait(&set, &sig);
    std::fprintf(stderr, "serve: stopping\n");
    srv.stop();
    if (recorder) {
        try {
            recorder->write(record_path);
            std::fprintf(stderr, "serve: recorded %llu frames to %s%s\n", (unsigned long long) recorder->frames(), record_path.c_str(),
                         recorder->dropped() ? " (frames past 1,000,000 were not kept)" : "");
        } catch (const std::exception & e) {
            std::fprintf(stderr, "motionbricks serve: --record: %s\n", e.what());
            return 1;
        }
    }
    return finish_robot_tap(robot, tap.get()) ? 0 : 1;
}

} // namespace mb::cli
