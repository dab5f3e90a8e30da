// G1 clips as glTF 2.0 binary (GLB), the layout of the reference runtime's Kimodo clips:
// node-only (34 nodes named after g1skel34, the hierarchy of its parents, rest translations =
// the neutral offsets), one animation of 35 LINEAR channels at 30 fps sharing one time
// accessor: the root node's translation and every node's rotation (x y z w). No meshes.
#pragma once

#include "export/anim-clip.h"

#include <string>
#include <string_view>

namespace mb {

// the GLB bytes of `clip` (checked: clip_check_normalise's rules)
std::string glb_write(const anim_clip & clip);

// a GLB of the layout above, every byte treated as hostile (glb-reader.cpp lists the rules);
// throws mb::error(invalid_format) naming `what` and the field
anim_clip glb_read(std::string_view bytes, const std::string & what);

} // namespace mb
