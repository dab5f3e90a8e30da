#include "tools/cli/realtime.h"

#include <dirent.h>
#include <malloc.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace mb::cli {

namespace {

constexpr size_t k_stack_prefault = 512 * 1024;        // bytes of stack touched once
constexpr size_t k_heap_prefault  = 32 * 1024 * 1024;  // bytes of heap touched once, kept by malloc

void add_problem(realtime_state & s, const std::string & what, int error) {
    s.problems += (s.problems.empty() ? "" : "; ") + what + ": " + std::strerror(error);
}

// touches k_stack_prefault bytes below the caller's frame
__attribute__((noinline)) void prefault_stack() {
    volatile unsigned char page[k_stack_prefault];
    for (size_t i = 0; i < sizeof page; i += 4096) page[i] = 0;
}

// the thread ids of this process
std::vector<int> threads_of_process() {
    std::vector<int> ids;
    if (DIR * d = opendir("/proc/self/task")) {
        while (const dirent * e = readdir(d)) {
            if (e->d_name[0] != '.') ids.push_back(std::atoi(e->d_name));
        }
        closedir(d);
    }
    return ids;
}

// the numbers of the first line of `path` that starts with `prefix`
std::vector<double> numbers_of_line(const char * path, const char * prefix) {
    std::vector<double> v;
    std::FILE *         f = std::fopen(path, "r");
    if (!f) return v;
    char line[512];
    while (std::fgets(line, sizeof line, f)) {
        const size_t n = std::strlen(prefix);
        if (std::strncmp(line, prefix, n) != 0) continue;
        char * p = line + n;
        for (;;) {
            char *       end = nullptr;
            const double x   = std::strtod(p, &end);
            if (end == p) break;
            v.push_back(x);
            p = end;
        }
        break;
    }
    std::fclose(f);
    return v;
}

} // namespace

realtime_state realtime_enter(int priority) {
    realtime_state s;
    s.priority = priority;
    // freed memory stays with malloc and big blocks come from the (locked) heap, not fresh mappings
    mallopt(M_MMAP_MAX, 0);
    mallopt(M_TRIM_THRESHOLD, -1);
    if (mlockall(MCL_CURRENT | MCL_FUTURE) == 0) {
        s.locked = true;
    } else {
        add_problem(s, "mlockall", errno);
    }
    prefault_stack();
    if (void * heap = std::malloc(k_heap_prefault)) {
        std::memset(heap, 0, k_heap_prefault);
        std::free(heap);
    }
    sched_param p{};
    p.sched_priority = priority;
    for (const int tid : threads_of_process()) {
        ++s.threads;
        if (sched_setscheduler(tid, SCHED_FIFO, &p) == 0) {
            ++s.fifo;
        } else {
            const int e = errno;
            add_problem(s, "SCHED_FIFO for thread " + std::to_string(tid), e);
        }
    }
    return s;
}

void realtime_leave() {
    sched_param p{};
    for (const int tid : threads_of_process()) sched_setscheduler(tid, SCHED_OTHER, &p);
    munlockall();
    mallopt(M_MMAP_MAX, 65536);              // glibc's defaults
    mallopt(M_TRIM_THRESHOLD, 128 * 1024);
}

nlohmann::ordered_json realtime_json(const realtime_state & s) {
    return {{"mlockall", s.locked},   {"sched_fifo_threads", s.fifo}, {"threads", s.threads},
            {"priority", s.priority}, {"problems", s.problems}};
}

probe_sample probe_now() {
    probe_sample out;
    const std::vector<double> sched = numbers_of_line("/proc/thread-self/schedstat", "");
    if (sched.size() >= 2) {
        out.run_ns  = sched[0];
        out.wait_ns = sched[1];
    }
    // cpu  user nice system idle iowait irq softirq steal guest guest_nice
    const std::vector<double> cpu = numbers_of_line("/proc/stat", "cpu ");
    if (cpu.size() >= 8) out.steal_ticks = cpu[7];
    out.cpu                             = sched_getcpu();
    const std::string         mine      = "cpu" + std::to_string(out.cpu) + " ";
    const std::vector<double> this_cpu = numbers_of_line("/proc/stat", mine.c_str());
    if (this_cpu.size() >= 8) out.cpu_steal_ticks = this_cpu[7];
    rusage r{};
    if (getrusage(RUSAGE_SELF, &r) == 0) {
        out.minflt = r.ru_minflt;
        out.majflt = r.ru_majflt;
        out.nivcsw = r.ru_nivcsw;
    }
    return out;
}

} // namespace mb::cli
