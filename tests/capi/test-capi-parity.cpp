// end-to-end parity through the C ABI: the reference-small fixture converted to a bundle, each case's
// recorded predict inputs supplied with mb_inference_request_set_features / set_mask, mb_model_infer;
// the duration must equal upstream's exactly, root translations and FK joint positions of the returned
// local quaternions must match upstream's within 1e-4, global rotations within 1e-3 (see k_tol_rot). Cases the
// ABI cannot express (Gumbel with torch's noise, 3 decoding steps, skip_ending_target_cond) are
// listed as not applicable; a fixed token count is expressed as a single allowed duration.
#include <motionbricks/inference.h>

#include "motion/boundary-poses.h"

#include "support/npz.h"
#include "support/reference-small.h"
#include "support/test-paths.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

namespace {

constexpr float k_tol     = 1e-4f;   // m, absolute (issue 3's bound on features and joint positions)
// rotation-matrix entries: random-weight 6D outputs have nearly parallel columns (|cos| up to 0.9998,
// norms down to 0.03), so Gram–Schmidt amplifies the 1e-5-level feature differences ~50×; measured
// max 6.2e-4 on these cases
constexpr float k_tol_rot = 1e-3f;

std::string bundle_dir() {
    return MB_CAPI_REFERENCE_BUNDLE;
}

TEST(CapiParity, ReferenceSmallCasesThroughTheCAbi) {
    MB_REQUIRE_SHARED(dir, "fixtures/reference-small");
    if (!std::filesystem::exists(bundle_dir() + "/support.gguf")) {
        GTEST_SKIP() << "skipped: no converted reference-small bundle at " << bundle_dir();
    }
    const mb::model_support sup = mb::test::reference_support(dir);
    char                    err[512];
    mb_model *              model = nullptr;
    ASSERT_EQ(mb_model_load(bundle_dir().c_str(), nullptr, &model, err, sizeof err), MB_OK) << err;

    int compared = 0;
    for (const auto & c : mb::test::reference_cases(dir)) {
        SCOPED_TRACE(c.name);
        if (!c.use_argmax || c.num_inference_steps != 1 || c.skip_ending_target_cond || c.allow_out_of_reach) {
            std::printf("not applicable through the C ABI: %s\n", c.name.c_str());
            continue;
        }
        const mb::test::npz_file npz(c.file);
        const auto               g     = npz.get("in_global_root_values", {1, 8, 5}).to_f32();
        const auto               l     = npz.get("in_local_root_values", {1, 8, 4}).to_f32();
        const auto               p     = npz.get("in_local_poses", {1, 8, 303}).to_f32();
        const auto               has_g = npz.get("in_has_global_root_values", {1, 8}).to_i64();
        const auto               has_l = npz.get("in_has_local_root_values", {1, 8}).to_i64();
        const auto               has_p = npz.get("in_has_local_poses", {1, 8}).to_i64();
        const int64_t            fixed = npz.get("in_num_tokens", {1}).to_i64()[0];
        const int                n     = int(npz.get("out_pred_num_tokens", {1}).to_i64()[0]);

        std::vector<uint32_t> durations(11, 1);
        if (npz.has("in_allowed_pred_num_tokens")) {
            const auto allowed = npz.get("in_allowed_pred_num_tokens", {1, 11}).to_i64();
            for (int i = 0; i < 11; ++i) {
                durations[i] = uint32_t(allowed[i] != 0);
            }
        }
        if (fixed >= 6 && fixed <= 16) {
            durations.assign(11, 0);
            durations[fixed - 6] = 1;
        }
        std::vector<uint32_t> mg(8), ml(8), mp(8);
        for (int i = 0; i < 8; ++i) {
            mg[i] = uint32_t(has_g[i] != 0);
            ml[i] = uint32_t(has_l[i] != 0);
            mp[i] = uint32_t(has_p[i] != 0);
        }

        mb_inference_request * req = nullptr;
        ASSERT_EQ(mb_inference_request_create(&req, err, sizeof err), MB_OK) << err;
        ASSERT_EQ(mb_inference_request_set_features(req, MB_INFERENCE_GLOBAL_ROOT, g.data(), g.size(), err, sizeof err), MB_OK) << err;
        ASSERT_EQ(mb_inference_request_set_features(req, MB_INFERENCE_LOCAL_ROOT, l.data(), l.size(), err, sizeof err), MB_OK) << err;
        ASSERT_EQ(mb_inference_request_set_features(req, MB_INFERENCE_POSE, p.data(), p.size(), err, sizeof err), MB_OK) << err;
        ASSERT_EQ(mb_inference_request_set_mask(req, MB_INFERENCE_GLOBAL_ROOT, mg.data(), 8, err, sizeof err), MB_OK) << err;
        ASSERT_EQ(mb_inference_request_set_mask(req, MB_INFERENCE_LOCAL_ROOT, ml.data(), 8, err, sizeof err), MB_OK) << err;
        ASSERT_EQ(mb_inference_request_set_mask(req, MB_INFERENCE_POSE, mp.data(), 8, err, sizeof err), MB_OK) << err;
        ASSERT_EQ(mb_inference_request_set_mask(req, MB_INFERENCE_DURATIONS, durations.data(), 11, err, sizeof err), MB_OK) << err;
        ASSERT_EQ(mb_inference_request_set_sampling_argmax(req, 1, err, sizeof err), MB_OK) << err;

        mb_motion * motion = nullptr;
        ASSERT_EQ(mb_model_infer(model, req, &motion, err, sizeof err), MB_OK) << err;
        mb_inference_request_free(req);

        uint64_t      frames = 0, nr = 0, nq = 0;
        const float * roots  = nullptr;
        const float * rots   = nullptr;
        ASSERT_EQ(mb_motion_get_frame_count(motion, &frames, err, sizeof err), MB_OK);
        ASSERT_EQ(mb_motion_get_root_translations(motion, &roots, &nr, err, sizeof err), MB_OK);
        ASSERT_EQ(mb_motion_get_local_rotations_xyzw(motion, &rots, &nq, err, sizeof err), MB_OK);
        EXPECT_EQ(frames, uint64_t(4 * n)) << "duration differs from upstream";
        if (frames == uint64_t(4 * n)) {
            const auto glob   = npz.get("out_pred_global_poses", {1, 64, 414}).to_f32();
            const auto joints = npz.get("derived_posed_joints", {1, 64, 34, 3}).to_f32();
            const auto grots  = npz.get("derived_global_joint_rots", {1, 64, 34, 3, 3}).to_f32();
            float      max_root = 0.0f, max_joint = 0.0f, max_rot = 0.0f;
            for (uint64_t f = 0; f < frames; ++f) {
                for (int a = 0; a < 3; ++a) {
                    max_root = std::max(max_root, std::fabs(roots[f * 3 + a] - glob[f * 414 + a]));
                }
                double pos[34 * 3], rot[34 * 9];
                mb::boundary_forward_kinematics(sup, roots + f * 3, rots + f * 34 * 4, pos, rot);
                for (int k = 0; k < 34 * 3; ++k) {
                    max_joint = std::max(max_joint, float(std::fabs(pos[k] - joints[f * 34 * 3 + k])));
                }
                for (int k = 0; k < 34 * 9; ++k) {
                    max_rot = std::max(max_rot, float(std::fabs(rot[k] - grots[f * 34 * 9 + k])));
                }
            }
            std::printf("%-40s frames %2llu  max |Δroot| %.2e  max |Δjoint| %.2e  max |ΔR| %.2e\n", c.name.c_str(),
                        (unsigned long long) frames, max_root, max_joint, max_rot);
            EXPECT_LE(max_root, k_tol);
            EXPECT_LE(max_joint, k_tol);
            EXPECT_LE(max_rot, k_tol_rot);
        }
        mb_motion_free(motion);
        ++compared;
    }
    mb_model_free(model);
    EXPECT_GE(compared, 5);
}

} // namespace
