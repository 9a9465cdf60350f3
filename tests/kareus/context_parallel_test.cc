// Context parallelism in the job model (Llama 3-style K/V all-gather) and as Kareus partitions.
#include <gtest/gtest.h>

#include <string>

#include "kareus/partition.h"
#include "profile/model_profile.h"

namespace powertrain::kareus {
namespace {

profile::ModelJob job_for(int tp, int cp, int microbatch, int seq_len) {
  profile::ModelJobRequest r;
  r.model = "llama3.2-3b";
  r.gpu = "a100-sxm";
  r.tp = tp;
  r.cp = cp;
  r.pp = 2;
  r.microbatch_size = microbatch;
  r.seq_len = seq_len;
  r.partition = "uniform";
  auto job = profile::build_model_job(r);
  EXPECT_TRUE(job.ok()) << (job.ok() ? "" : job.error().message);
  return *job;
}

const workload::Op* find_op(const std::vector<workload::Op>& ops, const std::string& name) {
  for (const workload::Op& op : ops)
    if (op.name == name) return &op;
  return nullptr;
}

double sum_flops(const std::vector<workload::Op>& ops, const std::string& name) {
  double f = 0.0;
  for (const workload::Op& op : ops)
    if (op.name == name) f += op.work.flops;
  return f;
}

TEST(ContextParallel, SplitsTheSequenceAndGathersKeysAndValues) {
  // CP 2 × TP 4 and TP 8 both split a layer 8 ways: GEMMs and causal attention do the same
  // FLOPs per GPU (Megatron's load-balanced chunks give each CP rank half of the triangle).
  const profile::ModelJob tp8 = job_for(8, 1, 8, 4096);
  const profile::ModelJob cp2 = job_for(4, 2, 8, 4096);
  const auto& f8 = tp8.stages[1].forward;
  const auto& f2 = cp2.stages[1].forward;
  for (const char* name : {"qkv_proj", "attention", "out_proj", "mlp_down_proj"})
    EXPECT_NEAR(sum_flops(f2, name), sum_flops(f8, name), 1e-9 * sum_flops(f8, name)) << name;

  // K/V all-gather: the whole sequence's K and V of this TP rank (8 × 4096 tokens × 2 × 1024 /
  // 4 channels × 2 bytes), each rank receiving the other half.
  const workload::Op* ag = find_op(f2, "attn_cp_kv_all_gather");
  ASSERT_NE(ag, nullptr);
  const double gathered = 8.0 * 4096 * 2.0 * 1024 / 4 * 2.0;
  EXPECT_EQ(ag->work.kind, device::WorkKind::kCollective);
  EXPECT_EQ(ag->group_size, 2);
  EXPECT_DOUBLE_EQ(ag->work.link_bytes, 0.5 * gathered);
  EXPECT_DOUBLE_EQ(ag->work.memory_bytes, 1.5 * gathered);
  // It runs right before attention; backward reduce-scatters dK, dV after attention's backward.
  for (std::size_t i = 0; i + 1 < f2.size(); ++i) {
    if (f2[i].name == "attn_cp_kv_all_gather") {
      EXPECT_EQ(f2[i + 1].name, "attention");
    }
  }
  const auto& b2 = cp2.stages[1].backward;
  bool seen = false;
  for (std::size_t i = 0; i + 1 < b2.size(); ++i)
    if (b2[i].name == "attention_bwd") {
      EXPECT_EQ(b2[i + 1].name, "attn_cp_kv_reduce_scatter_bwd");
      seen = true;
    }
  EXPECT_TRUE(seen);
  // TP collectives carry half the tokens (each CP rank's sequence half).
  const workload::Op* ar8 = find_op(f8, "attn_all_reduce");
  const workload::Op* ar2 = find_op(f2, "attn_all_reduce");
  ASSERT_NE(ar8, nullptr);
  ASSERT_NE(ar2, nullptr);
  EXPECT_DOUBLE_EQ(ar2->work.memory_bytes, 0.5 * ar8->work.memory_bytes);
  // No CP collectives without CP.
  EXPECT_EQ(find_op(f8, "attn_cp_kv_all_gather"), nullptr);
  // Gradients are reduced over the CP group (weights are replicated there).
  EXPECT_NE(find_op(cp2.stages[0].per_iteration, "grad_all_reduce"), nullptr);
  EXPECT_EQ(find_op(tp8.stages[0].per_iteration, "grad_all_reduce"), nullptr);
}

TEST(ContextParallel, ValidationNamesTheRule) {
  profile::ModelJobRequest r;
  r.model = "llama3.2-3b";
  r.tp = 4;
  r.cp = 2;
  r.pp = 2;
  r.seq_len = 4098;  // not a multiple of 2 × cp
  auto job = profile::build_model_job(r);
  ASSERT_FALSE(job.ok());
  EXPECT_NE(job.error().message.find("2 x cp"), std::string::npos) << job.error().message;
}

TEST(ContextParallel, KareusPartitionsOverlapTheKvAllGather) {
  const profile::ModelJob job = job_for(4, 2, 8, 4096);
  for (int backward = 0; backward < 2; ++backward) {
    const auto& ops = backward ? job.stages[1].backward : job.stages[1].forward;
    const MicrobatchWork mb = build_microbatch_work(ops, backward == 1, 4);
    int cp_types = 0, tp_types = 0;
    double link = 0.0;
    for (const PartitionType& p : mb.partitions) {
      link += p.count * p.comm.work.link_bytes;
      const bool cp = p.comm.name.find("cp_kv") != std::string::npos;
      EXPECT_EQ(p.group_size, cp ? 2 : 4) << p.name;
      (cp ? cp_types : tp_types) += 1;
    }
    for (const Kernel& k : mb.solo) link += k.work.link_bytes;
    EXPECT_NEAR(link, workload::total_link_bytes(ops), 1e-9 * link);
    // Every layer's K/V collective is paired with the other nanobatch's compute on both sides.
    EXPECT_GE(cp_types, 2);
    EXPECT_GE(tp_types, 2);
  }
}

}  // namespace
}  // namespace powertrain::kareus
