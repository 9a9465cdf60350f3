// Per-GPU ops of each layer unit under Megatron tensor (and sequence) parallelism: forward,
// backward and recompute ops, parameters and stored activations. Formulas: docs/workload.md.
#include <fmt/core.h>

#include <cassert>

#include "workload/job.h"

namespace powertrain::workload {

using device::Precision;
using device::Work;
using device::WorkKind;

namespace {

// Fields by name, so that fields added to device::Work later keep their defaults.
Work make_work(WorkKind kind, Precision precision, double flops, double memory_bytes,
               double link_bytes) {
  Work w;
  w.kind = kind;
  w.precision = precision;
  w.flops = flops;
  w.memory_bytes = memory_bytes;
  w.link_bytes = link_bytes;
  return w;
}

// Shapes of one microbatch on one GPU of a TP group.
struct Shape {
  const ModelSpec& spec;
  const ParallelConfig& config;
  double b, s, tokens, h, q, kv, f, vocab, t, heads;  // heads: per TP rank
  double cp;                                          // context-parallel degree
  double s_local;       // tokens of each sequence on this rank: s / cp (tokens = b · s_local)
  double pa, pg;        // activation and GEMM-operand element bytes
  bool sp;              // sequence parallelism in effect (tp > 1)
  double tokens_local;  // tokens held by norms/residuals: tokens / t with SP
  double norm_params;   // one norm's scale (+ bias)
  double bias;          // 1 when projections have biases
  Precision gemm_precision, act_precision;

  Shape(const ModelSpec& m, const ParallelConfig& c)
      : spec(m),
        config(c),
        b(c.microbatch_size),
        s(c.seq_len),
        tokens(b * s / c.cp),
        h(m.hidden_size),
        q(m.q_dim()),
        kv(m.kv_dim()),
        f(m.ffn_hidden_size),
        vocab(padded_vocab_size(m, c.tp)),
        t(c.tp),
        heads(double(m.num_heads) / c.tp),
        cp(c.cp),
        s_local(s / c.cp),
        pa(activation_element_bytes(c.precision)),
        pg(gemm_operand_bytes(c.precision)),
        sp(c.sequence_parallel && c.tp > 1),
        tokens_local(sp ? tokens / t : tokens),
        norm_params(m.norm == NormKind::kLayerNorm ? 2.0 * h : h),
        bias(m.linear_bias ? 1.0 : 0.0),
        gemm_precision(c.precision),
        act_precision(c.precision == Precision::kFp8 ? Precision::kBf16 : c.precision) {}
};

// Collects a unit's forward ops and, for each step, the backward ops it causes; backward runs
// the steps in reverse.
class UnitBuilder {
 public:
  explicit UnitBuilder(const Shape& x) : x_(x) {}

  void add(Op forward, std::vector<Op> backward) {
    forward_.push_back(std::move(forward));
    groups_.push_back(std::move(backward));
  }
  void add_backward_only(std::vector<Op> backward) { groups_.push_back(std::move(backward)); }
  void prepend_to_last_group(Op op) { groups_.back().insert(groups_.back().begin(), op); }

  // Work makers.
  Op gemm(std::string name, double m, double k, double n) const {
    Work w = make_work(WorkKind::kMatmul, x_.gemm_precision, 2.0 * m * k * n,
                       (m * k + k * n) * x_.pg + m * n * x_.pa, 0.0);
    return {std::move(name), w};
  }
  // dX = dY Wᵀ, then dW = Xᵀ dY accumulated into the fp32 main gradient (read + write).
  std::vector<Op> gemm_backward(const std::string& name, double m, double k, double n) const {
    Work dgrad = make_work(WorkKind::kMatmul, x_.gemm_precision, 2.0 * m * k * n,
                           (m * n + k * n) * x_.pg + m * k * x_.pa, 0.0);
    Work wgrad = make_work(WorkKind::kMatmul, x_.gemm_precision, 2.0 * m * k * n,
                           (m * k + m * n) * x_.pg + k * n * 8.0, 0.0);
    return {{name + "_dgrad", dgrad}, {name + "_wgrad", wgrad}};
  }
  Op memory(std::string name, double bytes) const {
    return {std::move(name), make_work(WorkKind::kMemoryBound, x_.act_precision, 0.0, bytes, 0.0)};
  }
  // Backward of an elementwise/norm op reads the saved input and dY and writes dX (and small
  // parameter grads): about twice the forward traffic.
  std::vector<Op> memory_backward(const Op& forward) const {
    return {memory(forward.name + "_bwd", 2.0 * forward.work.memory_bytes)};
  }
  void add_memory(std::string name, double bytes) {
    Op op = memory(std::move(name), bytes);
    auto backward = memory_backward(op);
    add(std::move(op), std::move(backward));
  }
  void add_gemm(const std::string& name, double m, double k, double n) {
    add(gemm(name, m, k, n), gemm_backward(name, m, k, n));
  }

