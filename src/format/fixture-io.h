// little-endian binary I/O for the fixture formats (.mbparity, .mbreplay): a cursor whose every
// read is bounded by the bytes left and whose errors name file, field and byte offset; a
// writer of the same primitives; and an atomic file write (temp file, fsync, rename)
#pragma once

#include "format/error.h"

#include <bit>
#include <cstdint>
#include <string>
#include <string_view>

namespace mb {

static_assert(std::endian::native == std::endian::little, "fixture I/O assumes a little-endian host");

class le_reader {
public:
    le_reader(std::string_view bytes, std::string name) : bytes_(bytes), name_(std::move(name)) {}

    uint32_t u32(const char * field);
    int32_t  i32(const char * field);
    uint64_t u64(const char * field);
    // n values of 4 bytes each into out (float, int32_t or uint32_t)
    void     raw32(void * out, uint64_t n, const char * field);
    // the 8-byte magic, compared exactly
    void     magic(const char (&want)[9], const char * format);
    // no byte may follow the last field
    void     finish() const;

    uint64_t offset() const { return pos_; }
    uint64_t remaining() const { return bytes_.size() - pos_; }
    const std::string & name() const { return name_; }

    // "NAME: offset N: FIELD: WHAT" as invalid_format
    [[noreturn]] void fail(const std::string & field, const std::string & what) const;
    [[noreturn]] void fail_at(uint64_t offset, const std::string & field, const std::string & what) const;

private:
    void need(uint64_t n, const char * field) const;

    std::string_view bytes_;
    std::string      name_;
    uint64_t         pos_ = 0;
};

class le_writer {
public:
    void u32(uint32_t v) { put(&v, 4); }
    void i32(int32_t v) { put(&v, 4); }
    void u64(uint64_t v) { put(&v, 8); }
    void raw32(const void * p, uint64_t n) { put(p, n * 4); }
    void bytes(std::string_view s) { out_.append(s); }
    std::string & str() { return out_; }

private:
    void put(const void * p, uint64_t n) { out_.append(static_cast<const char *>(p), size_t(n)); }
    std::string out_;
};

// writes `bytes` to `path` atomically: PATH.tmp, fsync, rename, fsync the directory; throws io_error
void write_file_atomic(const std::string & path, std::string_view bytes);

// a float for messages, exactly ("%.9g")
std::string num9(double v);

} // namespace mb
