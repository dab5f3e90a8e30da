// serve's robot options (see serve-robot.h)
#include "tools/cli/serve-robot.h"

#ifdef MB_HAVE_ZMQ
#include "tools/serve/zmq-publisher.h"
#else
namespace mb::serve {
class zmq_publisher {};    // never made without ZeroMQ; complete so that an empty unique_ptr can be destroyed (as in robot-tap.cpp)
} // namespace mb::serve
#endif

#include <motionbricks/motionbricks.hpp>

#include <charconv>
#include <cstdio>
#include <stdexcept>

namespace mb::cli {

const char * serve_robot_usage() {
    return "[--zmq tcp://127.0.0.1:5556] [--zmq-topic pose] [--zmq-hwm 100] [--zmq-allow-remote yes|no] "
           "[--record-qpos FILE.csv|.npz [--qpos-rate 30|50] [--quat-order wxyz|xyzw] [--qpos-header yes|no]]";
}

int parse_serve_robot_option(const std::string & a, const std::string & v, serve_robot_options & o) {
    if (a == "--zmq") {
        o.zmq = v;
    } else if (a == "--zmq-topic") {
        if (v.size() > 256) {
            std::fprintf(stderr, "motionbricks serve: --zmq-topic is at most 256 bytes\n");
            return -1;
        }
        o.topic = v;
    } else if (a == "--zmq-hwm") {
        const auto r = std::from_chars(v.data(), v.data() + v.size(), o.hwm);
        if (r.ec != std::errc() || r.ptr != v.data() + v.size() || o.hwm < 1 || o.hwm > 100000) {
            std::fprintf(stderr, "motionbricks serve: --zmq-hwm must be an integer 1..100000\n");
            return -1;
        }
    } else if (a == "--zmq-allow-remote") {
        if (v != "yes" && v != "no") {
            std::fprintf(stderr, "motionbricks serve: --zmq-allow-remote must be yes or no\n");
            return -1;
        }
        o.remote = v == "yes";
    } else if (a == "--record-qpos") {
        if (!is_qpos_output(v)) {
            std::fprintf(stderr, "motionbricks serve: --record-qpos needs a .csv or .npz file\n");
            return -1;
        }
        o.record = v;
    } else {
        return parse_qpos_option("serve", a, v, o.record_format);
    }
    return 1;
}

std::unique_ptr<serve::robot_tap> make_robot_tap(const serve_robot_options & o, serve::hub_options & hub) {
    if (o.zmq.empty() && o.record.empty()) return nullptr;
    std::unique_ptr<serve::zmq_publisher> pub;
    if (!o.zmq.empty()) {
#ifdef MB_HAVE_ZMQ
        serve::zmq_publisher_options po;
        po.endpoint     = o.zmq;
        po.hwm          = o.hwm;
        po.allow_remote = o.remote;
        pub             = std::make_unique<serve::zmq_publisher>(po);
        std::fprintf(stderr, "serve: publishing protocol v1 on %s, topic '%s'\n", pub->endpoint().c_str(), o.topic.c_str());
#else
        throw std::runtime_error("--zmq: this build has no ZeroMQ (install libzmq3-dev and reconfigure)");
#endif
    }
    auto tap    = std::make_unique<serve::robot_tap>(std::move(pub), o.topic, !o.record.empty());
    auto * raw  = tap.get();
    hub.on_tick = [raw](const serve::timeline & tl, int64_t tick, uint64_t epoch) { raw->on_tick(tl, tick, epoch); };
    return tap;
}

bool finish_robot_tap(const serve_robot_options & o, const serve::robot_tap * tap) {
    if (!tap || o.record.empty()) return true;
    const std::vector<float> & q = tap->recorded();
    if (q.empty()) {
        std::fprintf(stderr, "serve: nothing was played; '%s' not written\n", o.record.c_str());
        return false;
    }
    try {
        write_qpos_output(o.record, q.data(), q.size() / MB_G1_QPOS_SIZE, o.record_format);
    } catch (const std::exception & e) {
        std::fprintf(stderr, "serve: --record-qpos: %s\n", e.what());
        return false;
    }
    std::fprintf(stderr, "serve: recorded %zu frames to %s\n", q.size() / MB_G1_QPOS_SIZE, o.record.c_str());
    return true;
}

} // namespace mb::cli
