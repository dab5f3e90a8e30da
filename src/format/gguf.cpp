// GGUF v3 reader and writer.
//
// On-disk layout (all integers little-endian):
//   u32   magic          "GGUF" (0x46554747)
//   u32   version        3
//   u64   n_tensors
//   u64   n_kv
//   n_kv times:
//     str   key          u64 byte length + UTF-8 bytes (no terminator)
//     u32   value type   gguf_type
//     ...   value        scalar: its width; STRING: str; ARRAY: u32 element type,
//                        u64 count, then the elements (arrays may nest)
//   n_tensors times:
//     str   name         < 64 bytes (GGML_MAX_NAME with its NUL)
//     u32   n_dims       1..4
//     u64   ne[n_dims]   ggml order: ne[0] is the fastest axis
//     u32   type         0 = F32, 26 = I32, 30 = BF16 (2 bytes a value), 8 = Q8_0 (blocks of
//                        32 values along ne[0]: F16 scale + 32 int8, 34 bytes; ne[0] % 32 == 0)
//     u64   offset       from the start of the data section; a multiple of the alignment
//   zero padding up to a multiple of general.alignment (UINT32, default 32)
//   data section: each tensor at its offset, zero padding after each tensor
//   (the last one included) up to the alignment
//
// The reader maps the file read-only and validates every field before using it;
// no allocation is ever sized from a count that was not first bounded by the
// bytes left in the file. Tensor data is returned as views into the mapping.

#include "format/gguf.h"
#include "format/regular-file.h"

#include "format/tensor-names.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <unordered_map>

namespace mb {

namespace {

constexpr uint32_t k_magic             = 0x46554747;  // "GGUF" read as u32 LE
constexpr uint32_t k_version           = 3;
constexpr uint32_t k_default_alignment = 32;
constexpr uint32_t k_max_array_depth   = 4;           // nested arrays deeper than this are rejected
constexpr uint64_t k_max_key_len       = 65535;
constexpr uint64_t k_min_kv_bytes      = 8 + 1 + 4 + 1;            // key len, 1-byte key, type, UINT8
constexpr uint64_t k_min_tensor_bytes  = 8 + 1 + 4 + 8 + 4 + 8;    // name len, name, n_dims, ne[0], type, offset

size_t scalar_size(gguf_type t) {
    switch (t) {
        case gguf_type::GGUF_TYPE_UINT8:
        case gguf_type::GGUF_TYPE_INT8:
        case gguf_type::GGUF_TYPE_BOOL:    return 1;
        case gguf_type::GGUF_TYPE_UINT16:
        case gguf_type::GGUF_TYPE_INT16:   return 2;
        case gguf_type::GGUF_TYPE_UINT32:
        case gguf_type::GGUF_TYPE_INT32:
        case gguf_type::GGUF_TYPE_FLOAT32: return 4;
        case gguf_type::GGUF_TYPE_UINT64:
        case gguf_type::GGUF_TYPE_INT64:
        case gguf_type::GGUF_TYPE_FLOAT64: return 8;
        default:                           return 0;   // STRING, ARRAY, unknown
    }
}

bool valid_type(uint32_t t) {
    return t <= static_cast<uint32_t>(gguf_type::GGUF_TYPE_FLOAT64);
}

// strict UTF-8: no overlong forms, no surrogates, nothing above U+10FFFF
bool valid_utf8(std::string_view s) {
    const auto * p   = reinterpret_cast<const unsigned char *>(s.data());
    const auto * end = p + s.size();
    while (p < end) {
        unsigned char c = *p;
        if (c < 0x80) { ++p; continue; }
        int      n;
        uint32_t cp;
        if      ((c & 0xE0) == 0xC0) { n = 1; cp = c & 0x1F; }
        else if ((c & 0xF0) == 0xE0) { n = 2; cp = c & 0x0F; }
        else if ((c & 0xF8) == 0xF0) { n = 3; cp = c & 0x07; }
        else return false;
        if (end - p <= n) return false;
        for (int k = 1; k <= n; ++k) {
            if ((p[k] & 0xC0) != 0x80) return false;
            cp = (cp << 6) | (p[k] & 0x3F);
        }
        if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000)) return false;
        if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
        p += n + 1;
    }
    return true;
}

