// WebSocket animation protocol v1 (server-owned streaming), the reference runtime's
// JSON text protocol: client messages {type, seq, ...} are parsed and validated here,
// server events (hello, ack, error, pong, targets, frame) are written here
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mb::serve {

constexpr int      k_protocol_version = 1;
constexpr size_t   k_max_message      = 4096;                    // bytes per client message
constexpr int      k_max_rate         = 120;                     // messages within one second
constexpr size_t   k_max_commands     = 64;                      // queued commands of the owner
constexpr size_t   k_max_reliable     = 32;                      // queued reliable events per viewer
constexpr size_t   k_max_replies      = 4 * k_max_rate;          // queued answers (acks, pongs, errors) per viewer
constexpr int64_t  k_max_seq          = (int64_t(1) << 53) - 1;  // JSON-safe integer
constexpr double   k_buffer_seconds   = 0.15;                    // client pose-buffer delay

enum class msg_type { control, jump, play_clip, physics, pause, resume, reset, ping };

struct client_message {
    msg_type    type = msg_type::ping;
    int64_t     seq  = 0;            // 0 when absent (ping only)
    bool        has_style  = false;
    std::string style;               // control: style name
    bool        has_move   = false;
    float       move[2]    = {0, 0}; // control: movement on the ground plane (x, z), |move| ≤ 1.01
    bool        has_facing = false;
    float       facing[2]  = {0, 1}; // control: facing (x, z), 0.1 ≤ |facing| ≤ 1.01
    std::string clip;                // play_clip: asset id
    bool        enabled = false;     // physics
};

// one parsed message: ok, a malformed message (answered with an `error` event), or a
// well-formed one with an invalid value (answered with a `rejected` ack for `seq`)
struct parse_result {
    enum kind_t { ok, error, rejected } kind = ok;
    client_message msg;
    std::string    why;              // the error text for error/rejected
};

parse_result parse_client_message(const std::string & text);

const char * msg_type_name(msg_type t);

// server → client events (compact JSON text)
// physics_control: "" without physics, else how the robot is driven ("PD tracking", "SONIC policy"),
// sent as physics_control with physics_available true
std::string make_hello(bool owner, const std::string & token, int64_t last_seq, uint64_t epoch, const std::string & physics_control = "");
std::string make_ack(int64_t seq, const char * state, const std::string & error, uint64_t epoch);
std::string make_ack_scheduled(int64_t seq, uint64_t epoch, double at, double planner_ms);
std::string make_ack_applied(int64_t seq, uint64_t epoch, double time);
std::string make_error(const std::string & error);
std::string make_pong();

// appends a float with 6 significant digits (JSON number; non-finite becomes 0)
void append_float(std::string & out, float v);
void append_floats(std::string & out, const float * v, size_t n);
// appends a JSON string literal
void append_json_string(std::string & out, const std::string & s);

} // namespace mb::serve
