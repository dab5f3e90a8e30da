// end-to-end parity through the C ABI: the reference-small fixture converted to a bundle, each case's
// recorded predict inputs supplied with mb_inference_request_set_features / set_mask, mb_model_infer;
// the duration must equal upstream's exactly, root translations and FK joint positions of the returned
// local quaternions must match upstream's within 1e-4, global rotations within 1e-3 (see k_tol_rot). Cases the
// ABI cannot express (Gumbel with torch's noise, 3 decoding steps, skip_ending_target_cond) are
// listed as not applicable; a fixed token count is expressed as a single allowed duration.
#include <motionbricks/inference.h>

#include "agent/agent.h"
#include "format/style.h"
#include "motion/boundary-poses.h"
#include "motion/qpos.h"

#include "support/clip-library.h"
#include "support/lenient-npz.h"

#include "support/npz.h"
#include "support/qpos-compare.h"
#include "support/reference-small.h"
#include "support/test-paths.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
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

// what mb_model_infer_traced reported: arrays by name in arrival order, "step_" arrays stacked
struct tap_log {
    std::vector<std::string>           names;
    std::vector<std::vector<uint64_t>> shapes;
    std::vector<std::vector<float>>    data;

    static void on_tap(void * user, const char * name, const float * d, const uint64_t * shape, uint32_t n_dims) {
        auto &   log   = *static_cast<tap_log *>(user);
        uint64_t count = 1;
        for (uint32_t i = 0; i < n_dims; ++i) count *= shape[i];
        const auto it = std::find(log.names.begin(), log.names.end(), name);
        if (it != log.names.end() && n_dims > 0) {
            const size_t k = size_t(it - log.names.begin());
            log.shapes[k][0] += shape[0];
            log.data[k].insert(log.data[k].end(), d, d + count);
            return;
        }
        log.names.push_back(name);
        log.shapes.emplace_back(shape, shape + n_dims);
        log.data.emplace_back(d, d + count);
    }
    const std::vector<float> * find(const std::string & name, const std::vector<uint64_t> & shape) const {
        const auto it = std::find(names.begin(), names.end(), name);
        if (it == names.end() || shapes[size_t(it - names.begin())] != shape) return nullptr;
        return &data[size_t(it - names.begin())];
    }
};