std::string quoted(std::string_view s) {
    // keep messages printable whatever the file holds
    std::string out = "'";
    for (unsigned char c : s.substr(0, 80)) {
        if (c >= 0x20 && c < 0x7F) {
            out += static_cast<char>(c);
        } else {
            static const char hex[] = "0123456789abcdef";
            out += "\\x";
            out += hex[c >> 4];
            out += hex[c & 15];
        }
    }
    if (s.size() > 80) out += "...";
    return out + "'";
}

// a bounds-checked cursor over the mapped bytes
struct cursor {
    const uint8_t *     base;
    uint64_t            size;
    uint64_t            pos = 0;
    const std::string & path;

    [[noreturn]] void fail(const std::string & field, uint64_t at, const std::string & msg) const {
        throw error(status::invalid_format, path + ": " + field + " at offset " + std::to_string(at) + ": " + msg);
    }
    uint64_t left() const { return size - pos; }
    void need(uint64_t n, const std::string & field) const {
        if (n > left()) {
            fail(field, pos, "truncated (needs " + std::to_string(n) + " bytes, " +
                             std::to_string(left()) + " left in a " + std::to_string(size) + "-byte file)");
        }
    }
    const uint8_t * take(uint64_t n, const std::string & field) {
        need(n, field);
        const uint8_t * p = base + pos;
        pos += n;
        return p;
    }
    uint32_t u32(const std::string & field) {
        uint32_t v;
        std::memcpy(&v, take(4, field), 4);
        return v;
    }
    uint64_t u64(const std::string & field) {
        uint64_t v;
        std::memcpy(&v, take(8, field), 8);
        return v;
    }
    // a length-prefixed UTF-8 string whose length is at most max_len
    std::string_view str(const std::string & field, uint64_t max_len) {
        uint64_t at  = pos;
        uint64_t len = u64(field + " length");
        if (len > left()) {
            fail(field + " length", at, "string length " + std::to_string(len) + " exceeds the " +
                                        std::to_string(left()) + " bytes left in the file");
        }
        if (len > max_len) {
            fail(field + " length", at, "string length " + std::to_string(len) + " exceeds the limit of " +
                                        std::to_string(max_len) + " bytes");
        }
        std::string_view s(reinterpret_cast<const char *>(take(len, field)), len);
        if (!valid_utf8(s)) fail(field, at + 8, "invalid UTF-8 in " + quoted(s));
        return s;
    }
};

} // namespace

const char * gguf_type_name(gguf_type t) {
    switch (t) {
        case gguf_type::GGUF_TYPE_UINT8:   return "UINT8";
        case gguf_type::GGUF_TYPE_INT8:    return "INT8";
        case gguf_type::GGUF_TYPE_UINT16:  return "UINT16";
        case gguf_type::GGUF_TYPE_INT16:   return "INT16";
        case gguf_type::GGUF_TYPE_UINT32:  return "UINT32";
        case gguf_type::GGUF_TYPE_INT32:   return "INT32";
        case gguf_type::GGUF_TYPE_FLOAT32: return "FLOAT32";
        case gguf_type::GGUF_TYPE_BOOL:    return "BOOL";
        case gguf_type::GGUF_TYPE_STRING:  return "STRING";
        case gguf_type::GGUF_TYPE_ARRAY:   return "ARRAY";
        case gguf_type::GGUF_TYPE_UINT64:  return "UINT64";
        case gguf_type::GGUF_TYPE_INT64:   return "INT64";
        case gguf_type::GGUF_TYPE_FLOAT64: return "FLOAT64";
    }
    return "unknown type";
}

struct gguf_file::impl {
    std::string                                  path;
    const uint8_t *                              map  = nullptr;
    uint64_t                                     size = 0;
    uint32_t                                     alignment = k_default_alignment;
    uint64_t                                     data_offset = 0;
    std::vector<gguf_kv>                         kvs;
    std::vector<tensor_view>                     tensors;
    std::unordered_map<std::string_view, size_t> kv_index;
    std::unordered_map<std::string_view, size_t> tensor_index;
    std::vector<std::pair<uint64_t, uint64_t>>   rel_offsets;  // while parsing: data offset, where it was read

