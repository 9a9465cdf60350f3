// Cluster emulation (Perseus §6.3): configuration arithmetic, the savings split, and the Table 6
// and Figure 8 trends on the real GPT-3 175B A100 profile.
#include "study/cluster.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>

#include "core/csv.h"
#include "report/cluster_report.h"

namespace powertrain::study {
namespace {

namespace fs = std::filesystem;

ClusterConfig table5(long long gpus) { return {gpus, 8, 8, 1536, 1}; }

// --- Shapes ----------------------------------------------------------------------------------

TEST(ClusterShape, PerseusTable5) {
  const std::pair<long long, std::pair<long long, int>> rows[] = {
      {1024, {16, 96}}, {2048, {32, 48}}, {4096, {64, 24}}, {8192, {128, 12}}};
  for (const auto& [gpus, expected] : rows) {
    auto shape = cluster_shape(table5(gpus));
    ASSERT_TRUE(shape.ok()) << shape.error().message;
    EXPECT_EQ(shape->pipelines, expected.first) << gpus;
    EXPECT_EQ(shape->microbatches_per_pipeline, expected.second) << gpus;
  }
  // Microbatches of 2 samples halve M; tp × pp need not be square.
  auto shape = cluster_shape({1024, 8, 8, 1536, 2});
  ASSERT_TRUE(shape.ok());
  EXPECT_EQ(shape->microbatches_per_pipeline, 48);
  shape = cluster_shape({24, 2, 4, 36, 3});  // 3 pipelines x 4 microbatches of 3 samples
  ASSERT_TRUE(shape.ok());
  EXPECT_EQ(shape->pipelines, 3);
  EXPECT_EQ(shape->microbatches_per_pipeline, 4);
}

void expect_refused(const ClusterConfig& config, const std::vector<std::string>& parts) {
  auto shape = cluster_shape(config);
  ASSERT_FALSE(shape.ok()) << config.gpus;
  const std::string& message = shape.error().message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  for (const std::string& part : parts) {
    EXPECT_NE(message.find(part), std::string::npos) << "'" << part << "' not in: " << message;
  }
}

TEST(ClusterShape, RefusesNonIntegerPipelinesAndMicrobatches) {
  expect_refused({1000, 8, 8, 1536, 1}, {"1000 GPUs", "whole number of pipelines", "64"});
  // 1280 GPUs = 20 pipelines; 1536 / 20 is not an integer.
  expect_refused({1280, 8, 8, 1536, 1}, {"global batch 1536", "20 pipelines", "76.8"});
  // 1536 samples are not whole microbatches of 5.
  expect_refused({1024, 8, 8, 1536, 5}, {"microbatches of 5"});
  // More pipelines than microbatches: 16384 GPUs = 256 pipelines for 1536 samples (6 each) is
  // fine, 131072 GPUs = 2048 pipelines is not.
  EXPECT_TRUE(cluster_shape({16384, 8, 8, 1536, 1}).ok());
  expect_refused({131072, 8, 8, 1536, 1}, {"2048 pipelines", "fewer than one microbatch"});
  expect_refused({0, 8, 8, 1536, 1}, {"positive"});
  expect_refused({1024, -8, 8, 1536, 1}, {"positive"});
  expect_refused({1024, 8, 8, 0, 1}, {"positive"});
  expect_refused({1024, 8, 8, 1536, 0}, {"positive"});
  expect_refused({64, 8, 8, 1 << 20, 1}, {"microbatches per pipeline", "4096"});
}

// --- A small synthetic pipeline --------------------------------------------------------------

// Two stages with three clocks each; slower clocks cost less energy, stage 1 is heavier.
profile::Profile small_profile() {
  auto table = core::parse_csv(
      "stage,instruction,frequency,time,energy\n"
      "0,forward,1410,0.010,2.00\n0,forward,1200,0.011,1.80\n0,forward,1000,0.013,1.70\n"
      "0,backward,1410,0.020,4.00\n0,backward,1200,0.022,3.60\n0,backward,1000,0.026,3.40\n"
      "1,forward,1410,0.012,2.40\n1,forward,1200,0.013,2.20\n1,forward,1000,0.016,2.05\n"
      "1,backward,1410,0.024,4.80\n1,backward,1200,0.027,4.30\n1,backward,1000,0.031,4.10\n",
      "small.csv");
  EXPECT_TRUE(table.ok());
  auto profile = profile::parse_profile(*table);
  EXPECT_TRUE(profile.ok());
  return *profile;
}

ClusterSettings small_settings(std::vector<double> slowdowns) {
  ClusterSettings settings;
  settings.planning.p_blocking_w = 100.0;
  settings.planning.unit_time_s = 0.001;
  settings.slowdowns = std::move(slowdowns);
  return settings;
}

TEST(ClusterEmulation, SplitsSavingsIntoIntrinsicAndExtrinsic) {
  // 16 GPUs = 4 pipelines of tp 2 x pp 2, 8 microbatches each.
  auto emulation = emulate_cluster(small_profile(), {{16, 2, 2, 32, 1}},
                                   small_settings({1.5, 1.0, 1.1, 1.1, 1.02}));
  ASSERT_TRUE(emulation.ok()) << emulation.error().message;
  const ClusterConfigResult& c = emulation->configs.at(0);
  EXPECT_EQ(c.shape.pipelines, 4);
  EXPECT_EQ(c.shape.microbatches_per_pipeline, 8);
  ASSERT_EQ(emulation->slowdowns, (std::vector<double>{1.0, 1.02, 1.1, 1.5}));  // sorted, unique
  ASSERT_EQ(c.slowdowns.size(), 4u);
  ASSERT_GT(c.t_star_s, c.t_min_s);

  const ClusterSlowdownResult& none = c.slowdowns[0];
  EXPECT_DOUBLE_EQ(none.straggler_time_s, c.t_min_s);
  EXPECT_EQ(none.point, c.frontier_points - 1);  // the T_min point
  EXPECT_DOUBLE_EQ(none.perseus.savings_fraction, none.intrinsic_fraction);
  EXPECT_DOUBLE_EQ(none.extrinsic_fraction, 0.0);
  EXPECT_GT(none.intrinsic_fraction, 0.0);

  for (const ClusterSlowdownResult& s : c.slowdowns) {
    SCOPED_TRACE(s.slowdown);
    EXPECT_NEAR(s.straggler_time_s, s.slowdown * c.t_min_s, 1e-12);
    EXPECT_NEAR(s.target_time_s, std::min(s.straggler_time_s, c.t_star_s), 1e-12);
    EXPECT_LE(s.planned_time_s, s.target_time_s + 1e-12);
    EXPECT_NEAR(s.intrinsic_fraction + s.extrinsic_fraction, s.perseus.savings_fraction, 1e-12);
    EXPECT_GE(s.extrinsic_fraction, 0.0);
    EXPECT_LE(s.perseus.cluster_energy_j, s.intrinsic_only.cluster_energy_j);
    EXPECT_LT(s.intrinsic_only.cluster_energy_j, s.baseline.cluster_energy_j);
    // Every pipeline's GPUs: tp x N baseline pipelines (the straggler is one of them).
    EXPECT_NEAR(s.baseline.cluster_energy_j, 2.0 * 4.0 * s.baseline.pipeline_energy_j,
                1e-9 * s.baseline.cluster_energy_j);
    // The straggler is identical in both, so the cluster saves (N-1)/N of a pipeline's saving.
    EXPECT_NEAR(s.perseus.savings_fraction, 0.75 * s.perseus.pipeline_savings_fraction, 1e-12);
    EXPECT_DOUBLE_EQ(s.perseus.iteration_time_s, s.straggler_time_s);
  }
  // A straggler slower than T* deploys T* (point 0) and blocks for the rest.
  EXPECT_GT(1.5 * c.t_min_s, c.t_star_s);
  EXPECT_EQ(c.slowdowns[3].point, 0u);
  EXPECT_DOUBLE_EQ(c.slowdowns[3].target_time_s, c.t_star_s);
  EXPECT_GT(c.slowdowns[2].extrinsic_fraction, c.slowdowns[1].extrinsic_fraction);
  // The ★: T' = T*.
  EXPECT_NEAR(c.at_t_star.slowdown, c.t_star_s / c.t_min_s, 1e-12);
  EXPECT_EQ(c.at_t_star.point, 0u);
}

TEST(ClusterEmulation, MeasuredMethodsAreComparedInTheMeasuredFrame) {
  // Realized Perseus and EnvPipe block until slowdown x the measured max-clock time (or make the
  // job wait when they are slower) and are compared with max clock measured in the same way.
  auto emulation = emulate_cluster(small_profile(), {{8, 1, 2, 16, 1}}, small_settings({1.0, 1.3}));
  ASSERT_TRUE(emulation.ok()) << emulation.error().message;
  const ClusterConfigResult& c = emulation->configs[0];
  for (const ClusterSlowdownResult& s : c.slowdowns) {
    SCOPED_TRACE(s.slowdown);
    EXPECT_NEAR(s.measured_straggler_time_s, s.slowdown * c.max_clock_time_s, 1e-12);
    EXPECT_DOUBLE_EQ(s.envpipe.iteration_time_s,
                     std::max(s.measured_straggler_time_s, c.envpipe_time_s));
    EXPECT_DOUBLE_EQ(s.measured_baseline.iteration_time_s, s.measured_straggler_time_s);
    EXPECT_DOUBLE_EQ(s.measured_baseline.savings_fraction, 0.0);
    EXPECT_NEAR(s.envpipe.savings_fraction,
                1.0 - s.envpipe.cluster_energy_j / s.measured_baseline.cluster_energy_j, 1e-12);
  }
  EXPECT_NEAR(c.envpipe_fraction, 1.0 - c.envpipe_energy_j / c.max_clock_energy_j, 1e-12);
}

TEST(ClusterEmulation, ConfigurationsWithTheSamePipelineShareOneSolve) {
  // 8 GPUs of tp 1 (4 pipelines x 4 microbatches) and 16 GPUs of tp 2: the same pipeline.
  std::vector<std::size_t> started;
  std::vector<double> solve_times;
  ClusterSettings settings = small_settings({1.0, 1.2});
  settings.on_config_start = [&](std::size_t index, std::size_t count, const ClusterConfig&,
                                 const ClusterShape& shape) {
    EXPECT_EQ(count, 2u);
    EXPECT_EQ(shape.microbatches_per_pipeline, 4);
    started.push_back(index);
  };
  settings.on_config_done = [&](std::size_t, std::size_t, double seconds) {
    solve_times.push_back(seconds);
  };
  auto emulation =
      emulate_cluster(small_profile(), {{8, 1, 2, 16, 1}, {16, 2, 2, 16, 1}}, settings);
  ASSERT_TRUE(emulation.ok()) << emulation.error().message;
  EXPECT_EQ(started, (std::vector<std::size_t>{0, 1}));
  ASSERT_EQ(solve_times.size(), 2u);
  EXPECT_EQ(solve_times[1], 0.0);  // reused
  const auto& a = emulation->configs[0].slowdowns[1];
  const auto& b = emulation->configs[1].slowdowns[1];
  EXPECT_DOUBLE_EQ(a.perseus.savings_fraction, b.perseus.savings_fraction);  // tp scales both
  EXPECT_DOUBLE_EQ(2.0 * a.perseus.cluster_energy_j, b.perseus.cluster_energy_j);
}

TEST(ClusterEmulation, RefusesBadInputBeforeSolving) {
  bool solved = false;
  ClusterSettings settings = small_settings({1.0});
  settings.on_config_start = [&](std::size_t, std::size_t, const ClusterConfig&,
                                 const ClusterShape&) { solved = true; };
  const profile::Profile profile = small_profile();
  // The second configuration is bad: nothing is solved.
  auto bad = emulate_cluster(profile, {{8, 1, 2, 16, 1}, {10, 1, 2, 16, 1}}, settings);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("10 GPUs"), std::string::npos) << bad.error().message;
  EXPECT_FALSE(solved);
  // Three stages for a two-stage profile.
  bad = emulate_cluster(profile, {{12, 1, 3, 16, 1}}, settings);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("stage 2"), std::string::npos) << bad.error().message;
  EXPECT_FALSE(emulate_cluster(profile, {}, settings).ok());
  // One pipeline is all straggler.
  bad = emulate_cluster(profile, {{4, 2, 2, 16, 1}}, settings);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("at least 2"), std::string::npos) << bad.error().message;
  for (double slowdown : {0.9, std::nan(""), 1000.0}) {
    auto refused = emulate_cluster(profile, {{8, 1, 2, 16, 1}}, small_settings({slowdown}));
    ASSERT_FALSE(refused.ok()) << slowdown;
    EXPECT_NE(refused.error().message.find("slowdowns"), std::string::npos);
  }
  EXPECT_FALSE(solved);
}

