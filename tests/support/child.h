// test-only: run a program or a function in a child process with a time limit, and read what it
// cost (peak RSS, CPU time) from wait4's rusage, so that memory and CPU bounds are measured, not guessed
#pragma once

#include <chrono>
#include <csignal>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

namespace mb::test {

struct child_result {
    int    exit_code = -1;      // -1 when killed or not exited normally
    bool   timed_out = false;   // killed at the time limit
    long   max_rss_kb = 0;      // peak resident set size of the child
    double cpu_s      = 0;      // user + system CPU time
};

// waits up to `timeout_s` for `pid`, then SIGKILLs it
inline child_result wait_child(pid_t pid, double timeout_s) {
    child_result r;
    const auto   end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    int          st  = 0;
    rusage       ru{};
    for (;;) {
        const pid_t w = ::wait4(pid, &st, WNOHANG, &ru);
        if (w == pid) break;
        if (std::chrono::steady_clock::now() >= end) {
            ::kill(pid, SIGKILL);
            ::wait4(pid, &st, 0, &ru);
            r.timed_out = true;
            break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    r.exit_code  = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    r.max_rss_kb = ru.ru_maxrss;
    r.cpu_s      = double(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) + 1e-6 * double(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
    return r;
}

// runs argv[0] with argv; stdout discarded, stderr into `err_path`
inline child_result run_program(const std::vector<std::string> & argv, double timeout_s, const std::string & err_path) {
    const pid_t pid = ::fork();
    if (pid == 0) {
        const int out = ::open("/dev/null", O_WRONLY);
        const int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (out >= 0) ::dup2(out, 1);
        if (err >= 0) ::dup2(err, 2);
        std::vector<char *> a;
        for (const std::string & s : argv) a.push_back(const_cast<char *>(s.c_str()));
        a.push_back(nullptr);
        ::execv(a[0], a.data());
        ::_exit(127);
    }
    return wait_child(pid, timeout_s);
}

// runs `f` in a forked child (exit code = its result); the child starts with this process's pages,
// so its peak RSS includes this process's at the fork
inline child_result run_function(const std::function<int()> & f, double timeout_s) {
    const pid_t pid = ::fork();
    if (pid == 0) ::_exit(f());
    return wait_child(pid, timeout_s);
}

} // namespace mb::test
