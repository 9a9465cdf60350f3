// Kernel-size terms of the Kareus model (device/kernel_efficiency.h): wave quantization with
// split-K, the nanobatch's token-invariant traffic, launch gaps, the kernel shapes recovered from
// the job's ops, and activation recomputation in the backward's time. Hand-computed cases.
#include <gtest/gtest.h>

#include "device/kernel_efficiency.h"
#include "kareus/compose.h"
#include "kareus/concurrency.h"
#include "kareus/job_run.h"
#include "kareus/partition.h"
#include "profile/model_profile.h"

namespace powertrain::kareus {
namespace {

using device::KernelShape;
using device::WorkKind;

device::GpuSpec a100() {
  auto gpu = device::find_gpu("a100-sxm");
  EXPECT_TRUE(gpu.ok());
  return *gpu;
}

TEST(KareusKernelSize, WaveFillOfAttentionTilesByHand) {
  // 8192 query rows × 2 heads = 64 × 2 = 128 tiles: on 108 SMs two waves, 128 / 216 busy; on the
  // 84 SMs left next to a 24-SM collective still two waves, 128 / 168.
  const KernelShape shape{8192, 2, 4096, false, 0.0};
  const device::WaveFill all = device::wave_fill(WorkKind::kAttention, shape, 108);
  EXPECT_EQ(all.tiles, 128.0);
  EXPECT_EQ(all.split_k, 1);  // flash attention: no split-K
  EXPECT_NEAR(all.efficiency, 128.0 / 216.0, 1e-12);
  EXPECT_NEAR(device::wave_fill(WorkKind::kAttention, shape, 84).efficiency, 128.0 / 168.0, 1e-12);
  // 256 tiles on 108 SMs: three waves.
  const KernelShape twice{16384, 2, 4096, false, 0.0};
  EXPECT_NEAR(device::wave_fill(WorkKind::kAttention, twice, 108).efficiency, 256.0 / 324.0, 1e-12);
}

TEST(KareusKernelSize, WaveFillOfGemmPicksTheBestSplitK) {
  // 16384 × 512 output = 128 × 4 = 512 tiles, depth 2048 allows splits 1..8 (≥ 256 deep):
  // 1: 512 / (5 · 108) = 0.948; 4: 2048 / (19 · 108) = 0.998 (8 ties at 4096 / 4104: smaller kept).
  const KernelShape shape{16384, 512, 2048, false, 0.0};
  const device::WaveFill f = device::wave_fill(WorkKind::kMatmul, shape, 108);
  EXPECT_EQ(f.tiles, 512.0);
  EXPECT_EQ(f.split_k, 4);
  EXPECT_NEAR(f.efficiency, 2048.0 / 2052.0, 1e-12);
  EXPECT_DOUBLE_EQ(f.extra_bytes, 8.0 * 4 * 16384 * 512);  // fp32 partials written and read
  // Too shallow to split (256 deep → one slice): 8 × 8 = 64 tiles, one wave of 108.
  const KernelShape shallow{1024, 1024, 256, false, 0.0};
  const device::WaveFill g = device::wave_fill(WorkKind::kMatmul, shallow, 108);
  EXPECT_EQ(g.split_k, 1);
  EXPECT_NEAR(g.efficiency, 64.0 / 108.0, 1e-12);
  EXPECT_EQ(g.extra_bytes, 0.0);
  // Next to a collective on 24 SMs the grid is still sized for 108 (split 4: 2048 blocks) and
  // runs on 84 SMs: 2048 / (25 · 84).
  const device::WaveFill shared = device::wave_fill(WorkKind::kMatmul, shape, 84, {}, 108);
  EXPECT_EQ(shared.split_k, 4);
  EXPECT_NEAR(shared.efficiency, 2048.0 / (25.0 * 84.0), 1e-12);
  // Unknown shape or a memory-bound kernel: no term.
  EXPECT_EQ(device::wave_fill(WorkKind::kMatmul, {}, 108).efficiency, 1.0);
  EXPECT_EQ(device::wave_fill(WorkKind::kMemoryBound, shape, 108).efficiency, 1.0);
}

TEST(KareusKernelSize, NanobatchRereadsWeightsAndAccumulatesGradients) {
  // Forward GEMM m 4096, k 2048, n 512, bf16: bytes (m k + k n) 2 + m n 2, weights k n 2.
  const double m = 4096, k = 2048, n = 512;
  Kernel fwd{"qkv_proj", {}, 1, {m, n, k, false, k * n * 2}};
  fwd.work.kind = WorkKind::kMatmul;
  fwd.work.flops = 2 * m * k * n;
  fwd.work.memory_bytes = (m * k + k * n) * 2 + m * n * 2;
  const Kernel half = nanobatch_kernel(fwd);
  EXPECT_DOUBLE_EQ(half.work.flops, m * k * n);
  EXPECT_DOUBLE_EQ(half.work.memory_bytes, k * n * 2 + (m * k + m * n) * 2 / 2);
  EXPECT_EQ(half.shape.rows, m / 2);
  EXPECT_EQ(half.shape.cols, n);
  // Two nanobatches move the weights twice: k n 2 bytes more than the microbatch.
  EXPECT_DOUBLE_EQ(2 * half.work.memory_bytes - fwd.work.memory_bytes, k * n * 2);
  // Weight gradient: the tokens are the reduction; the fp32 main gradient (8 k n) is read and
  // written by each nanobatch.
  Kernel wgrad{"qkv_proj_wgrad", {}, 1, {k, n, m, true, k * n * 8}};
  wgrad.work.kind = WorkKind::kMatmul;
  wgrad.work.flops = 2 * m * k * n;
  wgrad.work.memory_bytes = (m * k + m * n) * 2 + k * n * 8;
  const Kernel wg = nanobatch_kernel(wgrad);
  EXPECT_EQ(wg.shape.rows, k);
  EXPECT_EQ(wg.shape.depth, m / 2);
  EXPECT_DOUBLE_EQ(2 * wg.work.memory_bytes - wgrad.work.memory_bytes, k * n * 8);
  // Without a shape (collectives, unknown ops) everything halves.
  EXPECT_DOUBLE_EQ(nanobatch_work(fwd.work).memory_bytes, fwd.work.memory_bytes / 2);
}

TEST(KareusKernelSize, ShapesOfTheJobsGemmsAndAttention) {
  // Llama 3.2 3B (h 3072, 24 heads of 128, 8 KV heads, FFN 8192), TP 8, 8 × 4096 tokens.
  auto job = profile::build_model_job(JobRunSettings::default_job_request());
  ASSERT_TRUE(job.ok()) << job.error().message;
  const ShapeContext ctx = shape_context(job->model, job->parallel);
  EXPECT_EQ(ctx.tokens, 32768.0);
  EXPECT_EQ(ctx.heads, 3.0);
  int checked = 0;
  for (const workload::Op& op : job->stages[1].forward) {
    const KernelShape s = op_shape(op, ctx);
    if (op.name == "qkv_proj") {  // 3072 → (3072 + 2 · 1024) / 8 = 640
      EXPECT_EQ(s.rows, 32768.0);
      EXPECT_NEAR(s.cols, 640.0, 1e-9);
      EXPECT_NEAR(s.depth, 3072.0, 1e-9);
      EXPECT_NEAR(s.token_invariant_bytes, 3072.0 * 640 * 2, 1e-3);
      ++checked;
    } else if (op.name == "out_proj") {  // 3072 / 8 = 384 → 3072
      EXPECT_NEAR(s.cols, 3072.0, 1e-9);
      EXPECT_NEAR(s.depth, 384.0, 1e-9);
      ++checked;
    } else if (op.work.kind == WorkKind::kAttention) {
      EXPECT_EQ(s.rows, 32768.0);
      EXPECT_EQ(s.cols, 3.0);
      ++checked;
    } else if (op.work.kind == WorkKind::kMemoryBound || op.work.kind == WorkKind::kCollective) {
      EXPECT_FALSE(s.known()) << op.name;
    }
  }
  EXPECT_GE(checked, 3);
  for (const workload::Op& op : job->stages[1].backward) {
    if (op.name != "mlp_down_proj_wgrad") continue;  // dW[8192/8 × 3072] over the tokens
    const KernelShape s = op_shape(op, ctx);
    EXPECT_NEAR(s.rows, 1024.0, 1e-9);
    EXPECT_NEAR(s.cols, 3072.0, 1e-9);
    EXPECT_EQ(s.depth, 32768.0);
    EXPECT_TRUE(s.tokens_in_depth);
    EXPECT_NEAR(s.token_invariant_bytes, 1024.0 * 3072 * 8, 1e-3);
    ++checked;
  }
  EXPECT_GE(checked, 4);  // qkv, out_proj, attention (per layer), down_proj wgrad
  // A GEMM whose bytes do not follow layer_ops' formula gets no shape.
  workload::Op odd{"qkv_proj", {}};
  odd.work.kind = WorkKind::kMatmul;
  odd.work.flops = 2.0 * 32768 * 3072 * 640;
  odd.work.memory_bytes = 1.0;
  EXPECT_FALSE(op_shape(odd, ctx).known());
}

TEST(KareusKernelSize, LaunchGapsAndWaveFillInTimeAndPower) {
  const device::GpuSpec gpu = a100();
  ConcurrencyParams on;
  ConcurrencyParams off;
  off.kernel_size_effects = false;
  // Three merged memory-bound ops: three launch gaps of 3 µs at static power only.
  Kernel norm{"a+b+c", {}, 3, {}};
  norm.work.kind = WorkKind::kMemoryBound;
  norm.work.memory_bytes = 1e9;
  // 1200 MHz: below the power limit, so the clock is the requested one in both runs.
  const Cost a = evaluate_solo(gpu, on, {norm}, 1200);
  const Cost b = evaluate_solo(gpu, off, {norm}, 1200);
  ASSERT_FALSE(a.power_capped || b.power_capped);
  EXPECT_NEAR(a.time_s - b.time_s, 9e-6, 1e-12);
  EXPECT_NEAR(a.energy_j - b.energy_j, 9e-6 * gpu.dvfs.static_power_w, 1e-9);
  // A compute-bound attention kernel with 128 tiles on 108 SMs (fill 128/216): its math takes
  // 216/128 as long; idle SMs draw no dynamic power, so the dynamic energy is unchanged.
  on.kernel_size.launch_overhead_s = 0.0;
  Kernel attn{"attn", {}, 1, {8192, 2, 4096, false, 0.0}};
  attn.work.kind = WorkKind::kAttention;
  attn.work.flops = 1e12;
  attn.work.memory_bytes = 1e6;
  const Cost c = evaluate_solo(gpu, on, {attn}, 1200);
  const Cost d = evaluate_solo(gpu, off, {attn}, 1200);
  ASSERT_FALSE(c.power_capped || d.power_capped);
  EXPECT_NEAR(c.time_s / d.time_s, 216.0 / 128.0, 1e-9);
  EXPECT_NEAR(c.dynamic_j, d.dynamic_j, 1e-9 * d.dynamic_j);
  EXPECT_NEAR(c.static_j / d.static_j, 216.0 / 128.0, 1e-9);
}

TEST(KareusKernelSize, SequentialAndNanobatchedPathsShareThePhysics) {
  const device::GpuSpec gpu = a100();
  const ConcurrencyParams params;
  // Alone, the sequential path of full kernels is evaluate_solo of the same kernels.
  Kernel attn{"attn", {}, 1, {16384, 2, 4096, false, 0.0}};
  attn.work.kind = WorkKind::kAttention;
  attn.work.flops = 2e12;
  attn.work.memory_bytes = 1e8;
  for (int f : {1410, 1005}) {
    const Cost seq = sequential_cost(gpu, params, std::vector<Kernel>{attn}, f);
    const Cost solo = evaluate_solo(gpu, params, {attn}, f);
    EXPECT_NEAR(seq.time_s, solo.time_s, 1e-12);
    EXPECT_NEAR(seq.energy_j, solo.energy_j, 1e-9);
  }
  // Two nanobatches (128 tiles each, fill 128/216) are slower than the microbatch (256 tiles,
  // fill 256/324) by the ratio of fills (+ one launch gap).
  const Kernel half = nanobatch_kernel(attn);
  const Cost full = evaluate_solo(gpu, params, {attn}, 1200);
  const Cost two = evaluate_solo(gpu, params, {half, half}, 1200);
  ASSERT_FALSE(full.power_capped || two.power_capped);
  const double gap = params.kernel_size.launch_overhead_s;
  EXPECT_NEAR((two.time_s - 2 * gap) / (full.time_s - gap), (256.0 / 324.0) / (128.0 / 216.0),
              1e-6);
}

TEST(KareusKernelSize, RecomputationRunsTheForwardInEveryBackward) {
  profile::ModelJobRequest r;
  r.model = "llama3.2-3b";
  r.tp = 2;
  r.pp = 2;
  r.microbatch_size = 1;
  r.seq_len = 1024;
  r.recompute = true;
  auto job = profile::build_model_job(r);
  ASSERT_TRUE(job.ok()) << job.error().message;
  const workload::StageWork& stage = job->stages[0];
  ASSERT_FALSE(stage.recompute.empty());
  const auto ops = microbatch_ops(stage, true, true);
  ASSERT_EQ(ops.size(), stage.recompute.size() + stage.backward.size());
  EXPECT_EQ(ops.front().name, stage.recompute.front().name);
  EXPECT_EQ(ops.back().name, stage.backward.back().name);
  EXPECT_EQ(microbatch_ops(stage, true, false).size(), stage.backward.size());
  EXPECT_EQ(microbatch_ops(stage, false, true).size(), stage.forward.size());
  // Sequentially, the backward with recomputation costs the backward plus the recomputed forward
  // (one kernel sequence: the sum, launch gaps included).
  const device::GpuSpec& gpu = job->gpu;
  const ConcurrencyParams params;
  const ShapeContext ctx = shape_context(job->model, job->parallel);
  const MicrobatchWork with = build_microbatch_work(ops, true, 2, ctx);
  const MicrobatchWork without = build_microbatch_work(stage.backward, true, 2, ctx);
  const MicrobatchWork forward = build_microbatch_work(stage.recompute, false, 2, ctx);
  const double t_with = sequential_cost(gpu, params, with.sequential_kernels, 1410).time_s;
  const double t_without = sequential_cost(gpu, params, without.sequential_kernels, 1410).time_s;
  const double t_forward = sequential_cost(gpu, params, forward.sequential_kernels, 1410).time_s;
  EXPECT_NEAR(t_with, t_without + t_forward, 1e-9 * t_with);
  // The partitioned backward overlaps the recomputed forward's collectives too.
  EXPECT_GT(with.partitions.size(), without.partitions.size());
}

}  // namespace
}  // namespace powertrain::kareus