    ~impl() {
        if (map) munmap(const_cast<uint8_t *>(map), size);
    }

    void parse();
    void parse_value(cursor & c, gguf_type type, const std::string & field, uint32_t depth, gguf_kv * out);
};

// reads one value of `type` at the cursor; fills `out` for top-level entries
void gguf_file::impl::parse_value(cursor & c, gguf_type type, const std::string & field, uint32_t depth,
                                  gguf_kv * out) {
    const uint64_t at = c.pos;
    switch (type) {
        case gguf_type::GGUF_TYPE_STRING: {
            std::string_view s = c.str(field, std::numeric_limits<uint64_t>::max());
            if (out) {
                out->str = s;
                out->raw = s;
            }
            return;
        }
        case gguf_type::GGUF_TYPE_ARRAY: {
            if (depth >= k_max_array_depth) {
                c.fail(field, at, "arrays nested deeper than " + std::to_string(k_max_array_depth) + " levels");
            }
            uint32_t et = c.u32(field + " element type");
            if (!valid_type(et)) c.fail(field + " element type", at, "unknown value type " + std::to_string(et));
            uint64_t count   = c.u64(field + " count");
            auto     etype   = static_cast<gguf_type>(et);
            size_t   esize   = scalar_size(etype);
            uint64_t min_len = esize ? esize : (etype == gguf_type::GGUF_TYPE_STRING ? 8 : 12);
            if (count > c.left() / min_len) {
                c.fail(field + " count", at + 4, "array of " + std::to_string(count) + " " + gguf_type_name(etype) +
                                                 " elements cannot fit in the " + std::to_string(c.left()) +
                                                 " bytes left");
            }
            uint64_t start = c.pos;
            if (esize) {
                const uint8_t * p = c.take(count * esize, field);
                if (etype == gguf_type::GGUF_TYPE_BOOL) {
                    for (uint64_t k = 0; k < count; ++k) {
                        if (p[k] > 1) c.fail(field, start + k, "BOOL element is " + std::to_string(p[k]));
                    }
                }
            } else {
                // count is bounded by the bytes left, and each element consumes at least min_len of them
                for (uint64_t k = 0; k < count; ++k) {
                    parse_value(c, etype, field + "[" + std::to_string(k) + "]", depth + 1, nullptr);
                }
            }
            if (out) {
                out->array_type  = etype;
                out->array_count = count;
                out->raw = std::string_view(reinterpret_cast<const char *>(c.base + start), c.pos - start);
            }
            return;
        }
        default: break;
    }
    size_t n = scalar_size(type);
    if (!n) c.fail(field, at, "unknown value type " + std::to_string(static_cast<uint32_t>(type)));
    const uint8_t * p = c.take(n, field);
    if (type == gguf_type::GGUF_TYPE_BOOL && *p > 1) c.fail(field, at, "BOOL value is " + std::to_string(*p));
    if (!out) return;
    out->raw = std::string_view(reinterpret_cast<const char *>(p), n);
    switch (type) {
        case gguf_type::GGUF_TYPE_UINT8:  out->u = p[0]; break;
        case gguf_type::GGUF_TYPE_BOOL:   out->u = p[0]; break;
        case gguf_type::GGUF_TYPE_INT8:   out->i = static_cast<int8_t>(p[0]); break;
        case gguf_type::GGUF_TYPE_UINT16: { uint16_t v; std::memcpy(&v, p, 2); out->u = v; break; }
        case gguf_type::GGUF_TYPE_INT16:  { int16_t  v; std::memcpy(&v, p, 2); out->i = v; break; }
        case gguf_type::GGUF_TYPE_UINT32: { uint32_t v; std::memcpy(&v, p, 4); out->u = v; break; }
        case gguf_type::GGUF_TYPE_INT32:  { int32_t  v; std::memcpy(&v, p, 4); out->i = v; break; }
        case gguf_type::GGUF_TYPE_UINT64: { uint64_t v; std::memcpy(&v, p, 8); out->u = v; break; }
        case gguf_type::GGUF_TYPE_INT64:  { int64_t  v; std::memcpy(&v, p, 8); out->i = v; break; }
        case gguf_type::GGUF_TYPE_FLOAT32:{ float    v; std::memcpy(&v, p, 4); out->f = v; break; }
        case gguf_type::GGUF_TYPE_FLOAT64:{ double   v; std::memcpy(&v, p, 8); out->f = v; break; }
        default: break;
    }
}

