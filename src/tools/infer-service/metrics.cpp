// Prometheus metrics of the service (see metrics.h)
#include "tools/infer-service/metrics.h"

#include <charconv>
#include <cstdio>
#include <fstream>

namespace mb::infer_service {

namespace {

// the shortest text that reads back as v
std::string num(double v) {
    char       buf[64];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    return std::string(buf, r.ptr);
}

void metric(std::string & out, const char * name, const char * type, const char * help) {
    out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

} // namespace

histogram::histogram(std::vector<double> b) : bounds_(std::move(b)), counts_(bounds_.size() + 1, 0) {}

void histogram::observe(double v) {
    std::lock_guard<std::mutex> lk(mu_);
    size_t i = 0;
    while (i < bounds_.size() && v > bounds_[i]) ++i;
    ++counts_[i];
    sum_ += v;
    ++count_;
}

void histogram::write(std::string & out, const std::string & name, const std::string & help) const {
    std::lock_guard<std::mutex> lk(mu_);
    out += "# HELP " + name + " " + help + "\n# TYPE " + name + " histogram\n";
    uint64_t cum = 0;
    for (size_t i = 0; i < bounds_.size(); ++i) {
        cum += counts_[i];
        out += name + "_bucket{le=\"" + num(bounds_[i]) + "\"} " + std::to_string(cum) + "\n";
    }
    cum += counts_.back();
    out += name + "_bucket{le=\"+Inf\"} " + std::to_string(cum) + "\n";
    out += name + "_sum " + num(sum_) + "\n" + name + "_count " + std::to_string(count_) + "\n";
}

mapped_bytes mapped_file_bytes(const std::string & suffix) {
    mapped_bytes  r;
    std::ifstream f("/proc/self/smaps");
    std::string   line;
    bool          in = false;
    while (std::getline(f, line)) {
        // a mapping's header line: "start-end perms offset dev inode [path]"; field lines: "Name:  value kB"
        const size_t colon = line.find(':');
        const bool   field = colon != std::string::npos && colon < line.find(' ') && line.find('-') > colon;
        if (!field) {
            in = line.size() >= suffix.size() && line.compare(line.size() - suffix.size(), suffix.size(), suffix) == 0;
            continue;
        }
        if (!in) continue;
        unsigned long long kb = 0;
        if (std::sscanf(line.c_str(), "Rss: %llu kB", &kb) == 1) r.rss += kb * 1024;
        else if (std::sscanf(line.c_str(), "Pss: %llu kB", &kb) == 1) r.pss += kb * 1024;
    }
    return r;
}

void service_metrics::count_request(const std::string & model, unsigned status) {
    std::lock_guard<std::mutex> lk(mu_);
    ++requests_[{model, status}];
}

std::string service_metrics::render(int64_t queued, size_t connections) const {
    std::string out;
    metric(out, "motionbricks_requests_total", "counter", "inference requests answered, by model and HTTP status code");
    {
        std::lock_guard<std::mutex> lk(mu_);
        for (const auto & [k, n] : requests_) {
            out += "motionbricks_requests_total{model=\"" + k.first + "\",code=\"" + std::to_string(k.second) + "\"} " +
                   std::to_string(n) + "\n";
        }
    }
    metric(out, "motionbricks_plans_total", "counter", "plans computed and answered");
    out += "motionbricks_plans_total " + std::to_string(plans.load()) + "\n";
    metric(out, "motionbricks_plan_failures_total", "counter", "plans that reached the model and failed");
    out += "motionbricks_plan_failures_total " + std::to_string(plan_failures.load()) + "\n";
    metric(out, "motionbricks_frames_total", "counter", "30 fps frames in the plans answered");
    out += "motionbricks_frames_total " + std::to_string(frames.load()) + "\n";
    queue_seconds.write(out, "motionbricks_queue_seconds", "time from acceptance to the start of the plan's batch");
    compute_seconds.write(out, "motionbricks_compute_seconds", "time of the batch that computed the plan");
    request_seconds.write(out, "motionbricks_request_seconds", "time from acceptance to the response, per plan");
    batch_size.write(out, "motionbricks_batch_size", "plans per model call");
    metric(out, "motionbricks_in_flight_requests", "gauge", "accepted requests not yet answered");
    out += "motionbricks_in_flight_requests " + std::to_string(in_flight.load()) + "\n";
    metric(out, "motionbricks_queued_requests", "gauge", "accepted requests waiting for a batch");
    out += "motionbricks_queued_requests " + std::to_string(queued) + "\n";
    metric(out, "motionbricks_http_connections", "gauge", "open HTTP connections");
    out += "motionbricks_http_connections " + std::to_string(connections) + "\n";
    metric(out, "motionbricks_model_load_seconds", "gauge", "time to load the bundle");
    out += "motionbricks_model_load_seconds " + num(load_seconds) + "\n";
    const mapped_bytes w = mapped_file_bytes(".gguf");
    metric(out, "motionbricks_weights_resident_bytes", "gauge", "resident bytes of the mapped GGUF weight files (Rss)");
    out += "motionbricks_weights_resident_bytes " + std::to_string(w.rss) + "\n";
    metric(out, "motionbricks_weights_proportional_bytes", "gauge", "this process's share of the mapped weight pages (Pss)");
    out += "motionbricks_weights_proportional_bytes " + std::to_string(w.pss) + "\n";
    metric(out, "motionbricks_device_info", "gauge", "the device and precision the model computes on");
    out += "motionbricks_device_info{device=\"" + device + "\",precision=\"" + precision + "\"} 1\n";
    metric(out, "motionbricks_ready", "gauge", "1 when loaded, warmed up and not draining");
    out += std::string("motionbricks_ready ") + (ready.load() ? "1" : "0") + "\n";
    return out;
}

} // namespace mb::infer_service
