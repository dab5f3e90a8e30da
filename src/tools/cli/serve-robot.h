// the robot options of `motionbricks serve`: --zmq ENDPOINT [--zmq-topic pose] [--zmq-hwm N]
// [--zmq-allow-remote yes|no] publishes the served motion in gear_sonic_deploy's protocol v1;
// --record-qpos FILE.csv|.npz [qpos options] records it, written when the server stops
#pragma once

#include "tools/cli/motion-output.h"
#include "tools/serve/hub.h"
#include "tools/serve/robot-tap.h"

#include <memory>
#include <string>

namespace mb::cli {

struct serve_robot_options {
    std::string zmq;                    // endpoint; "" = no publisher
    std::string topic  = "pose";
    int         hwm    = 100;
    bool        remote = false;
    std::string record;                 // qpos file; "" = no recording
    qpos_output record_format;
};

// 1 consumed, 0 not a robot option, -1 bad value (printed)
int parse_serve_robot_option(const std::string & option, const std::string & value, serve_robot_options & o);

const char * serve_robot_usage();

// the tap for these options wired into hub.on_tick, or null when none is asked for; throws
// std::runtime_error (ZMQ not in this build, a non-loopback endpoint, bind failure)
std::unique_ptr<serve::robot_tap> make_robot_tap(const serve_robot_options & o, serve::hub_options & hub);

// after the server stopped: writes the recording; false (printed) when it cannot
bool finish_robot_tap(const serve_robot_options & o, const serve::robot_tap * tap);

} // namespace mb::cli
