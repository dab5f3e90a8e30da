// tensor views shared by every layer: a borrowed, typed, shaped window into
// mapped file memory (or any buffer that outlives the view)
#pragma once

#include "format/error.h"

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

namespace mb {

// numeric values are the GGUF type ids used by the published bundle
enum class dtype : uint32_t {
    DTYPE_F32 = 0,
    DTYPE_I32 = 26,
};

struct tensor_view {
    std::string_view name;          // name as stored in the file (possibly compacted)
    dtype            type;          // element type
    uint32_t         n_dims;        // 1..4
    int64_t          ne[4];         // ggml order: ne[0] is the fastest axis (= last PyTorch axis); unused axes are 1
    const void *     data;          // borrowed; aligned to at least 4 bytes
    uint64_t         n_bytes;       // n_elements * element size

    int64_t n_elements() const {
        return ne[0] * ne[1] * ne[2] * ne[3];
    }
    const float * f32() const {
        return static_cast<const float *>(data);
    }
    const int32_t * i32() const {
        return static_cast<const int32_t *>(data);
    }
};

// a read-only set of named tensors (one GGUF component, a test's synthetic weights, ...)
class tensor_source {
public:
    virtual ~tensor_source() = default;
    // lookup by upstream (uncompacted) state-dict name; nullptr when absent
    virtual const tensor_view * find(std::string_view name) const = 0;
    // where the tensors come from, for error messages
    virtual std::string origin() const = 0;
    // an unsigned integer metadata value (GGUF UINT32/UINT64), nullopt when absent;
    // networks read what tensor shapes cannot tell (head counts, dilation growth) here
    virtual std::optional<uint64_t> meta_uint(std::string_view key) const {
        (void) key;
        return std::nullopt;
    }
};

// the tensor `name` with PyTorch shape `torch_shape` (outermost first) and type F32;
// throws mb::error (incompatible_model) naming the tensor, the expected and the actual shape
const tensor_view & require_f32(const tensor_source & src, std::string_view name,
                                std::initializer_list<int64_t> torch_shape);

// the tensor `name` with type F32 whatever its shape (callers that derive hyperparameters)
const tensor_view & require_any_f32(const tensor_source & src, std::string_view name);

// PyTorch shape of a view as text, e.g. "[512, 1, 16]"
std::string torch_shape_string(const tensor_view & t);

} // namespace mb
