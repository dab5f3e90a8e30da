// MJCF hinge tree and MuJoCo qpos ↔ motion conversion against upstream's own
// converter (../shared/fixtures/qpos, upstream mujoco_helper.py in float32)
#include "format/error.h"
#include "motion/mjcf.h"
#include "motion/qpos.h"

#include "support/lenient-npz.h"
#include "support/qpos-compare.h"
#include "support/test-paths.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <numbers>

using namespace mb;
using mb::test::npy_array;

namespace {

constexpr double k_tol_pos = 1e-5;   // m
constexpr double k_tol_rot = 1e-5;   // matrix entries, quaternion components
constexpr double k_tol_ang = 1e-5;   // rad, for well-conditioned hinges

std::vector<std::string> fixture_files(const std::string & dir, const std::string & prefix) {
    std::vector<std::string> out;
    for (const auto & e : std::filesystem::directory_iterator(dir)) {
        const std::string n = e.path().filename().string();
        if (n.rfind(prefix, 0) == 0 && n.size() > 4 && n.substr(n.size() - 4) == ".npz") out.push_back(e.path().string());
    }
    std::sort(out.begin(), out.end());
    return out;
}

const npy_array & member(const std::map<std::string, npy_array> & z, const std::string & name,
                         const std::vector<int64_t> & shape) {
    auto it = z.find(name);
    if (it == z.end()) throw std::runtime_error("fixture lacks " + name);
    if (!shape.empty() && it->second.shape != shape) throw std::runtime_error("fixture " + name + " has another shape");
    return it->second;
}

} // namespace

TEST(mjcf, g1_xml_matches_builtin_constants) {
    MB_REQUIRE_SHARED(xml, "data/upstream/mjcf/g1.xml");
    const mjcf_model   parsed  = mjcf_load(xml);
    const mjcf_model & builtin = mjcf_g1();
    EXPECT_EQ(parsed.base_body, builtin.base_body);
    ASSERT_EQ(parsed.hinges.size(), builtin.hinges.size());
    for (size_t k = 0; k < parsed.hinges.size(); ++k) {
        const mjcf_hinge & a = parsed.hinges[k];
        const mjcf_hinge & b = builtin.hinges[k];
        SCOPED_TRACE(a.joint);
        EXPECT_EQ(a.joint, b.joint);
        EXPECT_EQ(a.body, b.body);
        EXPECT_EQ(a.parent, b.parent);
        EXPECT_EQ(a.pos, b.pos);
        EXPECT_EQ(a.has_quat, b.has_quat);
        EXPECT_EQ(a.quat, b.quat);
        EXPECT_EQ(a.axis, b.axis);
        EXPECT_EQ(a.has_range, b.has_range);
        EXPECT_EQ(a.range, b.range);
    }
}

