// The pipeline of emulate.h: estimate every piece of GPU work, fuse and join the NCCL calls
// (nccl_fusion.h), add the communicator bootstrap barriers, build the timelines of the
// simulated representatives, replay them and report per rank.
#include "emulate/emulate.h"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iterator>
#include <map>
#include <set>
#include <unordered_map>

#include "emulate/nccl_fusion.h"
#include "emulate/sequential_processes.h"
#include "graph/graph_builder.h"

namespace powertrain::emulate {
namespace {

// The topology of the job (nodes × GPUs per node) against the GPUs the traces use.
core::Status check_topology(const std::vector<ProcessTrace>& procs, const EmulateOptions& opt,
                            EmulationResult& out) {
  const Collation& c = out.collation;
  std::int64_t highest = 0;
  for (std::size_t p = 0; p < procs.size(); ++p) {
    highest = std::max(highest, c.first_gpu[p] + procs[p].process.devices);
  }
  out.gpu_count = c.gpu_count;
  out.gpus_per_node = opt.gpus_per_node;
  out.nodes = opt.nodes > 0
                  ? opt.nodes
                  : static_cast<int>((highest + opt.gpus_per_node - 1) / opt.gpus_per_node);
  const std::int64_t slots = static_cast<std::int64_t>(out.nodes) * opt.gpus_per_node;
  if (highest > slots) {
    return core::Error{fmt::format(
        "the traces use global GPU index {} but the topology has {} GPU(s) ({} node(s) x {} "
        "GPU(s) per node)",
        highest - 1, slots, out.nodes, opt.gpus_per_node)};
  }
  if (c.gpu_count < slots) {
    graph::add_warning(out.warnings, "the traces cover fewer GPUs than the topology",
                       fmt::format("{} of {} GPU(s)", c.gpu_count, slots));
  }
  for (const ProcessTrace& p : procs) {
    if (p.process.gpu.empty()) continue;
    auto recorded = device::find_gpu(p.process.gpu);
    if (!recorded || recorded->name != out.gpu.name) {
      graph::add_warning(out.warnings, "traces recorded emulating another GPU",
                         fmt::format("{}: recorded as '{}', predicted for '{}' (allocation "
                                     "limits and device properties were the recorded GPU's)",
                                     p.source, p.process.gpu, out.gpu.name));
    }
  }
  return core::Ok{};
}

// Peak memory, out-of-memory events and API misuse of one process (all processes, not only the
// simulated ones: they come from each process's own records).
void scan_process_records(const ProcessTrace& trace, RankReport& rank, EmulationResult& out) {
  rank.peak_memory_bytes.assign(trace.process.devices, 0);
  for (const Record& r : trace.records) {
    switch (r.op) {
      case OpKind::kMalloc:
      case OpKind::kFree:
        if (r.memory != MemoryKind::kHost && r.used_bytes >= 0) {
          rank.peak_memory_bytes[r.device] =
              std::max(rank.peak_memory_bytes[r.device], r.used_bytes);
        }
        if (r.op == OpKind::kMalloc && !r.ok) {
          OutOfMemory oom;
          oom.rank = rank.rank;
          oom.device = r.device;
          oom.gpu = rank.first_gpu + r.device;
          oom.api = std::string(r.name != kNoString
                                    ? trace.str(r.name)
                                    : (r.memory == MemoryKind::kHost      ? "cudaMallocHost"
                                       : r.memory == MemoryKind::kManaged ? "cudaMallocManaged"
                                       : r.memory == MemoryKind::kAsync   ? "cudaMallocAsync"
                                                                          : "cudaMalloc"));
          oom.bytes = r.bytes;
          oom.used_bytes = r.used_bytes;
          oom.where = fmt::format("{}:{}", trace.source, r.line);
          out.out_of_memory.push_back(std::move(oom));
          ++rank.out_of_memory;
        }
        break;
      case OpKind::kUnsupported:
        ++out.unsupported[std::string(trace.str(r.name))];
        ++rank.unsupported_calls;
        break;
      case OpKind::kAssumption:
        graph::add_warning(out.warnings,
                           fmt::format("{}: {}", trace.str(r.name), trace.str(r.detail)),
                           fmt::format("{}:{}", trace.source, r.line));
        break;
      case OpKind::kMisuse: {
        ++rank.misuse_calls;
        const std::string_view what = trace.str(r.detail);
        ++out.misuse[what.empty() ? std::string(trace.str(r.name))
                                  : fmt::format("{}: {}", trace.str(r.name), what)];
        break;
      }
      default:
        break;
    }
  }
  for (std::size_t d = 0;
       d < trace.exit_peak_used_bytes.size() && d < rank.peak_memory_bytes.size(); ++d) {
    rank.peak_memory_bytes[d] = std::max(rank.peak_memory_bytes[d], trace.exit_peak_used_bytes[d]);
  }
}

// Per-rank and job results of the replay: every process reports its class representative's
// simulated metrics and modelled energy, and its own memory and errors.
void report_ranks(const std::vector<ProcessTrace>& procs, double clock_mhz,
                  const std::vector<double>& task_clock_mhz, EmulationResult& out) {
  const Collation& col = out.collation;
  const RankClasses& cls = out.classes;
  const sim::StepMetrics metrics = sim::metrics_of_replay(out.graph, out.replay);
  const sim::EnergyReport energy =
      sim::replay_energy(out.graph, out.replay, metrics, out.gpu, clock_mhz, task_clock_mhz);
  out.critical_path_s =
      static_cast<double>(sim::critical_path(out.graph, out.replay).length_ns) * 1e-9;
  std::unordered_map<int, std::size_t> graph_rank;  // rank → graph rank index
  for (std::size_t r = 0; r < out.graph.ranks.size(); ++r) graph_rank[out.graph.ranks[r].rank] = r;
  // GPU span per simulated rank: first GPU task start to last GPU task end.
  std::vector<std::int64_t> gpu_first(out.graph.ranks.size(), INT64_MAX);
  std::vector<std::int64_t> gpu_last(out.graph.ranks.size(), INT64_MIN);
  for (std::int32_t t = 0; t < out.graph.task_count(); ++t) {
    if (!graph::is_gpu(out.graph.kind[t]) || out.replay.start_ns[t] == INT64_MIN) continue;
    if (out.graph.processors[out.graph.processor[t]].tid == kBootstrapStream) continue;
    const std::int32_t g = out.graph.rank_index_of(t);
    gpu_first[g] = std::min(gpu_first[g], out.replay.start_ns[t]);
    gpu_last[g] = std::max(gpu_last[g], out.replay.end_ns[t]);
  }
  const auto span_s = [](std::int64_t first, std::int64_t last) {
    return last > first ? static_cast<double>(last - first) * 1e-9 : 0.0;
  };
  if (!gpu_first.empty())
    out.job_gpu_span_s = span_s(*std::min_element(gpu_first.begin(), gpu_first.end()),
                                *std::max_element(gpu_last.begin(), gpu_last.end()));
  std::vector<std::int32_t> order(procs.size());
  for (std::size_t p = 0; p < procs.size(); ++p) order[p] = static_cast<std::int32_t>(p);
  std::sort(order.begin(), order.end(),
            [&](std::int32_t a, std::int32_t b) { return col.rank[a] < col.rank[b]; });
  for (std::int32_t p : order) {
    const ProcessTrace& trace = procs[p];
    RankReport rank;
    rank.rank = col.rank[p];
    rank.source = trace.source;
    rank.devices = trace.process.devices;
    rank.first_gpu = col.first_gpu[p];
    rank.rank_class = cls.class_of[p];
    const std::int32_t rep = cls.representative[rank.rank_class];
    rank.simulated = rep == p;
    rank.representative_rank = col.rank[rep];
    const std::size_t g = graph_rank.at(col.rank[rep]);
    const sim::RankMetrics& m = metrics.ranks[g];
    rank.step_s = m.step_time_ns * 1e-9;
    rank.steps = m.window.steps;
    rank.steps_detected = m.window.profiler_steps;
    rank.breakdown = m.breakdown;
    rank.gpu_utilization = m.mean_utilization;
    rank.gpu_span_s = span_s(gpu_first[g], gpu_last[g]);
    rank.device_energy_j_per_step.assign(trace.process.devices, 0.0);
    for (const sim::GpuEnergy& e : energy.gpus) {
      if (e.rank != col.rank[rep] || e.device < 0 || e.device >= trace.process.devices) continue;
      rank.device_energy_j_per_step[e.device] += e.total_j_per_step();
      rank.energy_j_per_step += e.total_j_per_step();
      out.static_j_per_step += e.static_j / std::max(e.steps, 1);
      out.dynamic_j_per_step += e.dynamic_j / std::max(e.steps, 1);
    }
    out.energy_j_per_step += rank.energy_j_per_step;
    scan_process_records(procs[p], rank, out);
    rank.gpu_tasks = 0;
    for (const Record& r : trace.records) rank.gpu_tasks += enqueues_gpu_work(r.op);
    out.job_step_s = std::max(out.job_step_s, rank.step_s);
    // Job means count every rank (a class by its size).
    out.job_breakdown += m.breakdown;
    out.job_gpu_utilization += m.mean_utilization;
    out.ranks.push_back(std::move(rank));
  }
  if (const double n = static_cast<double>(out.ranks.size()); n > 0.0) {
    out.job_breakdown /= n;
    out.job_gpu_utilization /= n;
  }
}

class Pipeline {
 public:
  Pipeline(const std::vector<ProcessTrace>& processes, const EmulateOptions& options,
           EmulationResult& out)
      : procs_(processes), opt_(options), out_(out) {}

