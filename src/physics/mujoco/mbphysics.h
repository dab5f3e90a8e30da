// `.mbphysics` (reference-runtime §3(c)): the controller's per-joint table. Layout, little-endian:
//   [0, 8)     magic "MBSPHY01"
//   29 records of 140 bytes, one per G1 hinge in any order:
//     u32      G1Skeleton34 joint index (1..33, a non-virtual joint, each once)
//     f64[3]   hinge axis (unit, components 0 or 1)
//     f64[9]   rest rotation, row-major (orthonormal, det +1)
//     f64      default angle (rad, |·| ≤ 6.4)
//     f64      action scale (0, 10]
//     f64      Kp (0, 1000]      f64 Kd [0, 100]      f64 torque limit (0, 1000] (N·m)
//   nothing after the 29th record (4,068 bytes in all)
// The simulator uses default angle, action scale, Kp, Kd and limit; axis and rest rotation are
// checked for form only (the scene has its own)
#pragma once

#include "physics/mujoco/g1-pd.h"

#include <array>
#include <string>

namespace mb::physics {

constexpr size_t k_mbphysics_record = 4 + 17 * 8;
constexpr size_t k_mbphysics_size   = 8 + k_body_joints * k_mbphysics_record;

// the table in MuJoCo joint order
struct physics_config {
    std::array<std::array<double, 3>, k_body_joints> axis;
    std::array<std::array<double, 9>, k_body_joints> rest;
    std::array<double, k_body_joints>                default_angle, action_scale, kp, kd, torque_limit;
};

// the release's table (g1-pd.h; axes from the G1 MJCF, identity rest rotations)
physics_config physics_config_release();

// parses a file's bytes; throws mb::error invalid_format naming `origin`, the record, the field and
// its byte offset
physics_config mbphysics_parse(const std::string & bytes, const std::string & origin);

// reads a file (io_error when unreadable or larger than the format), then as mbphysics_parse
physics_config mbphysics_read(const std::string & path);

// the file's bytes for a table (records in MuJoCo order)
std::string mbphysics_write(const physics_config & config);

} // namespace mb::physics
