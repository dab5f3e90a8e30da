#include "physics/mujoco/collision-prefilter.h"
#include "physics/mujoco/sim.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <mutex>

namespace mb::physics {

namespace {

constexpr double k_slack = 1e-4;   // m beyond the margin: MPR's tolerances are far below it

thread_local const geom_boxes * t_boxes   = nullptr;
thread_local long               t_skipped = 0;
std::atomic<bool>               g_enabled{true};
mjfCollision                    g_original[mjNGEOMTYPES];   // [type1][mjGEOM_MESH] before the hook

// true when the oriented boxes of g1 and g2 are more than `gap` apart along one of the 15 axes of
// the separating-axis test (3 + 3 face normals, 9 edge cross products)
bool separated(const geom_boxes & b, const mjData * d, int g1, int g2, double gap) {
    const double * A  = d->geom_xmat + 9 * g1;   // row-major: world = A · local
    const double * B  = d->geom_xmat + 9 * g2;
    const double * h1 = b.half.data() + 3 * g1;
    const double * h2 = b.half.data() + 3 * g2;
    double         t[3];
    for (int r = 0; r < 3; ++r) {
        double c1 = d->geom_xpos[3 * g1 + r], c2 = d->geom_xpos[3 * g2 + r];
        for (int k = 0; k < 3; ++k) {
            c1 += A[3 * r + k] * b.centre[size_t(3 * g1 + k)];
            c2 += B[3 * r + k] * b.centre[size_t(3 * g2 + k)];
        }
        t[r] = c2 - c1;
    }
    auto apart = [&](const double * L) {
        const double len = std::sqrt(L[0] * L[0] + L[1] * L[1] + L[2] * L[2]);
        if (len < 1e-9) return false;   // parallel edges: the face axes decide
        double r1 = 0, r2 = 0;
        for (int i = 0; i < 3; ++i) {
            r1 += h1[i] * std::fabs(A[i] * L[0] + A[3 + i] * L[1] + A[6 + i] * L[2]);
            r2 += h2[i] * std::fabs(B[i] * L[0] + B[3 + i] * L[1] + B[6 + i] * L[2]);
        }
        return std::fabs(t[0] * L[0] + t[1] * L[1] + t[2] * L[2]) > r1 + r2 + gap * len;
    };
    for (int i = 0; i < 3; ++i) {
        const double a[3] = {A[i], A[3 + i], A[6 + i]}, c[3] = {B[i], B[3 + i], B[6 + i]};
        if (apart(a) || apart(c)) return true;
    }
    for (int i = 0; i < 3; ++i) {
        for (int j = 0; j < 3; ++j) {
            const double a[3] = {A[i], A[3 + i], A[6 + i]}, c[3] = {B[j], B[3 + j], B[6 + j]};
            const double L[3] = {a[1] * c[2] - a[2] * c[1], a[2] * c[0] - a[0] * c[2], a[0] * c[1] - a[1] * c[0]};
            if (apart(L)) return true;
        }
    }
    return false;
}

template <int type1> int filtered(const mjModel * m, const mjData * d, mjContact * con, int g1, int g2, mjtNum margin) {
    const geom_boxes * b = t_boxes;
    if (b && b->model == m && g_enabled.load(std::memory_order_relaxed) && separated(*b, d, g1, g2, margin + k_slack)) {
        ++t_skipped;
        return 0;
    }
    return g_original[type1](m, d, con, g1, g2, margin);
}

template <int type1> void hook() {
    if (!mjCOLLISIONFUNC[type1][mjGEOM_MESH]) return;
    g_original[type1]                  = mjCOLLISIONFUNC[type1][mjGEOM_MESH];
    mjCOLLISIONFUNC[type1][mjGEOM_MESH] = filtered<type1>;
}

void install() {
#if mjVERSION_HEADER < 300
    // MuJoCo orders a pair by type (the smaller first): every pair with a mesh and no plane or height
    // field lands in [sphere .. mesh][mesh]
    static std::once_flag once;
    std::call_once(once, [] {
        hook<mjGEOM_SPHERE>();
        hook<mjGEOM_CAPSULE>();
        hook<mjGEOM_ELLIPSOID>();
        hook<mjGEOM_CYLINDER>();
        hook<mjGEOM_BOX>();
        hook<mjGEOM_MESH>();
    });
#endif
}

} // namespace

geom_boxes geom_boxes_of(const mjModel * m) {
    install();
    geom_boxes b;
    b.model = m;
    b.centre.assign(size_t(3 * m->ngeom), 0.0);
    b.half.assign(size_t(3 * m->ngeom), 0.0);
    for (int g = 0; g < m->ngeom; ++g) {
        const double * s = m->geom_size + 3 * g;
        double *       c = b.centre.data() + 3 * g;
        double *       h = b.half.data() + 3 * g;
        switch (m->geom_type[g]) {
        case mjGEOM_SPHERE: h[0] = h[1] = h[2] = s[0]; break;
        case mjGEOM_CAPSULE:
            h[0] = h[1] = s[0];
            h[2]        = s[0] + s[1];
            break;
        case mjGEOM_CYLINDER:
            h[0] = h[1] = s[0];
            h[2]        = s[1];
            break;
        case mjGEOM_ELLIPSOID:
        case mjGEOM_BOX: std::copy(s, s + 3, h); break;
        case mjGEOM_MESH: {
            const int mesh = m->geom_dataid[g];
            if (mesh < 0 || m->mesh_vertnum[mesh] < 1) {
                h[0] = h[1] = h[2] = INFINITY;
                break;
            }
            const float * v = m->mesh_vert + 3 * m->mesh_vertadr[mesh];
            double        lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
            for (int i = 0; i < m->mesh_vertnum[mesh]; ++i) {
                for (int k = 0; k < 3; ++k) {
                    lo[k] = std::min(lo[k], double(v[3 * i + k]));
                    hi[k] = std::max(hi[k], double(v[3 * i + k]));
                }
            }
            for (int k = 0; k < 3; ++k) {
                c[k] = (lo[k] + hi[k]) / 2;
                h[k] = (hi[k] - lo[k]) / 2;
            }
            break;
        }
        default: h[0] = h[1] = h[2] = INFINITY;   // planes, height fields: never separated
        }
    }
    return b;
}

prefilter_scope::prefilter_scope(const geom_boxes * boxes) : prev_(t_boxes) {
    t_boxes = boxes;
}

prefilter_scope::~prefilter_scope() {
    t_boxes = prev_;
}

void prefilter_enable(bool on) {
    g_enabled.store(on, std::memory_order_relaxed);
}

long prefilter_skipped() {
    return t_skipped;
}

} // namespace mb::physics
