// Frontier composition (Kareus §4.4, Alg. 2) against brute force.
#include "kareus/compose.h"

#include <gtest/gtest.h>

#include <functional>

namespace powertrain::kareus {
namespace {

device::GpuSpec a100() { return *device::find_gpu("a100-sxm"); }

Kernel kernel(device::WorkKind kind, double flops, double bytes, double link = 0.0) {
  Kernel k{"k", {}};
  k.work.kind = kind;
  k.work.flops = flops;
  k.work.memory_bytes = bytes;
  k.work.link_bytes = link;
  return k;
}

TEST(KareusCompose, MicrobatchFrontierEqualsBruteForceOverTheCartesianProduct) {
  const device::GpuSpec gpu = a100();
  const ConcurrencyParams params;
  MicrobatchWork mb;
  PartitionType a, b;
  a.compute = {kernel(device::WorkKind::kMemoryBound, 0, 0.3e9),
               kernel(device::WorkKind::kMatmul, 80e9, 0.1e9)};
  a.comm = kernel(device::WorkKind::kCollective, 0, 150e6, 60e6);
  a.count = 3;
  b.compute = {kernel(device::WorkKind::kMatmul, 50e9, 0.1e9),
               kernel(device::WorkKind::kMemoryBound, 0, 0.2e9)};
  b.comm = a.comm;
  b.count = 2;
  mb.partitions = {a, b};
  mb.solo = {kernel(device::WorkKind::kMatmul, 30e9, 0.05e9)};
  for (const Kernel& k : a.compute) mb.sequential.push_back({"x", k.work});
  const std::vector<int> clocks = {1200, 1410};
  std::vector<std::vector<Evaluated>> candidates(2);
  for (int t = 0; t < 2; ++t) {
    SearchSpace space{clocks, {3, 9, 18}, {0, 1}};
    candidates[t] = exhaustive(gpu, params, mb.partitions[t], space);
  }
  const auto composed = microbatch_frontier(gpu, params, mb, candidates, clocks, false);
  // Brute force: every clock × candidate of a × candidate of b.
  std::vector<MicrobatchOption> brute;
  for (int f : clocks) {
    const Cost solo = evaluate_solo(gpu, params, mb.solo, f);
    for (const Evaluated& x : candidates[0])
      for (const Evaluated& y : candidates[1]) {
        if (x.schedule.clock_mhz != f || y.schedule.clock_mhz != f) continue;
        brute.push_back({solo.time_s + 3 * x.cost.time_s + 2 * y.cost.time_s,
                         solo.energy_j + 3 * x.cost.energy_j + 2 * y.cost.energy_j,
                         f,
                         false,
                         {}});
      }
  }
  const auto expected = pareto_options(brute);
  ASSERT_EQ(composed.size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_NEAR(composed[i].time_s, expected[i].time_s, 1e-12);
    EXPECT_NEAR(composed[i].energy_j, expected[i].energy_j, 1e-9);
    EXPECT_EQ(composed[i].schedules.size(), 2u);
  }
  // Sequential execution stays a candidate: the frontier with it dominates both.
  const auto with_seq = microbatch_frontier(gpu, params, mb, candidates, clocks, true);
  for (const MicrobatchOption& s : microbatch_frontier(gpu, params, mb, {{}, {}}, clocks, true)) {
    bool covered = false;
    for (const MicrobatchOption& o : with_seq)
      covered |= o.time_s <= s.time_s + 1e-12 && o.energy_j <= s.energy_j + 1e-9;
    EXPECT_TRUE(covered);
  }
}

TEST(KareusCompose, IterationFrontierOnATwoStageToyPipelineMatchesExhaustiveSearch) {
  // Two stages, two microbatches, three options per instruction (time s, energy J).
  StageOptions options(2);
  auto opt = [](double t, double e) { return MicrobatchOption{t, e, 0, false, {}}; };
  options[0][0] = {opt(0.010, 9.0), opt(0.012, 7.0), opt(0.015, 6.0)};
  options[0][1] = {opt(0.020, 18.0), opt(0.024, 14.5), opt(0.030, 12.5)};
  options[1][0] = {opt(0.008, 8.0), opt(0.010, 6.2), opt(0.013, 5.4)};
  options[1][1] = {opt(0.016, 15.0), opt(0.020, 12.0), opt(0.026, 10.6)};
  const double tau = 0.001, p_blocking = 80.0;
  auto result = iteration_frontier(options, 2, tau, p_blocking);
  ASSERT_TRUE(result.ok()) << result.error().message;
  const frontier::PlanningProblem& problem = result->problem;
  // Exhaustive: every node (instruction × microbatch) picks any of its three options.
  const std::size_t n = problem.dag.operations.size();
  ASSERT_EQ(n, 8u);
  std::vector<std::pair<double, double>> all;
  std::vector<int> pick(n, 0);
  std::function<void(std::size_t)> rec = [&](std::size_t v) {
    if (v == n) {
      std::vector<double> t(n), e(n);
      for (std::size_t i = 0; i < n; ++i) {
        const auto& op = problem.dag.operations[i];
        const auto& o = options[static_cast<std::size_t>(op.stage)]
                               [op.kind == pipeline::InstructionKind::kForward ? 0 : 1]
                               [static_cast<std::size_t>(pick[i])];
        t[i] = o.time_s, e[i] = o.energy_j;
      }
      const auto plan = frontier::evaluate_measured(problem, t, e);
      all.emplace_back(plan.time_s, plan.energy_j);
      return;
    }
    for (int k = 0; k < 3; ++k) pick[v] = k, rec(v + 1);
  };
  rec(0);
  // Fastest: the same iteration time as exhaustive search.
  double t_min = 1e300;
  for (auto [t, e] : all) t_min = std::min(t_min, t);
  double perseus_min = 1e300;
  for (const auto& r : result->realized) perseus_min = std::min(perseus_min, r.time_s);
  EXPECT_NEAR(perseus_min, t_min, 1e-12);
  // At every time budget, Perseus's realized energy is within 2 % of the exhaustive optimum, and
  // never below it (it is a feasible plan).
  double worst_gap = 0.0;
  for (const auto& r : result->realized) {
    double best = 1e300;
    for (auto [t, e] : all)
      if (t <= r.time_s + 1e-12) best = std::min(best, e);
    EXPECT_GE(r.energy_j, best - 1e-9);
    worst_gap = std::max(worst_gap, r.energy_j / best - 1.0);
  }
  EXPECT_LE(worst_gap, 0.02);
  RecordProperty("worst_gap_percent", std::to_string(100 * worst_gap));
}

}  // namespace
}  // namespace powertrain::kareus
