// motion representation and FK against upstream intermediates of every
// reference-small case: recentring, normalisation, global → local root,
// unnormalisation, local → global, start transform, FK
#include "format/error.h"
#include "motion/motion-rep.h"
#include "motion/skeleton-fk.h"
#include "support/npz.h"
#include "support/reference-small.h"
#include "support/test-paths.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

namespace {

constexpr const char * k_dir = "fixtures/reference-small";

// max |a − b| over n values
float max_abs_diff(const float * a, const float * b, int64_t n) {
    float m = 0.0f;
    for (int64_t i = 0; i < n; ++i) {
        const float d = std::fabs(a[i] - b[i]);
        if (!(d <= m)) m = d;   // NaN propagates as a failure
    }
    return m;
}

// worst error per stage over all cases, printed at the end of the parity test
struct stage_errors {
    std::map<std::string, float> worst;

    float operator()(const std::string & stage, float err) {
        float & w = worst[stage];
        if (!(err <= w)) w = err;
        return err;
    }
    ~stage_errors() {
        for (const auto & kv : worst) std::printf("  max abs error %-28s %.3g\n", kv.first.c_str(), double(kv.second));
    }
};

} // namespace

TEST(motion_rep, subsets_have_upstream_sizes) {
    EXPECT_EQ(mb::feature_subset_indices(mb::feature_subset::FEATURE_SUBSET_GLOBAL).size(), 414u);
    EXPECT_EQ(mb::feature_subset_indices(mb::feature_subset::FEATURE_SUBSET_LOCAL).size(), 413u);
    EXPECT_EQ(mb::feature_subset_indices(mb::feature_subset::FEATURE_SUBSET_POSE).size(), 304u);
    EXPECT_EQ(mb::feature_subset_indices(mb::feature_subset::FEATURE_SUBSET_GLOBAL)[5], 9);
    EXPECT_EQ(mb::feature_subset_indices(mb::feature_subset::FEATURE_SUBSET_POSE)[0], 8);
}

// support data the networks cannot use is incompatible_model, the status mb_model_load returns
TEST(motion_rep, bad_support_data_is_incompatible) {
    mb::model_support sup{};
    for (int j = 0; j < mb::k_n_joints; ++j) sup.parents[size_t(j)] = j - 1;
    sup.std.fill(1.0f);
    sup.std[7] = -1.0f;
    try {
        mb::motion_stats::from_support(sup);
        FAIL() << "a negative std was accepted";
    } catch (const mb::error & e) {
        EXPECT_EQ(e.code(), mb::status::incompatible_model);
        EXPECT_STREQ(e.what(), "motion statistics: entry 7 is not finite or std < 0");
    }
    sup.parents[5] = 9;
    try {
        mb::skeleton_fk::from_support(sup);
        FAIL() << "a parent after its child was accepted";
    } catch (const mb::error & e) {
        EXPECT_EQ(e.code(), mb::status::incompatible_model);
        EXPECT_STREQ(e.what(), "skeleton: joint 5 has invalid parent 9");
    }
}

TEST(motion_rep, rotations_round_trip) {
    // a rotation about a skew axis: 6D → matrix is exact up to rounding, matrix → quaternion → matrix
    const float ang = 1.1f, ax[3] = {0.48f, 0.6f, 0.64f};
    const float c = std::cos(ang), s = std::sin(ang), C = 1 - c;
    const float r[9] = {
        c + ax[0] * ax[0] * C,         ax[0] * ax[1] * C - ax[2] * s, ax[0] * ax[2] * C + ax[1] * s,
        ax[1] * ax[0] * C + ax[2] * s, c + ax[1] * ax[1] * C,         ax[1] * ax[2] * C - ax[0] * s,
        ax[2] * ax[0] * C - ax[1] * s, ax[2] * ax[1] * C + ax[0] * s, c + ax[2] * ax[2] * C,
    };
    const float six[6] = {2 * r[0], 2 * r[3], 2 * r[6], r[1] + 0.1f * r[0], r[4] + 0.1f * r[3], r[7] + 0.1f * r[6]};
    float m[9];
    mb::cont6d_to_matrix(six, m);
    for (int k = 0; k < 9; ++k) EXPECT_NEAR(m[k], r[k], 2e-6f) << k;
    float q[4];
    mb::matrix_to_quat_wxyz(r, q);
    EXPECT_NEAR(q[0], std::cos(ang / 2), 1e-6f);
    for (int i = 0; i < 3; ++i) EXPECT_NEAR(q[1 + i], ax[i] * std::sin(ang / 2), 1e-6f);
    // a 180° turn about y picks the y branch and keeps the sign upstream gives
    const float flip[9] = {-1, 0, 0, 0, 1, 0, 0, 0, -1};
    mb::matrix_to_quat_wxyz(flip, q);
    EXPECT_FLOAT_EQ(q[0], 0.0f);
    EXPECT_FLOAT_EQ(q[2], 1.0f);
}

