// the viewer's static files: safe resolution of a request path under one root directory
#pragma once

#include <string>

namespace mb::serve {

struct static_file {
    int         status = 404;        // 200, 400, 403 or 404
    std::string path;                // resolved file (status 200)
    std::string content_type;        // from the extension
};

// `target` is the request target (path, maybe with a query). Percent-decoding, no "..",
// NUL or backslash segments, no dot-files, "/" → index.html; only the viewer's files are
// served (.html .js .css .svg .ico .png at the top level or in vendor/; anything else is 404),
// and the real path (symlinks resolved) must stay under the real root and be a regular file
static_file resolve_static(const std::string & root, const std::string & target);

const char * content_type_for(const std::string & path);

constexpr size_t k_max_static_file = size_t(64) << 20;   // bytes

} // namespace mb::serve
