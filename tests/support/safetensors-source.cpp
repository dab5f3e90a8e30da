// safetensors layout:
//   u64 little-endian N: length of the JSON header
//   N bytes of JSON: {name: {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, ...,
//                     "__metadata__": {string: string}} padded with spaces
//   the data block; offsets are relative to its start, C order, little-endian
#include "support/safetensors-source.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <stdexcept>

namespace mb::test {

namespace {

[[noreturn]] void fail(const std::string & path, const std::string & msg) {
    throw std::runtime_error(path + ": " + msg);
}

size_t dtype_bytes(const std::string & dt) {
    if (dt == "F64" || dt == "I64" || dt == "U64") return 8;
    if (dt == "F32" || dt == "I32" || dt == "U32") return 4;
    if (dt == "F16" || dt == "BF16" || dt == "I16" || dt == "U16") return 2;
    if (dt == "BOOL" || dt == "U8" || dt == "I8") return 1;
    return 0;
}

} // namespace

safetensors_source::safetensors_source(const std::string & path, const std::string & strip_prefix,
                                       std::map<std::string, uint64_t> meta)
    : path_(path) {
    for (auto & kv : meta) meta_.emplace(kv.first, kv.second);

    std::ifstream f(path, std::ios::binary);
    if (!f) fail(path, "cannot open");
    f.seekg(0, std::ios::end);
    const std::streamoff fsize = f.tellg();
    f.seekg(0);
    if (fsize < 8) fail(path, "too small for a safetensors header");
    uint8_t lenb[8];
    f.read(reinterpret_cast<char *>(lenb), 8);
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; --i) hlen = (hlen << 8) | lenb[i];
    if (hlen > uint64_t(fsize) - 8 || hlen > (uint64_t(100) << 20)) fail(path, "header length exceeds the file");
    std::string header(size_t(hlen), '\0');
    f.read(header.data(), std::streamsize(hlen));
    const uint64_t data_size = uint64_t(fsize) - 8 - hlen;
    std::vector<uint8_t> data(static_cast<size_t>(data_size));
    if (data_size) f.read(reinterpret_cast<char *>(data.data()), std::streamsize(data_size));
    if (!f) fail(path, "read error");

    nlohmann::json j;
    try {
        j = nlohmann::json::parse(header);
    } catch (const std::exception & e) {
        fail(path, std::string("bad JSON header: ") + e.what());
    }
    if (!j.is_object()) fail(path, "JSON header is not an object");

