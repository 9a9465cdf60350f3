// NSGA-II on ZDT1 (Zitzler, Deb and Thiele 2000) against its known Pareto front f2 = 1 − √f1,
// f1 ∈ [0, 1], and the non-dominated sort against brute force.
#include "search/nsga2.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "search/search.h"

namespace powertrain::search {
namespace {

std::vector<double> zdt1(const std::vector<double>& x) {
  double sum = 0.0;
  for (std::size_t i = 1; i < x.size(); ++i) sum += x[i];
  const double g = 1.0 + 9.0 * sum / static_cast<double>(x.size() - 1);
  return {x[0], g * (1.0 - std::sqrt(x[0] / g))};
}

TEST(Nsga2, FindsTheZdt1Front) {
  // Deb et al. 2002 ran 100 individuals for 250 generations on 30-D ZDT1 and report a mean
  // convergence metric of 0.0335 (real-coded). Ours converges slower: a mean f2 gap of 0.24 after
  // 250 generations and 0.003 after 1000 (docs/search.md), so it runs 1000 here.
  const std::vector<double> lower(30, 0.0), upper(30, 1.0);
  Nsga2Options options;
  options.seed = 3;
  options.generations = 1000;
  const auto front = nsga2_minimize(zdt1, lower, upper, options);
  ASSERT_GE(front.size(), 50u);
  double worst = 0.0, mean = 0.0, lo = 1.0, hi = 0.0;
  for (const auto& p : front) {
    // Distance in f2 from the true front at the same f1 (an upper bound on the Euclidean one).
    const double d = p.objectives[1] - (1.0 - std::sqrt(p.objectives[0]));
    EXPECT_GE(d, -1e-12);  // nothing beats the true front
    worst = std::max(worst, d);
    mean += d / static_cast<double>(front.size());
    lo = std::min(lo, p.objectives[0]);
    hi = std::max(hi, p.objectives[0]);
  }
  EXPECT_LT(mean, 0.01);
  EXPECT_LT(worst, 0.05);
  // Spread along the whole front.
  EXPECT_LT(lo, 0.02);
  EXPECT_GT(hi, 0.95);
  std::printf("[ nsga2   ] ZDT1: %zu points, mean gap %.5f, worst %.5f, f1 %.3f..%.3f\n",
              front.size(), mean, worst, lo, hi);
}

TEST(Nsga2, IsDeterministicForASeed) {
  const std::vector<double> lower(5, 0.0), upper(5, 1.0);
  Nsga2Options options;
  options.population = 20;
  options.generations = 10;
  const auto a = nsga2_minimize(zdt1, lower, upper, options);
  const auto b = nsga2_minimize(zdt1, lower, upper, options);
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].x, b[i].x);
}

TEST(Nsga2, FrontsMatchBruteForce) {
  std::mt19937_64 rng(7);
  std::vector<std::vector<double>> points;
  for (int i = 0; i < 60; ++i)
    points.push_back({static_cast<double>(rng() % 10), static_cast<double>(rng() % 10),
                      static_cast<double>(rng() % 10)});
  const auto fronts = non_dominated_fronts(points);
  std::vector<int> rank(points.size(), -1);
  std::size_t total = 0;
  for (std::size_t r = 0; r < fronts.size(); ++r) {
    total += fronts[r].size();
    for (int i : fronts[r]) rank[static_cast<std::size_t>(i)] = static_cast<int>(r);
  }
  EXPECT_EQ(total, points.size());
  auto dominates = [](const std::vector<double>& a, const std::vector<double>& b) {
    bool better = false;
    for (std::size_t k = 0; k < a.size(); ++k) {
      if (a[k] > b[k]) return false;
      better = better || a[k] < b[k];
    }
    return better;
  };
  // Brute force: a point's rank is 1 + the largest rank among points dominating it (0 if none).
  for (std::size_t p = 0; p < points.size(); ++p) {
    int expected = 0;
    for (std::size_t q = 0; q < points.size(); ++q)
      if (dominates(points[q], points[p])) expected = std::max(expected, rank[q] + 1);
    EXPECT_EQ(rank[p], expected) << p;
  }
}

}  // namespace
}  // namespace powertrain::search

namespace powertrain::search {
namespace {

// `--algorithm nsga2` in the search: within its budget, the same trials whatever the thread count,
// and a cross-configuration frontier.
TEST(Nsga2Search, RunsWithinBudgetAndRepeats) {
  SearchSpec spec = default_search_spec();
  spec.source = "test";
  spec.model = "gpt3-2.7b";
  spec.gpu = "h100";
  spec.num_gpus = 64;
  spec.global_batch = 192;
  spec.algorithm = Algorithm::kNsga2;
  spec.max_trials = 30;
  SearchOptions one, two;
  one.threads = 1;
  two.threads = 2;
  const SearchResult a = run_search(spec, one);
  const SearchResult b = run_search(spec, two);
  EXPECT_LE(a.decided, 30);
  EXPECT_GT(a.planned, 5);
  EXPECT_EQ(a.invalid, 0);  // proposals are repaired
  ASSERT_FALSE(a.frontier.empty());
  ASSERT_EQ(a.trials.size(), b.trials.size());
  for (std::size_t i = 0; i < a.trials.size(); ++i) {
    EXPECT_EQ(a.trials[i].config, b.trials[i].config);
    EXPECT_EQ(a.trials[i].t_min_s, b.trials[i].t_min_s);
  }
  auto parsed = parse_search_spec(R"({"algorithm": "nsga2"})", "s.json");
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(parsed->algorithm, Algorithm::kNsga2);
}

}  // namespace
}  // namespace powertrain::search
