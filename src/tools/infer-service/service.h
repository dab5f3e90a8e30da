// motionbricks serve-infer: the Open Inference Protocol v2 (KServe v2 REST) endpoints over one
// loaded model, with server-side batching, Prometheus metrics, limits and a graceful drain.
//   GET  /v2                                  server metadata
//   GET  /v2/health/live, /v2/health/ready    200, or 503 (not ready: loading, warming up, draining)
//   GET  /v2/models/{m}[/versions/1]          model metadata;  GET .../ready  model readiness
//   POST /v2/models/{m}[/versions/1]/infer    inference (JSON or binary tensor data)
//   GET  /metrics                             Prometheus text
// {m} is "motionbricks" (stateless inference) or "motionbricks-agent" (agent plans; needs styles).
#pragma once

#include "tools/infer-service/batcher.h"
#include "tools/infer-service/http-server.h"
#include "tools/infer-service/metrics.h"

#include <motionbricks/motionbricks.hpp>

#include <chrono>
#include <map>
#include <memory>
#include <string>

namespace mb::infer_service {

struct service_options {
    http_options  http;
    batch_options batch;
    codec_limits  codec;
    std::vector<std::string> allow_origins;   // browser Origins answered (none by default)
};

class service {
public:
    // the model and styles are borrowed and must outlive the service
    service(service_options o, const motionbricks::model & m, const std::map<std::string, motionbricks::style> & styles,
            service_metrics & metrics);
    ~service();

    void     start();          // listens; not ready until set_ready
    uint16_t port() const;
    void     set_ready();      // after the warm-up plan
    // stops taking requests (503 from now on, readiness off), waits until every accepted request is
    // answered or `deadline` passes, then closes everything; returns the requests still unanswered
    int64_t  drain(std::chrono::milliseconds deadline);

    uint64_t accepted() const { return accepted_.load(); }
    uint64_t answered() const { return answered_.load(); }
    uint64_t refused_draining() const { return refused_draining_.load(); }

private:
    void handle(http_request_view && req, http_reply reply);
    void handle_infer(const std::string & model, http_request_view && req, http_reply reply);

    service_options                                    opt_;
    const motionbricks::model &                        model_;
    const std::map<std::string, motionbricks::style> & styles_;
    service_metrics &                                  metrics_;
    std::unique_ptr<batcher>                           batcher_;
    std::unique_ptr<http_server>                       http_;
    std::atomic<bool>                                  draining_{false};
    std::atomic<uint64_t>                              accepted_{0}, answered_{0}, refused_draining_{0};
};

} // namespace mb::infer_service
