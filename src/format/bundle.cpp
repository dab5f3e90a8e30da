// the MotionBricks GGUF model bundle v1: loading with complete validation, and a
// writer that reproduces the release converter's layout.
//
// Every component (pose.gguf, root.gguf, vq-decoder.gguf, support.gguf) carries, in order:
//   general.architecture          STRING  "motionbricks"
//   general.name                  STRING  "NVIDIA MotionBricks G1"
//   general.alignment             UINT32  32
//   general.file_type             UINT32  0 (all F32), 32 (mostly BF16), 7 (mostly Q8_0): not checked
//                                         (the tensor types are)
//   motionbricks.format_version   UINT32  1 (an unknown major version is rejected)
//   motionbricks.component        STRING  the role, equal to the file name's stem
//   motionbricks.skeleton         STRING  "g1skel34"
//   motionbricks.upstream_revision STRING upstream git revision (the same in all four)
//   motionbricks.source_sha256    STRING  64 lowercase hex digits
//   motionbricks.parameter_count  UINT64  element count of the file's tensors
//   motionbricks.joint_names      STRING  support only: 34 comma-joined names
// and optionally motionbricks.n_head (pose, root) and motionbricks.dilation_growth
// (root, vq-decoder), UINT32, for what the tensor shapes cannot tell.
// Support tensors: joint_parents I32 [34], motion_mean F32 [418], motion_std F32 [418],
// neutral_joints F32 [34, 3]. The learned components hold exactly the tensors their
// structure implies (layer and block counts are taken from the names themselves), F32,
// except that matrix weights (names ending in "weight", 2+ dimensions) may be BF16 or Q8_0.

#include "format/bundle.h"

#include "format/tensor-names.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <cmath>
#include <cstring>
#include <map>
#include <set>