TEST(ClusterEmulation, OutputsHaveOneRowPerConfigAndSlowdown) {
  auto emulation = emulate_cluster(small_profile(), {{8, 1, 2, 16, 1}, {16, 1, 2, 16, 1}},
                                   small_settings({1.0, 1.1, 1.2}));
  ASSERT_TRUE(emulation.ok());
  auto table = core::parse_csv(report::cluster_csv(*emulation), "cluster.csv");
  ASSERT_TRUE(table.ok()) << table.error().message;
  EXPECT_EQ(table->rows.size(), 6u);
  for (const char* column :
       {"gpus", "pipelines", "microbatches_per_pipeline", "slowdown", "t_min_s",
        "t_star_over_t_min", "baseline_cluster_energy_j", "perseus_planned_cluster_energy_j",
        "savings_percent", "intrinsic_savings_percent", "extrinsic_savings_percent",
        "envpipe_savings_percent", "realized_savings_percent"}) {
    EXPECT_NE(std::find(table->header.begin(), table->header.end(), column), table->header.end())
        << column;
  }
  const auto summary = nlohmann::json::parse(report::cluster_summary_json(*emulation));
  ASSERT_EQ(summary["configs"].size(), 2u);
  EXPECT_EQ(summary["configs"][1]["pipelines"], 8);
  EXPECT_EQ(summary["configs"][1]["slowdowns"].size(), 3u);
  const std::string svg = report::cluster_svg(*emulation);
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("★"), std::string::npos);
  EXPECT_NE(svg.find("16 GPUs = 8 pipelines x 2 microbatches"), std::string::npos);
}

