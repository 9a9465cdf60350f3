// Kareus on the paper's Table 3 workloads (modelled): the ordering of the five systems
// (must-show 2), MBO's efficiency per partition type (must-show 1, a subset; all types in
// bench/kareus_bench.cc), the memory model's OOM cells and the transcribed paper tables.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <string>

#include "kareus/paper_tables.h"
#include "kareus/systems.h"

namespace powertrain::kareus {
namespace {

profile::ModelJob table3_job(const Table3Workload& w) {
  auto job = build_table3_job(w);
  EXPECT_TRUE(job.ok()) << w.label() << ": " << (job.ok() ? "" : job.error().message);
  return *job;
}

TEST(KareusTable3, TwelveWorkloadsInThePapersOrder) {
  const auto all = table3_workloads();
  ASSERT_EQ(all.size(), 12u);
  EXPECT_EQ(all[0].label(), "llama3.2-3b TP8 8x4K");
  EXPECT_EQ(all[4].label(), "llama3.2-3b CP2+TP4 8x8K");
  EXPECT_EQ(all[kTable1Workload].label(), "qwen3-1.7b CP2+TP4 16x4K");  // Table 1, footnote 1
  for (const Table3Workload& w : all) {
    EXPECT_EQ(w.tp * w.cp, 8) << w.label();
    const profile::ModelJob job = table3_job(w);
    EXPECT_EQ(job.parallel.pp, 2);
    EXPECT_EQ(job.parallel.num_microbatches, 8);
    EXPECT_EQ(job.gpu.name, "a100-sxm");
  }
}

class KareusOrdering : public ::testing::TestWithParam<int> {};

// Must-show 2: on every Table 3 workload, Kareus's frontier dominates M+P and N+P and its fastest
// point is no slower and uses no more energy than Megatron-LM.
TEST_P(KareusOrdering, KareusDominatesPerseusBaselinesAndNeverLosesToMegatron) {
  const Table3Workload w = table3_workloads()[static_cast<std::size_t>(GetParam())];
  const profile::ModelJob job = table3_job(w);
  auto r = run_systems(job, 8, {}, nullptr);
  ASSERT_TRUE(r.ok()) << r.error().message;
  const auto& s = r->systems;
  EXPECT_EQ(r->gpus, 16LL);
  EXPECT_TRUE(frontier_dominates(s[kKareus], s[kMegatronPerseus], 1e-9)) << w.label();
  EXPECT_TRUE(frontier_dominates(s[kKareus], s[kNanobatchingPerseus], 1e-9)) << w.label();
  const auto [kt, ke] = fastest_point(s[kKareus]);
  const auto [mt, me] = fastest_point(s[kMegatron]);
  EXPECT_LE(kt, mt * (1 + 1e-9)) << w.label();
  EXPECT_LE(ke, me * (1 + 1e-9)) << w.label();
  // The Perseus baselines' fastest points are Megatron-LM's and Nanobatching's own time.
  EXPECT_NEAR(fastest_point(s[kMegatronPerseus]).first, mt, 1e-3 * mt);
  // Iso metrics exist for Kareus (its frontier reaches M+P's fastest time and least energy).
  const FrontierImprovement f = frontier_improvement(s[kMegatronPerseus], s[kKareus]);
  ASSERT_TRUE(f.iso_time_energy_reduction_pct.has_value());
  ASSERT_TRUE(f.iso_energy_time_reduction_pct.has_value());
  EXPECT_GE(*f.iso_time_energy_reduction_pct, 0.0);
  EXPECT_GE(*f.iso_energy_time_reduction_pct, 0.0);
}

INSTANTIATE_TEST_SUITE_P(Table3, KareusOrdering, ::testing::Range(0, 12),
                         [](const ::testing::TestParamInfo<int>& info) {
                           std::string name =
                               table3_workloads()[static_cast<std::size_t>(info.param)].label();
                           for (char& c : name)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return name;
                         });

// Must-show 1 on a representative subset (every distinct partition type of one TP 8 and one
// CP 2 + TP 4 workload: attention/MLP all-reduces, K/V all-gathers and reduce-scatters, edge
// layers), seeds 1-3 each; bench/kareus_bench.cc runs all 12 workloads' types.
TEST(KareusTable3, MboReachesNinetyNinePercentOfExhaustiveHypervolumeOnTenPercent) {
  const ConcurrencyParams params;
  int types = 0;
  for (int index : {0, 9}) {
    const Table3Workload w = table3_workloads()[static_cast<std::size_t>(index)];
    const profile::ModelJob job = table3_job(w);
    for (const PartitionType& p : unique_partition_types(job)) {
      const SearchSpace space = global_search_space(job.gpu, p);
      const std::vector<Evaluated> all = exhaustive(job.gpu, params, p, space);
      // Every seed on its own (no median): ≥ 99 % of the exhaustive hypervolume, ≤ 10 % of the
      // space evaluated.
      for (std::uint64_t seed = 1; seed <= 3; ++seed) {
        auto mbo = run_mbo(job.gpu, params, p, space, app_c_options(p, seed));
        ASSERT_TRUE(mbo.ok()) << mbo.error().message;
        const double fraction = double(mbo->evaluated.size()) / double(space.size());
        EXPECT_LE(fraction, 0.10) << w.label() << ": " << p.name << " seed " << seed;
        EXPECT_GE(hypervolume_ratio(mbo->evaluated, all), 0.99)
            << w.label() << ": " << p.name << " seed " << seed << " (" << mbo->evaluated.size()
            << " of " << space.size() << ")";
      }
      ++types;
    }
  }
  EXPECT_GE(types, 10);
}

// The testbed's A100 SXM4 40 GB runs at its 400 W limit, not the catalog's 500 W (the HGX system
// the calibration was measured on): the same kernels at 1,410 MHz average ≤ 400 W on the testbed
// job, where the catalog GPU draws more than 400 W, so the limit binds (clock throttled).
TEST(KareusTable3, TestbedPowerLimitBindsAtTheTopClock) {
  const Table3Workload w = table3_workloads()[kTable1Workload];
  const profile::ModelJob job = table3_job(w);
  const device::GpuSpec catalog = *device::find_gpu("a100-sxm");
  EXPECT_EQ(job.gpu.dvfs.power_limit_w, kTable3PowerLimitW);
  EXPECT_EQ(catalog.dvfs.power_limit_w, 500.0);
  const ConcurrencyParams params;
  const std::vector<PartitionType> types = unique_partition_types(job);
  ASSERT_FALSE(types.empty());
  const std::vector<Kernel>& kernels = types.front().compute;
  const Cost testbed = evaluate_solo(job.gpu, params, kernels, 1410);
  const Cost hgx = evaluate_solo(catalog, params, kernels, 1410);
  EXPECT_LE(testbed.energy_j / testbed.time_s, 400.0 + 1e-6);
  EXPECT_GT(hgx.energy_j / hgx.time_s, 400.0);
  // Throttled below 1,410 MHz (these kernels are memory-bound: their time barely moves).
  EXPECT_TRUE(testbed.power_capped);
  EXPECT_LT(testbed.effective_clock_mhz, 1410.0);
  EXPECT_GE(testbed.time_s, hgx.time_s);
}

// The paper trains with activation checkpointing on 40 GB A100s and marks Llama 3.2 3B TP8 8×8K
// and 16×4K OOM. Our model with full recomputation fits all 12 (it disagrees on those two);
// without it, those two are the largest by far, the ordering the paper's OOM cells imply.
TEST(KareusTable3, MemoryModelOnTheTestbed) {
  double largest_other = 0.0, smallest_paper_oom = 1e300;
  for (std::size_t i = 0; i < 12; ++i) {
    const Table3Workload w = table3_workloads()[i];
    const profile::ModelJob job = table3_job(w);
    auto with = table3_memory(job, true);
    auto without = table3_memory(job, false);
    ASSERT_TRUE(with.ok() && without.ok());
    EXPECT_TRUE(with->fits) << w.label() << ": " << with->verdict;
    const double need = without->stages[static_cast<std::size_t>(without->peak_stage)].total_bytes;
    if (kPaperTable4[i].oom) {
      smallest_paper_oom = std::min(smallest_paper_oom, need);
    } else {
      largest_other = std::max(largest_other, need);
    }
  }
  EXPECT_GT(smallest_paper_oom, 1.2 * largest_other);
}

TEST(KareusTable3, PaperTablesAreTranscribedConsistently) {
  // Table 1: static + dynamic = total (to rounding); static = 16 GPUs × ~60 W × time.
  for (const PaperTable1Row& r : kPaperTable1) {
    EXPECT_NEAR(r.static_j + r.dynamic_j, r.total_j, 1.0);
    EXPECT_NEAR(r.static_j / (16.0 * r.time_s), 60.0, 0.5);
  }
  // Table 5's headline maximum (§6.2.2: 28.3 % iso-time energy reduction) is Kareus's.
  double best = 0.0;
  for (const auto& row : kPaperTable5)
    if (std::isfinite(row[1])) best = std::max(best, row[1]);
  EXPECT_DOUBLE_EQ(best, 28.3);
  // §6.2.1: up to 14.9 % time and 22.1 % energy reduction; our copy's rows must not exceed them.
  for (const PaperTable4Row& r : kPaperTable4) {
    if (std::isfinite(r.time_reduction_pct[2])) {
      EXPECT_LE(r.time_reduction_pct[2], 14.9);
    }
    if (std::isfinite(r.energy_reduction_pct[2])) {
      EXPECT_LE(r.energy_reduction_pct[2], 22.1);
    }
  }
  EXPECT_TRUE(kPaperTable4[1].oom && kPaperTable4[2].oom);
}

}  // namespace
}  // namespace powertrain::kareus
