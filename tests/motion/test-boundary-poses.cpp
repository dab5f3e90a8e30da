// the boundary-pose adapter against upstream: each reference-small case records the world joint
// positions and global rotations its predict inputs were built from; converting them to what a
// C caller supplies (root positions + local XYZW) and encoding must reproduce the recorded
// global root, local root and pose features, except the two documented differences: the source's
// unknown slot-3 velocity and the virtual endpoints' identity orientation (upstream agent rule)
#include "motion/boundary-poses.h"
#include "motion/motion-rep.h"

#include "support/npz.h"
#include "support/reference-small.h"
#include "support/test-paths.h"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <vector>

namespace {

using mb::test::npz_file;

constexpr float k_tol_position = 2e-5f;    // m; positions recorded in float32
constexpr float k_tol_rotation = 2e-5f;    // 6D entries
constexpr float k_tol_velocity = 2e-3f;    // rad/s, m/s: 30 × float32 position differences

bool is_virtual(int j) {
    return j == 7 || j == 14 || j == 25 || j == 33;
}

// world positions [4, 34, 3] and global rotations [4, 34, 3, 3] → roots [4, 3], local xyzw [4, 34, 4]
void to_caller_inputs(const mb::model_support & sup, const std::vector<float> & pos, const std::vector<float> & rot,
                      std::vector<float> & roots, std::vector<float> & xyzw) {
    roots.assign(12, 0.0f);
    xyzw.assign(544, 0.0f);
    for (int f = 0; f < 4; ++f) {
        for (int a = 0; a < 3; ++a) {
            roots[f * 3 + a] = pos[(f * 34 + 0) * 3 + a] - sup.neutral_joints[a];
        }
        for (int j = 0; j < 34; ++j) {
            const float * g = rot.data() + (f * 34 + j) * 9;
            double        local[9];
            const int     p = sup.parents[j];
            for (int r = 0; r < 3; ++r) {
                for (int c = 0; c < 3; ++c) {
                    double s = 0.0;
                    for (int k = 0; k < 3; ++k) {
                        // parentᵀ · G (identity parent for the root)
                        const double pk = p < 0 ? (k == r ? 1.0 : 0.0) : rot[(f * 34 + p) * 9 + k * 3 + r];
                        s += pk * g[k * 3 + c];
                    }
                    local[r * 3 + c] = s;
                }
            }
            double q[4];
            mb::matrix_to_quat_wxyz(local, q);
            const double n = std::sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
            float *      o = xyzw.data() + (f * 34 + j) * 4;
            o[0]           = float(q[1] / n);
            o[1]           = float(q[2] / n);
            o[2]           = float(q[3] / n);
            o[3]           = float(q[0] / n);
        }
    }
}

TEST(BoundaryPoses, MatchesUpstreamInputsOfEveryReferenceCase) {
    MB_REQUIRE_SHARED(dir, "fixtures/reference-small");
    const mb::model_support sup   = mb::test::reference_support(dir);
    const auto              cases = mb::test::reference_cases(dir);
    ASSERT_FALSE(cases.empty());
    for (const auto & c : cases) {
        SCOPED_TRACE(c.name);
        const npz_file            npz(c.file);
        const std::vector<float>  g = npz.get("in_global_root_values", {1, 8, 5}).to_f32();
        const std::vector<float>  l = npz.get("in_local_root_values", {1, 8, 4}).to_f32();
        const std::vector<float>  p = npz.get("in_local_poses", {1, 8, 303}).to_f32();
        const char * const        halves[2] = {"context", "target"};
        for (int b = 0; b < 2; ++b) {
            SCOPED_TRACE(halves[b]);
            const std::string  base = std::string("src_") + halves[b] + "_joint_";
            std::vector<float> roots, xyzw;
            to_caller_inputs(sup, npz.get(base + "positions", {4, 34, 3}).to_f32(),
                             npz.get(base + "rotations", {4, 34, 3, 3}).to_f32(), roots, xyzw);
            const auto kind = b == 0 ? mb::boundary_kind::BOUNDARY_KIND_SOURCE : mb::boundary_kind::BOUNDARY_KIND_TARGET;
            const mb::boundary_features enc = mb::encode_boundary_poses(sup, kind, roots, xyzw);

            for (int f = 0; f < 4; ++f) {
                const int s = b * 4 + f;
                for (int k = 0; k < 5; ++k) {
                    EXPECT_NEAR(enc.global_root[f * 5 + k], g[s * 5 + k], k_tol_position) << "global root slot " << s << " [" << k << "]";
                }
                if (b == 0 && f == 3) {
                    // unknown outgoing velocity: all zero and masked off, as upstream's agent does
                    for (int k = 0; k < 4; ++k) {
                        EXPECT_EQ(enc.local_root[f * 4 + k], 0.0f);
                    }
                    EXPECT_EQ(enc.local_root_mask[3], 0);
                } else {
                    for (int k = 0; k < 4; ++k) {
                        EXPECT_NEAR(enc.local_root[f * 4 + k], l[s * 4 + k], k_tol_velocity) << "local root slot " << s << " [" << k << "]";
                    }
                    EXPECT_EQ(enc.local_root_mask[f], 1);
                }
                const float * want = p.data() + s * 303;
                const float * got  = enc.poses.data() + f * 303;
                for (int k = 0; k < 99; ++k) {
                    EXPECT_NEAR(got[k], want[k], k_tol_position) << "ric slot " << s << " [" << k << "]";
                }
                for (int j = 0; j < 34; ++j) {
                    for (int k = 0; k < 6; ++k) {
                        const float expect = is_virtual(j) ? (k == 0 || k == 4 ? 1.0f : 0.0f) : want[99 + j * 6 + k];
                        EXPECT_NEAR(got[99 + j * 6 + k], expect, k_tol_rotation) << "6D slot " << s << " joint " << j;
                    }
                }
            }
        }
    }
}

TEST(BoundaryPoses, RejectsBadInputsWithClearMessages) {
    MB_REQUIRE_SHARED(dir, "fixtures/reference-small");
    const mb::model_support sup = mb::test::reference_support(dir);
    std::vector<float>      roots(12, 0.0f), xyzw(544, 0.0f);
    for (int q = 0; q < 136; ++q) {
        xyzw[q * 4 + 3] = 1.0f;
    }
    EXPECT_NO_THROW(mb::encode_boundary_poses(sup, mb::boundary_kind::BOUNDARY_KIND_SOURCE, roots, xyzw));
    auto expect_throw = [&](std::vector<float> r, std::vector<float> q, const char * needle) {
        try {
            mb::encode_boundary_poses(sup, mb::boundary_kind::BOUNDARY_KIND_TARGET, r, q);
            ADD_FAILURE() << "no exception for " << needle;
        } catch (const mb::error & e) {
            EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
        }
    };
    expect_throw(std::vector<float>(11, 0.0f), xyzw, "12 floats");
    expect_throw(roots, std::vector<float>(540, 0.0f), "544 floats");
    auto q = xyzw;
    q[5 * 4 + 3] = 1.011f;
    expect_throw(roots, q, "frame 0 joint 5");
    q[5 * 4 + 3] = NAN;
    expect_throw(roots, q, "local_xyzw[23]");
    auto r = roots;
    r[2] = 1.0e5f;
    expect_throw(r, xyzw, "roots[2]");
    // in range, but a 300 m jump between frames is a velocity above 1e4 m/s
    r    = roots;
    r[3] = 9000.0f;
    r[6] = -9000.0f;
    expect_throw(r, xyzw, "encoded local root");
}

} // namespace