  core::Status run() {
    if (procs_.empty()) return core::Error{"emulate: no traces"};
    auto gpu = device::find_gpu(opt_.gpu);
    if (!gpu) return gpu.error();
    out_.gpu = *gpu;
    out_.host_costs = opt_.host_costs;
    if (auto chain = make_chain(); !chain) return chain.error();
    CollationOptions co;
    co.gpus_per_node = opt_.gpus_per_node;
    auto collation = collate(procs_, co);
    if (!collation) return collation.error();
    out_.collation = std::move(*collation);
    if (auto topology = check_topology(procs_, opt_, out_); !topology) return topology.error();
    out_.classes = find_rank_classes(procs_, out_.collation, opt_.dedup);
    for (const ProcessTrace& p : procs_) {
      graph::merge_warnings(out_.warnings, p.warnings);
      out_.records += static_cast<std::int64_t>(p.records.size());
    }
    graph::merge_warnings(out_.warnings, out_.collation.warnings);

    for (std::int32_t rep : out_.classes.representative) simulated_.push_back(rep);
    std::sort(simulated_.begin(), simulated_.end(), [&](std::int32_t a, std::int32_t b) {
      return out_.collation.rank[a] < out_.collation.rank[b];
    });
    inputs_.resize(simulated_.size());
    for (std::size_t s = 0; s < simulated_.size(); ++s) estimate_work(static_cast<std::int32_t>(s));
    const NcclFusionContext fusion{
        procs_, simulated_, out_.collation, out_.classes, opt_.gpus_per_node, out_.gpu, chain_};
    fuse_nccl_calls(fusion, inputs_, out_.warnings,
                    [this](int estimator) { count_use(estimator); });
    bootstrap_barriers();

    std::vector<trace::RankTrace> traces;
    traces.reserve(simulated_.size());
    for (std::size_t s = 0; s < simulated_.size(); ++s) {
      TimelineInput& in = inputs_[s];
      const ProcessTrace& trace = procs_[simulated_[s]];
      if (opt_.detect_steps) {
        in.main_tid = main_thread(trace);
        in.steps = find_steps(trace, operation_hashes(trace), in.main_tid);
      }
      auto rank_trace = build_rank_trace(in, opt_.host_costs, &events_[in.rank], &syncs_[in.rank]);
      if (!rank_trace) return rank_trace.error();
      traces.push_back(std::move(*rank_trace));
    }
    auto graph = graph::build_execution_graph(traces);
    if (!graph) return graph.error();
    out_.graph = std::move(*graph);
    out_.replay = sim::replay(out_.graph);
    graph::merge_warnings(out_.warnings, out_.graph.warnings);
    graph::merge_warnings(out_.warnings, out_.replay.warnings);
    report_ranks(procs_, opt_.device_model.clock_mhz, task_clocks(traces), out_);
    for (RankReport& rank : out_.ranks) {
      if (const auto it = events_.find(rank.representative_rank); it != events_.end())
        rank.predicted_events = it->second;
      if (const auto it = syncs_.find(rank.representative_rank); it != syncs_.end())
        rank.predicted_syncs = it->second;
    }
    return core::Ok{};
  }

