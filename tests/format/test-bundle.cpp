// model bundle v1: a synthetic valid bundle loads; each metadata, inventory and
// support defect, introduced one at a time, is rejected with a clear message; the
// release support.gguf is reproduced byte for byte from the upstream data
#include "format-test-util.h"
#include "support/test-paths.h"

#include "format/bundle.h"
#include "format/sha256.h"
#include "format/tensor-names.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>
#include <deque>
#include <functional>
#include <limits>

using mb::gguf_type;
using mb::gguf_write_kv;
using mb::gguf_write_tensor;
using mb::test::temp_dir;

namespace {

constexpr const char * k_rev = "a0732b642c0333077e127a2f56ab0014c196bca4";

// upstream-style names of each learned component, sized small; the loader derives
// counts from the names, so these few layers and blocks are a complete bundle
std::vector<std::string> transformer_names(const std::string & prefix, int n_layer) {
    std::vector<std::string> out;
    for (int il = 0; il < n_layer; ++il) {
        for (const char * x : {"self_attn.in_proj_weight", "self_attn.in_proj_bias", "self_attn.out_proj.weight",
                               "self_attn.out_proj.bias", "norm1.weight", "norm1.bias", "linear1.weight",
                               "linear1.bias", "linear2.weight", "linear2.bias", "norm2.weight", "norm2.bias"}) {
            out.push_back(prefix + std::to_string(il) + "." + x);
        }
    }
    return out;
}

void wb(std::vector<std::string> & v, const std::string & n) {
    v.push_back(n + ".weight");
    v.push_back(n + ".bias");
}

std::vector<std::string> cond_decoder_names(const std::string & p, int depth) {
    std::vector<std::string> v;
    wb(v, p + "model.0");
    for (int s : {2, 3}) {
        for (int il = 0; il < depth; ++il) {
            wb(v, p + "model." + std::to_string(s) + ".0.model." + std::to_string(il) + ".conv1");
            wb(v, p + "model." + std::to_string(s) + ".0.model." + std::to_string(il) + ".conv2");
        }
        wb(v, p + "model." + std::to_string(s) + ".2");
    }
    wb(v, p + "model.4");
    wb(v, p + "model.6");
    for (const char * b : {"target_cond_blocks.0", "target_cond_blocks.2", "external_cond_blocks.0",
                           "external_cond_blocks.2"}) {
        wb(v, p + b);
    }
    return v;
}

std::vector<std::string> component_names(const std::string & c) {
    std::vector<std::string> v;
    if (c == "pose") {
        v = transformer_names("_transformer_model.layers.", 2);
        v.push_back("_pose_token_emb.weight");
        wb(v, "_proj_pose_token_emb.fc_layers.0");
        wb(v, "_proj_pose_token_emb.fc_layers.1");
        wb(v, "_proj_pose_token_emb.forward_projection");
        wb(v, "_proj_local_pose");
        wb(v, "_proj_local_root_values");
        v.push_back("_proj_num_valid_positions.weight");
        wb(v, "_proj_input.0");
        v.push_back("_position_emb.embed");
        wb(v, "_proj_pose_output_logit");
    } else if (c == "root") {
        v = transformer_names("_shared_transformer_model.layers.", 1);
        for (const auto & n : transformer_names("_root_token_transformer_model.layers.", 2)) v.push_back(n);
        for (const auto & n : cond_decoder_names("_conv_output.", 2)) v.push_back(n);
        for (const char * n : {"_proj_local_pose", "_proj_local_root_value", "_proj_global_root_value",
                               "_proj_start_input.fc_layers.0", "_proj_start_input.fc_layers.1",
                               "_proj_start_input.forward_projection", "_proj_end_input.fc_layers.0",
                               "_proj_end_input.fc_layers.1", "_proj_end_input.forward_projection",
                               "_proj_num_token_output_logit"}) {
            wb(v, n);
        }
        for (const char * n : {"_no_local_pose_emb", "_no_local_root_emb", "_no_global_root_emb",
                               "_input_position_emb.weight", "_proj_input_num_tokens.weight",
                               "_middle_token_emb.weight", "_position_emb.embed", "_conv_no_frame_emb"}) {
            v.push_back(n);
        }
    } else {
        v = cond_decoder_names("decoder.", 2);
        v.push_back("quantizer.vq._codebook.embed");
    }
    return v;
}

// a valid synthetic bundle: transformer width 16 (the release's 16 heads divide it)
struct synthetic_bundle {
    std::vector<float> data = std::vector<float>(256, 0.5f);
    mb::model_support  sup;

