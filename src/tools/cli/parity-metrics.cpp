// open-loop metrics (see parity-metrics.h)
#include "tools/cli/parity-metrics.h"

#include <algorithm>

namespace mb::cli {

const char * const k_metric_names[METRIC_COUNT] = {"root_m",        "rotation_deg",        "joint_m",
                                                   "target_root_m", "target_rotation_deg", "target_joint_m"};
const tolerances k_open_loop_tolerances = {0.01, 2.0, 0.02, 0.002, 0.2, 0.003};
const tolerances k_open_loop_strict     = {0.001, 0.2, 0.002, 0.0002, 0.02, 0.0003};
const tolerances k_backend_tolerances   = {1e-3, 0.2, 2e-3, 1e-4, 0.05, 2e-4};

double vec_error(const float * a, const float * b) {
    double s = 0;
    for (int c = 0; c < 3; ++c) s += (double(a[c]) - b[c]) * (double(a[c]) - b[c]);
    return std::sqrt(s);
}

double quat_error_deg(const float * a, const float * b) {
    double dot = 0, na = 0, nb = 0;
    for (int c = 0; c < 4; ++c) {
        dot += double(a[c]) * b[c];
        na += double(a[c]) * a[c];
        nb += double(b[c]) * b[c];
    }
    const double cosine = std::fabs(dot) / std::sqrt(na * nb);
    if (!std::isfinite(cosine)) return NAN;
    return 2.0 * std::acos(std::min(1.0, cosine)) * 180.0 / M_PI;
}

namespace {

nlohmann::json number(float v) {
    if (!std::isfinite(v)) return nullptr;
    return double(v);
}

} // namespace

nlohmann::json json_rows(const float * v, size_t n, size_t cols) {
    nlohmann::json a = nlohmann::json::array();
    for (size_t i = 0; i < n; ++i) {
        nlohmann::json r = nlohmann::json::array();
        for (size_t c = 0; c < cols; ++c) r.push_back(number(v[i * cols + c]));
        a.push_back(std::move(r));
    }
    return a;
}

nlohmann::json json_rows3(const float * v, size_t n, size_t inner, size_t cols) {
    nlohmann::json a = nlohmann::json::array();
    for (size_t i = 0; i < n; ++i) a.push_back(json_rows(v + i * inner * cols, inner, cols));
    return a;
}

bool json_flatten(const nlohmann::json & a, size_t inner, size_t cols, std::vector<float> & out) {
    out.clear();
    if (!a.is_array()) return false;
    auto row = [&](const nlohmann::json & r) {
        if (!r.is_array() || r.size() != cols) return false;
        for (const auto & x : r) {
            if (x.is_null()) out.push_back(NAN);
            else if (x.is_number()) out.push_back(x.get<float>());
            else return false;
        }
        return true;
    };
    for (const auto & e : a) {
        if (inner == 0) {
            if (!row(e)) return false;
            continue;
        }
        if (!e.is_array() || e.size() != inner) return false;
        for (const auto & r : e) {
            if (!row(r)) return false;
        }
    }
    return true;
}

nlohmann::json json_stat(const error_stat & s) {
    nlohmann::json o;
    const double   m = s.get_max(), r = s.rmse();
    o["max"]  = std::isfinite(m) ? nlohmann::json(m) : nlohmann::json(nullptr);
    o["rmse"] = std::isfinite(r) ? nlohmann::json(r) : nlohmann::json(nullptr);
    return o;
}

nlohmann::json json_tolerances(const tolerances & t) {
    nlohmann::json o = nlohmann::json::object();
    for (int m = 0; m < METRIC_COUNT; ++m) o[k_metric_names[m]] = t[size_t(m)];
    return o;
}

} // namespace mb::cli
