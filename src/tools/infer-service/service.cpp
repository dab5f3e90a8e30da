// the v2 endpoints (see service.h)
#include "tools/infer-service/service.h"

#include "tools/infer-service/model-io.h"
#include "tools/infer-service/v2-codec.h"

#include <nlohmann/json.hpp>

#include <thread>

namespace mb::infer_service {

namespace {

using json = nlohmann::json;

http_answer json_answer(unsigned status, std::string body) { return {status, "application/json", std::move(body), {}}; }

http_answer error_answer(unsigned status, const std::string & why) { return json_answer(status, error_body(why)); }

// "/v2/models/NAME[/versions/V][/TAIL]" → name, version ("" when absent), tail ("" when absent)
bool split_model_path(const std::string & path, std::string & name, std::string & version, std::string & tail) {
    const std::string prefix = "/v2/models/";
    if (path.rfind(prefix, 0) != 0) return false;
    std::vector<std::string> parts;
    size_t                   at = prefix.size();
    while (at <= path.size()) {
        const size_t slash = path.find('/', at);
        parts.push_back(path.substr(at, slash == std::string::npos ? std::string::npos : slash - at));
        if (slash == std::string::npos) break;
        at = slash + 1;
    }
    if (parts.empty() || parts[0].empty()) return false;
    name = parts[0];
    size_t i = 1;
    if (parts.size() >= 3 && parts[1] == "versions") {
        version = parts[2];
        i       = 3;
    }
    if (parts.size() > i + 1) return false;
    tail = parts.size() == i + 1 ? parts[i] : "";
    return true;
}

} // namespace

service::service(service_options o, const motionbricks::model & m, const std::map<std::string, motionbricks::style> & styles,
                 service_metrics & metrics)
    : opt_(std::move(o)), model_(m), styles_(styles), metrics_(metrics) {
    batcher_ = std::make_unique<batcher>(model_, opt_.batch, metrics_);
    opt_.http.max_body_bytes = opt_.codec.max_body_bytes;
    http_ = std::make_unique<http_server>(opt_.http, [this](http_request_view && r, http_reply reply) { handle(std::move(r), std::move(reply)); });
}

service::~service() {
    if (http_) http_->stop();
    if (batcher_) batcher_->stop();
}

void service::start() { http_->start(); }

uint16_t service::port() const { return http_->port(); }

void service::set_ready() { metrics_.ready = true; }

int64_t service::drain(std::chrono::milliseconds deadline) {
    draining_      = true;
    metrics_.ready = false;
    http_->set_closing();
    const auto end = std::chrono::steady_clock::now() + deadline;
    while ((accepted_.load() != answered_.load() || http_->active() > 0) && std::chrono::steady_clock::now() < end) {
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    const int64_t left = int64_t(accepted_.load() - answered_.load());
    http_->stop();
    batcher_->stop();
    return left;
}

void service::handle(http_request_view && req, http_reply reply) {
    // a browser page may not drive the service unless its Origin is allowed (other clients send none)
    if (const std::string * origin = req.header("origin")) {
        bool ok = false;
        for (const std::string & a : opt_.allow_origins) ok = ok || a == *origin;
        if (!ok) return reply(error_answer(403, "origin not allowed"));
    }
    const bool get = req.method == "GET" || req.method == "HEAD";
    const bool has_agent = !styles_.empty();
    const auto known = [&](const std::string & m) { return m == k_model_infer || (has_agent && m == k_model_agent); };

    if (req.path == "/metrics") {
        if (!get) return reply(error_answer(405, "method not allowed"));
        return reply({200, "text/plain; version=0.0.4; charset=utf-8", metrics_.render(int64_t(batcher_->queued()), http_->connections()), {}});
    }
    if (req.path == "/v2" || req.path == "/v2/") {
        if (!get) return reply(error_answer(405, "method not allowed"));
        const json j = {{"name", "motionbricks"}, {"version", std::to_string(mb_abi_version())}, {"extensions", {"binary_tensor_data"}}};
        return reply(json_answer(200, j.dump()));
    }
    if (req.path == "/v2/health/live") {
        if (!get) return reply(error_answer(405, "method not allowed"));
        return reply(json_answer(200, "{\"live\":true}"));
    }
    if (req.path == "/v2/health/ready") {
        if (!get) return reply(error_answer(405, "method not allowed"));
        // the protocol: 200 is true, a 4xx false
        return metrics_.ready ? reply(json_answer(200, "{\"ready\":true}")) : reply(json_answer(400, "{\"ready\":false}"));
    }
    std::string name, version, tail;
    if (!split_model_path(req.path, name, version, tail)) return reply(error_answer(404, "not found"));
    if (!known(name)) return reply(error_answer(404, "unknown model '" + name.substr(0, 64) + "'"));
    if (!version.empty() && version != k_model_version) {
        return reply(error_answer(404, "model '" + name + "' has no version '" + version.substr(0, 16) + "' (it has 1)"));
    }
    if (tail.empty()) {
        if (!get) return reply(error_answer(405, "method not allowed"));
        return reply(json_answer(200, model_metadata_json(name)));
    }
    if (tail == "ready") {
        if (!get) return reply(error_answer(405, "method not allowed"));
        const json j = {{"name", name}, {"ready", metrics_.ready.load()}};
        return reply(json_answer(metrics_.ready ? 200 : 400, j.dump()));
    }
    if (tail == "infer") {
        if (req.method != "POST") return reply(error_answer(405, "method not allowed: POST an inference request"));
        return handle_infer(name, std::move(req), std::move(reply));
    }
    return reply(error_answer(404, "not found"));
}

void service::handle_infer(const std::string & model, http_request_view && req, http_reply reply) {
    const auto refuse = [&](unsigned status, const std::string & why) {
        metrics_.count_request(model, status);
        reply(error_answer(status, why));
    };
    if (draining_) {
        ++refused_draining_;
        return refuse(503, "the server is shutting down");
    }
    if (!metrics_.ready) return refuse(503, "the model is not ready");
    job j;
    j.accepted = std::chrono::steady_clock::now();
    try {
        std::optional<uint64_t> header_length;
        if (const std::string * h = req.header("inference-header-content-length")) header_length = parse_header_length(*h);
        const infer_request r = parse_infer_request(req.body, header_length, opt_.codec);
        if (model == k_model_agent) {
            j.agent = std::make_unique<agent_job_input>(decode_agent(r, styles_));
        } else {
            j.infer = std::make_unique<infer_job_input>(decode_infer(r));
        }
        const std::string id = r.id;
        j.done = [this, model, id, reply, accepted = j.accepted, agent = j.agent.get(), infer = j.infer.get()](job_result && res) {
            // encoding runs on an io thread, not on the compute worker
            auto shared = std::make_shared<job_result>(std::move(res));
            const std::vector<requested_output> want = agent ? agent->outputs : infer->outputs;
            http_->post([this, model, id, reply, accepted, shared, want, is_agent = agent != nullptr] {
                http_answer a;
                if (shared->status != 200) {
                    a = error_answer(shared->status, shared->error);
                } else {
                    try {
                        const std::vector<tensor> outs = is_agent ? agent_outputs(*shared->plan, *shared->history, want)
                                                                  : infer_outputs(*shared->plan, want);
                        encoded_response e = encode_infer_response(model, k_model_version, id, outs);
                        a.body             = std::move(e.body);
                        if (e.header_length) {
                            a.content_type = "application/octet-stream";
                            a.headers.emplace_back("Inference-Header-Content-Length", std::to_string(*e.header_length));
                        }
                        ++metrics_.plans;
                        metrics_.frames += shared->plan->frame_count();
                    } catch (const std::exception & ex) {
                        a = error_answer(500, std::string("cannot encode the response: ") + ex.what());
                    }
                }
                metrics_.count_request(model, a.status);
                metrics_.request_seconds.observe(std::chrono::duration<double>(std::chrono::steady_clock::now() - accepted).count());
                --metrics_.in_flight;
                ++answered_;
                reply(std::move(a));
            });
        };
    } catch (const request_error & e) {
        return refuse(e.status, e.what());
    } catch (const motionbricks::error & e) {
        return refuse(status_of(e.status()), e.what());
    }
    // counted before the submit: the worker may answer before submit returns
    ++metrics_.in_flight;
    ++accepted_;
    if (!batcher_->submit(j)) {
        --metrics_.in_flight;
        --accepted_;
        return refuse(429, "too many requests: " + std::to_string(opt_.batch.max_queue) + " are queued");
    }
}

} // namespace mb::infer_service
