// server-side batching: accepted plans wait in one bounded queue; one worker takes the first
// plan, waits up to the window for more of the same model (up to max_batch), and computes them
// in one call (mb_model_infer_batch / mb_agent_plan_batch). A batch that fails is computed again
// one plan at a time, so each plan gets its own answer, equal to that of the plan sent alone.
#pragma once

#include "tools/infer-service/metrics.h"
#include "tools/infer-service/model-io.h"

#include <motionbricks/motionbricks.hpp>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

namespace mb::infer_service {

struct job_result {
    unsigned                            status = 200;   // 200, or the HTTP status of the failure
    std::string                         error;
    std::optional<motionbricks::motion> plan;
    std::optional<motionbricks::motion> history;        // agent jobs: the agent's new history
};

struct job {
    std::unique_ptr<infer_job_input>  infer;   // exactly one of the two
    std::unique_ptr<agent_job_input>  agent;
    std::chrono::steady_clock::time_point accepted;
    std::function<void(job_result &&)> done;    // called once, on the worker thread
};

struct batch_options {
    std::chrono::microseconds window{2000};   // how long the first plan of a batch waits for others
    size_t                    max_batch = 16; // plans per model call (1..64)
    size_t                    max_queue = 256;// accepted plans waiting; beyond: 429
};

class batcher {
public:
    batcher(const motionbricks::model & m, batch_options o, service_metrics & metrics);
    ~batcher();

    // queues j; false (j untouched) when the queue is full or the batcher is stopping
    bool   submit(job & j);
    size_t queued() const;
    // computes what is queued, then joins the worker
    void   stop();

private:
    void run();
    void compute_infer(std::vector<job> & batch);
    void compute_agent(std::vector<job> & batch);

    const motionbricks::model & model_;
    batch_options               opt_;
    service_metrics &           metrics_;
    mutable std::mutex          mu_;
    std::condition_variable     cv_;
    std::deque<job>             queue_;
    bool                        stopping_ = false;
    std::thread                 worker_;
};

// the HTTP status of a C ABI failure
unsigned status_of(mb_status s);

} // namespace mb::infer_service
