// the clip and download routes of `serve` (http-routes.h):
//   GET  /api/clips                           the clip library (id, name, frames, fps, duration)
//   GET  /api/meta                            with kimodo_clips = that library
//   GET  /api/motion/recent?seconds=N&format=glb|bvh   the last N (1..60) s shown, as a file
//   POST /api/kimodo/upload                   a GLB clip (≤ 16 MiB), owner only: header
//                                             X-Motionbricks-Token = the owner's hello token
#include "tools/serve/clips.h"
#include "tools/serve/http-routes.h"

#include <motionbricks/anim-export.h>

#include <nlohmann/json.hpp>

#include <charconv>
#include <sstream>

namespace mb::serve {

namespace {

// value of `key` in the target's query ("" when absent)
std::string query(const std::string & target, const std::string & key) {
    const size_t q = target.find('?');
    if (q == std::string::npos) return "";
    std::stringstream ss(target.substr(q + 1));
    std::string       kv;
    while (std::getline(ss, kv, '&')) {
        const size_t eq = kv.find('=');
        if (kv.substr(0, eq) == key) return eq == std::string::npos ? "" : kv.substr(eq + 1);
    }
    return "";
}

} // namespace

bool upload_target(const std::string & target) {
    return target_path(target) == "/api/kimodo/upload";
}

std::optional<http_response> handle_clip_http(const http_request & req, const route_context & ctx) {
    const std::string target(req.target());
    const std::string path = target_path(target);
    const bool        get  = req.method() == http::verb::get || req.method() == http::verb::head;
    if (path == "/api/clips" && get) return make_response(req, http::status::ok, ctx.clips ? ctx.clips->list_json() : "[]", "application/json");
    if (path == "/api/meta" && get && ctx.clips) {
        // the reference's kimodo_clips: the library as it is now
        std::string meta = ctx.meta_json;
        const std::string empty = "\"kimodo_clips\":[]";
        const size_t      at    = meta.find(empty);
        if (at != std::string::npos) meta.replace(at, empty.size(), "\"kimodo_clips\":" + ctx.clips->list_json());
        return make_response(req, http::status::ok, std::move(meta), "application/json");
    }
    if (path == "/api/motion/recent" && get) {
        if (!ctx.history) return make_http_error(req, http::status::not_found, "no motion history on this server");
        const std::string fmt = query(target, "format"), sec = query(target, "seconds");
        int               s   = 10;
        if (!sec.empty()) {
            const auto r = std::from_chars(sec.data(), sec.data() + sec.size(), s);
            if (r.ec != std::errc() || r.ptr != sec.data() + sec.size() || s < 1 || s > 60) {
                return make_http_error(req, http::status::bad_request, "seconds must be an integer 1..60");
            }
        }
        if (fmt != "glb" && fmt != "bvh") return make_http_error(req, http::status::bad_request, "format must be glb or bvh");
        std::string bytes;
        try {
            bytes = ctx.history->encode(s, fmt == "glb" ? MB_MOTION_FORMAT_GLB : MB_MOTION_FORMAT_BVH);
        } catch (const std::exception & e) {
            return make_http_error(req, http::status::internal_server_error, e.what());
        }
        if (bytes.empty()) return make_http_error(req, http::status::not_found, "no frames shown yet");
        http_response res = make_response(req, http::status::ok, std::move(bytes), fmt == "glb" ? "model/gltf-binary" : "application/octet-stream");
        res.set(http::field::content_disposition, "attachment; filename=\"motionbricks." + fmt + "\"");
        return res;
    }
    if (upload_target(target)) {
        if (req.method() != http::verb::post) return make_http_error(req, http::status::method_not_allowed, "POST a GLB");
        if (!ctx.clips) return make_http_error(req, http::status::not_found, "clips are not available on this server");
        const auto tok = req.find("X-Motionbricks-Token");
        if (tok == req.end() || !ctx.owner_token || !ctx.owner_token(std::string(tok->value()))) {
            return make_http_error(req, http::status::forbidden, "only the owner may upload clips (X-Motionbricks-Token)");
        }
        std::string name = query(target, "name");
        for (char & c : name) {
            if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.')) c = '_';
        }
        try {
            const auto c = ctx.clips->add_upload(req.body(), name.substr(0, 64));
            const nlohmann::json j = {{"id", c->id}, {"name", c->name}, {"frames", c->frames}, {"fps", 30},
                                      {"duration", double(c->frames) / 30.0}};
            return make_response(req, http::status::ok, j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), "application/json");
        } catch (const std::invalid_argument & e) {
            return make_http_error(req, http::status::bad_request, e.what());
        } catch (const std::length_error & e) {
            return make_http_error(req, http::status::insufficient_storage, e.what());
        }
    }
    return std::nullopt;
}

} // namespace mb::serve
