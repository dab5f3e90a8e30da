// libFuzzer target for the readers of untrusted text: byte 0 picks the reader
//   0: a WebSocket protocol v1 client message (src/tools/serve/protocol.h)
//   1: a `motionbricks infer` request (src/tools/cli/infer-request.h)
//   2: a `motionbricks plan` control script (src/tools/cli/plan-script.h)
//   3: the release's MANIFEST.json, fetched by `motionbricks download` (src/tools/download/download.h)
//   4: a download base URL (check_url_allowed)
// The rest of the input is the text. Checks beyond "no crash, no sanitizer report": only the
// reader's own error type escapes; what a reader accepts is within the documented bounds; error
// events built from any reason text and any string are valid JSON.
#include "tools/cli/infer-request.h"
#include "tools/cli/plan-script.h"
#include "tools/download/download.h"
#include "tools/serve/protocol.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <set>
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
        const mb::cli::infer_request r = mb::cli::parse_infer_request(text);
        require(r.global_root.size() == 8 * 5 && r.local_root.size() == 8 * 4 && r.poses.size() == 8 * 303);
        require(r.global_root_mask.size() == 8 && r.local_root_mask.size() == 8 && r.pose_mask.size() == 8);
        require(r.durations.size() == 11);
        for (float v : r.global_root) require(std::isfinite(v) && std::fabs(v) <= 1e4f);
        for (float v : r.local_root) require(std::isfinite(v) && std::fabs(v) <= 1e4f);
        for (float v : r.poses) require(std::isfinite(v) && std::fabs(v) <= 1e4f);
        for (uint32_t v : r.global_root_mask) require(v <= 1);
        for (uint32_t v : r.local_root_mask) require(v <= 1);
        for (uint32_t v : r.pose_mask) require(v <= 1);
        for (uint32_t v : r.durations) require(v <= 1);
        require(r.token_count == 0 || (r.token_count >= 6 && r.token_count <= 16));
        require(r.inference_steps >= 1 && r.inference_steps <= 16);
        require(r.gumbel_uniforms.empty() || r.gumbel_uniforms.size() == size_t(r.inference_steps) * 16 * 8 * 10);
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

void release_manifest(const std::string & text) {
    try {
        std::set<std::string> seen;
        for (const mb::download::remote_file & f : mb::download::parse_distribution_manifest(text)) {
            require(f.path.rfind("g1-f32/", 0) == 0 || f.path.rfind("styles/", 0) == 0);
            require(f.path.find("..") == std::string::npos && f.path.find('\\') == std::string::npos);
            require(f.path.find('\0') == std::string::npos);
            require(f.bytes > 0 && f.sha256.size() == 64);
            for (char c : f.sha256) require((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'));
            require(seen.insert(f.path).second);
        }
    } catch (const mb::download::download_error &) {
    }
}

void base_url(const std::string & text) {
    try {
        mb::download::check_url_allowed(text);
        // accepted: https, or plain http to a loopback host only
        require(text.rfind("https://", 0) == 0 || text.rfind("http://", 0) == 0);
    } catch (const mb::download::download_error &) {
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t * data, size_t size) {
    if (size == 0) return 0;
    const std::string text(reinterpret_cast<const char *>(data) + 1, size - 1);
    switch (data[0] % 5) {
        case 0: client_message(text); break;
        case 1: infer_request(text); break;
        case 2: plan_script(text); break;
        case 3: release_manifest(text); break;
        default: base_url(text); break;
    }
    return 0;
}
