// the part of a MuJoCo MJCF model that the qpos converter needs: the hinge
// body tree under the floating base (body pos/quat, hinge axis, document order),
// read the way upstream's mujoco_qpos_converter reads g1.xml
#pragma once

#include <array>
#include <string>
#include <string_view>
#include <vector>

namespace mb {

// one hinge joint and the body that holds it, in XML document order (= qpos[7 + k])
struct mjcf_hinge {
    std::string           joint;        // joint name, e.g. "left_hip_pitch_joint"
    std::string           body;         // name of the body holding the joint
    int                   parent;       // parent body in the hinge tree: 0 = floating base, k + 1 = hinges[k]
    std::array<double, 3> pos;          // body pos relative to the parent body (MuJoCo frame, m)
    std::array<double, 4> quat;         // body quat w, x, y, z as written (1, 0, 0, 0 when absent)
    bool                  has_quat;     // the body has a quat attribute
    int                   axis;         // hinge axis: 0 = MuJoCo x, 1 = y, 2 = z (one-hot, positive)
    std::array<double, 2> range;        // joint range (rad), resolved through the default classes
    bool                  has_range;    // a range was found
};

struct mjcf_model {
    std::string             base_body;  // the floating-base body (holds the freejoint)
    std::vector<mjcf_hinge> hinges;     // every hinge of the first worldbody, document order
};

// parses MJCF text; throws mb::error (invalid_format) naming `origin`, the byte offset and the problem
// (malformed XML, unsupported joint type or axis, a joint-less body inside the hinge tree, ...)
mjcf_model mjcf_parse(std::string_view xml, const std::string & origin);

// reads and parses a file (at most 16 MiB); throws mb::error (io_error from the file, else as mjcf_parse)
mjcf_model mjcf_load(const std::string & path);

// upstream's assets/skeletons/g1/g1.xml as built-in constants (the runtime needs no XML file);
// tests/motion/test-qpos cross-checks it against ../shared/data/upstream/mjcf/g1.xml
const mjcf_model & mjcf_g1();

} // namespace mb