TEST(CapiParity, ReferenceSmallCasesThroughTheCAbi) {
    MB_REQUIRE_SHARED(dir, "fixtures/reference-small");
    if (!std::filesystem::exists(bundle_dir() + "/support.gguf")) {
        GTEST_SKIP() << "skipped: no converted reference-small bundle at " << bundle_dir();
    }
    const mb::model_support sup = mb::test::reference_support(dir);
    char                    err[512];
    mb_model *              model = nullptr;
    ASSERT_EQ(mb_model_load(bundle_dir().c_str(), nullptr, &model, err, sizeof err), MB_OK) << err;

    const mb::qpos_converter conv;
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
        // the same request traced: the same motion bitwise, and upstream's intermediates
        tap_log     taps;
        mb_motion * traced = nullptr;
        ASSERT_EQ(mb_model_infer_traced(model, req, &tap_log::on_tap, &taps, &traced, err, sizeof err), MB_OK) << err;
        mb_motion * none = nullptr;
        EXPECT_EQ(mb_model_infer_traced(model, req, nullptr, nullptr, &none, err, sizeof err), MB_INVALID_ARGUMENT);
        EXPECT_EQ(none, nullptr);
        mb_inference_request_free(req);
        {
            const auto * tok = taps.find("pred_pose_tokens", {uint64_t(n), 8});
            ASSERT_NE(tok, nullptr) << "no pred_pose_tokens [n, 8] tap";
            const auto ref_tok = npz.get("mid_pred_pose_tokens", {1, 16, 8}).to_i64();
            for (int i = 0; i < n * 8; ++i) ASSERT_EQ((*tok)[i], float(ref_tok[i])) << "token " << i;
            const auto * logits = taps.find("step_pose_logits", {1, uint64_t(n), 8, 10});
            ASSERT_NE(logits, nullptr) << "no step_pose_logits [1, n, 8, 10] tap";
            const auto * recon = taps.find("decoder_recon_state", {uint64_t(4 * n), 413});
            ASSERT_NE(recon, nullptr);
            const auto ref_recon = npz.get("mid_decoder_recon_state", {1, 64, 413}).to_f32();
            float      worst     = 0.0f;
            for (size_t i = 0; i < recon->size(); ++i) worst = std::max(worst, std::fabs((*recon)[i] - ref_recon[i]));
            EXPECT_LE(worst, k_tol) << "decoder_recon_state";
            const auto * shared = taps.find("root_shared_tf_out", {9, 64});
            EXPECT_NE(shared, nullptr) << "no root_shared_tf_out [9, 64] tap";
        }

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
            // the motion's own joint positions, and its qpos against upstream's features through the G1
            // converter (hinges weighted by their conditioning, as in the agent parity)
            const float * jp = nullptr, * qp = nullptr;
            uint64_t      nj = 0, nqp = 0;
            ASSERT_EQ(mb_motion_get_joint_positions(motion, &jp, &nj, err, sizeof err), MB_OK) << err;
            ASSERT_EQ(mb_motion_get_mujoco_qpos(motion, &qp, &nqp, err, sizeof err), MB_OK) << err;
            ASSERT_EQ(nj, frames * 34 * 3);
            ASSERT_EQ(nqp, frames * 36);
            float max_jp = 0.0f;
            for (uint64_t k = 0; k < nj; ++k) max_jp = std::max(max_jp, std::fabs(jp[k] - joints[k]));
            std::vector<float> want(frames * 36);
            for (uint64_t f = 0; f < frames; ++f) conv.features_to_qpos(&glob[f * 414], &want[f * 36]);
            const double max_qpos = mb::test::qpos_diff(qp, want.data(), int64_t(frames), mb::test::gain_weight(conv, glob.data()));
            std::printf("%-40s frames %2llu  max |Δroot| %.2e  max |Δjoint| %.2e  max |ΔR| %.2e  joints %.2e  qpos %.2e\n",
                        c.name.c_str(), (unsigned long long) frames, max_root, max_joint, max_rot, max_jp, max_qpos);
            EXPECT_LE(max_root, k_tol);
            EXPECT_LE(max_joint, k_tol);
            EXPECT_LE(max_rot, k_tol_rot);
            EXPECT_LE(max_jp, k_tol);
            EXPECT_LE(max_qpos, k_tol);

            const float * troots = nullptr;
            uint64_t      tnr    = 0;
            ASSERT_EQ(mb_motion_get_root_translations(traced, &troots, &tnr, err, sizeof err), MB_OK);
            ASSERT_EQ(tnr, nr);
            EXPECT_EQ(std::memcmp(troots, roots, nr * sizeof(float)), 0) << "traced motion differs";
            const auto * tj = taps.find("joint_positions", {frames, 34, 3});
            ASSERT_NE(tj, nullptr);
            EXPECT_EQ(std::memcmp(tj->data(), jp, nj * sizeof(float)), 0) << "joint_positions tap vs the motion";
        }
        mb_motion_free(traced);
        mb_motion_free(motion);
        ++compared;
    }
    mb_model_free(model);
    EXPECT_GE(compared, 5);
}

