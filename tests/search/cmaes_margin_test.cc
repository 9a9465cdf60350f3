// CMA-ES with Margin (Hamano et al., GECCO 2022) on a small mixed binary + continuous function.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <vector>

#include "search/cmaes.h"
#include "search/space.h"

namespace powertrain::search {
namespace {

constexpr int kContinuous = 4;
constexpr int kBinary = 2;

// Sphere around 0.3 on the continuous coordinates, plus 1e-3 for every binary coordinate whose
// decoded value floor(2x) is 0. The optimum is 0 (continuous at 0.3, binaries at 1). The binary
// term is small, so while the continuous part dominates, selection says nothing about the
// binaries; by the time it would, σ has shrunk far below the distance to the threshold 0.5.
double mixed(const std::vector<double>& x) {
  double f = 0.0;
  for (int i = 0; i < kContinuous; ++i) f += std::pow(x[static_cast<std::size_t>(i)] - 0.3, 2);
  for (int i = kContinuous; i < kContinuous + kBinary; ++i)
    if (std::floor(2.0 * x[static_cast<std::size_t>(i)]) < 1.0) f += 1e-3;
  return f;
}

double run(bool margin, std::uint64_t seed, double* sigma_end = nullptr) {
  std::vector<double> mean(kContinuous, 0.8);
  mean.resize(kContinuous + kBinary, 0.1);  // binaries start on the wrong side
  CmaEs es(mean, 0.1, 8, seed);
  if (margin) {
    std::vector<int> levels(kContinuous, 0);
    levels.resize(kContinuous + kBinary, 2);
    es.set_margin(levels);
  }
  double best = std::numeric_limits<double>::infinity();
  for (int generation = 0; generation < 400; ++generation) {
    const auto xs = es.ask();
    std::vector<double> values;
    for (const auto& x : xs) values.push_back(mixed(x));
    best = std::min(best, *std::min_element(values.begin(), values.end()));
    es.tell(values);
  }
  if (sigma_end) *sigma_end = es.sigma();
  return best;
}

TEST(CmaesMargin, PlainCmaEsStallsOnTheBinaryKnobsAndMarginFindsTheOptimum) {
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    double sigma_plain = 0.0;
    const double plain = run(false, seed, &sigma_plain);
    const double with_margin = run(true, seed);
    // Plain: the continuous part converges, σ collapses, at least one binary stays at 0.
    EXPECT_GE(plain, 1e-3) << "seed " << seed;
    EXPECT_LT(sigma_plain, 1e-4) << "seed " << seed;
    // Margin: both binaries flip to 1 and the continuous part still converges.
    EXPECT_LT(with_margin, 1e-8) << "seed " << seed;
    std::printf("[ margin  ] seed %d: best f plain %.3g (final sigma %.2g), with margin %.3g\n",
                static_cast<int>(seed), plain, sigma_plain, with_margin);
  }
}

TEST(CmaesMargin, KeepsTheMarginalFlipProbabilityOfEachDiscreteCoordinate) {
  // On a flat function σ and the mean wander; after every update each discrete coordinate must
  // still leave its current value with probability ≥ α/2 per side (α at an end value), which we
  // check by sampling: over many generations, every binary coordinate is seen on both sides.
  CmaEs es(std::vector<double>(3, 0.05), 0.01, 8, 7);
  es.set_margin({2, 3, 0});
  int flips[2] = {0, 0};
  for (int generation = 0; generation < 300; ++generation) {
    const auto xs = es.ask();
    std::vector<double> values;
    // Reward staying low on every coordinate: plain CMA-ES would never leave value 0.
    for (const auto& x : xs) {
      values.push_back(x[0] + x[1] + x[2]);
      flips[0] += std::floor(2.0 * x[0]) >= 1.0;
      flips[1] += std::floor(3.0 * x[1]) >= 1.0;
    }
    es.tell(values);
  }
  std::printf("[ margin  ] samples on the other side of 2400: binary %d, 3-level %d\n", flips[0],
              flips[1]);
  // α = 1/(n·λ) = 1/24: about 100 of 2400 samples expected on the other side.
  EXPECT_GE(flips[0], 40);
  EXPECT_GE(flips[1], 40);
  EXPECT_LE(flips[0], 300);
  EXPECT_LE(flips[1], 300);
}

TEST(CmaesMargin, IsTheDefaultAndTheSpecKeyIsChecked) {
  auto spec = parse_search_spec("{}", "s.json");
  ASSERT_TRUE(spec) << spec.error().message;
  EXPECT_TRUE(spec->cmaes_margin);
  auto off = parse_search_spec(R"({"cmaes_margin": false})", "s.json");
  ASSERT_TRUE(off) << off.error().message;
  EXPECT_FALSE(off->cmaes_margin);
  auto bad = parse_search_spec(R"({"cmaes_margin": 1})", "s.json");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("cmaes_margin"), std::string::npos) << bad.error().message;
}

}  // namespace
}  // namespace powertrain::search
