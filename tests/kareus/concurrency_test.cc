// The concurrency model against hand computation and Kareus Table 2's observations.
#include "kareus/concurrency.h"

#include <gtest/gtest.h>

#include <cmath>

#include "kareus/search.h"

namespace powertrain::kareus {
namespace {

device::GpuSpec a100() {
  auto gpu = device::find_gpu("a100-sxm");
  EXPECT_TRUE(gpu.ok());
  return *gpu;
}

Kernel matmul(double flops) {
  Kernel k{"gemm", {}};
  k.work.kind = device::WorkKind::kMatmul;
  k.work.flops = flops;
  return k;
}
Kernel memory(double bytes) {
  Kernel k{"norm", {}};
  k.work.kind = device::WorkKind::kMemoryBound;
  k.work.memory_bytes = bytes;
  return k;
}
Kernel collective(double link_bytes, double memory_bytes) {
  Kernel k{"all_reduce", {}};
  k.work.kind = device::WorkKind::kCollective;
  k.work.link_bytes = link_bytes;
  k.work.memory_bytes = memory_bytes;
  return k;
}

TEST(KareusConcurrency, ComputeBoundKernelWithCollectiveOnKSms) {
  device::GpuSpec gpu = a100();
  gpu.dvfs.link_latency_s = 0.0;
  gpu.dvfs.power_limit_w = 1e6;
  ConcurrencyParams params;
  params.kernel_size_effects = false;  // the roofline terms alone (kernel_size_test.cc: the rest)
  PartitionType p;
  p.compute = {matmul(100e12)};    // alone: 100e12 / (312e12 × eff) s
  p.comm = collective(40e6, 0.0);  // no HBM traffic: only SMs are shared
  const int k = 12;
  const double n = gpu.sm_count;
  const double t0 = 100e12 / (312e12 * gpu.dvfs.matmul_efficiency);
  const double link = gpu.link_bandwidth_gb_s * 1e9 * gpu.dvfs.link_efficiency;
  const double rate = link * (1.0 - std::exp(-k * 12e9 / link));
  EXPECT_NEAR(comm_rate_bytes_s(gpu, params, p.comm.work, k), rate, 1.0);
  const double t_comm = 40e6 / rate;
  ASSERT_LT(t_comm, t0);
  // While the collective runs the GEMM gets (N−k)/N of the SMs: total = t0 + t_comm × k/N.
  const Cost c = evaluate_partition(gpu, params, p, {gpu.max_clock_mhz(), k, 0});
  EXPECT_NEAR(c.time_s, t0 + t_comm * k / n, 1e-9);
  EXPECT_DOUBLE_EQ(c.exposed_comm_s, 0.0);
  const double pd = gpu.dvfs.dynamic_power_w, ps = gpu.dvfs.static_power_w;
  const double overlap_w = ps + pd * ((n - k) / n + gpu.dvfs.collective_activity * rate / link);
  EXPECT_NEAR(c.energy_j, t_comm * overlap_w + (c.time_s - t_comm) * (ps + pd), 1e-6);
  EXPECT_NEAR(c.static_j, ps * c.time_s, 1e-9);
  // At half the clock the GEMM takes twice as long; the collective does not slow down.
  const Cost slow = evaluate_partition(gpu, params, p, {gpu.max_clock_mhz() / 2, k, 0});
  EXPECT_NEAR(slow.time_s, 2.0 * t0 + t_comm * k / n, 1e-6);
}

TEST(KareusConcurrency, MemoryBoundKernelSharesHbmBandwidthFairly) {
  device::GpuSpec gpu = a100();
  gpu.dvfs.link_latency_s = 0.0;
  gpu.dvfs.power_limit_w = 1e6;
  ConcurrencyParams params;
  params.kernel_size_effects = false;
  params.comm_memory_amplification = 1.0;
  PartitionType p;
  p.compute = {memory(1e9)};
  const double link_bytes = 10e6;
  p.comm = collective(link_bytes, 5 * link_bytes);  // wants 5 HBM bytes per link byte
  const int k = 30;
  const double rate = comm_rate_bytes_s(gpu, params, p.comm.work, k);
  const double bw = gpu.memory_bandwidth_gb_s * 1e9 * gpu.dvfs.memory_efficiency;
  const double want = 5 * rate;
  ASSERT_LT(want, bw / 2);  // the collective is satisfied; the norm gets the rest
  const double t_comm = link_bytes / rate;
  const double norm_during = t_comm * (bw - want);  // bytes the norm moves meanwhile
  const double expected = t_comm + (1e9 - norm_during) / bw;
  const Cost c = evaluate_partition(gpu, params, p, {gpu.max_clock_mhz(), k, 0});
  EXPECT_NEAR(c.time_s, expected, 1e-9);
  // Both demands above half: each gets half the bandwidth.
  p.comm = collective(0.1 * link_bytes, 20 * link_bytes);
  const Cost half = evaluate_partition(gpu, params, p, {gpu.max_clock_mhz(), k, 0});
  const double comm_half = 0.1 * link_bytes / (rate * (bw / 2) / (200 * rate));
  ASSERT_LT(comm_half, 1e9 / (bw / 2));
  EXPECT_NEAR(half.time_s, comm_half + (1e9 - comm_half * bw / 2) / bw, 1e-9);
}

TEST(KareusConcurrency, PowerCapThrottlesTheClock) {
  device::GpuSpec gpu = a100();
  const ConcurrencyParams params;
  PartitionType p;
  p.compute = {matmul(50e12), memory(2e9)};
  p.comm = collective(100e6, 200e6);
  const Schedule s{gpu.max_clock_mhz(), 12, 0};
  gpu.dvfs.power_limit_w = 1e6;
  const Cost free = evaluate_partition(gpu, params, p, s);
  EXPECT_FALSE(free.power_capped);
  gpu.dvfs.power_limit_w = 0.8 * free.energy_j / free.time_s;
  const Cost capped = evaluate_partition(gpu, params, p, s);
  EXPECT_TRUE(capped.power_capped);
  EXPECT_LT(capped.effective_clock_mhz, gpu.max_clock_mhz());
  EXPECT_NEAR(capped.energy_j / capped.time_s, gpu.dvfs.power_limit_w, 1.0);
  EXPECT_GT(capped.time_s, free.time_s);
}

TEST(KareusConcurrency, SoloKernelsMatchTheDeviceModel) {
  const device::GpuSpec gpu = a100();
  ConcurrencyParams params;
  params.kernel_size_effects = false;  // the device model's plain roofline
  std::vector<Kernel> kernels = {matmul(30e12), memory(3e9)};
  std::vector<workload::Op> ops;
  for (const Kernel& k : kernels) ops.push_back({k.name, k.work});
  for (int f : {1410, 1200, 900}) {
    const Cost a = evaluate_solo(gpu, params, kernels, f);
    const Cost b = sequential_cost(gpu, params, ops, f);
    EXPECT_NEAR(a.time_s, b.time_s, 1e-9 * b.time_s) << f;
    EXPECT_NEAR(a.energy_j, b.energy_j, 1e-6 * b.energy_j) << f;
  }
}

// Table 2, on a Figure 3-like partition: a memory-bound norm, then GEMM, rotary (memory-bound),
// attention and GEMM, with an all-reduce from the other nanobatch.
PartitionType figure3_partition() {
  PartitionType p;
  Kernel rope = memory(0.1e9);
  rope.name = "rope";
  Kernel attention = matmul(60e9);
  attention.work.kind = device::WorkKind::kAttention;
  attention.name = "attention";
  p.compute = {memory(0.4e9), matmul(60e9), rope, attention, matmul(40e9)};
  p.comm = collective(80e6, 180e6);
  p.group_size = 4;
  return p;
}

TEST(KareusConcurrency, TableTwoSweetSpotInCommSmsMovesWithClock) {
  const device::GpuSpec gpu = a100();
  const ConcurrencyParams params;
  const PartitionType p = figure3_partition();
  auto best_k = [&](int clock) {
    int best = 0;
    double best_e = 1e300;
    for (int k = 1; k <= 40; ++k) {
      const double e = evaluate_partition(gpu, params, p, {clock, k, 1}).energy_j;
      if (e < best_e) best_e = e, best = k;
    }
    return best;
  };
  const int high = best_k(1410), low = best_k(900);
  // A middle-ground sweet spot: more than a couple of SMs, fewer than the range's end.
  EXPECT_GT(high, 2);
  EXPECT_LT(high, 40);
  const double at_best = evaluate_partition(gpu, params, p, {1410, high, 1}).energy_j;
  EXPECT_LT(at_best, evaluate_partition(gpu, params, p, {1410, 2, 1}).energy_j);
  EXPECT_LT(at_best, evaluate_partition(gpu, params, p, {1410, 40, 1}).energy_j);
  // Longer compute at a lower clock: fewer SMs suffice to hide the collective.
  EXPECT_LT(low, high);
}

TEST(KareusConcurrency, TableTwoOverlappingMemoryBoundKernelCanHurt) {
  const device::GpuSpec gpu = a100();
  const ConcurrencyParams params;
  const PartitionType p = figure3_partition();
  // Launching with the norm makes both fight for HBM; launching with the GEMM does not.
  const int k = 12;
  const Cost with_norm = evaluate_partition(gpu, params, p, {1410, k, 0});
  const Cost with_gemm = evaluate_partition(gpu, params, p, {1410, k, 1});
  EXPECT_GT(with_norm.time_s, with_gemm.time_s);
  EXPECT_GT(with_norm.energy_j, with_gemm.energy_j);
}

TEST(KareusConcurrency, TableTwoLowerClockShiftsTheEnergyOptimalSchedule) {
  const device::GpuSpec gpu = a100();
  const ConcurrencyParams params;
  const PartitionType p = figure3_partition();
  auto best = [&](int clock) {
    Schedule arg;
    double best_e = 1e300;
    for (int slot = 0; slot < 5; ++slot)
      for (int k = 1; k <= 30; ++k) {
        const double e = evaluate_partition(gpu, params, p, {clock, k, slot}).energy_j;
        if (e < best_e) best_e = e, arg = {clock, k, slot};
      }
    return arg;
  };
  const Schedule high = best(1410), low = best(1005);
  EXPECT_TRUE(high.comm_sms != low.comm_sms || high.launch_slot != low.launch_slot);
  // The high clock's optimum is worse than the low clock's own optimum at the low clock.
  const double reused =
      evaluate_partition(gpu, params, p, {1005, high.comm_sms, high.launch_slot}).energy_j;
  EXPECT_GT(reused, evaluate_partition(gpu, params, p, low).energy_j);
}

}  // namespace
}  // namespace powertrain::kareus
