// Causal flash attention's block load imbalance (kareus::causal_attention_fill): hand-computed
// greedy schedules, the CP chunk layout, and its use on a job's attention kernels.
#include <gtest/gtest.h>

#include "kareus/concurrency.h"
#include "kareus/partition.h"
#include "profile/model_profile.h"

namespace powertrain::kareus {
namespace {

TEST(KareusCausalAttention, ForwardBlocksByHand) {
  // One sequence of 2 query blocks, 1 head: blocks attend to 1 and 2 key blocks. On 2 SMs the
  // makespan is 2 for 3 tiles: 3 / (2 · 2); on 1 SM nothing idles.
  EXPECT_DOUBLE_EQ(causal_attention_fill(1, 256, 1, 1, false, 2), 0.75);
  EXPECT_DOUBLE_EQ(causal_attention_fill(1, 256, 1, 1, false, 1), 1.0);
  // 3 blocks (1, 2, 3 tiles) on 2 SMs in grid order: SM0 1, SM1 2, SM0 1 + 3 = 4: 6 / (2 · 4).
  EXPECT_DOUBLE_EQ(causal_attention_fill(1, 384, 1, 1, false, 2), 0.75);
  // Two sequences × two heads of 2 blocks: 1,2,1,2,1,2,1,2 on 4 SMs. Loads after four blocks
  // {1,2,1,2}; block 5 (1) → an SM at 1 → 2; block 6 (2) → the other SM at 1 → 3; blocks 7 (1)
  // and 8 (2) → the SMs at 2 → 3 and 4: makespan 4 for 12 tiles.
  EXPECT_DOUBLE_EQ(causal_attention_fill(2, 256, 1, 2, false, 4), 12.0 / 16.0);
}

TEST(KareusCausalAttention, BackwardKeyBlocksByHand) {
  // Backward: one block per key block; key block j of 3 is attended by 3 − j query blocks.
  // On 3 SMs: makespan 3 for 6 tiles.
  EXPECT_NEAR(causal_attention_fill(1, 384, 1, 1, true, 3), 6.0 / 9.0, 1e-12);
  // On 2 SMs: 3, 2 then 1 → the SM at 2: makespan 3, 6 / 6.
  EXPECT_DOUBLE_EQ(causal_attention_fill(1, 384, 1, 1, true, 2), 1.0);
}

TEST(KareusCausalAttention, ContextParallelChunksSlowestRank) {
  // cp 2, 4 chunks of one 128-row block each. Rank 0 holds chunks 0 and 3: forward blocks of 1
  // and 4 tiles, on 2 SMs makespan 4 (5 / 8); rank 1 chunks 1 and 2: 2 and 3 tiles (5 / 6). The
  // slowest rank counts.
  EXPECT_DOUBLE_EQ(causal_attention_fill(1, 512, 2, 1, false, 2), 5.0 / 8.0);
  // Backward, rank 0: chunk 0's key block 0 (1 tile), chunk 3's key blocks 0..3 (1 tile each):
  // 5 unit blocks on 2 SMs, makespan 3 (5 / 6); rank 1: chunk 1's 2 key blocks (1 each), chunk
  // 2's 3 (1 each): 5 unit blocks, 5 / 6.
  EXPECT_NEAR(causal_attention_fill(1, 512, 2, 1, true, 2), 5.0 / 6.0, 1e-12);
}

TEST(KareusCausalAttention, NoTermWhenCountsAreNotWhole) {
  EXPECT_EQ(causal_attention_fill(0, 4096, 1, 2, false, 108), 0.0);
  EXPECT_EQ(causal_attention_fill(1, 100, 1, 2, false, 108), 0.0);   // < one block
  EXPECT_EQ(causal_attention_fill(1, 4096, 3, 2, false, 108), 0.0);  // 4096 / (6 · 128)
  EXPECT_EQ(causal_attention_fill(1, 4096, 1, 1.5, false, 108), 0.0);
  EXPECT_EQ(causal_attention_fill(1, 4096, 1, 2, false, 0), 0.0);
}

TEST(KareusCausalAttention, JobAttentionKernelsCarryTheFill) {
  // Qwen 3 1.7B CP 2 × TP 4, 8 × 4096: 4 heads per rank; the microbatch's attention has 8
  // sequences, each nanobatch's 4 (a smaller grid with the same imbalance: a lower fill).
  profile::ModelJobRequest r;
  r.model = "qwen3-1.7b";
  r.gpu = "a100-sxm";
  r.tp = 4;
  r.cp = 2;
  r.pp = 2;
  r.microbatch_size = 8;
  r.seq_len = 4096;
  auto job = profile::build_model_job(r);
  ASSERT_TRUE(job.ok()) << job.error().message;
  const ShapeContext ctx = shape_context(job->model, job->parallel, job->gpu.sm_count);
  EXPECT_TRUE(ctx.causal);
  const double micro = causal_attention_fill(8, 4096, 2, 4, false, 108);
  const double nano = causal_attention_fill(4, 4096, 2, 4, false, 108);
  EXPECT_GT(micro, 0.0);
  EXPECT_LT(nano, micro);
  const MicrobatchWork mb = build_microbatch_work(job->stages[0].forward, false, 4, ctx);
  int seen = 0;
  for (const Kernel& k : mb.sequential_kernels)
    if (k.work.kind == device::WorkKind::kAttention) {
      EXPECT_DOUBLE_EQ(k.causal_fill, micro);
      ++seen;
    }
  for (const PartitionType& p : mb.partitions)
    for (const Kernel& k : p.compute)
      if (k.work.kind == device::WorkKind::kAttention) {
        EXPECT_DOUBLE_EQ(k.causal_fill, nano);
        ++seen;
      }
  EXPECT_GE(seen, 2);
  // The attention kernel's time stretches by its fill: alone on all SMs at 1410 MHz its math
  // time is the roofline's / fill (attention is compute bound here).
  Kernel attention;
  for (const Kernel& k : mb.sequential_kernels)
    if (k.work.kind == device::WorkKind::kAttention) attention = k;
  ConcurrencyParams params;
  params.kernel_size.launch_overhead_s = 0.0;
  device::GpuSpec gpu = job->gpu;
  gpu.dvfs.power_limit_w = 1e9;  // no cap: both run at 1410 MHz
  const double t_fill = sequential_cost(gpu, params, {attention}, 1410).time_s;
  Kernel even = attention;
  even.causal_fill = 0.0;
  even.shape = {};  // no wave term at all: fill 1
  const double t_even = sequential_cost(gpu, params, {even}, 1410).time_s;
  EXPECT_NEAR(t_fill, t_even / micro, 1e-6 * t_fill);
  // Without the SM count there is no causal term.
  const MicrobatchWork plain = build_microbatch_work(job->stages[0].forward, false, 4,
                                                     shape_context(job->model, job->parallel));
  for (const Kernel& k : plain.sequential_kernels) EXPECT_EQ(k.causal_fill, 0.0);
}

}  // namespace
}  // namespace powertrain::kareus