    synthetic_bundle() {
        for (int j = 0; j < mb::k_n_joints; ++j) {
            sup.joint_names[j] = "joint_" + std::to_string(j);
            sup.parents[j]     = j - 1;
            for (int a = 0; a < 3; ++a) sup.neutral_joints[j * 3 + a] = 0.01f * static_cast<float>(j + a);
        }
        for (int k = 0; k < mb::k_n_features; ++k) {
            sup.mean[k] = 0.001f * static_cast<float>(k);
            sup.std[k]  = k % 7 == 0 ? 0.0f : 1.0f + 0.01f * static_cast<float>(k);
        }
    }

    void write(const std::string & dir) const {
        mb::bundle_provenance prov{k_rev, std::string(64, 'a')};
        for (const char * c : {"pose", "root", "vq-decoder"}) {
            std::vector<mb::bundle_tensor> ts;
            for (const auto & n : component_names(c)) {
                bool                 bias = n.size() > 5 && n.compare(n.size() - 5, 5, ".bias") == 0;
                bool                 out  = n.find("out_proj.weight") != std::string::npos;
                std::vector<int64_t> shape = bias ? std::vector<int64_t>{8} : (out ? std::vector<int64_t>{16, 16}
                                                                                   : std::vector<int64_t>{2, 8});
                ts.push_back({n, mb::dtype::DTYPE_F32, shape, data.data()});
            }
            mb::bundle_write_component(dir + "/" + c + ".gguf", c, ts, prov);
        }
        mb::bundle_write_support(dir + "/support.gguf", sup, prov);
    }
};

// writes `path`'s metadata and tensors to `out` with the C++ writer, after `edit` (when
// given) changed them; `keep` holds buffers the edit allocates
using edit_fn = std::function<void(std::vector<gguf_write_kv> &, std::vector<gguf_write_tensor> &,
                                   std::deque<std::vector<char>> & keep)>;

void rewrite_to(const std::string & path, const std::string & out, const edit_fn & edit = nullptr) {
    auto                           f = mb::gguf_file::open(path);
    std::vector<gguf_write_kv>     kvs;
    std::vector<gguf_write_tensor> ts;
    for (const auto & kv : f->kvs()) {
        gguf_write_kv w;
        w.key  = std::string(kv.key);
        w.type = kv.type;
        w.u    = kv.u;
        w.i    = kv.i;
        w.f    = kv.f;
        w.str  = std::string(kv.str);
        kvs.push_back(w);
    }
    for (const auto & t : f->tensors()) {
        gguf_write_tensor w{std::string(t.name), t.type, {}, t.data};
        for (uint32_t d = 0; d < t.n_dims; ++d) w.ne.push_back(t.ne[d]);
        ts.push_back(w);
    }
    std::deque<std::vector<char>> keep;
    if (edit) edit(kvs, ts, keep);
    mb::gguf_write(out, kvs, ts, f->alignment());
}

void rewrite(const std::string & path, const edit_fn & edit) {
    rewrite_to(path, path, edit);
}

gguf_write_kv * find_kv(std::vector<gguf_write_kv> & kvs, const std::string & key) {
    for (auto & kv : kvs) {
        if (kv.key == key) return &kv;
    }
    return nullptr;
}

void set_kv(std::vector<gguf_write_kv> & kvs, const std::string & key, gguf_type type, uint64_t u,
            const std::string & str = "") {
    gguf_write_kv * kv = find_kv(kvs, key);
    if (!kv) {
        kvs.push_back({});
        kv      = &kvs.back();
        kv->key = key;
    }
    kv->type = type;
    kv->u    = u;
    kv->str  = str;
}

void drop_kv(std::vector<gguf_write_kv> & kvs, const std::string & key) {
    std::erase_if(kvs, [&](const gguf_write_kv & kv) { return kv.key == key; });
}

// a copy of tensor `name`'s data that the edit may change
template <typename T>
T * own_data(std::vector<gguf_write_tensor> & ts, const std::string & name, std::deque<std::vector<char>> & keep) {
    for (auto & t : ts) {
        if (t.name != name) continue;
        size_t n = 4;
        for (int64_t d : t.ne) n *= static_cast<size_t>(d);
        keep.emplace_back(static_cast<const char *>(t.data), static_cast<const char *>(t.data) + n);
        t.data = keep.back().data();
        return reinterpret_cast<T *>(keep.back().data());
    }
    throw std::runtime_error("no tensor " + name);
}

// the bundle_load error for a fresh valid bundle with `edit` applied to `component`
std::string load_error(const std::string & component, const edit_fn & edit) {
    temp_dir         dir;
    synthetic_bundle sb;
    sb.write(dir.path.string());
    if (edit) rewrite(dir.file(component + ".gguf"), edit);
    try {
        mb::bundle_load(dir.path.string());
        return "";
    } catch (const std::runtime_error & e) {
        return e.what();
    }
}

} // namespace