// --- The real GPT-3 175B A100 profile (Perseus Table 5 strong scaling) -----------------------

fs::path a100_profile_path() {
  return fs::path(POWERTRAIN_SOURCE_DIR) / ".." / "shared" / "data" / "perseus" /
         "gpt3-175b+a100_sxm_bf16.csv";
}

// The paper-reproduction tests plan with the reference's floor quantization (Perseus's own rule).
ClusterSettings a100_settings(std::vector<double> slowdowns) {
  ClusterSettings settings;
  settings.planning.quantization = frontier::Quantization::kFloor;
  settings.planning.p_blocking_w = 83.64;
  settings.planning.unit_time_s = 0.001;
  settings.slowdowns = std::move(slowdowns);
  return settings;
}

// One emulation of the 2048-, 4096- and 8192-GPU rows of Table 5, shared by the tests below. The
// 1024-GPU row (96 microbatches, about a second to solve) is emulated once, in one test, because
// ctest runs every test in its own process.
class RealCluster : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!fs::exists(a100_profile_path())) return;
    auto profile = profile::read_profile(a100_profile_path().string());
    ASSERT_TRUE(profile.ok()) << profile.error().message;
    profile_ = std::make_unique<profile::Profile>(std::move(*profile));
    // A fine grid around T*/T_min ≈ 1.22 so that the rise and fall are both sampled densely.
    auto emulation =
        emulate_cluster(*profile_, {table5(2048), table5(4096), table5(8192)},
                        a100_settings({1.0, 1.02, 1.05, 1.08, 1.1, 1.12, 1.15, 1.18, 1.2, 1.21,
                                       1.23, 1.24, 1.25, 1.27, 1.3, 1.4, 1.5}));
    ASSERT_TRUE(emulation.ok()) << emulation.error().message;
    emulation_ = std::make_unique<ClusterEmulation>(std::move(*emulation));
  }
  static void TearDownTestSuite() {
    emulation_.reset();
    profile_.reset();
  }

  void SetUp() override {
    if (!emulation_) {
      GTEST_SKIP() << "real data not found at " << a100_profile_path()
                   << " (needs ../shared/data/perseus)";
    }
  }

  static const ClusterConfigResult& config(long long gpus) {
    for (const auto& c : emulation_->configs) {
      if (c.config.gpus == gpus) return c;
    }
    throw std::logic_error("no such configuration");
  }

  static std::unique_ptr<profile::Profile> profile_;
  static std::unique_ptr<ClusterEmulation> emulation_;
};

