// the motion files a CLI command writes and reads, chosen by --format or the file's extension:
// motionbricks-motion-v1 JSON, qpos CSV (plan only), BVH and GLB (through anim-export.h)
#pragma once

#include <motionbricks/motionbricks.hpp>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace mb::cli {

// a float rounded for JSON output (7 significant digits keep float32 exact enough)
double r7(float v);

// `n` rows of `cols` floats as a JSON array of arrays of r7 numbers
nlohmann::json rows(const float * v, uint64_t n, int cols);

enum class motion_format { json, csv, bvh, glb };

// "json|csv|bvh|glb", for usage lines
inline constexpr const char * k_motion_format_names = "json|csv|bvh|glb";

// --format's value when given (`flag` non-empty), else the output's extension (.json, .csv, .bvh,
// .glb; anything else: json). Throws std::invalid_argument naming an unknown --format
motion_format pick_motion_format(const std::string & path, const std::string & flag);

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

// writes a whole motion as `f` (json, bvh or glb; csv is plan's own, streamed) to `path`
void write_motion_file(const motionbricks::motion & m, const std::string & path, motion_format f, float units);

// reads a motion file: .json as motionbricks-motion-v1 (root_translations, local_rotations_xyzw),
// anything else as GLB or BVH by content. Throws motionbricks::error or std::runtime_error
motionbricks::motion read_motion_file(const std::string & path);

} // namespace mb::cli
