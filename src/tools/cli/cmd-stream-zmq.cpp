// motionbricks stream-zmq: a plan script (or a 30 fps qpos file) published over ZeroMQ in
// gear_sonic_deploy's protocol v1, one message per 50 Hz frame, paced in real time (--pace 1) or
// faster, with no browser. The script is planned first (as `motionbricks plan` plans it), then sent
#include "tools/cli/commands.h"
#include "tools/cli/motion-output.h"
#include "tools/cli/plan-run.h"
#include "tools/cli/serve-robot.h"
#include "tools/serve/sonic-stream.h"

#ifdef MB_HAVE_ZMQ
#include "tools/serve/zmq-publisher.h"
#endif

#include <motionbricks/motionbricks.hpp>

#include <charconv>
#include <chrono>
#include <cstdio>
#include <thread>

namespace mb::cli {

namespace {

int usage() {
    std::fprintf(stderr,
                 "usage: motionbricks stream-zmq (SCRIPT.json --model DIR --style FILE.mbstyle [--style ...] | --qpos FILE.csv|.npz) "
                 "[--zmq tcp://127.0.0.1:5556] [--zmq-topic pose] [--zmq-hwm 100] [--zmq-allow-remote yes|no] "
                 "[--pace 1] [--wait-subscriber SECONDS] %s\n", tools::k_model_options_usage);
    return 2;
}

bool parse_double(const std::string & v, double lo, double hi, double & out) {
    const auto r = std::from_chars(v.data(), v.data() + v.size(), out);
    return r.ec == std::errc() && r.ptr == v.data() + v.size() && out >= lo && out <= hi;
}

} // namespace

int cmd_stream_zmq(int argc, char ** argv) {
    plan_inputs         in;
    serve_robot_options zmq;
    zmq.zmq     = "tcp://127.0.0.1:5556";
    double pace = 1, wait_s = 0;
    const int rc = parse_motion_input("stream-zmq", argc, argv, in, [&](const std::string & a, const std::string & v) {
        if (a == "--pace") {
            if (parse_double(v, 0, 1000, pace)) return 1;
            std::fprintf(stderr, "motionbricks stream-zmq: --pace must be 0 (as fast as possible) .. 1000 (1 = real time)\n");
            return -1;
        }
        if (a == "--wait-subscriber") {
            if (parse_double(v, 0, 3600, wait_s)) return 1;
            std::fprintf(stderr, "motionbricks stream-zmq: --wait-subscriber must be 0..3600 seconds\n");
            return -1;
        }
        return a.rfind("--zmq", 0) == 0 ? parse_serve_robot_option(a, v, zmq) : 0;
    }, usage);
    if (rc >= 0) return rc;
#ifndef MB_HAVE_ZMQ
    std::fprintf(stderr, "motionbricks stream-zmq: this build has no ZeroMQ (install libzmq3-dev and reconfigure)\n");
    return 1;
#else
    std::vector<float> qpos;
    if (const int lc = load_motion_input("stream-zmq", in, qpos); lc != 0) return lc;
    try {
        serve::zmq_publisher_options po;
        po.endpoint     = zmq.zmq;
        po.hwm          = zmq.hwm;
        po.allow_remote = zmq.remote;
        po.linger_ms    = 2000;   // the last frames still reach a subscriber after the loop
        serve::zmq_publisher pub(po);
        std::fprintf(stderr, "stream-zmq: publishing %zu frames (30 fps) on %s, topic '%s'\n", qpos.size() / MB_G1_QPOS_SIZE,
                     pub.endpoint().c_str(), zmq.topic.c_str());
        std::fflush(stderr);
        if (wait_s > 0 && !pub.wait_subscriber(int(wait_s * 1000))) {
            std::fprintf(stderr, "motionbricks stream-zmq: no subscriber within %g s\n", wait_s);
            return 1;
        }
        using clock      = std::chrono::steady_clock;
        const auto start = clock::now();
        int64_t    n     = 0;
        serve::sonic_stream stream(zmq.topic, [&](const uint8_t * data, size_t size) {
            if (pace > 0) std::this_thread::sleep_until(start + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(double(n) * 0.02 / pace)));
            pub.send(data, size);
            ++n;
        });
        for (size_t f = 0; f < qpos.size(); f += MB_G1_QPOS_SIZE) stream.push(&qpos[f]);
        stream.finish();
        const double s = std::chrono::duration<double>(clock::now() - start).count();
        std::fprintf(stderr, "stream-zmq: %lld messages at 50 Hz in %.2f s (%.0f messages/s), %llu not sent\n", (long long) n, s,
                     s > 0 ? double(n) / s : 0.0, (unsigned long long) pub.failed());
    } catch (const std::exception & e) {
        std::fprintf(stderr, "motionbricks stream-zmq: %s\n", e.what());
        return 1;
    }
    return 0;
#endif
}

} // namespace mb::cli
