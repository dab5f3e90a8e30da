// the plan path allocates nothing that depends on the plan: a state sizes every buffer and the
// backend's scratch (im2col, attention scores, sort order) when it is created, so plans of 6..16
// tokens on one state make the same number of heap allocations (the result's own arrays only),
// the state's first plan included. Counted through a replaced global operator new, with 2 CPU
// threads so that the thread pool's job dispatch is counted too
#include "predict-fixtures.h"
#include "support/test-paths.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <vector>

namespace {

std::atomic<long> g_allocations{0};

} // namespace

void * operator new(size_t n) {
    g_allocations.fetch_add(1, std::memory_order_relaxed);
    if (void * p = std::malloc(n == 0 ? 1 : n)) return p;
    throw std::bad_alloc();
}
void operator delete(void * p) noexcept {
    std::free(p);
}
void operator delete(void * p, size_t) noexcept {
    std::free(p);
}

namespace {

using namespace mb;
using namespace mb::test;

TEST(predict_alloc, plans_of_every_duration_allocate_alike) {
    MB_REQUIRE_SHARED(dir, "fixtures/reference-small");
    reference_model rm(dir, 2);
    const reference_case rc  = reference_cases(dir).at(0);
    predict_request      req = reference_request(npz_file(rc.file), rc);

    const auto st = rm.model->create_state();
    // shortest first, so a scratch that grows on demand would grow on the longer plans
    const int        order[] = {6, 16, 11, 6, 16, 9, 13};
    std::vector<long> counts;
    for (int n : order) {
        req.num_tokens = n;
        const long before = g_allocations.load();
        const predict_result r = rm.model->predict(*st, req);
        counts.push_back(g_allocations.load() - before);
        ASSERT_EQ(r.num_tokens, n);
    }
    for (size_t i = 0; i < counts.size(); ++i) {
        std::printf("plan of %d tokens: %ld allocations\n", order[i], counts[i]);
        EXPECT_EQ(counts[i], counts[0]) << "the plan of " << order[i] << " tokens allocates differently";
    }
}

} // namespace
