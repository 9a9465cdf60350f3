// Memory model: Megatron's bytes per parameter, Korthikanti et al.'s activation formulas and
// the capacity verdict for GPT-3 175B on 80 GiB GPUs.
#include "workload/memory.h"

#include <gtest/gtest.h>

namespace powertrain::workload {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

ModelSpec gpt3_175b() { return *find_model("gpt3-175b"); }

// Korthikanti et al.'s setting: b = 1, s = 2048, t = 8, p = 8, unfused attention.
ParallelConfig korthikanti_config() {
  ParallelConfig c = make_parallel_config(gpt3_175b());
  c.tp = 8;
  c.pp = 8;
  c.microbatch_size = 1;
  c.num_microbatches = 64;
  c.flash_attention = false;
  return c;
}

TEST(MemoryTest, MegatronBytesPerParameter) {
  ParallelConfig c;
  StateBytes mixed = state_bytes_per_parameter(c);
  EXPECT_EQ(mixed.parameter + mixed.gradient + mixed.optimizer, 18.0);
  c.distributed_optimizer = true;
  c.dp = 8;
  StateBytes sharded = state_bytes_per_parameter(c);
  EXPECT_EQ(sharded.parameter + sharded.gradient + sharded.optimizer, 6.0 + 12.0 / 8);
  c.distributed_optimizer = false;
  c.precision = device::Precision::kFp32;
  StateBytes full = state_bytes_per_parameter(c);
  EXPECT_EQ(full.parameter + full.gradient + full.optimizer, 16.0);
}

// The op model's stored activations of one GPT layer reproduce the paper's closed forms.
TEST(MemoryTest, LayerActivationsMatchKorthikanti) {
  const ModelSpec m = gpt3_175b();
  const double s = 2048, b = 1, h = 12288, a = 96, t = 8;
  for (bool sp : {false, true}) {
    for (bool flash : {false, true}) {
      for (bool recompute : {false, true}) {
        ParallelConfig c = korthikanti_config();
        c.sequence_parallel = sp;
        c.flash_attention = flash;
        c.recompute = recompute;
        const LayerUnit unit = layer_units(m, c)[5];
        const double expected =
            korthikanti_layer_activation_bytes(s, b, h, a, t, sp, flash, recompute);
        // Flash keeps a 4-byte log-sum-exp per query row and head, which the paper ignores.
        const double lse = flash && !recompute ? 4.0 * b * (a / t) * s : 0.0;
        EXPECT_DOUBLE_EQ(unit.stored_activation_bytes, expected + lse)
            << "sp " << sp << " flash " << flash << " recompute " << recompute;
      }
    }
  }
  // 34 + 5as/h = 34 + 80 bytes per s·b·h element without any parallelism.
  EXPECT_DOUBLE_EQ(korthikanti_layer_activation_bytes(s, b, h, a, 1, false, false, false),
                   s * b * h * 114);
}

TEST(MemoryTest, Gpt3_175bOn80GiB) {
  const ModelSpec m = gpt3_175b();
  ParallelConfig c = korthikanti_config();
  const Partition uniform = *uniform_partition(97, 8);
  const double sbh = 2048.0 * 12288;

  auto plain = estimate_memory(m, c, uniform, 80 * kGiB);
  ASSERT_TRUE(plain.ok()) << plain.error().message;
  const StageMemory& first = plain->stages[0];
  EXPECT_EQ(first.in_flight_microbatches, 8);
  EXPECT_EQ(plain->stages[7].in_flight_microbatches, 1);
  // 12 layers of 23·sbh (10 + 24/8 + 5·96·2048/(12288·8)) plus the embedding dropout mask.
  EXPECT_DOUBLE_EQ(first.activation_bytes, 8 * (12 * 23 + 1) * sbh);  // 51.9 GiB
  // 12 layers of (12h² + 13h)/8 (+ replicated biases and norms), the 51200/8-row embedding
  // shard and the replicated 2048-row position table: 2.823e9 parameters, 18 bytes each.
  EXPECT_NEAR(first.parameters / 1e9, 2.8227, 0.0001);
  EXPECT_DOUBLE_EQ(first.total_bytes, 18 * first.parameters + first.activation_bytes);
  EXPECT_NEAR(first.total_bytes / kGiB, 99.26, 0.01);
  EXPECT_EQ(plain->peak_stage, 0);
  EXPECT_FALSE(plain->fits);
  EXPECT_EQ(plain->verdict.rfind("does not fit: stage 0 needs 99.3 GiB per GPU but the GPU has "
                                 "80.0 GiB (parameters 5.3, gradients 10.5, optimizer 31.5, "
                                 "activations 51.9 GiB)",
                                 0),
            0u)
      << plain->verdict;

  // Full recomputation keeps 2·sbh per layer and one layer's working set: fits.
  c.recompute = true;
  auto recompute = estimate_memory(m, c, uniform, 80 * kGiB);
  ASSERT_TRUE(recompute.ok());
  EXPECT_DOUBLE_EQ(recompute->stages[0].activation_bytes, (8 * (12 * 2 + 1) + 23) * sbh);
  EXPECT_TRUE(recompute->fits) << recompute->verdict;
  EXPECT_NEAR(recompute->stages[0].total_bytes / kGiB, 52.5, 0.1);
  EXPECT_EQ(recompute->verdict.rfind("fits: the fullest stage, 0, needs 52.5 GiB per GPU of "
                                     "80.0 GiB",
                                     0),
            0u)
      << recompute->verdict;

  // Sequence parallelism + flash attention + distributed optimizer over dp = 8, no recompute.
  c.recompute = false;
  c.sequence_parallel = true;
  c.flash_attention = true;
  c.distributed_optimizer = true;
  c.dp = 8;
  auto lean = estimate_memory(m, c, uniform, 80 * kGiB);
  ASSERT_TRUE(lean.ok());
  EXPECT_TRUE(lean->fits);
  // Per microbatch: 12 layers of 34·sbh/8 and a log-sum-exp of 4·(96/8)·2048 bytes, the
  // sequence-sharded embedding dropout mask.
  EXPECT_DOUBLE_EQ(lean->stages[0].activation_bytes,
                   8 * (12 * (34 * sbh / 8 + 4.0 * 12 * 2048) + sbh / 8));
  EXPECT_DOUBLE_EQ(lean->stages[0].optimizer_bytes, lean->stages[0].parameters * 12 / 8);
}

TEST(MemoryTest, InFlightMicrobatchesFollow1F1B) {
  const ModelSpec m = gpt3_175b();
  ParallelConfig c = korthikanti_config();
  c.num_microbatches = 3;
  auto estimate = estimate_memory(m, c, *uniform_partition(97, 8), 80 * kGiB);
  ASSERT_TRUE(estimate.ok());
  for (int s = 0; s < 8; ++s) {
    EXPECT_EQ(estimate->stages[s].in_flight_microbatches, std::min(8 - s, 3)) << s;
  }
  // The last stage also stores the fp32 logits: 4·s·b·V/t.
  EXPECT_GT(estimate->stages[7].activation_bytes_per_microbatch,
            4.0 * 2048 * 51200 / 8 + 12 * 23 * 2048.0 * 12288);
}

TEST(MemoryTest, RejectsMismatchedInput) {
  const ModelSpec m = gpt3_175b();
  const ParallelConfig c = korthikanti_config();
  auto wrong = estimate_memory(m, c, *uniform_partition(97, 4), 80 * kGiB);
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.error().message.rfind("partition [0, 24, 48, 72, 97]: has 5 numbers, expected "
                                        "9 for 8 stages",
                                        0),
            0u);
  auto capacity = estimate_memory(m, c, *uniform_partition(97, 8), 0.0);
  ASSERT_FALSE(capacity.ok());
  EXPECT_EQ(capacity.error().message,
            "memory estimate: GPU capacity must be a positive number of bytes, got 0");
  ParallelConfig bad = c;
  bad.tp = 5;
  EXPECT_FALSE(estimate_memory(m, bad, *uniform_partition(97, 8), 80 * kGiB).ok());
}

}  // namespace
}  // namespace powertrain::workload