void gguf_file::impl::parse() {
    cursor c{map, size, 0, path};

    // header
    uint32_t magic = c.u32("magic");
    if (magic != k_magic) {
        c.fail("magic", 0, "not a GGUF file (magic " + quoted(std::string_view(reinterpret_cast<const char *>(map), 4)) +
                           ", expected 'GGUF')");
    }
    uint32_t version = c.u32("version");
    if (version != k_version) {
        std::string why = "unsupported GGUF version " + std::to_string(version) + " (only 3 is supported)";
        if (version == 0x03000000) why = "byte-swapped version 3: big-endian files are not supported";
        c.fail("version", 4, why);
    }
    uint64_t n_tensors = c.u64("tensor count");
    uint64_t n_kv      = c.u64("kv count");
    if (n_kv > c.left() / k_min_kv_bytes) {
        c.fail("kv count", 16, std::to_string(n_kv) + " entries cannot fit in the " + std::to_string(c.left()) +
                               " bytes left");
    }
    if (n_tensors > (c.left() - n_kv * k_min_kv_bytes) / k_min_tensor_bytes) {
        c.fail("tensor count", 8, std::to_string(n_tensors) + " tensors cannot fit in the " +
                                  std::to_string(c.left()) + " bytes left");
    }

    // metadata
    for (uint64_t k = 0; k < n_kv; ++k) {
        gguf_kv kv{};
        kv.offset = c.pos;
        std::string field = "kv[" + std::to_string(k) + "] key";
        kv.key = c.str(field, k_max_key_len);
        if (kv.key.empty()) c.fail(field, kv.offset, "empty key");
        if (kv.key.find('\0') != std::string_view::npos) c.fail(field, kv.offset, "key contains a NUL byte");
        std::string vfield = "kv " + quoted(kv.key);
        if (kv_index.count(kv.key)) c.fail(vfield, kv.offset, "duplicate key");
        uint64_t type_at = c.pos;
        uint32_t t       = c.u32(vfield + " type");
        if (!valid_type(t)) c.fail(vfield + " type", type_at, "unknown value type " + std::to_string(t));
        kv.type = static_cast<gguf_type>(t);
        parse_value(c, kv.type, vfield, 0, &kv);
        kv_index.emplace(kv.key, kvs.size());
        kvs.push_back(kv);
    }

    // alignment
    if (auto it = kv_index.find("general.alignment"); it != kv_index.end()) {
        const gguf_kv & kv = kvs[it->second];
        if (kv.type != gguf_type::GGUF_TYPE_UINT32) {
            c.fail("kv 'general.alignment'", kv.offset,
                   std::string("has type ") + gguf_type_name(kv.type) + ", expected UINT32");
        }
        if (kv.u == 0 || (kv.u & (kv.u - 1)) != 0) {
            c.fail("kv 'general.alignment'", kv.offset,
                   "alignment " + std::to_string(kv.u) + " is not a power of two");
        }
        alignment = static_cast<uint32_t>(kv.u);
    }

    // tensor infos
    for (uint64_t k = 0; k < n_tensors; ++k) {
        tensor_view t{};
        uint64_t    at    = c.pos;
        std::string field = "tensor[" + std::to_string(k) + "] name";
        t.name = c.str(field, std::numeric_limits<uint64_t>::max());
        if (t.name.empty()) c.fail(field, at, "empty tensor name");
        if (t.name.size() >= k_max_tensor_name) {
            c.fail(field, at, "tensor name " + quoted(t.name) + " is " + std::to_string(t.name.size()) +
                              " bytes (at most " + std::to_string(k_max_tensor_name - 1) + ")");
        }
        if (t.name.find('\0') != std::string_view::npos) c.fail(field, at, "tensor name contains a NUL byte");
        std::string tf = "tensor " + quoted(t.name);
        if (tensor_index.count(t.name)) c.fail(tf, at, "duplicate tensor name");

        uint64_t dims_at = c.pos;
        t.n_dims = c.u32(tf + " n_dims");
        if (t.n_dims < 1 || t.n_dims > 4) {
            c.fail(tf + " n_dims", dims_at, "n_dims is " + std::to_string(t.n_dims) + " (must be 1..4)");
        }
        uint64_t n_el = 1;
        for (int d = 0; d < 4; ++d) t.ne[d] = 1;
        for (uint32_t d = 0; d < t.n_dims; ++d) {
            uint64_t ne_at = c.pos;
            uint64_t ne    = c.u64(tf + " ne[" + std::to_string(d) + "]");
            if (ne == 0 || ne > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
                c.fail(tf + " ne[" + std::to_string(d) + "]", ne_at, "dimension " + std::to_string(ne) +
                                                                      " out of range (must be 1..2^63-1)");
            }
            // keep n_el * 4 representable: that is the byte count
            if (n_el > (std::numeric_limits<uint64_t>::max() / 4) / ne ||
                n_el * ne > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
                c.fail(tf + " ne[" + std::to_string(d) + "]", ne_at, "element count overflows");
            }
            n_el *= ne;
            t.ne[d] = static_cast<int64_t>(ne);
        }
        uint64_t type_at = c.pos;
        uint32_t type    = c.u32(tf + " type");
        if (!dtype_name(static_cast<dtype>(type))) {
            c.fail(tf + " type", type_at, "unsupported tensor type " + std::to_string(type) +
                                          " (only F32 = 0, Q8_0 = 8, I32 = 26 and BF16 = 30 are accepted)");
        }
        t.type = static_cast<dtype>(type);
        if (t.type == dtype::DTYPE_Q8_0 && t.ne[0] % k_q8_0_block != 0) {
            c.fail(tf + " ne[0]", dims_at + 4, "Q8_0 rows of " + std::to_string(t.ne[0]) +
                                               " values are not whole 32-value blocks");
        }
        t.n_bytes = dtype_row_bytes(t.type, uint64_t(t.ne[0])) * (n_el / uint64_t(t.ne[0]));
        uint64_t off_at = c.pos;
        uint64_t off    = c.u64(tf + " offset");
        if (off % alignment != 0) {
            c.fail(tf + " offset", off_at, "data offset " + std::to_string(off) + " is not a multiple of the alignment " +
                                           std::to_string(alignment));
        }
        // the data pointer is set once the data section is known
        tensor_index.emplace(t.name, tensors.size());
        tensors.push_back(t);
        rel_offsets.push_back({off, off_at});
    }

    // data section
    uint64_t pad = (alignment - c.pos % alignment) % alignment;
    data_offset  = c.pos + pad;
    if (!tensors.empty() && data_offset > size) {
        c.fail("data section", c.pos, "starts at " + std::to_string(data_offset) + ", past the end of the " +
                                      std::to_string(size) + "-byte file");
    }
    uint64_t data_size = data_offset <= size ? size - data_offset : 0;
    for (size_t k = 0; k < tensors.size(); ++k) {
        tensor_view & t   = tensors[k];
        uint64_t      off = rel_offsets[k].first;
        std::string   tf  = "tensor " + quoted(t.name) + " offset";
        if (off > data_size || t.n_bytes > data_size - off) {
            c.fail(tf, rel_offsets[k].second, "data [" + std::to_string(off) + ", +" + std::to_string(t.n_bytes) +
                                              ") lies outside the " + std::to_string(data_size) +
                                              "-byte data section");
        }
        if ((data_offset + off) % 4 != 0) {
            c.fail(tf, rel_offsets[k].second, "data at file offset " + std::to_string(data_offset + off) +
                                              " is not 4-byte aligned");
        }
        t.data = map + data_offset + off;
    }
    std::vector<size_t> order(tensors.size());
    for (size_t k = 0; k < order.size(); ++k) order[k] = k;
    std::sort(order.begin(), order.end(),
              [&](size_t a, size_t b) { return rel_offsets[a].first < rel_offsets[b].first; });
    for (size_t k = 1; k < order.size(); ++k) {
        size_t a = order[k - 1];
        size_t b = order[k];
        if (rel_offsets[a].first + tensors[a].n_bytes > rel_offsets[b].first) {
            c.fail("tensor " + quoted(tensors[b].name) + " offset", rel_offsets[b].second,
                   "data overlaps tensor " + quoted(tensors[a].name));
        }
    }
    rel_offsets.clear();
    rel_offsets.shrink_to_fit();
}

