// Max flow and min cuts with lower bounds, checked by proof (brute force over all cuts) and against
// Boost.Graph and the two-phase Algorithm 3.
#include "flow/max_flow.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <random>

namespace powertrain::flow {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// A random DAG on n nodes (0 = source, 1 = sink, others in a random topological order) in which
// every node lies on a source–sink path, like a critical DAG.
std::vector<BoundedArc> random_dag(std::mt19937& rng, int n, double infinite_fraction) {
  std::vector<int> order;
  order.push_back(0);
  for (int v = 2; v < n; ++v) order.push_back(v);
  order.push_back(1);
  std::shuffle(order.begin() + 1, order.end() - 1, rng);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::vector<BoundedArc> arcs;
  auto add = [&](int a, int b) {
    BoundedArc arc{order[a], order[b], 0.0, 0.0};
    if (unit(rng) < infinite_fraction) {
      arc.upper = kInf;
      if (unit(rng) < 0.5) arc.lower = std::round(unit(rng) * 50) / 4;
    } else {
      arc.lower = unit(rng) < 0.5 ? std::round(unit(rng) * 40) / 4 : 0.0;
      arc.upper = arc.lower + std::round(unit(rng) * 60) / 4;
    }
    arcs.push_back(arc);
  };
  for (int i = 0; i + 1 < n; ++i) add(i, i + 1);  // a Hamiltonian path keeps everything connected
  std::uniform_int_distribution<int> pick(0, n - 1);
  for (int extra = 0; extra < n; ++extra) {
    int a = pick(rng), b = pick(rng);
    if (a == b) continue;
    if (a > b) std::swap(a, b);
    add(a, b);
  }
  return arcs;
}

TEST(MaxFlow, DinicMatchesBoostOnRandomNetworks) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 300; ++trial) {
    const int n = 4 + trial % 30;
    auto arcs = random_dag(rng, n, 0.1);
    for (auto& arc : arcs) arc.lower = 0.0;
    FlowNetwork network;
    network.reset(n);
    for (const auto& arc : arcs) network.add_arc(arc.from, arc.to, arc.upper);
    if (has_uncapacitated_path(n, 0, 1, arcs)) continue;
    const double dinic = network.max_flow(0, 1, 1e-12);
    const double boost = boost_max_flow(n, 0, 1, arcs);
    EXPECT_NEAR(dinic, boost, 1e-9 * (1 + boost)) << "trial " << trial;
    // Max flow equals the capacity of the cut it leaves (no lower bounds here).
    const auto side = network.reachable_from(0, 1e-12);
    EXPECT_NEAR(cut_capacity(arcs, side), dinic, 1e-9 * (1 + dinic));
  }
}

TEST(MinCutWithLowerBounds, MatchesBruteForceOnRandomSmallGraphs) {
  std::mt19937 rng(11);
  int optimal = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const int n = 3 + trial % 12;
    const auto arcs = random_dag(rng, n, 0.3);
    FlowNetwork scratch;
    const MinCut fast = min_cut_with_lower_bounds(n, 0, 1, arcs, scratch);
    const MinCut brute = brute_force_min_cut(n, 0, 1, arcs);
    const MinCut boost = boost_min_cut_with_lower_bounds(n, 0, 1, arcs);
    ASSERT_EQ(fast.outcome == CutOutcome::kUnbounded, std::isinf(brute.value)) << "trial " << trial;
    ASSERT_EQ(boost.outcome, fast.outcome);
    if (fast.outcome != CutOutcome::kOptimal) continue;
    ++optimal;
    EXPECT_NEAR(fast.value, brute.value, 1e-9 * (1 + std::abs(brute.value))) << "trial " << trial;
    EXPECT_NEAR(boost.value, brute.value, 1e-9 * (1 + std::abs(brute.value))) << "trial " << trial;
    // The returned side really is a cut of that capacity.
    EXPECT_TRUE(fast.source_side[0]);
    EXPECT_FALSE(fast.source_side[1]);
    EXPECT_NEAR(cut_capacity(arcs, fast.source_side), fast.value, 1e-12);
    // Algorithm 3 agrees whenever the lower bounds admit a feasible flow.
    const MinCut two_phase = max_flow_with_lower_bounds(n, 0, 1, arcs);
    if (two_phase.outcome == CutOutcome::kOptimal) {
      EXPECT_NEAR(two_phase.value, brute.value, 1e-9 * (1 + std::abs(brute.value)))
          << "trial " << trial;
    }
  }
  EXPECT_GT(optimal, 200);  // the generator must mostly produce finite cuts
}