TEST(bundle, synthetic_bundle_loads) {
    temp_dir         dir;
    synthetic_bundle sb;
    sb.write(dir.path.string());
    auto b = mb::bundle_load(dir.path.string());
    EXPECT_EQ(b->upstream_revision, k_rev);
    EXPECT_EQ(b->sup.joint_names[0], "joint_0");
    EXPECT_EQ(b->sup.joint_names[33], "joint_33");
    EXPECT_EQ(b->sup.parents[0], -1);
    EXPECT_EQ(b->sup.parents[33], 32);
    EXPECT_EQ(b->sup.mean[417], sb.sup.mean[417]);
    EXPECT_EQ(b->sup.std[1], sb.sup.std[1]);
    EXPECT_EQ(b->sup.neutral_joints[3 * 5 + 2], sb.sup.neutral_joints[3 * 5 + 2]);
    EXPECT_EQ(b->support->tensors().size(), 4u);
    EXPECT_EQ(mb::gguf_parameter_count(*b->support), 972u);
    EXPECT_EQ(b->pose->tensors().size(), 41u);      // 17 + 12 per layer
    EXPECT_EQ(b->vq_decoder->tensors().size(), 35u); // 19 + 8 per residual block
    // the 64-byte root-token names are stored compacted and found by their upstream name
    EXPECT_NE(b->root->find("_root_token_transformer_model.layers.1.self_attn.out_proj.weight"), nullptr);
    EXPECT_NE(b->root->find("_root_token_transformer_model.layers.1.attn.out_proj.weight"), nullptr);
    // absent optional keys: the networks fall back to the release values
    EXPECT_FALSE(b->pose->meta_uint(mb::k_key_n_head).has_value());
    // sorted by upstream name
    const auto & ts = b->pose->tensors();
    for (size_t k = 1; k < ts.size(); ++k) EXPECT_LT(ts[k - 1].name, ts[k].name);
}

TEST(bundle, optional_hyperparameter_keys_are_accepted) {
    temp_dir         dir;
    synthetic_bundle sb;
    sb.write(dir.path.string());
    rewrite(dir.file("pose.gguf"), [](auto & kvs, auto &, auto &) {
        set_kv(kvs, mb::k_key_n_head, gguf_type::GGUF_TYPE_UINT32, 4);
    });
    rewrite(dir.file("root.gguf"), [](auto & kvs, auto &, auto &) {
        set_kv(kvs, mb::k_key_n_head, gguf_type::GGUF_TYPE_UINT32, 2);
        set_kv(kvs, mb::k_key_dilation_growth, gguf_type::GGUF_TYPE_UINT32, 2);
    });
    rewrite(dir.file("vq-decoder.gguf"), [](auto & kvs, auto &, auto &) {
        set_kv(kvs, mb::k_key_dilation_growth, gguf_type::GGUF_TYPE_UINT32, 1);
    });
    auto b = mb::bundle_load(dir.path.string());
    EXPECT_EQ(b->pose->meta_uint(mb::k_key_n_head), 4u);
    EXPECT_EQ(b->root->meta_uint(mb::k_key_n_head), 2u);
    EXPECT_EQ(b->root->meta_uint(mb::k_key_dilation_growth), 2u);
    EXPECT_EQ(b->vq_decoder->meta_uint(mb::k_key_dilation_growth), 1u);
}

TEST(bundle, writer_is_deterministic) {
    temp_dir         a, b;
    synthetic_bundle sb;
    sb.write(a.path.string());
    sb.write(b.path.string());
    for (const char * c : mb::k_bundle_components) {
        std::string name = std::string(c) + ".gguf";
        EXPECT_EQ(mb::test::read_bytes(a.file(name)), mb::test::read_bytes(b.file(name))) << name;
    }
}