std::unique_ptr<gguf_file> gguf_file::open(const std::string & path) {
    auto p  = std::make_unique<impl>();
    p->path = path;
    int fd = open_regular_file(path, p->size);   // io_error unless a regular file; a FIFO does not block
    if (p->size < 24) {
        ::close(fd);
        throw error(status::invalid_format, path + ": header at offset 0: truncated (" +
                                                std::to_string(p->size) + "-byte file, the GGUF header alone is 24 bytes)");
    }
    void * m = mmap(nullptr, p->size, PROT_READ, MAP_PRIVATE, fd, 0);
    int    e = errno;
    ::close(fd);
    if (m == MAP_FAILED) throw error(status::io_error, path + ": cannot map: " + std::strerror(e));
    p->map = static_cast<const uint8_t *>(m);
    p->parse();
    return std::unique_ptr<gguf_file>(new gguf_file(std::move(p)));
}

gguf_file::gguf_file(std::unique_ptr<impl> p) : p_(std::move(p)) {}
gguf_file::~gguf_file() = default;

const tensor_view * gguf_file::find(std::string_view name) const {
    auto it = p_->tensor_index.find(name);
    if (it != p_->tensor_index.end()) return &p_->tensors[it->second];
    if (name.size() < k_max_tensor_name) return nullptr;
    std::string c = compact_tensor_name(name);
    it = p_->tensor_index.find(c);
    return it == p_->tensor_index.end() ? nullptr : &p_->tensors[it->second];
}

