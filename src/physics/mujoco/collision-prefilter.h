// an exact mid-phase for MuJoCo 2.x's mesh collisions: before a pair with a mesh reaches the convex
// narrow phase (libccd MPR, ~3 µs a pair), the two geoms' oriented bounding boxes are tested; when a
// separating axis puts them more than the contact margin (+ 0.1 mm) apart, the pair gets 0 contacts,
// what MPR answers for convex shapes that far apart. On the G1 scene standing, 39 of the 45 mesh-mesh
// pairs per substep that pass MuJoCo's bounding spheres are separated boxes, none of them touching.
// MuJoCo ≥ 3 has its own box mid-phase: there the filter stays out of the way.
// The hook is process-wide (MuJoCo's collision table has no per-model slot) but acts only inside a
// prefilter_scope of the calling thread and for the model that scope names; every other MuJoCo call
// runs the original functions (sim.h: prefilter_enable, prefilter_skipped)
#pragma once

#include <mujoco/mujoco.h>

#include <vector>

namespace mb::physics {

// every geom's box in its own frame: centre [3] and half extents [3], from the geom's size or its
// mesh's vertices (the convex hull MuJoCo collides with lies inside them)
struct geom_boxes {
    const mjModel *     model = nullptr;
    std::vector<double> centre;   // [ngeom, 3]
    std::vector<double> half;     // [ngeom, 3]
};
geom_boxes geom_boxes_of(const mjModel * m);

// while alive, this thread's collisions on boxes->model use the boxes (NULL: none); nests
class prefilter_scope {
public:
    explicit prefilter_scope(const geom_boxes * boxes);
    ~prefilter_scope();
    prefilter_scope(const prefilter_scope &)             = delete;
    prefilter_scope & operator=(const prefilter_scope &) = delete;

private:
    const geom_boxes * prev_;
};

} // namespace mb::physics