TEST(bundle, missing_directory_and_component) {
    EXPECT_THROW(mb::bundle_load("/nonexistent-motionbricks-bundle"), std::runtime_error);
    temp_dir         dir;
    synthetic_bundle sb;
    sb.write(dir.path.string());
    std::filesystem::remove(dir.file("root.gguf"));
    try {
        mb::bundle_load(dir.path.string());
        FAIL() << "accepted a bundle without root.gguf";
    } catch (const std::runtime_error & e) {
        EXPECT_NE(std::string(e.what()).find("root.gguf"), std::string::npos) << e.what();
    }
}

struct bundle_case {
    const char * name;
    const char * component;
    edit_fn      edit;
    const char * expect;   // phrase the error must contain
};

// stores tensor `name` as `type` (its bytes reread in that layout: fewer than the F32 data)
void retype(std::vector<gguf_write_tensor> & ts, const std::string & name, mb::dtype type) {
    for (auto & t : ts) {
        if (t.name == name) {
            t.type = type;
            return;
        }
    }
    throw std::runtime_error("no tensor " + name);
}

static const std::vector<bundle_case> & bundle_cases() {
    using K = std::vector<gguf_write_kv>;
    using T = std::vector<gguf_write_tensor>;
    using B = std::deque<std::vector<char>>;
    static const std::vector<bundle_case> cases = {
        {"01 wrong architecture", "pose",
         [](K & k, T &, B &) { set_kv(k, "general.architecture", gguf_type::GGUF_TYPE_STRING, 0, "llama"); },
         "general.architecture is 'llama'"},
        {"02 no architecture", "root", [](K & k, T &, B &) { drop_kv(k, "general.architecture"); },
         "missing metadata key general.architecture"},
        {"03 format version 2", "vq-decoder",
         [](K & k, T &, B &) { set_kv(k, "motionbricks.format_version", gguf_type::GGUF_TYPE_UINT32, 2); },
         "format_version is 2"},
        {"04 format version of type UINT64", "pose",
         [](K & k, T &, B &) { set_kv(k, "motionbricks.format_version", gguf_type::GGUF_TYPE_UINT64, 1); },
         "motionbricks.format_version' at offset"},
        {"05 no format version", "support", [](K & k, T &, B &) { drop_kv(k, "motionbricks.format_version"); },
         "motionbricks.format_version"},
        {"06 wrong component role", "root",
         [](K & k, T &, B &) { set_kv(k, "motionbricks.component", gguf_type::GGUF_TYPE_STRING, 0, "pose"); },
         "motionbricks.component is 'pose', expected 'root'"},
        {"07 wrong skeleton", "support",
         [](K & k, T &, B &) { set_kv(k, "motionbricks.skeleton", gguf_type::GGUF_TYPE_STRING, 0, "smpl22"); },
         "motionbricks.skeleton"},
        {"08 no upstream revision", "pose", [](K & k, T &, B &) { drop_kv(k, "motionbricks.upstream_revision"); },
         "motionbricks.upstream_revision"},
        {"09 upstream revision differs", "vq-decoder",
         [](K & k, T &, B &) {
             set_kv(k, "motionbricks.upstream_revision", gguf_type::GGUF_TYPE_STRING, 0, "1983e88");
         },
         "differs"},
        {"10 source sha256 not hex", "root",
         [](K & k, T &, B &) { set_kv(k, "motionbricks.source_sha256", gguf_type::GGUF_TYPE_STRING, 0, "xyz"); },
         "motionbricks.source_sha256"},
        {"11 no source sha256", "support", [](K & k, T &, B &) { drop_kv(k, "motionbricks.source_sha256"); },
         "motionbricks.source_sha256"},
        {"12 parameter count off by one", "pose",
         [](K & k, T &, B &) {
             gguf_write_kv * kv = find_kv(k, "motionbricks.parameter_count");
             kv->u += 1;
         },
         "motionbricks.parameter_count is"},
        {"13 parameter count of type UINT32", "vq-decoder",
         [](K & k, T &, B &) { set_kv(k, "motionbricks.parameter_count", gguf_type::GGUF_TYPE_UINT32, 7); },
         "motionbricks.parameter_count' at offset"},
        {"14 missing layer tensor", "pose",
         [](K & k, T & t, B &) {
             std::erase_if(t, [](const gguf_write_tensor & w) { return w.name == "_transformer_model.layers.1.norm2.bias"; });
             find_kv(k, "motionbricks.parameter_count")->u -= 8;
         },
         "missing tensor '_transformer_model.layers.1.norm2.bias'"},
        {"15 leftover tensor", "vq-decoder",
         [](K & k, T & t, B &) {
             t.push_back({"encoder.model.0.weight", mb::dtype::DTYPE_F32, {8}, t[0].data});
             find_kv(k, "motionbricks.parameter_count")->u += 8;
         },
         "unexpected tensor 'encoder.model.0.weight'"},
        {"16 missing residual block tensor", "root",
         [](K & k, T & t, B &) {
             std::erase_if(t, [](const gguf_write_tensor & w) { return w.name == "_conv_output.model.3.0.model.1.conv2.weight"; });
             find_kv(k, "motionbricks.parameter_count")->u -= 16;
         },
         "missing tensor '_conv_output.model.3.0.model.1.conv2.weight'"},
        {"17 learned tensor stored as I32", "root",
         [](K &, T & t, B &) { t[0].type = mb::dtype::DTYPE_I32; }, "must be F32"},
        {"18 joint names: 33", "support",
         [](K & k, T &, B &) {
             gguf_write_kv * kv = find_kv(k, "motionbricks.joint_names");
             kv->str = kv->str.substr(0, kv->str.rfind(','));
         },
         "motionbricks.joint_names holds 33 names"},
        {"19 joint names: 35", "support",
         [](K & k, T &, B &) { find_kv(k, "motionbricks.joint_names")->str += ",extra"; },
         "more than 34"},
        {"20 joint names: duplicate", "support",
         [](K & k, T &, B &) {
             gguf_write_kv * kv = find_kv(k, "motionbricks.joint_names");
             kv->str.replace(kv->str.find("joint_1,"), 8, "joint_0,");
         },
         "duplicate"},
        {"21 joint names: empty name", "support",
         [](K & k, T &, B &) {
             gguf_write_kv * kv = find_kv(k, "motionbricks.joint_names");
             kv->str.replace(kv->str.find("joint_1,"), 8, ",");
         },
         "name 1 is empty"},
        {"22 joint names absent", "support", [](K & k, T &, B &) { drop_kv(k, "motionbricks.joint_names"); },
         "motionbricks.joint_names"},
        {"23 joint names in a learned component", "pose",
         [](K & k, T &, B &) { set_kv(k, "motionbricks.joint_names", gguf_type::GGUF_TYPE_STRING, 0, "a"); },
         "belongs in support.gguf"},
        {"24 root parent not -1", "support",
         [](K &, T & t, B & b) { own_data<int32_t>(t, "joint_parents", b)[0] = 0; }, "joint_parents[0] = 0"},
        {"25 parent after its child", "support",
         [](K &, T & t, B & b) { own_data<int32_t>(t, "joint_parents", b)[5] = 5; }, "joint_parents[5] = 5"},
        {"26 second root", "support",
         [](K &, T & t, B & b) { own_data<int32_t>(t, "joint_parents", b)[9] = -1; }, "joint_parents[9] = -1"},
        {"27 neutral joint NaN", "support",
         [](K &, T & t, B & b) {
             own_data<float>(t, "neutral_joints", b)[7] = std::numeric_limits<float>::quiet_NaN();
         },
         "'neutral_joints' element 7 is not finite"},
        {"28 mean infinite", "support",
         [](K &, T & t, B & b) {
             own_data<float>(t, "motion_mean", b)[400] = std::numeric_limits<float>::infinity();
         },
         "'motion_mean' element 400 is not finite"},
        {"29 std negative", "support",
         [](K &, T & t, B & b) { own_data<float>(t, "motion_std", b)[3] = -0.5f; }, "motion_std[3] is negative"},
        {"30 std NaN", "support",
         [](K &, T & t, B & b) {
             own_data<float>(t, "motion_std", b)[0] = std::numeric_limits<float>::quiet_NaN();
         },
         "'motion_std' element 0 is not finite"},
        {"31 neutral joints of the wrong shape", "support",
         [](K & k, T & t, B &) {
             for (auto & w : t) {
                 if (w.name == "neutral_joints") w.ne = {2, 34};
             }
             find_kv(k, "motionbricks.parameter_count")->u -= 34;
         },
         "tensor 'neutral_joints' is F32 [34, 2], expected F32 [34, 3]"},
        {"32 parents stored as F32", "support",
         [](K &, T & t, B &) {
             for (auto & w : t) {
                 if (w.name == "joint_parents") w.type = mb::dtype::DTYPE_F32;
             }
         },
         "tensor 'joint_parents' is F32"},
        {"33 mean too short", "support",
         [](K & k, T & t, B &) {
             for (auto & w : t) {
                 if (w.name == "motion_mean") w.ne = {417};
             }
             find_kv(k, "motionbricks.parameter_count")->u -= 1;
         },
         "motion_mean"},
        {"34 support tensor missing", "support",
         [](K & k, T & t, B &) {
             std::erase_if(t, [](const gguf_write_tensor & w) { return w.name == "motion_std"; });
             find_kv(k, "motionbricks.parameter_count")->u -= 418;
         },
         "missing tensor 'motion_std'"},
        {"35 n_head 0", "pose",
         [](K & k, T &, B &) { set_kv(k, mb::k_key_n_head, gguf_type::GGUF_TYPE_UINT32, 0); }, "n_head is 0"},
        {"36 n_head does not divide the width", "root",
         [](K & k, T &, B &) { set_kv(k, mb::k_key_n_head, gguf_type::GGUF_TYPE_UINT32, 3); }, "does not divide"},
        {"38 n_head of type UINT64", "pose",
         [](K & k, T &, B &) { set_kv(k, mb::k_key_n_head, gguf_type::GGUF_TYPE_UINT64, 4); },
         "motionbricks.n_head' at offset"},
        {"39 dilation growth 0", "vq-decoder",
         [](K & k, T &, B &) { set_kv(k, mb::k_key_dilation_growth, gguf_type::GGUF_TYPE_UINT32, 0); },
         "dilation_growth is 0"},
        {"40 n_head in the vq-decoder", "vq-decoder",
         [](K & k, T &, B &) { set_kv(k, mb::k_key_n_head, gguf_type::GGUF_TYPE_UINT32, 4); }, "does not apply"},
        {"41 dilation growth in pose", "pose",
         [](K & k, T &, B &) { set_kv(k, mb::k_key_dilation_growth, gguf_type::GGUF_TYPE_UINT32, 3); },
         "does not apply"},
        // learned weights: every F32 element of every component is checked, naming the tensor
        {"42 NaN pose weight", "pose",
         [](K &, T & t, B & b) {
             own_data<float>(t, "_transformer_model.layers.1.linear1.weight", b)[3] = std::numeric_limits<float>::quiet_NaN();
         },
         "tensor '_transformer_model.layers.1.linear1.weight' element 3 is not finite"},
        {"43 +Inf root weight", "root",
         [](K &, T & t, B & b) {
             own_data<float>(t, "_proj_num_token_output_logit.bias", b)[0] = std::numeric_limits<float>::infinity();
         },
         "tensor '_proj_num_token_output_logit.bias' element 0 is not finite"},
        {"44 -Inf last vq-decoder codebook element", "vq-decoder",
         [](K &, T & t, B & b) {
             float * p = own_data<float>(t, "quantizer.vq._codebook.embed", b);
             for (auto & w : t) {
                 if (w.name == "quantizer.vq._codebook.embed") p[w.ne[0] * w.ne[1] - 1] = -std::numeric_limits<float>::infinity();
             }
         },
         "tensor 'quantizer.vq._codebook.embed' element"},
        {"45 NaN with a payload in a long (compacted) root name", "root",
         [](K &, T & t, B & b) {
             // the longest stored name is a compacted one
             std::string longest;
             for (const auto & w : t) {
                 if (w.name.size() > longest.size()) longest = w.name;
             }
             float *        p    = own_data<float>(t, longest, b);
             const uint32_t bits = 0x7fc01234u;
             std::memcpy(&p[1], &bits, 4);
         },
         "element 1 is not finite"},
        // reduced types (--dtype bf16 / q8_0): matrices only, finite, whole Q8_0 blocks
        {"46 bias stored as BF16", "pose",
         [](K &, T & t, B &) { retype(t, "_transformer_model.layers.0.linear1.bias", mb::dtype::DTYPE_BF16); },
         "'_transformer_model.layers.0.linear1.bias' is BF16; it must be F32"},
        {"47 1-D norm weight stored as BF16", "root",
         [](K &, T & t, B &) {
             const std::string n = "_shared_transformer_model.layers.0.norm1.weight";
             retype(t, n, mb::dtype::DTYPE_BF16);
             for (auto & w : t) {
                 if (w.name == n) w.ne = {16};   // 1-D as a real norm weight (same element count)
             }
         },
         "norm1.weight' is BF16; it must be F32"},
        {"48 support tensor stored as BF16", "support",
         [](K &, T & t, B &) { retype(t, "motion_mean", mb::dtype::DTYPE_BF16); }, "motion_mean"},
        {"49 NaN in a BF16 weight", "pose",
         [](K &, T & t, B & b) {
             const std::string n = "_transformer_model.layers.1.linear1.weight";
             retype(t, n, mb::dtype::DTYPE_BF16);
             own_data<uint16_t>(t, n, b)[2] = 0x7fc0;
         },
         "tensor '_transformer_model.layers.1.linear1.weight' element 2 is not finite"},
        {"50 Inf scale of a Q8_0 block", "pose",
         [](K & k, T & t, B & b) {
             const std::string n = "_transformer_model.layers.1.linear2.weight";
             retype(t, n, mb::dtype::DTYPE_Q8_0);
             for (auto & w : t) {
                 if (w.name == n) w.ne = {64, 1};   // two whole blocks (16 → 64 elements)
             }
             find_kv(k, "motionbricks.parameter_count")->u += 48;
             own_data<uint16_t>(t, n, b)[17] = 0x7c00;   // byte 34: the second block's scale
         },
         "element 32 (the scale of its Q8_0 block) is not finite"},
    };
    return cases;
}

