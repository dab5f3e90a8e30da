// bounded JSON parsing (see json-bounded.h)
#include "format/json-bounded.h"

#include <set>
#include <string>
#include <vector>

namespace mb {

using json = nlohmann::json;

json json_parse_bounded(std::string_view text, const json_bounds & b) {
    if (text.size() > b.max_bytes) {
        throw json_input_error("JSON text of " + std::to_string(text.size()) + " bytes, more than the " +
                               std::to_string(b.max_bytes) + " allowed");
    }
    size_t                             values = 0;
    std::vector<std::set<std::string>> keys;   // the keys seen so far in each open object
    const json::parser_callback_t      cb = [&](int depth, json::parse_event_t ev, json & v) {
        switch (ev) {
        case json::parse_event_t::object_start:
        case json::parse_event_t::array_start:
            // depth counts the containers already open around this one
            if (size_t(depth) + 1 > b.max_depth) {
                throw json_input_error("JSON nested deeper than " + std::to_string(b.max_depth) + " levels");
            }
            if (++values > b.max_values) throw json_input_error("JSON has more than " + std::to_string(b.max_values) + " values");
            if (ev == json::parse_event_t::object_start) keys.emplace_back();
            break;
        case json::parse_event_t::object_end: keys.pop_back(); break;
        case json::parse_event_t::key:
            if (!keys.back().insert(v.get<std::string>()).second) {
                throw json_input_error("JSON object has the key \"" + v.get<std::string>().substr(0, 64) + "\" twice");
            }
            break;
        case json::parse_event_t::value:
            // a container's own value event comes at its end: it was counted at its start
            if (!v.is_structured() && ++values > b.max_values) {
                throw json_input_error("JSON has more than " + std::to_string(b.max_values) + " values");
            }
            break;
        case json::parse_event_t::array_end: break;
        }
        return true;
    };
    try {
        return json::parse(text.begin(), text.end(), cb);
    } catch (const json::exception & e) {   // parse_error, and out_of_range for numbers beyond double
        throw json_input_error(std::string("not valid JSON: ") + e.what());
    }
}

} // namespace mb
