// µs per lane of the host work at the end of a fused chunk, by part: the result arrays allocated
// and zero-filled (predict_chunk's finish step), local → global features, FK (float), the C API's
// qpos conversion (double) and its finite check. Plain timing over many lanes (no perf needed);
// each round frees its lanes' arrays like a caller freeing a batch of motions, so the next round
// allocates memory the allocator may have returned to the system.
// usage: bench-finish-step [LANES] [ROUNDS] [FRAMES]   (defaults 256, 8, 40 = 10 tokens)
#include "motion/g1.h"
#include "motion/motion-rep.h"
#include "motion/qpos.h"
#include "motion/skeleton-fk.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

namespace {

using namespace mb;
using clock_type = std::chrono::steady_clock;

enum part { alloc, to_global, fk, qpos, check, free_arrays, n_parts };
constexpr const char * k_names[n_parts] = {"alloc+zero", "local_to_global+reapply", "fk", "qpos", "finite check",
                                           "free"};

struct lane_arrays {
    std::vector<float> global, joints, rotations, root, qpos;
};

struct timer {
    double *               us;
    clock_type::time_point t0 = clock_type::now();
    void lap(part p) {
        const auto now = clock_type::now();
        us[p] += std::chrono::duration<double, std::micro>(now - t0).count();
        t0 = now;
    }
};

} // namespace

int main(int argc, char ** argv) {
    const int lanes  = argc > 1 ? std::atoi(argv[1]) : 256;
    const int rounds = argc > 2 ? std::atoi(argv[2]) : 8;
    const int F      = argc > 3 ? std::atoi(argv[3]) : 40;
    skeleton_fk fk_tree;     // the G1 tree; offsets of 0.1 m (the cost does not depend on them)
    for (int j = 0; j < k_n_joints; ++j) fk_tree.parents[size_t(j)] = k_g1_parents[j];
    fk_tree.offsets.fill(0.1f);
    const qpos_converter conv;
    std::mt19937                    gen(1);
    std::normal_distribution<float> nd;
    std::vector<float>              local(size_t(lanes) * F * k_local_dim);
    for (float & v : local) v = nd(gen) * 0.3f;

    double us[n_parts] = {}, sink = 0;
    for (int r = 0; r < rounds; ++r) {
        std::vector<lane_arrays> out(static_cast<size_t>(lanes));
        for (int l = 0; l < lanes; ++l) {
            lane_arrays & o = out[size_t(l)];
            timer         t{us};
            o.global.assign(size_t(F) * k_global_dim, 0.0f);
            o.joints.assign(size_t(F) * k_n_joints * 3, 0.0f);
            o.rotations.assign(size_t(F) * k_n_joints * 4, 0.0f);
            o.root.resize(size_t(F) * 3);
            o.qpos.resize(size_t(F) * k_qpos_dim);
            t.lap(alloc);
            local_to_global(local.data() + size_t(l) * F * k_local_dim, F, o.global.data());
            reapply_start_transform(o.global.data(), F, 0.5f, 0.2f, 0.3f);
            t.lap(to_global);
            fk_tree.run(o.global.data(), F, o.joints.data(), o.rotations.data(), nullptr);
            t.lap(fk);
            for (int f = 0; f < F; ++f) conv.features_to_qpos(&o.global[size_t(f) * k_global_dim], &o.qpos[size_t(f) * k_qpos_dim]);
            t.lap(qpos);
            for (const std::vector<float> * v : {&o.global, &o.joints, &o.rotations, &o.qpos}) {
                for (float x : *v) sink += std::isfinite(x) ? 0.0 : 1.0;
            }
            t.lap(check);
        }
        timer t{us};
        out.clear();
        t.lap(free_arrays);
    }
    std::printf("µs per lane (%d lanes × %d rounds, %d frames):", lanes, rounds, F);
    for (int p = 0; p < n_parts; ++p) std::printf(" %s %.1f", k_names[p], us[p] / (double(lanes) * rounds));
    std::printf(" (non-finite %g)\n", sink);
    return 0;
}
