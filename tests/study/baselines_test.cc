// Baselines (all max clock, ZeusGlobal, ZeusPerStage, EnvPipe): exact values on hand-made
// profiles, and on the real Perseus GPT-3 175B profiles in ../shared/data the Perseus frontier
// against every baseline and EnvPipe against the Perseus artifact's EnvPipe results.
#include "study/baselines.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "core/csv.h"
#include "frontier/solver.h"
#include "profile/example_profile.h"
#include "report/frontier_report.h"

namespace powertrain::study {
namespace {

namespace fs = std::filesystem;
using pipeline::InstructionKind;

fs::path data_dir() {
  return fs::path(POWERTRAIN_SOURCE_DIR) / ".." / "shared" / "data" / "perseus";
}

profile::Profile parse(const std::string& csv) {
  auto table = core::parse_csv(csv, "test.csv");
  EXPECT_TRUE(table.ok());
  auto profile = profile::parse_profile(*table);
  EXPECT_TRUE(profile.ok()) << profile.error().message;
  return *profile;
}

frontier::PlanningProblem build(
    const profile::Profile& profile, int stages, int microbatches, double p_blocking_w,
    double unit_time_s,
    frontier::CostModelKind cost_model = frontier::CostModelKind::kExponential) {
  pipeline::PipelineSpec spec;
  spec.num_gpus = stages;
  spec.num_microbatches = microbatches;
  frontier::PlanningSettings settings;
  settings.p_blocking_w = p_blocking_w;
  settings.unit_time_s = unit_time_s;
  settings.cost_model = cost_model;
  auto problem = frontier::build_planning_problem(profile, spec, settings);
  EXPECT_TRUE(problem.ok()) << problem.error().message;
  return std::move(*problem);
}

// Two stages; stage 1 is 1.5× stage 0 (the last stage is the heaviest, as EnvPipe assumes).
// Times and energies are exact in binary where it matters for the hand computations below.
const char* const kTwoStages =
    "stage,instruction,frequency,time,energy\n"
    "0,forward,1400,1.0,10\n"
    "0,forward,1200,1.2,9\n"
    "0,forward,1000,1.5,8.5\n"
    "0,backward,1400,2.0,20\n"
    "0,backward,1200,2.4,18\n"
    "0,backward,1000,3.0,17\n"
    "1,forward,1400,1.5,15\n"
    "1,forward,1200,1.8,13.5\n"
    "1,forward,1000,2.25,12.75\n"
    "1,backward,1400,3.0,30\n"
    "1,backward,1200,3.6,27\n"
    "1,backward,1000,4.5,25.5\n";

// 1F1B, 2 stages, 2 microbatches. GPU 0 runs F0 F1 B0 B1, GPU 1 runs F0 B0 F1 B1. With forward f
// and backward b per stage, the iteration is max(f0 + 2 f1 + 2 b1, f0 + f1 + b1 + b0) + b0 when
// stage 0's second forward is ready in time (always here). Energy = Σ energies + P_blocking (1 W)
// × (2 GPUs × time − Σ busy time).
Baselines two_stage_baselines() {
  const frontier::PlanningProblem problem = build(parse(kTwoStages), 2, 2, 1.0, 0.05);
  return compute_baselines(problem, parse(kTwoStages));
}

TEST(Baselines, AllMaxClockMatchesTheExistingBaseline) {
  const frontier::PlanningProblem problem = build(parse(kTwoStages), 2, 2, 1.0, 0.05);
  const Baselines b = compute_baselines(problem, parse(kTwoStages));
  // f0 = 1, b0 = 2, f1 = 1.5, b1 = 3: time 1 + 3 + 6 + 2 = 12; energies 2 (10 + 20 + 15 + 30) =
  // 150; busy 15; blocking 24 − 15 = 9.
  EXPECT_DOUBLE_EQ(b.all_max_clock.time_s, 12.0);
  EXPECT_DOUBLE_EQ(b.all_max_clock.energy_j, 159.0);
  const frontier::RealizedPlan existing = frontier::all_max_clock_baseline(problem);
  EXPECT_EQ(b.all_max_clock.time_s, existing.time_s);
  EXPECT_EQ(b.all_max_clock.energy_j, existing.energy_j);
}

TEST(Baselines, ZeusGlobalExactValues) {
  const Baselines b = two_stage_baselines();
  ASSERT_EQ(b.zeus_global.size(), 3u);
  // 1000 MHz: 1.5 + 4.5 + 9 + 3 = 18 s; 127.5 J + (36 − 22.5) J.
  EXPECT_EQ(b.zeus_global[0].label, "ZeusGlobal 1000 MHz");
  EXPECT_DOUBLE_EQ(b.zeus_global[0].time_s, 18.0);
  EXPECT_DOUBLE_EQ(b.zeus_global[0].energy_j, 141.0);
  // 1200 MHz: 1.2 + 3.6 + 7.2 + 2.4 = 14.4 s; 135 J + (28.8 − 18) J.
  EXPECT_EQ(b.zeus_global[1].label, "ZeusGlobal 1200 MHz");
  EXPECT_NEAR(b.zeus_global[1].time_s, 14.4, 1e-12);
  EXPECT_NEAR(b.zeus_global[1].energy_j, 145.8, 1e-12);
  // The top clock is all max clock, bit for bit.
  EXPECT_EQ(b.zeus_global[2].time_s, b.all_max_clock.time_s);
  EXPECT_EQ(b.zeus_global[2].energy_j, b.all_max_clock.energy_j);
  EXPECT_EQ(b.zeus_global[2].clock_by_operation, b.all_max_clock.clock_by_operation);
  for (int mhz : b.zeus_global[1].clock_by_operation) EXPECT_EQ(mhz, 1200);
}

TEST(Baselines, ZeusPerStageBalancesForwardTimeAndCanSlowTheCriticalPath) {
  const Baselines b = two_stage_baselines();
  // Stage 1 has the slower forward; targets are its forward times 2.25, 1.8, 1.5 s.
  ASSERT_EQ(b.zeus_per_stage.size(), 3u);
  // 2.25 s: both stages at 1000 MHz (stage 0's 1.5 s fits) = ZeusGlobal 1000 MHz.
  EXPECT_EQ(b.zeus_per_stage[0].label, "ZeusPerStage 1000/1000 MHz");
  EXPECT_DOUBLE_EQ(b.zeus_per_stage[0].time_s, 18.0);
  EXPECT_DOUBLE_EQ(b.zeus_per_stage[0].energy_j, 141.0);
  // 1.8 s: stage 0 at 1000, stage 1 at 1200: 1.5 + 3.6 + 7.2 + 3 = 15.3 s; 132 J + (30.6 − 19.8).
  EXPECT_EQ(b.zeus_per_stage[1].label, "ZeusPerStage 1000/1200 MHz");
  EXPECT_NEAR(b.zeus_per_stage[1].time_s, 15.3, 1e-12);
  EXPECT_NEAR(b.zeus_per_stage[1].energy_j, 142.8, 1e-12);
  // 1.5 s: stage 0's 1000 MHz forward (1.5 s) still fits, so its slow backward (3 s) lands on
  // the critical path: 1.5 + 3 + 6 + 3 = 13.5 s > 12 s at all max clock; 141 J + (27 − 18) J.
  EXPECT_EQ(b.zeus_per_stage[2].label, "ZeusPerStage 1000/1400 MHz");
  EXPECT_DOUBLE_EQ(b.zeus_per_stage[2].time_s, 13.5);
  EXPECT_DOUBLE_EQ(b.zeus_per_stage[2].energy_j, 150.0);
}

TEST(Baselines, EnvPipeKeepsTheEnvelopeAtTopClock) {
  const frontier::PlanningProblem problem = build(parse(kTwoStages), 2, 2, 1.0, 0.05);
  const Baselines b = compute_baselines(problem, parse(kTwoStages));
  // Only stage 0's F1 and B0 are inside the envelope; at their least-energy clock (1000 MHz) they
  // fit in the slack, so nothing is raised: 12 s; 145.5 J + (24 − 16.5) J.
  EXPECT_DOUBLE_EQ(b.envpipe.time_s, 12.0);
  EXPECT_DOUBLE_EQ(b.envpipe.energy_j, 153.0);
  for (int v = 0; v < problem.dag.size(); ++v) {
    const auto& op = problem.dag.operations[static_cast<std::size_t>(v)];
    const bool inside =
        op.gpu == 0 && ((op.kind == InstructionKind::kForward && op.microbatch == 1) ||
                        (op.kind == InstructionKind::kBackward && op.microbatch == 0));
    EXPECT_EQ(b.envpipe.clock_by_operation[static_cast<std::size_t>(v)], inside ? 1000 : 1400)
        << problem.dag.label(v);
  }
}

TEST(Baselines, EnvPipeRaisesCriticalClocksUntilNoSlowdown) {
  // Stage 0's backward is cheapest at 1000 MHz but then takes 5 s and delays B1 on stage 0 (the
  // iteration would take 12.5 s); EnvPipe raises it one clock at a time: 1100 MHz (4.8 s, still
  // 12.3 s), then 1200 MHz (4.4 s, 12 s). Energy 145.5 J + (24 − 17.9) J.
  std::string csv = kTwoStages;
  const std::string old_backward =
      "0,backward,1400,2.0,20\n0,backward,1200,2.4,18\n0,backward,1000,3.0,17\n";
  csv.replace(csv.find(old_backward), old_backward.size(),
              "0,backward,1400,2.0,20\n0,backward,1200,4.4,17\n0,backward,1100,4.8,16.5\n"
              "0,backward,1000,5.0,16\n");
  const profile::Profile profile = parse(csv);
  // (The convex hull model: the exponential fit of this made-up backward is not convex, and
  // baselines do not use the fit anyway.)
  const frontier::PlanningProblem problem =
      build(profile, 2, 2, 1.0, 0.05, frontier::CostModelKind::kPiecewiseLinear);
  const Baselines b = compute_baselines(problem, profile);
  EXPECT_DOUBLE_EQ(b.envpipe.time_s, 12.0);
  EXPECT_NEAR(b.envpipe.energy_j, 151.6, 1e-12);
  for (int v = 0; v < problem.dag.size(); ++v) {
    const auto& op = problem.dag.operations[static_cast<std::size_t>(v)];
    if (op.gpu == 0 && op.kind == InstructionKind::kBackward && op.microbatch == 0) {
      EXPECT_EQ(b.envpipe.clock_by_operation[static_cast<std::size_t>(v)], 1200);
    }
  }
}

TEST(Baselines, PerseusPointWithinPicksTheLeastEnergyNoSlowerPoint) {
  const std::vector<frontier::RealizedPlan> realized = {
      {3.0, 10.0}, {2.5, 12.0}, {2.4, 11.0}, {2.0, 15.0}};
  EXPECT_EQ(perseus_point_within(realized, 2.5), std::optional<std::size_t>(2));
  EXPECT_EQ(perseus_point_within(realized, 3.0), std::optional<std::size_t>(0));
  EXPECT_EQ(perseus_point_within(realized, 2.0), std::optional<std::size_t>(3));
  EXPECT_EQ(perseus_point_within(realized, 1.9), std::nullopt);
}

TEST(Baselines, OutputsListEveryBaseline) {
  const profile::Profile profile = parse(kTwoStages);
  const frontier::PlanningProblem problem = build(profile, 2, 2, 1.0, 0.05);
  const frontier::Frontier frontier = frontier::solve_frontier(problem);
  const FrontierRun run = analyze(problem, frontier, "test.csv", &profile);
  ASSERT_TRUE(run.baselines.has_value());

  const std::string csv = report::baselines_csv(run);
  auto table = core::parse_csv(csv, "baselines.csv");
  ASSERT_TRUE(table.ok());
  ASSERT_EQ(table->rows.size(), 1u + 3u + 3u + 1u);
  EXPECT_EQ(csv.substr(0, csv.find('\n')), "baseline,label,time,energy");
  EXPECT_EQ(table->rows.front().fields[0], "all_max_clock");
  EXPECT_EQ(table->rows.back().fields[0], "envpipe");
  EXPECT_EQ(std::stod(table->rows.back().fields[3]), run.baselines->envpipe.energy_j);

  const auto summary = nlohmann::json::parse(report::summary_json(run));
  ASSERT_TRUE(summary.contains("baselines"));
  EXPECT_EQ(summary["baselines"]["zeus_global"].size(), 3u);
  EXPECT_EQ(summary["baselines"]["zeus_per_stage"].size(), 3u);
  EXPECT_DOUBLE_EQ(summary["baselines"]["envpipe"]["energy_j"].get<double>(), 153.0);
  EXPECT_NEAR(summary["baselines"]["envpipe"]["savings_vs_all_max_clock_percent"].get<double>(),
              100.0 * (1.0 - 153.0 / 159.0), 1e-9);

  const std::string svg = report::frontier_svg(run);
  for (const char* legend : {"ZeusGlobal", "ZeusPerStage", "EnvPipe", "all max clock"}) {
    EXPECT_NE(svg.find(legend), std::string::npos) << legend;
  }
  const std::string text = report::baselines_summary(run);
  EXPECT_NE(text.find("EnvPipe       12.0000 s, 153.0 J"), std::string::npos) << text;

  // Without the profile there are no baselines and no baseline rows.
  const FrontierRun bare = analyze(problem, frontier, "test.csv");
  EXPECT_FALSE(bare.baselines.has_value());
  EXPECT_EQ(report::baselines_csv(bare), "baseline,label,time,energy\n");
  EXPECT_FALSE(nlohmann::json::parse(report::summary_json(bare)).contains("baselines"));
}

// Every schedule, with constant-time nodes: the invariants that hold whatever the profile.
TEST(Baselines, InvariantsOnEverySchedule) {
  const profile::Profile profile = parse(profile::example_profile_csv());
  struct Case {
    pipeline::ScheduleKind schedule;
    int gpus, chunks;
  };
  for (const Case& c :
       {Case{pipeline::ScheduleKind::kOneFOneB, 4, 1}, Case{pipeline::ScheduleKind::kGPipe, 4, 1},
        Case{pipeline::ScheduleKind::kInterleavedOneFOneB, 2, 2}}) {
    pipeline::PipelineSpec spec;
    spec.schedule = c.schedule;
    spec.num_gpus = c.gpus;
    spec.chunks_per_gpu = c.chunks;
    spec.num_microbatches = 4;
    spec.p2p_time_s = 0.002;
    spec.data_loading_time_s = 0.005;
    frontier::PlanningSettings settings;
    settings.p_blocking_w = 120.0;
    auto problem = frontier::build_planning_problem(profile, spec, settings);
    ASSERT_TRUE(problem.ok()) << problem.error().message;
    const Baselines b = compute_baselines(*problem, profile);
    SCOPED_TRACE(std::string(pipeline::schedule_name(c.schedule)));
    EXPECT_EQ(b.all_max_clock.energy_j, frontier::all_max_clock_baseline(*problem).energy_j);
    ASSERT_EQ(b.zeus_global.size(), 23u);  // 750–1410 MHz in 30 MHz steps
    EXPECT_EQ(b.zeus_global.back().energy_j, b.all_max_clock.energy_j);
    for (std::size_t i = 1; i < b.zeus_global.size(); ++i) {
      EXPECT_LT(b.zeus_global[i].time_s, b.zeus_global[i - 1].time_s);  // monotone profile
    }
    EXPECT_FALSE(b.zeus_per_stage.empty());
    EXPECT_LE(b.envpipe.time_s, b.all_max_clock.time_s);
    EXPECT_LT(b.envpipe.energy_j, b.all_max_clock.energy_j);
    // Constant-time nodes have no clock.
    for (int v = 0; v < problem->dag.size(); ++v) {
      const bool profiled =
          pipeline::is_profiled(problem->dag.operations[static_cast<std::size_t>(v)].kind);
      EXPECT_EQ(b.envpipe.clock_by_operation[static_cast<std::size_t>(v)] > 0, profiled);
    }
  }
}

// Real GPT-3 175B profiles (8 stages, 1F1B).
struct RealCase {
  const char* profile;
  double p_blocking_w;
  double unit_time_s;
};

void PrintTo(const RealCase& c, std::ostream* os) { *os << c.profile; }

class RealBaselines : public ::testing::TestWithParam<RealCase> {};

TEST_P(RealBaselines, PerseusDominatesEveryBaseline) {
  const RealCase& c = GetParam();
  const fs::path path = data_dir() / c.profile;
  if (!fs::exists(path)) {
    GTEST_SKIP() << "real data not found at " << data_dir() << " (needs ../shared/data/perseus)";
  }
  auto profile = profile::read_profile(path.string());
  ASSERT_TRUE(profile.ok()) << profile.error().message;
  const int microbatches = 12;
  const frontier::PlanningProblem problem =
      build(*profile, 8, microbatches, c.p_blocking_w, c.unit_time_s);
  const Baselines b = compute_baselines(problem, *profile);
  const frontier::Frontier frontier = frontier::solve_frontier(problem);
  const std::vector<frontier::RealizedPlan> realized =
      frontier::realize_frontier(problem, frontier);

  EXPECT_EQ(b.all_max_clock.time_s, frontier::all_max_clock_baseline(problem).time_s);
  EXPECT_EQ(b.all_max_clock.energy_j, frontier::all_max_clock_baseline(problem).energy_j);
  ASSERT_FALSE(b.zeus_global.empty());
  EXPECT_EQ(b.zeus_global.back().time_s, b.all_max_clock.time_s);
  EXPECT_EQ(b.zeus_global.back().energy_j, b.all_max_clock.energy_j);
  EXPECT_LE(b.envpipe.time_s, b.all_max_clock.time_s);
  EXPECT_LT(b.envpipe.energy_j, b.all_max_clock.energy_j);
  std::set<std::vector<int>> distinct;
  for (const BaselinePoint& p : b.zeus_per_stage) distinct.insert(p.clock_by_operation);
  EXPECT_EQ(distinct.size(), b.zeus_per_stage.size()) << "duplicate ZeusPerStage plans";

  // Time tolerance: realized frontier points are discrete plans planned with floor quantization,
  // so each instruction may run up to one τ longer than planned, and the planned T_min is at most
  // the all-max-clock time (floored times are never longer). A 1F1B path has at most
  // 2 (M + N − 1) instructions, so the realized T_min is within that many τ of all max clock
  // (A100: 38 ms of 2.84 s; measured 13 ms). Energy: no tolerance; Perseus must use no more.
  const double time_slack_s = 2 * (microbatches + 8 - 1) * c.unit_time_s;
  std::vector<const BaselinePoint*> points = {&b.all_max_clock, &b.envpipe};
  for (const auto& p : b.zeus_global) points.push_back(&p);
  for (const auto& p : b.zeus_per_stage) points.push_back(&p);
  double least_margin = 1.0;
  for (const BaselinePoint* p : points) {
    const auto perseus = perseus_point_within(realized, p->time_s + time_slack_s);
    ASSERT_TRUE(perseus.has_value()) << p->label << " at " << p->time_s << " s";
    const double margin = 1.0 - realized[*perseus].energy_j / p->energy_j;
    least_margin = std::min(least_margin, margin);
    EXPECT_GT(margin, 0.0) << p->label << ": " << p->time_s << " s, " << p->energy_j
                           << " J; Perseus " << realized[*perseus].time_s << " s, "
                           << realized[*perseus].energy_j << " J";
  }
  RecordProperty("least_energy_margin", std::to_string(least_margin));
}

TEST_P(RealBaselines, ZeusGlobalTimeFollowsTheProfile) {
  const RealCase& c = GetParam();
  const fs::path path = data_dir() / c.profile;
  if (!fs::exists(path)) {
    GTEST_SKIP() << "real data not found at " << data_dir() << " (needs ../shared/data/perseus)";
  }
  auto profile = profile::read_profile(path.string());
  ASSERT_TRUE(profile.ok()) << profile.error().message;
  const frontier::PlanningProblem problem = build(*profile, 8, 12, c.p_blocking_w, c.unit_time_s);
  const Baselines b = compute_baselines(problem, *profile);
  // Iteration time is monotone in the global clock exactly when every instruction's time is: the
  // A100 profile is monotone, the A40 one is not (up to 2 % noise between neighbouring clocks),
  // so there only clocks whose instruction times all drop must shorten the iteration.
  for (std::size_t i = 1; i < b.zeus_global.size(); ++i) {
    const int low = b.zeus_global[i - 1].clock_by_operation[0];
    const int high = b.zeus_global[i].clock_by_operation[0];
    ASSERT_LT(low, high);
    bool every_instruction_faster = true;
    for (const profile::InstructionProfile& entry : profile->entries) {
      double t_low = 0.0, t_high = 0.0;
      for (const profile::MeasuredOption& o : entry.options) {
        if (o.frequency_mhz == low) t_low = o.time_s;
        if (o.frequency_mhz == high) t_high = o.time_s;
      }
      every_instruction_faster = every_instruction_faster && t_high <= t_low;
    }
    if (every_instruction_faster) {
      EXPECT_LE(b.zeus_global[i].time_s, b.zeus_global[i - 1].time_s)
          << b.zeus_global[i].label << " vs " << b.zeus_global[i - 1].label;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Perseus, RealBaselines,
                         ::testing::Values(RealCase{"gpt3-175b+a100_sxm_bf16.csv", 83.64, 1e-3},
                                           RealCase{"gpt3-175b+a40_bf16.csv", 70.38, 1e-4}));

TEST(RealBaselines, ZeusGlobalIsMonotoneOnTheMonotoneA100Profile) {
  const fs::path path = data_dir() / "gpt3-175b+a100_sxm_bf16.csv";
  if (!fs::exists(path)) GTEST_SKIP() << "real data not found at " << path;
  auto profile = profile::read_profile(path.string());
  ASSERT_TRUE(profile.ok()) << profile.error().message;
  const Baselines b = compute_baselines(build(*profile, 8, 12, 83.64, 1e-3), *profile);
  ASSERT_EQ(b.zeus_global.size(), 38u);
  for (std::size_t i = 1; i < b.zeus_global.size(); ++i) {
    EXPECT_LT(b.zeus_global[i].time_s, b.zeus_global[i - 1].time_s) << b.zeus_global[i].label;
  }
}

// The Perseus artifact's EnvPipe emulation (envpipe_result.csv) reports per row the iteration time
// ×10 and the energy ×10×8 of one pipeline of the profile slice (10 slices of layers, 8-way tensor
// parallel). Although the data README calls it whole-cluster energy, the rows do not scale with
// num_pipelines (the 12- and 96-microbatch energies differ 7.5×, as one pipeline's would), and on
// A100 our EnvPipe equals every row to the CSV's rounding, so it is compared per pipeline.
// On A40 the energies are 0.09 % above the artifact's (10–11 J at every microbatch count, so it
// sits in the fill/drain, not the steady state): the A40 profile's times are not monotone in the
// clock (a backward at 975 MHz is slower than at 960 MHz), so where the cooldown backwards end up
// depends on the order clocks are raised (seven of them one clock step apart, e.g. 1215 vs
// 1260 MHz, would make 11.2 J). Times agree on both.
TEST(RealBaselines, EnvPipeMatchesThePerseusArtifact) {
  const fs::path results = data_dir() / "envpipe_result.csv";
  if (!fs::exists(results)) GTEST_SKIP() << "real data not found at " << results;
  auto table = core::read_csv_file(results.string());
  ASSERT_TRUE(table.ok()) << table.error().message;
  ASSERT_EQ(table->rows.size(), 8u);
  for (const auto& row : table->rows) {
    // model,precision,device,num_microbatches,num_pipelines,iteration_time,energy
    const std::string device = row.fields[2];
    const bool a100 = device == "a100_sxm";
    const fs::path path =
        data_dir() / (a100 ? "gpt3-175b+a100_sxm_bf16.csv" : "gpt3-175b+a40_bf16.csv");
    auto profile = profile::read_profile(path.string());
    ASSERT_TRUE(profile.ok()) << profile.error().message;
    const int microbatches = std::stoi(row.fields[3]);
    const frontier::PlanningProblem problem =
        build(*profile, 8, microbatches, a100 ? 83.64 : 70.38, a100 ? 1e-3 : 1e-4);
    const Baselines b = compute_baselines(problem, *profile);
    const double time_s = std::stod(row.fields[5]) / 10.0;
    const double energy_j = std::stod(row.fields[6]) / 80.0;
    SCOPED_TRACE(device + " " + row.fields[3] + " microbatches");
    // The CSV rounds times to 1 ms (×10) and energies to 1 mJ (×80).
    EXPECT_NEAR(b.envpipe.time_s, time_s, 1e-4);
    EXPECT_NEAR(b.envpipe.energy_j, energy_j, a100 ? 1e-4 : 1.5e-3 * energy_j)
        << "ours " << b.envpipe.energy_j << " J, artifact " << energy_j << " J";
  }
}

}  // namespace
}  // namespace powertrain::study
