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
    DTYPE_F32  = 0,
    DTYPE_Q8_0 = 8,     // ggml block_q8_0: 32 int8 values after one F16 scale (34 bytes), along ne[0]
    DTYPE_I32  = 26,
    DTYPE_BF16 = 30,    // bfloat16: the top 16 bits of an F32
};

constexpr int64_t k_q8_0_block       = 32;   // values per Q8_0 block
constexpr int64_t k_q8_0_block_bytes = 34;   // F16 scale + 32 int8

// "F32", "Q8_0", "I32", "BF16"; nullptr for a value that is none of them
const char * dtype_name(dtype t);

// bytes of one row of n values (n a whole number of blocks for Q8_0)
inline uint64_t dtype_row_bytes(dtype t, uint64_t n) {
    switch (t) {
        case dtype::DTYPE_BF16: return n * 2;
        case dtype::DTYPE_Q8_0: return n / k_q8_0_block * k_q8_0_block_bytes;
        default: return n * 4;
    }
}

struct tensor_view {
    std::string_view name;          // name as stored in the file (possibly compacted)
    dtype            type;          // element type
    uint32_t         n_dims;        // 1..4
    int64_t          ne[4];         // ggml order: ne[0] is the fastest axis (= last PyTorch axis); unused axes are 1
    const void *     data;          // borrowed; aligned to at least 4 bytes
    uint64_t         n_bytes;       // dtype_row_bytes(type, ne[0]) * ne[1] * ne[2] * ne[3]

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

// the weight matrix of a linear or conv layer: F32, BF16 or Q8_0 whatever its shape
// (a bundle made with --dtype stores these reduced; every other tensor stays F32)
const tensor_view & require_any_matrix(const tensor_source & src, std::string_view name);

// require_any_matrix with require_f32's shape check
const tensor_view & require_matrix(const tensor_source & src, std::string_view name,
                                   std::initializer_list<int64_t> torch_shape);

// PyTorch shape of a view as text, e.g. "[512, 1, 16]"
std::string torch_shape_string(const tensor_view & t);

} // namespace mb
