// the viewer's static files
#include "tools/serve/static-files.h"

#include <climits>
#include <cstdlib>
#include <cstring>
#include <sys/stat.h>

namespace mb::serve {

namespace {

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

bool percent_decode(const std::string & in, std::string & out) {
    out.clear();
    for (size_t i = 0; i < in.size(); ++i) {
        if (in[i] != '%') {
            out += in[i];
            continue;
        }
        if (i + 2 >= in.size()) return false;
        const int h = hex_value(in[i + 1]), l = hex_value(in[i + 2]);
        if (h < 0 || l < 0) return false;
        out += char(h * 16 + l);
        i += 2;
    }
    return true;
}

bool real_path(const std::string & p, std::string & out) {
    char buf[PATH_MAX];
    if (!::realpath(p.c_str(), buf)) return false;
    out = buf;
    return true;
}

// the viewer's files only (issue 19.13b: the whole web/ tree was served, node_modules,
// package.json and scripts/ included): files at the top level or in vendor/, of the kinds a
// page loads. Everything else is 404, as if absent
bool viewer_file(const std::string & decoded) {
    static const char * k_dirs[] = {"/", "/vendor/"};
    static const char * k_exts[] = {".html", ".js", ".css", ".svg", ".ico", ".png"};
    const size_t        slash    = decoded.rfind('/');
    const std::string   dir      = decoded.substr(0, slash + 1);
    const std::string   name     = decoded.substr(slash + 1);
    bool                dir_ok   = false;
    for (const char * d : k_dirs) dir_ok = dir_ok || dir == d;
    if (!dir_ok) return false;
    for (const char * e : k_exts) {
        const size_t n = std::strlen(e);
        if (name.size() > n && name.compare(name.size() - n, n, e) == 0) return true;
    }
    return false;
}

} // namespace

const char * content_type_for(const std::string & path) {
    static const struct {
        const char * ext;
        const char * type;
    } k_types[] = {
        {".html", "text/html; charset=utf-8"},  {".js", "text/javascript; charset=utf-8"},
        {".mjs", "text/javascript; charset=utf-8"}, {".css", "text/css; charset=utf-8"},
        {".json", "application/json"},          {".png", "image/png"},
        {".jpg", "image/jpeg"},                 {".svg", "image/svg+xml"},
        {".ico", "image/x-icon"},               {".wasm", "application/wasm"},
        {".txt", "text/plain; charset=utf-8"},  {".map", "application/json"},
        {".glb", "model/gltf-binary"},          {".woff2", "font/woff2"},
    };
    const size_t dot = path.rfind('.');
    if (dot != std::string::npos && path.find('/', dot) == std::string::npos) {
        const std::string ext = path.substr(dot);
        for (const auto & t : k_types) {
            if (ext == t.ext) return t.type;
        }
    }
    return "application/octet-stream";
}

static_file resolve_static(const std::string & root, const std::string & target) {
    static_file r;
    std::string path = target.substr(0, target.find_first_of("?#"));
    std::string decoded;
    if (path.empty() || path[0] != '/' || !percent_decode(path, decoded)) {
        r.status = 400;
        return r;
    }
    if (decoded.back() == '/') decoded += "index.html";
    // each segment: non-empty, no dot-files (covers "." and ".."), no NUL or backslash
    size_t i = 1;
    while (i <= decoded.size()) {
        size_t j = decoded.find('/', i);
        if (j == std::string::npos) j = decoded.size();
        const std::string seg = decoded.substr(i, j - i);
        if (seg.empty() || seg[0] == '.' || seg.find('\0') != std::string::npos || seg.find('\\') != std::string::npos) {
            r.status = seg.empty() ? 404 : 403;
            return r;
        }
        i = j + 1;
    }
    if (!viewer_file(decoded)) return r;   // 404
    std::string real_root, real_file;
    if (!real_path(root, real_root) || !real_path(root + decoded, real_file)) return r;   // 404
    if (real_file.compare(0, real_root.size() + 1, real_root + "/") != 0) {
        r.status = 403;   // a symlink pointing outside the root
        return r;
    }
    struct stat st {};
    if (::stat(real_file.c_str(), &st) != 0) return r;
    if (!S_ISREG(st.st_mode)) {
        r.status = 403;
        return r;
    }
    if (size_t(st.st_size) > k_max_static_file) {
        r.status = 403;
        return r;
    }
    r.status       = 200;
    r.path         = real_file;
    r.content_type = content_type_for(real_file);
    return r;
}

} // namespace mb::serve
