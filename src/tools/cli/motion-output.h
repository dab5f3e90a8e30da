// the motion files a CLI command writes and reads, chosen by --format or the file's extension:
// motionbricks-motion-v1 JSON, plan's streamed qpos CSV (--format csv), G1 qpos files for robot
// tools (.csv/.npz without --format, robot-export.h: 30 or 50 Hz, either root quaternion order),
// BVH and GLB (anim-export.h). Shared by plan, convert-motion, infer, serve --record-qpos and the
// inputs of stream-zmq and export-sonic
#pragma once

#include <motionbricks/motionbricks.hpp>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace mb::cli {

// a float rounded for JSON output (7 significant digits keep float32 exact enough)
double r7(float v);

// `n` rows of `cols` floats as a JSON array of arrays of r7 numbers
nlohmann::json rows(const float * v, uint64_t n, int cols);

// csv: plan's own streamed qpos rows (--format csv); qpos: a .csv/.npz robot qpos file
enum class motion_format { json, csv, qpos, bvh, glb };

// "json|csv|bvh|glb", for usage lines
inline constexpr const char * k_motion_format_names = "json|csv|bvh|glb";

// --format's value when given (`flag` non-empty), else the output's extension (any case): .csv
// and .npz → qpos, .bvh, .glb; anything else: json. Throws std::invalid_argument naming an
// unknown --format
motion_format pick_motion_format(const std::string & path, const std::string & flag);

// the path ends in .csv or .npz (any case)
bool is_qpos_output(const std::string & path);

struct qpos_output {
    uint32_t rate   = 30;      // --qpos-rate 30|50
    bool     xyzw   = false;   // --quat-order wxyz|xyzw
    bool     header = true;    // --qpos-header yes|no (CSV)
};

// `option` with `value` is one of --qpos-rate, --quat-order, --qpos-header: parses it into `out`
// and returns 1, or prints "motionbricks CMD: ..." and returns -1 on a bad value; 0 when the
// option is not one of them
int parse_qpos_option(const char * cmd, const std::string & option, const std::string & value, qpos_output & out);

// the usage text of those options
const char * qpos_options_usage();

// writes 30 fps qpos [frames, 36] to `path` by its extension; throws motionbricks::error
void write_qpos_output(const std::string & path, const float * qpos, uint64_t frames, const qpos_output & o);

// BVH lengths: "m" → 1, "cm" → 100; throws std::invalid_argument
float parse_units(const std::string & v);

// frames gathered one by one (from plans and histories) for a BVH or GLB file
class clip_frames {
public:
    void     add(const motionbricks::motion & m, uint64_t frame);
    uint64_t count() const { return root_.size() / 3; }
    // the frames as one motion (mb_motion_create)
    motionbricks::motion motion() const;

private:
    std::vector<float> root_, rot_;   // [F, 3], [F, 34, 4]
};

// writes a whole motion as `f` (json, qpos, bvh or glb; csv is plan's own, streamed) to `path`;
// `units` is BVH's, `q` the qpos file's options
void write_motion_file(const motionbricks::motion & m, const std::string & path, motion_format f, float units,
                       const qpos_output & q = {});

// reads a motion file: .json as motionbricks-motion-v1 (root_translations, local_rotations_xyzw),
// .csv/.npz as a 30 fps qpos file (a headerless CSV's quaternion order from `q`), anything else as
// GLB or BVH by content. Throws motionbricks::error or std::runtime_error
motionbricks::motion read_motion_file(const std::string & path, const qpos_output & q = {});

} // namespace mb::cli