std::unique_ptr<profile::Profile> RealCluster::profile_;
std::unique_ptr<ClusterEmulation> RealCluster::emulation_;

TEST_F(RealCluster, IntrinsicSavingsFallWithMoreMicrobatches) {
  // Perseus Table 6 (15.20 / 14.19 / 13.62 / 13.32 % for 12 / 24 / 48 / 96 microbatches),
  // reproduced to its two decimals with the reference's fit and floor quantization: more
  // steady-state microbatches, less intrinsic bloat per pipeline.
  auto row_1024 = emulate_cluster(*profile_, {table5(1024)}, a100_settings({1.0, 1.2}));
  ASSERT_TRUE(row_1024.ok()) << row_1024.error().message;
  const ClusterConfigResult& c1024 = row_1024->configs.at(0);
  const std::pair<const ClusterConfigResult*, double> expected[] = {
      {&config(8192), 15.20}, {&config(4096), 14.19}, {&config(2048), 13.62}, {&c1024, 13.32}};
  double previous = 1.0;
  for (const auto& [c, percent] : expected) {
    SCOPED_TRACE(c->config.gpus);
    EXPECT_NEAR(100.0 * c->pipeline_intrinsic_fraction, percent, 0.01);
    EXPECT_LT(c->pipeline_intrinsic_fraction, previous);
    previous = c->pipeline_intrinsic_fraction;
    // At slowdown 1.0 the cluster saves exactly the intrinsic part, diluted by the straggler.
    const ClusterSlowdownResult& none = c->slowdowns.front();
    ASSERT_EQ(none.slowdown, 1.0);
    EXPECT_DOUBLE_EQ(none.perseus.savings_fraction, none.intrinsic_fraction);
    EXPECT_DOUBLE_EQ(none.extrinsic_fraction, 0.0);
    EXPECT_NEAR(none.intrinsic_fraction,
                c->pipeline_intrinsic_fraction * (c->shape.pipelines - 1.0) / c->shape.pipelines,
                1e-12);
  }
  // Perseus Figure 7 (1,024 GPUs, slowdown 1.2): intrinsic plus extrinsic beats EnvPipe's
  // intrinsic-only savings.
  EXPECT_GT(c1024.pipeline_intrinsic_fraction, c1024.envpipe_fraction);
  const ClusterSlowdownResult& fig7 = c1024.slowdowns.at(1);
  EXPECT_GT(fig7.extrinsic_fraction, 0.10);
  EXPECT_GT(fig7.perseus.savings_fraction, fig7.envpipe.savings_fraction + 0.10);
}

