// the bundle's deterministic compaction of tensor names that do not fit GGML's
// 64-byte name field (GGML_MAX_NAME, terminating NUL included)
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace mb {

constexpr size_t k_max_tensor_name = 64;    // stored names are at most 63 bytes

// the name as stored in a bundle: unchanged when shorter than 64 bytes, else the
// fixed substitutions in order, then (if still >= 64 bytes) the first 48 bytes,
// '.', and the first 12 hex digits of the SHA-256 of the original name; throws
// mb::error when that cut would split a UTF-8 character
std::string compact_tensor_name(std::string_view name);

// compacted names of `names` in the same order; throws mb::error when two
// different names compact to the same stored name
std::vector<std::string> compact_tensor_names(const std::vector<std::string> & names);

} // namespace mb
