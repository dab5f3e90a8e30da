#include "format/tensor-names.h"

#include "format/error.h"
#include "format/sha256.h"

#include <map>

namespace mb {

// applied in this order, each to every occurrence (reference-runtime §3(a))
static const char * const k_substitutions[][2] = {
    {"_root_token_transformer_encoder.layers.", "root.l."},
    {"_shared_transformer_encoder.layers.",     "shared.l."},
    {"_transformer_encoder.layers.",            "transformer.l."},
    {"self_attn.",                              "attn."},
    {"in_proj_weight",                          "qkv.weight"},
    {"in_proj_bias",                            "qkv.bias"},
    {"external_cond_blocks.",                   "xcond."},
    {"target_cond_blocks.",                     "tcond."},
};

static void replace_all(std::string & s, std::string_view from, std::string_view to) {
    size_t pos = 0;
    while ((pos = s.find(from, pos)) != std::string::npos) {
        s.replace(pos, from.size(), to);
        pos += to.size();
    }
}

std::string compact_tensor_name(std::string_view name) {
    if (name.size() < k_max_tensor_name) return std::string(name);
    std::string s(name);
    for (const auto & sub : k_substitutions) replace_all(s, sub[0], sub[1]);
    if (s.size() < k_max_tensor_name) return s;
    // a cut before a continuation byte would split a UTF-8 character
    if ((static_cast<unsigned char>(s[48]) & 0xC0) == 0x80) {
        throw error(status::invalid_argument, "tensor name '" + std::string(name) +
                                                  "' cannot be compacted without splitting a UTF-8 character");
    }
    return s.substr(0, 48) + "." + sha256_hex(name).substr(0, 12);
}

std::vector<std::string> compact_tensor_names(const std::vector<std::string> & names) {
    std::vector<std::string>           out;
    std::map<std::string, std::string> origin;  // stored name -> original name
    out.reserve(names.size());
    for (const auto & n : names) {
        std::string c = compact_tensor_name(n);
        auto [it, fresh] = origin.emplace(c, n);
        if (!fresh && it->second != n) {
            throw error(status::invalid_argument, "tensor names '" + it->second + "' and '" + n +
                                                      "' both compact to '" + c + "'");
        }
        out.push_back(std::move(c));
    }
    return out;
}

} // namespace mb