namespace mb {

namespace {

[[noreturn]] void fail(const gguf_file & f, const std::string & msg) {
    throw error(status::invalid_format, f.path() + ": " + msg);
}

std::string_view require_string(const gguf_file & f, const char * key) {
    auto v = f.get_string(key);
    if (!v) fail(f, std::string("missing metadata key ") + key);
    return *v;
}

bool is_hex(std::string_view s, size_t n) {
    if (s.size() != n) return false;
    for (char c : s) {
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
    }
    return true;
}

// common metadata of every component
void check_common(const gguf_file & f, const std::string & role) {
    std::string_view arch = require_string(f, "general.architecture");
    if (arch != k_bundle_architecture) {
        fail(f, "general.architecture is '" + std::string(arch) + "', expected 'motionbricks'");
    }
    auto version = f.get_u32("motionbricks.format_version");
    if (!version) fail(f, "missing metadata key motionbricks.format_version");
    if (*version != k_bundle_format_version) {
        fail(f, "motionbricks.format_version is " + std::to_string(*version) + ", this runtime reads version 1");
    }
    std::string_view comp = require_string(f, "motionbricks.component");
    if (comp != role) fail(f, "motionbricks.component is '" + std::string(comp) + "', expected '" + role + "'");
    std::string_view skel = require_string(f, "motionbricks.skeleton");
    if (skel != k_bundle_skeleton) {
        fail(f, "motionbricks.skeleton is '" + std::string(skel) + "', expected 'g1skel34'");
    }
    if (require_string(f, "motionbricks.upstream_revision").empty()) {
        fail(f, "motionbricks.upstream_revision is empty");
    }
    if (!is_hex(require_string(f, "motionbricks.source_sha256"), 64)) {
        fail(f, "motionbricks.source_sha256 is not 64 lowercase hex digits");
    }
    auto count = f.get_u64("motionbricks.parameter_count");
    if (!count) fail(f, "missing metadata key motionbricks.parameter_count");
    uint64_t actual = gguf_parameter_count(f);
    if (*count != actual) {
        fail(f, "motionbricks.parameter_count is " + std::to_string(*count) + " but the tensors hold " +
                std::to_string(actual) + " elements");
    }
    if (f.tensors().empty()) fail(f, "no tensors");
    bool is_support = role == "support";
    if (!is_support && f.kv("motionbricks.joint_names")) fail(f, "motionbricks.joint_names belongs in support.gguf");
    bool heads_ok  = role == "pose" || role == "root";
    bool growth_ok = role == "root" || role == "vq-decoder";
    if (!heads_ok && f.kv(k_key_n_head)) fail(f, std::string(k_key_n_head) + " does not apply to " + role);
    if (!growth_ok && f.kv(k_key_dilation_growth)) {
        fail(f, std::string(k_key_dilation_growth) + " does not apply to " + role);
    }
    if (growth_ok) {
        if (auto g = f.get_u32(k_key_dilation_growth); g && *g < 1) {
            fail(f, std::string(k_key_dilation_growth) + " is 0 (must be >= 1)");
        }
    }
    for (const auto & t : f.tensors()) {
        if (is_support || t.type == dtype::DTYPE_F32) continue;
        // reduced types (a bundle made with --dtype) only for matrices: names ending in
        // "weight" with 2+ dimensions; the networks' loaders keep embeddings F32
        std::string_view name = t.name;
        const bool matrix = t.n_dims >= 2 && name.size() >= 6 && name.substr(name.size() - 6) == "weight";
        if ((t.type != dtype::DTYPE_BF16 && t.type != dtype::DTYPE_Q8_0) || !matrix) {
            fail(f, "tensor '" + std::string(t.name) + "' is " + dtype_name(t.type) +
                    "; it must be F32 (BF16 and Q8_0 are allowed for linear and conv weights only)");
        }
    }
}

// the number of layers/blocks `prefix`N. present among the names (1 + the largest N)
int64_t count_indexed(const gguf_file & f, const std::string & prefix) {
    int64_t n = 0;
    for (const auto & t : f.tensors()) {
        // compaction only shortens what follows the layer index, so stored names still match
        std::string_view name = t.name;
        if (name.substr(0, prefix.size()) != prefix) continue;
        std::string_view rest = name.substr(prefix.size());
        int64_t          idx  = 0;
        auto [p, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), idx);
        if (ec != std::errc() || p == rest.data() || p == rest.data() + rest.size() || *p != '.') continue;
        if (idx < 0 || idx > 4096) fail(f, "tensor '" + std::string(name) + "' has an implausible index");
        n = std::max(n, idx + 1);
    }
    return n;
}

void add_transformer(std::vector<std::string> & out, const std::string & prefix, int64_t n_layer) {
    static const char * const k_layer[] = {
        "self_attn.in_proj_weight", "self_attn.in_proj_bias", "self_attn.out_proj.weight",
        "self_attn.out_proj.bias",  "norm1.weight",           "norm1.bias",
        "linear1.weight",           "linear1.bias",           "linear2.weight",
        "linear2.bias",             "norm2.weight",           "norm2.bias",
    };
    for (int64_t il = 0; il < n_layer; ++il) {
        for (const char * x : k_layer) out.push_back(prefix + std::to_string(il) + "." + x);
    }
}

void add_wb(std::vector<std::string> & out, const std::string & name) {
    out.push_back(name + ".weight");
    out.push_back(name + ".bias");
}

void add_fc_block(const gguf_file & f, std::vector<std::string> & out, const std::string & prefix) {
    int64_t n = count_indexed(f, prefix + ".fc_layers.");
    for (int64_t k = 0; k < n; ++k) add_wb(out, prefix + ".fc_layers." + std::to_string(k));
    add_wb(out, prefix + ".forward_projection");
}

// DoubleCondDecoder: model.0, down_t upsampling stages of a Resnet1D (depth blocks) and a
// conv, a conv, the output conv; target and external condition MLPs
void add_cond_decoder(const gguf_file & f, std::vector<std::string> & out, const std::string & p) {
    int64_t down_t = 0;
    while (f.find(p + "model." + std::to_string(2 + down_t) + ".2.weight")) ++down_t;
    if (down_t == 0) fail(f, "no upsampling stage '" + p + "model.2.2.weight'");
    int64_t depth = count_indexed(f, p + "model.2.0.model.");
    if (depth == 0) fail(f, "no residual block '" + p + "model.2.0.model.0.conv1.weight'");
    add_wb(out, p + "model.0");
    for (int64_t s = 0; s < down_t; ++s) {
        std::string stage = p + "model." + std::to_string(2 + s);
        for (int64_t il = 0; il < depth; ++il) {
            std::string blk = stage + ".0.model." + std::to_string(il);
            add_wb(out, blk + ".conv1");
            add_wb(out, blk + ".conv2");
        }
        add_wb(out, stage + ".2");
    }
    add_wb(out, p + "model." + std::to_string(2 + down_t));
    add_wb(out, p + "model." + std::to_string(4 + down_t));
    for (const char * blk : {"target_cond_blocks.0", "target_cond_blocks.2", "external_cond_blocks.0",
                             "external_cond_blocks.2"}) {
        add_wb(out, p + blk);
    }
}

// every tensor the component's structure implies, present; nothing else
void check_inventory(const gguf_file & f, const std::string & role) {
    std::vector<std::string> want;
    if (role == "pose") {
        int64_t n_layer = count_indexed(f, "_transformer_model.layers.");
        if (n_layer == 0) fail(f, "no transformer layers '_transformer_model.layers.0.*'");
        want.push_back("_pose_token_emb.weight");
        add_fc_block(f, want, "_proj_pose_token_emb");
        add_wb(want, "_proj_local_pose");
        add_wb(want, "_proj_local_root_values");
        want.push_back("_proj_num_valid_positions.weight");
        add_wb(want, "_proj_input.0");
        want.push_back("_position_emb.embed");
        add_transformer(want, "_transformer_model.layers.", n_layer);
        add_wb(want, "_proj_pose_output_logit");
    } else if (role == "root") {
        int64_t n_shared = count_indexed(f, "_shared_transformer_model.layers.");
        int64_t n_root   = count_indexed(f, "_root_token_transformer_model.layers.");
        // the stage-2 (root-token) transformer is optional upstream
        if (n_shared == 0) fail(f, "no transformer layers '_shared_transformer_model.layers.0.*'");
        add_wb(want, "_proj_local_pose");
        add_wb(want, "_proj_local_root_value");
        add_wb(want, "_proj_global_root_value");
        want.push_back("_no_local_pose_emb");
        want.push_back("_no_local_root_emb");
        want.push_back("_no_global_root_emb");
        add_fc_block(f, want, "_proj_start_input");
        add_fc_block(f, want, "_proj_end_input");
        want.push_back("_input_position_emb.weight");
        want.push_back("_proj_input_num_tokens.weight");
        add_transformer(want, "_shared_transformer_model.layers.", n_shared);
        add_transformer(want, "_root_token_transformer_model.layers.", n_root);
        add_wb(want, "_proj_num_token_output_logit");
        want.push_back("_middle_token_emb.weight");
        want.push_back("_position_emb.embed");
        want.push_back("_conv_no_frame_emb");
        add_cond_decoder(f, want, "_conv_output.");
    } else if (role == "vq-decoder") {
        want.push_back("quantizer.vq._codebook.embed");
        add_cond_decoder(f, want, "decoder.");
    } else {
        want = {"joint_parents", "motion_mean", "motion_std", "neutral_joints"};
    }

    std::set<std::string_view> stored;
    for (const auto & name : want) {
        const tensor_view * t = f.find(name);
        if (!t) fail(f, "missing tensor '" + name + "'");
        stored.insert(t->name);
    }
    for (const auto & t : f.tensors()) {
        if (!stored.count(t.name)) fail(f, "unexpected tensor '" + std::string(t.name) + "'");
    }
    if (want.size() != f.tensors().size()) {
        fail(f, "expected " + std::to_string(want.size()) + " tensors, found " + std::to_string(f.tensors().size()));
    }
}

// n_head must divide the width of every transformer it applies to
void check_heads(const gguf_file & f, const std::vector<std::string> & prefixes) {
    auto h = f.get_u32(k_key_n_head);
    uint32_t n_head = h ? *h : k_default_n_head;
    if (n_head < 1) fail(f, std::string(k_key_n_head) + " is 0 (must be >= 1)");
    for (const auto & p : prefixes) {
        const tensor_view * t = f.find(p + "0.self_attn.out_proj.weight");
        if (!t) continue;   // an optional transformer that is absent
        int64_t n_embd = t->ne[0];
        if (n_embd % n_head != 0) {
            fail(f, std::string(k_key_n_head) + " = " + std::to_string(n_head) + " does not divide the width " +
                    std::to_string(n_embd) + " of '" + p + "*'");
        }
    }
}

const tensor_view & support_tensor(const gguf_file & f, const char * name, dtype type,
                                   std::initializer_list<int64_t> ne) {
    const tensor_view * t = f.find(name);
    if (!t) fail(f, std::string("missing tensor '") + name + "'");
    bool ok = t->type == type && t->n_dims == ne.size();
    int  d  = 0;
    for (int64_t n : ne) ok = ok && t->ne[d++] == n;
    if (!ok) {
        std::string want = "[";
        for (auto it = std::rbegin(ne); it != std::rend(ne); ++it) {
            want += (it == std::rbegin(ne) ? "" : ", ") + std::to_string(*it);
        }
        fail(f, std::string("tensor '") + name + "' is " + (t->type == dtype::DTYPE_F32 ? "F32 " : "I32 ") +
                torch_shape_string(*t) + ", expected " + (type == dtype::DTYPE_F32 ? "F32 " : "I32 ") + want + "]");
    }
    return *t;
}

// every element of an F32 tensor finite. One pass at memory speed: with x = |bits| (sign cleared),
// x + 2^23 reaches bit 31 exactly when the exponent is all ones (Inf or NaN); OR-ing those sums is
// an add/or loop that SSE2 vectorises. Only a bad tensor is scanned again for the index to report
// 16-bit values: exponent all ones (BF16 bit mask 0x7f80, F16 0x7c00) is Inf or NaN
// BF16: every element; Q8_0: every block's F16 scale (the int8 values are always finite)
void check_finite_16(const gguf_file & f, const tensor_view & t) {
    const bool    q8     = t.type == dtype::DTYPE_Q8_0;
    const auto *  bytes  = static_cast<const unsigned char *>(t.data);
    const int64_t n      = q8 ? t.n_elements() / k_q8_0_block : t.n_elements();
    const int64_t stride = q8 ? k_q8_0_block_bytes : 2;
    const int     exp    = q8 ? 0x7c00 : 0x7f80;
    for (int64_t k = 0; k < n; ++k) {
        uint16_t bits;
        std::memcpy(&bits, bytes + stride * k, 2);
        if ((bits & exp) == exp) {
            fail(f, "tensor '" + std::string(t.name) + "' element " + std::to_string(q8 ? k * k_q8_0_block : k) +
                    (q8 ? " (the scale of its Q8_0 block)" : "") + " is not finite");
        }
    }
}

void check_finite(const gguf_file & f, const tensor_view & t) {
    if (t.type == dtype::DTYPE_BF16 || t.type == dtype::DTYPE_Q8_0) {
        check_finite_16(f, t);
        return;
    }
    const auto *  bytes = static_cast<const unsigned char *>(t.data);
    const int64_t n     = t.n_elements();
    uint32_t      any   = 0;
    for (int64_t k = 0; k < n; ++k) {
        uint32_t bits;
        std::memcpy(&bits, bytes + 4 * k, 4);
        any |= (bits & 0x7fffffffu) + 0x00800000u;
    }
    if ((any & 0x80000000u) == 0) return;
    for (int64_t k = 0; k < n; ++k) {
        if (!std::isfinite(t.f32()[k])) {
            fail(f, "tensor '" + std::string(t.name) + "' element " + std::to_string(k) + " is not finite");
        }
    }
}

} // namespace

