// G1 clips as BVH (Biovision hierarchy), text:
//   HIERARCHY: the g1skel34 tree, ROOT pelvis_skel, one JOINT per other joint (34 in all, the
//   virtual toe and hand joints included), OFFSET = neutral[j] − neutral[parent] in the chosen
//   unit, an End Site under each leaf (3 cm along the leaf's own offset, for bone tails)
//   channels: the root "Xposition Yposition Zposition Yrotation Xrotation Zrotation", every
//   other joint "Yrotation Xrotation Zrotation": local rotation R = Ry(a)·Rx(b)·Rz(c), degrees
//   (heading first: the gimbal pole is a 90° pitch, not a 90° turn)
//   MOTION: Frames F, Frame Time 0.0333333, one line per frame; motion space (Y up, Z forward),
//   lengths × units_per_metre (1 = metres, 100 = centimetres)
#pragma once

#include "export/anim-clip.h"

#include <string>
#include <string_view>

namespace mb {

// the BVH text of `clip` (checked as clip_check_normalise); units_per_metre in (0, 1000]
std::string bvh_write(const anim_clip & clip, double units_per_metre);

// a BVH of the g1skel34 hierarchy (names and tree exact; the root 6 channels, the others 3
// rotation channels, each in any order; offsets = the neutral offsets times one common unit,
// which is divided out), 30 fps, ≤ 18,000 frames, ≤ 64 MiB; bvh-reader.cpp lists the rules.
// Throws mb::error(invalid_format) naming `what`, the line and the field
anim_clip bvh_read(std::string_view text, const std::string & what);

} // namespace mb
