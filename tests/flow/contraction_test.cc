// ArcContraction keeps the minimum cut: brute force over all cuts of random small networks before
// and after contraction, plus the numbering and terminal rules on a hand-made case.
#include "flow/contraction.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "flow/max_flow.h"

namespace powertrain::flow {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

bool is_free(const BoundedArc& arc) { return std::isinf(arc.upper) && arc.lower == 0.0; }

TEST(ArcContraction, ChainOfFreeArcsCollapsesIntoTheTerminals) {
  // 0 → 2 (free) → 3 (cap 5) → 4 (free) → 1: nodes 2 and 4 merge into source and sink.
  const std::vector<BoundedArc> arcs = {
      {0, 2, 0.0, kInf}, {2, 3, 0.0, 5.0}, {3, 4, 0.0, kInf}, {4, 1, 0.0, kInf}};
  ArcContraction contraction;
  const int n = contraction.contract(
      5, 4, 0, 1, [&](int k) { return arcs[k].from; }, [&](int k) { return arcs[k].to; },
      [&](int k) { return is_free(arcs[k]); });
  // 3 → 4 is free and 3 has one out-arc, so 4 joins 3; 4 → 1 then joins 3 to the sink.
  EXPECT_EQ(n, 2);
  EXPECT_EQ(contraction.node(0), 0);
  EXPECT_EQ(contraction.node(2), 0);
  EXPECT_EQ(contraction.node(1), 1);
  EXPECT_EQ(contraction.node(3), 1);
  EXPECT_EQ(contraction.node(4), 1);
}

TEST(ArcContraction, NeverMergesSourceWithSink) {
  const std::vector<BoundedArc> arcs = {{0, 2, 0.0, kInf}, {2, 1, 0.0, kInf}};
  ArcContraction contraction;
  const int n = contraction.contract(
      3, 2, 0, 1, [&](int k) { return arcs[k].from; }, [&](int k) { return arcs[k].to; },
      [&](int k) { return is_free(arcs[k]); });
  EXPECT_EQ(n, 2);
  EXPECT_NE(contraction.node(0), contraction.node(1));
}

// The networks the frontier solver builds: one arc in(v) → out(v) per operation v (bounded, or
// free for a constant-time one), free dependency arcs out(v) → in(w), free source and sink arcs.
std::vector<BoundedArc> critical_dag_network(std::mt19937& rng, int operations) {
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  auto in = [](int v) { return 2 + 2 * v; };
  auto out = [](int v) { return 3 + 2 * v; };
  std::vector<BoundedArc> arcs;
  std::vector<int> predecessors(operations, 0), successors(operations, 0);
  std::vector<std::pair<int, int>> dependencies;
  for (int w = 1; w < operations; ++w) {
    for (int v = 0; v < w; ++v) {
      if (unit(rng) < 2.0 / operations || (v == w - 1 && predecessors[w] == 0)) {
        dependencies.emplace_back(v, w);
        ++predecessors[w];
        ++successors[v];
      }
    }
  }
  for (int v = 0; v < operations; ++v) {
    BoundedArc arc{in(v), out(v), 0.0, kInf};
    if (unit(rng) < 0.85) {
      arc.lower = unit(rng) < 0.7 ? std::round(unit(rng) * 20) / 4 : 0.0;
      arc.upper = unit(rng) < 0.2 ? kInf : arc.lower + std::round(1 + unit(rng) * 30) / 4;
    }
    arcs.push_back(arc);
    if (predecessors[v] == 0) arcs.push_back({0, in(v), 0.0, kInf});
    if (successors[v] == 0) arcs.push_back({out(v), 1, 0.0, kInf});
  }
  for (const auto& [v, w] : dependencies) arcs.push_back({out(v), in(w), 0.0, kInf});
  return arcs;
}

TEST(ArcContraction, KeepsTheMinimumCutOfCriticalDagNetworks) {
  std::mt19937 rng(11);
  int contracted_some = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const int operations = 2 + trial % 9;
    const int n = 2 + 2 * operations;
    const std::vector<BoundedArc> arcs = critical_dag_network(rng, operations);
    ArcContraction contraction;
    const int m = contraction.contract(
        n, static_cast<int>(arcs.size()), 0, 1, [&](int k) { return arcs[k].from; },
        [&](int k) { return arcs[k].to; }, [&](int k) { return is_free(arcs[k]); });
    std::vector<BoundedArc> contracted;
    for (const BoundedArc& arc : arcs) {
      const int a = contraction.node(arc.from), b = contraction.node(arc.to);
      if (a != b) contracted.push_back({a, b, arc.lower, arc.upper});
    }
    if (m < n) ++contracted_some;
    const MinCut before = brute_force_min_cut(n, 0, 1, arcs);
    const MinCut after = brute_force_min_cut(m, 0, 1, contracted);
    ASSERT_EQ(before.outcome, after.outcome) << "trial " << trial;
    if (before.outcome == CutOutcome::kOptimal) {
      EXPECT_NEAR(before.value, after.value, 1e-9 * (1 + std::abs(before.value))) << trial;
    }
  }
  EXPECT_GT(contracted_some, 250);  // the test exercises merging, not just copies
}

}  // namespace
}  // namespace powertrain::flow
