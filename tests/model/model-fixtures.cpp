#include "model-fixtures.h"

#include "support/test-paths.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <stdexcept>

namespace mb::test {
namespace {

template <typename T, typename V>
std::vector<T> span(const std::vector<V> & all, int64_t offset, int64_t count) {
    if (offset < 0 || count < 0 || offset + count > (int64_t) all.size()) {
        throw std::runtime_error("fixture span out of range");
    }
    return std::vector<T>(all.begin() + offset, all.begin() + offset + count);
}

} // namespace

std::vector<float> span_f32(const npy_array & a, int64_t offset, int64_t count) {
    return span<float>(a.to_f32(), offset, count);
}

std::vector<int32_t> span_i32(const npy_array & a, int64_t offset, int64_t count) {
    return span<int32_t>(a.to_i64(), offset, count);
}

std::vector<uint8_t> span_u8(const npy_array & a, int64_t offset, int64_t count) {
    return span<uint8_t>(a.to_i64(), offset, count);
}

diff_stats compare(const std::vector<float> & got, const std::vector<float> & ref) {
    diff_stats s;
    if (got.size() != ref.size()) throw std::runtime_error("compare: size mismatch");
    for (size_t i = 0; i < got.size(); ++i) {
        if (!std::isfinite(got[i])) s.finite = false;
        const double d = std::fabs((double) got[i] - (double) ref[i]);
        if (d > s.max_abs || std::isnan(d)) {
            s.max_abs = std::isnan(d) ? INFINITY : d;
            s.worst   = i;
        }
        s.ref_mag = std::max(s.ref_mag, std::fabs((double) ref[i]));
    }
    return s;
}

::testing::AssertionResult near_rel(const std::vector<float> & got, const std::vector<float> & ref, double rel,
                                    const std::string & what) {
    const diff_stats s     = compare(got, ref);
    const double     bound = rel * std::max(1.0, s.ref_mag);
    std::ostringstream msg;
    msg << what << ": max |diff| " << s.max_abs << " at " << s.worst << " (ref magnitude " << s.ref_mag
        << ", bound " << bound << ")";
    if (std::getenv("MB_SHOW_DIFFS")) std::printf("%s\n", msg.str().c_str());
    if (s.finite && s.max_abs <= bound) return ::testing::AssertionSuccess() << msg.str();
    return ::testing::AssertionFailure() << msg.str();
}

void reference_small_test::SetUp() {
    dir_ = shared_path("fixtures/reference-small");
    if (dir_.empty()) GTEST_SKIP() << "skipped: ../shared/fixtures/reference-small not found";
}

} // namespace mb::test

namespace mb::test {

tap_fn tap_record::fn() {
    return [this](std::string_view name, const float * data, const std::vector<int64_t> & shape) {
        int64_t count = 1;
        for (int64_t d : shape) count *= d;
        for (array & a : arrays_) {
            if (a.name != name) continue;
            if (shape.empty() || a.shape.size() != shape.size() ||
                !std::equal(shape.begin() + 1, shape.end(), a.shape.begin() + 1)) {
                throw std::runtime_error("tap '" + a.name + "' repeated with another shape");
            }
            a.shape[0] += shape[0];
            a.data.insert(a.data.end(), data, data + count);
            return;
        }
        arrays_.push_back({std::string(name), shape, std::vector<float>(data, data + count)});
    };
}

const std::vector<float> & tap_record::at(const std::string & name, const std::vector<int64_t> & shape) const {
    for (const array & a : arrays_) {
        if (a.name != name) continue;
        if (a.shape != shape) throw std::runtime_error("tap '" + name + "' has another shape");
        return a.data;
    }
    throw std::runtime_error("no tap '" + name + "'");
}

std::vector<std::string> tap_record::names() const {
    std::vector<std::string> n;
    for (const array & a : arrays_) n.push_back(a.name);
    return n;
}

} // namespace mb::test