TEST(mjcf, rejects_malformed_or_unsupported_models) {
    const std::string ok_head = "<mujoco><worldbody><body name='b' pos='0 0 1'><freejoint/>";
    const std::string ok_tail = "</body></worldbody></mujoco>";
    const std::string hinge   = "<body name='c' pos='0 0 0'><joint name='j' axis='0 1 0'/></body>";
    // the well-formed base case parses
    const mjcf_model m = mjcf_parse(ok_head + hinge + ok_tail, "ok");
    ASSERT_EQ(m.hinges.size(), 1u);
    EXPECT_EQ(m.hinges[0].axis, 1);
    EXPECT_EQ(m.hinges[0].parent, 0);

    const std::vector<std::pair<std::string, std::string>> bad = {
        {"empty", ""},
        {"not mujoco", "<robot/>"},
        {"unclosed", ok_head + hinge},
        {"mismatched end", ok_head + hinge + "</worldbody></body></mujoco>"},
        {"unterminated comment", ok_head + "<!-- " + hinge + ok_tail},
        {"unterminated attribute", "<mujoco><worldbody><body name='b></body></worldbody></mujoco>"},
        {"duplicate attribute", "<mujoco a='1' a='2'/>"},
        {"no freejoint", "<mujoco><worldbody><body name='b'>" + hinge + ok_tail},
        {"no hinges", ok_head + ok_tail},
        {"diagonal axis", ok_head + "<body name='c'><joint name='j' axis='1 1 0'/></body>" + ok_tail},
        {"negative axis", ok_head + "<body name='c'><joint name='j' axis='0 -1 0'/></body>" + ok_tail},
        {"no axis", ok_head + "<body name='c'><joint name='j'/></body>" + ok_tail},
        {"slide joint", ok_head + "<body name='c'><joint name='j' type='slide' axis='1 0 0'/></body>" + ok_tail},
        {"bad number", ok_head + "<body name='c' pos='0 x 0'><joint name='j' axis='1 0 0'/></body>" + ok_tail},
        {"two numbers", ok_head + "<body name='c' pos='0 0'><joint name='j' axis='1 0 0'/></body>" + ok_tail},
        {"nan", ok_head + "<body name='c' pos='0 nan 0'><joint name='j' axis='1 0 0'/></body>" + ok_tail},
        {"unknown class", ok_head + "<body name='c'><joint name='j' class='nope'/></body>" + ok_tail},
        {"two joints in a body", ok_head + "<body name='c'><joint name='j' axis='1 0 0'/><joint name='k' axis='1 0 0'/></body>" + ok_tail},
        {"joint-less body between hinges", ok_head + "<body name='c'><body name='d'><joint name='j' axis='1 0 0'/></body></body>" + ok_tail},
        {"unnamed joint", ok_head + "<body name='c'><joint axis='1 0 0'/></body>" + ok_tail},
        {"deep nesting", std::string("<mujoco>") + [] { std::string s; for (int i = 0; i < 300; ++i) s += "<a>"; return s; }()},
    };
    for (const auto & [what, text] : bad) {
        try {
            mjcf_parse(text, what);
            ADD_FAILURE() << what << " was accepted";
        } catch (const mb::error & e) {
            // malformed bytes: invalid_format, the message naming the origin and the byte
            EXPECT_EQ(e.code(), status::invalid_format) << what;
            EXPECT_EQ(std::string(e.what()).rfind(std::string(what) + ": byte ", 0), 0u) << e.what();
        }
    }
    // class defaults resolve through nested default classes
    const mjcf_model d = mjcf_parse("<mujoco><default><default class='a'><joint axis='0 0 1' range='-1 1'/>"
                                    "<default class='b'><joint damping='1'/></default></default></default>"
                                    "<worldbody><body name='r'><freejoint/><body name='c'><joint name='j' class='b'/>"
                                    "</body></body></worldbody></mujoco>", "classes");
    ASSERT_EQ(d.hinges.size(), 1u);
    EXPECT_EQ(d.hinges[0].axis, 2);
    EXPECT_TRUE(d.hinges[0].has_range);
}

TEST(qpos, converter_state_matches_upstream) {
    MB_REQUIRE_SHARED(path, "fixtures/qpos/converter_constants.npz");
    const auto            z = mb::test::npz_numeric(path);
    const qpos_converter  conv;

    const auto q2t = member(z, "rot_offsets_q2t", {34, 3, 3}).to_f64();
    const auto f2q = member(z, "rot_offsets_f2q", {34, 3, 3}).to_f64();
    double     worst = 0;
    for (int i = 0; i < 34 * 9; ++i) {
        worst = std::max(worst, std::fabs(q2t[i] - conv.offset_q2t()[i]));
        worst = std::max(worst, std::fabs(f2q[i] - conv.offset_f2q()[i]));
    }
    EXPECT_LE(worst, 1e-7) << "body-quat offsets";

    const auto neutral = member(z, "mujoco_neutral_positions", {30, 3}).to_f64();
    worst = 0;
    for (int i = 0; i < 90; ++i) worst = std::max(worst, std::fabs(neutral[i] - conv.body_neutral()[i]));
    EXPECT_LE(worst, 1e-7) << "MuJoCo rest positions";

    const auto parents = member(z, "mujoco_parents", {30}).to_i64();
    for (int b = 0; b < 30; ++b) EXPECT_EQ(parents[b], conv.body_parent()[b]) << "body " << b;
    const auto h2j = member(z, "mujoco_hinge_to_motion_joint", {29}).to_i64();
    for (int k = 0; k < 29; ++k) EXPECT_EQ(h2j[k], conv.hinge_joint()[k]) << "hinge " << k;
    const auto j2b = member(z, "motion_joint_to_mujoco_body", {34}).to_i64();
    for (int j = 0; j < 34; ++j) EXPECT_EQ(j2b[j], conv.joint_body()[j]) << "joint " << j;
    const auto ax_mj = member(z, "hinge_axis_mujoco", {29, 3}).to_f64();
    const auto ax_mo = member(z, "hinge_axis_motion", {29, 3}).to_f64();
    for (int k = 0; k < 29; ++k) {
        for (int c = 0; c < 3; ++c) {
            EXPECT_EQ(ax_mj[k * 3 + c], c == conv.hinge_axis_mujoco()[k] ? 1.0 : 0.0) << "hinge " << k;
            EXPECT_EQ(ax_mo[k * 3 + c], c == conv.hinge_axis_motion()[k] ? 1.0 : 0.0) << "hinge " << k;
        }
    }
    const auto range = member(z, "hinge_range", {29, 2}).to_f64();
    for (int k = 0; k < 29; ++k) {
        EXPECT_EQ(range[k * 2 + 0], mjcf_g1().hinges[k].range[0]) << "hinge " << k;
        EXPECT_EQ(range[k * 2 + 1], mjcf_g1().hinges[k].range[1]) << "hinge " << k;
    }
    const auto skel = member(z, "skeleton_neutral_joints", {34, 3}).to_f64();
    const auto skel_par = member(z, "skeleton_parents", {34}).to_i64();
    for (int j = 0; j < 34; ++j) {
        EXPECT_EQ(skel_par[j], k_g1_parents[j]);
        for (int c = 0; c < 3; ++c) EXPECT_EQ(skel[j * 3 + c], k_g1_neutral[j][c]) << "joint " << j;
    }
}