TEST(IncrementalMinCut, SameCutsAsAFreshSolveWhileBoundsMove) {
  // A few arcs' bounds change per step (set_bounds), occasionally all of them (load with the same
  // arcs), and bounds cross zero and infinity, so the repair must move flow over several nodes.
  std::mt19937 rng(31);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  long long warm = 0, compared = 0;
  for (int trial = 0; trial < 80; ++trial) {
    const int n = trial < 40 ? 4 + trial % 11 : 20 + trial % 40;
    auto arcs = random_dag(rng, n, 0.2);
    IncrementalMinCut incremental;
    incremental.load(n, 0, 1, arcs);
    std::uniform_int_distribution<int> pick(0, static_cast<int>(arcs.size()) - 1);
    for (int step = 0; step < 30; ++step) {
      const CutOutcome outcome = incremental.solve();
      FlowNetwork scratch;
      const MinCut fresh = min_cut_with_lower_bounds(n, 0, 1, arcs, scratch);
      ASSERT_EQ(outcome, fresh.outcome) << "trial " << trial << " step " << step;
      if (outcome == CutOutcome::kOptimal) {
        ++compared;
        for (int v = 0; v < n; ++v) {
          ASSERT_EQ(incremental.source_side(v), fresh.source_side[v] != 0)
              << "trial " << trial << " step " << step << " node " << v;
        }
        if (n <= 14) {
          std::vector<char> side(n);
          for (int v = 0; v < n; ++v) side[v] = incremental.source_side(v);
          const MinCut brute = brute_force_min_cut(n, 0, 1, arcs);
          EXPECT_NEAR(cut_capacity(arcs, side), brute.value, 1e-9 * (1 + std::abs(brute.value)));
        }
      }
      const int changes = step % 10 == 9 ? static_cast<int>(arcs.size()) : 1 + step % 3;
      for (int c = 0; c < changes; ++c) {
        const int i = pick(rng);
        BoundedArc& arc = arcs[i];
        arc.lower = unit(rng) < 0.3 ? 0.0 : std::round(unit(rng) * 40) / 4;
        arc.upper = unit(rng) < 0.1 ? kInf : arc.lower + std::round(unit(rng) * 60) / 4;
        if (changes > 3) continue;
        incremental.set_bounds(i, arc.lower, arc.upper);
      }
      if (changes > 3) incremental.load(n, 0, 1, arcs);  // same arcs: stays warm
    }
    warm += incremental.warm_solves;
  }
  EXPECT_GT(compared, 1000);
  EXPECT_GT(warm, 1000);  // the warm path must really be exercised
}

