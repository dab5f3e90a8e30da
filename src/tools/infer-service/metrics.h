// the service's Prometheus metrics (text exposition format 0.0.4): requests by model and
// status code, plans and frames, latency histograms (queue, compute, whole request), batch
// sizes, in-flight requests, model load time, resident weight bytes and device
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace mb::infer_service {

class histogram {
public:
    explicit histogram(std::vector<double> upper_bounds);
    void observe(double v);
    // # TYPE and the _bucket/_sum/_count lines
    void write(std::string & out, const std::string & name, const std::string & help) const;

private:
    mutable std::mutex    mu_;
    std::vector<double>   bounds_;
    std::vector<uint64_t> counts_;   // per bucket (not cumulative); the last is +Inf
    double                sum_   = 0.0;
    uint64_t              count_ = 0;
};

// Rss and Pss of this process's mappings of files whose name ends with `suffix` (/proc/self/smaps)
struct mapped_bytes {
    uint64_t rss = 0;
    uint64_t pss = 0;
};
mapped_bytes mapped_file_bytes(const std::string & suffix);

struct service_metrics {
    histogram queue_seconds{{0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5}};
    histogram compute_seconds{{0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5}};
    histogram request_seconds{{0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10}};
    histogram batch_size{{1, 2, 4, 8, 16, 32, 64}};
    std::atomic<uint64_t> plans{0};          // plans answered
    std::atomic<uint64_t> plan_failures{0};  // plans that reached the model and failed
    std::atomic<uint64_t> frames{0};         // frames in the plans answered
    std::atomic<int64_t>  in_flight{0};      // accepted requests not yet answered
    double                load_seconds = 0;
    std::string           device, precision;
    std::atomic<bool>     ready{false};

    void count_request(const std::string & model, unsigned status);
    // the exposition text; queued and connections are read at the time of the scrape
    std::string render(int64_t queued, size_t connections) const;

private:
    mutable std::mutex                                   mu_;
    std::map<std::pair<std::string, unsigned>, uint64_t> requests_;
};

} // namespace mb::infer_service
