// Kimodo clips for `serve`: the library (`--clips DIR` scanned for animation.glb, plus owner
// uploads), the alignment of a clip onto the current pose, and the history of shown frames that
// the viewer downloads as GLB or BVH. Clips are read through the C ABI (anim-export.h)
#pragma once

#include "tools/serve/planner.h"

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace mb::serve {

constexpr size_t k_max_clips       = 256;    // clips held at once (scanned and uploaded)
constexpr int    k_clip_scan_depth = 8;      // directory levels below --clips
constexpr int    k_clip_min_frames = 8;      // the entry blend and the exit context fit in it

struct clip_asset {
    std::string        id;           // "scan-N" or "upload-N"
    std::string        name;         // directory name or upload name
    int64_t            frames = 0;
    std::vector<float> root;         // [F, 3] motion space, as stored
    std::vector<float> rotations;    // [F, 34, 4] local x y z w
};

class clip_library {
public:
    // every regular file named animation.glb under `dir` (≤ 8 levels, sorted paths); a file the
    // reader refuses is skipped with a warning on stderr. Returns the number added
    size_t scan(const std::string & dir);

    // a GLB uploaded by the owner (≤ 16 MiB, the reader's rules); returns the clip. Throws
    // std::invalid_argument with the reader's message, std::length_error when the library is full
    std::shared_ptr<const clip_asset> add_upload(const std::string & bytes, const std::string & name);

    std::shared_ptr<const clip_asset> find(const std::string & id) const;   // null when absent
    // [{"id","name","frames","fps":30,"duration"}] (the reference's kimodo_clips entries)
    std::string list_json() const;
    size_t      size() const;

private:
    std::shared_ptr<const clip_asset> add(const std::string & bytes, const std::string & name, const char * prefix);

    mutable std::mutex                             mu_;
    std::vector<std::shared_ptr<const clip_asset>> clips_;
    uint64_t                                       uploads_ = 0;
};

// the clip's frames moved so that its first root lies at start's ground position (x, z; its own
// height kept) and its first pelvis heading equals start's, with qpos for the next plan's context
// (hinge projection, mb_motion_create). Throws std::runtime_error
std::vector<timeline_frame> align_clip(const clip_asset & clip, const timeline_frame & start);

// the last 60 s of frames the clock passed, for downloads; any thread
class frame_history {
public:
    static constexpr size_t k_capacity = 60 * 30;

    void push(const timeline_frame & f);
    void clear();
    // the last `seconds` (1..60) as a file: format MB_MOTION_FORMAT_GLB or _BVH (metres); empty
    // when nothing was shown yet. Throws std::runtime_error
    std::string encode(double seconds, uint32_t format) const;

private:
    mutable std::mutex          mu_;
    std::deque<timeline_frame>  frames_;
};

} // namespace mb::serve
