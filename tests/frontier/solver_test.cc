// The frontier solver against exhaustive search on small pipelines with convex costs.
#include "frontier/solver.h"

#include <fmt/core.h>
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <map>
#include <random>
#include <string>

#include "frontier/evaluate.h"
#include "frontier/problem.h"
#include "profile/model_profile.h"
#include "profile/profile.h"

namespace powertrain::frontier {
namespace {

// A problem whose (stage, kind) models have random convex decreasing costs over a few durations.
PlanningProblem random_problem(std::mt19937& rng, pipeline::ScheduleKind schedule, int stages,
                               int microbatches, int max_options) {
  PlanningProblem problem;
  problem.spec.schedule = schedule;
  problem.spec.num_gpus = stages;
  problem.spec.num_microbatches = microbatches;
  problem.settings.unit_time_s = 1.0;
  problem.settings.p_blocking_w = 0.5;
  auto dag = pipeline::build_pipeline_dag(problem.spec);
  EXPECT_TRUE(dag.ok());
  problem.dag = std::move(*dag);
  std::uniform_int_distribution<int> base(1, 4), count(1, max_options);
  std::uniform_real_distribution<double> slope(0.2, 3.0);
  std::map<std::pair<int, pipeline::InstructionKind>, int> index;
  for (const auto& op : problem.dag.operations) {
    auto key = std::make_pair(op.stage, op.kind);
    if (index.count(key)) {
      problem.model_of_operation.push_back(index[key]);
      continue;
    }
    const int options = count(rng);
    std::vector<double> slopes;
    for (int i = 0; i + 1 < options; ++i) slopes.push_back(slope(rng));
    std::sort(slopes.rbegin(), slopes.rend());  // decreasing drops: convex
    std::vector<double> costs = {10.0 + slope(rng)};
    for (double s : slopes) costs.push_back(costs.back() - s);
    index[key] = static_cast<int>(problem.models.size());
    problem.models.push_back(InstructionCostModel::from_costs(
        base(rng) + (op.kind == pipeline::InstructionKind::kBackward), costs, 1.0));
    problem.model_stage.push_back(op.stage);
    problem.model_kind.push_back(op.kind);
    const auto& fastest = problem.models.back().options().front();
    problem.max_clock_option.push_back(
        {fastest.frequency_mhz, fastest.time_s, fastest.energy_j, 0});
    problem.model_of_operation.push_back(index[key]);
  }
  return problem;
}

// Minimum Σ cost over all duration assignments with makespan ≤ T, for every T.
std::map<int, double> exhaustive_frontier(const PlanningProblem& problem) {
  const int n = problem.dag.size();
  std::vector<int> d(n);
  for (int v = 0; v < n; ++v) d[v] = problem.model_of(v).min_units();
  std::map<int, double> best;  // makespan -> min cost with exactly that makespan
  while (true) {
    double cost = 0.0;
    for (int v = 0; v < n; ++v) cost += problem.model_of(v).cost(d[v]);
    const int makespan = longest_path(problem.dag, d);
    auto it = best.find(makespan);
    if (it == best.end() || cost < it->second) best[makespan] = cost;
    int v = 0;
    while (v < n && d[v] == problem.model_of(v).max_units()) {
      d[v] = problem.model_of(v).min_units();
      ++v;
    }
    if (v == n) break;
    ++d[v];
  }
  // Allow "at most T": running min from the fastest time upwards.
  double running = std::numeric_limits<double>::infinity();
  for (auto& [time, cost] : best) {
    running = std::min(running, cost);
    cost = running;
  }
  return best;
}

void expect_matches_exhaustive(pipeline::ScheduleKind schedule, int stages, int microbatches,
                               int max_options, int trials, unsigned seed) {
  std::mt19937 rng(seed);
  for (int trial = 0; trial < trials; ++trial) {
    const PlanningProblem problem =
        random_problem(rng, schedule, stages, microbatches, max_options);
    const Frontier frontier = solve_frontier(problem);
    const auto truth = exhaustive_frontier(problem);
    ASSERT_FALSE(frontier.points.empty());
    // Endpoints: T_min is the all-fastest makespan; T* the all-slowest.
    EXPECT_EQ(frontier.points.back().time_units, truth.begin()->first) << "trial " << trial;
    for (std::size_t i = 0; i < frontier.points.size(); ++i) {
      const FrontierPoint& p = frontier.points[i];
      const double blocking = problem.num_gpus() * p.time_units * problem.settings.p_blocking_w;
      const double cost = p.energy_j - blocking;
      auto it = truth.upper_bound(p.time_units);
      ASSERT_NE(it, truth.begin());
      --it;
      EXPECT_NEAR(cost, it->second, 1e-9) << "trial " << trial << " T=" << p.time_units;
      // The stored plan reproduces the point.
      const std::vector<int> d = frontier.durations_at(i);
      EXPECT_EQ(longest_path(problem.dag, d), p.time_units);
      EXPECT_NEAR(planned_energy(problem, d, p.time_units), p.energy_j, 1e-9);
      if (i > 0) {
        EXPECT_LT(p.time_units, frontier.points[i - 1].time_units);
      }
    }
  }
}

TEST(FrontierSolver, MatchesExhaustiveSearchOneFOneB) {
  expect_matches_exhaustive(pipeline::ScheduleKind::kOneFOneB, 2, 2, 3, 40, 1);
  expect_matches_exhaustive(pipeline::ScheduleKind::kOneFOneB, 2, 3, 3, 15, 2);
  expect_matches_exhaustive(pipeline::ScheduleKind::kOneFOneB, 3, 2, 2, 15, 3);
}

TEST(FrontierSolver, MatchesExhaustiveSearchGPipe) {
  expect_matches_exhaustive(pipeline::ScheduleKind::kGPipe, 2, 2, 4, 30, 4);
}

TEST(FrontierSolver, MatchesExhaustiveSearchRecompute) {
  expect_matches_exhaustive(pipeline::ScheduleKind::kOneFOneBEarlyRecompute, 2, 2, 2, 20, 5);
}

TEST(FrontierSolver, DeterministicAcrossRuns) {
  std::mt19937 rng(9);
  const PlanningProblem problem = random_problem(rng, pipeline::ScheduleKind::kOneFOneB, 4, 8, 6);
  const Frontier a = solve_frontier(problem);
  const Frontier b = solve_frontier(problem);
  ASSERT_EQ(a.points.size(), b.points.size());
  for (std::size_t i = 0; i < a.points.size(); ++i) {
    EXPECT_EQ(a.points[i].time_units, b.points[i].time_units);
    EXPECT_EQ(a.points[i].energy_j, b.points[i].energy_j);  // bitwise
  }
  ASSERT_EQ(a.changes.size(), b.changes.size());
}

TEST(FrontierSolver, BoostEngineGivesTheSameFrontier) {
  std::mt19937 rng(13);
  const PlanningProblem problem = random_problem(rng, pipeline::ScheduleKind::kOneFOneB, 3, 6, 5);
  SolverOptions boost_options;
  boost_options.engine = MaxFlowEngine::kBoost;
  const Frontier dinic = solve_frontier(problem);
  const Frontier boost = solve_frontier(problem, boost_options);
  ASSERT_EQ(dinic.points.size(), boost.points.size());
  for (std::size_t i = 0; i < dinic.points.size(); ++i) {
    EXPECT_EQ(dinic.points[i].time_units, boost.points[i].time_units);
    EXPECT_NEAR(dinic.points[i].energy_j, boost.points[i].energy_j,
                1e-9 * std::abs(dinic.points[i].energy_j));
  }
}

TEST(FrontierSolver, BoykovKolmogorovEngineGivesTheSameFrontierOnALargerPipeline) {
  // Dinic (warm-started across iterations) against Boost's Boykov–Kolmogorov from scratch.
  std::mt19937 rng(29);
  const PlanningProblem problem = random_problem(rng, pipeline::ScheduleKind::kOneFOneB, 4, 12, 8);
  SolverOptions bk_options;
  bk_options.engine = MaxFlowEngine::kBoostBoykovKolmogorov;
  const Frontier dinic = solve_frontier(problem);
  const Frontier bk = solve_frontier(problem, bk_options);
  ASSERT_EQ(dinic.points.size(), bk.points.size());
  ASSERT_GT(dinic.points.size(), 10u);
  for (std::size_t i = 0; i < dinic.points.size(); ++i) {
    EXPECT_EQ(dinic.points[i].time_units, bk.points[i].time_units);
    EXPECT_NEAR(dinic.points[i].energy_j, bk.points[i].energy_j,
                1e-9 * std::abs(dinic.points[i].energy_j));
  }
  EXPECT_EQ(dinic.changes.size(), bk.changes.size());
}

TEST(FrontierSolver, ConstantNodesLengthenTheIterationButAreNeverPlanned) {
  std::mt19937 rng(17);
  PlanningProblem problem = random_problem(rng, pipeline::ScheduleKind::kOneFOneB, 2, 3, 3);
  const int plain_t_min = solve_frontier(problem).points.back().time_units;
  // Rebuild with an optimizer step of 5 units on every GPU.
  PlanningProblem with_constants = problem;
  with_constants.spec.optimizer_step_time_s = 5.0;
  auto dag = pipeline::build_pipeline_dag(with_constants.spec);
  ASSERT_TRUE(dag.ok());
  with_constants.dag = std::move(*dag);
  with_constants.model_of_operation.clear();
  std::map<std::pair<int, pipeline::InstructionKind>, int> index;
  for (std::size_t m = 0; m < problem.models.size(); ++m)
    index[{problem.model_stage[m], problem.model_kind[m]}] = m;
  const int constant_model = static_cast<int>(with_constants.models.size());
  with_constants.models.push_back(InstructionCostModel::constant(5, 0.0));
  with_constants.model_stage.push_back(-1);
  with_constants.model_kind.push_back(pipeline::InstructionKind::kOptimizerStep);
  with_constants.max_clock_option.push_back({0, 5.0, 2.5, 0});
  for (const auto& op : with_constants.dag.operations) {
    with_constants.model_of_operation.push_back(
        pipeline::is_profiled(op.kind) ? index.at({op.stage, op.kind}) : constant_model);
  }
  const Frontier frontier = solve_frontier(with_constants);
  EXPECT_EQ(frontier.points.back().time_units, plain_t_min + 5);
  for (std::size_t i = 0; i < frontier.points.size(); ++i) {
    const auto d = frontier.durations_at(i);
    for (int v = 0; v < with_constants.dag.size(); ++v) {
      if (!pipeline::is_profiled(with_constants.dag.operations[v].kind)) {
        EXPECT_EQ(d[v], 5);
      }
    }
  }
}

// Bit-for-bit equality of two frontiers: points, plans and the step statistics.
void expect_identical(const Frontier& a, const Frontier& b, const std::string& label) {
  ASSERT_EQ(a.points.size(), b.points.size()) << label;
  for (std::size_t i = 0; i < a.points.size(); ++i) {
    ASSERT_EQ(a.points[i].time_units, b.points[i].time_units) << label << " point " << i;
    ASSERT_EQ(std::bit_cast<std::uint64_t>(a.points[i].energy_j),
              std::bit_cast<std::uint64_t>(b.points[i].energy_j))
        << label << " point " << i;
  }
  EXPECT_EQ(a.initial_units, b.initial_units) << label;
  EXPECT_EQ(a.change_offsets, b.change_offsets) << label;
  ASSERT_EQ(a.changes.size(), b.changes.size()) << label;
  for (std::size_t i = 0; i < a.changes.size(); ++i) {
    ASSERT_EQ(a.changes[i].operation, b.changes[i].operation) << label << " change " << i;
    ASSERT_EQ(a.changes[i].units, b.changes[i].units) << label << " change " << i;
  }
  EXPECT_EQ(a.stats.iterations, b.stats.iterations) << label;
  EXPECT_EQ(a.stats.reverted_slowdowns, b.stats.reverted_slowdowns) << label;
  EXPECT_EQ(a.stats.multi_unit_steps, b.stats.multi_unit_steps) << label;
}

Frontier solve_with(const PlanningProblem& problem, bool incremental,
                    MaxFlowEngine engine = MaxFlowEngine::kDinic) {
  SolverOptions options;
  options.incremental = incremental;
  options.engine = engine;
  return solve_frontier(problem, options);
}

TEST(FrontierSolver, IncrementalEngineIsBitIdenticalToTheReferenceOnRandomPipelines) {
  // Many steps with structure changes, reverts and ties: 1F1B, GPipe and recompute pipelines with
  // up to 12 options per instruction.
  std::mt19937 rng(41);
  const pipeline::ScheduleKind schedules[] = {pipeline::ScheduleKind::kOneFOneB,
                                              pipeline::ScheduleKind::kGPipe,
                                              pipeline::ScheduleKind::kOneFOneBEarlyRecompute};
  std::size_t steps = 0;
  for (int trial = 0; trial < 24; ++trial) {
    const auto schedule = schedules[trial % 3];
    const int stages = 2 + trial % 5, microbatches = 2 + (trial * 7) % 13;
    const PlanningProblem problem = random_problem(rng, schedule, stages, microbatches, 12);
    const std::string label = fmt::format("trial {} ({} x {})", trial, stages, microbatches);
    const Frontier reference = solve_with(problem, false);
    expect_identical(solve_with(problem, true), reference, label);
    steps += reference.stats.iterations;
  }
  EXPECT_GT(steps, 1000u);
}

TEST(FrontierSolver, IncrementalEngineIsBitIdenticalToTheReferenceOnRandomDags) {
  // Not pipelines: random DAGs with one cost model per node and uneven fan-out, some with a hub
  // of more successors than a node's critical-arc signature holds (27), where the incremental
  // engine must fall back to listing the critical DAG every step. The signatures decide when
  // the critical DAG (and so its contraction) is reused, so any change they miss shows up here
  // as a different cut.
  std::mt19937 rng(47);
  std::uniform_int_distribution<int> base(1, 4), count(1, 9);
  std::uniform_real_distribution<double> unit(0.0, 1.0), slope(0.2, 3.0);
  std::size_t steps = 0;
  for (int trial = 0; trial < 16; ++trial) {
    const bool hub = trial % 4 == 3;
    const int n = hub ? 40 + 2 * trial : 12 + 4 * trial;
    PlanningProblem problem;
    problem.spec.num_gpus = 2;
    problem.settings.unit_time_s = 1.0;
    problem.settings.p_blocking_w = 0.5;
    for (int v = 0; v < n; ++v) problem.dag.add_operation({});
    for (int v = 0; v < n; ++v) {
      for (int w = v + 1; w < n; ++w) {
        if (unit(rng) < (hub && v == 0 ? 0.9 : 3.0 / n)) problem.dag.add_edge(v, w);
      }
    }
    ASSERT_TRUE(problem.dag.finalize());
    if (hub) {
      ASSERT_GT(problem.dag.successors[0].size(), 27u) << "trial " << trial;
    }
    for (int v = 0; v < n; ++v) {
      std::vector<double> slopes;
      for (int i = 0, options = count(rng); i + 1 < options; ++i) slopes.push_back(slope(rng));
      std::sort(slopes.rbegin(), slopes.rend());  // decreasing drops: convex
      std::vector<double> costs = {10.0 + slope(rng)};
      for (double s : slopes) costs.push_back(costs.back() - s);
      problem.model_of_operation.push_back(v);
      problem.models.push_back(InstructionCostModel::from_costs(base(rng), costs, 1.0));
      problem.model_stage.push_back(0);
      problem.model_kind.push_back(pipeline::InstructionKind::kForward);
    }
    const std::string label = fmt::format("trial {} ({} nodes{})", trial, n, hub ? ", hub" : "");
    const Frontier reference = solve_with(problem, false);
    expect_identical(solve_with(problem, true), reference, label);
    steps += reference.stats.iterations;
  }
  EXPECT_GT(steps, 300u);
}

TEST(FrontierSolver, IncrementalEngineIsBitIdenticalToBoykovKolmogorov) {
  // An independent max flow (Boost, from scratch every step) picks the same cuts.
  std::mt19937 rng(43);
  const PlanningProblem problem = random_problem(rng, pipeline::ScheduleKind::kOneFOneB, 4, 16, 10);
  const Frontier bk = solve_with(problem, false, MaxFlowEngine::kBoostBoykovKolmogorov);
  ASSERT_GT(bk.points.size(), 20u);
  expect_identical(solve_with(problem, true), bk, "boykov-kolmogorov");
}

TEST(FrontierSolver, IncrementalEngineIsBitIdenticalToTheReferenceOnThePerseusProfiles) {
  // The golden cases at 12 microbatches (A100 τ = 1 ms, A40 τ = 0.1 ms), 1F1B and GPipe, and the
  // built-in GPT-3 175B model on 4 stages.
  const std::filesystem::path dir =
      std::filesystem::path(POWERTRAIN_SOURCE_DIR) / ".." / "shared" / "data" / "perseus";
  struct Case {
    const char* profile;
    double p_blocking_w, unit_time_s;
    pipeline::ScheduleKind schedule;
  };
  const Case cases[] = {
      {"gpt3-175b+a100_sxm_bf16.csv", 83.64, 1e-3, pipeline::ScheduleKind::kOneFOneB},
      {"gpt3-175b+a100_sxm_bf16.csv", 83.64, 1e-3, pipeline::ScheduleKind::kGPipe},
      {"gpt3-175b+a40_bf16.csv", 70.38, 1e-4, pipeline::ScheduleKind::kOneFOneB},
  };
  for (const Case& c : cases) {
    const auto path = dir / c.profile;
    if (!std::filesystem::exists(path)) GTEST_SKIP() << "real data not found at " << path;
    auto profile = profile::read_profile(path.string());
    ASSERT_TRUE(profile.ok()) << profile.error().message;
    pipeline::PipelineSpec spec;
    spec.schedule = c.schedule;
    spec.num_gpus = 8;
    spec.num_microbatches = 12;
    PlanningSettings settings;
    settings.unit_time_s = c.unit_time_s;
    settings.p_blocking_w = c.p_blocking_w;
    auto problem = build_planning_problem(*profile, spec, settings);
    ASSERT_TRUE(problem.ok()) << problem.error().message;
    const Frontier reference = solve_with(*problem, false);
    ASSERT_GT(reference.points.size(), 500u);
    expect_identical(solve_with(*problem, true), reference, c.profile);
  }
  profile::ModelJobRequest request;
  request.model = "gpt3-175b";
  request.gpu = "a100-sxm";
  request.tp = 8;
  request.pp = 4;
  auto job = profile::build_model_job(request);
  ASSERT_TRUE(job.ok()) << job.error().message;
  pipeline::PipelineSpec spec;
  spec.num_gpus = 4;
  spec.num_microbatches = 16;
  PlanningSettings settings;
  settings.p_blocking_w = job->gpu.p_blocking_w;
  auto problem = build_planning_problem(profile::generate_profile(*job), spec, settings);
  ASSERT_TRUE(problem.ok()) << problem.error().message;
  expect_identical(solve_with(*problem, true), solve_with(*problem, false), "gpt3-175b model");
}

TEST(FrontierSolver, IncrementalEngineIsBitIdenticalToTheReferenceOnALargerModelPipeline) {
  // 8 stages x 24 microbatches of the built-in GPT-3 175B model (~4,400 steps on critical DAGs
  // of ~700 nodes): many warm steps with several augmenting phases each.
  profile::ModelJobRequest request;
  request.model = "gpt3-175b";
  request.gpu = "a100-sxm";
  request.tp = 8;
  request.pp = 8;
  auto job = profile::build_model_job(request);
  ASSERT_TRUE(job.ok()) << job.error().message;
  pipeline::PipelineSpec spec;
  spec.num_gpus = 8;
  spec.num_microbatches = 24;
  PlanningSettings settings;
  settings.p_blocking_w = job->gpu.p_blocking_w;
  auto problem = build_planning_problem(profile::generate_profile(*job), spec, settings);
  ASSERT_TRUE(problem.ok()) << problem.error().message;
  const Frontier reference = solve_with(*problem, false);
  ASSERT_GT(reference.points.size(), 4000u);
  expect_identical(solve_with(*problem, true), reference, "gpt3-175b model, 8 x 24");
}

}  // namespace
}  // namespace powertrain::frontier
