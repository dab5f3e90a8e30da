// "6,10,16": a comma-separated list of 1..64 integers, each within lo..hi (the bench verbs'
// --tokens, --batch, --iterations)
#pragma once

#include <algorithm>
#include <charconv>
#include <string>
#include <vector>

namespace mb::cli {

inline bool parse_int_list(const std::string & v, int lo, int hi, std::vector<int> & out) {
    out.clear();
    size_t at = 0;
    while (at <= v.size()) {
        const size_t end = std::min(v.find(',', at), v.size());
        int          x   = 0;
        const auto   r   = std::from_chars(v.data() + at, v.data() + end, x);
        if (r.ec != std::errc() || r.ptr != v.data() + end || x < lo || x > hi) return false;
        out.push_back(x);
        if (out.size() > 64) return false;
        at = end + 1;
    }
    return !out.empty();
}

} // namespace mb::cli
