// motionbricks dump [--json] FILE.gguf: every metadata entry and tensor of one GGUF
// file (any bundle component or style), after full validation by the reader
#include "tools/cli/commands.h"

#include "format/gguf.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstring>
#include <string>

namespace mb::cli {

namespace {

// a scalar or string value as JSON; arrays as {type, count}
nlohmann::ordered_json kv_value(const gguf_kv & kv) {
    switch (kv.type) {
        case gguf_type::GGUF_TYPE_STRING: return std::string(kv.str);
        case gguf_type::GGUF_TYPE_BOOL:   return kv.u != 0;
        case gguf_type::GGUF_TYPE_UINT8:
        case gguf_type::GGUF_TYPE_UINT16:
        case gguf_type::GGUF_TYPE_UINT32:
        case gguf_type::GGUF_TYPE_UINT64: return kv.u;
        case gguf_type::GGUF_TYPE_INT8:
        case gguf_type::GGUF_TYPE_INT16:
        case gguf_type::GGUF_TYPE_INT32:
        case gguf_type::GGUF_TYPE_INT64:  return kv.i;
        case gguf_type::GGUF_TYPE_FLOAT32:
        case gguf_type::GGUF_TYPE_FLOAT64: return kv.f;
        case gguf_type::GGUF_TYPE_ARRAY:
            return {{"element_type", gguf_type_name(kv.array_type)}, {"count", kv.array_count}};
    }
    return nullptr;
}

nlohmann::ordered_json dump_json(const gguf_file & f) {
    nlohmann::ordered_json j;
    j["path"]        = f.path();
    j["bytes"]       = f.file_size();
    j["alignment"]   = f.alignment();
    j["data_offset"] = f.data_offset();
    nlohmann::ordered_json kvs = nlohmann::ordered_json::array();
    for (const auto & kv : f.kvs()) {
        kvs.push_back({{"key", std::string(kv.key)}, {"type", gguf_type_name(kv.type)}, {"value", kv_value(kv)}});
    }
    j["metadata"] = kvs;
    nlohmann::ordered_json ts = nlohmann::ordered_json::array();
    for (const auto & t : f.tensors()) {
        nlohmann::ordered_json shape = nlohmann::ordered_json::array();
        for (uint32_t d = t.n_dims; d-- > 0;) shape.push_back(t.ne[d]);
        ts.push_back({{"name", std::string(t.name)},
                      {"type", dtype_name(t.type) ? dtype_name(t.type) : "?"},
                      {"shape", shape},
                      {"offset", f.tensor_offset(t)},
                      {"bytes", t.n_bytes}});
    }
    j["tensors"] = ts;
    return j;
}

} // namespace

int cmd_dump(int argc, char ** argv) {
    bool         json = false;
    const char * path = nullptr;
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--json")) {
            json = true;
        } else if (!path && argv[i][0] != '-') {
            path = argv[i];
        } else {
            path = nullptr;
            break;
        }
    }
    if (!path) {
        std::fprintf(stderr, "usage: motionbricks dump [--json] FILE.gguf\n");
        return 2;
    }
    try {
        auto                   f = gguf_file::open(path);
        nlohmann::ordered_json j = dump_json(*f);
        if (json) {
            std::printf("%s\n", j.dump(2).c_str());
            return 0;
        }
        std::printf("%s: GGUF v3, %llu bytes, alignment %u, data at %llu\n", path,
                    static_cast<unsigned long long>(f->file_size()), f->alignment(),
                    static_cast<unsigned long long>(f->data_offset()));
        std::printf("metadata (%zu):\n", f->kvs().size());
        for (const auto & kv : j["metadata"]) {
            std::printf("  %-34s %-7s %s\n", kv["key"].get<std::string>().c_str(),
                        kv["type"].get<std::string>().c_str(), kv["value"].dump().c_str());
        }
        std::printf("tensors (%zu):\n", f->tensors().size());
        for (const auto & t : j["tensors"]) {
            std::printf("  %-64s %s %-18s offset %llu\n", t["name"].get<std::string>().c_str(),
                        t["type"].get<std::string>().c_str(), t["shape"].dump().c_str(),
                        static_cast<unsigned long long>(t["offset"].get<uint64_t>()));
        }
    } catch (const std::exception & e) {
        std::string msg = e.what();
        for (char & c : msg) {
            if (c == '\n' || c == '\r') c = ' ';
        }
        std::fprintf(stderr, "motionbricks dump: %s\n", msg.c_str());
        return 2;
    }
    return 0;
}

} // namespace mb::cli