std::string gguf_file::origin() const {
    return p_->path;
}

std::optional<uint64_t> gguf_file::meta_uint(std::string_view key) const {
    const gguf_kv * kv = this->kv(key);
    if (!kv) return std::nullopt;
    if (kv->type != gguf_type::GGUF_TYPE_UINT32 && kv->type != gguf_type::GGUF_TYPE_UINT64) {
        throw error(status::invalid_format, p_->path + ": kv '" + std::string(key) + "' at offset " +
                                                std::to_string(kv->offset) + ": has type " + gguf_type_name(kv->type) + ", expected UINT32 or UINT64");
    }
    return kv->u;
}

const std::vector<gguf_kv> & gguf_file::kvs() const {
    return p_->kvs;
}

const std::vector<tensor_view> & gguf_file::tensors() const {
    return p_->tensors;
}

const gguf_kv * gguf_file::kv(std::string_view key) const {
    auto it = p_->kv_index.find(key);
    return it == p_->kv_index.end() ? nullptr : &p_->kvs[it->second];
}

uint32_t gguf_file::alignment() const {
    return p_->alignment;
}

uint64_t gguf_file::data_offset() const {
    return p_->data_offset;
}

uint64_t gguf_file::tensor_offset(const tensor_view & t) const {
    return static_cast<uint64_t>(static_cast<const uint8_t *>(t.data) - p_->map);
}

uint64_t gguf_file::file_size() const {
    return p_->size;
}

const std::string & gguf_file::path() const {
    return p_->path;
}

// the entry `key` when present, checked to have type `want`
static const gguf_kv * typed(const gguf_file & f, std::string_view key, gguf_type want) {
    const gguf_kv * kv = f.kv(key);
    if (kv && kv->type != want) {
        throw error(status::invalid_format, f.path() + ": kv '" + std::string(key) + "' at offset " +
                                                std::to_string(kv->offset) + ": has type " + gguf_type_name(kv->type) + ", expected " + gguf_type_name(want));
    }
    return kv;
}

std::optional<std::string_view> gguf_file::get_string(std::string_view key) const {
    const gguf_kv * kv = typed(*this, key, gguf_type::GGUF_TYPE_STRING);
    if (!kv) return std::nullopt;
    return kv->str;
}