TEST_F(RealCluster, SavingsRiseUntilTheStragglerReachesTStarThenFall) {
  // Perseus Figure 8 for 2048 and 4096 GPUs.
  for (long long gpus : {2048LL, 4096LL}) {
    SCOPED_TRACE(gpus);
    const ClusterConfigResult& c = config(gpus);
    const double star = c.t_star_s / c.t_min_s;
    EXPECT_GT(star, 1.2);
    EXPECT_LT(star, 1.25);
    const auto& rows = c.slowdowns;
    for (std::size_t i = 1; i < rows.size(); ++i) {
      SCOPED_TRACE(rows[i].slowdown);
      if (rows[i].slowdown <= star) {
        EXPECT_GT(rows[i].perseus.savings_fraction, rows[i - 1].perseus.savings_fraction);
        EXPECT_GT(rows[i].extrinsic_fraction, rows[i - 1].extrinsic_fraction);
      } else if (rows[i - 1].slowdown >= star) {
        EXPECT_LT(rows[i].perseus.savings_fraction, rows[i - 1].perseus.savings_fraction);
        EXPECT_EQ(rows[i].point, 0u);  // T* deployed: nothing slower saves energy
      }
      EXPECT_LE(rows[i].perseus.savings_fraction, c.at_t_star.perseus.savings_fraction + 1e-12);
    }
    // Beyond T*, Perseus saves a constant number of joules: only the baseline's blocking grows.
    const auto& a = rows[rows.size() - 2];
    const auto& b = rows.back();
    EXPECT_NEAR(a.baseline.cluster_energy_j - a.perseus.cluster_energy_j,
                b.baseline.cluster_energy_j - b.perseus.cluster_energy_j, 1e-6);
    EXPECT_GT(c.at_t_star.extrinsic_fraction, 0.10);  // the slack is worth more than 10 %
  }
}

