// skeleton FK (see pose-fk.h)
#include "tools/serve/pose-fk.h"

#include <algorithm>
#include <cmath>

namespace mb::serve {

std::vector<float> skeleton_fk(const int32_t * parents, const float * neutral, int joints, const float * roots,
                               const float * local_xyzw, int frames) {
    std::vector<float>  out(size_t(frames) * joints * 3);
    std::vector<double> g(size_t(joints) * 9), t(size_t(joints) * 3);
    for (int f = 0; f < frames; ++f) {
        for (int j = 0; j < joints; ++j) {
            const float * q = &local_xyzw[(size_t(f) * joints + j) * 4];
            double        x = q[0], y = q[1], z = q[2], w = q[3];
            const double  n = std::sqrt(x * x + y * y + z * z + w * w);
            x /= n, y /= n, z /= n, w /= n;
            const double l[9] = {1 - 2 * (y * y + z * z), 2 * (x * y - z * w),     2 * (x * z + y * w),
                                 2 * (x * y + z * w),     1 - 2 * (x * x + z * z), 2 * (y * z - x * w),
                                 2 * (x * z - y * w),     2 * (y * z + x * w),     1 - 2 * (x * x + y * y)};
            double *     gj   = &g[size_t(j) * 9];
            double *     tj   = &t[size_t(j) * 3];
            const int    p    = parents[j];
            if (p < 0) {
                std::copy(l, l + 9, gj);
                for (int c = 0; c < 3; ++c) tj[c] = neutral[j * 3 + c];
            } else {
                const double * gp = &g[size_t(p) * 9];
                for (int r = 0; r < 3; ++r) {
                    for (int c = 0; c < 3; ++c) gj[r * 3 + c] = gp[r * 3] * l[c] + gp[r * 3 + 1] * l[3 + c] + gp[r * 3 + 2] * l[6 + c];
                    double rel = 0;
                    for (int k = 0; k < 3; ++k) rel += gp[r * 3 + k] * (double(neutral[j * 3 + k]) - neutral[p * 3 + k]);
                    tj[r] = t[size_t(p) * 3 + r] + rel;
                }
            }
            for (int c = 0; c < 3; ++c) out[(size_t(f) * joints + j) * 3 + c] = float(tj[c] + roots[f * 3 + c]);
        }
    }
    return out;
}

} // namespace mb::serve
