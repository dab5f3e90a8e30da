// BF16 and Q8_0 bundles against the F32 bundle of the same full-size random weights, at
// motion level on 64 varied requests (CPU): durations and tokens that agree, joint-position
// differences (max and p99, mm) over the plans of equal duration. A report, not a gate:
// random weights are not trained ones, so how far their plans move says little about a
// trained model's. MB_REDUCED_BUNDLES names a directory with f32/, bf16/ and q8_0/ bundles
// (test-cpu-reduced-report.sh writes them); without it the test is skipped
#include "backend/backend-select.h"
#include "format/bundle.h"
#include "varied-requests.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

TEST(cpu_reduced_bundle, motion_level_report) {
    const char * dir = std::getenv("MB_REDUCED_BUNDLES");
    if (!dir || !*dir) GTEST_SKIP() << "skipped: MB_REDUCED_BUNDLES (f32/, bf16/, q8_0/ full-size bundles) is not set";
    const std::string root(dir);
    auto f32 = mb::motion_model::create(mb::bundle_load(root + "/f32"), 2, mb::backend_device::BACKEND_DEVICE_CPU);
    std::vector<mb::predict_result> ref;
    for (int i = 0; i < 64; ++i) {
        const mb::predict_request req = mb::test::varied_request(i);
        ASSERT_EQ(f32->validate(req), "") << "request " << i;
        ref.push_back(f32->predict(req));
    }
    for (const char * dtype : {"bf16", "q8_0"}) {
        auto rm = mb::motion_model::create(mb::bundle_load(root + "/" + dtype), 2, mb::backend_device::BACKEND_DEVICE_CPU);
        mb::test::motion_agreement agree;
        for (int i = 0; i < 64; ++i) agree.add(ref[size_t(i)], rm->predict(mb::test::varied_request(i)));
        std::printf("full bundle, CPU %s vs F32 weights: %s\n", dtype, agree.summary().c_str());
        EXPECT_EQ(agree.total, 64);
    }
}

} // namespace