model_support bundle_decode_support(const gguf_file & f) {
    model_support sup;

    // joint names: 34 non-empty, unique, comma-joined
    std::string_view names = require_string(f, "motionbricks.joint_names");
    size_t           start = 0;
    for (int j = 0; j < k_n_joints; ++j) {
        size_t end = names.find(',', start);
        if (end == std::string_view::npos) {
            if (j != k_n_joints - 1) {
                fail(f, "motionbricks.joint_names holds " + std::to_string(j + 1) + " names, expected 34");
            }
            end = names.size();
        } else if (j == k_n_joints - 1) {
            fail(f, "motionbricks.joint_names holds more than 34 names");
        }
        sup.joint_names[j] = std::string(names.substr(start, end - start));
        if (sup.joint_names[j].empty()) fail(f, "motionbricks.joint_names: name " + std::to_string(j) + " is empty");
        start = end + 1;
    }
    std::set<std::string> unique(sup.joint_names.begin(), sup.joint_names.end());
    if (unique.size() != k_n_joints) fail(f, "motionbricks.joint_names has duplicate names");

    // parents: root -1, every other joint after its parent
    const tensor_view & parents = support_tensor(f, "joint_parents", dtype::DTYPE_I32, {k_n_joints});
    for (int j = 0; j < k_n_joints; ++j) {
        int32_t p = parents.i32()[j];
        bool    ok = j == 0 ? p == -1 : (p >= 0 && p < j);
        if (!ok) {
            fail(f, "joint_parents[" + std::to_string(j) + "] = " + std::to_string(p) +
                    (j == 0 ? " (the root's parent must be -1)" : " (must satisfy 0 <= parent < index)"));
        }
        sup.parents[j] = p;
    }

    const tensor_view & neutral = support_tensor(f, "neutral_joints", dtype::DTYPE_F32, {3, k_n_joints});
    const tensor_view & mean    = support_tensor(f, "motion_mean", dtype::DTYPE_F32, {k_n_features});
    const tensor_view & stdev   = support_tensor(f, "motion_std", dtype::DTYPE_F32, {k_n_features});
    for (const tensor_view * t : {&neutral, &mean, &stdev}) check_finite(f, *t);
    for (int k = 0; k < k_n_features; ++k) {
        if (stdev.f32()[k] < 0.0f) fail(f, "motion_std[" + std::to_string(k) + "] is negative");
    }
    std::copy_n(neutral.f32(), k_n_joints * 3, sup.neutral_joints.begin());
    std::copy_n(mean.f32(), k_n_features, sup.mean.begin());
    std::copy_n(stdev.f32(), k_n_features, sup.std.begin());
    return sup;
}

