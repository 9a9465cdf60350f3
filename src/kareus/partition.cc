#include "kareus/partition.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <queue>
#include <tuple>

namespace powertrain::kareus {

using device::WorkKind;

device::Work nanobatch_work(const device::Work& work) {
  device::KernelShape none;
  return device::token_fraction(work, none, 0.5);
}

Kernel nanobatch_kernel(const Kernel& full) {
  Kernel half = full;
  half.work = device::token_fraction(full.work, half.shape, 0.5);
  return half;
}

ShapeContext shape_context(const workload::ModelSpec& spec, const workload::ParallelConfig& config,
                           int sms) {
  ShapeContext c;
  const double cp = std::max(1, config.cp), tp = std::max(1, config.tp);
  c.tokens = double(config.microbatch_size) * config.seq_len / cp;
  c.hidden = spec.hidden_size;
  c.heads = spec.num_heads / tp;
  c.keys = config.seq_len;
  c.operand_bytes = workload::gemm_operand_bytes(config.precision);
  c.activation_bytes = workload::activation_element_bytes(config.precision);
  c.causal = spec.architecture == workload::Architecture::kDecoder;
  c.sequences = config.microbatch_size;
  c.seq_len = config.seq_len;
  c.cp = std::max(1, config.cp);
  c.sms = sms;
  return c;
}

double causal_attention_fill(int sequences, double seq_len, int cp, double heads, bool backward,
                             int sms, double tile) {
  if (sequences < 1 || sms < 1 || cp < 1 || tile <= 0.0 || heads < 1.0) return 0.0;
  const double chunks = cp > 1 ? 2.0 * cp : 1.0;
  const double chunk_blocks = seq_len / (chunks * tile);
  const long long heads_n = std::llround(heads);
  if (chunk_blocks < 1.0 || chunk_blocks != std::floor(chunk_blocks) ||
      std::abs(heads - double(heads_n)) > 1e-9)
    return 0.0;
  const long long nq = static_cast<long long>(chunk_blocks);
  // Blocks per rank: forward q blocks, backward key blocks (≤ all 2cp chunks).
  const double grid = double(sequences) * double(heads_n) * double(nq) * chunks;
  if (grid > double(1 << 20)) return 0.0;
  double worst = 1.0;
  for (int rank = 0; rank < cp; ++rank) {
    std::vector<long long> chunk_ids{rank};
    if (cp > 1) chunk_ids.push_back(2LL * cp - 1 - rank);
    std::priority_queue<double, std::vector<double>, std::greater<>> free_at;
    for (int i = 0; i < sms; ++i) free_at.push(0.0);
    double tiles = 0.0, makespan = 0.0;
    auto dispatch = [&](double work) {
      const double t = free_at.top() + work;
      free_at.pop();
      free_at.push(t);
      tiles += work;
      makespan = std::max(makespan, t);
    };
    for (long long chunk : chunk_ids) {
      const long long q0 = chunk * nq;  // the chunk's first query block; keys run 0..q0+nq−1
      for (long long h = 0; h < heads_n; ++h)
        for (int b = 0; b < sequences; ++b) {
          if (!backward) {
            for (long long m = 0; m < nq; ++m) dispatch(double(q0 + m + 1));
          } else {
            for (long long j = 0; j < q0 + nq; ++j) dispatch(double(std::min(nq, q0 + nq - j)));
          }
        }
    }
    if (makespan > 0.0) worst = std::min(worst, tiles / (double(sms) * makespan));
  }
  return worst;
}

namespace {

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

bool close_to(double a, double b) { return std::abs(a - b) <= 1e-9 * std::max(std::abs(b), 1.0); }

}  // namespace

device::KernelShape op_shape(const workload::Op& op, const ShapeContext& ctx) {
  device::KernelShape shape;
  const device::Work& w = op.work;
  const double m = ctx.tokens, h = ctx.hidden;
  if (m <= 0.0 || h <= 0.0) return shape;
  if (w.kind == WorkKind::kAttention) {
    if (ctx.heads > 0.0 && ctx.keys > 0.0) shape = {m, ctx.heads, ctx.keys, false, 0.0};
    return shape;
  }
  if (w.kind != WorkKind::kMatmul) return shape;
  std::string base = op.name;
  int role = 0;  // 0 forward, 1 dgrad, 2 wgrad
  if (ends_with(base, "_dgrad")) {
    role = 1;
    base.resize(base.size() - 6);
  } else if (ends_with(base, "_wgrad")) {
    role = 2;
    base.resize(base.size() - 6);
  }
  const bool projection = ends_with(base, "_proj") || ends_with(base, "mlp_fc1") ||
                          ends_with(base, "mlp_fc2") || base == "lm_head" ||
                          base == "lm_head_transform";
  if (!projection) return shape;
  const bool to_hidden =
      ends_with(base, "out_proj") || ends_with(base, "down_proj") || ends_with(base, "mlp_fc2");
  const double kn = w.flops / (2.0 * m);
  const double k = to_hidden ? kn / h : h, n = to_hidden ? h : kn / h;
  const double pg = ctx.operand_bytes, pa = ctx.activation_bytes;
  double bytes = 0.0;
  switch (role) {
    case 0:
      shape = {m, n, k, false, k * n * pg};
      bytes = (m * k + k * n) * pg + m * n * pa;
      break;
    case 1:
      shape = {m, k, n, false, k * n * pg};
      bytes = (m * n + k * n) * pg + m * k * pa;
      break;
    default:
      shape = {k, n, m, true, k * n * 8.0};
      bytes = (m * k + m * n) * pg + k * n * 8.0;
      break;
  }
  if (!close_to(bytes, w.memory_bytes)) return {};  // not layer_ops' GEMM: no shape
  return shape;
}

namespace {

// Merges consecutive memory-bound ops into one launch slot (short kernels: more launch timings
// would add little, §4.5).
// The causal attention term of an attention kernel over `sequences` sequences (0 otherwise).
double attention_fill(const workload::Op& op, const ShapeContext& c, int sequences) {
  if (op.work.kind != WorkKind::kAttention || !c.causal || c.sms < 1) return 0.0;
  return causal_attention_fill(sequences, c.seq_len, c.cp, c.heads, ends_with(op.name, "_bwd"),
                               c.sms);
}

// A nanobatch holds half of the microbatch's sequences (none whole for an odd count: no term).
int nanobatch_sequences(const ShapeContext& c) {
  return c.sequences % 2 == 0 ? c.sequences / 2 : 0;
}

std::vector<Kernel> to_kernels(const std::vector<workload::Op>& ops, const ShapeContext& shapes) {
  std::vector<Kernel> kernels;
  for (const workload::Op& op : ops) {
    Kernel k = nanobatch_kernel({op.name, op.work, 1, op_shape(op, shapes)});
    k.causal_fill = attention_fill(op, shapes, nanobatch_sequences(shapes));
    if (!kernels.empty() && k.work.kind == WorkKind::kMemoryBound &&
        kernels.back().work.kind == WorkKind::kMemoryBound) {
      Kernel& last = kernels.back();
      last.name += "+" + op.name;
      last.work.flops += k.work.flops;
      last.work.memory_bytes += k.work.memory_bytes;
      ++last.launches;
    } else {
      kernels.push_back(k);
    }
  }
  return kernels;
}

auto work_key(const device::Work& w) {
  return std::make_tuple(static_cast<int>(w.kind), static_cast<int>(w.precision), w.flops,
                         w.memory_bytes, w.link_bytes, w.backward);
}

auto shape_key(const Kernel& k) {
  return std::make_tuple(k.launches, k.shape.rows, k.shape.cols, k.shape.depth,
                         k.shape.tokens_in_depth, k.shape.token_invariant_bytes, k.causal_fill);
}

bool same_kernels(const PartitionType& a, const std::vector<Kernel>& compute, const Kernel& comm) {
  if (a.compute.size() != compute.size() || work_key(a.comm.work) != work_key(comm.work))
    return false;
  for (std::size_t i = 0; i < compute.size(); ++i)
    if (work_key(a.compute[i].work) != work_key(compute[i].work) ||
        shape_key(a.compute[i]) != shape_key(compute[i]))
      return false;
  return true;
}

std::string segment_name(const std::vector<Kernel>& kernels) {
  if (kernels.empty()) return "";
  if (kernels.size() == 1) return kernels.front().name;
  return kernels.front().name + ".." + kernels.back().name;
}

}  // namespace

MicrobatchWork build_microbatch_work(const std::vector<workload::Op>& ops, bool backward,
                                     int group_size, const ShapeContext& shapes) {
  MicrobatchWork out;
  out.backward = backward;
  out.sequential = ops;
  for (const workload::Op& op : ops)
    out.sequential_kernels.push_back(
        {op.name, op.work, 1, op_shape(op, shapes), attention_fill(op, shapes, shapes.sequences)});
  // Segments S_0..S_n of compute ops and the collectives C_0..C_{n-1} between them; consecutive
  // collectives are fused into one kernel sharing an SM allocation (§4.5).
  std::vector<std::vector<workload::Op>> segments(1);
  std::vector<Kernel> collectives;
  std::vector<int> groups;  // per collective: GPUs in its group (the largest of fused ones)
  bool last_was_collective = false;
  for (const workload::Op& op : ops) {
    if (op.work.kind == WorkKind::kCollective) {
      const device::Work w = nanobatch_work(op.work);
      const int group = op.group_size > 0 ? op.group_size : group_size;
      if (last_was_collective) {
        collectives.back().name += "+" + op.name;
        collectives.back().work.memory_bytes += w.memory_bytes;
        collectives.back().work.link_bytes += w.link_bytes;
        groups.back() = std::max(groups.back(), group);
      } else {
        collectives.push_back({op.name, w});
        groups.push_back(group);
        segments.emplace_back();
      }
      last_was_collective = true;
    } else {
      segments.back().push_back(op);
      last_was_collective = false;
    }
  }
  std::vector<std::vector<Kernel>> kernels;
  for (const auto& segment : segments) kernels.push_back(to_kernels(segment, shapes));
  if (collectives.empty()) {
    for (const Kernel& k : kernels.front()) out.solo.push_back(k);
    for (const Kernel& k : kernels.front()) out.solo.push_back(k);  // both nanobatches
    return out;
  }
  const char* prefix = backward ? "bwd" : "fwd";
  auto add_partition = [&](const Kernel& comm, int group, const std::vector<Kernel>& compute) {
    if (compute.empty()) {
      out.solo.push_back(comm);
      return;
    }
    for (PartitionType& type : out.partitions) {
      if (type.group_size == group && same_kernels(type, compute, comm)) {
        ++type.count;
        return;
      }
    }
    PartitionType type;
    type.name = fmt::format("{} {} || {}", prefix, comm.name, segment_name(compute));
    type.backward = backward;
    type.compute = compute;
    type.comm = comm;
    type.count = 1;
    type.group_size = group;
    out.partitions.push_back(std::move(type));
  };
  out.solo = kernels.front();  // A:S_0
  for (std::size_t k = 0; k < collectives.size(); ++k) {
    add_partition(collectives[k], groups[k], kernels[k]);      // A:C_k ‖ B:S_k
    add_partition(collectives[k], groups[k], kernels[k + 1]);  // B:C_k ‖ A:S_{k+1}
  }
  for (const Kernel& k : kernels.back()) out.solo.push_back(k);  // B:S_n
  return out;
}

std::vector<workload::Op> microbatch_ops(const workload::StageWork& stage, bool backward,
                                         bool recompute) {
  if (!backward) return stage.forward;
  if (!recompute) return stage.backward;
  std::vector<workload::Op> ops = stage.recompute;
  ops.insert(ops.end(), stage.backward.begin(), stage.backward.end());
  return ops;
}

}  // namespace powertrain::kareus
