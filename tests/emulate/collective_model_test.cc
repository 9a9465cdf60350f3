// The NCCL collective model against published nccl-tests numbers (8×H100 SXM, 8×A100 SXM) and
// against NCCL's own tuning formulas worked by hand. Sources are in docs/emulate.md.
#include "emulate/collective_model.h"

#include <gtest/gtest.h>

#include <cmath>

#include "device/gpu.h"
#include "emulate/estimators.h"

namespace powertrain::emulate {
namespace {

const device::GpuSpec& gpu(const char* name) {
  static const device::GpuSpec h100 = *device::find_gpu("h100");
  static const device::GpuSpec a100 = *device::find_gpu("a100-sxm");
  static const device::GpuSpec v100 = *device::find_gpu("v100");
  static const device::GpuSpec a40 = *device::find_gpu("a40");
  const std::string_view n(name);
  if (n == "h100") return h100;
  if (n == "a100") return a100;
  if (n == "v100") return v100;
  return a40;
}

CollectiveTiming run(const char* g, Collective kind, double bytes, int ranks, int nodes = 1) {
  CollectiveQuery q;
  q.kind = kind;
  q.bytes = bytes;
  q.ranks = ranks;
  q.nodes = nodes;
  return model_collective(q, fabric_of(gpu(g)));
}

constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kGiB = 1024.0 * kMiB;

// nccl-tests#212 / nccl#1442 (sjeaugey): 8×H100 SXM all-reduce peaks at ~480 GB/s busbw (NVLS,
// algbw ~275); 256 MB is below the peak; public 8×H100 runs report 450–480 at 256 MB–8 GB.
TEST(CollectiveModel, H100EightGpuAllReduceMatchesPublishedNvlsBusBandwidth) {
  for (const double bytes : {256 * kMiB, 1 * kGiB, 2 * kGiB, 4 * kGiB, 8 * kGiB}) {
    const CollectiveTiming t = run("h100", Collective::kAllReduce, bytes, 8);
    EXPECT_EQ(t.algorithm, CollAlgorithm::kNvls) << bytes;
    EXPECT_GE(t.bus_bw_gb_s, 450.0) << bytes;
    EXPECT_LE(t.bus_bw_gb_s, 490.0) << bytes;
  }
  // Hand: 23 µs + 8 GiB / 273 GB/s; busbw = algbw × 2 × 7 / 8.
  const CollectiveTiming big = run("h100", Collective::kAllReduce, 8 * kGiB, 8);
  const double s = 23e-6 + 8 * kGiB / 273e9;
  EXPECT_NEAR(big.seconds, s, 1e-12);
  EXPECT_NEAR(big.bus_bw_gb_s, 8 * kGiB / s / 1e9 * 1.75, 1e-9);
  EXPECT_NEAR(big.bus_bw_gb_s, 480.0, 0.03 * 480.0);
  // The case: 256 MB on 8 H100s was 1,501 µs (313 GB/s); now ≈ 1,006 µs.
  const CollectiveTiming mid = run("h100", Collective::kAllReduce, 256 * kMiB, 8);
  EXPECT_NEAR(mid.seconds, 23e-6 + 256 * kMiB / 273e9, 1e-12);
}

// nccl#1455: NVLS busbw 420/440/460/480 at 5/6/7/8 GPUs, ring-like ~370 at 2–4 GPUs.
TEST(CollectiveModel, NvlsGainGrowsWithGpuCountAsPublished) {
  const double published[9] = {0, 0, 370, 370, 370, 420, 440, 460, 480};
  for (int n = 2; n <= 8; ++n) {
    const CollectiveTiming t = run("h100", Collective::kAllReduce, 4 * kGiB, n);
    EXPECT_NEAR(t.bus_bw_gb_s, published[n], 0.05 * published[n]) << n << " GPUs";
    EXPECT_EQ(t.algorithm, n >= 5 ? CollAlgorithm::kNvls : CollAlgorithm::kRing) << n;
  }
}

// Operations other than all-reduce run on rings: ~370 GB/s busbw on H100 (nccl-tests#212).
TEST(CollectiveModel, H100RingCollectivesReachTheEffectiveNvlinkBandwidth) {
  for (const Collective kind : {Collective::kAllGather, Collective::kReduceScatter}) {
    const CollectiveTiming t = run("h100", kind, 1 * kGiB, 8);  // 1 GiB per rank, 8 GiB buffer
    EXPECT_EQ(t.algorithm, CollAlgorithm::kRing);
    EXPECT_EQ(t.protocol, CollProtocol::kSimple);
    EXPECT_NEAR(t.bus_bw_gb_s, 370.0, 0.02 * 370.0);
    // Hand: 8.4 + 7 × 3.4 µs + 8 GiB / (370.8 × 8 / 7 GB/s).
    EXPECT_NEAR(t.seconds, (8.4 + 7 * 3.4) * 1e-6 + 8 * kGiB / (370.8e9 * 8.0 / 7.0), 1e-9);
  }
}

// Published 8×A100 SXM all-reduce busbw ≈ 230 GB/s (NCCL caps SM80 at 235).
TEST(CollectiveModel, A100EightGpuAllReduceMatchesPublishedRingBusBandwidth) {
  const CollectiveTiming t = run("a100", Collective::kAllReduce, 8 * kGiB, 8);
  EXPECT_EQ(t.algorithm, CollAlgorithm::kRing);
  EXPECT_NEAR(t.bus_bw_gb_s, 230.0, 0.05 * 230.0);
}

// Small sizes are latency-bound: NCCL's LL protocol, 6.6 + nsteps × 0.6 µs on NVLink.
TEST(CollectiveModel, SmallSizesAreLatencyBoundOnLl) {
  const CollectiveTiming h = run("h100", Collective::kAllReduce, 8, 8);
  EXPECT_EQ(h.algorithm, CollAlgorithm::kRing);
  EXPECT_EQ(h.protocol, CollProtocol::kLL);
  EXPECT_NEAR(h.seconds, (6.6 + 14 * 0.6) * 1e-6 + 8 / (87.7e9 * 8 / 14), 1e-12);
  // Size does not matter below a few KB: 8 B and 4 KB within 10 %.
  EXPECT_LT(run("h100", Collective::kAllReduce, 4096, 8).seconds, 1.1 * h.seconds);
  // nccl#583: 2×A100 SXM all-reduce of 32 B in 10.14 µs (nccl-tests, which also counts the
  // kernel launch the emulator charges separately): ours within 25 %.
  const CollectiveTiming a = run("a100", Collective::kAllReduce, 32, 2);
  EXPECT_NEAR(a.seconds, 10.14e-6, 0.25 * 10.14e-6);
  // The busbw of latency-bound sizes is tiny, as nccl-tests prints it.
  EXPECT_LT(h.bus_bw_gb_s, 0.01);
}

TEST(CollectiveModel, ProtocolChangesWithSizeAndTimeIsMonotonic) {
  double last = 0.0;
  bool saw_ll = false, saw_nvls = false;
  for (double bytes = 8; bytes <= 8 * kGiB; bytes *= 2) {
    const CollectiveTiming t = run("h100", Collective::kAllReduce, bytes, 8);
    EXPECT_GE(t.seconds, last) << bytes;
    last = t.seconds;
    saw_ll |= t.protocol == CollProtocol::kLL;
    saw_nvls |= t.algorithm == CollAlgorithm::kNvls;
  }
  EXPECT_TRUE(saw_ll);
  EXPECT_TRUE(saw_nvls);
}

TEST(CollectiveModel, AcrossNodesTheNetworkBoundsTheRingAndTreesShortenLatency) {
  // 2 × 8 GPUs with 50 GB/s per GPU: the node's 400 GB/s of NICs leave NVLink's 370 binding.
  const CollectiveTiming two = run("h100", Collective::kAllReduce, 8 * kGiB, 16, 2);
  EXPECT_NE(two.algorithm, CollAlgorithm::kNvls);
  EXPECT_NEAR(two.bus_bw_gb_s, 370.0, 0.03 * 370.0);
  // One GPU per node: the NIC (50 GB/s) is the ring's bandwidth.
  const CollectiveTiming thin = run("h100", Collective::kAllReduce, 8 * kGiB, 4, 4);
  EXPECT_NEAR(thin.bus_bw_gb_s, 50.0, 0.02 * 50.0);
  // Small sizes across many nodes: the tree's log2 latency beats the ring's linear one.
  const CollectiveTiming small = run("h100", Collective::kAllReduce, 64, 128, 16);
  EXPECT_EQ(small.algorithm, CollAlgorithm::kTree);
  // A send across nodes goes through one NIC.
  const CollectiveTiming send = run("h100", Collective::kSend, 1 * kGiB, 2, 2);
  EXPECT_NEAR(1 * kGiB / send.seconds / 1e9, 50.0, 0.01 * 50.0);
}

TEST(CollectiveModel, DegenerateQueriesTakeNoTime) {
  EXPECT_EQ(run("h100", Collective::kAllReduce, 1 * kGiB, 1).seconds, 0.0);
  EXPECT_EQ(run("h100", Collective::kAllReduce, 0, 8).seconds, 0.0);
  EXPECT_EQ(run("h100", Collective::kAllReduce, std::nan(""), 8).seconds, 0.0);
  // Huge communicators and node counts stay finite.
  EXPECT_TRUE(std::isfinite(run("a40", Collective::kAllToAll, 1e15, 1 << 20, 1 << 17).seconds));
  EXPECT_TRUE(std::isfinite(run("v100", Collective::kBroadcast, 1e6, 1 << 20, 0).seconds));
}

TEST(CollectiveModel, EstimatorUsesTheModelWithTheKernelFloor) {
  const DeviceModelEstimator model;
  Record r;
  r.op = OpKind::kNccl;
  r.collective = Collective::kAllReduce;
  r.bytes = 256 * 1024 * 1024;
  KernelQuery q;
  q.record = &r;
  q.group_size = 8;
  const auto e = model.estimate(q, gpu("h100"));
  ASSERT_TRUE(e.has_value());
  EXPECT_NEAR(e->seconds, run("h100", Collective::kAllReduce, r.bytes, 8).seconds, 1e-15);
  EXPECT_DOUBLE_EQ(e->work.link_bytes, 2.0 * 7 / 8 * r.bytes);
  q.spans_nodes = true;
  q.group_size = 16;
  const auto across = model.estimate(q, gpu("h100"));
  ASSERT_TRUE(across.has_value());
  EXPECT_NEAR(across->seconds, run("h100", Collective::kAllReduce, r.bytes, 16, 2).seconds, 1e-15);
  q.group_size = 1;
  EXPECT_DOUBLE_EQ(model.estimate(q, gpu("h100"))->seconds, 3e-6);
}

}  // namespace
}  // namespace powertrain::emulate