TEST(qpos, qpos_to_motion_transforms_matches_upstream) {
    MB_REQUIRE_SHARED(dir, "fixtures/qpos");
    const qpos_converter conv;
    const auto           files = fixture_files(dir, "fwd_");
    ASSERT_EQ(files.size(), 5u);
    for (const std::string & f : files) {
        SCOPED_TRACE(f);
        const auto    z      = mb::test::npz_numeric(f);
        const auto &  qa     = member(z, "qpos", {});
        const int64_t frames = qa.shape[0];
        const auto    qpos   = qa.to_f32();
        const auto    want_p = member(z, "joint_pos", {frames, 34, 3}).to_f32();
        const auto    want_r = member(z, "joint_rot", {frames, 34, 3, 3}).to_f32();
        std::vector<float> pos(frames * 34 * 3), rot(frames * 34 * 9);
        conv.qpos_to_transforms(qpos.data(), frames, pos.data(), rot.data());
        double ep = 0, er = 0, ev = 0;
        for (int64_t i = 0; i < frames * 34 * 3; ++i) {
            const double e = std::fabs(pos[i] - want_p[i]);
            ep = std::max(ep, e);
            const int j = int((i / 3) % 34);
            if (j == 7 || j == 14 || j == 25 || j == 33) ev = std::max(ev, e);
        }
        for (int64_t i = 0; i < frames * 34 * 9; ++i) er = std::max(er, (double) std::fabs(rot[i] - want_r[i]));
        EXPECT_LE(ep, k_tol_pos);
        EXPECT_LE(er, k_tol_rot);
        std::printf("  %s: %lld frames, max |pos| err %.2e m (virtual joints %.2e), max |rot| err %.2e\n",
                    std::filesystem::path(f).filename().c_str(), (long long) frames, ep, ev, er);
    }
}

namespace {

// compares qpos rows: position, quaternion up to sign, hinge angles modulo 2π (scaled by the
// conditioning radius when given)
void expect_qpos_near(const std::vector<float> & got, const std::vector<float> & want, int64_t frames,
                      const std::vector<float> * radius, const std::string & what) {
    mb::test::hinge_weight weight;
    if (radius) weight = [radius](int64_t f, int k) { return std::min(1.0, (double) (*radius)[f * 29 + k]); };
    const mb::test::qpos_errors e = mb::test::qpos_compare(got.data(), want.data(), frames, weight);
    EXPECT_LE(e.position, k_tol_pos) << what;
    EXPECT_LE(e.quaternion, k_tol_rot) << what;
    EXPECT_LE(e.hinge, k_tol_ang) << what;
    std::printf("  %s: max |root| err %.2e m, |quat| err %.2e (up to sign), |hinge| err x radius %.2e rad\n",
                what.c_str(), e.position, e.quaternion, e.hinge);
}

} // namespace

