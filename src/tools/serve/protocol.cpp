// WebSocket animation protocol v1: parsing and validation of client messages, and the
// server's event texts. Every field is checked; unknown fields are errors (so a client
// speaking a newer, incompatible dialect hears about it instead of being half-understood)
#include "tools/serve/protocol.h"

#include "format/json-bounded.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <set>

namespace mb::serve {

namespace {

using json = nlohmann::json;

struct type_info {
    const char *          name;
    msg_type              type;
    std::set<std::string> fields;   // besides type and seq
};

const type_info k_types[] = {
    {"control", msg_type::control, {"style", "move", "facing"}},
    {"jump", msg_type::jump, {}},
    {"play_clip", msg_type::play_clip, {"clip"}},
    {"physics", msg_type::physics, {"enabled"}},
    {"pause", msg_type::pause, {}},
    {"resume", msg_type::resume, {}},
    {"reset", msg_type::reset, {}},
    {"ping", msg_type::ping, {}},
};

// [x, z] of finite numbers; false when the shape or a value is wrong
bool read_vec2(const json & v, float * out) {
    if (!v.is_array() || v.size() != 2) return false;
    for (int i = 0; i < 2; ++i) {
        if (!v[size_t(i)].is_number()) return false;
        const double d = v[size_t(i)].get<double>();
        if (!std::isfinite(d) || std::fabs(d) > 1e6) return false;
        out[i] = float(d);
    }
    return true;
}

} // namespace

const char * msg_type_name(msg_type t) {
    for (const auto & ti : k_types) {
        if (ti.type == t) return ti.name;
    }
    return "?";
}

parse_result parse_client_message(const std::string & text) {
    parse_result r;
    auto fail = [&](const std::string & why) {
        r.kind = parse_result::error;
        r.why  = why;
        return r;
    };
    // the largest valid message (a control with style, move and facing) is 2 levels deep
    // (object > [x, z]) with 9 values
    static constexpr json_bounds k_bounds = {.max_bytes = k_max_message, .max_depth = 3, .max_values = 64};
    if (text.size() > k_max_message) return fail("message larger than 4096 bytes");
    json j;
    try {
        // trailing content after the value is an error too
        j = json_parse_bounded(text, k_bounds);
    } catch (const json_input_error & e) {
        return fail(std::string("message is not valid: ") + e.what());
    }
    if (!j.is_object()) return fail("message must be a JSON object");
    if (!j.contains("type") || !j["type"].is_string()) return fail("message needs a string type");
    const std::string  tname = j["type"].get<std::string>();
    const type_info *  ti    = nullptr;
    for (const auto & t : k_types) {
        if (tname == t.name) ti = &t;
    }
    if (!ti) return fail("unknown message type '" + tname.substr(0, 64) + "'");
    r.msg.type = ti->type;
    for (auto it = j.begin(); it != j.end(); ++it) {
        const std::string & k = it.key();
        if (k != "type" && k != "seq" && !ti->fields.count(k)) return fail("unknown field '" + k.substr(0, 64) + "' in " + tname);
    }
    if (j.contains("seq")) {
        const json & s = j["seq"];
        if (!s.is_number_integer()) return fail("seq must be an integer");
        if (s.is_number_unsigned() ? s.get<uint64_t>() > uint64_t(k_max_seq) : (s.get<int64_t>() < 0)) {
            return fail("seq must be in 0..2^53-1");
        }
        r.msg.seq = s.get<int64_t>();
    } else if (ti->type != msg_type::ping) {
        return fail(tname + " needs a seq");
    }
    auto reject = [&](const std::string & why) {
        r.kind = parse_result::rejected;
        r.why  = why;
        return r;
    };
    switch (ti->type) {
    case msg_type::control: {
        if (j.contains("style")) {
            if (!j["style"].is_string()) return fail("style must be a string");
            r.msg.style     = j["style"].get<std::string>();
            r.msg.has_style = true;
            if (r.msg.style.empty() || r.msg.style.size() > 128) return reject("unknown style");
        }
        if (j.contains("move")) {
            if (!read_vec2(j["move"], r.msg.move)) return fail("move must be [x, z] numbers");
            r.msg.has_move = true;
            if (std::hypot(r.msg.move[0], r.msg.move[1]) > 1.01f) return reject("|move| must be <= 1.01");
        }
        if (j.contains("facing")) {
            if (!read_vec2(j["facing"], r.msg.facing)) return fail("facing must be [x, z] numbers");
            r.msg.has_facing = true;
            const float n    = std::hypot(r.msg.facing[0], r.msg.facing[1]);
            if (n < 0.1f || n > 1.01f) return reject("|facing| must be in 0.1..1.01");
        }
        break;
    }
    case msg_type::play_clip:
        if (!j.contains("clip") || !j["clip"].is_string()) return fail("play_clip needs a string clip");
        r.msg.clip = j["clip"].get<std::string>();
        break;
    case msg_type::physics:
        if (!j.contains("enabled") || !j["enabled"].is_boolean()) return fail("physics needs a boolean enabled");
        r.msg.enabled = j["enabled"].get<bool>();
        break;
    default:
        break;
    }
    return r;
}

void append_json_string(std::string & out, const std::string & s) {
    out += json(s).dump(-1, ' ', false, json::error_handler_t::replace);
}

void append_float(std::string & out, float v) {
    if (!std::isfinite(v)) v = 0;
    char buf[32];
    const int n = std::snprintf(buf, sizeof(buf), "%.6g", double(v));
    out.append(buf, size_t(n));
}

void append_floats(std::string & out, const float * v, size_t n) {
    out += '[';
    for (size_t i = 0; i < n; ++i) {
        if (i) out += ',';
        append_float(out, v[i]);
    }
    out += ']';
}

std::string make_hello(bool owner, const std::string & token, int64_t last_seq, uint64_t epoch, const std::string & physics_control) {
    json j = {{"type", "hello"},      {"version", k_protocol_version}, {"owner", owner},
              {"last_seq", last_seq}, {"epoch", epoch},                {"physics_available", !physics_control.empty()},
              {"buffer_seconds", k_buffer_seconds}};
    if (owner) j["token"] = token;
    if (!physics_control.empty()) j["physics_control"] = physics_control;
    return j.dump();
}

std::string make_ack(int64_t seq, const char * state, const std::string & error, uint64_t epoch) {
    json j = {{"type", "ack"}, {"seq", seq}, {"state", state}, {"error", error}, {"epoch", epoch}};
    return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string make_ack_scheduled(int64_t seq, uint64_t epoch, double at, double planner_ms) {
    json j = {{"type", "ack"}, {"seq", seq},      {"state", "scheduled"},     {"error", ""},
              {"epoch", epoch}, {"at", at}, {"planner_ms", planner_ms}};
    return j.dump();
}

std::string make_ack_applied(int64_t seq, uint64_t epoch, double time) {
    json j = {{"type", "ack"}, {"seq", seq}, {"state", "applied"}, {"error", ""}, {"epoch", epoch}, {"time", time}};
    return j.dump();
}

std::string make_error(const std::string & error) {
    json j = {{"type", "error"}, {"error", error}};
    return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string make_pong() {
    return "{\"type\":\"pong\"}";
}

} // namespace mb::serve
