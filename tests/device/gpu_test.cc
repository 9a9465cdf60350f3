// The GPU catalog and the DVFS model's physical properties.
#include "device/gpu.h"

#include <gtest/gtest.h>

#include <vector>

namespace powertrain::device {
namespace {

// A GEMM-heavy transformer-like mix: mostly tensor-core work, some memory-bound and link time.
std::vector<Work> training_like_work() {
  return {{WorkKind::kMatmul, Precision::kBf16, 4e12, 2e9, 0.0},
          {WorkKind::kAttention, Precision::kBf16, 3e11, 1e8, 0.0},
          {WorkKind::kMemoryBound, Precision::kBf16, 0.0, 8e9, 0.0},
          {WorkKind::kCollective, Precision::kBf16, 0.0, 1e8, 2e8}};
}

TEST(GpuCatalog, HasTheSixGpusWithSourcesAndSaneNumbers) {
  const std::vector<std::string> expected = {"a100-sxm", "a100-pcie", "a40",
                                             "h100-sxm", "h200",      "v100"};
  ASSERT_EQ(gpu_catalog().size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const GpuSpec& gpu = gpu_catalog()[i];
    EXPECT_EQ(gpu.name, expected[i]);
    EXPECT_FALSE(gpu.sources.empty()) << gpu.name;
    EXPECT_GT(gpu.sm_count, 0) << gpu.name;
    EXPECT_GT(gpu.memory_bandwidth_gb_s, 0.0) << gpu.name;
    EXPECT_GT(gpu.tdp_w, gpu.idle_power_w) << gpu.name;
    EXPECT_GT(gpu.p_blocking_w, gpu.idle_power_w) << gpu.name;
    EXPECT_TRUE(std::is_sorted(gpu.clocks_mhz.begin(), gpu.clocks_mhz.end())) << gpu.name;
  }
  const GpuSpec a100 = *find_gpu("A100");
  EXPECT_EQ(a100.min_clock_mhz(), 210);
  EXPECT_EQ(a100.max_clock_mhz(), 1410);
  EXPECT_EQ(a100.clocks_mhz.size(), 81u);  // 210-1410 MHz in 15 MHz steps
  EXPECT_DOUBLE_EQ(a100.peak_tflops(Precision::kBf16), 312.0);
  EXPECT_EQ(find_gpu("v100")->peak_tflops(Precision::kBf16), 0.0);
}

TEST(GpuCatalog, SaysWhichGpusAreCalibrated) {
  for (const GpuSpec& gpu : gpu_catalog()) {
    const bool shipped = gpu.name == "a100-sxm" || gpu.name == "a40";
    EXPECT_EQ(gpu.calibrated, shipped) << gpu.name;
    EXPECT_NE(gpu.calibration.find(shipped ? "Perseus" : "spec-derived"), std::string::npos)
        << gpu.calibration;
  }
}

TEST(GpuCatalog, UnknownNameListsTheKnownOnes) {
  auto missing = find_gpu("b200");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("unknown GPU 'b200'"), std::string::npos);
  for (const GpuSpec& gpu : gpu_catalog())
    EXPECT_NE(missing.error().message.find(gpu.name), std::string::npos);
}

TEST(DvfsModel, TimeFallsWithClockAndOnlyTheComputePartScales) {
  const GpuSpec gpu = *find_gpu("a100-sxm");
  const std::vector<Work> work = training_like_work();
  double previous = 1e300;
  for (int clock : gpu.clocks_mhz) {
    const double t = estimate_work(gpu, work, clock).time_s;
    EXPECT_LE(t, previous * (1 + 1e-12)) << clock;
    previous = t;
  }
  // Link-bound work does not care about the SM clock.
  const std::vector<Work> link_only = {{WorkKind::kCollective, Precision::kBf16, 0, 0, 1e9}};
  EXPECT_DOUBLE_EQ(estimate_work(gpu, link_only, 600).time_s,
                   estimate_work(gpu, link_only, 1410).time_s);
  // GEMM time is exactly ∝ 1/clock (compute bound) while the power limit is not reached.
  DvfsParams uncapped = gpu.dvfs;
  uncapped.power_limit_w = 1e6;
  const std::vector<Work> gemm = {{WorkKind::kMatmul, Precision::kBf16, 1e13, 0, 0}};
  EXPECT_NEAR(estimate_work(gpu, uncapped, gemm, 705).time_s /
                  estimate_work(gpu, uncapped, gemm, 1410).time_s,
              2.0, 1e-9);
}

TEST(DvfsModel, EnergyOptimalClockIsAboveTheLowestClockOnEveryGpu) {
  // Perseus footnote 4 / Kareus App. B: static power makes very low clocks waste energy.
  for (const GpuSpec& gpu : gpu_catalog()) {
    const std::vector<Work> work = training_like_work();
    int best_clock = 0;
    double best_energy = 1e300;
    for (int clock : gpu.clocks_mhz) {
      const double e = estimate_work(gpu, work, clock).energy_j;
      if (e < best_energy) {
        best_energy = e;
        best_clock = clock;
      }
    }
    EXPECT_GT(best_clock, gpu.min_clock_mhz()) << gpu.name;
    EXPECT_LT(best_clock, gpu.max_clock_mhz()) << gpu.name;
  }
}

TEST(DvfsModel, PowerCapThrottlesTheClockToTheLimit) {
  GpuSpec gpu = *find_gpu("a40");
  DvfsParams params = gpu.dvfs;
  params.power_limit_w = 200.0;
  const std::vector<Work> work = {{WorkKind::kMatmul, Precision::kBf16, 5e12, 0, 0}};
  const WorkEstimate capped = estimate_work(gpu, params, work, gpu.max_clock_mhz());
  EXPECT_TRUE(capped.power_capped);
  EXPECT_LT(capped.effective_clock_mhz, gpu.max_clock_mhz());
  EXPECT_NEAR(capped.average_power_w(), 200.0, 0.5);
  params.power_limit_w = 1e6;
  const WorkEstimate free = estimate_work(gpu, params, work, gpu.max_clock_mhz());
  EXPECT_FALSE(free.power_capped);
  EXPECT_LT(free.time_s, capped.time_s);
}

TEST(DvfsModel, VoltageIsOneAtTheTopClockAndNeverBelowItsMinimum) {
  const GpuSpec gpu = *find_gpu("h100-sxm");
  EXPECT_NEAR(relative_voltage(gpu, gpu.dvfs, gpu.max_clock_mhz()), 1.0, 1e-12);
  for (int clock : gpu.clocks_mhz) {
    EXPECT_GE(relative_voltage(gpu, gpu.dvfs, clock), gpu.dvfs.voltage_min - 1e-12);
  }
}

}  // namespace
}  // namespace powertrain::device
