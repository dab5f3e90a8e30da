// resampling of qpos clips (see qpos-resample.h)
#include "export/qpos-resample.h"

#include <algorithm>
#include <cmath>

namespace mb {

int64_t resampled_frames(int64_t frames, int rate) {
    if (rate == 30) return frames;
    // integer form of floor(frames / 30 * rate), exact for every count
    return frames * rate / 30;
}

void quat_slerp(const double * a, const double * b, double t, double * out) {
    double d = a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3];
    double bb[4] = {b[0], b[1], b[2], b[3]};
    if (d < 0) {
        for (double & v : bb) v = -v;
        d = -d;
    }
    double q[4];
    if (d > 0.9995) {
        for (int i = 0; i < 4; ++i) q[i] = a[i] + t * (bb[i] - a[i]);
    } else {
        const double th = std::acos(std::min(1.0, d)), s = std::sin(th);
        const double wa = std::sin((1 - t) * th) / s, wb = std::sin(t * th) / s;
        for (int i = 0; i < 4; ++i) q[i] = wa * a[i] + wb * bb[i];
    }
    const double n = std::sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
    for (int i = 0; i < 4; ++i) out[i] = n > 0 ? q[i] / n : 0.0;
}

void qpos_sample(const float * qpos, int64_t frames, int64_t f0, double w, double * out) {
    f0               = std::clamp<int64_t>(f0, 0, frames - 1);
    const int64_t f1 = std::min(f0 + 1, frames - 1);
    const float * a  = qpos + f0 * k_qpos_dim;
    const float * b  = qpos + f1 * k_qpos_dim;
    for (int c = 0; c < k_qpos_dim; ++c) out[c] = (1 - w) * double(a[c]) + w * double(b[c]);
    // the quaternion of frame f0 when f1 == f0 would still be normalised by slerp: keep it as given
    if (f1 == f0 || w == 0) {
        for (int c = 3; c < 7; ++c) out[c] = a[c];
        return;
    }
    const double qa[4] = {a[3], a[4], a[5], a[6]}, qb[4] = {b[3], b[4], b[5], b[6]};
    quat_slerp(qa, qb, w, out + 3);
}

std::vector<double> qpos_resample(const float * qpos, int64_t frames, int rate) {
    const int64_t       n = resampled_frames(frames, rate);
    std::vector<double> out(size_t(n) * k_qpos_dim);
    // exact positions: 30 k / rate = f0 + r / rate in integers
    for (int64_t k = 0; k < n; ++k) {
        qpos_sample(qpos, frames, 30 * k / rate, double(30 * k % rate) / double(rate), &out[size_t(k) * k_qpos_dim]);
    }
    return out;
}

} // namespace mb