TEST(IncrementalMinCut, ReloadWithCarriedFlowsGivesTheCutOfAFreshSolve) {
  // A new network that shares most arcs with the last one (some dropped, some added, the rest
  // shuffled into a new order and their bounds moved) is loaded with the last solve's flows on
  // the shared arcs and zero on new ones, as the frontier solver does when the critical DAG's
  // contraction changes. The flows are arbitrary for the new bounds (outside them, unbalanced),
  // so the repair must rebalance every node; the cut must equal a fresh solve's, node by node,
  // and the brute-force minimum on small networks.
  std::mt19937 rng(83);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  long long compared = 0, warm_reloads = 0;
  for (int trial = 0; trial < 60; ++trial) {
    const int n = trial < 30 ? 5 + trial % 10 : 30 + 7 * (trial % 20);
    std::vector<BoundedArc> arcs = random_dag(rng, n, 0.2);
    IncrementalMinCut incremental;
    incremental.load(n, 0, 1, arcs);
    long long cold_before = -1;
    for (int step = 0; step < 12; ++step) {
      const CutOutcome outcome = incremental.solve();
      if (incremental.cold_solves == cold_before) ++warm_reloads;
      FlowNetwork scratch;
      const MinCut fresh = min_cut_with_lower_bounds(n, 0, 1, arcs, scratch);
      ASSERT_EQ(outcome, fresh.outcome) << "trial " << trial << " step " << step;
      if (outcome == CutOutcome::kOptimal) {
        ++compared;
        for (int v = 0; v < n; ++v) {
          ASSERT_EQ(incremental.source_side(v), fresh.source_side[v] != 0)
              << "trial " << trial << " step " << step << " node " << v;
        }
        if (n <= 14) {
          std::vector<char> side(n);
          for (int v = 0; v < n; ++v) side[v] = incremental.source_side(v);
          EXPECT_NEAR(cut_capacity(arcs, side), brute_force_min_cut(n, 0, 1, arcs).value,
                      1e-9 * (1 + std::abs(fresh.value)));
        }
      }
      if (outcome != CutOutcome::kOptimal) break;
      // Next network: drop ~10 % of the arcs, move ~20 % of the bounds, add a few arcs from a
      // fresh random DAG on the same nodes, shuffle; flows follow their arcs.
      std::vector<std::pair<BoundedArc, double>> next;
      for (std::size_t i = 0; i < arcs.size(); ++i) {
        if (i + 1 >= static_cast<std::size_t>(n) || unit(rng) >= 0.1) {  // keep the path
          BoundedArc arc = arcs[i];
          if (unit(rng) < 0.2) {
            arc.lower = unit(rng) < 0.3 ? 0.0 : std::round(unit(rng) * 40) / 4;
            arc.upper = unit(rng) < 0.1 ? kInf : arc.lower + std::round(unit(rng) * 60) / 4;
          }
          next.push_back({arc, incremental.flow(static_cast<int>(i))});
        }
      }
      const std::vector<BoundedArc> extra = random_dag(rng, n, 0.2);
      for (std::size_t i = 0; i < extra.size(); i += 7) next.push_back({extra[i], 0.0});
      std::shuffle(next.begin(), next.end(), rng);
      arcs.clear();
      std::vector<double> flows;
      for (const auto& [arc, flow] : next) {
        arcs.push_back(arc);
        flows.push_back(flow);
      }
      cold_before = incremental.cold_solves;
      incremental.load(n, 0, 1, arcs, flows);
    }
  }
  EXPECT_GT(compared, 400);
  EXPECT_GT(warm_reloads, 300);  // the carried flows are really used (the repair succeeds)
}

TEST(IncrementalMinCut, LargerNetworksNeedSeveralPhasesAndStillMatchFreshSolves) {
  // Networks of 100-400 nodes with long paths: a step's repaired flow is often not maximal, so
  // the augmenting paths along distance-from-supply labels (label_paths) and, where those give up,
  // the forward levels and the blocking flow on them (augmenting paths that end at a node's
  // implicit sink arc or at the sink itself) are exercised, and the source side is compared with a
  // fresh solve (Dinic from zero flow, other augmenting paths) node by node.
  std::mt19937 rng(57);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  long long compared = 0, phases = 0, warm = 0, label_paths = 0, relabels = 0, partial = 0;
  for (int trial = 0; trial < 12; ++trial) {
    const int n = 100 + 25 * trial;
    auto arcs = random_dag(rng, n, 0.15);
    IncrementalMinCut incremental;
    incremental.verify_labels = true;
    incremental.load(n, 0, 1, arcs);
    std::uniform_int_distribution<int> pick(0, static_cast<int>(arcs.size()) - 1);
    for (int step = 0; step < 25; ++step) {
      const CutOutcome outcome = incremental.solve();
      FlowNetwork scratch;
      const MinCut fresh = min_cut_with_lower_bounds(n, 0, 1, arcs, scratch);
      ASSERT_EQ(outcome, fresh.outcome) << "trial " << trial << " step " << step;
      if (outcome == CutOutcome::kOptimal) {
        ++compared;
        for (int v = 0; v < n; ++v) {
          ASSERT_EQ(incremental.source_side(v), fresh.source_side[v] != 0)
              << "trial " << trial << " step " << step << " node " << v;
        }
      }
      for (int c = 0; c < 1 + step % 5; ++c) {
        const int i = pick(rng);
        BoundedArc& arc = arcs[i];
        if (std::isinf(arc.upper)) continue;  // keep the cut finite mostly
        arc.lower = unit(rng) < 0.3 ? 0.0 : std::round(unit(rng) * 40) / 4;
        arc.upper = arc.lower + std::round(unit(rng) * 60) / 4;
        incremental.set_bounds(i, arc.lower, arc.upper);
      }
    }
    phases += incremental.phases;
    warm += incremental.warm_solves;
    label_paths += incremental.label_paths;
    relabels += incremental.global_labels;
    partial += incremental.partial_labels;
    // Labels searched again only behind the lowest saturated arc equal a full search's.
    EXPECT_EQ(incremental.label_mismatches, 0) << "trial " << trial;
  }
  EXPECT_GT(compared, 200);
  EXPECT_GT(warm, 200);
  // Augmenting from a warm flow really happens, mostly along the labels.
  EXPECT_GT(label_paths, 100);
  EXPECT_GT(relabels, 100);
  EXPECT_GT(partial, 10);
  std::printf("label paths %lld, label computations %lld (%lld partial), phases %lld\n",
              label_paths, relabels, partial, phases);
}