 private:
  core::Status make_chain() {
    for (const auto& e : opt_.extra_estimators) chain_.add(e);
    if (!opt_.kernel_table.empty()) {
      auto table = TableEstimator::from_csv_file(opt_.kernel_table);
      if (!table) return table.error();
      chain_.add(std::make_shared<TableEstimator>(std::move(*table)));
    }
    chain_.add(std::make_shared<DeviceModelEstimator>(opt_.device_model));
    for (const auto& e : chain_.estimators()) {
      out_.estimators.push_back({std::string(e->name()), e->basis(), 0});
    }
    return core::Ok{};
  }

  void count_use(int estimator) {
    if (estimator >= 0) ++out_.estimators[estimator].tasks;
  }

  // ncclCommInit* of a communicator that spans several rank classes is a barrier among the
  // classes' representatives (the first init of each communicator in each process). Like
  // join_units, a communicator is seen through its image, the set of its members' classes: with
  // dedup a representative's init meets the representatives' inits of communicators with the same
  // image (PP pairs {0,3} and {1,2} with classes {0,1} and {2,3} meet as one), so deduplicated
  // and full simulations agree. Inits within one class (data-parallel groups) stay plain.
  void bootstrap_barriers() {
    const RankClasses& cls = out_.classes;
    std::map<std::string, std::set<std::int32_t>> image_of_comm;  // comm id → member classes
    for (std::size_t p = 0; p < procs_.size(); ++p) {
      const ProcessTrace& trace = procs_[p];
      for (const Record& r : trace.records)
        if (r.op == OpKind::kCommInit && r.detail != kNoString)
          image_of_comm[std::string(trace.str(r.detail))].insert(cls.class_of[p]);
    }
    std::map<std::string, std::vector<std::pair<std::size_t, std::int32_t>>> members;
    for (std::size_t s = 0; s < simulated_.size(); ++s) {
      const ProcessTrace& trace = procs_[simulated_[s]];
      std::set<std::string_view> seen;
      std::map<std::string, int> occurrence;  // image → inits of it so far in this process
      for (std::size_t i = 0; i < trace.records.size(); ++i) {
        const Record& r = trace.records[i];
        if (r.op != OpKind::kCommInit || r.detail == kNoString) continue;
        if (!seen.insert(trace.str(r.detail)).second) continue;
        const std::set<std::int32_t>& image = image_of_comm[std::string(trace.str(r.detail))];
        if (image.size() < 2) continue;
        std::string key;
        for (std::int32_t c : image) key += fmt::format("{},", c);
        key += fmt::format("#{}", occurrence[key]++);
        members[key].emplace_back(s, static_cast<std::int32_t>(i));
      }
    }
    for (const auto& [key, list] : members) {
      if (list.size() < 2) continue;
      for (const auto& [s, i] : list) {
        TimelineInput& in = inputs_[s];
        if (in.barrier_of_record.empty()) in.barrier_of_record.assign(in.work_ns.size(), -1);
        NcclKernel k;
        k.launch_record = i;
        k.name = "ncclCommInit bootstrap";
        k.collective = "comm_init";
        k.group_key = fmt::format("bootstrap-{}", key);
        k.group_size = static_cast<std::int32_t>(list.size());
        in.barrier_of_record[i] = static_cast<std::int32_t>(in.nccl.size());
        in.nccl.push_back(std::move(k));
      }
    }
  }

