// server-side batching (see batcher.h)
#include "tools/infer-service/batcher.h"

#include <algorithm>

namespace mb::infer_service {

namespace {

using clock_t_ = std::chrono::steady_clock;

double seconds(clock_t_::duration d) { return std::chrono::duration<double>(d).count(); }

} // namespace

unsigned status_of(mb_status s) {
    switch (s) {
    case MB_INVALID_ARGUMENT: return 400;
    case MB_OUT_OF_MEMORY: return 503;
    default: return 500;
    }
}

batcher::batcher(const motionbricks::model & m, batch_options o, service_metrics & metrics)
    : model_(m), opt_(o), metrics_(metrics) {
    opt_.max_batch = std::clamp<size_t>(opt_.max_batch, 1, 64);
    worker_ = std::thread([this] { run(); });
}

batcher::~batcher() { stop(); }

bool batcher::submit(job & j) {
    {
        std::lock_guard<std::mutex> lk(mu_);
        if (stopping_ || queue_.size() >= opt_.max_queue) return false;
        queue_.push_back(std::move(j));
    }
    cv_.notify_one();
    return true;
}

size_t batcher::queued() const {
    std::lock_guard<std::mutex> lk(mu_);
    return queue_.size();
}

void batcher::stop() {
    {
        std::lock_guard<std::mutex> lk(mu_);
        stopping_ = true;
    }
    cv_.notify_all();
    if (worker_.joinable()) worker_.join();
}

void batcher::run() {
    for (;;) {
        std::vector<job> batch;
        {
            std::unique_lock<std::mutex> lk(mu_);
            cv_.wait(lk, [&] { return stopping_ || !queue_.empty(); });
            if (queue_.empty()) return;   // stopping, nothing left
            const bool agent    = queue_.front().agent != nullptr;
            const auto same     = [&] {
                size_t n = 0;
                for (const job & j : queue_) n += (j.agent != nullptr) == agent;
                return n;
            };
            // the window runs from the first plan's acceptance; a stop computes at once
            const auto deadline = queue_.front().accepted + opt_.window;
            cv_.wait_until(lk, deadline, [&] { return stopping_ || same() >= opt_.max_batch; });
            for (auto it = queue_.begin(); it != queue_.end() && batch.size() < opt_.max_batch;) {
                if ((it->agent != nullptr) == agent) {
                    batch.push_back(std::move(*it));
                    it = queue_.erase(it);
                } else {
                    ++it;
                }
            }
        }
        if (batch.front().agent) {
            compute_agent(batch);
        } else {
            compute_infer(batch);
        }
    }
}

void batcher::compute_infer(std::vector<job> & batch) {
    const auto start = clock_t_::now();
    std::vector<const mb_inference_request *> reqs;
    for (const job & j : batch) reqs.push_back(j.infer->request.get());
    std::vector<mb_motion *> out(batch.size(), nullptr);
    char                     msg[512] = "";
    mb_status st = mb_model_infer_batch(model_.get(), reqs.data(), reqs.size(), out.data(), msg, sizeof msg);
    std::vector<job_result> results(batch.size());
    if (st == MB_OK) {
        metrics_.batch_size.observe(double(batch.size()));
        for (size_t i = 0; i < batch.size(); ++i) results[i].plan.emplace(out[i]);
    } else {
        // one at a time: each request gets its own error, the others their plans
        for (size_t i = 0; i < batch.size(); ++i) {
            metrics_.batch_size.observe(1.0);
            mb_motion * m = nullptr;
            st = mb_model_infer(model_.get(), reqs[i], &m, msg, sizeof msg);
            if (st == MB_OK) {
                results[i].plan.emplace(m);
            } else {
                results[i].status = status_of(st);
                results[i].error  = msg;
            }
        }
    }
    const auto end = clock_t_::now();
    for (size_t i = 0; i < batch.size(); ++i) {
        metrics_.queue_seconds.observe(seconds(start - batch[i].accepted));
        metrics_.compute_seconds.observe(seconds(end - start));
        if (results[i].status != 200 && results[i].status != 400) ++metrics_.plan_failures;
        batch[i].done(std::move(results[i]));
    }
}

void batcher::compute_agent(std::vector<job> & batch) {
    const auto start = clock_t_::now();
    std::vector<job_result>          results(batch.size());
    std::vector<std::unique_ptr<motionbricks::agent>> agents(batch.size());
    // the client's state: its context, or the style's clip
    for (size_t i = 0; i < batch.size(); ++i) {
        const agent_job_input & in = *batch[i].agent;
        try {
            auto a = std::make_unique<motionbricks::agent>(model_);
            if (in.context_roots.empty()) {
                a->reset(in.style);
            } else {
                a->set_context(in.context_roots, in.context_xyzw);
            }
            agents[i] = std::move(a);
        } catch (const motionbricks::error & e) {
            results[i].status = status_of(e.status());
            results[i].error  = std::string("context: ") + e.what();
        }
    }
    std::vector<mb_agent *>         ready;
    std::vector<const mb_command *> commands;
    std::vector<size_t>             index;
    for (size_t i = 0; i < batch.size(); ++i) {
        if (!agents[i]) continue;
        ready.push_back(agents[i]->get());
        commands.push_back(batch[i].agent->command.get());
        index.push_back(i);
    }
    if (!ready.empty()) {
        std::vector<mb_motion *> out(ready.size(), nullptr);
        char                     msg[512] = "";
        mb_status st = mb_agent_plan_batch(ready.data(), commands.data(), ready.size(), out.data(), msg, sizeof msg);
        if (st == MB_OK) {
            metrics_.batch_size.observe(double(ready.size()));
            for (size_t k = 0; k < ready.size(); ++k) results[index[k]].plan.emplace(out[k]);
        } else {
            for (size_t k = 0; k < ready.size(); ++k) {
                metrics_.batch_size.observe(1.0);
                mb_motion * m = nullptr;
                st = mb_agent_plan(ready[k], commands[k], &m, msg, sizeof msg);
                if (st == MB_OK) {
                    results[index[k]].plan.emplace(m);
                } else {
                    results[index[k]].status = status_of(st);
                    results[index[k]].error  = msg;
                }
            }
        }
        for (size_t k = 0; k < ready.size(); ++k) {
            job_result & r = results[index[k]];
            if (!r.plan) continue;
            try {
                r.history.emplace(agents[index[k]]->history());
            } catch (const motionbricks::error & e) {
                r.plan.reset();
                r.status = status_of(e.status());
                r.error  = e.what();
            }
        }
    }
    const auto end = clock_t_::now();
    for (size_t i = 0; i < batch.size(); ++i) {
        metrics_.queue_seconds.observe(seconds(start - batch[i].accepted));
        metrics_.compute_seconds.observe(seconds(end - start));
        if (results[i].status != 200 && results[i].status != 400) ++metrics_.plan_failures;
        batch[i].done(std::move(results[i]));
    }
}

} // namespace mb::infer_service
