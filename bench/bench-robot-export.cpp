// robot-export benchmark: the protocol v1 publisher's cost per 50 Hz frame (resample, IsaacLab
// order, encode, zmq_send on a loopback XPUB with one subscriber reading in a thread), and the
// rate the loopback link holds without loss when the publisher sends as fast as it can.
//   bench-robot-export --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include "tools/serve/sonic-stream.h"
#include "tools/serve/zmq-publisher.h"

#include <benchmark/benchmark.h>
#include <zmq.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <string>
#include <thread>
#include <vector>

namespace {

// a smooth 30 fps clip [frames, 36]
std::vector<float> clip(int frames) {
    std::vector<float> q(size_t(frames) * 36, 0.0f);
    for (int f = 0; f < frames; ++f) {
        float * r = &q[size_t(f) * 36];
        r[0]      = 0.01f * f;
        r[2]      = 0.79f;
        r[3]      = std::cos(0.005f * f);
        r[6]      = std::sin(0.005f * f);
        for (int k = 7; k < 36; ++k) r[k] = 0.3f * std::sin(0.1f * f + k);
    }
    return q;
}

// a SUB on `endpoint` counting messages until stop
struct subscriber {
    void *                ctx  = zmq_ctx_new();
    void *                sock = zmq_socket(ctx, ZMQ_SUB);
    std::atomic<uint64_t> got{0};
    std::atomic<bool>     stop{false};
    std::thread           t;
    explicit subscriber(const std::string & endpoint) {
        const int timeout = 50, hwm = 100000;
        zmq_setsockopt(sock, ZMQ_RCVTIMEO, &timeout, sizeof timeout);
        zmq_setsockopt(sock, ZMQ_RCVHWM, &hwm, sizeof hwm);
        zmq_setsockopt(sock, ZMQ_SUBSCRIBE, "pose", 4);
        zmq_connect(sock, endpoint.c_str());
        t = std::thread([this] {
            char buf[4096];
            while (!stop) {
                if (zmq_recv(sock, buf, sizeof buf, 0) > 0) ++got;
            }
        });
    }
    ~subscriber() {
        stop = true;
        t.join();
        zmq_close(sock);
        zmq_ctx_term(ctx);
    }
};

void publisher_frame(benchmark::State & state) {
    mb::serve::zmq_publisher_options o;
    o.endpoint = "tcp://127.0.0.1:0";
    o.hwm      = 100000;
    mb::serve::zmq_publisher pub(o);
    subscriber               sub(pub.endpoint());
    pub.wait_subscriber(2000);
    const std::vector<float> q = clip(3000);   // 5000 frames at 50 Hz
    uint64_t                 messages = 0;
    double                   seconds  = 0;
    for (auto _ : state) {
        const auto              t0 = std::chrono::steady_clock::now();
        mb::serve::sonic_stream s("pose", [&](const uint8_t * d, size_t n) { pub.send(d, n); });
        for (size_t f = 0; f < q.size(); f += 36) s.push(&q[f]);
        s.finish();
        seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        messages += uint64_t(s.sent());
    }
    state.counters["us_per_frame"] = seconds * 1e6 / double(messages);
    state.SetItemsProcessed(int64_t(messages));
}

void loopback_rate(benchmark::State & state) {
    mb::serve::zmq_publisher_options o;
    o.endpoint = "tcp://127.0.0.1:0";
    o.hwm      = int(state.range(0));
    mb::serve::zmq_publisher pub(o);
    subscriber               sub(pub.endpoint());
    pub.wait_subscriber(2000);
    const std::vector<float> q = clip(3000);
    double                   held = 0;
    for (auto _ : state) {
        const uint64_t before = sub.got;
        const auto     t0     = std::chrono::steady_clock::now();
        mb::serve::sonic_stream s("pose", [&](const uint8_t * d, size_t n) { pub.send(d, n); });
        for (size_t f = 0; f < q.size(); f += 36) s.push(&q[f]);
        s.finish();
        // received within 1 s of the last send
        const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(1);
        while (sub.got - before < uint64_t(s.sent()) && std::chrono::steady_clock::now() < end) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        held += double(sub.got - before) / secs;
        state.counters["received_fraction"] = double(sub.got - before) / double(s.sent());
    }
    state.counters["messages_per_s"] = held / double(state.iterations());
}

BENCHMARK(publisher_frame)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(loopback_rate)->Arg(100)->Arg(100000)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);

} // namespace

BENCHMARK_MAIN();
