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

// loads and validates a bundle directory; throws mb::error with a clear message
std::unique_ptr<model_bundle> bundle_load(const std::string & directory);

// "" when `directory` is a directory whose four component files exist and can be opened, else
// what is missing or unreadable. Callers tell I/O problems (this) from bad contents (bundle_load)
std::string bundle_files_problem(const std::string & directory);

// ---------------------------------------------------------------------------------------------
// bundle metadata and writing (tests, random bundles); the key names are shared with
// python/motionbricks/constants.py

constexpr const char * k_bundle_format         = "motionbricks-gguf-bundle-v1";
constexpr const char * k_bundle_architecture   = "motionbricks";
constexpr const char * k_bundle_skeleton       = "g1skel34";
constexpr const char * k_bundle_model_name     = "NVIDIA MotionBricks G1";
constexpr uint32_t     k_bundle_format_version = 1;
constexpr const char * k_key_n_head            = "motionbricks.n_head";           // pose, root: UINT32, default 16
constexpr const char * k_key_dilation_growth   = "motionbricks.dilation_growth";  // root, vq-decoder: UINT32, default 3
constexpr uint32_t     k_default_n_head          = 16;
constexpr uint32_t     k_default_dilation_growth = 3;

// the components in file order: role name and file name ("pose", "pose.gguf", ...)
constexpr const char * k_bundle_components[4] = {"pose", "root", "vq-decoder", "support"};

// element count summed over every tensor of a component
uint64_t gguf_parameter_count(const gguf_file & f);

// the checks bundle_load applies to one component file: metadata (architecture, format
// version, role, skeleton, provenance, parameter count, optional keys) and the exact tensor
// inventory its structure implies; throws mb::error naming the file
void bundle_check_component(const gguf_file & f, const std::string & role);

// support.gguf's data decoded and validated (34 names, parent topology, shapes, finiteness,
// std >= 0); throws mb::error naming the file
model_support bundle_decode_support(const gguf_file & f);

// one tensor for bundle_write_component, under its upstream (uncompacted) name
struct bundle_tensor {
    std::string          name;          // state-dict key with the component prefix stripped
    dtype                type;          // F32, or I32 for integer data
    std::vector<int64_t> torch_shape;   // PyTorch order, outermost first; {} is stored as [1]
    const void *         data;          // borrowed until the call returns
};

// what every component records about where it came from
struct bundle_provenance {
    std::string upstream_revision;      // motionbricks.upstream_revision (40 hex)
    std::string source_sha256;          // motionbricks.source_sha256 (64 lowercase hex)
};

// writes one component the way the release converter does: the release key set in
// order (plus `extra` keys after it), tensors sorted by upstream name, names >= 64
// bytes compacted, dims reversed, 32-byte alignment; throws on a name collision
void bundle_write_component(const std::string & path, const std::string & component,
                            const std::vector<bundle_tensor> & tensors, const bundle_provenance & prov,
                            const std::vector<gguf_write_kv> & extra = {}, const std::string & joint_names = "");

// writes support.gguf from decoded support data
void bundle_write_support(const std::string & path, const model_support & sup, const bundle_provenance & prov);

} // namespace mb
