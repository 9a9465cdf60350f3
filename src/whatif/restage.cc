#include "whatif/restage.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <string_view>
#include <unordered_map>

#include "pipeline/schedule.h"
#include "sim/energy.h"
#include "sim/simulator.h"

namespace powertrain::whatif {
namespace {

using graph::EdgeKind;
using graph::ExecutionGraph;
using graph::kNone;

// Streams of a rebuilt stage (tid values shown in the replayed trace).
enum StreamSlot { kCompute = 0, kSendNext, kRecvPrev, kSendPrev, kRecvNext, kSlots };
constexpr std::int64_t kStreamTid[kSlots] = {7, 101, 102, 103, 104};

class PipelineGraphWriter {
 public:
  explicit PipelineGraphWriter(ExecutionGraph& graph) : graph_(graph) {}

  void begin_rank(int rank, int world_size) {
    graph::RankInfo info;
    info.rank = rank;
    info.world_size = world_size;
    info.source = fmt::format("re-staged pipeline stage {}", rank);
    info.first_task = graph_.task_count();
    graph_.ranks.push_back(std::move(info));
    names_.clear();
    for (int slot = 0; slot < kSlots; ++slot) {
      graph::Processor p;
      p.rank_index = static_cast<std::int32_t>(graph_.ranks.size() - 1);
      p.kind = graph::ProcessorKind::kGpuStream;
      p.pid = rank;
      p.tid = kStreamTid[slot];
      stream_[slot] = static_cast<std::int32_t>(graph_.processors.size());
      graph_.ranks.back().streams.push_back(stream_[slot]);
      graph_.processors.push_back(p);
      last_on_stream_[slot] = kNone;
    }
  }

  // Appends a GPU task on a stream, ordered after the stream's previous task (with `lag_ns`).
  std::int32_t add(StreamSlot slot, const std::string& name, std::int64_t duration_ns,
                   std::int64_t lag_ns, bool nccl) {
    const std::int32_t task = graph_.task_count();
    graph_.input_start_ns.push_back(0);
    graph_.input_duration_ns.push_back(duration_ns);
    graph_.duration_ns.push_back(duration_ns);
    graph_.processor.push_back(stream_[slot]);
    graph_.name.push_back(intern(name));
    graph_.kind.push_back(graph::TaskKind::kKernel);
    graph_.nccl.push_back(nccl ? 1 : 0);
    graph_.event_index.push_back(0);
    graph_.runtime_op.push_back(kNone);
    graph_.collective.push_back(kNone);
    if (last_on_stream_[slot] != kNone)
      edges_.push_back({last_on_stream_[slot], task, lag_ns, EdgeKind::kStreamOrder});
    last_on_stream_[slot] = task;
    ++graph_.stats.gpu_tasks;
    graph_.stats.collectives += nccl;
    return task;
  }

  void depend(std::int32_t src, std::int32_t dst, EdgeKind kind = EdgeKind::kStreamWait) {
    if (src != kNone && dst != kNone) edges_.push_back({src, dst, 0, kind});
  }

  void end_rank() { graph_.ranks.back().end_task = graph_.task_count(); }

  void pair(std::int32_t send, std::int32_t recv) {
    graph::CollectiveGroup group;
    group.first_member = static_cast<std::int32_t>(graph_.collective_members.size());
    group.member_count = 2;
    group.expected_members = 2;
    group.joined = true;
    group.name = "ncclDevKernel_SendRecv";
    group.collective = "send/recv";
    const auto index = static_cast<std::int32_t>(graph_.collectives.size());
    graph_.collective_members.push_back(send);
    graph_.collective_members.push_back(recv);
    graph_.collective[send] = index;
    graph_.collective[recv] = index;
    graph_.collectives.push_back(std::move(group));
    ++graph_.stats.collective_groups_joined;
  }

  void finish() {
    for (const graph::TempEdge& e : edges_) ++graph_.stats.edges[static_cast<int>(e.kind)];
    graph::store_edges(edges_, graph_);
  }

 private:
  std::uint32_t intern(const std::string& name) {
    auto [it, inserted] = names_.emplace(name, graph_.ranks.back().names.size());
    if (inserted) graph_.ranks.back().names.push_back(name);
    return static_cast<std::uint32_t>(it->second);
  }