TEST(bundle, corrupt_bundles_are_rejected) {
    for (const auto & c : bundle_cases()) {
        temp_dir         dir;
        synthetic_bundle sb;
        sb.write(dir.path.string());
        ASSERT_NO_THROW(mb::bundle_load(dir.path.string())) << c.name << ": base bundle rejected";
        rewrite(dir.file(std::string(c.component) + ".gguf"), c.edit);
        std::string msg;
        try {
            mb::bundle_load(dir.path.string());
        } catch (const mb::error & e) {
            msg = e.what();
            EXPECT_EQ(e.code(), mb::status::invalid_format) << c.name << ": " << msg;
        }
        EXPECT_NE(msg, "") << c.name << ": accepted";
        EXPECT_NE(msg.find(c.expect), std::string::npos) << c.name << ": message lacks '" << c.expect << "': " << msg;
        EXPECT_NE(msg.find(std::string(c.component) + ".gguf"), std::string::npos)
            << c.name << ": message lacks the file: " << msg;
    }
}

TEST(bundle, n_head_is_checked_against_every_transformer) {
    // 32 heads divide neither width 16 transformer of root.gguf
    std::string msg = load_error("root", [](auto & kvs, auto &, auto &) {
        set_kv(kvs, mb::k_key_n_head, gguf_type::GGUF_TYPE_UINT32, 32);
    });
    EXPECT_NE(msg.find("n_head = 32 does not divide the width 16 of '_shared_transformer_model.layers.*'"),
              std::string::npos) << msg;
}

