// libFuzzer target for the JSON readers of untrusted text: byte 0 picks the reader
//   0: a WebSocket protocol v1 client message (src/tools/serve/protocol.h)
//   1: a `motionbricks infer` request (src/tools/cli/infer-request.h)
//   2: a `motionbricks plan` control script (src/tools/cli/plan-script.h)
// The rest of the input is the text. Checks beyond "no crash, no sanitizer report": only the
// reader's own error type escapes; what a reader accepts is within the documented bounds; error
// events built from any reason text and any string are valid JSON.
#include "tools/cli/infer-request.h"
#include "tools/cli/plan-script.h"
#include "tools/serve/protocol.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>

namespace {

using json = nlohmann::json;

void require(bool ok) {
    if (!ok) std::abort();
}

bool is_json(const std::string & s) {
    return json::accept(s);
}

void client_message(const std::string & text) {
    const mb::serve::parse_result r = mb::serve::parse_client_message(text);
    if (text.size() > mb::serve::k_max_message) require(r.kind == mb::serve::parse_result::error);
    if (r.kind != mb::serve::parse_result::ok) {
        require(!r.why.empty());
        require(is_json(mb::serve::make_error(r.why)));
        require(is_json(mb::serve::make_ack(r.msg.seq, "rejected", r.why, 1)));
        return;
    }
    const mb::serve::client_message & m = r.msg;
    require(m.seq >= 0 && m.seq <= mb::serve::k_max_seq);
    if (m.has_move) require(std::isfinite(m.move[0]) && std::isfinite(m.move[1]) && std::hypot(m.move[0], m.move[1]) <= 1.01f);
    if (m.has_facing) {
        const float n = std::hypot(m.facing[0], m.facing[1]);
        require(n >= 0.1f && n <= 1.01f);
    }
    if (m.has_style) require(!m.style.empty() && m.style.size() <= 128);
    std::string quoted;
    mb::serve::append_json_string(quoted, text);
    require(is_json(quoted));
}

void infer_request(const std::string & text) {
    try {
        const mb::predict_request r = mb::cli::parse_infer_request(text);
        for (float v : r.global_root) require(std::isfinite(v) && std::fabs(v) <= 1e4f);
        for (float v : r.local_root) require(std::isfinite(v) && std::fabs(v) <= 1e4f);
        for (float v : r.poses) require(std::isfinite(v) && std::fabs(v) <= 1e4f);
        for (uint8_t v : r.global_root_mask) require(v <= 1);
        for (uint8_t v : r.local_root_mask) require(v <= 1);
        for (uint8_t v : r.pose_mask) require(v <= 1);
        for (uint8_t v : r.allowed_num_tokens) require(v <= 1);
        require(r.num_tokens == 0 || (r.num_tokens >= 6 && r.num_tokens <= 16));
        require(r.num_inference_steps >= 1 && r.num_inference_steps <= 16);
        require(r.gumbel_uniforms.empty() || r.gumbel_uniforms.size() == size_t(r.num_inference_steps) * 16 * 8 * 10);
        for (float u : r.gumbel_uniforms) require(u >= 0.0f && u <= 1.0f);
    } catch (const mb::cli::bad_request &) {
    }
}

void plan_script(const std::string & text) {
    try {
        const auto find = [](const std::string & n) { return n == "walk" ? 0 : n == "idle" ? 1 : -1; };
        int64_t total = 0;
        for (const mb::cli::plan_segment & s : mb::cli::parse_plan_script(text, find)) {
            require(s.frames >= 1 && s.frames <= 100000 && (s.style == 0 || s.style == 1));
            total += s.frames;
            for (float v : {s.movement[0], s.movement[1], s.facing[0], s.facing[1], s.target[0], s.target[1],
                            s.speed, s.target_heading}) {
                require(std::isfinite(v));
            }
            if (s.has_facing) require(s.facing[0] != 0 || s.facing[1] != 0);
        }
        require(total <= 1000000);
    } catch (const mb::cli::bad_script &) {
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t * data, size_t size) {
    if (size == 0) return 0;
    const std::string text(reinterpret_cast<const char *>(data) + 1, size - 1);
    switch (data[0] % 3) {
        case 0: client_message(text); break;
        case 1: infer_request(text); break;
        default: plan_script(text); break;
    }
    return 0;
}
