// Modelled replay energy: kernel classes and the static/dynamic split on a hand-computed case.
#include "sim/energy.h"

#include <gtest/gtest.h>

#include "graph/graph_builder.h"
#include "graph/trace_builder.h"

namespace powertrain::sim {
namespace {

using graph::TaskKind;

TEST(KernelClass, MapsToTheDeviceModelsWorkKind) {
  EXPECT_EQ(work_kind(KernelClass::kMatmul), device::WorkKind::kMatmul);
  EXPECT_EQ(work_kind(KernelClass::kMemory), device::WorkKind::kMemoryBound);
  EXPECT_EQ(work_kind(KernelClass::kCollective), device::WorkKind::kCollective);
}

TEST(KernelClass, NameRules) {
  EXPECT_EQ(classify_kernel("volta_sgemm_64x64_nt", TaskKind::kKernel, false),
            KernelClass::kMatmul);
  EXPECT_EQ(
      classify_kernel("nvjet_tst_64x64_64x16_2x1_2cta_v_bz_bias_TNT", TaskKind::kKernel, false),
      KernelClass::kMatmul);
  EXPECT_EQ(classify_kernel("fmhaSm100aKernel_QkvE4m3OBfloat16H64", TaskKind::kKernel, false),
            KernelClass::kMatmul);
  EXPECT_EQ(classify_kernel("cudnn_volta_scudnn_winograd_128x128", TaskKind::kKernel, false),
            KernelClass::kMatmul);
  EXPECT_EQ(classify_kernel("void at::native::vectorized_elementwise_kernel<4>", TaskKind::kKernel,
                            false),
            KernelClass::kMemory);
  EXPECT_EQ(classify_kernel("void cudnn::bn_fw_tr_1C11_kernel_NCHW", TaskKind::kKernel, false),
            KernelClass::kMemory);
  EXPECT_EQ(classify_kernel("Memcpy HtoD (Pageable -> Device)", TaskKind::kMemcpy, false),
            KernelClass::kMemory);
  EXPECT_EQ(classify_kernel("sgemm", TaskKind::kMemset, false), KernelClass::kMemory);
  EXPECT_EQ(classify_kernel("ncclKernel_AllReduce_RING_LL_Sum_float", TaskKind::kKernel, false),
            KernelClass::kCollective);
  EXPECT_EQ(classify_kernel("anything", TaskKind::kKernel, true), KernelClass::kCollective);
}

TEST(ReplayEnergy, StaticAndDynamicSplitOnAHandComputedStep) {
  // One 1 ms step: a 0.4 ms GEMM, a 0.2 ms copy and a 0.3 ms all-reduce overlapping the GEMM.
  graph::RankTraceBuilder b;
  b.step(1, 0, 1'000'000);
  b.runtime("cudaLaunchKernel", 1'000, 1'000, 1).runtime("cudaMemcpyAsync", 3'000, 1'000, 2);
  b.runtime("cudaLaunchKernel", 5'000, 1'000, 3).op("idle", 990'000, 10'000);
  b.kernel("ampere_sgemm_128x64_nn", 10'000, 400'000, 1);
  b.gpu(trace::EventKind::kGpuMemcpy, "Memcpy DtoD", 410'000, 200'000, 2);
  b.nccl_kernel("ncclDevKernel_AllReduce_RING_LL", 100'000, 300'000, 3, 20);
  auto graph = graph::build_execution_graph({b.build()});
  ASSERT_TRUE(graph.ok());
  const ReplayResult r = replay(*graph);
  const StepMetrics m = metrics_of_replay(*graph, r);

  device::GpuSpec gpu = device::find_gpu("a100-sxm").value();
  gpu.dvfs.static_power_w = 100.0;
  gpu.dvfs.dynamic_power_w = 200.0;
  gpu.dvfs.memory_activity = 0.5;
  gpu.dvfs.collective_activity = 0.25;
  const EnergyReport e = replay_energy(*graph, r, m, gpu);
  EXPECT_EQ(e.basis, "modelled");
  EXPECT_EQ(e.clock_mhz, 1410.0);
  ASSERT_EQ(e.gpus.size(), 1u);
  const GpuEnergy& g = e.gpus[0];
  EXPECT_NEAR(g.window_s, 1e-3, 1e-15);
  EXPECT_NEAR(g.static_j, 100.0 * 1e-3, 1e-12);
  EXPECT_NEAR(g.dynamic_j_by_class[0], 200.0 * 1.0 * 0.4e-3, 1e-12);
  EXPECT_NEAR(g.dynamic_j_by_class[1], 200.0 * 0.5 * 0.2e-3, 1e-12);
  EXPECT_NEAR(g.dynamic_j_by_class[2], 200.0 * 0.25 * 0.3e-3, 1e-12);
  EXPECT_NEAR(g.dynamic_j, 0.115, 1e-12);
  EXPECT_NEAR(e.total_j, 0.215, 1e-12);
  EXPECT_NEAR(g.average_power_w, 215.0, 1e-9);
  EXPECT_FALSE(g.above_power_limit);

  // At a lower clock only the dynamic part shrinks, by (f/f_max) × v(f)².
  const EnergyReport low = replay_energy(*graph, r, m, gpu, 705.0);
  const double v = device::relative_voltage(gpu, gpu.dvfs, 705.0);
  EXPECT_NEAR(low.static_j, e.static_j, 1e-15);
  EXPECT_NEAR(low.dynamic_j, e.dynamic_j * 0.5 * v * v, 1e-12);

  // Per-task clocks (a program's NVML lock): only the GEMM at 705 MHz; the copy and the
  // all-reduce keep the default clock's dynamic power.
  std::vector<double> task_clock(static_cast<std::size_t>(graph->task_count()), 0.0);
  for (std::int32_t t = 0; t < graph->task_count(); ++t) {
    if (graph->task_name(t) == "ampere_sgemm_128x64_nn") task_clock[t] = 705.0;
  }
  const EnergyReport mixed = replay_energy(*graph, r, m, gpu, 0.0, task_clock);
  const GpuEnergy& mg = mixed.gpus[0];
  EXPECT_NEAR(mg.static_j, g.static_j, 1e-15);
  EXPECT_NEAR(mg.dynamic_j_by_class[0], g.dynamic_j_by_class[0] * 0.5 * v * v, 1e-12);
  EXPECT_NEAR(mg.dynamic_j_by_class[1], g.dynamic_j_by_class[1], 1e-15);
  EXPECT_NEAR(mg.dynamic_j_by_class[2], g.dynamic_j_by_class[2], 1e-15);
  EXPECT_NEAR(mg.busy_s[0], g.busy_s[0], 1e-15) << "time stays the replay's";

  // Default GPU: the catalog's a100-sxm.
  const EnergyReport a100 = replay_energy(*graph, r, m);
  EXPECT_EQ(a100.gpu, "a100-sxm");
  EXPECT_GT(a100.static_j, 0.0);
}

}  // namespace
}  // namespace powertrain::sim
