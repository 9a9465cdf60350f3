#include "kareus/large_scale.h"

#include <fmt/core.h>

#include <chrono>
#include <map>

#include "kareus/compose.h"
#include "kareus/profiler.h"

namespace powertrain::kareus {
namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Identity of a partition type for the search cache: every kernel's work, to the bit.
std::string partition_key(const PartitionType& p) {
  std::string key = fmt::format("{}|{}|{}", p.backward, p.group_size, p.name);
  auto add = [&](const Kernel& k) {
    key += fmt::format("|{}:{}:{}:{:a}:{:a}:{:a}:{:a}:{:a}:{:a}:{:a}:{}", k.name,
                       static_cast<int>(k.work.kind), static_cast<int>(k.work.precision),
                       k.work.flops, k.work.memory_bytes, k.work.link_bytes, k.shape.rows,
                       k.shape.cols, k.shape.depth, k.shape.token_invariant_bytes, k.launches);
    key += fmt::format(":{:a}", k.causal_fill);
  };
  for (const Kernel& k : p.compute) add(k);
  add(p.comm);
  return key;
}

std::vector<ClusterPoint> scaled(const std::vector<frontier::RealizedPlan>& plans, double copies) {
  std::vector<ClusterPoint> out;
  for (const auto& r : plans) out.push_back({r.time_s, r.energy_j * copies});
  return out;
}

ClusterPoint fastest(const std::vector<ClusterPoint>& points) {
  ClusterPoint best{1e300, 1e300};
  for (const ClusterPoint& p : points)
    if (p.time_s < best.time_s || (p.time_s == best.time_s && p.energy_j < best.energy_j)) best = p;
  return best;
}

std::optional<double> least_energy_within(const std::vector<ClusterPoint>& points, double time_s) {
  std::optional<double> best;
  for (const ClusterPoint& p : points)
    if (p.time_s <= time_s * (1 + 1e-12) && (!best || p.energy_j < *best)) best = p.energy_j;
  return best;
}

std::optional<double> least_time_within(const std::vector<ClusterPoint>& points, double energy_j) {
  std::optional<double> best;
  for (const ClusterPoint& p : points)
    if (p.energy_j <= energy_j * (1 + 1e-12) && (!best || p.time_s < *best)) best = p.time_s;
  return best;
}

}  // namespace

LargeScaleOptions paper_large_scale_options() {
  LargeScaleOptions o;
  o.request.model = "llama3.3-70b";
  o.request.gpu = "a100-sxm";
  o.request.tp = 8;
  o.request.pp = 10;
  o.request.microbatch_size = 4;
  o.request.seq_len = 4096;
  o.request.partition = "uniform";  // 8 layers per stage
  return o;
}

profile::ModelJobRequest table7_request(int microbatches) {
  profile::ModelJobRequest r = paper_large_scale_options().request;
  r.microbatches = microbatches;
  return r;
}

namespace {

// One microbatch count's realized plans for a pipeline; configurations with the same count share
// them.
struct Solved {
  std::vector<frontier::RealizedPlan> perseus, kareus;
  frontier::RealizedPlan megatron;
  double solve_s = 0.0;
};

// A configuration's row: the pipeline's plans scaled to every copy (tp × pipelines), fastest
// points and the reductions vs Megatron-LM and, on the frontiers, vs Megatron-LM + Perseus.
LargeScaleRow large_scale_row(const study::ClusterConfig& config, const study::ClusterShape& shape,
                              const Solved& solved, int tp) {
  const double copies = double(tp) * double(shape.pipelines);
  LargeScaleRow row;
  row.config = config;
  row.shape = shape;
  row.solve_s = solved.solve_s;
  row.megatron = {solved.megatron.time_s, solved.megatron.energy_j * copies};
  row.perseus = scaled(solved.perseus, copies);
  row.kareus = scaled(solved.kareus, copies);
  row.perseus_fastest = fastest(row.perseus);
  row.kareus_fastest = fastest(row.kareus);
  auto pct = [](double ours, double base) { return 100.0 * (1.0 - ours / base); };
  row.perseus_time_reduction_pct = pct(row.perseus_fastest.time_s, row.megatron.time_s);
  row.kareus_time_reduction_pct = pct(row.kareus_fastest.time_s, row.megatron.time_s);
  row.perseus_energy_reduction_pct = pct(row.perseus_fastest.energy_j, row.megatron.energy_j);
  row.kareus_energy_reduction_pct = pct(row.kareus_fastest.energy_j, row.megatron.energy_j);
  // Fig. 8 definitions: iso-time at M+P's fastest time, iso-energy at M+P's least energy.
  double mp_t_min = 1e300, mp_e_min = 1e300;
  for (const ClusterPoint& p : row.perseus)
    mp_t_min = std::min(mp_t_min, p.time_s), mp_e_min = std::min(mp_e_min, p.energy_j);
  const auto mp_e = least_energy_within(row.perseus, mp_t_min);
  const auto mp_t = least_time_within(row.perseus, mp_e_min);
  if (auto e = least_energy_within(row.kareus, mp_t_min); e && mp_e)
    row.iso_time_energy_reduction_pct = pct(*e, *mp_e);
  if (auto t = least_time_within(row.kareus, mp_e_min); t && mp_t)
    row.iso_energy_time_reduction_pct = pct(*t, *mp_t);
  return row;
}

}  // namespace

