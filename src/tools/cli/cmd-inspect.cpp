// motionbricks inspect [--json] DIR: loads and validates a model bundle (every
// component, and every network's weights) and prints what it holds
#include "tools/cli/commands.h"

#include "format/bundle.h"
#include "format/sha256.h"
#include "model/pose-planner.h"
#include "model/root-planner.h"
#include "model/vq-decoder.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstring>
#include <string>

namespace mb::cli {

namespace {

nlohmann::ordered_json decoder_json(const cond_decoder & dec) {
    const cond_decoder_hparams & hp = dec.hp;
    // the dilation of each residual block, in application order (the same in every stage)
    nlohmann::ordered_json dilations = nlohmann::ordered_json::array();
    if (!dec.stages.empty()) {
        for (const auto & blk : dec.stages[0].res) dilations.push_back(blk.dilation);
    }
    return {
        {"c_in", hp.c_in},     {"width", hp.width},           {"c_out", hp.c_out},
        {"down_t", hp.down_t}, {"depth", hp.depth},           {"dilation_growth", hp.dilation_growth},
        {"dilations", dilations}, {"ext_dim", hp.ext_dim},   {"tgt_dim", hp.tgt_dim},
    };
}

// every hyperparameter the networks derive from the bundle (shapes + metadata)
nlohmann::ordered_json hparams_json(const model_bundle & b) {
    const std::unique_ptr<backend> be = backend_cpu_create(1);    // the CPU aliases the weights: no copy
    pose_planner pose = pose_planner::load(*b.pose, *be);
    root_planner root = root_planner::load(*b.root, *be);
    vq_decoder   vq   = vq_decoder::load(*b.vq_decoder, *be);

    const pose_hparams & p = pose.hp;
    const root_hparams & r = root.hp;
    const vq_hparams &   v = vq.hp;
    nlohmann::ordered_json out;
    out["pose"] = {
        {"n_embd", p.n_embd},
        {"n_head", p.n_head},
        {"n_layer", p.n_layer},
        {"n_ff", p.n_ff},
        {"n_tok_head", p.n_tok_head},
        {"n_code", p.n_code},
        {"tok_dim", p.tok_dim},
        {"n_mlp_layer", p.n_mlp_layer},
        {"pose_feat_width", p.pose_feat_width},
        {"root_feat_width", p.root_feat_width},
        {"dur_feat_width", p.dur_feat_width},
        {"frames_per_token", p.frames_per_token},
        {"root_dim", p.root_dim},
        {"pose_dim", p.pose_dim},
        {"max_tokens", p.max_tokens},
        {"min_tokens", p.min_tokens},
    };
    out["root"] = {
        {"n_embd", r.n_embd},
        {"n_head", r.n_head},
        {"n_ff", r.n_ff},
        {"n_layer_shared", r.n_layer_shared},
        {"n_layer_token", r.n_layer_token},
        {"pose_feat", r.pose_feat},
        {"local_root_feat", r.local_root_feat},
        {"global_root_feat", r.global_root_feat},
        {"pose_dim", r.pose_dim},
        {"local_root_dim", r.local_root_dim},
        {"global_root_dim", r.global_root_dim},
        {"frames_per_token", r.frames_per_token},
        {"max_tokens", r.max_tokens},
        {"min_tokens", r.min_tokens},
        {"n_class", r.n_class},
        {"conv_decoder", decoder_json(root.conv_output)},
    };
    out["vq-decoder"] = {
        {"n_tok_head", v.n_tok_head},
        {"n_code", v.n_code},
        {"head_dim", v.head_dim},
        {"code_dim", v.code_dim},
        {"frames_per_token", v.frames_per_token},
        {"out_dim", v.out_dim},
        {"ext_dim", v.ext_dim},
        {"tgt_dim", v.tgt_dim},
        {"decoder", decoder_json(vq.dec)},
    };
    return out;
}

nlohmann::ordered_json inspect_json(const model_bundle & b) {
    nlohmann::ordered_json j;
    j["format"]            = k_bundle_format;
    j["architecture"]      = k_bundle_architecture;
    j["skeleton"]          = k_bundle_skeleton;
    j["joint_count"]       = k_n_joints;
    j["upstream_revision"] = b.upstream_revision;

    const gguf_file * files[4] = {b.pose.get(), b.root.get(), b.vq_decoder.get(), b.support.get()};
    uint64_t          n_infer  = 0;
    nlohmann::ordered_json comps;
    for (int c = 0; c < 4; ++c) {
        const gguf_file & f = *files[c];
        uint64_t          n = gguf_parameter_count(f);
        if (c < 3) n_infer += n;
        // tensors per stored type (F32, BF16, Q8_0, I32): a bundle made with --dtype reduces its matrices
        nlohmann::ordered_json types = nlohmann::ordered_json::object();
        for (const char * tn : {"F32", "BF16", "Q8_0", "I32"}) {
            size_t k = 0;
            for (const auto & t : f.tensors()) k += std::strcmp(dtype_name(t.type), tn) == 0;
            if (k) types[tn] = k;
        }
        comps[k_bundle_components[c]] = {
            {"path", std::string(k_bundle_components[c]) + ".gguf"},
            {"tensors", f.tensors().size()},
            {"parameters", n},
            {"bytes", f.file_size()},
            {"sha256", sha256_file_hex(f.path())},
            {"source_sha256", std::string(*f.get_string("motionbricks.source_sha256"))},
            {"tensor_types", types},
        };
    }
    j["inference_parameter_count"] = n_infer;
    j["components"]                = comps;
    j["hyperparameters"]           = hparams_json(b);
    nlohmann::ordered_json joints  = nlohmann::ordered_json::array();
    for (int i = 0; i < k_n_joints; ++i) {
        joints.push_back({{"index", i}, {"name", b.sup.joint_names[i]}, {"parent", b.sup.parents[i]}});
    }
    j["joints"] = joints;
    return j;
}

void print_human(const nlohmann::ordered_json & j) {
    std::printf("format: %s\n", j["format"].get<std::string>().c_str());
    std::printf("architecture: %s\n", j["architecture"].get<std::string>().c_str());
    std::printf("skeleton: %s\n", j["skeleton"].get<std::string>().c_str());
    std::printf("joint count: %d\n", j["joint_count"].get<int>());
    std::printf("upstream revision: %s\n", j["upstream_revision"].get<std::string>().c_str());
    std::printf("inference parameters: %llu\n",
                static_cast<unsigned long long>(j["inference_parameter_count"].get<uint64_t>()));
    std::printf("components:\n");
    for (const auto & [name, c] : j["components"].items()) {
        std::printf("  %-11s %4zu tensors %11llu parameters %11llu bytes  sha256 %s\n", name.c_str(),
                    c["tensors"].get<size_t>(), static_cast<unsigned long long>(c["parameters"].get<uint64_t>()),
                    static_cast<unsigned long long>(c["bytes"].get<uint64_t>()),
                    c["sha256"].get<std::string>().c_str());
        std::string types;
        for (const auto & [tn, k] : c["tensor_types"].items()) types += " " + tn + " " + std::to_string(k.get<size_t>());
        std::printf("  %-11s tensor types:%s\n", "", types.c_str());
    }
    std::printf("hyperparameters:\n");
    for (const auto & [net, hp] : j["hyperparameters"].items()) {
        std::string line;
        for (const auto & [k, v] : hp.items()) {
            if (v.is_object()) {
                line += " " + k + "{";
                bool first = true;
                for (const auto & [k2, v2] : v.items()) {
                    line += (first ? "" : " ") + k2 + "=" + v2.dump();
                    first = false;
                }
                line += "}";
            } else {
                line += " " + k + "=" + v.dump();
            }
        }
        std::printf("  %s:%s\n", net.c_str(), line.c_str());
    }
    for (const auto & jt : j["joints"]) {
        std::printf("joint[%d]: %s parent=%d\n", jt["index"].get<int>(), jt["name"].get<std::string>().c_str(),
                    jt["parent"].get<int>());
    }
}

} // namespace

int cmd_inspect(int argc, char ** argv) {
    bool        json = false;
    const char * dir = nullptr;
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--json")) {
            json = true;
        } else if (!dir && argv[i][0] != '-') {
            dir = argv[i];
        } else {
            dir = nullptr;
            break;
        }
    }
    if (!dir) {
        std::fprintf(stderr, "usage: motionbricks inspect [--json] BUNDLE_DIR\n");
        return 2;
    }
    try {
        auto                   b = bundle_load(dir);
        nlohmann::ordered_json j = inspect_json(*b);
        if (json) {
            std::printf("%s\n", j.dump(2).c_str());
        } else {
            print_human(j);
        }
    } catch (const std::exception & e) {
        // one line, whatever the message holds
        std::string msg = e.what();
        for (char & c : msg) {
            if (c == '\n' || c == '\r') c = ' ';
        }
        std::fprintf(stderr, "motionbricks inspect: %s\n", msg.c_str());
        return 2;
    }
    return 0;
}

} // namespace mb::cli
