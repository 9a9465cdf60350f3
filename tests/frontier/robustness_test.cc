// Real profiles with realistic measurement noise are never refused, and plans are never slower
// than all max clock (issue 12); hostile numbers give one-line errors, not crashes (issue 11).
#include <fmt/core.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "core/csv.h"
#include "frontier/evaluate.h"
#include "frontier/problem.h"
#include "frontier/solver.h"

namespace powertrain::frontier {
namespace {

namespace fs = std::filesystem;

fs::path data_dir() {
  return fs::path(POWERTRAIN_SOURCE_DIR) / ".." / "shared" / "data" / "perseus";
}

struct Row {
  int stage;
  std::string instruction;
  int mhz;
  double time_s, energy_j;
};

std::vector<Row> read_rows(const fs::path& path) {
  auto table = core::read_csv_file(path.string());
  EXPECT_TRUE(table.ok());
  std::vector<Row> rows;
  for (const auto& r : table->rows) {
    rows.push_back({std::stoi(r.fields[0]), r.fields[1], std::stoi(r.fields[2]),
                    std::stod(r.fields[3]), std::stod(r.fields[4])});
  }
  return rows;
}

// The profile with measurement noise: energy ±1–5 %, time ±0.5–2 %, a few points made
// non-monotone, one clock missing from one (stage, instruction), a few rows duplicated.
std::string noisy_profile(const std::vector<Row>& rows, std::mt19937& rng) {
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const double energy_noise = 0.01 + 0.04 * unit(rng), time_noise = 0.005 + 0.015 * unit(rng);
  const std::size_t missing = std::uniform_int_distribution<std::size_t>(0, rows.size() - 1)(rng);
  std::string csv = "stage,instruction,frequency,time,energy\n";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (i == missing) continue;
    Row r = rows[i];
    r.energy_j *= 1.0 + energy_noise * (2.0 * unit(rng) - 1.0);
    r.time_s *= 1.0 + time_noise * (2.0 * unit(rng) - 1.0);
    if (unit(rng) < 0.03) r.energy_j *= 1.10;  // an outlier: slower and costlier
    const int copies = unit(rng) < 0.02 ? 2 : 1;
    for (int c = 0; c < copies; ++c) {
      csv += fmt::format("{},{},{},{},{}\n", r.stage, r.instruction, r.mhz, r.time_s, r.energy_j);
    }
  }
  return csv;
}

TEST(Robustness, NoisyRealProfilesAreNeverRefusedAndNeverSlowerThanMaxClock) {
  const fs::path files[] = {data_dir() / "gpt3-175b+a100_sxm_bf16.csv",
                            data_dir() / "gpt3-175b+a40_bf16.csv"};
  for (const auto& f : files) {
    if (!fs::exists(f)) GTEST_SKIP() << "real data not found at " << f;
  }
  const auto start = std::chrono::steady_clock::now();
  constexpr int kSeedsPerProfile = 80;
  int runs = 0, fallbacks = 0, pinned = 0, refusals = 0;
  for (const auto& file : files) {
    const std::vector<Row> rows = read_rows(file);
    for (int seed = 0; seed < kSeedsPerProfile; ++seed) {
      std::mt19937 rng(static_cast<unsigned>(seed));
      auto table = core::parse_csv(noisy_profile(rows, rng), fmt::format("noisy seed {}", seed));
      ASSERT_TRUE(table.ok());
      auto profile = profile::parse_profile(*table);
      ASSERT_TRUE(profile.ok()) << profile.error().message;
      pipeline::PipelineSpec spec;
      spec.num_gpus = 8;
      spec.num_microbatches = 2;
      PlanningSettings settings;  // defaults: ceil quantization, reference fit
      settings.unit_time_s = 1e-3;
      settings.p_blocking_w = 80.0;
      auto problem = build_planning_problem(*profile, spec, settings);
      if (!problem.ok()) {
        ++refusals;
        ADD_FAILURE() << file << " seed " << seed << ": " << problem.error().message;
        continue;
      }
      for (const auto& model : problem->models)
        fallbacks += model.fit().fallback != FitFallback::kNone;
      Frontier frontier = solve_frontier(*problem);
      pinned += pin_fastest_point(*problem, frontier);
      const auto realized = realize_frontier(*problem, frontier);
      const RealizedPlan max_clock = all_max_clock_baseline(*problem);
      ASSERT_FALSE(frontier.points.empty());
      EXPECT_LE(realized.back().time_s, max_clock.time_s * (1 + 1e-12)) << file << " seed " << seed;
      for (std::size_t i = 0; i < realized.size(); ++i) {
        EXPECT_LE(realized[i].time_s,
                  frontier.points[i].time_units * settings.unit_time_s * (1 + 1e-12))
            << file << " seed " << seed << " point " << i;
      }
      ++runs;
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf(
      "robustness: %d noisy profiles, %d refusals, %d fits fell back, %d fastest points "
      "pinned, %.1f s\n",
      runs, refusals, fallbacks, pinned, seconds);
  EXPECT_EQ(refusals, 0);
  EXPECT_EQ(runs, 2 * kSeedsPerProfile);
  RecordProperty("fallbacks", fallbacks);
}

// A measured set that no convex exponential fits (energy rises with time after a dip) still
// plans: the fit falls back and says why.
TEST(Robustness, ConcaveMeasurementsFallBackInsteadOfFailing) {
  profile::InstructionProfile profile;
  profile.stage = 0;
  const double times[] = {0.010, 0.011, 0.012, 0.013, 0.014, 0.015};
  const double energies[] = {10.0, 9.95, 9.85, 9.6, 9.0, 7.0};  // concave decreasing
  for (int i = 0; i < 6; ++i)
    profile.options.push_back({1500 - 100 * i, times[i], energies[i], i + 2});
  for (auto method : {FitMethod::kReference, FitMethod::kGlobal}) {
    auto model = build_cost_model(profile, 1e-3, 0.0, CostModelKind::kExponential,
                                  Quantization::kFloor, method);
    ASSERT_TRUE(model.ok()) << model.error().message;
    EXPECT_NE(model->fit().fallback, FitFallback::kNone);
    EXPECT_FALSE(model->fit().fallback_reason.empty());
    // The fallback is convex: the hull's second differences are non-negative.
    for (int u = model->min_units() + 1; u < model->max_units(); ++u) {
      EXPECT_GE(model->cost(u - 1) - 2 * model->cost(u) + model->cost(u + 1), -1e-9) << u;
    }
  }
}

core::Result<profile::Profile> profile_from(const std::string& text) {
  auto table = core::parse_csv(text, "p.csv");
  if (!table) return table.error();
  return profile::parse_profile(*table);
}

TEST(ProfileRanges, HostileNumbersAreOneLineErrorsNamingFileLineAndField) {
  const std::string header = "stage,instruction,frequency,time,energy\n";
  const std::pair<std::string, std::string> cases[] = {
      {"0,forward,1410,1e7,20\n", "p.csv:2: field 'time'"},
      {"0,forward,1410,1e308,20\n", "p.csv:2: field 'time'"},
      {"0,forward,1410,0,20\n", "p.csv:2: field 'time'"},
      {"0,forward,1410,-0.1,20\n", "p.csv:2: field 'time'"},
      {"0,forward,1410,inf,20\n", "p.csv:2: field 'time'"},
      {"0,forward,1410,0.1,0\n", "p.csv:2: field 'energy'"},
      {"0,forward,1410,0.1,1e308\n", "p.csv:2: field 'energy'"},
      {"0,forward,1410,0.1,nan\n", "p.csv:2: field 'energy'"},
      {"0,forward,1e20,0.1,20\n", "p.csv:2: field 'frequency'"},
      {"0,forward,-1e20,0.1,20\n", "p.csv:2: field 'frequency'"},
      {"0,forward,1410.5,0.1,20\n", "p.csv:2: field 'frequency'"},
      {"0,forward,0,0.1,20\n", "p.csv:2: field 'frequency'"},
      {"1e9,forward,1410,0.1,20\n", "p.csv:2: field 'stage'"},
  };
  for (const auto& [row, expected] : cases) {
    auto profile = profile_from(header + row);
    ASSERT_FALSE(profile.ok()) << row;
    EXPECT_NE(profile.error().message.find(expected), std::string::npos)
        << row << " -> " << profile.error().message;
    EXPECT_EQ(profile.error().message.find('\n'), std::string::npos) << profile.error().message;
  }
  // "1410.0" is an integer clock; repeated rows are averaged, not refused.
  auto ok = profile_from(header + "0,forward,1410.0,0.1,20\n0,forward,1410,0.3,40\n");
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  ASSERT_EQ(ok->entries.size(), 1u);
  ASSERT_EQ(ok->entries[0].options.size(), 1u);
  EXPECT_DOUBLE_EQ(ok->entries[0].options[0].time_s, 0.2);
  EXPECT_DOUBLE_EQ(ok->entries[0].options[0].energy_j, 30.0);
  EXPECT_EQ(ok->merged_duplicate_rows, 1);
  EXPECT_EQ(ok->first_duplicate_line, 3);
}

std::string two_stage_profile(double forward_s, double backward_s) {
  std::string csv = "stage,instruction,frequency,time,energy\n";
  for (int stage = 0; stage < 2; ++stage) {
    for (int i = 0; i < 5; ++i) {
      const double slow = 1.0 + 0.05 * i;
      csv += fmt::format("{},forward,{},{},{}\n", stage, 1400 - 100 * i, forward_s * slow,
                         20.0 / slow + 1.0);
      csv += fmt::format("{},backward,{},{},{}\n", stage, 1400 - 100 * i, backward_s * slow,
                         40.0 / slow + 2.0);
    }
  }
  return csv;
}

TEST(WorkBounds, HugeUnitCountsAreRefusedWithAReasonInsteadOfOverflowingOrHanging) {
  pipeline::PipelineSpec spec;
  spec.num_gpus = 2;
  spec.num_microbatches = 2;
  PlanningSettings settings;
  settings.p_blocking_w = 50.0;
  auto profile = profile_from(two_stage_profile(0.05, 0.1));
  ASSERT_TRUE(profile.ok());
  // τ = 1e-11 s: 5·10^9 units per forward (was an int overflow, then a hang at "planning: 0%").
  settings.unit_time_s = 1e-11;
  auto tiny = build_planning_problem(*profile, spec, settings);
  ASSERT_FALSE(tiny.ok());
  EXPECT_NE(tiny.error().message.find("increase --unit-time-s"), std::string::npos)
      << tiny.error().message;
  // Within the per-instruction limit but more than 10^7 τ between T* and T_min: refused.
  settings.unit_time_s = 5e-9;
  auto wide = build_planning_problem(*profile, spec, settings);
  ASSERT_FALSE(wide.ok());
  EXPECT_NE(wide.error().message.find("T* - T_min"), std::string::npos) << wide.error().message;
  // A 20-hour instruction at τ = 1 ms: 7.2·10^7 units, far more than 10^7 to plan: refused.
  auto slow = profile_from(two_stage_profile(60000.0, 0.1));
  ASSERT_TRUE(slow.ok()) << slow.error().message;
  settings.unit_time_s = 1e-3;
  auto huge = build_planning_problem(*slow, spec, settings);
  ASSERT_FALSE(huge.ok());
  // A sane τ plans.
  settings.unit_time_s = 1e-3;
  auto fine = build_planning_problem(*profile, spec, settings);
  ASSERT_TRUE(fine.ok()) << fine.error().message;
  EXPECT_GT(solve_frontier(*fine).points.size(), 10u);
}

TEST(Quantization, CeilKeepsTheFastestMeasuredClockPerTimeUnit) {
  profile::InstructionProfile profile;
  // 1410 and 1395 MHz both ceil to 51 units of 1 ms; 1395 is slower but cheaper.
  profile.options = {{1410, 0.0501, 24.0, 2},
                     {1395, 0.0504, 23.5, 3},
                     {1200, 0.056, 21.0, 4},
                     {1100, 0.060, 20.0, 5},
                     {1000, 0.066, 19.5, 6}};
  auto ceil_model =
      build_cost_model(profile, 1e-3, 0.0, CostModelKind::kExponential, Quantization::kCeil);
  ASSERT_TRUE(ceil_model.ok());
  EXPECT_EQ(ceil_model->options().front().frequency_mhz, 1410);
  EXPECT_EQ(ceil_model->option_for(ceil_model->min_units()).frequency_mhz, 1410);
  for (const auto& option : ceil_model->options()) {
    EXPECT_LE(option.time_s, option.units * 1e-3 * (1 + 1e-12));
  }
  auto floor_model =
      build_cost_model(profile, 1e-3, 0.0, CostModelKind::kExponential, Quantization::kFloor);
  ASSERT_TRUE(floor_model.ok());
  // Floor: both are 50 units; the reference keeps the fastest of them too.
  EXPECT_EQ(floor_model->options().front().frequency_mhz, 1410);
  EXPECT_EQ(floor_model->min_units() + 1, ceil_model->min_units());
}

}  // namespace
}  // namespace powertrain::frontier
