// the `motionbricks plan` control script reader: a strict JSON array of segments (see plan-script.h)
#include "tools/cli/plan-script.h"

#include "format/json-bounded.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <set>

namespace mb::cli {

namespace {

using json = nlohmann::json;

constexpr int64_t k_max_total = 1000000;   // frames over the whole script

float finite(const json & v, const std::string & where, double limit) {
    if (!v.is_number()) throw bad_script(where + " must be a number");
    const double d = v.get<double>();
    if (!std::isfinite(d) || std::fabs(d) > limit) throw bad_script(where + " must be finite with |v| <= " + std::to_string(limit));
    return float(d);
}

void vec2(const json & v, const std::string & where, float * out) {
    if (!v.is_array() || v.size() != 2) throw bad_script(where + " must be [x, z]");
    out[0] = finite(v[0], where + "[0]", 1e6);
    out[1] = finite(v[1], where + "[1]", 1e6);
}

} // namespace

std::vector<plan_segment> parse_plan_script(const std::string & text, const std::function<int(const std::string &)> & find_style) {
    json j;
    try {
        j = json_parse_bounded(text, k_script_bounds);
    } catch (const json_input_error & e) {
        throw bad_script(std::string("script: ") + e.what());
    }
    if (!j.is_array() || j.empty()) throw bad_script("the script must be a non-empty JSON array of segments");
    if (j.size() > k_max_segments) throw bad_script("the script has more than " + std::to_string(k_max_segments) + " segments");
    static const std::set<std::string> keys = {"frames", "style",  "movement", "facing",
                                               "speed",  "seed",   "target",   "target_heading"};
    std::vector<plan_segment> out;
    int64_t              total = 0;
    for (size_t i = 0; i < j.size(); ++i) {
        const std::string w = "segment " + std::to_string(i);
        const json &      s = j[i];
        if (!s.is_object()) throw bad_script(w + " must be an object");
        for (auto it = s.begin(); it != s.end(); ++it) {
            if (!keys.count(it.key())) throw bad_script(w + ": unknown field '" + it.key() + "'");
        }
        plan_segment seg;
        if (!s.contains("frames") || !s["frames"].is_number_integer() || s["frames"].get<int64_t>() < 1 ||
            s["frames"].get<int64_t>() > 100000) {
            throw bad_script(w + ": frames must be an integer 1..100000");
        }
        seg.frames = int(s["frames"].get<int64_t>());
        total += seg.frames;
        if (total > k_max_total) throw bad_script("the script has more than " + std::to_string(k_max_total) + " frames");
        if (!s.contains("style") || !s["style"].is_string()) throw bad_script(w + ": style must be a style name");
        seg.style = find_style(s["style"].get<std::string>());
        if (seg.style < 0) throw bad_script(w + ": unknown style '" + s["style"].get<std::string>() + "'");
        if (s.contains("movement")) {
            vec2(s["movement"], w + ": movement", seg.movement);
            seg.has_move = true;
        }
        if (s.contains("facing")) {
            vec2(s["facing"], w + ": facing", seg.facing);
            if (seg.facing[0] == 0 && seg.facing[1] == 0) throw bad_script(w + ": facing must not be zero");
            seg.has_facing = true;
        }
        if (s.contains("speed")) {
            seg.speed = finite(s["speed"], w + ": speed", 100);
            if (seg.speed < 0) seg.speed = -1.0f;
        }
        if (s.contains("target")) {
            vec2(s["target"], w + ": target", seg.target);
            seg.has_target = true;
        }
        if (s.contains("target_heading")) {
            if (!seg.has_target) throw bad_script(w + ": target_heading needs a target");
            seg.target_heading = finite(s["target_heading"], w + ": target_heading", 1e3);
        }
        if (s.contains("seed")) {
            if (!s["seed"].is_number_unsigned() && !(s["seed"].is_number_integer() && s["seed"].get<int64_t>() >= 0)) {
                throw bad_script(w + ": seed must be an unsigned integer");
            }
            seg.seed = s["seed"].get<uint64_t>();
        }
        out.push_back(seg);
    }
    return out;
}

} // namespace mb::cli