  // Per graph task: the SM clock (MHz) its work ran at, when a program locked clocks through
  // NVML (0: the default); empty when none did. Tasks find their record by correlation.
  std::vector<double> task_clocks(const std::vector<trace::RankTrace>& traces) const {
    if (out_.clock_locks.empty()) return {};
    std::map<int, std::size_t> simulated_of_rank;
    for (std::size_t s = 0; s < inputs_.size(); ++s) simulated_of_rank[inputs_[s].rank] = s;
    std::vector<std::unordered_map<std::int64_t, std::int32_t>> clock_of_correlation(
        inputs_.size());
    for (std::size_t s = 0; s < inputs_.size(); ++s) {
      const TimelineInput& in = inputs_[s];
      for (std::size_t i = 0; i < in.work_clock_mhz.size(); ++i) {
        if (in.work_clock_mhz[i] > 0) {
          clock_of_correlation[s][work_correlation(*in.trace, static_cast<std::int32_t>(i))] =
              in.work_clock_mhz[i];
        }
      }
    }
    std::vector<double> clocks(static_cast<std::size_t>(out_.graph.task_count()), 0.0);
    for (std::int32_t t = 0; t < out_.graph.task_count(); ++t) {
      if (!graph::is_gpu(out_.graph.kind[t])) continue;
      const auto s = simulated_of_rank.find(out_.graph.ranks[out_.graph.rank_index_of(t)].rank);
      if (s == simulated_of_rank.end() || clock_of_correlation[s->second].empty()) continue;
      const trace::RankTrace& rt = traces[s->second];
      const std::uint32_t e = out_.graph.event_index[t];
      if (e >= rt.events.size()) continue;
      const auto it = clock_of_correlation[s->second].find(rt.events[e].correlation);
      if (it != clock_of_correlation[s->second].end()) clocks[t] = it->second;
    }
    return clocks;
  }

