// the MotionBricks GGUF model bundle v1: a directory with pose.gguf, root.gguf,
// vq-decoder.gguf and support.gguf (manifest.json is written by the converter and
// not needed to load). Loading validates every component completely.
#pragma once

#include "format/gguf.h"

#include <array>
#include <memory>
#include <string>
#include <vector>

namespace mb {

constexpr int k_n_joints   = 34;     // G1Skeleton34
constexpr int k_n_features = 418;    // dual motion representation (mean/std length)

struct model_support {
    std::array<std::string, k_n_joints> joint_names;       // motionbricks.joint_names, index order
    std::array<int32_t, k_n_joints>     parents;           // root -1, else 0 <= parent < index
    std::array<float, k_n_joints * 3>   neutral_joints;    // [34, 3] rest positions (m, Y up)
    std::array<float, k_n_features>     mean;              // [418] motion_mean
    std::array<float, k_n_features>     std;               // [418] motion_std (>= 0)
};

struct model_bundle {
    std::string                directory;
    std::unique_ptr<gguf_file> pose;        // pose-token planner weights
    std::unique_ptr<gguf_file> root;        // root planner weights
    std::unique_ptr<gguf_file> vq_decoder;  // codebook + conv decoder weights
    std::unique_ptr<gguf_file> support;     // skeleton and statistics
    model_support              sup;         // decoded support data
    std::string                upstream_revision;   // motionbricks.upstream_revision
};

// loads and validates a bundle directory; throws std::runtime_error with a clear message
std::unique_ptr<model_bundle> bundle_load(const std::string & directory);

} // namespace mb
