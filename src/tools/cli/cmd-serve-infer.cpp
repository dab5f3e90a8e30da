// motionbricks serve-infer: the stateless inference service on the Open Inference Protocol v2
// (src/tools/infer-service/, docs/DEPLOY.md). Loads the bundle, runs one warm-up plan, then
// answers; SIGTERM or SIGINT drains (no new requests, the accepted ones answered within
// --drain-seconds) and exits 0. Exit codes: 0 after a drain, 1 runtime failure (bundle missing,
// port in use), 2 bad usage or a malformed bundle.
#include "tools/cli/commands.h"
#include "tools/cli/load-model.h"
#include "tools/infer-service/model-io.h"
#include "tools/infer-service/service.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <map>
#include <pthread.h>
#include <string>

namespace mb::cli {

namespace {

namespace fs = std::filesystem;
namespace is = mb::infer_service;

int usage() {
    std::fprintf(stderr,
                 "usage: motionbricks serve-infer --model DIR [--styles DIR] [--listen 127.0.0.1:8000] %s\n"
                 "         [--io-threads 2] [--batch-window-ms 2] [--max-batch 16] [--max-queue 256]\n"
                 "         [--max-connections 256] [--max-body-bytes 4194304] [--max-elements 1048576]\n"
                 "         [--drain-seconds 30] [--allow-origin ORIGIN]\n",
                 tools::k_model_options_usage);
    return 2;
}

template <class T> bool parse_num(const std::string & v, T lo, T hi, T & out) {
    const auto r = std::from_chars(v.data(), v.data() + v.size(), out);
    return r.ec == std::errc() && r.ptr == v.data() + v.size() && out >= lo && out <= hi;
}

} // namespace

int cmd_serve_infer(int argc, char ** argv) {
    std::string          model_dir, styles_dir;
    tools::model_options mopt;
    is::service_options  opt;
    opt.http.listen    = "127.0.0.1:8000";
    double window_ms   = 2.0;
    int    drain_s     = 30;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (i + 1 >= argc) {
            std::fprintf(stderr, "motionbricks serve-infer: '%s' needs a value\n", a.c_str());
            return usage();
        }
        const std::string v  = argv[++i];
        bool              ok = true;
        size_t            n  = 0;
        if (const int r = tools::parse_model_option("serve-infer", a, v, mopt); r != 0) {
            if (r < 0) return 2;
        } else if (a == "--model") {
            model_dir = v;
        } else if (a == "--styles") {
            styles_dir = v;
        } else if (a == "--listen") {
            opt.http.listen = v;
        } else if (a == "--allow-origin") {
            opt.allow_origins.push_back(v);
        } else if (a == "--io-threads") {
            ok = parse_num(v, 1, 64, opt.http.io_threads);
        } else if (a == "--batch-window-ms") {
            ok = parse_num(v, 0.0, 1000.0, window_ms);
        } else if (a == "--max-batch") {
            ok = parse_num<size_t>(v, 1, 64, opt.batch.max_batch);
        } else if (a == "--max-queue") {
            ok = parse_num<size_t>(v, 1, 1 << 20, opt.batch.max_queue);
        } else if (a == "--max-connections") {
            ok = parse_num<size_t>(v, 1, 1 << 20, opt.http.max_connections);
        } else if (a == "--max-body-bytes") {
            ok = parse_num<size_t>(v, 1024, size_t(1) << 30, opt.codec.max_body_bytes);
        } else if (a == "--max-elements") {
            ok = parse_num<size_t>(v, 1, size_t(1) << 28, n);
            opt.codec.max_elements = n;
        } else if (a == "--drain-seconds") {
            ok = parse_num(v, 0, 3600, drain_s);
        } else {
            std::fprintf(stderr, "motionbricks serve-infer: unknown option '%s'\n", a.c_str());
            return usage();
        }
        if (!ok) {
            std::fprintf(stderr, "motionbricks serve-infer: bad value '%s' for %s\n", v.c_str(), a.c_str());
            return usage();
        }
    }
    if (model_dir.empty()) return usage();
    opt.batch.window = std::chrono::microseconds(int64_t(window_ms * 1000.0));

    // signals go to sigwait below, not to the threads started next
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);

    is::service_metrics metrics;
    const auto          t0        = std::chrono::steady_clock::now();
    int                 load_exit = 0;
    std::optional<motionbricks::model> model = load_model("serve-infer", model_dir, mopt, load_exit);
    if (!model) return load_exit;
    metrics.load_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    metrics.device       = tools::device_name(model->device());
    metrics.precision    = tools::precision_name(model->precision());

    std::map<std::string, motionbricks::style> styles;
    if (!styles_dir.empty()) {
        std::error_code          ec;
        std::vector<std::string> files;
        for (const auto & e : fs::directory_iterator(styles_dir, ec)) {
            if (e.is_regular_file() && e.path().extension() == ".mbstyle") files.push_back(e.path().string());
        }
        std::sort(files.begin(), files.end());
        if (ec || files.empty()) {
            std::fprintf(stderr, "motionbricks serve-infer: no .mbstyle files in '%s'\n", styles_dir.c_str());
            return 1;
        }
        try {
            for (const std::string & f : files) {
                motionbricks::style s = motionbricks::style::load(*model, f);
                const std::string   name = s.name();
                styles.emplace(name, std::move(s));
            }
        } catch (const motionbricks::error & e) {
            std::fprintf(stderr, "motionbricks serve-infer: %s\n", e.what());
            return 2;
        }
    }

    is::service svc(opt, *model, styles, metrics);
    try {
        svc.start();
    } catch (const std::exception & e) {
        std::fprintf(stderr, "motionbricks serve-infer: %s\n", e.what());
        return 1;
    }
    const std::string host = opt.http.listen.substr(0, opt.http.listen.rfind(':'));
    std::fprintf(stderr, "serve-infer: listening on http://%s:%u, model %s on %s, loaded in %.3f s%s\n",
                 host.c_str(), unsigned(svc.port()), model_dir.c_str(), metrics.device.c_str(), metrics.load_seconds,
                 styles.empty() ? "" : (", agent model with " + std::to_string(styles.size()) + " styles").c_str());
    // ready only after one plan has run (first-touch of the weights and the working memory)
    try {
        (void) motionbricks::infer(*model, is::warmup_request());
    } catch (const motionbricks::error & e) {
        std::fprintf(stderr, "motionbricks serve-infer: the warm-up plan failed: %s\n", e.what());
        return 1;
    }
    svc.set_ready();
    std::fprintf(stderr, "serve-infer: ready\n");

    int sig = 0;
    sigwait(&set, &sig);
    std::fprintf(stderr, "serve-infer: %s: draining (at most %d s)\n", sig == SIGTERM ? "SIGTERM" : "SIGINT", drain_s);
    const int64_t left = svc.drain(std::chrono::seconds(drain_s));
    std::fprintf(stderr, "serve-infer: drained: %llu accepted, %llu answered, %lld unanswered, %llu refused while draining\n",
                 (unsigned long long) svc.accepted(), (unsigned long long) svc.answered(), (long long) left,
                 (unsigned long long) svc.refused_draining());
    return left == 0 ? 0 : 1;
}

} // namespace mb::cli
