// test-only tensor_source over a safetensors file (the fixtures' weights), so
// networks can be checked against upstream before the GGUF bundle exists
#pragma once

#include "format/tensor.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace mb::test {

class safetensors_source : public tensor_source {
public:
    // reads and validates `path`; keys starting with `strip_prefix` are exposed without it
    // (e.g. "backbone_net."), other keys unchanged; `meta` answers meta_uint().
    // throws std::runtime_error on any defect
    safetensors_source(const std::string & path, const std::string & strip_prefix = "",
                       std::map<std::string, uint64_t> meta = {});

    // F32 tensors only (others are reachable through f64() / dtype_of())
    const tensor_view * find(std::string_view name) const override;
    std::string origin() const override { return path_; }
    std::optional<uint64_t> meta_uint(std::string_view key) const override;

    // every tensor name (after stripping) in file order
    const std::vector<std::string> & names() const { return order_; }
    // the safetensors dtype string of `name` ("F32", "F64", "BOOL", ...); throws when absent
    std::string dtype_of(const std::string & name) const;
    // the values of an F32 or F64 tensor converted to double; throws otherwise
    std::vector<double> f64(const std::string & name) const;
    // PyTorch shape of `name`; throws when absent
    std::vector<int64_t> shape_of(const std::string & name) const;
    // the __metadata__ strings
    const std::map<std::string, std::string> & file_metadata() const { return file_meta_; }
    void set_meta_uint(const std::string & key, uint64_t v) { meta_[key] = v; }

private:
    struct entry {
        std::string          dtype;
        std::vector<int64_t> shape;
        std::vector<uint8_t> bytes;       // raw little-endian data
        std::vector<float>   f32;         // aligned copy for F32
        tensor_view          view{};
    };
    std::string                                          path_;
    std::map<std::string, std::unique_ptr<entry>, std::less<>> entries_;
    std::vector<std::string>                             order_;
    std::map<std::string, std::string>                   file_meta_;
    std::map<std::string, uint64_t, std::less<>>         meta_;
};

} // namespace mb::test
