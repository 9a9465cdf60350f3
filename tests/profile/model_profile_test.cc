// Plans without a GPU: calibration against the Perseus measurements (fidelity), Perseus Table 6
// from the built-in model alone, Table 7 partitions, and job validation.
#include "profile/model_profile.h"

#include <fmt/core.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "device/calibration.h"
#include "frontier/evaluate.h"
#include "frontier/problem.h"
#include "frontier/solver.h"

namespace powertrain::profile {
namespace {

namespace fs = std::filesystem;

fs::path data_dir() {
  return fs::path(POWERTRAIN_SOURCE_DIR) / ".." / "shared" / "data" / "perseus";
}

// The job the Perseus artifact profiles describe: GPT-3 175B, TP 8 x PP 8, microbatch 1 x 2048,
// a slice of `layers_per_stage` layers per stage (the last stage adds the LM head).
ModelJob perseus_job(const std::string& gpu, int layers_per_stage) {
  ModelJobRequest request;
  request.model = "gpt3-175b";
  request.gpu = gpu;
  request.tp = 8;
  request.pp = 8;
  request.num_layers = 8 * layers_per_stage;
  request.partition = "uniform";
  auto job = build_model_job(request);
  EXPECT_TRUE(job.ok()) << job.error().message;
  return *job;
}

struct FidelityCase {
  const char* gpu;
  const char* file;
  int layers_per_stage;
};

class Fidelity : public ::testing::TestWithParam<FidelityCase> {};

TEST_P(Fidelity, ShippedCalibrationReproducesEveryMeasuredStageWithin5Percent) {
  const FidelityCase c = GetParam();
  const fs::path path = data_dir() / c.file;
  if (!fs::exists(path)) GTEST_SKIP() << "real data absent: " << path;
  auto measured = read_profile(path.string());
  ASSERT_TRUE(measured.ok()) << measured.error().message;
  const ModelJob job = perseus_job(c.gpu, c.layers_per_stage);
  ASSERT_TRUE(job.gpu.calibrated);
  auto samples = calibration_samples(job, *measured);
  ASSERT_TRUE(samples.ok()) << samples.error().message;
  const device::CalibrationReport report =
      device::evaluate_calibration(job.gpu, job.gpu.dvfs, *samples);
  // Stages 0-6 are one replicated measurement (kept once, as stage 6) and stage 7 the last.
  ASSERT_EQ(report.groups.size(), 4u);
  for (const device::GroupError& g : report.groups) {
    EXPECT_LE(g.time_mape_percent, 5.0) << c.gpu << " " << g.group;
    EXPECT_LE(g.energy_mape_percent, 5.0) << c.gpu << " " << g.group;
    RecordProperty(std::string(c.gpu) + " " + g.group,
                   fmt::format("{:.2f}/{:.2f}", g.time_mape_percent, g.energy_mape_percent));
  }
}

INSTANTIATE_TEST_SUITE_P(PerseusProfiles, Fidelity,
                         ::testing::Values(FidelityCase{"a100-sxm", "gpt3-175b+a100_sxm_bf16.csv",
                                                        4},
                                           FidelityCase{"a40", "gpt3-175b+a40_bf16.csv", 8}),
                         [](const auto& info) {
                           std::string name = info.param.gpu;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

// Issue 12 must-show 5: time and energy per (GPU, stage, instruction) normalized at the highest
// measured clock, in sample (the shipped calibration of the same GPU) and leave one GPU out (the
// other GPU's shipped calibration carried over by device::transfer_params). The numbers are pinned
// to what docs/device.md reports, so a model change that moves them shows here; the targets (2 %
// in sample, 3 % out of sample) are not all met, and the docs say which miss.
struct NormalizedCase {
  const char* gpu;
  const char* file;
  int layers_per_stage;
  double power_limit_w;
  const char* source_gpu;  // whose shipped parameters are carried over for the out-of-sample column
  // Pinned normalized MAPE %, per group in the report's order (stage 6 fwd, bwd, stage 7 fwd, bwd):
  // time then energy.
  double in_sample[4][2];
  double out_of_sample[4][2];
};

class NormalizedFidelity : public ::testing::TestWithParam<NormalizedCase> {};

TEST_P(NormalizedFidelity, InSampleAndLeaveOneGpuOutErrorsAreThoseTheDocsReport) {
  const NormalizedCase c = GetParam();
  const fs::path path = data_dir() / c.file;
  if (!fs::exists(path)) GTEST_SKIP() << "real data absent: " << path;
  auto measured = read_profile(path.string());
  ASSERT_TRUE(measured.ok()) << measured.error().message;
  const ModelJob job = perseus_job(c.gpu, c.layers_per_stage);
  auto samples = calibration_samples(job, *measured);
  ASSERT_TRUE(samples.ok()) << samples.error().message;
  auto source = device::find_gpu(c.source_gpu);
  ASSERT_TRUE(source.ok());
  const device::CalibrationReport in_sample =
      device::evaluate_calibration(job.gpu, job.gpu.dvfs, *samples);
  const device::CalibrationReport out_of_sample = device::evaluate_calibration(
      job.gpu, device::transfer_params(*source, source->dvfs, job.gpu, c.power_limit_w), *samples);
  ASSERT_EQ(in_sample.groups.size(), 4u);
  ASSERT_EQ(out_of_sample.groups.size(), 4u);
  constexpr double kTolerancePercent = 0.006;  // the docs print two decimals
  for (int g = 0; g < 4; ++g) {
    const device::GroupError& in = in_sample.groups[static_cast<std::size_t>(g)];
    const device::GroupError& out = out_of_sample.groups[static_cast<std::size_t>(g)];
    EXPECT_NEAR(in.time_normalized_mape_percent, c.in_sample[g][0], kTolerancePercent)
        << c.gpu << " " << in.group << " time, in sample";
    EXPECT_NEAR(in.energy_normalized_mape_percent, c.in_sample[g][1], kTolerancePercent)
        << c.gpu << " " << in.group << " energy, in sample";
    EXPECT_NEAR(out.time_normalized_mape_percent, c.out_of_sample[g][0], kTolerancePercent)
        << c.gpu << " " << out.group << " time, fitted on " << c.source_gpu;
    EXPECT_NEAR(out.energy_normalized_mape_percent, c.out_of_sample[g][1], kTolerancePercent)
        << c.gpu << " " << out.group << " energy, fitted on " << c.source_gpu;
  }
}

INSTANTIATE_TEST_SUITE_P(
    PerseusProfiles, NormalizedFidelity,
    ::testing::Values(
        NormalizedCase{"a100-sxm",
                       "gpt3-175b+a100_sxm_bf16.csv",
                       4,
                       500.0,
                       "a40",
                       {{1.48, 4.68}, {4.20, 1.43}, {1.38, 4.44}, {4.07, 1.31}},
                       {{12.32, 19.69}, {11.17, 20.32}, {12.48, 19.95}, {11.30, 20.45}}},
        NormalizedCase{"a40",
                       "gpt3-175b+a40_bf16.csv",
                       8,
                       300.0,
                       "a100-sxm",
                       {{1.74, 2.35}, {3.65, 1.76}, {1.96, 1.87}, {3.29, 1.71}},
                       {{6.73, 20.73}, {22.34, 13.00}, {6.62, 20.39}, {21.88, 12.94}}}),
    [](const auto& info) {
      std::string name = info.param.gpu;
      std::replace(name.begin(), name.end(), '-', '_');
      return name;
    });

TEST(Calibration, NormalizedErrorsAreZeroForAPerfectModelAndSeeAShapeError) {
  // Hand-checkable: measurements made by the model itself give 0 normalized error; scaling every
  // measured time by 2 (absolute error 50 %) keeps the normalized error at 0; scaling only the
  // lowest clock's time by 1.1 gives a normalized time error of 100 × (1 − 1/1.1) at that clock.
  ModelJob job = perseus_job("a100-sxm", 1);
  Profile measured = generate_profile(job);
  for (InstructionProfile& entry : measured.entries) {
    std::erase_if(entry.options, [](const MeasuredOption& o) {
      return o.frequency_mhz != 1005 && o.frequency_mhz != 1410;
    });
  }
  auto samples = calibration_samples(job, measured);
  ASSERT_TRUE(samples.ok()) << samples.error().message;
  auto report = device::evaluate_calibration(job.gpu, job.gpu.dvfs, *samples);
  for (const device::GroupError& g : report.groups) {
    EXPECT_EQ(g.reference_clock_mhz, 1410.0);
    EXPECT_NEAR(g.time_normalized_mape_percent, 0.0, 1e-9) << g.group;
    EXPECT_NEAR(g.energy_normalized_mape_percent, 0.0, 1e-9) << g.group;
  }
  for (device::CalibrationSample& s : *samples) s.measured_time_s *= 2.0;
  report = device::evaluate_calibration(job.gpu, job.gpu.dvfs, *samples);
  for (const device::GroupError& g : report.groups) {
    EXPECT_NEAR(g.time_mape_percent, 50.0, 1e-9) << g.group;
    EXPECT_NEAR(g.time_normalized_mape_percent, 0.0, 1e-9) << g.group;
  }
  for (device::CalibrationSample& s : *samples)
    if (s.clock_mhz == 1005) s.measured_time_s *= 1.1;
  report = device::evaluate_calibration(job.gpu, job.gpu.dvfs, *samples);
  for (const device::GroupError& g : report.groups) {
    EXPECT_NEAR(g.time_normalized_mape_percent, 100.0 * (1.0 - 1.0 / 1.1), 1e-9) << g.group;
    EXPECT_NEAR(g.time_normalized_max_error_percent, 100.0 * (1.0 - 1.0 / 1.1), 1e-9) << g.group;
    EXPECT_NEAR(g.energy_normalized_mape_percent, 0.0, 1e-9) << g.group;
  }
}

TEST(Calibration, TransferCarriesEfficienciesAndScalesClockAndPowerToTheTarget) {
  auto a100 = device::find_gpu("a100-sxm");
  auto a40 = device::find_gpu("a40");
  ASSERT_TRUE(a100.ok() && a40.ok());
  const device::DvfsParams& from = a100->dvfs;
  const device::DvfsParams carried = device::transfer_params(*a100, from, *a40, 300.0);
  EXPECT_EQ(carried.matmul_efficiency, from.matmul_efficiency);
  EXPECT_EQ(carried.link_efficiency, from.link_efficiency);
  EXPECT_EQ(carried.backward_link_efficiency, from.backward_link_efficiency);
  EXPECT_EQ(carried.collective_activity, from.collective_activity);
  EXPECT_EQ(carried.voltage_min, from.voltage_min);
  EXPECT_DOUBLE_EQ(carried.voltage_knee_mhz, from.voltage_knee_mhz * 1740.0 / 1410.0);
  EXPECT_DOUBLE_EQ(carried.static_power_w, from.static_power_w * 300.0 / from.power_limit_w);
  EXPECT_DOUBLE_EQ(carried.dynamic_power_w, from.dynamic_power_w * 300.0 / from.power_limit_w);
  EXPECT_EQ(carried.power_limit_w, 300.0);
  // The normalized voltage curve is the same curve: v at the same fraction of the top clock.
  EXPECT_NEAR(device::relative_voltage(*a40, carried, 0.7 * 1740.0),
              device::relative_voltage(*a100, from, 0.7 * 1410.0), 1e-12);
}

TEST(Calibration, RecoversKnownParametersFromModelledMeasurements) {
  // Measurements made by the model itself with known parameters must be fitted back closely.
  ModelJob job = perseus_job("a100-sxm", 2);
  device::DvfsParams truth = job.gpu.dvfs;
  truth.matmul_efficiency = 0.55;
  truth.static_power_w = 70.0;
  truth.dynamic_power_w = 350.0;
  truth.voltage_knee_mhz = 1000.0;
  job.gpu.dvfs = truth;
  Profile measured = generate_profile(job);
  for (InstructionProfile& entry : measured.entries) {  // the clocks Perseus profiled
    std::erase_if(entry.options, [](const MeasuredOption& o) { return o.frequency_mhz < 855; });
  }
  auto samples = calibration_samples(job, measured);
  ASSERT_TRUE(samples.ok()) << samples.error().message;
  device::DvfsParams start = truth;
  start.matmul_efficiency = 0.3;
  start.static_power_w = 120.0;
  start.dynamic_power_w = 250.0;
  auto fitted = device::calibrate(job.gpu, *samples, start);
  ASSERT_TRUE(fitted.ok()) << fitted.error().message;
  EXPECT_LT(fitted->time_mape_percent, 0.2);
  EXPECT_LT(fitted->energy_mape_percent, 0.2);
  EXPECT_NEAR(fitted->params.matmul_efficiency, 0.55, 0.02);
}

TEST(Calibration, RefusesTooFewOrBadMeasurements) {
  const ModelJob job = perseus_job("a100-sxm", 1);
  std::vector<device::CalibrationSample> few(3);
  EXPECT_FALSE(device::calibrate(job.gpu, few, job.gpu.dvfs).ok());
}

// Intrinsic savings at T_min against all max clock (Perseus Table 6 definition) of a frontier
// planned from the modelled profile alone.
double intrinsic_savings_percent(const std::string& gpu, int layers_per_stage, int microbatches,
                                 double unit_time_s) {
  const ModelJob job = perseus_job(gpu, layers_per_stage);
  const Profile profile = generate_profile(job);
  pipeline::PipelineSpec spec;
  spec.num_gpus = 8;
  spec.num_microbatches = microbatches;
  frontier::PlanningSettings settings;
  settings.unit_time_s = unit_time_s;
  settings.p_blocking_w = job.gpu.p_blocking_w;
  auto problem = frontier::build_planning_problem(profile, spec, settings);
  EXPECT_TRUE(problem.ok()) << problem.error().message;
  const frontier::Frontier frontier = frontier::solve_frontier(*problem);
  const double t_min_s = frontier.points.back().time_units * unit_time_s;
  return 100.0 *
         (1.0 - frontier.points.back().energy_j / frontier::max_clock_energy_at(*problem, t_min_s));
}

TEST(PerseusTable6FromTheBuiltInModel, A100WithinTwoPoints) {
  const double paper[] = {15.20, 14.19, 13.62, 13.32};
  const int microbatches[] = {12, 24, 48, 96};
  for (int i = 0; i < 4; ++i) {
    const double ours = intrinsic_savings_percent("a100-sxm", 4, microbatches[i], 1e-3);
    EXPECT_NEAR(ours, paper[i], 2.0) << microbatches[i] << " microbatches";
    RecordProperty("a100_" + std::to_string(microbatches[i]), fmt::format("{:.2f}", ours));
  }
}

TEST(PerseusTable6FromTheBuiltInModel, A40WithinTwoPoints) {
  // 48 and 96 microbatches at τ = 0.1 ms take minutes; docs/device.md records them.
  const double paper[] = {11.81, 10.22};
  const int microbatches[] = {12, 24};
  for (int i = 0; i < 2; ++i) {
    const double ours = intrinsic_savings_percent("a40", 8, microbatches[i], 1e-4);
    EXPECT_NEAR(ours, paper[i], 2.0) << microbatches[i] << " microbatches";
  }
}

struct PartitionCase {
  const char* model;
  const char* gpu;
  int stages;
  const char* expected;  // ours
  double paper_ratio;    // Table 7
};

class Table7 : public ::testing::TestWithParam<PartitionCase> {};

TEST_P(Table7, MinimumImbalancePartition) {
  const PartitionCase c = GetParam();
  ModelJobRequest request;
  request.model = c.model;
  request.gpu = c.gpu;
  request.pp = c.stages;
  request.microbatch_size = 4;  // Perseus Tables 9-10
  auto job = build_model_job(request);
  ASSERT_TRUE(job.ok()) << job.error().message;
  EXPECT_EQ(workload::to_string(job->partition), c.expected);
  EXPECT_NEAR(job->imbalance_ratio, c.paper_ratio, c.paper_ratio * 0.03 + 0.005);
}

// A100 PCIe: 4 stages equal the paper's partitions; with 8 stages several partitions tie at the
// paper's ratio and we print another one of them. A40: our head costs about 1.9 layers (FLOPs),
// Perseus measured about 0.9, so the last stage keeps one layer less (docs/device.md).
INSTANTIATE_TEST_SUITE_P(
    Gpt3, Table7,
    ::testing::Values(
        PartitionCase{"gpt3-1.3b", "a100-pcie", 4, "[0, 6, 12, 19, 25]", 1.17},
        PartitionCase{"gpt3-1.3b", "a100-pcie", 8, "[0, 3, 6, 9, 12, 15, 18, 22, 25]", 1.33},
        PartitionCase{"gpt3-2.7b", "a100-pcie", 4, "[0, 8, 16, 25, 33]", 1.13},
        PartitionCase{"gpt3-2.7b", "a100-pcie", 8, "[0, 4, 8, 12, 16, 20, 24, 29, 33]", 1.25},
        PartitionCase{"gpt3-2.7b", "a40", 8, "[0, 4, 8, 12, 16, 20, 24, 29, 33]", 1.21}),
    [](const auto& info) {
      std::string name = std::string(info.param.model) + "_" + info.param.gpu + "_" +
                         std::to_string(info.param.stages) + "_stages";
      for (char& c : name) {
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
      }
      return name;
    });

TEST(ModelJob, RefusesImpossibleConfigurationsWithTheReason) {
  ModelJobRequest request;
  request.model = "gpt3-175b";
  request.tp = 7;
  auto bad_tp = build_model_job(request);
  ASSERT_FALSE(bad_tp.ok());
  EXPECT_NE(bad_tp.error().message.find("must divide num_heads"), std::string::npos);
  request.tp = 8;
  request.pp = 200;
  auto bad_pp = build_model_job(request);
  ASSERT_FALSE(bad_pp.ok());
  EXPECT_NE(bad_pp.error().message.find("exceeds"), std::string::npos);
  request.pp = 8;
  request.model = "gpt5";
  auto bad_model = build_model_job(request);
  ASSERT_FALSE(bad_model.ok());
  EXPECT_NE(bad_model.error().message.find("gpt3-175b"), std::string::npos);
  request.model = "gpt3-175b";
  request.gpu = "tpu";
  auto bad_gpu = build_model_job(request);
  ASSERT_FALSE(bad_gpu.ok());
  EXPECT_NE(bad_gpu.error().message.find("a100-sxm"), std::string::npos);
  request.gpu = "v100";
  auto no_bf16 = build_model_job(request);
  ASSERT_FALSE(no_bf16.ok());
  EXPECT_NE(no_bf16.error().message.find("bf16"), std::string::npos);
}

TEST(ModelJob, GeneratedProfilePlansOnEveryGpu) {
  for (const device::GpuSpec& gpu : device::gpu_catalog()) {
    ModelJobRequest request;
    request.model = "gpt3-1.3b";
    request.gpu = gpu.name;
    request.precision = gpu.name == "v100" ? "fp16" : "bf16";
    auto job = build_model_job(request);
    ASSERT_TRUE(job.ok()) << gpu.name << ": " << job.error().message;
    const Profile profile = generate_profile(*job);
    ASSERT_EQ(profile.entries.size(), 8u);
    ASSERT_TRUE(validate_profile_for_pipeline(profile, 4, false).ok());
    pipeline::PipelineSpec spec;
    spec.num_gpus = 4;
    spec.num_microbatches = 4;
    frontier::PlanningSettings settings;
    settings.p_blocking_w = gpu.p_blocking_w;
    auto problem = frontier::build_planning_problem(profile, spec, settings);
    ASSERT_TRUE(problem.ok()) << gpu.name << ": " << problem.error().message;
    const frontier::Frontier frontier = frontier::solve_frontier(*problem);
    EXPECT_GT(frontier.points.size(), 2u) << gpu.name;
    EXPECT_LT(frontier.points.back().energy_j * 0.0 + frontier.points.back().time_units,
              frontier.points.front().time_units);
  }
}

}  // namespace
}  // namespace powertrain::profile