TEST(bundle, corrupt_component_file_names_the_file) {
    temp_dir         dir;
    synthetic_bundle sb;
    sb.write(dir.path.string());
    std::string bytes = mb::test::read_bytes(dir.file("vq-decoder.gguf"));
    mb::test::write_bytes(dir.file("vq-decoder.gguf"), bytes.substr(0, bytes.size() / 2));
    try {
        mb::bundle_load(dir.path.string());
        FAIL() << "accepted a truncated vq-decoder.gguf";
    } catch (const mb::error & e) {
        EXPECT_NE(std::string(e.what()).find("vq-decoder.gguf"), std::string::npos) << e.what();
    }
}

// ---------------------------------------------------------------------------------------------
// the release support.gguf, reproduced from the upstream skeleton and stats

namespace {

// a little-endian float64 vector from a .npy file
std::vector<double> read_npy_f64(const std::string & path) {
    std::string b = mb::test::read_bytes(path);
    if (b.size() < 10 || b.compare(0, 6, "\x93NUMPY") != 0) throw std::runtime_error(path + ": not .npy");
    size_t hlen = static_cast<uint8_t>(b[8]) | (static_cast<size_t>(static_cast<uint8_t>(b[9])) << 8);
    std::string header = b.substr(10, hlen);
    if (header.find("'<f8'") == std::string::npos || header.find("False") == std::string::npos) {
        throw std::runtime_error(path + ": expected a C-order <f8 array: " + header);
    }
    size_t n = (b.size() - 10 - hlen) / 8;
    std::vector<double> v(n);
    std::memcpy(v.data(), b.data() + 10 + hlen, n * 8);
    return v;
}

} // namespace