TEST_F(RealCluster, CeilPlansAreNeverSlowerThanMaxClockSoNobodyWaits) {
  // The default (ceil + pinning): at slowdown 1.0 the realized T_min plan is no slower than the
  // all-max-clock plan measured, so no pipeline waits for it; pinning keeps most of the saving.
  ClusterSettings settings = a100_settings({1.0});
  settings.planning.quantization = frontier::Quantization::kCeil;
  auto emulation = emulate_cluster(*profile_, {table5(2048), table5(8192)}, settings);
  ASSERT_TRUE(emulation.ok()) << emulation.error().message;
  for (const ClusterConfigResult& c : emulation->configs) {
    SCOPED_TRACE(c.config.gpus);
    EXPECT_TRUE(c.fastest_point_pinned);
    const ClusterSlowdownResult& none = c.slowdowns.front();
    EXPECT_LE(none.perseus_realized.iteration_time_s,
              none.measured_straggler_time_s * (1.0 + 1e-12));
    EXPECT_GT(none.perseus_realized.savings_fraction, 0.10);
  }
}

TEST_F(RealCluster, AFloorPlanSlowerThanTheStragglerMakesTheWholeJobWait) {
  // With the reference's floor quantization the realized T_min plan is slower than max clock
  // measured (12 microbatches: about 2.850 s vs 2.837 s), so at slowdown 1.0 every pipeline, the
  // straggler included, waits for it at blocking power.
  const ClusterConfigResult& c = config(8192);
  EXPECT_FALSE(c.fastest_point_pinned);
  const ClusterSlowdownResult& none = c.slowdowns.front();
  const ClusterEnergy& realized = none.perseus_realized;
  ASSERT_GT(realized.iteration_time_s, none.measured_straggler_time_s);
  const double blocking_w = 83.64 * 8;
  const double straggler_j =
      none.measured_baseline.pipeline_energy_j +
      blocking_w * (realized.iteration_time_s - none.measured_straggler_time_s);
  EXPECT_NEAR(realized.cluster_energy_j, 8.0 * (127.0 * realized.pipeline_energy_j + straggler_j),
              1e-9 * realized.cluster_energy_j);
}

TEST_F(RealCluster, PerseusSavesMoreThanEnvPipeAtEverySlowdown) {
  for (long long gpus : {2048LL, 4096LL, 8192LL}) {
    const ClusterConfigResult& c = config(gpus);
    EXPECT_GT(c.pipeline_intrinsic_fraction, c.envpipe_fraction) << gpus;
    double previous_gap = 0.0;
    for (const ClusterSlowdownResult& s : c.slowdowns) {
      SCOPED_TRACE(::testing::Message() << gpus << " GPUs, slowdown " << s.slowdown);
      EXPECT_GT(s.envpipe.savings_fraction, 0.0);
      EXPECT_GT(s.perseus.savings_fraction, s.envpipe.savings_fraction);
      EXPECT_GT(s.perseus_realized.savings_fraction, s.envpipe.savings_fraction);
      // EnvPipe has no frontier: it cannot use the slack, so its lead over EnvPipe grows.
      const double gap = s.perseus.savings_fraction - s.envpipe.savings_fraction;
      if (s.slowdown <= c.t_star_s / c.t_min_s) {
        EXPECT_GT(gap, previous_gap);
      }
      previous_gap = gap;
    }
  }
}

}  // namespace
}  // namespace powertrain::study
