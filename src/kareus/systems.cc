#include "kareus/systems.h"

#include <fmt/core.h>

#include <algorithm>

namespace powertrain::kareus {

const char* system_name(int system) {
  switch (system) {
    case kMegatron:
      return "Megatron-LM";
    case kMegatronPerseus:
      return "Megatron-LM + Perseus";
    case kNanobatching:
      return "Nanobatching";
    case kNanobatchingPerseus:
      return "Nanobatching + Perseus";
    case kKareus:
      return "Kareus";
    default:
      return "?";
  }
}

const SearchCache::Entry* SearchCache::find(const std::string& key) const {
  const auto it = entries_.find(key);
  return it == entries_.end() ? nullptr : &it->second;
}

const SearchCache::Entry& SearchCache::insert(const std::string& key, Entry entry) {
  return entries_.insert_or_assign(key, std::move(entry)).first->second;
}

namespace {

void append_work(std::string& key, const Kernel& k) {
  const device::Work& w = k.work;
  key += fmt::format("{},{},{:a},{:a},{:a},{},{:a},{:a},{:a},{:a},{},{},{:a};",
                     static_cast<int>(w.kind), static_cast<int>(w.precision), w.flops,
                     w.memory_bytes, w.link_bytes, w.backward ? 1 : 0, k.shape.rows, k.shape.cols,
                     k.shape.depth, k.shape.token_invariant_bytes, k.shape.tokens_in_depth ? 1 : 0,
                     k.launches, k.causal_fill);
}

// Everything the search result depends on: GPU, model constants, search settings and the
// partition's kernels (to the bit).
std::string cache_key(const device::GpuSpec& gpu, const SystemsOptions& o, const PartitionType& p) {
  std::string key = fmt::format(
      "{}|{}|{}|{:a}|{:a}|{:a}|{:a}|{:a}|{:a}|{:a}|", gpu.name, gpu.sm_count, gpu.clocks_mhz.size(),
      gpu.peak_tflops_bf16, gpu.peak_tflops_fp16, gpu.peak_tflops_fp32, gpu.peak_tflops_tf32,
      gpu.peak_tflops_fp8, gpu.memory_bandwidth_gb_s, gpu.link_bandwidth_gb_s);
  for (int f : gpu.clocks_mhz) key += fmt::format("{},", f);
  for (const device::DvfsParamField& field : device::dvfs_param_fields())
    key += fmt::format("{:a},", gpu.dvfs.*field.member);
  key += fmt::format("|{:a}|{:a}|{}|{}|{}|{}|{}|", o.params.sm_link_rate_gb_s,
                     o.params.comm_memory_amplification, o.params.default_comm_sms,
                     o.exhaustive ? 1 : 0, o.seed, p.group_size, p.backward ? 1 : 0);
  key += o.profiler ? o.profiler->name() + "|" : "model|";
  const device::KernelSizeParams& ks = o.params.kernel_size;
  key += fmt::format("{}|{:a}|{}|{:a}|{:a}|", o.params.kernel_size_effects ? 1 : 0, ks.tile,
                     ks.max_split_k, ks.min_split_depth, ks.launch_overhead_s);
  append_work(key, p.comm);
  for (const Kernel& k : p.compute) append_work(key, k);
  return key;
}

}  // namespace

core::Result<SystemsResult> run_systems(const profile::ModelJob& job, int microbatches,
                                        const SystemsOptions& options, SearchCache* cache) {
  const int tp = job.parallel.tp, cp = job.parallel.cp, dp = job.parallel.dp;
  if (tp < 2 && cp < 2)
    return core::Error{
        "kareus: tp or cp must be at least 2: partitions pair collectives with compute"};
  const device::GpuSpec& gpu = job.gpu;
  const ConcurrencyParams& params = options.params;
  const int pp = static_cast<int>(job.stages.size());
  SearchCache local;
  SearchCache& memo = cache ? *cache : local;

  SystemsResult out;
  std::vector<int>& clocks = out.clocks_mhz;  // App. C clock grid, shared by every method
  StageOptions megatron(pp), nanobatch(pp), kareus_opts(pp);
  std::vector<std::array<MicrobatchOption, 2>> megatron_max(pp), nanobatch_max(pp);
  std::vector<std::array<MicrobatchWork, 2>> works(static_cast<std::size_t>(pp));
  for (int s = 0; s < pp; ++s) {
    for (int kind = 0; kind < 2; ++kind) {
      const std::vector<workload::Op> ops =
          microbatch_ops(job.stages[s], kind == 1, job.parallel.recompute);
      MicrobatchWork& mb = works[static_cast<std::size_t>(s)][static_cast<std::size_t>(kind)];
      mb = build_microbatch_work(ops, kind == 1, tp,
                                 shape_context(job.model, job.parallel, job.gpu.sm_count));
      out.partition_types += mb.partitions.size();
      std::vector<std::vector<Evaluated>> found, defaults;
      for (const PartitionType& p : mb.partitions) {
        const std::string key = cache_key(gpu, options, p);
        const SearchCache::Entry* entry = memo.find(key);
        if (entry) {
          ++memo.hits;
        } else {
          ++memo.misses;
          SearchCache::Entry e;
          const SearchSpace space = default_search_space(gpu, params, p);
          e.space_size = space.size();
          ModelProfiler model(gpu, params);
          Profiler& profiler = options.profiler ? *options.profiler : model;
          if (options.exhaustive) {
            auto all = exhaustive(profiler, p, space);
            if (!all) return all.error();
            e.found = std::move(*all);
          } else {
            auto mbo = run_mbo(profiler, p, space, app_c_options(p, options.seed));
            if (!mbo) return mbo.error();
            e.found = std::move(mbo->evaluated);
          }
          // Nanobatching: NCCL-like SM count, launched as soon as possible, at every clock.
          const SearchSpace fixed{space.clocks_mhz, {params.default_comm_sms}, {0}};
          auto fixed_costs = exhaustive(profiler, p, fixed);
          if (!fixed_costs) return fixed_costs.error();
          e.defaults = std::move(*fixed_costs);
          out.evaluated += e.found.size();
          out.space_total += e.space_size;
          entry = &memo.insert(key, std::move(e));
        }
        if (clocks.empty()) {
          for (const Evaluated& ev : entry->defaults) clocks.push_back(ev.schedule.clock_mhz);
        }
        found.push_back(entry->found);
        defaults.push_back(entry->defaults);
      }
      if (clocks.empty()) {
        for (int f : gpu.clocks_mhz)
          if (f >= 900.0 / 1410.0 * gpu.max_clock_mhz()) clocks.push_back(f);
      }
      megatron[s][kind] = microbatch_frontier(gpu, params, mb, {}, clocks, true);
      // A stage without collectives (e.g. the LM head alone with tp 1) runs sequentially.
      nanobatch[s][kind] =
          microbatch_frontier(gpu, params, mb, defaults, clocks, mb.partitions.empty());
      kareus_opts[s][kind] = microbatch_frontier(gpu, params, mb, found, clocks, true);
      const int fmax = gpu.max_clock_mhz();
      megatron_max[s][kind] = microbatch_frontier(gpu, params, mb, {}, {fmax}, true).front();
      nanobatch_max[s][kind] =
          mb.partitions.empty()
              ? megatron_max[s][kind]
              : microbatch_frontier(gpu, params, mb, defaults, {fmax}, false).front();
    }
  }
  // τ: a thousandth of the shortest forward at max clock.
  double shortest = 1e300;
  for (const auto& stage : megatron_max) shortest = std::min(shortest, stage[0].time_s);
  const double tau = shortest / 1000.0;
  auto solve = [&](const StageOptions& o) {
    return iteration_frontier(o, microbatches, tau, gpu.p_blocking_w);
  };
  auto mp = solve(megatron);
  if (!mp) return mp.error();
  auto np = solve(nanobatch);
  if (!np) return np.error();
  auto kp = solve(kareus_opts);
  if (!kp) return kp.error();
  // Energies are per pipeline (one TP/CP rank); every rank of the group runs the same plan.
  const double replicas = double(tp) * cp * dp;
  out.gpus = static_cast<long long>(pp) * tp * cp * dp;
  auto frontier_of = [&](int system, const IterationFrontier& f) {
    SystemFrontier m{system_name(system), {}};
    for (const auto& r : f.realized) m.points.emplace_back(r.time_s, r.energy_j * replicas);
    return m;
  };
  const auto m_point = evaluate_fixed(mp->problem, megatron_max);
  const auto n_point = evaluate_fixed(mp->problem, nanobatch_max);
  out.systems[kMegatron] = {system_name(kMegatron),
                            {{m_point.time_s, m_point.energy_j * replicas}}};
  out.systems[kMegatronPerseus] = frontier_of(kMegatronPerseus, *mp);
  out.systems[kNanobatching] = {system_name(kNanobatching),
                                {{n_point.time_s, n_point.energy_j * replicas}}};
  out.systems[kNanobatchingPerseus] = frontier_of(kNanobatchingPerseus, *np);
  out.systems[kKareus] = frontier_of(kKareus, *kp);
  auto plans_of = [&](StageOptions& o, IterationFrontier& f) {
    return std::make_shared<const SystemPlans>(
        SystemPlans{std::move(o), works, std::move(f), replicas});
  };
  out.plans[kMegatronPerseus] = plans_of(megatron, *mp);
  out.plans[kNanobatchingPerseus] = plans_of(nanobatch, *np);
  out.plans[kKareus] = plans_of(kareus_opts, *kp);
  return out;
}

SearchSpace global_search_space(const device::GpuSpec& gpu, const PartitionType& partition) {
  SearchSpace space;
  for (int f : gpu.clocks_mhz)
    if (f >= 900.0 / 1410.0 * gpu.max_clock_mhz() - 1e-9) space.clocks_mhz.push_back(f);
  for (int k = 1; k <= 30 && k < gpu.sm_count; ++k) space.comm_sms.push_back(k);
  for (int s = 0; s < static_cast<int>(partition.compute.size()); ++s)
    space.launch_slots.push_back(s);
  if (space.launch_slots.empty()) space.launch_slots.push_back(0);
  return space;
}

std::vector<PartitionType> unique_partition_types(const profile::ModelJob& job) {
  std::vector<PartitionType> out;
  std::vector<std::string> keys;
  const SystemsOptions none;
  for (const workload::StageWork& stage : job.stages) {
    for (int kind = 0; kind < 2; ++kind) {
      const MicrobatchWork mb = build_microbatch_work(
          microbatch_ops(stage, kind == 1, job.parallel.recompute), kind == 1, job.parallel.tp,
          shape_context(job.model, job.parallel, job.gpu.sm_count));
      for (const PartitionType& p : mb.partitions) {
        const std::string key = cache_key(job.gpu, none, p);
        if (std::find(keys.begin(), keys.end(), key) != keys.end()) continue;
        keys.push_back(key);
        out.push_back(p);
      }
    }
  }
  return out;
}

std::pair<double, double> fastest_point(const SystemFrontier& f) {
  std::pair<double, double> best{1e300, 1e300};
  for (auto p : f.points)
    if (p.first < best.first || (p.first == best.first && p.second < best.second)) best = p;
  return best;
}

std::optional<double> energy_within(const SystemFrontier& f, double time_s) {
  std::optional<double> best;
  for (auto [t, e] : f.points)
    if (t <= time_s * (1 + 1e-12) && (!best || e < *best)) best = e;
  return best;
}

std::optional<double> time_within(const SystemFrontier& f, double energy_j) {
  std::optional<double> best;
  for (auto [t, e] : f.points)
    if (e <= energy_j * (1 + 1e-12) && (!best || t < *best)) best = t;
  return best;
}

FrontierImprovement frontier_improvement(const SystemFrontier& base, const SystemFrontier& other) {
  FrontierImprovement out;
  if (base.points.empty()) return out;
  double t_min = 1e300, e_min = 1e300;
  for (auto [t, e] : base.points) {
    t_min = std::min(t_min, t);
    e_min = std::min(e_min, e);
  }
  const double e_base = *energy_within(base, t_min);
  const double t_base = *time_within(base, e_min);
  if (const auto e = energy_within(other, t_min))
    out.iso_time_energy_reduction_pct = 100.0 * (1.0 - *e / e_base);
  if (const auto t = time_within(other, e_min))
    out.iso_energy_time_reduction_pct = 100.0 * (1.0 - *t / t_base);
  return out;
}

bool frontier_dominates(const SystemFrontier& f, const SystemFrontier& dominated,
                        double tolerance) {
  for (auto [t, e] : dominated.points) {
    bool covered = false;
    for (auto [ft, fe] : f.points)
      covered = covered || (ft <= t * (1 + tolerance) && fe <= e * (1 + tolerance));
    if (!covered) return false;
  }
  return true;
}

std::string Table3Workload::label() const {
  const std::string par = cp > 1 ? fmt::format("CP{}+TP{}", cp, tp) : fmt::format("TP{}", tp);
  return fmt::format("{} {} {}x{}K", model, par, microbatch_size, seq_len / 1024);
}

std::vector<Table3Workload> table3_workloads() {
  std::vector<Table3Workload> out;
  for (const char* model : {"llama3.2-3b", "qwen3-1.7b"})
    for (auto [tp, cp] : {std::pair{8, 1}, std::pair{4, 2}})
      for (auto [b, s] : {std::pair{8, 4096}, std::pair{8, 8192}, std::pair{16, 4096}})
        out.push_back({model, tp, cp, b, s});
  return out;
}

profile::ModelJobRequest table3_request(const Table3Workload& w) {
  profile::ModelJobRequest r;
  r.model = w.model;
  r.gpu = "a100-sxm";
  r.tp = w.tp;
  r.cp = w.cp;
  r.pp = 2;
  r.microbatch_size = w.microbatch_size;
  r.seq_len = w.seq_len;
  r.microbatches = 8;
  r.precision = "bf16";
  r.partition = "min-imbalance";
  return r;
}

core::Result<profile::ModelJob> build_table3_job(const Table3Workload& w) {
  auto job = profile::build_model_job(table3_request(w));
  if (!job) return job.error();
  job->gpu.dvfs.power_limit_w = std::min(job->gpu.dvfs.power_limit_w, kTable3PowerLimitW);
  return job;
}

core::Result<workload::MemoryEstimate> table3_memory(const profile::ModelJob& job, bool recompute) {
  workload::ParallelConfig config = job.parallel;
  config.recompute = recompute;
  return workload::estimate_memory(job.model, config, job.partition,
                                   kTable3GpuMemoryGib * 1024.0 * 1024.0 * 1024.0);
}

}  // namespace powertrain::kareus
