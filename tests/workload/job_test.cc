// Job validation and per-op work: FLOP totals, TP/SP splitting and collectives, recompute,
// encoder-decoder structure, parameters per GPU and stage assembly.
#include "workload/job.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

namespace powertrain::workload {
namespace {

using device::WorkKind;

ModelSpec model(const char* name) {
  auto m = find_model(name);
  EXPECT_TRUE(m.ok());
  return *m;
}

ParallelConfig config_for(const ModelSpec& m, int tp = 1, int pp = 1, bool sp = false) {
  ParallelConfig c = make_parallel_config(m);
  c.tp = tp;
  c.pp = pp;
  c.sequence_parallel = sp;
  c.microbatch_size = 2;
  return c;
}

std::string job_error(const ModelSpec& m, const ParallelConfig& c) {
  core::Status s = validate_job(m, c);
  return s.ok() ? "(ok)" : s.error().message;
}

double flops_of(const std::vector<Op>& ops, WorkKind kind) {
  double sum = 0.0;
  for (const Op& op : ops) sum += op.work.kind == kind ? op.work.flops : 0.0;
  return sum;
}

std::vector<std::string> names_of(const std::vector<Op>& ops, WorkKind kind) {
  std::vector<std::string> names;
  for (const Op& op : ops) {
    if (op.work.kind == kind) names.push_back(op.name);
  }
  return names;
}

const Op* find_op(const std::vector<Op>& ops, const std::string& name) {
  for (const Op& op : ops) {
    if (op.name == name) return &op;
  }
  return nullptr;
}

TEST(WorkloadJobTest, ValidationExplainsMegatronRules) {
  const ModelSpec gpt = model("gpt3-1.3b");
  EXPECT_EQ(job_error(gpt, config_for(gpt)), "(ok)");
  EXPECT_EQ(job_error(gpt, config_for(gpt, 3)),
            "job: tp = 3 must divide num_heads = 16 of gpt3-1.3b (Megatron gives each TP rank "
            "whole attention heads)");
  const ModelSpec llama = model("llama3.3-70b");
  EXPECT_EQ(job_error(llama, config_for(llama, 8)), "(ok)");
  EXPECT_EQ(job_error(llama, config_for(llama, 16)),
            "job: tp = 16 must divide num_kv_heads = 8 of llama3.3-70b (Megatron gives each TP "
            "rank whole key/value groups)");
  EXPECT_EQ(job_error(gpt, config_for(gpt, 1, 26)),
            "job: pp = 26 exceeds the 25 layer units of gpt3-1.3b (24 Transformer layers + LM "
            "head)");
  EXPECT_EQ(job_error(gpt, config_for(gpt, 1, 25)), "(ok)");
  ParallelConfig c = config_for(gpt);
  c.seq_len = 4096;
  EXPECT_EQ(job_error(gpt, c),
            "job: seq_len = 4096 exceeds the 2048 learned positions of "
            "gpt3-1.3b");
  c = config_for(gpt, 8, 1, true);
  c.seq_len = 2044;
  EXPECT_EQ(job_error(gpt, c),
            "job: seq_len = 2044 must be a multiple of tp = 8 with sequence "
            "parallelism (each rank holds seq_len / tp tokens)");
  c = config_for(gpt);
  c.dp = 0;
  EXPECT_EQ(job_error(gpt, c), "job: dp must be between 1 and 65536, got 0");
  c = config_for(gpt);
  c.microbatch_size = -1;
  EXPECT_EQ(job_error(gpt, c), "job: microbatch_size must be between 1 and 65536, got -1");
  ModelSpec odd = gpt;
  odd.ffn_hidden_size = 8190;
  EXPECT_EQ(job_error(odd, config_for(odd, 4)),
            "job: tp = 4 must divide ffn_hidden_size = 8190 of gpt3-1.3b (the MLP is split by "
            "columns across TP ranks)");
}

TEST(WorkloadJobTest, VocabularyIsPaddedToMultipleOf128TimesTp) {
  const ModelSpec gpt = model("gpt3-175b");
  EXPECT_EQ(padded_vocab_size(gpt, 1), 50304);
  EXPECT_EQ(padded_vocab_size(gpt, 8), 51200);
  EXPECT_EQ(padded_vocab_size(model("bloom-176b"), 4), 250880);
  EXPECT_EQ(padded_vocab_size(model("bert-huge-1.3b"), 2), 30720);
}

TEST(WorkloadOpsTest, UnitsAreLayersPlusLmHead) {
  for (const auto& [name, units] :
       {std::pair{"gpt3-1.3b", 25}, {"gpt3-175b", 97}, {"t5-3b", 49}, {"bloom-3b", 31}}) {
    const ModelSpec m = model(name);
    const auto built = layer_units(m, config_for(m));
    ASSERT_EQ(static_cast<int>(built.size()), units) << name;
    EXPECT_EQ(num_layer_units(m), units);
    EXPECT_EQ(built.back().kind, UnitKind::kLmHead);
    EXPECT_NE(find_op(built.front().forward, "embedding_lookup"), nullptr);
    EXPECT_EQ(find_op(built[1].forward, "embedding_lookup"), nullptr);
    EXPECT_NE(find_op(built.back().forward, "lm_head"), nullptr);
    EXPECT_NE(find_op(built.back().forward, "cross_entropy"), nullptr);
  }
}

// One GPT layer at tp = 1: 24·T·h² GEMM FLOPs (QKV 6, output 2, MLP 16) and a causal flash
// attention of 2·b·s²·h; backward doubles GEMMs and takes 2.5× attention.
TEST(WorkloadOpsTest, LayerFlopsMatchClosedForm) {
  const ModelSpec gpt = model("gpt3-1.3b");
  const ParallelConfig c = config_for(gpt);
  const auto units = layer_units(gpt, c);
  const double T = 2.0 * 2048, h = 2048, s = 2048;
  EXPECT_DOUBLE_EQ(flops_of(units[3].forward, WorkKind::kMatmul), 24.0 * T * h * h);
  EXPECT_DOUBLE_EQ(flops_of(units[3].forward, WorkKind::kAttention), 2.0 * T * s * h);
  EXPECT_DOUBLE_EQ(flops_of(units[3].backward, WorkKind::kMatmul), 48.0 * T * h * h);
  EXPECT_DOUBLE_EQ(flops_of(units[3].backward, WorkKind::kAttention), 2.5 * 2.0 * T * s * h);
  // The LM head: 2·T·h·V with the padded vocabulary; forward only of the embedding is bytes.
  EXPECT_DOUBLE_EQ(total_flops(units.back().forward), 2.0 * T * h * 50304);
  EXPECT_DOUBLE_EQ(total_flops(units[0].forward), total_flops(units[1].forward));
  // The bidirectional BERT encoder pays the full s² attention.
  const ModelSpec bert = model("bert-huge-1.3b");
  const auto bert_units = layer_units(bert, config_for(bert));
  EXPECT_DOUBLE_EQ(flops_of(bert_units[2].forward, WorkKind::kAttention),
                   4.0 * 2 * 512 * 512 * 2048.0);
}

// Training FLOPs per token ≈ 6 × parameters; attention adds 3.5 · 2·s·h per layer (causal).
TEST(WorkloadOpsTest, TrainingFlopsAreAboutSixTimesParameters) {
  for (const char* name : {"gpt3-175b", "gpt3-13b", "llama3.3-70b", "bloom-176b"}) {
    const ModelSpec m = model(name);
    const ParallelConfig c = config_for(m);
    double flops = 0.0;
    for (const LayerUnit& u : layer_units(m, c)) {
      flops += total_flops(u.forward) + total_flops(u.backward);
    }
    const double tokens = double(c.microbatch_size) * c.seq_len;
    const double six_n = 6.0 * parameter_count(m) * tokens;
    const double attention = 3.5 * 2.0 * c.seq_len * m.q_dim() * m.num_layers * tokens;
    // Untied models' input embedding has parameters but no FLOPs; padding adds LM head FLOPs.
    const double untied = m.tied_embeddings ? 0.0 : 6.0 * m.vocab_size * m.hidden_size * tokens;
    EXPECT_NEAR((flops - attention) / (six_n - untied), 1.0, 0.01) << name;
    EXPECT_NEAR(flops / six_n, 1.0, 0.1) << name;
  }
}

TEST(WorkloadOpsTest, TensorParallelismHalvesGemmsAndAddsAllReduces) {
  const ModelSpec gpt = model("gpt3-6.7b");
  const auto one = layer_units(gpt, config_for(gpt, 1));
  const auto two = layer_units(gpt, config_for(gpt, 2));
  const LayerUnit& a = one[5];
  const LayerUnit& b = two[5];
  EXPECT_DOUBLE_EQ(flops_of(b.forward, WorkKind::kMatmul),
                   flops_of(a.forward, WorkKind::kMatmul) / 2);
  EXPECT_DOUBLE_EQ(flops_of(b.backward, WorkKind::kMatmul),
                   flops_of(a.backward, WorkKind::kMatmul) / 2);
  EXPECT_DOUBLE_EQ(flops_of(b.forward, WorkKind::kAttention),
                   flops_of(a.forward, WorkKind::kAttention) / 2);
  EXPECT_TRUE(names_of(a.forward, WorkKind::kCollective).empty());
  EXPECT_TRUE(names_of(a.backward, WorkKind::kCollective).empty());
  EXPECT_EQ(names_of(b.forward, WorkKind::kCollective),
            (std::vector<std::string>{"attn_all_reduce", "mlp_all_reduce"}));
  EXPECT_EQ(names_of(b.backward, WorkKind::kCollective),
            (std::vector<std::string>{"mlp_input_grad_all_reduce", "attn_input_grad_all_reduce"}));
  // Ring all-reduce of b·s·h bf16 activations: each GPU sends 2(n-1)/n of it.
  const double size = 2.0 * 2048 * 4096 * 2;
  EXPECT_DOUBLE_EQ(find_op(b.forward, "attn_all_reduce")->work.link_bytes, size);
  const auto eight = layer_units(gpt, config_for(gpt, 8));
  EXPECT_DOUBLE_EQ(find_op(eight[5].forward, "mlp_all_reduce")->work.link_bytes,
                   2.0 * 7 / 8 * size);
  // The embedding all-reduces its vocab-parallel lookup; the loss all-reduces 3 fp32 per token.
  EXPECT_NE(find_op(two[0].forward, "embedding_all_reduce"), nullptr);
  EXPECT_DOUBLE_EQ(find_op(two.back().forward, "cross_entropy_all_reduce")->work.link_bytes,
                   3.0 * 4 * 2 * 2048);
}

TEST(WorkloadOpsTest, SequenceParallelismSwapsAllReduceForReduceScatterAndAllGather) {
  const ModelSpec gpt = model("gpt3-6.7b");
  const LayerUnit plain = layer_units(gpt, config_for(gpt, 4))[5];
  const LayerUnit sp = layer_units(gpt, config_for(gpt, 4, 1, true))[5];
  EXPECT_EQ(names_of(sp.forward, WorkKind::kCollective),
            (std::vector<std::string>{"attn_all_gather", "attn_reduce_scatter", "mlp_all_gather",
                                      "mlp_reduce_scatter"}));
  EXPECT_DOUBLE_EQ(total_link_bytes(sp.forward), total_link_bytes(plain.forward));
  EXPECT_DOUBLE_EQ(flops_of(sp.forward, WorkKind::kMatmul),
                   flops_of(plain.forward, WorkKind::kMatmul));
  // Backward: the conjugate collectives move the same bytes, plus Megatron's re-gather of each
  // column-parallel GEMM's sequence-sharded input for its weight gradient.
  const Op* regather = find_op(sp.backward, "attn_input_regather");
  ASSERT_NE(regather, nullptr);
  EXPECT_DOUBLE_EQ(total_link_bytes(sp.backward),
                   total_link_bytes(plain.backward) + 2.0 * regather->work.link_bytes);
  // Norms and residuals work on a sequence shard.
  EXPECT_DOUBLE_EQ(find_op(sp.forward, "input_norm")->work.memory_bytes,
                   find_op(plain.forward, "input_norm")->work.memory_bytes / 4);
}

TEST(WorkloadOpsTest, GroupedQueryAttentionShrinksKeyValueProjection) {
  const ModelSpec llama = model("llama3.3-70b");
  const auto units = layer_units(llama, config_for(llama, 8));
  const double T = 2.0 * 8192, h = 8192;
  EXPECT_DOUBLE_EQ(find_op(units[1].forward, "qkv_proj")->work.flops,
                   2.0 * T * h * (8192 + 2 * 1024) / 8);
  // SwiGLU: gate, up and down projections.
  EXPECT_EQ(names_of(units[1].forward, WorkKind::kMatmul),
            (std::vector<std::string>{"qkv_proj", "out_proj", "mlp_gate_proj", "mlp_up_proj",
                                      "mlp_down_proj"}));
  EXPECT_NE(find_op(units[1].forward, "rotary_embedding"), nullptr);
  const ModelSpec qwen = model("qwen3-1.7b");
  EXPECT_NE(find_op(layer_units(qwen, config_for(qwen))[1].forward, "qk_norm"), nullptr);
}

TEST(WorkloadOpsTest, BackwardMirrorsForward) {
  const ModelSpec gpt = model("gpt3-1.3b");
  const LayerUnit unit = layer_units(gpt, config_for(gpt))[4];
  // Every GEMM has a dgrad and a wgrad of the same FLOPs, in reverse order.
  std::vector<std::string> expected;
  for (auto it = unit.forward.rbegin(); it != unit.forward.rend(); ++it) {
    if (it->work.kind == WorkKind::kMatmul) {
      expected.push_back(it->name + "_dgrad");
      expected.push_back(it->name + "_wgrad");
      EXPECT_DOUBLE_EQ(find_op(unit.backward, it->name + "_wgrad")->work.flops, it->work.flops);
    }
  }
  EXPECT_EQ(names_of(unit.backward, WorkKind::kMatmul), expected);
  EXPECT_EQ(unit.backward.front().name, "mlp_residual_bwd");
  EXPECT_EQ(unit.backward.back().name, "input_norm_bwd");
  EXPECT_DOUBLE_EQ(find_op(unit.backward, "mlp_norm_bwd")->work.memory_bytes,
                   2.0 * find_op(unit.forward, "mlp_norm")->work.memory_bytes);
}

TEST(WorkloadOpsTest, RecomputeRepeatsTheLayerForwardOnly) {
  const ModelSpec gpt = model("gpt3-1.3b");
  ParallelConfig c = config_for(gpt, 2);
  EXPECT_TRUE(layer_units(gpt, c)[1].recompute.empty());
  c.recompute = true;
  const auto units = layer_units(gpt, c);
  std::vector<std::string> forward, recompute;
  for (const Op& op : units[1].forward) forward.push_back(op.name);
  for (const Op& op : units[1].recompute) recompute.push_back(op.name);
  EXPECT_EQ(recompute, forward);  // collectives included
  // The first unit's embedding is not recomputed; the LM head is never recomputed.
  EXPECT_EQ(units[0].recompute.size(), units[1].recompute.size());
  EXPECT_EQ(units[0].recompute.front().name, "input_norm");
  EXPECT_TRUE(units.back().recompute.empty());
}

TEST(WorkloadOpsTest, EncoderDecoderAddsCrossAttentionToDecoderLayers) {
  const ModelSpec t5 = model("t5-3b");
  const auto units = layer_units(t5, config_for(t5, 2));
  EXPECT_EQ(units[23].name, "encoder layer 23");
  EXPECT_EQ(units[24].name, "decoder layer 0");
  EXPECT_EQ(find_op(units[10].forward, "cross_attention"), nullptr);
  EXPECT_NE(find_op(units[30].forward, "cross_attention"), nullptr);
  EXPECT_NE(find_op(units[23].forward, "encoder_final_norm"), nullptr);
  EXPECT_NE(find_op(units[24].forward, "decoder_embedding_lookup"), nullptr);
  EXPECT_TRUE(units[24].uses_input_embedding);
  // Causal decoder self-attention costs half the encoder's; cross-attention is full.
  const double encoder = find_op(units[10].forward, "attention")->work.flops;
  EXPECT_DOUBLE_EQ(find_op(units[30].forward, "attention")->work.flops, encoder / 2);
  EXPECT_DOUBLE_EQ(find_op(units[30].forward, "cross_attention")->work.flops, encoder);
  // Decoder layers are heavier (the cross-attention projections).
  EXPECT_GT(total_flops(units[30].forward), total_flops(units[10].forward));
}

TEST(WorkloadOpsTest, UnfusedAttentionSplitsScoresSoftmaxContext) {
  const ModelSpec gpt = model("gpt3-1.3b");
  ParallelConfig c = config_for(gpt);
  c.flash_attention = false;
  const LayerUnit unit = layer_units(gpt, c)[2];
  const double b = 2, s = 2048, h = 2048, a = 16;
  EXPECT_DOUBLE_EQ(find_op(unit.forward, "attention_scores")->work.flops, 2.0 * b * s * s * h);
  // Softmax writes probabilities, and dropout a mask and the dropped probabilities.
  EXPECT_DOUBLE_EQ(find_op(unit.forward, "attention_softmax")->work.memory_bytes,
                   b * a * s * s * (2 * 2 + 1 + 2));
  EXPECT_EQ(find_op(unit.forward, "attention"), nullptr);
}

// Per-GPU parameters summed over units and embedding matrices reproduce parameter_count up
// to vocabulary padding, and shrink with tp.
TEST(WorkloadOpsTest, UnitParametersAddUpToTheModel) {
  for (const ModelSpec& m : builtin_models()) {
    for (int tp : {1, 2}) {
      const auto units = layer_units(m, config_for(m, tp));
      Partition whole;
      whole.boundaries = {0, static_cast<int>(units.size())};
      const StageWork stage = build_stage_work(m, config_for(m, tp), units, whole, 0);
      const double padding =
          double(padded_vocab_size(m, tp) - m.vocab_size) *
          ((m.tied_embeddings ? 1 : 2) * m.hidden_size + (m.lm_head_transform ? 1 : 0)) / tp;
      const double expected = parameter_count(m) / tp;
      // Replicated norms and row-parallel biases are held whole by every rank.
      EXPECT_NEAR((stage.parameters_per_gpu - padding) / expected, 1.0, tp == 1 ? 1e-12 : 1e-2)
          << m.name << " tp " << tp;
    }
  }
}

TEST(WorkloadOpsTest, StageWorkConcatenatesUnitsAndAddsIterationOps) {
  const ModelSpec gpt = model("gpt3-1.3b");
  ParallelConfig c = config_for(gpt, 2, 4);
  c.dp = 4;
  const auto units = layer_units(gpt, c);
  auto partition = parse_partition("[0, 6, 12, 19, 25]", 25, 4);
  ASSERT_TRUE(partition.ok());
  const StageWork first = build_stage_work(gpt, c, units, *partition, 0);
  const StageWork middle = build_stage_work(gpt, c, units, *partition, 2);
  const StageWork last = build_stage_work(gpt, c, units, *partition, 3);
  EXPECT_EQ(middle.first_unit, 12);
  EXPECT_EQ(middle.end_unit, 19);
  EXPECT_DOUBLE_EQ(total_flops(middle.forward), 7 * total_flops(units[13].forward));
  EXPECT_EQ(middle.backward.front().name, units[18].backward.front().name);
  EXPECT_EQ(first.forward.front().name, "embedding_lookup");
  EXPECT_EQ(last.forward.back().name, "cross_entropy_all_reduce");
  // Stages send b·s·h bf16 activations onward; the last sends nothing.
  EXPECT_DOUBLE_EQ(first.p2p_send_bytes, 2.0 * 2048 * 2048 * 2);
  EXPECT_EQ(last.p2p_send_bytes, 0.0);
  // Tied embeddings: first and last stage all-reduce the shared matrix's gradient.
  auto names = [](const StageWork& w) {
    std::vector<std::string> out;
    for (const Op& op : w.per_iteration) out.push_back(op.name);
    return out;
  };
  EXPECT_EQ(names(first), (std::vector<std::string>{"grad_all_reduce", "embedding_grad_all_reduce",
                                                    "optimizer_step"}));
  EXPECT_EQ(names(middle), (std::vector<std::string>{"grad_all_reduce", "optimizer_step"}));
  EXPECT_EQ(names(last), names(first));
  const double matrix = 50432.0 / 2 * 2048;  // padded to a multiple of 128·tp, split over tp
  EXPECT_DOUBLE_EQ(
      last.parameters_per_gpu - (units[19].parameters_per_gpu * 5 + units[24].parameters_per_gpu),
      matrix);
  // Gradients are reduced in fp32 over dp = 4 (ring: 2·3/4 of the buffer).
  EXPECT_DOUBLE_EQ(find_op(middle.per_iteration, "grad_all_reduce")->work.link_bytes,
                   2.0 * 3 / 4 * 4.0 * middle.parameters_per_gpu);
  c.distributed_optimizer = true;
  const StageWork sharded = build_stage_work(gpt, c, units, *partition, 2);
  EXPECT_EQ(names(sharded), (std::vector<std::string>{"grad_reduce_scatter", "param_all_gather",
                                                      "optimizer_step"}));
  EXPECT_DOUBLE_EQ(find_op(sharded.per_iteration, "optimizer_step")->work.memory_bytes,
                   find_op(middle.per_iteration, "optimizer_step")->work.memory_bytes / 4);
}

}  // namespace
}  // namespace powertrain::workload