// upstream's walk → walk_left/right remap through mb_agent_set_sidestep_styles: every replan of
// ../shared/fixtures/agent-small whose walk was remapped, from its recorded context, command and
// clip-frame draw. With the side steps the plan has upstream's duration and root path; without
// them its targets come from the walk clip instead.
TEST(CapiParity, SidestepRemapThroughTheCAbi) {
    MB_REQUIRE_SHARED(dir, "fixtures/agent-small");
    if (!std::filesystem::exists(bundle_dir() + "/support.gguf")) {
        GTEST_SKIP() << "skipped: no converted reference-small bundle at " << bundle_dir();
    }
    const auto lib    = mb::test::npz_numeric(dir + "/clip_library.npz");
    const auto run    = mb::test::npz_numeric(dir + "/agent_run.npz");
    const auto styles = mb::test::clip_library_styles(lib);
    const auto tmp    = std::filesystem::path(::testing::TempDir()) / "capi-sidestep";
    std::filesystem::create_directories(tmp);

    char       err[512];
    mb_model * model = nullptr;
    ASSERT_EQ(mb_model_load(bundle_dir().c_str(), nullptr, &model, err, sizeof err), MB_OK) << err;
    auto load = [&](int mode) {
        const std::string path = (tmp / (styles[size_t(mode)].name + ".mbstyle")).string();
        mb::style_write(path, styles[size_t(mode)]);
        mb_style * s = nullptr;
        EXPECT_EQ(mb_style_load(model, path.c_str(), &s, err, sizeof err), MB_OK) << err;
        return s;
    };
    mb_style * walks[3] = {nullptr, load(1), load(2)};   // slow_walk, walk
    mb_style * left = load(13), * right = load(14);
    mb_agent * agent = nullptr;
    ASSERT_EQ(mb_agent_create(model, &agent, err, sizeof err), MB_OK) << err;
    EXPECT_EQ(mb_agent_set_sidestep_styles(agent, left, nullptr, err, sizeof err), MB_INVALID_ARGUMENT);
    EXPECT_EQ(mb_agent_set_sidestep_styles(nullptr, left, right, err, sizeof err), MB_INVALID_ARGUMENT);

    const mb::qpos_converter conv;
    const auto mode_ctl = run.at("rp_mode_controller").to_i64(), mode_fin = run.at("rp_mode_final").to_i64();
    const auto ctx_all = run.at("rp_context_qpos_raw").to_f32(), blended = run.at("rp_qpos_blended").to_f32();
    const auto mv = run.at("rp_movement_world").to_f32(), fc = run.at("rp_facing_world").to_f32();
    const auto draws = run.at("rp_rng_draws").to_i64(), nframes = run.at("rp_num_frames").to_i64();
    const auto out_poses = run.at("rp_out_global_poses").to_f32();
    int remapped = 0;
    for (size_t r = 0; r < mode_ctl.size(); ++r) {
        if ((mode_ctl[r] != 1 && mode_ctl[r] != 2) || mode_fin[r] == mode_ctl[r]) continue;
        SCOPED_TRACE("replan " + std::to_string(r) + ": " + styles[size_t(mode_ctl[r])].name + " → " +
                     styles[size_t(mode_fin[r])].name);
        ++remapped;
        // the recorded world qpos context → pelvis positions and local rotations (motion space)
        float pos[4 * 34 * 3], rot[4 * 34 * 9], roots[4 * 3], local[4 * 34 * 4];
        conv.qpos_to_transforms(&ctx_all[r * 4 * 36], 4, pos, rot);
        for (int f = 0; f < 4; ++f) std::copy_n(&pos[f * 34 * 3], 3, &roots[f * 3]);
        mb::local_rotations_xyzw(rot, 4, local);

        mb_command * cmd = nullptr;
        ASSERT_EQ(mb_command_create(&cmd, err, sizeof err), MB_OK);
        ASSERT_EQ(mb_command_set_style(cmd, walks[mode_ctl[r]], err, sizeof err), MB_OK);
        // MuJoCo (x forward, y left) → motion (x left, z forward)
        ASSERT_EQ(mb_command_set_movement_direction(cmd, mv[r * 3 + 1], 0, mv[r * 3 + 0], err, sizeof err), MB_OK) << err;
        ASSERT_EQ(mb_command_set_facing_direction(cmd, fc[r * 3 + 1], 0, fc[r * 3 + 0], err, sizeof err), MB_OK) << err;
        ASSERT_EQ(mb_command_set_seed(cmd, uint64_t(draws[r * 2 + 1]), err, sizeof err), MB_OK);
        ASSERT_EQ(mb_command_set_sampling_argmax(cmd, 1, err, sizeof err), MB_OK);

        mb_motion * plain = nullptr, * remap = nullptr;
        ASSERT_EQ(mb_agent_set_sidestep_styles(agent, nullptr, nullptr, err, sizeof err), MB_OK) << err;
        ASSERT_EQ(mb_agent_set_context(agent, roots, local, 4, 34, err, sizeof err), MB_OK) << err;
        ASSERT_EQ(mb_agent_plan(agent, cmd, &plain, err, sizeof err), MB_OK) << err;
        ASSERT_EQ(mb_agent_set_sidestep_styles(agent, left, right, err, sizeof err), MB_OK) << err;
        ASSERT_EQ(mb_agent_set_context(agent, roots, local, 4, 34, err, sizeof err), MB_OK) << err;
        ASSERT_EQ(mb_agent_plan(agent, cmd, &remap, err, sizeof err), MB_OK) << err;

        uint64_t frames = 0;
        ASSERT_EQ(mb_motion_get_frame_count(remap, &frames, err, sizeof err), MB_OK);
        EXPECT_EQ(int64_t(frames), nframes[r]) << "duration differs from upstream's";
        const float * root = nullptr;
        uint64_t      n    = 0;
        ASSERT_EQ(mb_motion_get_root_translations(remap, &root, &n, err, sizeof err), MB_OK);
        double e_root = 0;
        for (uint64_t f = 0; f < std::min<uint64_t>(frames, uint64_t(nframes[r])); ++f) {
            const float * q = &blended[(r * 64 + f) * 36];   // MuJoCo (x, y, z) → motion (y, z, x)
            e_root = std::max({e_root, double(std::fabs(root[f * 3 + 0] - q[1])), double(std::fabs(root[f * 3 + 1] - q[2])),
                               double(std::fabs(root[f * 3 + 2] - q[0]))});
        }
        EXPECT_LE(e_root, 1e-4);
        const float * qp = nullptr;
        uint64_t      nq = 0;
        ASSERT_EQ(mb_motion_get_mujoco_qpos(remap, &qp, &nq, err, sizeof err), MB_OK);
        ASSERT_EQ(nq, frames * 36);
        const auto   feat   = out_poses.begin() + long(r * 64 * 414);
        const double e_qpos = mb::test::qpos_diff(qp, &blended[r * 64 * 36], int64_t(std::min<uint64_t>(frames, 64)),
                                                  mb::test::gain_weight(conv, &*feat));
        EXPECT_LE(e_qpos, 1e-4);

        // the plain plan placed the walk clip's poses as targets, the remapped one the side step's
        const float * ta = nullptr, * tb = nullptr;
        uint64_t      na = 0, nb = 0;
        ASSERT_EQ(mb_motion_get_target_local_rotations_xyzw(plain, &ta, &na, err, sizeof err), MB_OK);
        ASSERT_EQ(mb_motion_get_target_local_rotations_xyzw(remap, &tb, &nb, err, sizeof err), MB_OK);
        ASSERT_EQ(na, nb);
        double d_target = 0;
        for (uint64_t i = 0; i < na; ++i) d_target = std::max(d_target, double(std::fabs(ta[i] - tb[i])));
        EXPECT_GT(d_target, 1e-2);
        std::printf("  replan %zu %s → %s: %llu frames, max |Δroot| %.2e m, qpos %.2e vs upstream; targets differ from walk's by %.2f\n",
                    r, styles[size_t(mode_ctl[r])].name.c_str(), styles[size_t(mode_fin[r])].name.c_str(),
                    (unsigned long long) frames, e_root, e_qpos, d_target);
        mb_motion_free(plain);
        mb_motion_free(remap);
        mb_command_free(cmd);
    }
    EXPECT_EQ(remapped, 4);   // steps 144, 160 (walk) and 208, 224 (slow_walk) (fixture README)
    mb_agent_free(agent);
    mb_style_free(walks[1]);
    mb_style_free(walks[2]);
    mb_style_free(left);
    mb_style_free(right);
    mb_model_free(model);
}

} // namespace
