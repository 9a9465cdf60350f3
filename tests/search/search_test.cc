// powertrain search: CMA-ES on standard test functions, trials, pruning tactics against the
// unpruned grid, CMA-ES against the grid, determinism across thread counts.
#include "search/search.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <limits>
#include <map>

#include "search/cmaes.h"
#include "search/outputs.h"

namespace powertrain::search {
namespace {

SearchSpec gpt3_spec(int gpus) {
  SearchSpec spec = default_search_spec();
  spec.source = "test";
  spec.model = "gpt3-2.7b";
  spec.gpu = "h100";
  spec.num_gpus = gpus;
  spec.global_batch = 192;
  return spec;
}

double sphere(const std::vector<double>& x) {
  double s = 0.0;
  for (double v : x) s += (v - 1.0) * (v - 1.0);
  return s;
}

double rosenbrock(const std::vector<double>& x) {
  double s = 0.0;
  for (std::size_t i = 0; i + 1 < x.size(); ++i)
    s += 100.0 * std::pow(x[i + 1] - x[i] * x[i], 2) + std::pow(1.0 - x[i], 2);
  return s;
}

TEST(CmaEs, SolvesSphere) {
  // Hansen's CMA-ES reaches 1e-10 on the 10-D sphere in about 2000 evaluations.
  EXPECT_LT(cmaes_minimize(sphere, std::vector<double>(10, 5.0), 2.0, 4000, 1), 1e-10);
}

TEST(CmaEs, SolvesRosenbrock) {
  // ... and the 8-D Rosenbrock valley (global minimum 0 at all ones) in about 6000.
  // (8-D Rosenbrock has a local minimum near 3.99 that some runs end in, as with any CMA-ES
  // without restarts: at least 3 of 5 seeds find the global one.)
  int solved = 0;
  for (std::uint64_t seed = 1; seed <= 5; ++seed)
    solved += cmaes_minimize(rosenbrock, std::vector<double>(8, 0.0), 0.5, 20000, seed) < 1e-8;
  EXPECT_GE(solved, 3);
}

TEST(CmaEs, IsDeterministicForASeed) {
  EXPECT_EQ(cmaes_minimize(rosenbrock, std::vector<double>(4, 0.0), 0.5, 500, 9),
            cmaes_minimize(rosenbrock, std::vector<double>(4, 0.0), 0.5, 500, 9));
}

TEST(SearchTrial, PlansAFrontierForGpt3OnH100) {
  const SearchSpec spec = gpt3_spec(8);
  Config c;          // tp1 pp1 mb1 v1, nothing enabled: 8-way data parallel
  c.index[kTp] = 1;  // tp 2
  c.index[kPp] = 1;  // pp 2
  const TrialResult r = evaluate_config(spec, c);
  ASSERT_EQ(r.status, TrialStatus::kOk) << r.reason;
  EXPECT_EQ(r.dp, 2);
  EXPECT_EQ(r.num_microbatches, 96);
  ASSERT_GE(r.frontier.size(), 2u);
  for (std::size_t i = 1; i < r.frontier.size(); ++i) {
    EXPECT_LT(r.frontier[i].time_s, r.frontier[i - 1].time_s);
    EXPECT_GT(r.frontier[i].energy_j, r.frontier[i - 1].energy_j);
  }
  // Ceil quantization pins T_min to no slower than all max clock; its energy is no higher.
  EXPECT_LE(r.t_min_s, r.baseline_time_s * (1.0 + 1e-9));
  EXPECT_LE(r.energy_at_t_min_j, r.baseline_energy_j * (1.0 + 1e-9));
  EXPECT_LT(r.energy_at_t_star_j, r.baseline_energy_j);
  // The bound tactic's lower bounds hold for every realized point, and the time bound is T_min
  // (every instruction at its fastest option) up to its 1e-9 margin.
  EXPECT_GT(r.bound_time_s, 0.0);
  EXPECT_LE(r.bound_time_s, r.t_min_s);
  EXPECT_NEAR(r.bound_time_s, r.t_min_s, 1e-6 * r.t_min_s);
  for (const TrialPoint& p : r.frontier) {
    EXPECT_LE(r.bound_time_s, p.time_s);
    EXPECT_LE(r.bound_energy_j, p.energy_j);
  }
  // A filter that rejects it returns its bounds and no frontier; one that accepts plans as usual.
  double seen_time_s = 0.0;
  std::size_t seen_lines = 0;
  const TrialResult skipped = evaluate_config(spec, c, [&](const TrialResult& bounds) {
    seen_time_s = bounds.bound_time_s;
    seen_lines = bounds.bound_lines.size();
    return std::string("beaten");
  });
  EXPECT_EQ(skipped.status, TrialStatus::kPrunedBound);
  EXPECT_EQ(skipped.reason, "beaten");
  EXPECT_TRUE(skipped.frontier.empty());
  EXPECT_EQ(seen_time_s, r.bound_time_s);
  EXPECT_EQ(seen_lines, r.bound_lines.size());
  EXPECT_EQ(skipped.bound_lines.size(), r.bound_lines.size());
  const TrialResult kept =
      evaluate_config(spec, c, [](const TrialResult&) { return std::string(); });
  ASSERT_EQ(kept.status, TrialStatus::kOk);
  EXPECT_EQ(kept.t_min_s, r.t_min_s);
  EXPECT_EQ(kept.frontier.size(), r.frontier.size());
}

// The energy bound as a function of time holds for every realized point of layouts with every
// schedule (1F1B, recomputation, interleaving; deep and shallow pipelines), is tighter than the
// corner bound, and near T_min comes close to the realized energy.
TEST(SearchTrial, EnergyBoundCurveHoldsForEveryRealizedPoint) {
  const SearchSpec spec = gpt3_spec(16);
  // (tp, pp, mb, v, recompute, sp, dopt) value indices.
  const std::vector<std::array<int, 7>> layouts = {{0, 1, 0, 0, 0, 0, 1}, {0, 1, 0, 2, 0, 0, 1},
                                                   {1, 2, 1, 0, 1, 1, 0}, {0, 3, 0, 0, 0, 0, 1},
                                                   {1, 1, 1, 1, 0, 1, 0}, {0, 0, 0, 0, 0, 0, 1}};
  int tight = 0;
  for (const auto& layout : layouts) {
    Config c;
    c.index = layout;
    const TrialResult r = evaluate_config(spec, c);
    ASSERT_EQ(r.status, TrialStatus::kOk) << config_label(spec, c) << ": " << r.reason;
    ASSERT_FALSE(r.bound_lines.empty());
    const EnergyBound bound(r);
    for (const TrialPoint& p : r.frontier) {
      EXPECT_LE(bound.least(p.time_s, p.time_s), p.energy_j)
          << config_label(spec, c) << " point " << p.plan_point << " at " << p.time_s << " s";
      // Over an interval it is no more than at either end.
      EXPECT_LE(bound.least(r.bound_time_s, p.time_s), bound.least(p.time_s, p.time_s));
    }
    // Over all times it is no more than the least realized energy, and never below the corner.
    EXPECT_LE(bound.least(0.0, std::numeric_limits<double>::infinity()), r.energy_at_t_star_j);
    EXPECT_GE(bound.least(r.bound_time_s, r.bound_time_s), r.bound_energy_j);
    EXPECT_EQ(bound.least(0.0, 0.5 * r.bound_time_s), std::numeric_limits<double>::infinity());
    // At T_min: more than 60 % of the way from the corner to the realized energy.
    const double at_t_min = bound.least(r.t_min_s, r.t_min_s);
    const double closed = (at_t_min - r.bound_energy_j) / (r.energy_at_t_min_j - r.bound_energy_j);
    EXPECT_GT(closed, 0.6) << config_label(spec, c);  // 0.71 to 1.0 measured
    if (closed > 0.85) ++tight;
  }
  EXPECT_GE(tight, 3);
  // Without lines (an old checkpoint's trial) the corner applies at every time.
  TrialResult corner;
  corner.bound_time_s = 2.0;
  corner.bound_energy_j = 5.0;
  EXPECT_EQ(EnergyBound(corner).least(1.0, 3.0), 5.0);
  EXPECT_EQ(EnergyBound(corner).least(0.0, 1.0), std::numeric_limits<double>::infinity());
  // A hand-made curve, max(10 − 4(t − 1), 1 + 2(t − 3)) from t = 1: the lines cross where
  // 14 − 4t = 2t − 5, t = 19/6, e = 4/3.
  TrialResult hand;
  hand.bound_time_s = 1.0;
  hand.bound_lines = {{1.0, 10.0, -4.0}, {3.0, 1.0, 2.0}};
  EXPECT_NEAR(EnergyBound(hand).least(0.0, std::numeric_limits<double>::infinity()), 4.0 / 3.0,
              1e-12);
  EXPECT_NEAR(EnergyBound(hand).least(1.0, 2.0), 6.0, 1e-12);  // falling: at its end
  EXPECT_NEAR(EnergyBound(hand).least(3.5, 4.0), 2.0, 1e-12);  // rising: at its start
  EXPECT_EQ(EnergyBound(hand).least(0.0, 0.5), std::numeric_limits<double>::infinity());
}

TEST(SearchTrial, StructuralErrorsAreInvalidNotOom) {
  SearchSpec spec = gpt3_spec(8);
  Config c;
  c.index[kTp] = 3;
  c.index[kPp] = 3;  // 64 GPUs of 8
  EXPECT_EQ(check_config(spec, c).status, TrialStatus::kInvalid);
  spec.global_batch = 1;
  Config fits;
  const TrialResult r = check_config(spec, fits);
  EXPECT_EQ(r.status, TrialStatus::kInvalid);
  EXPECT_NE(r.reason.find("global batch 1"), std::string::npos) << r.reason;
}

// Every configuration the OOM tactic skips does run out of memory by the model, and everything
// the dominance tactics skip is no faster than the configuration it follows.
TEST(SearchPruning, OomTacticOnlySkipsConfigsThatDoNotFit) {
  SearchSpec spec = gpt3_spec(8);
  spec.model = "gpt3-13b";  // large enough that some layouts do not fit in 80 GiB
  spec.global_batch = 96;
  std::vector<TrialResult> decided;
  int skipped = 0, oom = 0;
  for (const Config& c : grid_configs(spec)) {
    const TrialResult truth = check_config(spec, c);
    int dominator = -1;
    const TrialStatus pruned = prune_status(spec, c, decided, &dominator);
    if (truth.status == TrialStatus::kOom) ++oom;
    if (pruned == TrialStatus::kPrunedOom && truth.status != TrialStatus::kInvalid) {
      ++skipped;
      EXPECT_EQ(truth.status, TrialStatus::kOom) << config_label(spec, c);
    }
    decided.push_back(truth);
  }
  EXPECT_GT(oom, 20);
  EXPECT_GT(skipped, 5);
}

struct GridRun {
  SearchResult pruned, unpruned;
};

const GridRun& grid_run(int gpus) {
  static std::map<int, GridRun> cache;
  if (auto it = cache.find(gpus); it != cache.end()) return it->second;
  SearchSpec spec = gpt3_spec(gpus);
  spec.algorithm = Algorithm::kGrid;
  SearchOptions options;
  options.threads = 2;
  GridRun run;
  run.pruned = run_search(spec, options);
  spec.pruning = false;
  run.unpruned = run_search(spec, options);
  return cache[gpus] = std::move(run);
}

class Gpt3OnH100 : public ::testing::TestWithParam<int> {};

TEST_P(Gpt3OnH100, GridFinishesAndPruningKeepsTheOptimumAndFrontier) {
  const SearchSpec spec = gpt3_spec(GetParam());
  const GridRun& run = grid_run(GetParam());
  const SearchResult& full = run.unpruned;
  EXPECT_EQ(full.decided + full.invalid, 1920);
  ASSERT_GE(full.best, 0);
  ASSERT_GE(run.pruned.best, 0);
  EXPECT_EQ(full.pruned_oom + full.pruned_dominated, 0);
  EXPECT_LT(run.pruned.planned, full.planned);
  // The energy bound as a function of time skips most configurations: 56 of 380 planned on 8
  // GPUs (198 with the corner bound alone).
  EXPECT_LE(run.pruned.planned, 70);
  const TrialResult& a = full.trials[static_cast<std::size_t>(full.best)];
  const TrialResult& b = run.pruned.trials[static_cast<std::size_t>(run.pruned.best)];
  // The same best T_min (configurations may tie at the τ grid).
  EXPECT_DOUBLE_EQ(a.t_min_s, b.t_min_s)
      << config_label(spec, a.config) << " vs " << config_label(spec, b.config);
  // The cross-configuration frontier is the same point for point.
  ASSERT_EQ(full.frontier.size(), run.pruned.frontier.size());
  for (std::size_t i = 0; i < full.frontier.size(); ++i) {
    EXPECT_DOUBLE_EQ(full.frontier[i].time_s, run.pruned.frontier[i].time_s);
    EXPECT_DOUBLE_EQ(full.frontier[i].energy_j, run.pruned.frontier[i].energy_j);
  }
  std::printf(
      "[ search  ] %d GPUs: grid %lld planned (%.2f s) unpruned, %lld planned (%.2f s) "
      "pruned; best %s T_min %.4f s\n",
      GetParam(), full.planned, full.seconds, run.pruned.planned, run.pruned.seconds,
      config_label(spec, a.config).c_str(), a.t_min_s);
}

TEST_P(Gpt3OnH100, CmaesFindsNearOptimumWithFewTrials) {
  SearchSpec spec = gpt3_spec(GetParam());
  const SearchResult& grid = grid_run(GetParam()).unpruned;
  const double best_time = grid.trials[static_cast<std::size_t>(grid.best)].t_min_s;
  spec.algorithm = Algorithm::kCmaes;
  spec.objective = Objective::kTime;
  // Must-show 1: within 2 % of the grid's best with at most 15 % of the grid's valid
  // configurations (grid.decided) as trials. The budget alone stops it (no early stopping).
  spec.max_trials = static_cast<int>(0.15 * static_cast<double>(grid.decided));
  spec.early_stop_patience = 0;
  SearchOptions options;
  options.threads = 2;
  for (std::uint64_t seed : {1, 2}) {
    spec.seed = seed;
    const SearchResult cma = run_search(spec, options);
    ASSERT_GE(cma.best, 0);
    const double found = cma.trials[static_cast<std::size_t>(cma.best)].t_min_s;
    EXPECT_LE(found, best_time * 1.02) << "seed " << seed;
    EXPECT_LE(cma.decided, spec.max_trials);
    std::printf(
        "[ search  ] %d GPUs, seed %d: cmaes %lld trials (%lld planned, %.2f s) vs grid %lld "
        "valid: best %s %.4f s vs %.4f s\n",
        GetParam(), static_cast<int>(seed), cma.decided, cma.planned, cma.seconds, grid.decided,
        config_label(spec, cma.trials[static_cast<std::size_t>(cma.best)].config).c_str(), found,
        best_time);
  }
}

// 16 and 64 GPUs take minutes each on this 2-core machine; run by hand (docs/search.md).
INSTANTIATE_TEST_SUITE_P(Search, Gpt3OnH100, ::testing::Values(8));

TEST(SearchDeterminism, SameResultWhateverTheThreadCount) {
  SearchSpec spec = gpt3_spec(16);
  spec.algorithm = Algorithm::kCmaes;
  spec.seed = 3;
  spec.max_trials = 40;
  SearchOptions one, four;
  one.threads = 1;
  four.threads = 4;
  const SearchResult a = run_search(spec, one);
  const SearchResult b = run_search(spec, four);
  ASSERT_EQ(a.trials.size(), b.trials.size());
  for (std::size_t i = 0; i < a.trials.size(); ++i) {
    EXPECT_EQ(a.trials[i].config, b.trials[i].config);
    EXPECT_EQ(a.trials[i].status, b.trials[i].status);
    EXPECT_EQ(a.trials[i].t_min_s, b.trials[i].t_min_s);
  }
  EXPECT_EQ(frontier_csv(spec, a), frontier_csv(spec, b));
  // Random search too; trials.csv also carries each trial's measured wall time, so compare the
  // decided trials rather than the file.
  spec.algorithm = Algorithm::kRandom;
  const SearchResult c = run_search(spec, one);
  const SearchResult d = run_search(spec, four);
  ASSERT_EQ(c.trials.size(), d.trials.size());
  for (std::size_t i = 0; i < c.trials.size(); ++i) {
    EXPECT_EQ(c.trials[i].config, d.trials[i].config);
    EXPECT_EQ(c.trials[i].status, d.trials[i].status);
    EXPECT_EQ(c.trials[i].t_min_s, d.trials[i].t_min_s);
  }
  EXPECT_EQ(frontier_csv(spec, c), frontier_csv(spec, d));
}

// Must-show 2 on the neighbourhood of the best layouts (the whole 1920-point grid takes ~17 s of
// CPU; docs/search.md has it): GPT-3 175B on 1,024 A100s. The cross-configuration frontier's
// fastest point is the grid's best T_min, the pruned grid keeps it and the frontier, and the best
// energy-aware point within 5 % of the time-optimal configuration's max-clock time saves energy.
TEST(SearchFrontier, Gpt3_175bOn1024A100s) {
  SearchSpec spec = default_search_spec();
  spec.source = "test";
  spec.model = "gpt3-175b";
  spec.gpu = "a100-sxm";
  spec.num_gpus = 1024;
  spec.global_batch = 1536;
  spec.values[kTp] = {4, 8};
  spec.values[kPp] = {4, 8};
  spec.values[kMicrobatchSize] = {1, 2};
  spec.values[kVirtualStages] = {1, 4};
  spec.values[kRecompute] = {0};
  spec.values[kDistributedOptimizer] = {1};
  SearchOptions options;
  options.threads = 2;
  const SearchResult pruned = run_search(spec, options);
  spec.pruning = false;
  const SearchResult full = run_search(spec, options);
  ASSERT_GE(full.best, 0);
  ASSERT_GE(pruned.best, 0);
  const TrialResult& best = full.trials[static_cast<std::size_t>(full.best)];
  EXPECT_EQ(full.frontier.front().trial, full.best);
  EXPECT_DOUBLE_EQ(full.frontier.front().time_s, best.t_min_s);
  EXPECT_DOUBLE_EQ(pruned.trials[static_cast<std::size_t>(pruned.best)].t_min_s, best.t_min_s);
  ASSERT_EQ(full.frontier.size(), pruned.frontier.size());
  for (std::size_t i = 0; i < full.frontier.size(); ++i) {
    EXPECT_DOUBLE_EQ(full.frontier[i].time_s, pruned.frontier[i].time_s);
    EXPECT_DOUBLE_EQ(full.frontier[i].energy_j, pruned.frontier[i].energy_j);
  }
  const EnergyAwareSaving saving = energy_aware_saving(full, 0.05);
  EXPECT_EQ(saving.reference_trial, full.best);
  EXPECT_LE(saving.chosen.time_s, 1.05 * best.baseline_time_s);
  // The full grid saves 11.8 % (docs/search.md); at least 5 % here.
  EXPECT_GT(saving.saving_fraction, 0.05);
  std::printf(
      "[ search  ] 175B on 1024 A100: best %s T_min %.3f s; %.1f %% less energy at %.3f s\n",
      config_label(spec, best.config).c_str(), best.t_min_s, 100.0 * saving.saving_fraction,
      saving.chosen.time_s);
}

TEST(SearchFrontier, EnergyAwareSavingPicksTheLeastEnergyWithinTheTimeBudget) {
  SearchResult result;
  result.trials.resize(3);
  for (auto& t : result.trials) t.status = TrialStatus::kOk;
  // Trial 1 is time-optimal: T_min 1.0 s; at max clocks 1.0 s and 100 J.
  result.trials[0].t_min_s = 1.2;
  result.trials[1].t_min_s = 1.0;
  result.trials[1].baseline_time_s = 1.0;
  result.trials[1].baseline_energy_j = 100.0;
  result.trials[2].status = TrialStatus::kOom;
  result.frontier = {{1, 2, 1.0, 95.0}, {1, 1, 1.04, 90.0}, {0, 3, 1.045, 85.0}, {0, 0, 1.3, 60.0}};
  const EnergyAwareSaving s = energy_aware_saving(result, 0.05);
  EXPECT_EQ(s.reference_trial, 1);
  EXPECT_DOUBLE_EQ(s.time_budget_s, 1.05);
  // By hand: the points at 1.0, 1.04 and 1.045 s are within 1.05 s; the least energy is 85 J.
  EXPECT_EQ(s.chosen.trial, 0);
  EXPECT_EQ(s.chosen.point, 3);
  EXPECT_NEAR(s.saving_fraction, 0.15, 1e-12);
  EXPECT_EQ(energy_aware_saving(SearchResult{}, 0.05).reference_trial, -1);
}

TEST(SearchFrontier, ParetoFilterKeepsOnlyNonDominatedPoints) {
  std::vector<TrialResult> trials(2);
  trials[0].status = trials[1].status = TrialStatus::kOk;
  trials[0].frontier = {{3.0, 10.0, 0}, {2.0, 12.0, 1}, {1.0, 20.0, 2}};
  trials[1].frontier = {{2.5, 9.0, 0}, {1.5, 13.0, 1}};
  const auto front = cross_frontier(trials);
  // By hand: (1, 20) (1.5, 13) (2, 12) (2.5, 9) stay; (3, 10) is beaten by (2.5, 9).
  ASSERT_EQ(front.size(), 4u);
  EXPECT_EQ(front[0].trial, 0);
  EXPECT_EQ(front[0].point, 2);
  EXPECT_EQ(front[1].trial, 1);
  EXPECT_DOUBLE_EQ(front[1].time_s, 1.5);
  EXPECT_EQ(front[2].trial, 0);
  EXPECT_EQ(front[3].trial, 1);
  EXPECT_DOUBLE_EQ(front[3].energy_j, 9.0);
}

}  // namespace
}  // namespace powertrain::search
