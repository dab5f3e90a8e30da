// G1 qpos clips as files for robot tools: CSV and NPZ (docs/FORMATS.md, "qpos CSV" and "qpos NPZ")
//   CSV  one frame per row, 36 comma-separated numbers: root x y z (m, MuJoCo world, Z up), the root
//        quaternion (w x y z, or x y z w), 29 hinge angles (rad, MJCF document order); an optional
//        first row of 36 column names (root_x ... root_qw ... <joint>_joint). No frame rate inside
//   NPZ  a stored zip (npz.h) of qpos.npy <f8 [F, 36] (the same columns), fps.npy <i8 (), the root
//        quaternion order quat_order.npy <U4 () ("wxyz" or "xyzw"), joint_names.npy <U [29]
// Readers check the file completely and say which row, column or entry is wrong; on error nothing
// is returned
#pragma once

#include "motion/g1.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mb {

enum class quat_order { wxyz, xyzw };

struct qpos_clip {
    int                 fps = 30;      // frames per second
    std::vector<double> qpos;          // [frames, 36], root quaternion w x y z (converted on read)
    int64_t frames() const { return int64_t(qpos.size() / k_qpos_dim); }
};

struct qpos_write_options {
    int        rate   = 30;                 // 30 (as planned) or 50 (resampled as upstream's deploy does)
    quat_order order  = quat_order::wxyz;   // root quaternion order in the file
    bool       header = true;               // CSV: a first row of column names
};

// the 36 column names of a header row in `order`
std::vector<std::string> qpos_column_names(quat_order order);

// a 30 fps qpos clip [frames, 36] (quaternion w first) resampled to opt.rate and written to `path`
// atomically (temporary file, fsync, rename). Throws mb::error: invalid_argument (frames < 1,
// non-finite values, a zero quaternion, a rate other than 30 or 50), io_error
void write_qpos_csv(const std::string & path, const float * qpos, int64_t frames, const qpos_write_options & opt);
void write_qpos_npz(const std::string & path, const float * qpos, int64_t frames, const qpos_write_options & opt);

// the file's text / bytes (the writers' cores, for tests and the C ABI)
std::string qpos_csv_text(const std::vector<double> & qpos, const qpos_write_options & opt);
std::string qpos_npz_bytes(const std::vector<double> & qpos, const qpos_write_options & opt);

// reads a qpos CSV of frame rate `fps` (the file does not say it). With a header row the quaternion
// order comes from its names and must agree with `order` unless `order_from_header`; without one,
// `order` is used. Throws mb::error (io_error: missing or unreadable; invalid_format: anything
// else, naming the line and column)
qpos_clip read_qpos_csv(const std::string & path, int fps, quat_order order, bool order_from_header);
qpos_clip parse_qpos_csv(const std::string & text, const std::string & origin, int fps, quat_order order,
                         bool order_from_header);

// reads a qpos NPZ (its own fps and quaternion order); throws mb::error
qpos_clip read_qpos_npz(const std::string & path);
qpos_clip parse_qpos_npz(const std::string & bytes, const std::string & origin);

// writes `bytes` to `path` through PATH.tmp.PID, fsync and rename; throws mb::error (io_error)
void write_file_atomic(const std::string & path, const std::string & bytes);

} // namespace mb
