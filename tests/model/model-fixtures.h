// shared helpers of the model parity tests: fixture paths, safetensors weights,
// slicing of the fixtures' padded arrays and tolerance checks
#pragma once

#include "model/layers.h"
#include "support/npz.h"
#include "support/reference-small.h"
#include "support/safetensors-source.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace mb::test {

// elements [offset, offset + count) of an array in C order, converted; throws when out of range
std::vector<float>   span_f32(const npy_array & a, int64_t offset, int64_t count);
std::vector<int32_t> span_i32(const npy_array & a, int64_t offset, int64_t count);
std::vector<uint8_t> span_u8(const npy_array & a, int64_t offset, int64_t count);

struct diff_stats {
    double max_abs = 0.0;   // max |got − ref|
    double ref_mag = 0.0;   // max |ref|
    size_t worst   = 0;     // index of max_abs
    bool   finite  = true;  // every got value finite
};

diff_stats compare(const std::vector<float> & got, const std::vector<float> & ref);

// passes when max |got − ref| ≤ rel·max(1, max |ref|); the message names `what`;
// MB_SHOW_DIFFS=1 in the environment prints every comparison's figures
::testing::AssertionResult near_rel(const std::vector<float> & got, const std::vector<float> & ref, double rel,
                                    const std::string & what);

// a backend buffer holding a copy of v
template <class T> std::unique_ptr<backend_buffer> upload(backend & be, const std::vector<T> & v) {
    std::unique_ptr<backend_buffer> b = be.alloc(v.size() * sizeof(T));
    be.set(b->as<T>(), v.data(), (int64_t) v.size());
    return b;
}

// records a forward pass's taps by name; a name tapped again (once per decoding step) is
// stacked along its leading axis
class tap_record {
public:
    tap_fn fn();
    // the array named `name`; throws std::runtime_error when absent or of another shape
    const std::vector<float> & at(const std::string & name, const std::vector<int64_t> & shape) const;
    std::vector<std::string> names() const;     // in first-tap order

private:
    struct array {
        std::string          name;
        std::vector<int64_t> shape;
        std::vector<float>   data;
    };
    std::vector<array> arrays_;
};

// a test over ../shared/fixtures/reference-small: skips with the standard message when
// the directory is absent; dir_ is its path
class reference_small_test : public ::testing::Test {
protected:
    void SetUp() override;
    std::string dir_;
};

} // namespace mb::test