TEST(motion_rep, matches_upstream_intermediates) {
    MB_REQUIRE_SHARED(dir, k_dir);
    const mb::model_support sup = mb::test::reference_support(dir);
    const mb::motion_stats st = mb::motion_stats::from_support(sup);
    const mb::skeleton_fk fk = mb::skeleton_fk::from_support(sup);
    using mb::feature_subset;
    stage_errors err;

    for (const auto & rc : mb::test::reference_cases(dir)) {
        SCOPED_TRACE(rc.name);
        mb::test::npz_file z(rc.file);
        const int n = int(z.get("out_pred_num_tokens", {1}).to_i64()[0]);
        const int F = 4 * n;
        ASSERT_GE(n, 6);
        ASSERT_LE(n, 16);

        // recentre: subtract the start xz, heading from frame 0
        std::vector<float> g = z.get("in_global_root_values", {1, 8, 5}).to_f32();
        const float ref_x = g[0], ref_z = g[2];
        const float ref_h = std::atan2(g[4], g[3]);
        const auto ref_off = z.get("mid_reference_start_root_global_offsets", {1, 1, 2}).to_f32();
        EXPECT_EQ(ref_off[0], ref_x);
        EXPECT_EQ(ref_off[1], ref_z);
        EXPECT_NEAR(z.get("mid_reference_start_root_global_heading", {1, 1}).to_f32()[0], ref_h, 1e-6f);
        for (int t = 0; t < 8; ++t) {
            g[t * 5 + 0] -= ref_x;
            g[t * 5 + 2] -= ref_z;
        }
        EXPECT_EQ(max_abs_diff(g.data(), z.get("mid_recentered_global_root_values").to_f32().data(), 40), 0.0f);

        // normalisation of the three inputs
        std::vector<float> gn(40), ln(32), pz(8 * 304);
        st.normalize(g.data(), 8, feature_subset::FEATURE_SUBSET_GLOBAL_ROOT, gn.data());
        EXPECT_LE(err("norm_global_root", max_abs_diff(gn.data(), z.get("mid_norm_global_root_values").to_f32().data(), 40)), 1e-6f);
        const std::vector<float> l = z.get("in_local_root_values", {1, 8, 4}).to_f32();
        st.normalize(l.data(), 8, feature_subset::FEATURE_SUBSET_LOCAL_ROOT, ln.data());
        EXPECT_LE(err("norm_local_root", max_abs_diff(ln.data(), z.get("mid_norm_local_root_values").to_f32().data(), 32)), 1e-6f);
        const std::vector<float> poses = z.get("in_local_poses", {1, 8, 303}).to_f32();
        std::vector<float> p304(8 * 304);
        for (int t = 0; t < 8; ++t) {
            p304[t * 304] = g[t * 5 + 1];
            for (int i = 0; i < 303; ++i) p304[t * 304 + 1 + i] = poses[t * 303 + i];
        }
        st.normalize(p304.data(), 8, feature_subset::FEATURE_SUBSET_POSE, pz.data());
        EXPECT_LE(err("norm_poses", max_abs_diff(pz.data(), z.get("mid_norm_local_poses").to_f32().data(), 8 * 304)), 1e-6f);

        // global → local on the root-model trajectory (normalised in and out), then the final-velocity fix
        const std::vector<float> pg = z.get("mid_pred_global_root_values", {1, 64, 5}).to_f32();
        std::vector<float> gu(F * 5), lr(F * 4), lrn(F * 4);
        st.unnormalize(pg.data(), F, feature_subset::FEATURE_SUBSET_GLOBAL_ROOT, gu.data());
        mb::global_root_to_local(gu.data(), F, lr.data());
        st.normalize(lr.data(), F, feature_subset::FEATURE_SUBSET_LOCAL_ROOT, lrn.data());
        if (z.get("in_has_local_root_values").to_i64()[7]) {
            for (int i = 0; i < 4; ++i) lrn[(F - 1) * 4 + i] = ln[7 * 4 + i];
        }
        const std::vector<float> plr = z.get("mid_pred_local_root_values", {1, 64, 4}).to_f32();
        EXPECT_LE(err("pred_local_root", max_abs_diff(lrn.data(), plr.data(), F * 4)), 5e-5f);

        // decoder output → unnormalised local → global → world
        const std::vector<float> rec = z.get("mid_decoder_recon_state", {1, 64, 413}).to_f32();
        std::vector<float> loc(F * 413), glob(F * 414);
        st.unnormalize(rec.data(), F, feature_subset::FEATURE_SUBSET_LOCAL, loc.data());
        EXPECT_LE(err("pred_local_poses", max_abs_diff(loc.data(), z.get("mid_pred_local_poses").to_f32().data(), F * 413)), 1e-6f);
        mb::local_to_global(loc.data(), F, glob.data());
        const std::vector<float> before = z.get("mid_pred_global_poses_before_reapply", {1, 64, 414}).to_f32();
        EXPECT_LE(err("global_before_reapply", max_abs_diff(glob.data(), before.data(), F * 414)), 1e-6f);
        mb::reapply_start_transform(glob.data(), F, ref_x, ref_z, ref_h);
        const std::vector<float> out = z.get("out_pred_global_poses", {1, 64, 414}).to_f32();
        EXPECT_LE(err("global_out", max_abs_diff(glob.data(), out.data(), F * 414)), 1e-6f);

        // FK of upstream's output
        std::vector<float> pos(F * 34 * 3), rots(F * 34 * 9), xyzw(F * 34 * 4);
        fk.run(out.data(), F, pos.data(), xyzw.data(), rots.data());
        EXPECT_LE(err("fk_positions", max_abs_diff(pos.data(), z.get("derived_posed_joints").to_f32().data(), F * 34 * 3)), 5e-6f);
        EXPECT_LE(err("fk_global_rots", max_abs_diff(rots.data(), z.get("derived_global_joint_rots").to_f32().data(), F * 34 * 9)), 5e-6f);
        for (int k = 0; k < F * 34; ++k) {
            const float * q = xyzw.data() + 4 * k;
            ASSERT_NEAR(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3], 1.0f, 1e-4f) << k;
        }
    }
}
