#include "support/reference-small.h"

#include "support/safetensors-source.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <stdexcept>

namespace mb::test {

namespace {

nlohmann::json read_json(const std::string & path) {
    std::ifstream f(path);
    if (!f) throw std::runtime_error(path + ": cannot open");
    try {
        return nlohmann::json::parse(f);
    } catch (const std::exception & e) {
        throw std::runtime_error(path + ": " + e.what());
    }
}

} // namespace

model_support reference_support(const std::string & dir) {
    model_support sup;
    safetensors_source stats(dir + "/weights/stats.safetensors");
    const std::vector<double> mean = stats.f64("mean");
    const std::vector<double> std  = stats.f64("std");
    if (mean.size() != size_t(k_n_features) || std.size() != size_t(k_n_features)) {
        throw std::runtime_error(dir + ": stats must have 418 entries");
    }
    for (int i = 0; i < k_n_features; ++i) {
        sup.mean[i] = float(mean[i]);
        sup.std[i]  = float(std[i]);
    }
    const nlohmann::json layout = read_json(dir + "/feature_layout.json");
    const auto & sk = layout.at("skeleton");
    if (sk.at("joint_names").size() != size_t(k_n_joints) || sk.at("parents").size() != size_t(k_n_joints) ||
        sk.at("neutral_joints_m").size() != size_t(k_n_joints)) {
        throw std::runtime_error(dir + ": skeleton must have 34 joints");
    }
    for (int j = 0; j < k_n_joints; ++j) {
        sup.joint_names[j] = sk["joint_names"][j].get<std::string>();
        sup.parents[j]     = sk["parents"][j].get<int32_t>();
        for (int i = 0; i < 3; ++i) sup.neutral_joints[j * 3 + i] = float(sk["neutral_joints_m"][j][i].get<double>());
    }
    return sup;
}

std::vector<reference_case> reference_cases(const std::string & dir) {
    const nlohmann::json summary = read_json(dir + "/summary.json");
    std::vector<reference_case> out;
    for (const auto & c : summary.at("cases")) {
        reference_case rc;
        rc.name = c.at("name").get<std::string>();
        rc.file = dir + "/" + c.at("file").get<std::string>();
        const auto & cfg = c.at("config");
        rc.num_inference_steps     = cfg.at("num_inference_step").get<int>();
        rc.use_argmax              = cfg.at("pose_token_sampling_use_argmax").get<bool>();
        rc.skip_ending_target_cond = cfg.at("skip_ending_target_cond").get<bool>();
        rc.allow_out_of_reach      = cfg.at("allow_pred_out_of_reach_num_tokens").get<bool>();
        out.push_back(rc);
    }
    if (out.empty()) throw std::runtime_error(dir + "/summary.json: no cases");
    return out;
}

} // namespace mb::test