std::optional<uint32_t> gguf_file::get_u32(std::string_view key) const {
    const gguf_kv * kv = typed(*this, key, gguf_type::GGUF_TYPE_UINT32);
    if (!kv) return std::nullopt;
    return static_cast<uint32_t>(kv->u);
}

std::optional<uint64_t> gguf_file::get_u64(std::string_view key) const {
    const gguf_kv * kv = typed(*this, key, gguf_type::GGUF_TYPE_UINT64);
    if (!kv) return std::nullopt;
    return kv->u;
}

// ---------------------------------------------------------------------------------------------
// writer

namespace {

void put_u32(std::string & b, uint32_t v) {
    b.append(reinterpret_cast<const char *>(&v), 4);
}

void put_u64(std::string & b, uint64_t v) {
    b.append(reinterpret_cast<const char *>(&v), 8);
}

void put_str(std::string & b, std::string_view s) {
    put_u64(b, s.size());
    b.append(s);
}

// writes all of `n` bytes or throws
void write_all(int fd, const void * data, size_t n, const std::string & path) {
    const char * p = static_cast<const char *>(data);
    while (n > 0) {
        ssize_t w = ::write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            throw error(status::io_error, path + ": write failed: " + std::strerror(errno));
        }
        p += w;
        n -= static_cast<size_t>(w);
    }
}

// closes the descriptor and removes the temp file unless released
struct temp_file {
    int         fd = -1;
    std::string path;
    bool        keep = false;
    ~temp_file() {
        if (fd >= 0) ::close(fd);
        if (!keep && !path.empty()) ::unlink(path.c_str());
    }
};

} // namespace