  // Ring collectives over the TP group; size is the full (unsharded) tensor.
  Op all_reduce(std::string name, double size_bytes, Precision p) const {
    return {std::move(name), make_work(WorkKind::kCollective, p, 0.0, 2.0 * size_bytes,
                                       2.0 * (x_.t - 1.0) / x_.t * size_bytes)};
  }
  Op all_gather(std::string name, double size_bytes) const {
    return {std::move(name),
            make_work(WorkKind::kCollective, x_.act_precision, 0.0, size_bytes / x_.t + size_bytes,
                      (x_.t - 1.0) / x_.t * size_bytes)};
  }
  // Ring all-gather (reduce-scatter) over the context-parallel group; size is the gathered tensor.
  Op cp_gather_or_scatter(std::string name, double size_bytes) const {
    Op op{std::move(name),
          make_work(WorkKind::kCollective, x_.act_precision, 0.0, size_bytes / x_.cp + size_bytes,
                    (x_.cp - 1.0) / x_.cp * size_bytes)};
    op.group_size = static_cast<int>(x_.cp);
    return op;
  }
  Op reduce_scatter(std::string name, double size_bytes) const {
    return all_gather(std::move(name), size_bytes);  // same traffic, reversed direction
  }

  // Entering column-parallel GEMMs (Megatron's f): identity forward with an all-reduce of the
  // input gradient backward; with SP an all-gather forward and a reduce-scatter backward.
  void enter_column_parallel(const std::string& prefix) {
    const double size = x_.tokens * x_.h * x_.pa;
    if (x_.sp) {
      add(all_gather(prefix + "_all_gather", size),
          {reduce_scatter(prefix + "_all_gather_bwd", size)});
    } else if (x_.t > 1) {
      add_backward_only({all_reduce(prefix + "_input_grad_all_reduce", size, x_.act_precision)});
    }
  }
  // With SP only the sequence shard of a column-parallel GEMM's input is saved, so backward
  // all-gathers it again for the weight gradient. Call after the GEMMs that read it.
  void regather_for_wgrad(const std::string& prefix) {
    if (x_.sp)
      prepend_to_last_group(all_gather(prefix + "_input_regather", x_.tokens * x_.h * x_.pa));
  }
  // Leaving row-parallel GEMMs (Megatron's g): all-reduce forward, identity backward; with SP
  // a reduce-scatter forward and an all-gather backward.
  void exit_row_parallel(const std::string& prefix) {
    const double size = x_.tokens * x_.h * x_.pa;
    if (x_.sp) {
      add(reduce_scatter(prefix + "_reduce_scatter", size),
          {all_gather(prefix + "_reduce_scatter_bwd", size)});
    } else if (x_.t > 1) {
      add(all_reduce(prefix + "_all_reduce", size, x_.act_precision), {});
    }
  }

  std::size_t forward_size() const { return forward_.size(); }
  const std::vector<Op>& forward() const { return forward_; }
  std::vector<Op> backward() const {
    std::vector<Op> ops;
    for (auto it = groups_.rbegin(); it != groups_.rend(); ++it) {
      ops.insert(ops.end(), it->begin(), it->end());
    }
    return ops;
  }

