#include "motion/boundary-poses.h"

#include "format/error.h"
#include "motion/qpos.h"
#include "motion/rotation.h"

#include <cmath>
#include <numbers>
#include <string>

namespace mb {

namespace {

constexpr double k_boundary_fps   = 30.0;                   // frame rate of the forward differences
constexpr float  k_max_abs        = 1.0e4f;                 // same bound as raw features
constexpr double k_quat_norm2_min = 0.99 * 0.99;            // |q| within 1 ± 0.01
constexpr double k_quat_norm2_max = 1.01 * 1.01;

// quaternion (x, y, z, w) → row-major 3x3 (upstream's formula, tolerates non-unit q)
void quat_xyzw_to_matrix(const float * q, double * m) {
    const double wxyz[4] = {q[3], q[0], q[1], q[2]};
    quat_to_matrix(wxyz, m);
}

void check_values(std::span<const float> v, const char * what) {
    for (size_t i = 0; i < v.size(); ++i) {
        if (!std::isfinite(v[i]) || std::fabs(v[i]) > k_max_abs) {
            throw mb::error(mb::status::invalid_argument, std::string(what) + "[" + std::to_string(i) + "] = " + std::to_string(v[i]) +
                                        " is not finite or exceeds 1e4 in magnitude");
        }
    }
}

} // namespace

void boundary_forward_kinematics(const model_support & sup, const float * root, const float * local_xyzw,
                                 double * positions, double * global_rot) {
    // joints are ordered so that parent < index (checked by the bundle loader)
    for (int j = 0; j < k_n_joints; ++j) {
        double local[9];
        quat_xyzw_to_matrix(local_xyzw + j * 4, local);
        const int p = sup.parents[j];
        if (p < 0) {
            for (int k = 0; k < 9; ++k) {
                global_rot[j * 9 + k] = local[k];
            }
            for (int a = 0; a < 3; ++a) {
                positions[j * 3 + a] = double(root[a]) + double(sup.neutral_joints[j * 3 + a]);
            }
            continue;
        }
        // G[j] = G[p] · R_local[j]; t[j] = t[p] + G[p] · (neutral[j] − neutral[p])
        mat_mul(global_rot + p * 9, local, global_rot + j * 9);
        double rel[3];
        for (int a = 0; a < 3; ++a) {
            rel[a] = double(sup.neutral_joints[j * 3 + a]) - double(sup.neutral_joints[p * 3 + a]);
        }
        const double * gp = global_rot + p * 9;
        for (int a = 0; a < 3; ++a) {
            positions[j * 3 + a] = positions[p * 3 + a] + gp[a * 3 + 0] * rel[0] + gp[a * 3 + 1] * rel[1] +
                                   gp[a * 3 + 2] * rel[2];
        }
    }
}

boundary_features encode_boundary_poses(const model_support & sup, boundary_kind kind, std::span<const float> roots,
                                        std::span<const float> local_xyzw) {
    // validate everything before computing anything
    if (roots.size() != size_t(k_boundary_frames * 3)) {
        throw mb::error(mb::status::invalid_argument, "boundary roots need 12 floats ([4, 3]), got " + std::to_string(roots.size()));
    }
    if (local_xyzw.size() != size_t(k_boundary_frames * k_n_joints * 4)) {
        throw mb::error(mb::status::invalid_argument, "boundary rotations need 544 floats ([4, 34, 4]), got " +
                                    std::to_string(local_xyzw.size()));
    }
    check_values(roots, "roots");
    check_values(local_xyzw, "local_xyzw");
    for (int q = 0; q < k_boundary_frames * k_n_joints; ++q) {
        const float * v  = local_xyzw.data() + q * 4;
        const double  n2 = double(v[0]) * v[0] + double(v[1]) * v[1] + double(v[2]) * v[2] + double(v[3]) * v[3];
        if (!(n2 >= k_quat_norm2_min && n2 <= k_quat_norm2_max)) {
            throw mb::error(mb::status::invalid_argument, "quaternion of frame " + std::to_string(q / k_n_joints) + " joint " +
                                        std::to_string(q % k_n_joints) + " has norm " + std::to_string(std::sqrt(n2)) +
                                        ", outside 1 ± 0.01");
        }
    }

    // forward kinematics per frame: positions [4, 34, 3], global rotations [4, 34, 3, 3]
    double pos[k_boundary_frames][k_n_joints * 3];
    double rot[k_boundary_frames][k_n_joints * 9];
    double heading[k_boundary_frames];
    for (int f = 0; f < k_boundary_frames; ++f) {
        boundary_forward_kinematics(sup, roots.data() + f * 3, local_xyzw.data() + f * k_n_joints * 4, pos[f], rot[f]);
        // heading about +Y from the root's global rotation: atan2(R02, R22)
        heading[f] = std::atan2(rot[f][2], rot[f][8]);
    }

    boundary_features out;

    // global root [4, 5]: root position, cos h, sin h
    for (int f = 0; f < k_boundary_frames; ++f) {
        float * g = out.global_root.data() + f * 5;
        g[0]      = float(pos[f][0]);
        g[1]      = float(pos[f][1]);
        g[2]      = float(pos[f][2]);
        g[3]      = float(std::cos(heading[f]));
        g[4]      = float(std::sin(heading[f]));
    }

    // local root [4, 4]: forward differences at 30 fps for frames 0..2, height per frame
    for (int f = 0; f + 1 < k_boundary_frames; ++f) {
        float * l = out.local_root.data() + f * 4;
        l[0]      = float(k_boundary_fps * wrap_pi(heading[f + 1] - heading[f]));
        l[1]      = float(k_boundary_fps * (pos[f + 1][0] - pos[f][0]));
        l[2]      = float(k_boundary_fps * (pos[f + 1][2] - pos[f][2]));
        l[3]      = float(pos[f][1]);
    }
    {
        // last frame: source outgoing velocity is unknown (all zero, masked off);
        // the target repeats its previous velocity
        float *       l3 = out.local_root.data() + 3 * 4;
        const float * l2 = out.local_root.data() + 2 * 4;
        if (kind == boundary_kind::BOUNDARY_KIND_TARGET) {
            l3[0] = l2[0];
            l3[1] = l2[1];
            l3[2] = l2[2];
            l3[3] = float(pos[3][1]);
        }
        out.local_root_mask = {1, 1, 1, uint8_t(kind == boundary_kind::BOUNDARY_KIND_TARGET ? 1 : 0)};
    }

    // pose rows [4, 303]: 33 non-root joints [x − root.x, y, z − root.z], then 34 × 6D global
    // rotation (first two columns); virtual endpoints get the identity orientation
    for (int f = 0; f < k_boundary_frames; ++f) {
        float * row = out.poses.data() + f * k_pose_dim;
        for (int j = 1; j < k_n_joints; ++j) {
            float * r = row + (j - 1) * 3;
            r[0]      = float(pos[f][j * 3 + 0] - pos[f][0]);
            r[1]      = float(pos[f][j * 3 + 1]);
            r[2]      = float(pos[f][j * 3 + 2] - pos[f][2]);
        }
        float * six = row + (k_n_joints - 1) * 3;
        for (int j = 0; j < k_n_joints; ++j) {
            const double * m = rot[f] + j * 9;
            float *        s = six + j * 6;
            s[0]             = float(m[0]);
            s[1]             = float(m[3]);
            s[2]             = float(m[6]);
            s[3]             = float(m[1]);
            s[4]             = float(m[4]);
            s[5]             = float(m[7]);
        }
        for (int j : k_g1_virtual_joints) {
            float * s = six + j * 6;
            s[0] = 1.0f, s[1] = 0.0f, s[2] = 0.0f, s[3] = 0.0f, s[4] = 1.0f, s[5] = 0.0f;
        }
    }

    // FK of in-range inputs can still leave the feature range (e.g. velocities of a far jump)
    check_values(out.global_root, "encoded global root");
    check_values(out.local_root, "encoded local root");
    check_values(out.poses, "encoded pose");
    return out;
}

} // namespace mb
