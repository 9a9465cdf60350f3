#include "kareus/surrogate.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#ifdef POWERTRAIN_HAVE_XGBOOST
#include <xgboost/c_api.h>
#endif

namespace powertrain::kareus {

namespace {

core::Status check(const FeatureMatrix& x, const std::vector<double>& y,
                   const FeatureMatrix& query) {
  if (x.empty() || x.size() != y.size()) return core::Error{"surrogate: no or mismatched samples"};
  const std::size_t width = x.front().size();
  for (const auto& row : x)
    if (row.size() != width) return core::Error{"surrogate: ragged feature rows"};
  for (const auto& row : query)
    if (row.size() != width) return core::Error{"surrogate: query width differs from training"};
  return core::Ok{};
}

#ifdef POWERTRAIN_HAVE_XGBOOST
std::vector<float> flatten(const FeatureMatrix& x) {
  std::vector<float> out;
  for (const auto& row : x)
    for (double v : row) out.push_back(static_cast<float>(v));
  return out;
}

core::Result<std::vector<double>> xgboost_fit_predict(const FeatureMatrix& x,
                                                      const std::vector<double>& y,
                                                      const FeatureMatrix& query,
                                                      std::uint64_t seed) {
  const std::size_t width = x.front().size();
  DMatrixHandle train = nullptr, test = nullptr;
  BoosterHandle booster = nullptr;
  auto cleanup = [&] {
    if (booster) XGBoosterFree(booster);
    if (train) XGDMatrixFree(train);
    if (test) XGDMatrixFree(test);
  };
  auto fail = [&](const char* what) -> core::Result<std::vector<double>> {
    std::string message = fmt::format("xgboost {}: {}", what, XGBGetLastError());
    cleanup();
    return core::Error{message};
  };
  const std::vector<float> data = flatten(x);
  std::vector<float> labels(y.begin(), y.end());
  if (XGDMatrixCreateFromMat(data.data(), x.size(), width, NAN, &train) != 0)
    return fail("DMatrix");
  if (XGDMatrixSetFloatInfo(train, "label", labels.data(), labels.size()) != 0)
    return fail("labels");
  if (XGBoosterCreate(&train, 1, &booster) != 0) return fail("booster");
  const std::string seed_text = std::to_string(seed % 2147483647ULL);
  // App. C: shallow trees, a high learning rate and 100 rounds; one thread for determinism.
  const std::pair<const char*, const char*> params[] = {
      {"max_depth", "6"},      {"eta", "0.3"},     {"objective", "reg:squarederror"},
      {"nthread", "1"},        {"verbosity", "0"}, {"seed", seed_text.c_str()},
      {"tree_method", "exact"}};
  for (const auto& [name, value] : params)
    if (XGBoosterSetParam(booster, name, value) != 0) return fail("parameter");
  for (int round = 0; round < 100; ++round)
    if (XGBoosterUpdateOneIter(booster, round, train) != 0) return fail("training");
  std::vector<double> out;
  if (query.empty()) {
    cleanup();
    return out;
  }
  const std::vector<float> qdata = flatten(query);
  if (XGDMatrixCreateFromMat(qdata.data(), query.size(), width, NAN, &test) != 0)
    return fail("query DMatrix");
  bst_ulong length = 0;
  const float* result = nullptr;
  if (XGBoosterPredict(booster, test, 0, 0, 0, &length, &result) != 0) return fail("predict");
  out.assign(result, result + length);
  cleanup();
  return out;
}
#endif

// Fallback: inverse-distance-weighted mean of the 5 nearest samples (features are normalized by
// the caller). The seed jitters tie-breaking only.
[[maybe_unused]] std::vector<double> knn_fit_predict(const FeatureMatrix& x,
                                                     const std::vector<double>& y,
                                                     const FeatureMatrix& query) {
  std::vector<double> out;
  std::vector<std::pair<double, std::size_t>> d(x.size());
  for (const auto& q : query) {
    for (std::size_t i = 0; i < x.size(); ++i) {
      double s = 0.0;
      for (std::size_t j = 0; j < q.size(); ++j) s += (q[j] - x[i][j]) * (q[j] - x[i][j]);
      d[i] = {s, i};
    }
    const std::size_t k = std::min<std::size_t>(5, d.size());
    std::partial_sort(d.begin(), d.begin() + static_cast<long>(k), d.end());
    double wsum = 0.0, vsum = 0.0;
    for (std::size_t i = 0; i < k; ++i) {
      const double w = 1.0 / (std::sqrt(d[i].first) + 1e-6);
      wsum += w;
      vsum += w * y[d[i].second];
    }
    out.push_back(vsum / wsum);
  }
  return out;
}

}  // namespace

core::Result<std::vector<double>> fit_predict(const FeatureMatrix& x, const std::vector<double>& y,
                                              const FeatureMatrix& query, std::uint64_t seed) {
  if (auto status = check(x, y, query); !status) return status.error();
#ifdef POWERTRAIN_HAVE_XGBOOST
  return xgboost_fit_predict(x, y, query, seed);
#else
  (void)seed;
  return knn_fit_predict(x, y, query);
#endif
}

std::string_view surrogate_name() {
#ifdef POWERTRAIN_HAVE_XGBOOST
  return "XGBoost (C API; max_depth 6, eta 0.3, 100 rounds)";
#else
  return "k-nearest-neighbour fallback (libxgboost-dev not found at build time)";
#endif
}

bool have_xgboost() {
#ifdef POWERTRAIN_HAVE_XGBOOST
  return true;
#else
  return false;
#endif
}

}  // namespace powertrain::kareus
