// GGUF v3 reader (memory-mapped, zero-copy, validates every byte) and writer
// (deterministic, atomic). The on-disk layout is documented in gguf.cpp.
#pragma once

#include "format/error.h"
#include "format/tensor.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mb {

// GGUF metadata value types (numeric values from the GGUF v3 specification)
enum class gguf_type : uint32_t {
    GGUF_TYPE_UINT8   = 0,
    GGUF_TYPE_INT8    = 1,
    GGUF_TYPE_UINT16  = 2,
    GGUF_TYPE_INT16   = 3,
    GGUF_TYPE_UINT32  = 4,
    GGUF_TYPE_INT32   = 5,
    GGUF_TYPE_FLOAT32 = 6,
    GGUF_TYPE_BOOL    = 7,
    GGUF_TYPE_STRING  = 8,
    GGUF_TYPE_ARRAY   = 9,
    GGUF_TYPE_UINT64  = 10,
    GGUF_TYPE_INT64   = 11,
    GGUF_TYPE_FLOAT64 = 12,
};

// one metadata entry as read (scalars widened; strings and arrays kept as views into the mapping)
struct gguf_kv {
    std::string_view key;           // UTF-8 key
    gguf_type        type;          // value type
    gguf_type        array_type;    // element type when type == GGUF_TYPE_ARRAY
    uint64_t         array_count;   // element count when type == GGUF_TYPE_ARRAY
    uint64_t         u;             // unsigned / bool value
    int64_t          i;             // signed value
    double           f;             // float value
    std::string_view str;           // string value
    uint64_t         offset;        // byte offset of the entry (its key length field) in the file
    std::string_view raw;           // the value's bytes as stored (arrays: after type and count)
};

// name of a value type for messages ("UINT32"; "unknown type" outside the enum)
const char * gguf_type_name(gguf_type t);

class gguf_file final : public tensor_source {
public:
    // maps and validates `path`; throws mb::error naming the file, the field and the byte offset:
    // io_error when it cannot be opened, is not a regular file or cannot be mapped, else invalid_format
    static std::unique_ptr<gguf_file> open(const std::string & path);
    ~gguf_file() override;

    // tensor_source: exact name first, then the bundle's compacted form of names >= 64 bytes
    const tensor_view *     find(std::string_view name) const override;
    std::string             origin() const override;
    std::optional<uint64_t> meta_uint(std::string_view key) const override;

    const std::vector<gguf_kv> &     kvs() const;
    const std::vector<tensor_view> & tensors() const;
    const gguf_kv *                  kv(std::string_view key) const;     // nullptr when absent
    uint32_t                         alignment() const;
    uint64_t                         data_offset() const;                // file offset of the data section
    uint64_t                         tensor_offset(const tensor_view & t) const;  // file offset of t's data
    uint64_t                         file_size() const;
    const std::string &              path() const;

    // typed getters: nullopt when absent, mb::error (invalid_format) when present with another type
    std::optional<std::string_view> get_string(std::string_view key) const;
    std::optional<uint32_t>         get_u32(std::string_view key) const;
    std::optional<uint64_t>         get_u64(std::string_view key) const;

    struct impl;
private:
    explicit gguf_file(std::unique_ptr<impl> p);
    std::unique_ptr<impl> p_;
};

// what the writer takes: metadata in write order, tensors in write order
struct gguf_write_kv {
    std::string key;
    gguf_type   type;           // UINT32, UINT64, STRING, INT32, FLOAT32, BOOL (scalar types only)
    uint64_t    u = 0;
    int64_t     i = 0;
    double      f = 0.0;
    std::string str;
};

struct gguf_write_tensor {
    std::string          name;
    dtype                type;
    std::vector<int64_t> ne;    // ggml order (reversed PyTorch shape)
    const void *         data;  // dtype_row_bytes(type, ne[0]) per row, borrowed until write returns
};

// writes a GGUF v3 file deterministically (same input → same bytes) and atomically
// (temp file + fsync + rename); throws mb::error: invalid_argument for bad inputs, io_error when writing fails
void gguf_write(const std::string & path, const std::vector<gguf_write_kv> & kvs,
                const std::vector<gguf_write_tensor> & tensors, uint32_t alignment = 32);

} // namespace mb