TEST(qpos, motion_features_to_qpos_matches_upstream) {
    MB_REQUIRE_SHARED(dir, "fixtures/qpos");
    const qpos_converter conv;
    const auto           files = fixture_files(dir, "rev_");
    ASSERT_EQ(files.size(), 4u);
    for (const std::string & f : files) {
        SCOPED_TRACE(f);
        const auto    z      = mb::test::npz_numeric(f);
        const auto &  fa     = member(z, "in_features", {});
        const int64_t frames = fa.shape[0];
        const auto    feat   = fa.to_f32();
        const auto    want   = member(z, "qpos", {frames, 36}).to_f32();
        const auto    radius = member(z, "cond_hinge_atan2_radius", {frames, 29}).to_f32();
        const auto    branch = member(z, "cond_root_quat_branch", {frames}).to_i64();
        const auto    gap    = member(z, "cond_root_quat_branch_gap", {frames}).to_f32();
        std::vector<float> got(frames * 36), got_radius(frames * 29);
        for (int64_t t = 0; t < frames; ++t) conv.features_to_qpos(&feat[t * 414], &got[t * 36], &got_radius[t * 29]);
        expect_qpos_near(got, want, frames, &radius, std::filesystem::path(f).filename().string());
        double e_radius = 0;
        for (size_t i = 0; i < radius.size(); ++i) e_radius = std::max(e_radius, (double) std::fabs(got_radius[i] - radius[i]));
        EXPECT_LE(e_radius, 1e-5) << "hinge atan2 conditioning radius";

        // the quaternion branch rule: same branch ⇒ same sign, exactly as upstream
        for (int64_t t = 0; t < frames; ++t) {
            if (gap[t] < 1e-4f) continue;
            const float * g = &got[t * 36 + 3];
            const float * w = &want[t * 36 + 3];
            EXPECT_GT(g[0] * w[0] + g[1] * w[1] + g[2] * w[2] + g[3] * w[3], 0.0f)
                << "frame " << t << " branch " << branch[t] << ": quaternion sign differs from upstream";
        }

        // that qpos back to transforms (what the agent's next context sees)
        const auto bp = member(z, "back_joint_pos", {frames, 34, 3}).to_f32();
        const auto br = member(z, "back_joint_rot", {frames, 34, 3, 3}).to_f32();
        std::vector<float> pos(frames * 34 * 3), rot(frames * 34 * 9);
        conv.qpos_to_transforms(want.data(), frames, pos.data(), rot.data());
        double ep = 0, er = 0;
        for (size_t i = 0; i < pos.size(); ++i) ep = std::max(ep, (double) std::fabs(pos[i] - bp[i]));
        for (size_t i = 0; i < rot.size(); ++i) er = std::max(er, (double) std::fabs(rot[i] - br[i]));
        EXPECT_LE(ep, k_tol_pos);
        EXPECT_LE(er, k_tol_rot);
    }
    // the canonicalised data-pipeline features of the forward cases back to qpos
    for (const std::string & f : fixture_files(dir, "fwd_")) {
        SCOPED_TRACE(f);
        const auto    z      = mb::test::npz_numeric(f);
        const auto &  fa     = member(z, "feat414", {});
        const int64_t frames = fa.shape[0];
        const auto    feat   = fa.to_f32();
        const auto    want   = member(z, "qpos_from_feat414", {frames, 36}).to_f32();
        std::vector<float> got(frames * 36);
        for (int64_t t = 0; t < frames; ++t) conv.features_to_qpos(&feat[t * 414], &got[t * 36]);
        expect_qpos_near(got, want, frames, nullptr, std::filesystem::path(f).filename().string() + " feat414");
    }
}

TEST(qpos, quaternion_branch_rule) {
    // a half turn about x: q_abs = [0, 2, 0, 0] picks row 1 → (0, 1, 0, 0)
    const double half_x[9] = {1, 0, 0, 0, -1, 0, 0, 0, -1};
    double       q[4];
    matrix_to_quat_wxyz(half_x, q);
    EXPECT_EQ(q[0], 0.0);
    EXPECT_EQ(q[1], 1.0);
    EXPECT_EQ(q[2], 0.0);
    EXPECT_EQ(q[3], 0.0);
    // identity: row 0, w = 1
    const double id[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
    matrix_to_quat_wxyz(id, q);
    EXPECT_EQ(q[0], 1.0);
    // no sign canonicalisation: a rotation whose largest q_abs is x keeps x > 0 and may give w < 0
    const double qin[4] = {-0.2, 0.9, 0.3, 0.2};
    double       m[9];
    quat_to_matrix(qin, m);
    matrix_to_quat_wxyz(m, q);
    const double n = std::sqrt(0.04 + 0.81 + 0.09 + 0.04);
    EXPECT_GT(q[1], 0.0);
    EXPECT_LT(q[0], 0.0);
    for (int c = 0; c < 4; ++c) EXPECT_NEAR(q[c], qin[c] / n, 1e-12);
    // round trip through 6D
    const double c6[6] = {m[0], m[3], m[6], m[1], m[4], m[7]};
    double       back[9];
    cont6d_to_matrix(c6, back);
    for (int i = 0; i < 9; ++i) EXPECT_NEAR(back[i], m[i], 1e-12);
}

TEST(qpos, rejects_models_that_do_not_map_onto_g1skel34) {
    mjcf_model m = mjcf_g1();
    m.hinges.pop_back();
    EXPECT_THROW(qpos_converter{m}, mb::error);
    m = mjcf_g1();
    m.hinges[3].joint = "left_kneecap_joint";
    EXPECT_THROW(qpos_converter{m}, mb::error);
    m = mjcf_g1();
    m.hinges[4].parent = 1;   // ankle pitch hanging off the hip
    EXPECT_THROW(qpos_converter{m}, mb::error);
    m = mjcf_g1();
    m.hinges[1].quat = {0, 0, 0, 0};
    EXPECT_THROW(qpos_converter{m}, mb::error);
}
