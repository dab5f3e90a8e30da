// what the parity programs share (cmd-parity, cmd-compare-reports): the six open-loop metrics,
// their registry tolerances, per-row errors, skeleton FK and nested JSON arrays
#pragma once

#include "tools/serve/pose-fk.h"

#include <nlohmann/json.hpp>

#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace mb::cli {

// the six metrics in report order, and their tolerances
enum metric : int { METRIC_ROOT, METRIC_ROTATION, METRIC_JOINT, METRIC_TARGET_ROOT, METRIC_TARGET_ROTATION, METRIC_TARGET_JOINT, METRIC_COUNT };
extern const char * const k_metric_names[METRIC_COUNT];          // "root_m", "rotation_deg", ...
using tolerances = std::array<double, METRIC_COUNT>;
extern const tolerances k_open_loop_tolerances;                  // the registry's (10 mm, 2°, 20 mm, 2 mm, 0.2°, 3 mm)
extern const tolerances k_open_loop_strict;                      // ours, 10× tighter
extern const tolerances k_backend_tolerances;                    // backend comparison (1 mm, 0.2°, 2 mm, 0.1 mm, 0.05°, 0.2 mm)

// max and root-mean-square of per-row errors; a non-finite error makes both NaN (written null)
struct error_stat {
    double max = 0, sum2 = 0;
    uint64_t n = 0;
    bool     finite = true;
    void     add(double e) {
        if (!std::isfinite(e)) finite = false;
        max = std::max(max, e);
        sum2 += e * e;
        ++n;
    }
    double get_max() const { return finite ? max : NAN; }
    double rmse() const { return !finite ? NAN : n ? std::sqrt(sum2 / double(n)) : 0.0; }
};

// Euclidean distance of two 3-vectors
double vec_error(const float * a, const float * b);
// sign-invariant angle between two quaternions, degrees: 2 acos(|a·b| / (|a| |b|))
double quat_error_deg(const float * a, const float * b);

using serve::skeleton_fk;   // FK over the fixture's skeleton (tools/serve/pose-fk.h)

// rows of `cols` values as a nested JSON array ([n][cols]); non-finite values become null
nlohmann::json json_rows(const float * v, size_t n, size_t cols);
// [n][inner][cols]
nlohmann::json json_rows3(const float * v, size_t n, size_t inner, size_t cols);
// a nested JSON array of numbers (null allowed) flattened; false when the shape is not [*][cols] or [*][inner][cols]
bool json_flatten(const nlohmann::json & a, size_t inner, size_t cols, std::vector<float> & out);

// {"max": m, "rmse": r} with NaN → null
nlohmann::json json_stat(const error_stat & s);
nlohmann::json json_tolerances(const tolerances & t);

} // namespace mb::cli
