// test-only reader for numpy .npz archives (an uncompressed zip of .npy files),
// as written by numpy.savez: the fixtures' per-case arrays
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace mb::test {

enum class npy_dtype {
    NPY_DTYPE_F32,
    NPY_DTYPE_F64,
    NPY_DTYPE_I32,
    NPY_DTYPE_I64,
    NPY_DTYPE_BOOL,
};

struct npy_array {
    npy_dtype            type = npy_dtype::NPY_DTYPE_F32;
    std::vector<int64_t> shape;     // numpy order, outermost first; empty for a scalar
    std::vector<uint8_t> bytes;     // C-order little-endian data

    int64_t n_elements() const;
    // every element converted (bool → 0/1); the integer versions reject non-integral floats
    std::vector<float>   to_f32() const;
    std::vector<double>  to_f64() const;
    std::vector<int64_t> to_i64() const;
};

// parses one .npy image; throws std::runtime_error naming `what` on any defect
npy_array npy_parse(const uint8_t * data, size_t size, const std::string & what);

class npz_file {
public:
    // reads and validates the whole archive; throws std::runtime_error
    explicit npz_file(const std::string & path);

    bool has(const std::string & name) const;
    // the array `name` (without ".npy"); throws when absent
    const npy_array & get(const std::string & name) const;
    // the array, checked to have exactly `shape`
    const npy_array & get(const std::string & name, const std::vector<int64_t> & shape) const;
    std::vector<std::string> names() const;
    const std::string & path() const { return path_; }

private:
    std::string                      path_;
    std::map<std::string, npy_array> arrays_;
};

} // namespace mb::test