  double stored_bytes = 0.0;  // activations saved for backward
  double params = 0.0;        // per GPU, excluding embedding matrices

 private:
  const Shape& x_;
  std::vector<Op> forward_;
  std::vector<std::vector<Op>> groups_;
};

// Token embedding (vocab-parallel lookup), position/type tables, dropout, Bloom's norm.
void add_embedding(UnitBuilder& u, const Shape& x, const std::string& prefix, bool tables) {
  const ModelSpec& m = x.spec;
  // Each rank reads the rows of its vocab shard (1/t of tokens on average) and writes the
  // full output (zeros elsewhere) before the reduction.
  Op lookup = u.memory(prefix + "_lookup", x.tokens * x.h * x.pa * (1.0 / x.t + 1.0));
  // Backward scatter-adds dY into the fp32 main gradient rows of the shard.
  Op lookup_bwd =
      u.memory(prefix + "_lookup_bwd", x.tokens * x.h * x.pa + x.tokens * x.h / x.t * 8.0);
  u.add(std::move(lookup), {lookup_bwd});
  const double size = x.tokens * x.h * x.pa;
  if (x.sp) {
    u.add(u.reduce_scatter(prefix + "_reduce_scatter", size),
          {u.all_gather(prefix + "_reduce_scatter_bwd", size)});
  } else if (x.t > 1) {
    u.add(u.all_reduce(prefix + "_all_reduce", size, x.act_precision), {});
  }
  int added_tables = 0;
  if (tables && m.position == PositionEncoding::kLearned) {
    ++added_tables;
    u.params += double(m.default_seq_len) * x.h;
  }
  if (tables && m.token_type_vocab > 0) {
    ++added_tables;
    u.params += double(m.token_type_vocab) * x.h;
  }
  if (added_tables > 0 || m.dropout) {
    // Read the lookup result and each table's rows, write the sum (+ dropout mask).
    u.add_memory(prefix + "_add_dropout",
                 x.tokens_local * x.h * (x.pa * (2.0 + added_tables) + (m.dropout ? 1.0 : 0.0)));
    if (m.dropout) u.stored_bytes += x.tokens_local * x.h;  // mask
  }
  if (tables && m.embedding_norm) {
    u.add_memory(prefix + "_norm", 2.0 * x.tokens_local * x.h * x.pa);
    u.stored_bytes += x.tokens_local * x.h * x.pa;
    u.params += x.norm_params;
  }
}

// Self- or cross-attention with its norm, projections, TP collectives and residual.
void add_attention_block(UnitBuilder& u, const Shape& x, bool cross, bool causal) {
  const ModelSpec& m = x.spec;
  const std::string prefix = cross ? "cross_attn" : "attn";
  const double hidden_local = x.tokens_local * x.h * x.pa;
  u.add_memory(cross ? "cross_attn_norm" : "input_norm", 2.0 * hidden_local);
  u.stored_bytes += hidden_local;
  u.params += x.norm_params;

  u.enter_column_parallel(prefix);
  if (cross) {
    u.add_gemm("cross_attn_q_proj", x.tokens, x.h, x.q / x.t);
    u.regather_for_wgrad(prefix);
    // K and V come from the encoder output (same length here), stored once for all decoder
    // layers and so not charged per layer.
    u.add_gemm("cross_attn_kv_proj", x.tokens, x.h, 2.0 * x.kv / x.t);
  } else {
    u.add_gemm("qkv_proj", x.tokens, x.h, (x.q + 2.0 * x.kv) / x.t);
    u.regather_for_wgrad(prefix);
  }
  u.stored_bytes += hidden_local;                                // projection input
  u.stored_bytes += x.tokens * (x.q + 2.0 * x.kv) / x.t * x.pa;  // Q, K, V
  u.params += (x.h + x.bias) * (x.q + 2.0 * x.kv) / x.t;

  if (!cross && m.qk_norm) {
    u.add_memory("qk_norm", 2.0 * x.tokens * (x.q + x.kv) / x.t * x.pa);
    u.stored_bytes += x.tokens * (x.q + x.kv) / x.t * x.pa;
    u.params += 2.0 * m.head_dim;
  }
  if (!cross && m.position == PositionEncoding::kRotary) {
    u.add_memory("rotary_embedding", 2.0 * x.tokens * (x.q + x.kv) / x.t * x.pa);
  }

  const std::string core = cross ? "cross_attention" : "attention";
  // Context parallelism: the rank's s/cp queries attend to all s keys, so K and V of the whole
  // sequence are all-gathered over the CP group first (Llama 3 §3.3.2; Megatron's causal
  // load balancing gives every rank half of the triangle's work, s_local · s / 2). The gathered
  // K and V are kept for backward, which reduce-scatters dK and dV.
  const double kv_full_bytes = x.tokens * x.cp * 2.0 * x.kv / x.t * x.pa;
  if (x.cp > 1) {
    u.add(u.cp_gather_or_scatter(prefix + "_cp_kv_all_gather", kv_full_bytes),
          {u.cp_gather_or_scatter(prefix + "_cp_kv_reduce_scatter_bwd", kv_full_bytes)});
    u.stored_bytes += kv_full_bytes * (x.cp - 1.0) / x.cp;
  }
  const double score_elems = x.b * x.heads * x.s_local * x.s;  // per rank
  const double lse_bytes = 4.0 * x.b * x.heads * x.s_local;    // fp32 log-sum-exp per query row
  if (x.config.flash_attention) {
    // Q·Kᵀ and P·V: 2 · 2·b·s²·(heads·head_dim)/t; a causal kernel skips the upper triangle.
    const double flops = 4.0 * x.b * x.s_local * x.s * x.q / x.t * (causal ? 0.5 : 1.0);
    const double qkv_bytes = x.tokens * (x.q + 2.0 * x.kv * x.cp) / x.t * x.pa;
    const double o_bytes = x.tokens * x.q / x.t * x.pa;
    Work fwd = make_work(WorkKind::kAttention, x.act_precision, flops,
                         qkv_bytes + o_bytes + lse_bytes, 0.0);
    // Backward recomputes the scores: 2.5× forward FLOPs; reads Q, K, V, O, dO, LSE and writes
    // dQ, dK, dV.
    Work bwd = make_work(WorkKind::kAttention, x.act_precision, 2.5 * flops,
                         2.0 * qkv_bytes + 2.0 * o_bytes + lse_bytes, 0.0);
    u.add({core, fwd}, {{core + "_bwd", bwd}});
    u.stored_bytes += lse_bytes;
  } else {
    // Unfused (Megatron without flash): full s² scores even when causal (masked, not skipped).
    const double matmul_flops = 2.0 * x.b * x.s_local * x.s * x.q / x.t;
    Work scores = make_work(WorkKind::kMatmul, x.act_precision, matmul_flops,
                            x.tokens * (x.q + x.kv * x.cp) / x.t * x.pa + score_elems * x.pa, 0.0);
    Work context = make_work(WorkKind::kMatmul, x.act_precision, matmul_flops,
                             score_elems * x.pa + x.tokens * (x.kv * x.cp + x.q) / x.t * x.pa, 0.0);
    auto twice = [](const std::string& name, const Work& w) {
      return std::vector<Op>{{name + "_dgrad", w}, {name + "_wgrad", w}};
    };
    u.add({core + "_scores", scores}, twice(core + "_scores", scores));
    // Scale, mask, softmax (+ dropout: mask and output written).
    u.add_memory(core + "_softmax", score_elems * (2.0 * x.pa + (m.dropout ? 1.0 + x.pa : 0.0)));
    u.add({core + "_context", context}, twice(core + "_context", context));
    u.stored_bytes += score_elems * (x.pa + (m.dropout ? 1.0 + x.pa : 0.0));
  }

  u.add_gemm(cross ? "cross_attn_out_proj" : "out_proj", x.tokens, x.q / x.t, x.h);
  u.stored_bytes += x.tokens * x.q / x.t * x.pa;
  u.params += x.q / x.t * x.h + x.bias * x.h;  // row-parallel bias is replicated
  u.exit_row_parallel(prefix);

  // Fused bias + dropout + residual add: read branch and residual, write sum (and mask).
  u.add_memory(prefix + "_residual", x.tokens_local * x.h * (3.0 * x.pa + (m.dropout ? 1.0 : 0.0)));
  if (m.dropout) u.stored_bytes += x.tokens_local * x.h;
}

void add_mlp_block(UnitBuilder& u, const Shape& x) {
  const ModelSpec& m = x.spec;
  const double hidden_local = x.tokens_local * x.h * x.pa;
  const double ffn_local = x.tokens * x.f / x.t * x.pa;
  u.add_memory("mlp_norm", 2.0 * hidden_local);
  u.stored_bytes += hidden_local;
  u.params += x.norm_params;

  u.enter_column_parallel("mlp");
  if (m.gated_mlp) {
    u.add_gemm("mlp_gate_proj", x.tokens, x.h, x.f / x.t);
    u.add_gemm("mlp_up_proj", x.tokens, x.h, x.f / x.t);
    u.regather_for_wgrad("mlp");
    u.add_memory("mlp_activation", 3.0 * ffn_local);  // silu(gate) · up
    u.stored_bytes += hidden_local + 2.0 * ffn_local;
    u.params += 2.0 * (x.h + x.bias) * x.f / x.t;
    u.add_gemm("mlp_down_proj", x.tokens, x.f / x.t, x.h);
  } else {
    u.add_gemm("mlp_fc1", x.tokens, x.h, x.f / x.t);
    u.regather_for_wgrad("mlp");
    u.add_memory("mlp_activation", 2.0 * ffn_local);
    u.stored_bytes += hidden_local + ffn_local;
    u.params += (x.h + x.bias) * x.f / x.t;
    u.add_gemm("mlp_fc2", x.tokens, x.f / x.t, x.h);
  }
  u.stored_bytes += ffn_local;  // down projection input
  u.params += x.f / x.t * x.h + x.bias * x.h;
  u.exit_row_parallel("mlp");
  u.add_memory("mlp_residual", x.tokens_local * x.h * (3.0 * x.pa + (m.dropout ? 1.0 : 0.0)));
  if (m.dropout) u.stored_bytes += x.tokens_local * x.h;
}

LayerUnit transformer_layer(const Shape& x, int index) {
  const ModelSpec& m = x.spec;
  const bool enc_dec = m.architecture == Architecture::kEncoderDecoder;
  const bool decoder_layer = enc_dec && index >= m.num_encoder_layers;
  LayerUnit unit;
  if (enc_dec) {
    unit.name = decoder_layer ? fmt::format("decoder layer {}", index - m.num_encoder_layers)
                              : fmt::format("encoder layer {}", index);
  } else {
    unit.name = fmt::format("layer {}", index);
  }
  UnitBuilder u(x);
  if (index == 0) {
    add_embedding(u, x, "embedding", true);
    unit.uses_input_embedding = true;
  }
  if (enc_dec && index == m.num_encoder_layers) {
    add_embedding(u, x, "decoder_embedding", false);
    unit.uses_input_embedding = true;
  }
  const std::size_t layer_begin = u.forward_size();
  const double stored_before = u.stored_bytes;

  const bool causal = m.architecture == Architecture::kDecoder || decoder_layer;
  add_attention_block(u, x, false, causal);
  if (decoder_layer) add_attention_block(u, x, true, false);
  add_mlp_block(u, x);
  // T5's relative-position bias table (32 buckets per head) lives in the first layer of each
  // stack.
  if (m.position == PositionEncoding::kRelative &&
      (index == 0 || (enc_dec && index == m.num_encoder_layers))) {
    u.params += 32.0 * x.heads;
  }
  const std::size_t layer_end = u.forward_size();
  const double layer_stored = u.stored_bytes - stored_before;

  if (enc_dec && index == m.num_encoder_layers - 1 && m.final_norm) {
    u.add_memory("encoder_final_norm", 2.0 * x.tokens_local * x.h * x.pa);
    u.stored_bytes += x.tokens_local * x.h * x.pa;
    u.params += x.norm_params;
  }

  unit.forward = u.forward();
  unit.backward = u.backward();
  unit.parameters_per_gpu = u.params;
  unit.stored_activation_bytes = u.stored_bytes;
  if (x.config.recompute) {
    // Full recomputation keeps only the layer's input and re-runs its forward (collectives
    // included) right before its backward; the embedding is not recomputed.
    unit.recompute.assign(unit.forward.begin() + layer_begin, unit.forward.begin() + layer_end);
    unit.stored_activation_bytes += x.tokens_local * x.h * x.pa - layer_stored;
    unit.recompute_working_bytes = layer_stored;
  }
  return unit;
}

LayerUnit lm_head(const Shape& x) {
  const ModelSpec& m = x.spec;
  LayerUnit unit;
  unit.name = "lm head";
  unit.kind = UnitKind::kLmHead;
  unit.uses_output_layer = true;
  UnitBuilder u(x);
  const double hidden_local = x.tokens_local * x.h * x.pa;
  const double hidden_full = x.tokens * x.h * x.pa;
  if (m.final_norm) {
    u.add_memory("final_norm", 2.0 * hidden_local);
    u.stored_bytes += hidden_local;
    u.params += x.norm_params;
  }
  u.enter_column_parallel("lm_head");
  u.stored_bytes += hidden_local;  // input of the first GEMM (sequence shard with SP)
  if (m.lm_head_transform) {
    // BERT: a replicated dense h×h, GELU and LayerNorm on every token.
    u.add_gemm("lm_head_transform", x.tokens, x.h, x.h);
    u.regather_for_wgrad("lm_head");
    u.add_memory("lm_head_transform_gelu_norm", 4.0 * hidden_full);
    u.stored_bytes += 2.0 * hidden_full + hidden_full;  // GELU, norm and vocab GEMM inputs
    u.params += x.h * x.h + x.h + x.norm_params + x.vocab / x.t;
    u.add_gemm("lm_head", x.tokens, x.h, x.vocab / x.t);
  } else {
    u.add_gemm("lm_head", x.tokens, x.h, x.vocab / x.t);
    u.regather_for_wgrad("lm_head");
  }
  // Vocab-parallel cross-entropy as one fused softmax-cross-entropy kernel (Apex/Megatron fused
  // or torch's log_softmax + nll on half-precision logits): forward reads the logits and writes
  // the softmax kept for backward (p + p bytes per logit); backward reads it and writes the
  // logit gradient (p + p). An unfused fp32 version moves ~20x more bytes and would make the LM
  // head cost several layers, against the partitions Perseus measured (Table 7).
  const double logits = x.tokens * x.vocab / x.t;
  u.add(u.memory("cross_entropy", logits * 2.0 * x.pa),
        {u.memory("cross_entropy_bwd", logits * 2.0 * x.pa)});
  u.stored_bytes += x.pa * logits;
  if (x.t > 1) {
    // Max logit, target logit and sum of exponentials: three fp32 all-reduces of b·s values.
    u.add(u.all_reduce("cross_entropy_all_reduce", 3.0 * x.tokens * 4.0, Precision::kFp32), {});
  }
  unit.forward = u.forward();
  unit.backward = u.backward();
  unit.parameters_per_gpu = u.params;
  unit.stored_activation_bytes = u.stored_bytes;
  return unit;
}

}  // namespace

std::vector<LayerUnit> layer_units(const ModelSpec& spec, const ParallelConfig& config) {
  assert(validate_job(spec, config).ok());
  const Shape shape(spec, config);
  std::vector<LayerUnit> units;
  units.reserve(num_layer_units(spec));
  for (int i = 0; i < spec.num_layers; ++i) units.push_back(transformer_layer(shape, i));
  units.push_back(lm_head(shape));
  return units;
}

}  // namespace powertrain::workload