  ExecutionGraph& graph_;
  std::unordered_map<std::string, std::size_t> names_;
  std::int32_t stream_[kSlots] = {};
  std::int32_t last_on_stream_[kSlots] = {};
  std::vector<graph::TempEdge> edges_;
};

// Contiguous layer counts per stage: even split, remainder first to the stages without the
// embedding (stage 0) or head (last stage) work, then to those.
std::vector<int> spread_layers(int layers, int stages) {
  std::vector<int> counts(stages, layers / stages);
  int remainder = layers % stages;
  std::vector<int> order;
  for (int s = 1; s + 1 < stages; ++s) order.push_back(s);
  order.push_back(0);
  if (stages > 1) order.push_back(stages - 1);
  for (int s : order) {
    if (remainder == 0) break;
    ++counts[s];
    --remainder;
  }
  return counts;
}

bool is_attention(std::string_view name) {
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (std::string_view marker : {"fmha", "flash", "attention", "attn"})
    if (lower.find(marker) != std::string::npos) return true;
  return false;
}

}  // namespace

double one_f_one_b_step_s(int stages, int microbatches, double forward_s, double backward_s,
                          double p2p_s) {
  return (microbatches + stages - 1) * (forward_s + backward_s) + 2.0 * (stages - 1) * p2p_s;
}

namespace {

// Checks the re-staged shape (set in `job`) and the transfer time against the limits.
core::Status check_restage(const LayerProfile& profile, const RestageSpec& spec,
                           const RestagedJob& job) {
  if (profile.forward.empty() || profile.layers < 1)
    return core::Error{"the input profile has no layers to re-stage"};
  if (job.stages > job.layers)
    return core::Error{
        fmt::format("{} pipeline stages for {} layers: every stage needs at least one layer",
                    job.stages, job.layers)};
  if (job.stages > 4096 || job.microbatches > 100'000 || job.layers > 100'000)
    return core::Error{
        "re-staged pipeline too large (at most 4096 stages, 100000 microbatches "
        "and 100000 layers)"};
  if (std::isnan(spec.p2p_s) || (spec.p2p_s >= 0.0 && !(spec.p2p_s <= 1e3)))
    return core::Error{
        fmt::format("transfer time {} s: expected a number of seconds in [0, 1000]", spec.p2p_s)};
  // Bound the rebuilt graph (task ids are 32-bit; ~100 bytes a task).
  const std::int64_t kernels_per_microbatch =
      static_cast<std::int64_t>(job.layers) *
          static_cast<std::int64_t>(profile.forward.size() + profile.backward.size()) +
      2;
  const std::int64_t tasks = static_cast<std::int64_t>(job.microbatches) *
                             (kernels_per_microbatch + 4 * static_cast<std::int64_t>(job.stages));
  if (tasks > 50'000'000)
    return core::Error{fmt::format(
        "re-staged pipeline too large: about {} GPU tasks (at most 50 million)", tasks)};
  return core::Ok{};
}

// Per microbatch of one stage: the first and last compute task of its forward and backward,
// and the compute task issued just before each (kNone when none).
struct StageCompute {
  std::vector<std::int32_t> first_of_forward, last_of_forward, issued_after_forward;
  std::vector<std::int32_t> first_of_backward, last_of_backward, issued_after_backward;
};

// Writes stage `s`'s forward and backward compute in 1F1B order: its layers' kernels with their
// gaps, plus the first stage's and the last stage's extra work.
StageCompute write_stage_compute(PipelineGraphWriter& writer,
                                 const std::vector<pipeline::ScheduledInstruction>& instructions,
                                 const LayerProfile& profile, const RestagedJob& job, int s) {
  const auto M = static_cast<std::size_t>(job.microbatches);
  StageCompute c{std::vector<std::int32_t>(M, kNone), std::vector<std::int32_t>(M, kNone),
                 std::vector<std::int32_t>(M, kNone), std::vector<std::int32_t>(M, kNone),
                 std::vector<std::int32_t>(M, kNone), std::vector<std::int32_t>(M, kNone)};
  std::int32_t previous_last = kNone;  // last compute task of the previous instruction
  for (const pipeline::ScheduledInstruction& instruction : instructions) {
    const bool forward = instruction.kind == pipeline::InstructionKind::kForward;
    if (!forward && instruction.kind != pipeline::InstructionKind::kBackward) continue;
    const int m = instruction.microbatch;
    std::int32_t first = kNone, last = kNone;
    auto emit = [&](const std::string& name, std::int64_t duration, std::int64_t gap) {
      last = writer.add(kCompute, name, duration, first == kNone ? 0 : gap, false);
      if (first == kNone) first = last;
    };
    if (forward) {
      if (s == 0 && profile.first_stage_extra_ns > 0)
        emit("embedding and other first-stage work", profile.first_stage_extra_ns, 0);
      for (int layer = 0; layer < job.layers_per_stage[s]; ++layer)
        for (const LayerProfile::Task& t : profile.forward) emit(t.name, t.duration_ns, t.gap_ns);
      if (s == job.stages - 1 && profile.last_stage_extra_ns > 0)
        emit("head, loss and other last-stage work", profile.last_stage_extra_ns, 0);
      c.first_of_forward[m] = first;
      c.last_of_forward[m] = last;
      c.issued_after_forward[m] = previous_last;
    } else {
      for (int layer = 0; layer < job.layers_per_stage[s]; ++layer)
        for (const LayerProfile::Task& t : profile.backward) emit(t.name, t.duration_ns, t.gap_ns);
      c.first_of_backward[m] = first;
      c.last_of_backward[m] = last;
      c.issued_after_backward[m] = previous_last;
    }
    if (last != kNone) previous_last = last;
  }
  return c;
}

}  // namespace

core::Result<RestagedJob> build_pipeline_job(const LayerProfile& profile, const RestageSpec& spec) {
  RestagedJob job;
  job.profile = profile;
  job.stages = spec.stages > 0 ? spec.stages : profile.stages;
  job.microbatches = spec.microbatches > 0 ? spec.microbatches : profile.microbatches;
  job.layers = spec.layers > 0 ? spec.layers : profile.layers;
  if (auto checked = check_restage(profile, spec, job); !checked) return checked.error();
  job.p2p_ns = spec.p2p_s >= 0.0 ? static_cast<std::int64_t>(std::llround(spec.p2p_s * 1e9))
                                 : profile.p2p_ns;
  job.layers_per_stage = spread_layers(job.layers, job.stages);

  pipeline::PipelineSpec pipeline_spec;
  pipeline_spec.schedule = pipeline::ScheduleKind::kOneFOneB;
  pipeline_spec.num_gpus = job.stages;
  pipeline_spec.num_microbatches = job.microbatches;
  auto order = pipeline::schedule_order(pipeline_spec);
  if (!order) return order.error();

  ExecutionGraph& graph = job.graph;
  PipelineGraphWriter writer(graph);
  const int S = job.stages;
  const int M = job.microbatches;
  // Per stage and microbatch: the transfer tasks, paired across stages afterwards.
  std::vector<std::vector<std::int32_t>> send_next(S, std::vector<std::int32_t>(M, kNone));
  auto recv_prev = send_next, send_prev = send_next, recv_next = send_next;

  for (int s = 0; s < S; ++s) {
    writer.begin_rank(s, S);
    const StageCompute c = write_stage_compute(writer, (*order)[s], profile, job, s);
    // Transfers: a receive is issued when the stage reaches the instruction that needs it; a
    // send when the instruction that produced it ends.
    const std::int64_t p2p = job.p2p_ns;
    for (int m = 0; m < M; ++m) {
      if (s > 0) {
        recv_prev[s][m] =
            writer.add(kRecvPrev, "ncclDevKernel_SendRecv (recv activation)", p2p, 0, true);
        writer.depend(c.issued_after_forward[m], recv_prev[s][m]);
        writer.depend(recv_prev[s][m], c.first_of_forward[m]);
      }
      if (s + 1 < S) {
        send_next[s][m] =
            writer.add(kSendNext, "ncclDevKernel_SendRecv (send activation)", p2p, 0, true);
        writer.depend(c.last_of_forward[m], send_next[s][m]);
      }
      if (!profile.backward.empty() && s + 1 < S) {
        recv_next[s][m] =
            writer.add(kRecvNext, "ncclDevKernel_SendRecv (recv gradient)", p2p, 0, true);
        writer.depend(c.issued_after_backward[m], recv_next[s][m]);
        writer.depend(recv_next[s][m], c.first_of_backward[m]);
      }
      if (!profile.backward.empty() && s > 0) {
        send_prev[s][m] =
            writer.add(kSendPrev, "ncclDevKernel_SendRecv (send gradient)", p2p, 0, true);
        writer.depend(c.last_of_backward[m], send_prev[s][m]);
      }
    }
    writer.end_rank();
  }
  for (int s = 0; s + 1 < S; ++s)
    for (int m = 0; m < M; ++m) {
      writer.pair(send_next[s][m], recv_prev[s + 1][m]);
      if (!profile.backward.empty()) writer.pair(send_prev[s + 1][m], recv_next[s][m]);
    }
  writer.finish();
  // The rebuilt job's reference timeline is its own replay, so that it can be profiled,
  // compared and re-staged again like a measured one.
  const sim::ReplayResult replayed = sim::replay(graph);
  if (replayed.outcome != sim::ReplayOutcome::kComplete)
    return core::Error{"internal: the re-staged pipeline did not replay to completion"};
  for (std::int32_t t = 0; t < graph.task_count(); ++t) {
    graph.input_start_ns[t] = replayed.start_ns[t];
    graph.input_duration_ns[t] = replayed.end_ns[t] - replayed.start_ns[t];
  }
  return job;
}

core::Result<RestagedJob> restage(const ExecutionGraph& input, const RestageSpec& spec,
                                  int input_microbatches) {
  auto profile = profile_layers(input, input_microbatches);
  if (!profile) return profile.error();
  return build_pipeline_job(*profile, spec);
}

core::Result<std::int64_t> change_data_parallel_degree(ExecutionGraph& graph, int new_degree) {
  if (new_degree < 1 || new_degree > 1'000'000)
    return core::Error{
        fmt::format("data-parallel degree must be in [1, 1000000], got {}", new_degree)};
  const auto factor = [](std::string_view kind, int n) -> double {
    const double ranks = std::max(n, 1);
    if (kind.find("allreduce") != std::string_view::npos ||
        kind.find("all_reduce") != std::string_view::npos ||
        kind.find("AllReduce") != std::string_view::npos)
      return 2.0 * (ranks - 1) / ranks;
    for (std::string_view marker :
         {"allgather", "all_gather", "AllGather", "reducescatter", "reduce_scatter",
          "ReduceScatter", "all_to_all", "alltoall", "AllToAll"})
      if (kind.find(marker) != std::string_view::npos) return (ranks - 1) / ranks;
    return -1.0;  // not a data-parallel collective (broadcast, send/recv, unknown)
  };
  std::int64_t changed = 0;
  for (std::int32_t task = 0; task < graph.task_count(); ++task) {
    if (!graph::is_gpu(graph.kind[task]) || graph.nccl[task] == 0) continue;
    const std::int32_t group = graph.collective[task];
    const std::string kind = group != kNone && !graph.collectives[group].collective.empty()
                                 ? graph.collectives[group].collective
                                 : graph.task_name(task);
    int old_degree = graph.ranks[graph.rank_index_of(task)].world_size;
    if (group != kNone) {
      const graph::CollectiveGroup& g = graph.collectives[group];
      old_degree = std::max(g.expected_members, g.member_count);
    }
    const double before = factor(kind, old_degree);
    const double after = factor(kind, new_degree);
    if (before <= 0.0 || after < 0.0) continue;
    graph.duration_ns[task] =
        static_cast<std::int64_t>(std::llround(graph.duration_ns[task] * (after / before)));
    ++changed;
  }
  return changed;
}

core::Result<std::int64_t> change_hidden_size(ExecutionGraph& graph, double ratio) {
  if (!(ratio > 0.0) || ratio > 1000.0)
    return core::Error{fmt::format("hidden-size ratio must be in (0, 1000], got {}", ratio)};
  std::int64_t changed = 0;
  for (std::int32_t task = 0; task < graph.task_count(); ++task) {
    if (!graph::is_gpu(graph.kind[task])) continue;
    const std::string& name = graph.task_name(task);
    double factor = ratio;
    switch (sim::classify_kernel(name, graph.kind[task], graph.nccl[task] != 0)) {
      case sim::KernelClass::kMatmul:
        factor = is_attention(name) ? ratio : ratio * ratio;
        break;
      case sim::KernelClass::kCollective:
        // Pipeline sends/receives carry activations (∝ h); data-parallel gradients ∝ h².
        factor = name.find("SendRecv") != std::string::npos ||
                         name.find("Send") != std::string::npos ||
                         name.find("Recv") != std::string::npos
                     ? ratio
                     : ratio * ratio;
        break;
      case sim::KernelClass::kMemory:
        factor = ratio;
        break;
    }
    graph.duration_ns[task] =
        static_cast<std::int64_t>(std::llround(graph.duration_ns[task] * factor));
    ++changed;
  }
  return changed;
}

}  // namespace powertrain::whatif
