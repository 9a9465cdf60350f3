// The Perseus time–energy frontier by repeated minimum cuts (Phillips–Dessouky; Perseus §4, App.
// E).
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "core/result.h"
#include "frontier/problem.h"

namespace powertrain::frontier {

enum class MaxFlowEngine {
  kDinic,                  // hand-written, reused buffers (default, fast)
  kBoost,                  // Boost.Graph Edmonds–Karp (cross-check; slow)
  kBoostBoykovKolmogorov,  // Boost.Graph Boykov–Kolmogorov
};

struct SolverOptions {
  MaxFlowEngine engine = MaxFlowEngine::kDinic;
  /// Reuse work between steps (kDinic only): the critical DAG and its contraction are kept while
  /// their structure does not change, and the max flow is updated in place around the few arcs
  /// whose bounds moved. false runs the reference step, which rebuilds everything each step
  /// (same frontier bit for bit; kept for tests and before/after benchmarks).
  bool incremental = true;
  /// Called now and then with (units reduced so far, units between T* and the lower bound on
  /// T_min).
  std::function<void(long long done, long long total)> progress;
  /// Stop after this many points (0 = no limit); for previews of huge problems.
  std::size_t max_points = 0;
};

/// One frontier point: planned iteration time (in τ) and planned energy of one pipeline (J):
/// Σ fitted effective energy + GPUs × time × P_blocking.
struct FrontierPoint {
  int time_units = 0;
  double energy_j = 0.0;
};

/// A node whose planned duration changed at a point.
struct DurationChange {
  int operation = 0;
  int units = 0;
};

struct SolverStats {
  std::size_t iterations = 0;
  std::size_t max_critical_operations = 0;
  std::size_t reverted_slowdowns = 0;  // slow-downs undone because a near-critical path grew
  std::size_t multi_unit_steps = 0;    // steps that shortened the iteration by more than τ
  double seconds = 0.0;
};

/// All frontier points, slowest (T*) first, with plans stored as changes between points.
struct Frontier {
  std::vector<FrontierPoint> points;
  std::vector<int> initial_units;           // durations at point 0
  std::vector<std::size_t> change_offsets;  // changes of point i: [offsets[i], offsets[i+1])
  std::vector<DurationChange> changes;
  SolverStats stats;

  /// Planned durations (τ units) of every node at a point. O(changes up to that point).
  std::vector<int> durations_at(std::size_t point) const;
};

/// Iterates from every node at its least-energy duration (T*) down to T_min, each step shortening
/// every critical path by at least τ at the least energy increase. Deterministic.
Frontier solve_frontier(const PlanningProblem& problem, const SolverOptions& options = {});

/// Longest path (iteration time) of the DAG with the given node durations (any unit).
template <typename Duration>
Duration longest_path(const pipeline::OperationDag& dag, const std::vector<Duration>& durations);

/// Planned energy (J) of one pipeline for given planned durations and iteration time.
double planned_energy(const PlanningProblem& problem, const std::vector<int>& durations,
                      int time_units);

}  // namespace powertrain::frontier