TEST(bundle, release_support_is_byte_identical) {
    MB_REQUIRE_SHARED(skel_path, "data/upstream/g1skel34.json");
    MB_REQUIRE_SHARED(mean_path, "data/upstream/stats/mean.npy");
    MB_REQUIRE_SHARED(std_path, "data/upstream/stats/std.npy");

    nlohmann::json      skel = nlohmann::json::parse(mb::test::read_bytes(skel_path));
    std::vector<double> mean = read_npy_f64(mean_path);
    std::vector<double> sd   = read_npy_f64(std_path);
    ASSERT_EQ(skel.at("joints").size(), 34u);
    ASSERT_EQ(mean.size(), 418u);
    ASSERT_EQ(sd.size(), 418u);

    mb::model_support sup;
    for (int j = 0; j < mb::k_n_joints; ++j) {
        const auto & jt    = skel["joints"][j];
        sup.joint_names[j] = jt.at("name").get<std::string>();
        sup.parents[j]     = jt.at("parent").get<int32_t>();
        for (int a = 0; a < 3; ++a) sup.neutral_joints[j * 3 + a] = static_cast<float>(jt.at("neutral")[a].get<double>());
    }
    for (int k = 0; k < mb::k_n_features; ++k) {
        sup.mean[k] = static_cast<float>(mean[k]);
        sup.std[k]  = static_cast<float>(sd[k]);
    }
    temp_dir dir;
    mb::bundle_write_support(dir.file("support.gguf"), sup,
                             {k_rev, "229b764411652b2ab0f824481d6daf897f701a97223029759444fc5bc241ea22"});
    std::string bytes = mb::test::read_bytes(dir.file("support.gguf"));
    EXPECT_EQ(bytes.size(), 5472u);
    EXPECT_EQ(mb::sha256_hex(bytes), "5d41cae4bc494e612ef19e25f599351aafbc9ef1cb46d4ac3f1e42bb7ab07200");

    // and it decodes back to the same values
    auto f = mb::gguf_file::open(dir.file("support.gguf"));
    EXPECT_EQ(*f->get_string("motionbricks.component"), "support");
    EXPECT_EQ(*f->get_u64("motionbricks.parameter_count"), 972u);
}