TEST(IncrementalMinCut, CutArcStepsStartFromTheLastSourceSideAndMatchFreshSolves) {
  // As the frontier solver's steps: after each solve only arcs crossing the cut change, S→T ones
  // get a larger upper bound with the old upper as lower bound (the flow stays feasible), T→S
  // ones the old lower bound as upper bound. Then the first search starts from the last source
  // side (seeded_searches); its cuts must still be a fresh solve's, node by node.
  std::mt19937 rng(91);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  long long compared = 0, seeded = 0, augmented = 0;
  for (int trial = 0; trial < 10; ++trial) {
    const int n = 80 + 30 * trial;
    auto arcs = random_dag(rng, n, 0.12);
    IncrementalMinCut incremental;
    incremental.load(n, 0, 1, arcs);
    for (int step = 0; step < 30; ++step) {
      const CutOutcome outcome = incremental.solve();
      FlowNetwork scratch;
      const MinCut fresh = min_cut_with_lower_bounds(n, 0, 1, arcs, scratch);
      ASSERT_EQ(outcome, fresh.outcome) << "trial " << trial << " step " << step;
      if (outcome != CutOutcome::kOptimal) break;
      ++compared;
      for (int v = 0; v < n; ++v) {
        ASSERT_EQ(incremental.source_side(v), fresh.source_side[v] != 0)
            << "trial " << trial << " step " << step << " node " << v;
      }
      for (int i = 0; i < static_cast<int>(arcs.size()); ++i) {
        BoundedArc& arc = arcs[i];
        const bool from_s = fresh.source_side[arc.from] != 0, to_s = fresh.source_side[arc.to] != 0;
        if (from_s && !to_s && std::isfinite(arc.upper)) {
          arc.lower = arc.upper;
          arc.upper = unit(rng) < 0.1 ? std::numeric_limits<double>::infinity()
                                      : arc.lower + std::round(unit(rng) * 40) / 4;
        } else if (!from_s && to_s) {
          arc.upper = arc.lower;
          arc.lower = std::max(0.0, arc.lower - std::round(unit(rng) * 20) / 4);
        } else {
          continue;
        }
        incremental.set_bounds(i, arc.lower, arc.upper);
      }
    }
    seeded += incremental.seeded_searches;
    augmented += incremental.phases + incremental.label_paths;
  }
  EXPECT_GT(compared, 150);
  EXPECT_GT(seeded, 20);  // the seeded first search really runs (49 of the solves here)
  EXPECT_GT(augmented, 50);
}