core::Result<LargeScaleResult> emulate_large_scale(const LargeScaleOptions& options,
                                                   Profiler& profiler) {
  auto job = profile::build_model_job(options.request);
  if (!job) return job.error();
  const int tp = options.request.tp, pp = options.request.pp;
  if (tp < 2)
    return core::Error{
        "large-scale emulation: tp must be at least 2 (partitions pair "
        "tensor-parallel collectives with compute)"};
  // Validate every configuration before searching.
  std::vector<study::ClusterConfig> configs;
  std::vector<study::ClusterShape> shapes;
  for (long long gpus : options.gpus) {
    study::ClusterConfig c{gpus, tp, pp, options.global_batch, options.request.microbatch_size};
    auto shape = study::cluster_shape(c);
    if (!shape) return core::Error{"large-scale emulation: " + shape.error().message};
    configs.push_back(c);
    shapes.push_back(*shape);
  }
  if (configs.empty()) return core::Error{"large-scale emulation: no GPU counts given"};

  LargeScaleResult result;
  result.description = job->description;
  result.profiler = profiler.name();
  const device::GpuSpec& gpu = job->gpu;
  const ConcurrencyParams params;
  const auto search_start = std::chrono::steady_clock::now();
  std::map<std::string, std::vector<Evaluated>> searched;
  std::vector<int> clocks;
  StageOptions megatron(static_cast<std::size_t>(pp)), kareus(static_cast<std::size_t>(pp));
  std::vector<std::array<MicrobatchOption, 2>> megatron_max(static_cast<std::size_t>(pp));
  for (std::size_t s = 0; s < job->stages.size() && s < static_cast<std::size_t>(pp); ++s) {
    for (int kind = 0; kind < 2; ++kind) {
      const std::vector<workload::Op> ops =
          microbatch_ops(job->stages[s], kind == 1, job->parallel.recompute);
      const MicrobatchWork mb = build_microbatch_work(
          ops, kind == 1, tp, shape_context(job->model, job->parallel, job->gpu.sm_count));
      std::vector<std::vector<Evaluated>> found;
      for (const PartitionType& p : mb.partitions) {
        const SearchSpace space = default_search_space(gpu, params, p);
        if (clocks.empty()) clocks = space.clocks_mhz;
        const std::string key = partition_key(p);
        auto hit = searched.find(key);
        if (hit == searched.end()) {
          std::vector<Evaluated> evaluated;
          if (options.exhaustive) {
            auto all = exhaustive(profiler, p, space);
            if (!all) return all.error();
            evaluated = std::move(*all);
          } else {
            auto mbo = run_mbo(profiler, p, space, app_c_options(p, options.seed));
            if (!mbo) return mbo.error();
            evaluated = std::move(mbo->evaluated);
          }
          result.evaluated += evaluated.size();
          result.space += space.size();
          hit = searched.emplace(key, std::move(evaluated)).first;
        }
        found.push_back(hit->second);
      }
      if (clocks.empty())
        for (int f : gpu.clocks_mhz)
          if (f >= 900.0 / 1410.0 * gpu.max_clock_mhz()) clocks.push_back(f);
      megatron[s][kind] = microbatch_frontier(gpu, params, mb, {}, clocks, true);
      kareus[s][kind] = microbatch_frontier(gpu, params, mb, found, clocks, true);
      megatron_max[s][kind] =
          microbatch_frontier(gpu, params, mb, {}, {gpu.max_clock_mhz()}, true).front();
    }
  }
  result.megatron_profile = options_profile(megatron, "kareus-cluster: Megatron-LM options");
  result.kareus_profile = options_profile(kareus, "kareus-cluster: Kareus options");
  result.partition_types = searched.size();
  result.search_s = seconds_since(search_start);

  // τ: a thousandth of the shortest forward at max clock (as `powertrain kareus`).
  double shortest = 1e300;
  for (const auto& stage : megatron_max) shortest = std::min(shortest, stage[0].time_s);
  const double tau = shortest / 1000.0;
  std::map<int, Solved> by_microbatches;  // configurations with the same M share the solve
  for (std::size_t i = 0; i < configs.size(); ++i) {
    const int m = shapes[i].microbatches_per_pipeline;
    auto it = by_microbatches.find(m);
    if (it == by_microbatches.end()) {
      const auto start = std::chrono::steady_clock::now();
      auto mp = iteration_frontier(megatron, m, tau, gpu.p_blocking_w);
      if (!mp) return core::Error{fmt::format("{} microbatches: {}", m, mp.error().message)};
      auto kp = iteration_frontier(kareus, m, tau, gpu.p_blocking_w);
      if (!kp) return core::Error{fmt::format("{} microbatches: {}", m, kp.error().message)};
      Solved solved{mp->realized, kp->realized, evaluate_fixed(mp->problem, megatron_max), 0.0};
      solved.solve_s = seconds_since(start);
      it = by_microbatches.emplace(m, std::move(solved)).first;
    }
    result.rows.push_back(large_scale_row(configs[i], shapes[i], it->second, tp));
  }
  return result;
}

std::optional<PaperLargeScaleRow> paper_large_scale_row(int microbatches) {
  // Kareus Table 7 (max throughput vs Megatron-LM) and Table 8 (vs M+P), Llama 3.3 70B.
  switch (microbatches) {
    case 16:
      return PaperLargeScaleRow{0.0, 9.3, 15.0, 20.2, 11.6, 19.1};
    case 32:
      return PaperLargeScaleRow{0.0, 9.2, 14.3, 20.0, 14.1, 16.8};
    case 64:
      return PaperLargeScaleRow{0.0, 9.1, 13.8, 19.8, 15.3, 16.4};
    case 128:
      return PaperLargeScaleRow{0.0, 9.1, 13.5, 19.7, 15.1, 16.0};
    default:
      return std::nullopt;
  }
}

}  // namespace powertrain::kareus
