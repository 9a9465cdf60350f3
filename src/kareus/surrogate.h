// Surrogate regressors for Kareus's MBO (§4.3): gradient-boosted trees through XGBoost's C API
// (max_depth 6, eta 0.3, 100 rounds, App. C), or, when libxgboost is not available at build time,
// an inverse-distance-weighted k-nearest-neighbour regressor with the same interface.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace powertrain::kareus {

/// Rows of features (all rows the same width).
using FeatureMatrix = std::vector<std::vector<double>>;

/// Fits y ≈ g(x) on (x, y) and predicts g at other rows. Deterministic for a seed; each call is
/// independent (no shared state), so it is thread-safe.
/// Errors: empty or ragged input, or an XGBoost failure (its message).
core::Result<std::vector<double>> fit_predict(const FeatureMatrix& x, const std::vector<double>& y,
                                              const FeatureMatrix& query, std::uint64_t seed);

/// "xgboost 1.7.4" or "knn fallback (libxgboost-dev not found at build time)".
std::string_view surrogate_name();
bool have_xgboost();

}  // namespace powertrain::kareus