TEST(MinCutWithLowerBounds, WarmStartGivesTheSameCutAsAColdStart) {
  // Like consecutive solver iterations: the arcs stay, their bounds move. The warm-started flow
  // must give the same (minimal) minimum cut as a fresh one and the brute-force optimum.
  std::mt19937 rng(23);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  int reused = 0;
  for (int trial = 0; trial < 60; ++trial) {
    const int n = 4 + trial % 11;
    auto arcs = random_dag(rng, n, 0.2);
    FlowNetwork warm_network, cold_network;
    FlowWarmStart warm;
    for (int step = 0; step < 8; ++step) {
      const MinCut warm_cut = min_cut_with_lower_bounds(n, 0, 1, arcs, warm_network, &warm);
      const MinCut cold_cut = min_cut_with_lower_bounds(n, 0, 1, arcs, cold_network);
      ASSERT_EQ(warm_cut.outcome, cold_cut.outcome) << "trial " << trial << " step " << step;
      if (cold_cut.outcome == CutOutcome::kOptimal) {
        const MinCut brute = brute_force_min_cut(n, 0, 1, arcs);
        EXPECT_NEAR(warm_cut.value, brute.value, 1e-9 * (1 + std::abs(brute.value)))
            << "trial " << trial << " step " << step;
        EXPECT_EQ(warm_cut.source_side, cold_cut.source_side) << "trial " << trial;
      }
      // Move some bounds up and some down, keeping lower ≤ upper.
      for (auto& arc : arcs) {
        if (unit(rng) < 0.5) continue;
        arc.lower = std::max(0.0, arc.lower + std::round((unit(rng) - 0.5) * 16) / 4);
        if (std::isfinite(arc.upper))
          arc.upper = std::max(arc.lower, arc.upper + std::round((unit(rng) - 0.5) * 16) / 4);
      }
    }
    reused += static_cast<int>(warm.reused);
  }
  EXPECT_GT(reused, 100);  // the warm path must really be exercised
}

TEST(MinCutWithLowerBounds, AlgorithmThreeReportsInfeasibleLowerBounds) {
  // s -a-> x -b-> t with a needing flow 5 and b allowing at most 3.
  const std::vector<BoundedArc> arcs = {{0, 2, 5.0, kInf}, {2, 1, 0.0, 3.0}};
  EXPECT_EQ(max_flow_with_lower_bounds(3, 0, 1, arcs).outcome, CutOutcome::kInfeasible);
  // The one-flow formulation still finds the cheapest cut: speed up b.
  FlowNetwork scratch;
  const MinCut cut = min_cut_with_lower_bounds(3, 0, 1, arcs, scratch);
  ASSERT_EQ(cut.outcome, CutOutcome::kOptimal);
  EXPECT_DOUBLE_EQ(cut.value, 3.0);
}

TEST(MinCutWithLowerBounds, UncapacitatedPathMeansNoFiniteCut) {
  const std::vector<BoundedArc> arcs = {{0, 2, 0.0, kInf}, {2, 1, 1.0, kInf}, {0, 1, 0.0, 4.0}};
  FlowNetwork scratch;
  EXPECT_EQ(min_cut_with_lower_bounds(3, 0, 1, arcs, scratch).outcome, CutOutcome::kUnbounded);
}

TEST(MinCutWithLowerBounds, BackwardArcCreditsItsLowerBound) {
  // Perseus Figure 6 shape: two parallel paths joined in the middle; cutting forward through the
  // cheap arcs and backward through the middle arc (slowing it) is cheapest.
  // s->a (u=10), a->t (u=1), s->b (u=1), b->t (u=10), b->a dummy... middle arc a->b with l=0.5.
  const std::vector<BoundedArc> arcs = {
      {0, 2, 0.0, 10.0}, {2, 1, 0.0, 1.0}, {0, 3, 0.0, 1.0}, {3, 1, 0.0, 10.0}, {3, 2, 0.5, kInf}};
  FlowNetwork scratch;
  const MinCut cut = min_cut_with_lower_bounds(4, 0, 1, arcs, scratch);
  const MinCut brute = brute_force_min_cut(4, 0, 1, arcs);
  EXPECT_NEAR(cut.value, brute.value, 1e-12);
  EXPECT_NEAR(cut.value, 1.5,
              1e-12);  // S = {s, a}: a->t and s->b forward (2), b->a backward (-0.5)
}

}  // namespace
}  // namespace powertrain::flow