void bundle_check_component(const gguf_file & f, const std::string & role) {
    check_common(f, role);
    check_inventory(f, role);
    // every learned weight (F32, BF16 or Q8_0, checked above): a NaN would otherwise run silently (all tokens 0).
    // support.gguf's F32 tensors are checked by bundle_decode_support, after their types and shapes
    if (role != "support") {
        for (const auto & t : f.tensors()) check_finite(f, t);
    }
    if (role == "pose") check_heads(f, {"_transformer_model.layers."});
    if (role == "root") check_heads(f, {"_shared_transformer_model.layers.", "_root_token_transformer_model.layers."});
}

uint64_t gguf_parameter_count(const gguf_file & f) {
    uint64_t n = 0;
    for (const auto & t : f.tensors()) n += static_cast<uint64_t>(t.n_elements());
    return n;
}

std::string bundle_files_problem(const std::string & directory) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (!fs::is_directory(directory, ec)) return "bundle directory '" + directory + "' does not exist or is not a directory";
    for (const char * role : k_bundle_components) {
        const std::string path = directory + "/" + role + ".gguf";
        if (!fs::is_regular_file(path, ec)) return "bundle component '" + path + "' is missing";
        if (!std::ifstream(path, std::ios::binary).is_open()) return "bundle component '" + path + "' cannot be opened for reading";
    }
    return "";
}