    struct span {
        uint64_t begin, end;
        std::string name;
    };
    std::vector<span> spans;
    for (auto it = j.begin(); it != j.end(); ++it) {
        const std::string & key = it.key();
        const auto & v = it.value();
        if (key == "__metadata__") {
            if (!v.is_object()) fail(path, "__metadata__ is not an object");
            for (auto m = v.begin(); m != v.end(); ++m) {
                if (!m.value().is_string()) fail(path, "__metadata__ value '" + m.key() + "' is not a string");
                file_meta_[m.key()] = m.value().get<std::string>();
            }
            continue;
        }
        const std::string what = "tensor '" + key + "'";
        if (!v.is_object() || !v.contains("dtype") || !v.contains("shape") || !v.contains("data_offsets") ||
            v.size() != 3) {
            fail(path, what + ": needs exactly dtype, shape and data_offsets");
        }
        if (!v["dtype"].is_string() || !v["shape"].is_array() || !v["data_offsets"].is_array() ||
            v["data_offsets"].size() != 2) {
            fail(path, what + ": malformed entry");
        }
        auto e = std::make_unique<entry>();
        e->dtype = v["dtype"].get<std::string>();
        const size_t esz = dtype_bytes(e->dtype);
        if (!esz) fail(path, what + ": unknown dtype " + e->dtype);
        if (v["shape"].size() > 8) fail(path, what + ": too many dimensions");
        uint64_t n = 1;
        for (const auto & d : v["shape"]) {
            if (!d.is_number_unsigned()) fail(path, what + ": bad dimension");
            const uint64_t dv = d.get<uint64_t>();
            if (dv != 0 && n > data_size / dv) fail(path, what + ": shape exceeds the data");
            n *= dv;
            e->shape.push_back(int64_t(dv));
        }
        const auto & off = v["data_offsets"];
        if (!off[0].is_number_unsigned() || !off[1].is_number_unsigned()) fail(path, what + ": bad data_offsets");
        const uint64_t b = off[0].get<uint64_t>(), en = off[1].get<uint64_t>();
        if (b > en || en > data_size) fail(path, what + ": data_offsets outside the data block");
        if (en - b != n * esz) fail(path, what + ": byte count does not match dtype and shape");
        e->bytes.assign(data.begin() + ptrdiff_t(b), data.begin() + ptrdiff_t(en));
        spans.push_back({b, en, key});

        std::string name = key;
        if (!strip_prefix.empty() && name.compare(0, strip_prefix.size(), strip_prefix) == 0) {
            name = name.substr(strip_prefix.size());
        }
        if (entries_.count(name)) fail(path, what + ": duplicate name after stripping '" + strip_prefix + "'");
        if (e->dtype == "F32") {
            if (e->shape.size() > 4) fail(path, what + ": F32 tensor with more than 4 dimensions");
            e->f32.resize(size_t(n));
            if (n) std::memcpy(e->f32.data(), e->bytes.data(), size_t(n) * 4);
        }
        entries_.emplace(name, std::move(e));
    }
    // tensors may not overlap
    std::sort(spans.begin(), spans.end(), [](const span & a, const span & b) { return a.begin < b.begin; });
    for (size_t i = 1; i < spans.size(); ++i) {
        if (spans[i].begin < spans[i - 1].end) fail(path, "tensors '" + spans[i - 1].name + "' and '" + spans[i].name + "' overlap");
    }
    for (const auto & s : spans) {
        std::string name = s.name;
        if (!strip_prefix.empty() && name.compare(0, strip_prefix.size(), strip_prefix) == 0) {
            name = name.substr(strip_prefix.size());
        }
        order_.push_back(name);
    }
    // views point into the map's stable keys and the aligned copies
    for (auto & kv : entries_) {
        entry & e = *kv.second;
        if (e.dtype != "F32") continue;
        tensor_view & t = e.view;
        t.name   = kv.first;
        t.type   = dtype::DTYPE_F32;
        t.n_dims = e.shape.empty() ? 1 : uint32_t(e.shape.size());
        for (int i = 0; i < 4; ++i) t.ne[i] = 1;
        for (size_t i = 0; i < e.shape.size(); ++i) t.ne[i] = e.shape[e.shape.size() - 1 - i];
        t.data    = e.f32.data();
        t.n_bytes = uint64_t(e.f32.size()) * 4;
    }
}

const tensor_view * safetensors_source::find(std::string_view name) const {
    auto it = entries_.find(name);
    if (it == entries_.end() || it->second->dtype != "F32") return nullptr;
    return &it->second->view;
}

std::optional<uint64_t> safetensors_source::meta_uint(std::string_view key) const {
    auto it = meta_.find(key);
    if (it == meta_.end()) return std::nullopt;
    return it->second;
}

std::string safetensors_source::dtype_of(const std::string & name) const {
    auto it = entries_.find(name);
    if (it == entries_.end()) fail(path_, "no tensor '" + name + "'");
    return it->second->dtype;
}

std::vector<int64_t> safetensors_source::shape_of(const std::string & name) const {
    auto it = entries_.find(name);
    if (it == entries_.end()) fail(path_, "no tensor '" + name + "'");
    return it->second->shape;
}

std::vector<double> safetensors_source::f64(const std::string & name) const {
    auto it = entries_.find(name);
    if (it == entries_.end()) fail(path_, "no tensor '" + name + "'");
    const entry & e = *it->second;
    std::vector<double> out;
    if (e.dtype == "F64") {
        out.resize(e.bytes.size() / 8);
        if (!out.empty()) std::memcpy(out.data(), e.bytes.data(), e.bytes.size());
    } else if (e.dtype == "F32") {
        out.assign(e.f32.begin(), e.f32.end());
    } else {
        fail(path_, "tensor '" + name + "' is " + e.dtype + ", not F32/F64");
    }
    return out;
}

} // namespace mb::test