// ---------------------------------------------------------------------------------------------
// the Python converter's output: loads, and the C++ writer reproduces each file byte for byte

TEST(bundle, converted_reference_small_loads_and_rewrites_identically) {
    MB_REQUIRE_SHARED(weights, "fixtures/reference-small/weights");
    std::string convert = std::string(MB_SOURCE_DIR) + "/tools/convert.py";
    if (!std::filesystem::exists(convert)) GTEST_SKIP() << "skipped: tools/convert.py not found";
    std::string py = MB_PYTHON;
    if (std::system((py + " -c 'import numpy' >/dev/null 2>&1").c_str()) != 0) {
        GTEST_SKIP() << "skipped: " << py << " with numpy not found";
    }
    temp_dir    dir;
    std::string out = dir.file("small");
    std::string cmd = py + " '" + convert + "' bundle --quiet --pose '" + weights + "/pose.safetensors' --root '" +
                      weights + "/root.safetensors' --vqvae '" + weights + "/vqvae.safetensors' --stats '" + weights +
                      "/stats.safetensors' --out '" + out + "' --pose-heads 4 --root-heads 4 >/dev/null";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;

    auto b = mb::bundle_load(out);
    EXPECT_EQ(b->pose->tensors().size(), 41u);
    EXPECT_EQ(b->root->tensors().size(), 86u);
    EXPECT_EQ(b->vq_decoder->tensors().size(), 35u);
    EXPECT_EQ(b->support->tensors().size(), 4u);
    EXPECT_EQ(mb::gguf_parameter_count(*b->pose) + mb::gguf_parameter_count(*b->root) +
                  mb::gguf_parameter_count(*b->vq_decoder),
              2250846u);
    EXPECT_EQ(b->pose->meta_uint(mb::k_key_n_head), 4u);
    EXPECT_EQ(b->sup.joint_names[0], "pelvis_skel");
    EXPECT_EQ(b->sup.parents[8], 0);

    for (const char * c : mb::k_bundle_components) {
        std::string src = out + "/" + c + ".gguf";
        std::string dst = dir.file(std::string("rewritten-") + c + ".gguf");
        rewrite_to(src, dst);
        EXPECT_EQ(mb::sha256_file_hex(src), mb::sha256_file_hex(dst)) << c;
    }
}
