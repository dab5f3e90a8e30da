// what a real-time control loop does on Linux, for the paced benches: memory locked and pre-faulted
// (mlockall, a touched stack and heap, malloc kept from returning or mapping memory), every thread
// of the process under SCHED_FIFO, and per-tick probes that tell a slow tick's causes apart: the
// run-queue wait of the ticking thread (/proc/thread-self/schedstat: runnable, not running), the
// host's steal time (/proc/stat), page faults and involuntary context switches (getrusage)
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace mb::cli {

// what realtime_enter managed; a step that failed names its errno text and the rest still applies
struct realtime_state {
    bool        locked   = false;   // mlockall(MCL_CURRENT | MCL_FUTURE)
    int         fifo     = 0;       // threads moved to SCHED_FIFO
    int         threads  = 0;       // threads of the process
    int         priority = 0;       // their SCHED_FIFO priority
    std::string problems;           // "; "-separated failures
};

// locks and pre-faults memory, then puts every thread of the process at SCHED_FIFO `priority`
// (threads started later inherit it); needs root or CAP_IPC_LOCK / CAP_SYS_NICE
realtime_state realtime_enter(int priority);
// back to SCHED_OTHER and unlocked memory
void realtime_leave();
nlohmann::ordered_json realtime_json(const realtime_state & s);

// one reading of the probes
struct probe_sample {
    double run_ns = 0, wait_ns = 0;   // the calling thread's time on a CPU and runnable in the queue
    double steal_ticks = 0;           // /proc/stat steal of all CPUs (USER_HZ ticks, 10 ms)
    double cpu_steal_ticks = 0;       // of the CPU the calling thread runs on at the reading
    int    cpu             = -1;      // that CPU
    long   minflt = 0, majflt = 0;    // page faults of the process
    long   nivcsw = 0;                // its involuntary context switches
};
probe_sample probe_now();

} // namespace mb::cli
