#include "sonic-weights.h"

#include "format/bundle.h"
#include "format/sha256.h"

#include <cmath>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>

namespace mb::test {

std::vector<sonic_tensor_spec> sonic_weight_table(const std::string & weights_md) {
    std::ifstream f(weights_md);
    if (!f) throw std::runtime_error("cannot read " + weights_md);
    // | 0 | `encoders.g1.module.0.weight` | [2048, 640] | 4 | enc_first_weight | `3cf4…` |
    const std::regex row(R"(^\| *\d+ *\| *`([a-z0-9_.]+)` *\| *\[([0-9, ]+)\] *\| *(\d+) *\| *\w+ *\| *`([0-9a-f]{64})` *\|)");
    std::vector<sonic_tensor_spec> out;
    std::string                    line;
    while (std::getline(f, line)) {
        if (line.rfind("## Reduced-width", 0) == 0) break;
        std::smatch m;
        if (!std::regex_search(line, m, row)) continue;
        sonic_tensor_spec t;
        t.upstream_name = m[1];
        std::stringstream dims(m[2]);
        for (std::string d; std::getline(dims, d, ',');) t.shape.push_back(std::stoll(d));
        t.e      = std::stoi(m[3]);
        t.sha256 = m[4];
        // encoders.g1.module.{2k} → encoder.{k}; encoders.smpl → smpl_encoder; encoders.teleop →
        // teleop_encoder; decoders.g1_dyn → decoder
        const std::regex name(R"(^(encoders\.(g1|teleop|smpl)|decoders\.g1_dyn)\.module\.(\d+)\.(weight|bias)$)");
        std::smatch      n;
        if (!std::regex_match(t.upstream_name, n, name)) throw std::runtime_error("unexpected tensor " + t.upstream_name);
        const std::string which  = n[2];
        const std::string prefix = which.empty() ? "decoder" : which == "g1" ? "encoder" : which + "_encoder";
        t.gguf_name = prefix + "." + std::to_string(std::stoi(n[3]) / 2) + "." + std::string(n[4]);
        out.push_back(t);
    }
    if (out.size() != 44) throw std::runtime_error(weights_md + ": expected 44 tensors, read " + std::to_string(out.size()));
    return out;
}

std::vector<float> sonic_weight_values(const sonic_tensor_spec & t, uint64_t seed) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (unsigned char c : t.upstream_name) {
        h ^= c;
        h *= 0x100000001b3ull;
    }
    uint64_t st = h ^ (seed * 0x9E3779B97F4A7C15ull);
    int64_t  n  = 1;
    for (int64_t d : t.shape) n *= d;
    std::vector<float> w(static_cast<size_t>(n));
    const float        scale = std::ldexp(1.0f, -23 - t.e);
    for (int64_t i = 0; i < n; ++i) {
        st += 0x9E3779B97F4A7C15ull;
        uint64_t z = st;
        z          = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z          = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        z ^= z >> 31;
        const int32_t u = int32_t(z >> 40);
        w[size_t(i)]    = float(u - 8388608) * scale;
    }
    return w;
}

std::vector<std::string> write_sonic_gguf(const std::string & path, const std::vector<sonic_tensor_spec> & table,
                                          const std::vector<std::string> & encoders, const std::string & arch,
                                          uint64_t seed) {
    std::vector<std::vector<float>> values;
    std::vector<bundle_tensor>      tensors;
    std::vector<std::string>        mismatches;
    values.reserve(table.size());
    for (const sonic_tensor_spec & t : table) {
        const bool decoder = t.gguf_name.rfind("decoder.", 0) == 0;
        bool       keep    = decoder;
        for (const std::string & e : encoders) {
            keep = keep || t.gguf_name.rfind((e == "g1" ? std::string("encoder") : e + "_encoder") + ".", 0) == 0;
        }
        if (!keep) continue;
        values.push_back(sonic_weight_values(t, seed));
        const std::string sha = sha256_hex(
            std::string_view(reinterpret_cast<const char *>(values.back().data()), values.back().size() * sizeof(float)));
        if (seed == 1 && sha != t.sha256) mismatches.push_back(t.upstream_name + ": " + sha + " != " + t.sha256);
        tensors.push_back({t.gguf_name, dtype::DTYPE_F32, t.shape, values.back().data()});
    }
    bundle_provenance prov{std::string(40, '0'), std::string(64, '0')};
    gguf_write_kv     a;
    a.key  = "sonic.architecture";
    a.type = gguf_type::GGUF_TYPE_STRING;
    a.str  = arch;
    bundle_write_component(path, "sonic", tensors, prov, {a});
    return mismatches;
}

} // namespace mb::test