std::unique_ptr<model_bundle> bundle_load(const std::string & directory) {
    auto b       = std::make_unique<model_bundle>();
    b->directory = directory;
    std::unique_ptr<gguf_file> * slots[4] = {&b->pose, &b->root, &b->vq_decoder, &b->support};
    for (int c = 0; c < 4; ++c) {
        std::string role = k_bundle_components[c];
        std::string path = directory + "/" + role + ".gguf";
        *slots[c]        = gguf_file::open(path);
        const gguf_file & f = **slots[c];
        bundle_check_component(f, role);
        std::string_view rev = require_string(f, "motionbricks.upstream_revision");
        if (c == 0) {
            b->upstream_revision = std::string(rev);
        } else if (rev != b->upstream_revision) {
            fail(f, "motionbricks.upstream_revision '" + std::string(rev) + "' differs from pose.gguf's '" +
                    b->upstream_revision + "'");
        }
    }
    b->sup = bundle_decode_support(*b->support);
    return b;
}

void bundle_write_component(const std::string & path, const std::string & component,
                            const std::vector<bundle_tensor> & tensors, const bundle_provenance & prov,
                            const std::vector<gguf_write_kv> & extra, const std::string & joint_names) {
    // tensors in sorted() order of their upstream names (byte order, as Python sorts str of ASCII)
    std::vector<const bundle_tensor *> order;
    for (const auto & t : tensors) order.push_back(&t);
    std::sort(order.begin(), order.end(), [](const bundle_tensor * a, const bundle_tensor * b) {
        return a->name < b->name;
    });
    std::vector<std::string> names;
    for (const auto * t : order) names.push_back(t->name);
    std::vector<std::string> stored = compact_tensor_names(names);

    std::vector<gguf_write_tensor> out;
    uint64_t                       n_params = 0;
    for (size_t k = 0; k < order.size(); ++k) {
        gguf_write_tensor w{stored[k], order[k]->type, {}, order[k]->data};
        uint64_t          n = 1;
        for (auto it = order[k]->torch_shape.rbegin(); it != order[k]->torch_shape.rend(); ++it) {
            w.ne.push_back(*it);
            n *= static_cast<uint64_t>(*it);
        }
        if (w.ne.empty()) w.ne.push_back(1);
        n_params += n;
        out.push_back(std::move(w));
    }

    auto s = [](const char * k, std::string v) {
        gguf_write_kv kv;
        kv.key  = k;
        kv.type = gguf_type::GGUF_TYPE_STRING;
        kv.str  = std::move(v);
        return kv;
    };
    auto u = [](const char * k, gguf_type t, uint64_t v) {
        gguf_write_kv kv;
        kv.key  = k;
        kv.type = t;
        kv.u    = v;
        return kv;
    };
    std::vector<gguf_write_kv> kvs = {
        s("general.architecture", k_bundle_architecture),
        s("general.name", k_bundle_model_name),
        u("general.alignment", gguf_type::GGUF_TYPE_UINT32, 32),
        u("general.file_type", gguf_type::GGUF_TYPE_UINT32, 0),
        u("motionbricks.format_version", gguf_type::GGUF_TYPE_UINT32, k_bundle_format_version),
        s("motionbricks.component", component),
        s("motionbricks.skeleton", k_bundle_skeleton),
        s("motionbricks.upstream_revision", prov.upstream_revision),
        s("motionbricks.source_sha256", prov.source_sha256),
        u("motionbricks.parameter_count", gguf_type::GGUF_TYPE_UINT64, n_params),
    };
    if (!joint_names.empty()) kvs.push_back(s("motionbricks.joint_names", joint_names));
    for (const auto & kv : extra) kvs.push_back(kv);
    gguf_write(path, kvs, out, 32);
}

void bundle_write_support(const std::string & path, const model_support & sup, const bundle_provenance & prov) {
    std::string names;
    for (int j = 0; j < k_n_joints; ++j) names += (j ? "," : "") + sup.joint_names[j];
    bundle_write_component(path, "support",
                           {
                               {"joint_parents", dtype::DTYPE_I32, {k_n_joints}, sup.parents.data()},
                               {"motion_mean", dtype::DTYPE_F32, {k_n_features}, sup.mean.data()},
                               {"motion_std", dtype::DTYPE_F32, {k_n_features}, sup.std.data()},
                               {"neutral_joints", dtype::DTYPE_F32, {k_n_joints, 3}, sup.neutral_joints.data()},
                           },
                           prov, {}, names);
}

} // namespace mb