  // Durations of every non-NCCL piece of GPU work of simulated process `s`.
  void estimate_work(std::int32_t s) {
    const ProcessTrace& trace = procs_[simulated_[s]];
    TimelineInput& in = inputs_[s];
    const std::size_t n = trace.records.size();
    in.trace = &trace;
    in.rank = out_.collation.rank[simulated_[s]];
    in.world_size = std::max<int>(trace.process.world_size, static_cast<int>(procs_.size()));
    in.work_ns.assign(n, -1);
    in.work_name.assign(n, std::string());
    in.nccl_of_record.assign(n, -1);
    std::unordered_map<std::string_view, std::string_view> display;
    for (const Record& r : trace.records) {
      if (r.op == OpKind::kRegister && r.detail != kNoString) {
        display.emplace(trace.str(r.name), trace.str(r.detail));
      }
    }
    // SM clocks locked through NVML, per device, as the records go (0: the default clock).
    std::map<std::int32_t, std::int32_t> locked_mhz;
    const std::int64_t first_ns = trace.records.empty() ? 0 : trace.records.front().t_ns;
    for (std::size_t i = 0; i < n; ++i) {
      const Record& r = trace.records[i];
      if (r.op == OpKind::kClockLock) {
        const auto clamp = [&](std::int64_t mhz) {
          return mhz <= 0 ? 0
                          : static_cast<std::int32_t>(std::clamp<std::int64_t>(
                                mhz, out_.gpu.min_clock_mhz(), out_.gpu.max_clock_mhz()));
        };
        locked_mhz[r.device] = clamp(r.n);
        if (in.work_clock_mhz.empty()) in.work_clock_mhz.assign(n, 0);
        ClockLock lock;
        lock.rank = in.rank;
        lock.device = r.device;
        lock.t_s = static_cast<double>(r.t_ns - first_ns) * 1e-9;
        lock.min_mhz = clamp(r.m);
        lock.max_mhz = locked_mhz[r.device];
        lock.api = r.name != kNoString ? std::string(trace.str(r.name)) : std::string();
        out_.clock_locks.push_back(std::move(lock));
        continue;
      }
      if (!enqueues_gpu_work(r.op) || r.op == OpKind::kNccl) continue;
      KernelQuery q;
      q.record = &r;
      if (const auto it = locked_mhz.find(r.device); it != locked_mhz.end() && it->second > 0) {
        q.clock_mhz = it->second;
      }
      std::string name;
      if (r.op == OpKind::kKernel) {
        const std::string_view raw = trace.str(r.name);
        const auto it = display.find(raw);
        name = std::string(it != display.end() ? it->second : raw);
        if (name.empty()) name = "unnamed kernel";
        if (it != display.end()) q.mangled = raw;
      } else if (r.op == OpKind::kGemm) {
        name = fmt::format("gemm_{}_m{}_n{}_k{}", to_string(r.dtype_a), r.m, r.n, r.k);
        if (r.batch > 1) name += fmt::format("_b{}", r.batch);
        q.compute = trace.str(r.compute);
      } else {
        name = std::string(trace.str(r.name));
      }
      q.name = name;
      const auto [estimate, used] = chain_.estimate(q, out_.gpu);
      count_use(used);
      // The device model times work at the locked clock; its energy is modelled there too. A
      // profiled table's duration is its own clock's, so that work keeps the default power.
      if (q.clock_mhz > 0.0 && used >= 0 &&
          chain_.estimators()[static_cast<std::size_t>(used)]->name() == "device-model") {
        in.work_clock_mhz[i] = static_cast<std::int32_t>(q.clock_mhz);
      }
      in.work_ns[i] = to_ns(estimate.seconds);
      if (r.op == OpKind::kKernel || r.op == OpKind::kGemm) in.work_name[i] = std::move(name);
    }
  }

