#include "motion/skeleton-fk.h"
#include "motion/rotation.h"

#include "motion/motion-rep.h"

namespace mb {

skeleton_fk skeleton_fk::from_support(const model_support & sup) {
    skeleton_fk s;
    for (int j = 0; j < k_n_joints; ++j) {
        const int32_t p = sup.parents[j];
        if ((j == 0) != (p < 0) || p >= j) {
            throw error(status::incompatible_model,
                        "skeleton: joint " + std::to_string(j) + " has invalid parent " + std::to_string(p));
        }
        s.parents[j] = p;
        for (int i = 0; i < 3; ++i) {
            const float v = sup.neutral_joints[j * 3 + i];
            s.offsets[j * 3 + i] = p < 0 ? v : v - sup.neutral_joints[p * 3 + i];
        }
    }
    return s;
}

void skeleton_fk::run(const float * global, int64_t n, float * positions, float * local_xyzw,
                      float * global_rots) const {
    float g[k_n_joints][9];     // global rotations from the 6D features
    float rg[k_n_joints][9];    // global rotations recomposed by FK
    float tg[k_n_joints][3];    // FK translations (root at the origin)
    for (int64_t t = 0; t < n; ++t) {
        const float * f = global + t * k_global_dim;
        for (int j = 0; j < k_n_joints; ++j) cont6d_to_matrix(f + k_global_rot6d + 6 * j, g[j]);
        for (int j = 0; j < k_n_joints; ++j) {
            // local = parentᵀ · global (the root's parent is the identity)
            float l[9];
            const int p = parents[j];
            if (p < 0) {
                for (int k = 0; k < 9; ++k) l[k] = g[j][k];
            } else {
                mat_tmul(g[p], g[j], l);
            }
            if (local_xyzw) {
                float q[4];
                matrix_to_quat_wxyz(l, q);
                float * o = local_xyzw + (t * k_n_joints + j) * 4;
                o[0] = q[1];
                o[1] = q[2];
                o[2] = q[3];
                o[3] = q[0];
            }
            // 4x4 chain: [Rp tp; 0 1] · [Rl off; 0 1]
            const float * off = offsets.data() + 3 * j;
            if (p < 0) {
                for (int k = 0; k < 9; ++k) rg[j][k] = l[k];
                for (int i = 0; i < 3; ++i) tg[j][i] = off[i];
            } else {
                for (int r = 0; r < 3; ++r) {
                    for (int c = 0; c < 3; ++c) {
                        rg[j][r * 3 + c] = rg[p][r * 3 + 0] * l[0 * 3 + c] + rg[p][r * 3 + 1] * l[1 * 3 + c] +
                                           rg[p][r * 3 + 2] * l[2 * 3 + c];
                    }
                    tg[j][r] = rg[p][r * 3 + 0] * off[0] + rg[p][r * 3 + 1] * off[1] + rg[p][r * 3 + 2] * off[2] +
                               tg[p][r];
                }
            }
            if (positions) {
                for (int i = 0; i < 3; ++i) positions[(t * k_n_joints + j) * 3 + i] = tg[j][i] + f[i];
            }
            if (global_rots) {
                for (int k = 0; k < 9; ++k) global_rots[(t * k_n_joints + j) * 9 + k] = rg[j][k];
            }
        }
    }
}

} // namespace mb