void gguf_write(const std::string & path, const std::vector<gguf_write_kv> & kvs,
                const std::vector<gguf_write_tensor> & tensors, uint32_t alignment) {
    // a bad argument is the caller's; a failing write, sync or rename is I/O
    auto fail    = [&](const std::string & msg) { throw error(status::invalid_argument, path + ": " + msg); };
    auto io_fail = [&](const std::string & msg) { throw error(status::io_error, path + ": " + msg); };
    if (alignment == 0 || (alignment & (alignment - 1)) != 0 || alignment > (1u << 20)) {
        fail("alignment " + std::to_string(alignment) + " must be a power of two up to 2^20");
    }

    // header and metadata
    std::string head;
    put_u32(head, k_magic);
    put_u32(head, k_version);
    put_u64(head, tensors.size());
    put_u64(head, kvs.size());
    std::unordered_map<std::string_view, int> seen;
    bool alignment_written = false;
    for (const auto & kv : kvs) {
        if (kv.key.empty() || !valid_utf8(kv.key)) fail("kv key " + quoted(kv.key) + " is empty or not UTF-8");
        if (!seen.emplace(kv.key, 0).second) fail("duplicate kv key " + quoted(kv.key));
        put_str(head, kv.key);
        put_u32(head, static_cast<uint32_t>(kv.type));
        switch (kv.type) {
            case gguf_type::GGUF_TYPE_UINT32:
                if (kv.u > 0xFFFFFFFFu) fail("kv " + quoted(kv.key) + " value does not fit UINT32");
                put_u32(head, static_cast<uint32_t>(kv.u));
                break;
            case gguf_type::GGUF_TYPE_INT32: {
                if (kv.i < INT32_MIN || kv.i > INT32_MAX) fail("kv " + quoted(kv.key) + " value does not fit INT32");
                int32_t v = static_cast<int32_t>(kv.i);
                head.append(reinterpret_cast<const char *>(&v), 4);
                break;
            }
            case gguf_type::GGUF_TYPE_UINT64: put_u64(head, kv.u); break;
            case gguf_type::GGUF_TYPE_FLOAT32: {
                float v = static_cast<float>(kv.f);
                head.append(reinterpret_cast<const char *>(&v), 4);
                break;
            }
            case gguf_type::GGUF_TYPE_BOOL:
                if (kv.u > 1) fail("kv " + quoted(kv.key) + " BOOL value must be 0 or 1");
                head.push_back(static_cast<char>(kv.u));
                break;
            case gguf_type::GGUF_TYPE_STRING:
                if (!valid_utf8(kv.str)) fail("kv " + quoted(kv.key) + " value is not UTF-8");
                put_str(head, kv.str);
                break;
            default:
                fail("kv " + quoted(kv.key) + ": the writer does not support type " + gguf_type_name(kv.type));
        }
        if (kv.key == "general.alignment") {
            if (kv.type != gguf_type::GGUF_TYPE_UINT32 || kv.u != alignment) {
                fail("kv 'general.alignment' disagrees with the alignment argument " + std::to_string(alignment));
            }
            alignment_written = true;
        }
    }
    if (!alignment_written && alignment != k_default_alignment) {
        fail("alignment " + std::to_string(alignment) + " needs a general.alignment entry");
    }

    // tensor infos
    std::unordered_map<std::string_view, int> names;
    std::vector<uint64_t>                     sizes;
    uint64_t                                  offset = 0;
    for (const auto & t : tensors) {
        std::string tf = "tensor " + quoted(t.name);
        if (t.name.empty() || t.name.size() >= k_max_tensor_name || !valid_utf8(t.name)) {
            fail(tf + ": name must be 1..63 bytes of UTF-8 (compact longer names first)");
        }
        if (!names.emplace(t.name, 0).second) fail("duplicate tensor name " + quoted(t.name));
        if (!dtype_name(t.type)) fail(tf + ": unsupported type");
        if (t.ne.empty() || t.ne.size() > 4) fail(tf + ": needs 1..4 dimensions");
        uint64_t n = 1;
        for (int64_t d : t.ne) {
            if (d <= 0 || static_cast<uint64_t>(d) > (std::numeric_limits<uint64_t>::max() / 8) / n) {
                fail(tf + ": bad dimension " + std::to_string(d));
            }
            n *= static_cast<uint64_t>(d);
        }
        if (!t.data) fail(tf + ": no data");
        put_str(head, t.name);
        put_u32(head, static_cast<uint32_t>(t.ne.size()));
        for (int64_t d : t.ne) put_u64(head, static_cast<uint64_t>(d));
        put_u32(head, static_cast<uint32_t>(t.type));
        put_u64(head, offset);
        if (t.type == dtype::DTYPE_Q8_0 && t.ne[0] % k_q8_0_block != 0) fail(tf + ": Q8_0 rows are not whole blocks");
        uint64_t nbytes = dtype_row_bytes(t.type, uint64_t(t.ne[0])) * (n / uint64_t(t.ne[0]));
        sizes.push_back(nbytes);
        offset += nbytes + (alignment - nbytes % alignment) % alignment;
    }
    head.append((alignment - head.size() % alignment) % alignment, '\0');

    // data, atomically: temp file, fsync, rename, fsync the directory
    temp_file tmp;
    tmp.path = path + ".tmp";
    tmp.fd   = ::open(tmp.path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (tmp.fd < 0) {
        std::string e = std::strerror(errno);
        tmp.path.clear();
        io_fail("cannot create " + path + ".tmp: " + e);
    }
    write_all(tmp.fd, head.data(), head.size(), tmp.path);
    static const char zeros[64 * 1024] = {};
    for (size_t k = 0; k < tensors.size(); ++k) {
        write_all(tmp.fd, tensors[k].data, sizes[k], tmp.path);
        size_t pad = (alignment - sizes[k] % alignment) % alignment;
        while (pad > 0) {
            size_t n = std::min(pad, sizeof(zeros));
            write_all(tmp.fd, zeros, n, tmp.path);
            pad -= n;
        }
    }
    if (::fsync(tmp.fd) != 0) io_fail(std::string("fsync failed: ") + std::strerror(errno));
    int fd = tmp.fd;
    tmp.fd = -1;
    if (::close(fd) != 0) io_fail(std::string("close failed: ") + std::strerror(errno));
    if (::rename(tmp.path.c_str(), path.c_str()) != 0) io_fail(std::string("rename failed: ") + std::strerror(errno));
    tmp.keep = true;
    std::string dir   = path;
    size_t      slash = dir.find_last_of('/');
    dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : dir.substr(0, slash));
    int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        ::fsync(dfd);
        ::close(dfd);
    }
}

} // namespace mb