  const std::vector<ProcessTrace>& procs_;
  const EmulateOptions& opt_;
  EmulationResult& out_;
  EstimatorChain chain_;
  std::vector<std::int32_t> simulated_;                // process indices, in rank order
  std::vector<TimelineInput> inputs_;                  // per simulated process
  std::map<int, std::vector<PredictedEvent>> events_;  // by rank of the simulated process
  std::map<int, std::vector<PredictedSync>> syncs_;    // by rank of the simulated process
};

}  // namespace

core::Result<EmulationResult> emulate_traces(const std::vector<ProcessTrace>& processes,
                                             const EmulateOptions& options) {
  const auto started = std::chrono::steady_clock::now();
  EmulationResult result;
  // A child forked by a traced process after it used CUDA shares its parent's rank and GPU; the
  // analysis keeps one process per rank, so the child's records are left out, with a warning.
  std::set<std::int64_t> pids;
  for (const ProcessTrace& p : processes) pids.insert(p.process.pid);
  auto forked_child = [&](const ProcessTrace& p) {
    return p.process.forked_from != 0 && pids.count(p.process.forked_from) > 0;
  };
  std::vector<trace::TraceWarning> fork_warnings;
  for (const ProcessTrace& p : processes) {
    if (!forked_child(p)) continue;
    graph::add_warning(fork_warnings,
                       "a process forked by a traced process is left out of the analysis (it "
                       "shares its parent's rank and GPU; one process per rank is modelled)",
                       fmt::format("{}: pid {} forked from pid {}, {} record(s)", p.source,
                                   p.process.pid, p.process.forked_from, p.records.size()));
  }
  const bool any_child = !fork_warnings.empty();
  // Processes of one rank that ran one after another (a script running several CUDA programs)
  // are one GPU's work in sequence: joined into one trace.
  bool repeated_rank = false;
  std::set<int> ranks;
  for (const ProcessTrace& p : processes) {
    if (!forked_child(p) && p.process.rank >= 0 && !ranks.insert(p.process.rank).second) {
      repeated_rank = true;
    }
  }
  const bool copied = any_child || repeated_rank;
  std::vector<ProcessTrace> kept;  // copied only when a child is left out or processes joined
  if (copied) {
    std::copy_if(processes.begin(), processes.end(), std::back_inserter(kept),
                 [&](const ProcessTrace& p) { return !forked_child(p); });
  }
  std::vector<trace::TraceWarning> join_warnings;
  if (repeated_rank) {
    auto joined = join_sequential_processes(std::move(kept), join_warnings);
    if (!joined) return joined.error();
    kept = std::move(*joined);
  }
  Pipeline pipeline(copied ? kept : processes, options, result);
  if (auto status = pipeline.run(); !status) return status.error();
  graph::merge_warnings(result.warnings, fork_warnings);
  graph::merge_warnings(result.warnings, join_warnings);
  result.ranks_from_several_processes = !join_warnings.empty();
  result.analysis_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return result;
}

core::Result<EmulationResult> emulate_trace_paths(const std::vector<std::string>& paths,
                                                  const EmulateOptions& options) {
  auto traces = read_emulation_traces(paths);
  if (!traces) return traces.error();
  return emulate_traces(*traces, options);
}

}  // namespace powertrain::emulate
