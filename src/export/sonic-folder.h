// SONIC reference-motion folders, the input of upstream's gear_sonic_deploy (reference/example/*;
// read by MotionDataReader::ReadFromCSV, motion_data_reader.hpp:679-900). One folder per motion, 50 Hz:
//   joint_pos.csv     header joint_0..joint_28, then [T, 29] hinge angles (rad), IsaacLab order
//   joint_vel.csv     header joint_vel_0..28, [T, 29] rad/s: (pos[t+1] - pos[t]) * 50, the last row repeated
//   body_pos.csv      header body_<b>_x,_y,_z, [T, 14 * 3] world positions (m, Z up) of the 14 tracked bodies
//   body_quat.csv     header body_<b>_w,_x,_y,_z, [T, 14 * 4] world orientations, w first
//   body_lin_vel.csv  header body_<b>_vel_x.., [T, 14 * 3] m/s  } the deploy's own rule
//   body_ang_vel.csv  header body_<b>_angvel_x.., [T, 14 * 3] rad/s } (ComputeGlobalVelocities)
//   metadata.txt      "Body part indexes:" then [ 0  4 10 ...], "Total timesteps: T", the array summary
//   info.txt          per array: shape, dtype, range and the first 5 values (read by people, not the deploy)
// Bodies come from forward kinematics of the MJCF hinge tree; body 0 is the pelvis (the qpos root)
#pragma once

#include "motion/mjcf.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mb {

// a reference motion at 50 Hz
struct sonic_motion {
    int64_t             frames = 0;      // T
    std::vector<double> joint_pos;       // [T, 29] IsaacLab order
    std::vector<double> joint_vel;       // [T, 29]
    std::vector<double> body_pos;        // [T, 14, 3]
    std::vector<double> body_quat;       // [T, 14, 4] w x y z
    std::vector<double> body_lin_vel;    // [T, 14, 3]
    std::vector<double> body_ang_vel;    // [T, 14, 3]
};

// world transforms of every MuJoCo body (0 = base, k + 1 = hinge k) for one qpos [36]: positions
// [30, 3], quaternions w x y z [30, 4]
void mujoco_body_fk(const mjcf_model & model, const double * qpos, double * positions, double * quats);

// a 30 fps qpos clip [frames, 36] → the 50 Hz reference motion. Throws mb::error (invalid_argument:
// fewer than 2 frames, non-finite values, a zero quaternion)
sonic_motion sonic_from_qpos(const float * qpos, int64_t frames, const mjcf_model & model);

// writes the folder `dir` (created if missing; its files are replaced one by one, atomically); the
// motion's name in metadata.txt is the folder's last path component. Throws mb::error (io_error)
void write_sonic_folder(const std::string & dir, const sonic_motion & m);

} // namespace mb
