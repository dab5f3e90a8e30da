// the one JSON parser for untrusted text (infer requests, plan scripts, WebSocket client
// messages, the release MANIFEST.json, and any reader after them). nlohmann::json::parse
// builds the whole document first: 64 MiB of '[' took 5 GB. Here the bytes are bounded before
// parsing, and nesting depth, value count and duplicate keys are checked by a parser callback
// as each value arrives, so a hostile text is rejected before its DOM grows past the bounds.
// It lives in src/format, the lowest layer, so that every reader can reach it.
#pragma once

#include "format/error.h"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <string>
#include <string_view>

namespace mb {

// each reader sets these from its largest valid input (docs/SECURITY.md)
struct json_bounds {
    size_t max_bytes;    // the whole text
    size_t max_depth;    // open arrays/objects at once (a flat object is depth 1)
    size_t max_values;   // values of every kind, containers and keys' values included
};

// malformed JSON, trailing content, a bound exceeded or a duplicate key; the text names which
struct json_input_error : error {
    explicit json_input_error(const std::string & msg) : error(status::invalid_format, msg) {}
};

// parses one JSON value; throws json_input_error (never a nlohmann exception)
nlohmann::json json_parse_bounded(std::string_view text, const json_bounds & bounds);

} // namespace mb
