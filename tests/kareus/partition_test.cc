// Partitions from the job model (Kareus §4.2, §4.5).
#include "kareus/partition.h"

#include <gtest/gtest.h>

#include "kareus/job_run.h"
#include "profile/model_profile.h"

namespace powertrain::kareus {
namespace {

profile::ModelJob llama_job(bool sequence_parallel) {
  profile::ModelJobRequest r = JobRunSettings::default_job_request();
  r.sequence_parallel = sequence_parallel;
  auto job = profile::build_model_job(r);
  EXPECT_TRUE(job.ok());
  return *job;
}

struct Totals {
  double flops = 0.0, link = 0.0;
};

Totals totals(const MicrobatchWork& mb) {
  Totals t;
  for (const PartitionType& p : mb.partitions) {
    for (const Kernel& k : p.compute) t.flops += p.count * k.work.flops;
    t.link += p.count * p.comm.work.link_bytes;
  }
  for (const Kernel& k : mb.solo) t.flops += k.work.flops, t.link += k.work.link_bytes;
  return t;
}

TEST(KareusPartition, TensorParallelLayersShareTwoPartitionTypesAndConserveWork) {
  const profile::ModelJob job = llama_job(false);
  for (int backward = 0; backward < 2; ++backward) {
    const auto& ops = backward ? job.stages[1].backward : job.stages[1].forward;
    const MicrobatchWork mb = build_microbatch_work(ops, backward, 8);
    // Two nanobatches of half the work each: every FLOP and link byte is run exactly once.
    EXPECT_NEAR(totals(mb).flops, workload::total_flops(ops), 1e-6 * workload::total_flops(ops));
    EXPECT_NEAR(totals(mb).link, workload::total_link_bytes(ops),
                1e-6 * workload::total_link_bytes(ops));
    // 14 layers on stage 1: the attention and MLP partitions of all layers but the edges are two
    // types occurring about twice per layer (once per nanobatch).
    int repeated = 0;
    for (const PartitionType& p : mb.partitions) {
      if (p.count >= 2 * 14 - 4) ++repeated;
      EXPECT_EQ(p.group_size, 8);
      EXPECT_EQ(p.backward, backward == 1);
      EXPECT_EQ(p.comm.work.kind, device::WorkKind::kCollective);
      for (std::size_t i = 1; i < p.compute.size(); ++i)  // memory-bound runs are merged
        EXPECT_FALSE(p.compute[i].work.kind == device::WorkKind::kMemoryBound &&
                     p.compute[i - 1].work.kind == device::WorkKind::kMemoryBound)
            << p.name;
    }
    EXPECT_EQ(repeated, 2) << (backward ? "backward" : "forward");
  }
}

TEST(KareusPartition, ForwardAttentionPartitionHasTheFigureThreeKernels) {
  const profile::ModelJob job = llama_job(false);
  const MicrobatchWork mb = build_microbatch_work(job.stages[1].forward, false, 8);
  const PartitionType* attention = nullptr;
  for (const PartitionType& p : mb.partitions)
    if (p.count > 10 && p.compute.size() == 5 && p.compute[3].name == "attention") attention = &p;
  ASSERT_NE(attention, nullptr);
  EXPECT_EQ(attention->compute[0].name, "mlp_residual+input_norm");
  EXPECT_EQ(attention->compute[1].name, "qkv_proj");
  EXPECT_EQ(attention->compute[2].name, "rotary_embedding");
  EXPECT_EQ(attention->compute[4].name, "out_proj");
  EXPECT_EQ(attention->comm.name, "mlp_all_reduce");
  // Nanobatch = half the microbatch.
  double full_qkv = 0.0;
  for (const auto& op : job.stages[1].forward)
    if (op.name == "qkv_proj") full_qkv = op.work.flops;
  EXPECT_DOUBLE_EQ(attention->compute[1].work.flops, 0.5 * full_qkv);
}

TEST(KareusPartition, SequenceParallelCollectivesArePartitionsToo) {
  const profile::ModelJob job = llama_job(true);
  const MicrobatchWork mb = build_microbatch_work(job.stages[1].forward, false, 8);
  bool gather = false, scatter = false;
  for (const PartitionType& p : mb.partitions) {
    gather |= p.comm.name.find("all_gather") != std::string::npos;
    scatter |= p.comm.name.find("reduce_scatter") != std::string::npos;
  }
  EXPECT_TRUE(gather);
  EXPECT_TRUE(scatter);
  EXPECT_NEAR(totals(mb).flops, workload::total_flops(job.stages[1].forward),
              1e-6 * workload::total_flops(job.stages[1].forward));
}

TEST(KareusPartition, NoCollectivesMeansNoPartitions) {
  std::vector<workload::Op> ops(2);
  ops[0].work.flops = 1e12;
  ops[1].work.kind = device::WorkKind::kMemoryBound;
  ops[1].work.memory_bytes = 1e9;
  const MicrobatchWork mb = build_microbatch_work(ops, false, 1);
  EXPECT_TRUE(mb.partitions.empty());
  ASSERT_EQ(mb.solo.size(), 4u);  // two nanobatches of two kernels
  EXPECT_DOUBLE_EQ(mb.solo[0].work.flops, 0.5e12);
}

}  // namespace
}  // namespace powertrain::kareus
