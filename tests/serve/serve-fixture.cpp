// shared setup of the serve tests
#include "serve-fixture.h"

#include "support/shell.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <csignal>
#include <cstring>
#include <sstream>
#include <sys/resource.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace mb::test {

namespace fs = std::filesystem;

namespace {

serve_assets make_assets() {
    serve_assets a;
    if (!fs::exists(MB_PYTHON)) {
        a.why = std::string(MB_PYTHON) + " not found";
        return a;
    }
    const std::string conv = std::string(MB_SOURCE_DIR) + "/tools/convert.py";
    a.dir                  = ::testing::TempDir() + "mb-serve-" + std::to_string(::getpid());
    fs::remove_all(a.dir);
    fs::create_directories(a.dir);
    const std::string log = a.dir + "/setup.log";
    if (run(std::string(MB_PYTHON) + " -c 'import numpy'", log, true) != 0) {
        a.why = std::string(MB_PYTHON) + " has no numpy";
        return a;
    }
    const std::string py = std::string(MB_PYTHON) + " " + quote(conv);
    a.bundle             = a.dir + "/bundle";
    a.styles_dir         = a.dir + "/styles";
    if (run(py + " random-bundle --preset small --seed 5 --quiet --out " + quote(a.bundle), log, true) != 0 ||
        run(py + " demo-styles --out " + quote(a.styles_dir), log, true) != 0) {
        a.why = "converter failed: " + slurp(log);
        return a;
    }
    for (const auto & e : fs::directory_iterator(a.styles_dir)) {
        if (e.path().extension() == ".mbstyle") a.styles.push_back(e.path().string());
    }
    std::sort(a.styles.begin(), a.styles.end());
    // a viewer directory with a symlink pointing out of it
    a.web = a.dir + "/web";
    fs::create_directories(a.web + "/vendor");
    std::ofstream(a.web + "/index.html") << "<!doctype html><title>viewer</title>\n";
    std::ofstream(a.web + "/app.js") << "console.log('viewer');\n";
    std::ofstream(a.web + "/vendor/three.module.js") << "export const REVISION = 'test';\n";
    std::ofstream(a.dir + "/secret.txt") << "outside the web root\n";
    std::ofstream(a.web + "/.hidden") << "dot file\n";
    fs::create_symlink(a.dir + "/secret.txt", a.web + "/escape.txt");
    return a;
}

} // namespace

const serve_assets & get_serve_assets() {
    static const serve_assets a = make_assets();
    return a;
}

serve::planner & get_planner() {
    static std::unique_ptr<serve::planner> p;
    if (!p) p = std::make_unique<serve::planner>(get_serve_assets().bundle, get_serve_assets().styles, 1);
    return *p;
}

test_server::test_server(serve::server_options opt) {
    opt.listen     = "127.0.0.1:0";
    if (opt.web_root.empty()) opt.web_root = get_serve_assets().web;
    opt.io_threads = 2;
    srv            = std::make_unique<serve::server>(opt, get_planner());
    srv->start();
}

test_server::~test_server() {
    srv->stop();
    srv.reset();
}

// utime + stime in seconds
double cpu_seconds(pid_t pid) {
    std::string s = slurp("/proc/" + std::to_string(pid) + "/stat");
    const size_t rp = s.rfind(')');
    if (rp == std::string::npos) return 0;
    std::istringstream in(s.substr(rp + 2));
    std::string        f;
    std::vector<std::string> v;
    while (in >> f) v.push_back(f);
    if (v.size() < 13) return 0;
    return double(std::stoull(v[11]) + std::stoull(v[12])) / double(sysconf(_SC_CLK_TCK));
}

double status_mb(pid_t pid, const char * key) {
    std::istringstream in(slurp("/proc/" + std::to_string(pid) + "/status"));
    std::string        line;
    while (std::getline(in, line)) {
        if (line.rfind(key, 0) == 0) return std::stod(line.substr(std::strlen(key) + 1)) / 1024.0;
    }
    return 0;
}

server_process::server_process(const std::vector<std::string> & args, const std::string & logfile, long nofile) : log(logfile) {
    pid = fork();
    if (pid == 0) {
        if (nofile > 0) {
            const rlimit rl{rlim_t(nofile), rlim_t(nofile)};
            ::setrlimit(RLIMIT_NOFILE, &rl);
        }
        FILE * f = std::freopen(logfile.c_str(), "w", stderr);
        (void) f;
        std::vector<char *> argv;
        for (const auto & a : args) argv.push_back(const_cast<char *>(a.c_str()));
        argv.push_back(nullptr);
        execv(argv[0], argv.data());
        _exit(127);
    }
    for (int i = 0; i < 1200 && port == 0; ++i) {   // model loading may take a while on a busy machine
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        const std::string s = slurp(logfile);
        const size_t      p = s.find("listening on http://127.0.0.1:");
        if (p != std::string::npos) port = uint16_t(std::stoi(s.substr(p + 30)));
        int st = 0;
        if (waitpid(pid, &st, WNOHANG) == pid) {
            pid = -1;
            break;
        }
    }
}

server_process::~server_process() {
    if (pid > 0) {
        kill(pid, SIGTERM);
        int st = 0;
        for (int i = 0; i < 100 && waitpid(pid, &st, WNOHANG) == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
        if (waitpid(pid, &st, WNOHANG) == 0) {
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
        }
    }
}

} // namespace mb::test
