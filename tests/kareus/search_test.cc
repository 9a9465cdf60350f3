// Hypervolume, the exhaustive reference and multi-pass MBO (Kareus §4.3, Alg. 1, App. C).
#include "kareus/search.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

#include "kareus/surrogate.h"
#include "kareus_test_jobs.h"
#include "profile/model_profile.h"

namespace powertrain::kareus {
namespace {

// Brute force: area on a fine grid of cells dominated by some point.
double grid_hypervolume(const std::vector<Point2>& pts, Point2 ref) {
  const int n = 400;
  double area = 0.0;
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      const double x = ref.x * (i + 0.5) / n, y = ref.y * (j + 0.5) / n;
      for (const Point2& p : pts)
        if (p.x <= x && p.y <= y) {
          area += (ref.x / n) * (ref.y / n);
          break;
        }
    }
  return area;
}

TEST(KareusHypervolume, MatchesBruteForceAndImprovementIsADifference) {
  std::mt19937_64 rng(3);
  for (int trial = 0; trial < 20; ++trial) {
    std::vector<Point2> pts;
    for (int i = 0; i < 6; ++i)
      pts.push_back({double(rng() % 1000) / 1000.0, double(rng() % 1000) / 1000.0});
    const Point2 ref{1.1, 1.1};
    EXPECT_NEAR(hypervolume(pts, ref), grid_hypervolume(pts, ref), 0.01);
    const std::vector<Point2> front = pareto_front(pts);
    for (int c = 0; c < 10; ++c) {
      const Point2 p{double(rng() % 1200) / 1000.0, double(rng() % 1200) / 1000.0};
      std::vector<Point2> with = pts;
      with.push_back(p);
      EXPECT_NEAR(hypervolume_improvement(front, p, ref),
                  hypervolume(with, ref) - hypervolume(pts, ref), 1e-12)
          << trial << " " << c;
    }
  }
  // Hand case: one point (0.5, 0.5), reference (1, 1): HV 0.25; (0.25, 0.75) adds 0.0625.
  EXPECT_DOUBLE_EQ(hypervolume({{0.5, 0.5}}, {1, 1}), 0.25);
  EXPECT_DOUBLE_EQ(hypervolume_improvement({{0.5, 0.5}}, {0.25, 0.75}, {1, 1}), 0.0625);
  EXPECT_DOUBLE_EQ(hypervolume_improvement({{0.5, 0.5}}, {0.6, 0.6}, {1, 1}), 0.0);
}

TEST(KareusSurrogate, FitsASmoothFunction) {
  FeatureMatrix x, q;
  std::vector<double> y;
  for (int i = 0; i < 60; ++i) {
    const double a = i / 60.0;
    x.push_back({a, 1.0 - a});
    y.push_back(1.0 + a * a);
  }
  q.push_back({0.5, 0.5});
  auto p = fit_predict(x, y, q, 1);
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_NEAR((*p)[0], 1.25, 0.05) << surrogate_name();
  auto again = fit_predict(x, y, q, 1);
  EXPECT_EQ((*p)[0], (*again)[0]);  // deterministic
}

PartitionType llama_attention_partition() {
  const MicrobatchWork mb = test_jobs::llama_tp8_stage1_forward();
  for (const PartitionType& p : mb.partitions)
    if (p.count > 10 && p.compute.size() == 5 && p.compute[3].name == "attention") return p;
  ADD_FAILURE() << "no attention partition";
  return {};
}

TEST(KareusMbo, DefaultSpaceFollowsAppendixC) {
  const device::GpuSpec gpu = *device::find_gpu("a100-sxm");
  const PartitionType p = llama_attention_partition();
  const SearchSpace space = default_search_space(gpu, ConcurrencyParams{}, p);
  ASSERT_EQ(space.clocks_mhz.size(), 18u);
  EXPECT_EQ(space.clocks_mhz.front(), 900);
  EXPECT_EQ(space.clocks_mhz.back(), 1410);
  ASSERT_EQ(space.comm_sms.size(), 10u);
  EXPECT_EQ(space.comm_sms.front(), 3);
  EXPECT_EQ(space.comm_sms.back(), 30);
  EXPECT_GE(space.launch_slots.size(), 2u);
  EXPECT_EQ(space.launch_slots.front(), 0);
}

TEST(KareusMbo, ReachesNinetyNinePercentOfExhaustiveHypervolumeWithTenPercentOfTheSpace) {
  const device::GpuSpec gpu = *device::find_gpu("a100-sxm");
  const ConcurrencyParams params;
  const PartitionType p = llama_attention_partition();
  // A fine grid: every 15 MHz clock in 900–1410, 1..30 SMs, every launch slot.
  SearchSpace space;
  for (int f : gpu.clocks_mhz)
    if (f >= 900) space.clocks_mhz.push_back(f);
  for (int k = 1; k <= 30; ++k) space.comm_sms.push_back(k);
  for (int s = 0; s < static_cast<int>(p.compute.size()); ++s) space.launch_slots.push_back(s);
  const std::vector<Evaluated> all = exhaustive(gpu, params, p, space);
  for (std::uint64_t seed : {1u, 2u, 3u}) {
    auto result = run_mbo(gpu, params, p, space, app_c_options(p, seed));
    ASSERT_TRUE(result.ok()) << result.error().message;
    const double evaluated_fraction = double(result->evaluated.size()) / double(space.size());
    const double ratio = hypervolume_ratio(result->evaluated, all);
    EXPECT_LE(evaluated_fraction, 0.10) << seed;
    EXPECT_GE(ratio, 0.99) << "seed " << seed << " evaluated " << result->evaluated.size() << " of "
                           << space.size() << " with " << surrogate_name();
    // Beats random sampling of the same size on average.
    EXPECT_GT(result->batches, 0);
  }
}

// The initial sample is a Latin hypercube: with N_init = 48 samples over 35 clocks × 30 SM counts
// × 3 slots every clock and every SM count is sampled (uniform draws leave ~9 of the 35 clocks
// out on average: 35 × (34/35)^48), each slot 16 times, and no candidate twice.
TEST(KareusMbo, InitialSampleCoversEveryClockAndSmCount) {
  const device::GpuSpec gpu = *device::find_gpu("a100-sxm");
  const PartitionType p = llama_attention_partition();
  SearchSpace space;
  for (int f : gpu.clocks_mhz)
    if (f >= 900) space.clocks_mhz.push_back(f);
  for (int k = 1; k <= 30; ++k) space.comm_sms.push_back(k);
  space.launch_slots = {0, 1, 2};
  ASSERT_EQ(space.clocks_mhz.size(), 35u);
  for (std::uint64_t seed : {1u, 2u, 3u}) {
    auto r =
        run_mbo(gpu, ConcurrencyParams{}, p, space,
                MboOptions{.initial_samples = 48, .batch_size = 4, .max_batches = 0, .seed = seed});
    ASSERT_TRUE(r.ok()) << r.error().message;
    ASSERT_EQ(r->evaluated.size(), 48u);
    std::set<int> clocks, sms, indices;
    std::map<int, int> per_slot;
    for (const Evaluated& e : r->evaluated) {
      clocks.insert(e.schedule.clock_mhz);
      sms.insert(e.schedule.comm_sms);
      indices.insert(static_cast<int>(e.index));
      ++per_slot[e.schedule.launch_slot];
    }
    EXPECT_EQ(clocks.size(), 35u) << seed;
    EXPECT_EQ(sms.size(), 30u) << seed;
    EXPECT_EQ(indices.size(), 48u) << seed;
    for (int slot : {0, 1, 2}) EXPECT_EQ(per_slot[slot], 16) << seed;
  }
}

TEST(KareusMbo, DeterministicForASeed) {
  const device::GpuSpec gpu = *device::find_gpu("a100-sxm");
  const PartitionType p = llama_attention_partition();
  const SearchSpace space = default_search_space(gpu, ConcurrencyParams{}, p);
  auto a = run_mbo(gpu, ConcurrencyParams{}, p, space, app_c_options(p, 5));
  auto b = run_mbo(gpu, ConcurrencyParams{}, p, space, app_c_options(p, 5));
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a->evaluated.size(), b->evaluated.size());
  for (std::size_t i = 0; i < a->evaluated.size(); ++i)
    EXPECT_EQ(a->evaluated[i].index, b->evaluated[i].index);
}

}  // namespace
}  // namespace powertrain::kareus
