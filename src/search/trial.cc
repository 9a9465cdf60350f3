#include "search/trial.h"

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <optional>

#include "frontier/evaluate.h"
#include "frontier/problem.h"
#include "frontier/solver.h"
#include "profile/model_profile.h"
#include "workload/memory.h"

namespace powertrain::search {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

profile::ModelJobRequest request_for(const SearchSpec& spec, const ConfigValues& c, int dp,
                                     int microbatches, int stages) {
  profile::ModelJobRequest request;
  request.model = spec.model;
  request.gpu = spec.gpu;
  request.tp = c.tp;
  request.pp = stages;
  request.dp = dp;
  request.microbatch_size = c.microbatch_size;
  request.seq_len = spec.seq_len;
  request.microbatches = microbatches;
  request.precision = spec.precision;
  request.recompute = c.recompute;
  request.sequence_parallel = c.sequence_parallel;
  request.distributed_optimizer = c.distributed_optimizer;
  return request;
}

TrialResult invalid(TrialResult r, std::string reason) {
  r.status = TrialStatus::kInvalid;
  r.reason = std::move(reason);
  return r;
}

// The structural checks and the memory model; on success also the pp-stage job.
TrialResult check(const SearchSpec& spec, const Config& config, profile::ModelJob* job_out) {
  TrialResult r;
  r.config = config;
  const ConfigValues c = values_of(spec, config);
  if (spec.num_gpus % (c.tp * c.pp) != 0)
    return invalid(r,
                   fmt::format("tp x pp = {} does not divide {} GPUs", c.tp * c.pp, spec.num_gpus));
  r.dp = spec.num_gpus / (c.tp * c.pp);
  if (spec.global_batch % (c.microbatch_size * r.dp) != 0)
    return invalid(r, fmt::format("global batch {} is not a multiple of microbatch {} x dp {}",
                                  spec.global_batch, c.microbatch_size, r.dp));
  r.num_microbatches = spec.global_batch / (c.microbatch_size * r.dp);
  if (c.sequence_parallel && c.tp == 1)
    return invalid(r, "sequence parallelism needs tp > 1 (same as without)");
  if (c.distributed_optimizer && r.dp == 1)
    return invalid(r, "distributed optimizer needs dp > 1 (same as without)");
  if (c.virtual_stages > 1) {
    if (c.pp == 1) return invalid(r, "virtual stages need pp > 1");
    if (c.recompute) return invalid(r, "interleaved 1F1B with recomputation is not modelled");
    if (r.num_microbatches % c.pp != 0)
      return invalid(r, fmt::format("interleaving needs microbatches ({}) a multiple of pp ({})",
                                    r.num_microbatches, c.pp));
  }
  auto job = profile::build_model_job(request_for(spec, c, r.dp, r.num_microbatches, c.pp));
  if (!job) return invalid(r, job.error().message);
  // Memory of the pp-stage layout; interleaving's extra in-flight activations are not modelled.
  auto memory = workload::estimate_memory(job->model, job->parallel, job->partition,
                                          job->gpu.memory_gib * kGiB);
  if (!memory) return invalid(r, memory.error().message);
  r.peak_memory_gib =
      memory->stages[static_cast<std::size_t>(memory->peak_stage)].total_bytes / kGiB;
  if (!memory->fits) {
    r.status = TrialStatus::kOom;
    r.reason = memory->verdict;
    return r;
  }
  r.status = TrialStatus::kOk;
  if (job_out != nullptr) *job_out = std::move(*job);
  return r;
}

// One GPU's chain of instructions (it runs them in order, and the DAG links them), relaxed: each
// instruction's energy above blocking power, h = e − P_blocking·t, is no less than the lower
// convex hull of its options' (t, h), made non-increasing. The least Σ h with Σ t ≤ budget is then
// a convex piecewise-linear function of the budget, found greedily by the segments' slopes.
struct ChainBound {
  double offset_s = 0.0;     // time outside the chain's profiled instructions on its longest path
  double fastest_s = 0.0;    // Σ t of the chain's instructions at their fastest options
  double h_fastest_j = 0.0;  // Σ h at those options
  std::vector<double> slope_w, end_dt_s, end_dh_j;  // segments, steepest first; cumulative ends

  // Least Σ h with Σ t ≤ time_s − offset_s, and the right derivative there.
  std::pair<double, double> at(double time_s) const {
    const double x = std::max(0.0, time_s - offset_s - fastest_s);
    const auto k = static_cast<std::size_t>(std::upper_bound(end_dt_s.begin(), end_dt_s.end(), x) -
                                            end_dt_s.begin());
    if (k == end_dt_s.size()) return {h_fastest_j + (k == 0 ? 0.0 : end_dh_j[k - 1]), 0.0};
    const double start_dt = k == 0 ? 0.0 : end_dt_s[k - 1];
    const double start_dh = k == 0 ? 0.0 : end_dh_j[k - 1];
    return {h_fastest_j + start_dh + slope_w[k] * (x - start_dt), slope_w[k]};
  }
  double end_s() const { return offset_s + fastest_s + (end_dt_s.empty() ? 0.0 : end_dt_s.back()); }
};

// Segments (slope, Δt, Δh) of the non-increasing lower convex hull of an instruction's options'
// (t, h), fastest first.
std::vector<std::array<double, 3>> hull_segments(const frontier::InstructionCostModel& model,
                                                 double p_blocking_w) {
  std::vector<std::pair<double, double>> pts;
  for (const auto& option : model.options())
    pts.emplace_back(option.time_s, option.energy_j - p_blocking_w * option.time_s);
  std::sort(pts.begin(), pts.end());
  std::vector<std::pair<double, double>> hull;
  for (const auto& p : pts) {
    if (!hull.empty() && hull.back().first == p.first) continue;  // same t: the first has least h
    while (hull.size() >= 2) {
      const auto& a = hull[hull.size() - 2];
      const auto& b = hull.back();
      // Drop b when it lies on or above the segment a–p.
      if ((b.second - a.second) * (p.first - a.first) >=
          (p.second - a.second) * (b.first - a.first))
        hull.pop_back();
      else
        break;
    }
    hull.push_back(p);
  }
  std::vector<std::array<double, 3>> segments;
  for (std::size_t i = 1; i < hull.size(); ++i) {
    const double dt = hull[i].first - hull[i - 1].first;
    const double dh = hull[i].second - hull[i - 1].second;
    if (!(dh < 0.0)) break;  // past the least h: slower options cannot lower the bound
    segments.push_back({dh / dt, dt, dh});
  }
  return segments;
}

// Every operation's fastest time and Σ over profiled instructions of the least h = e −
// P_blocking·t; nullopt when an instruction has no options (not built by the problem builder).
struct FastestTimes {
  std::vector<double> time_s;
  double above_blocking_j = 0.0;
};

std::optional<FastestTimes> fastest_times(const frontier::PlanningProblem& problem,
                                          double p_blocking_w) {
  const pipeline::OperationDag& dag = problem.dag;
  const std::size_t n = dag.operations.size();
  FastestTimes fastest{std::vector<double>(n, 0.0), 0.0};
  for (std::size_t v = 0; v < n; ++v) {
    const pipeline::Operation& op = dag.operations[v];
    if (!pipeline::is_profiled(op.kind)) {
      fastest.time_s[v] = op.constant_time_s;
      continue;
    }
    double t = std::numeric_limits<double>::infinity(), e = t;
    for (const auto& option : problem.model_of(static_cast<int>(v)).options()) {
      t = std::min(t, option.time_s);
      e = std::min(e, option.energy_j - p_blocking_w * option.time_s);
    }
    if (!std::isfinite(t) || !std::isfinite(e)) return std::nullopt;
    fastest.time_s[v] = t;
    fastest.above_blocking_j += e;
  }
  return fastest;
}

// Every GPU's chain relaxed to a ChainBound: its offset is the longest path (fastest times) into
// its first instruction and out of its last plus its unprofiled operations; its segments are its
// instructions' hull segments, merged by slope.
std::vector<ChainBound> chain_bounds(const frontier::PlanningProblem& problem,
                                     const std::vector<double>& fastest, double p_blocking_w) {
  const pipeline::OperationDag& dag = problem.dag;
  const std::size_t n = dag.operations.size();
  // Longest paths with fastest times into each node's start and out of each node's end.
  std::vector<double> head(n, 0.0), tail(n, 0.0);
  for (int v : dag.topological_order)
    for (int s : dag.successors[static_cast<std::size_t>(v)])
      head[static_cast<std::size_t>(s)] =
          std::max(head[static_cast<std::size_t>(s)],
                   head[static_cast<std::size_t>(v)] + fastest[static_cast<std::size_t>(v)]);
  for (auto it = dag.topological_order.rbegin(); it != dag.topological_order.rend(); ++it)
    for (int s : dag.successors[static_cast<std::size_t>(*it)])
      tail[static_cast<std::size_t>(*it)] =
          std::max(tail[static_cast<std::size_t>(*it)],
                   fastest[static_cast<std::size_t>(s)] + tail[static_cast<std::size_t>(s)]);
  std::vector<ChainBound> chains;
  std::map<int, std::vector<std::array<double, 3>>> hulls;  // per cost model
  for (const std::vector<int>& order : dag.gpu_order) {
    if (order.empty()) continue;
    ChainBound chain;
    chain.offset_s = head[static_cast<std::size_t>(order.front())] +
                     tail[static_cast<std::size_t>(order.back())];
    std::map<int, int> uses;  // cost model → instructions of this chain
    for (int v : order) {
      const auto u = static_cast<std::size_t>(v);
      if (!pipeline::is_profiled(dag.operations[u].kind)) {
        chain.offset_s += fastest[u];
        continue;
      }
      const int model = problem.model_of_operation[u];
      ++uses[model];
      chain.fastest_s += fastest[u];
      const auto& options = problem.model_of(v).options();
      const auto first =
          std::min_element(options.begin(), options.end(), [](const auto& a, const auto& b) {
            return a.time_s < b.time_s || (a.time_s == b.time_s && a.energy_j < b.energy_j);
          });
      chain.h_fastest_j += first->energy_j - p_blocking_w * first->time_s;
    }
    std::vector<std::array<double, 3>> segments;
    for (const auto& [model, count] : uses) {
      auto it = hulls.find(model);
      if (it == hulls.end())
        it = hulls
                 .emplace(model, hull_segments(problem.models.at(static_cast<std::size_t>(model)),
                                               p_blocking_w))
                 .first;
      for (const auto& seg : it->second)
        segments.push_back({seg[0], seg[1] * count, seg[2] * count});
    }
    std::stable_sort(segments.begin(), segments.end(),
                     [](const auto& a, const auto& b) { return a[0] < b[0]; });
    double dt = 0.0, dh = 0.0;
    for (const auto& seg : segments) {
      dt += seg[1];
      dh += seg[2];
      chain.slope_w.push_back(seg[0]);
      chain.end_dt_s.push_back(dt);
      chain.end_dh_j.push_back(dh);
    }
    chains.push_back(std::move(chain));
  }
  return chains;
}

// The convex bound E(T) = replicas · (Σ chain(T) + P_blocking·GPUs·T + per_iter_extra_j).
struct ChainsEnergyBound {
  std::vector<ChainBound> chains;
  double blocking_w = 0.0;  // P_blocking · GPUs
  double per_iter_extra_j = 0.0;
  double replicas = 1.0;

  // The bound and its right derivative at T.
  std::pair<double, double> at(double t) const {
    double e = blocking_w * t + per_iter_extra_j, slope = blocking_w;
    for (const ChainBound& chain : chains) {
      const auto [h, s] = chain.at(t);
      e += h;
      slope += s;
    }
    return {e * replicas, slope * replicas};
  }
};

// Tangents of `bound` at T_min (`time_s`) and where every chain is flat, then where the maximum
// of the tangents is furthest below the bound, up to 32 lines or a gap of 1e-6.
std::vector<BoundLine> tangent_lines(const ChainsEnergyBound& bound, double time_s) {
  double end_s = time_s;
  for (const ChainBound& chain : bound.chains) end_s = std::max(end_s, chain.end_s());
  auto tangent = [&](double t) {
    const auto [e, s] = bound.at(t);
    return BoundLine{t, e, s};
  };
  std::vector<BoundLine> lines = {tangent(time_s)};
  // From end_s on every chain is flat, so the right derivative there is the blocking power alone.
  // Set it directly: end_s − offset − fastest can round just below the last segment's end, and
  // that segment's falling slope would leave every line falling.
  if (end_s > time_s)
    lines.push_back({end_s, bound.at(end_s).first, bound.blocking_w * bound.replicas});
  while (lines.size() < 32) {
    double worst_gap = 1e-6;
    std::size_t worst = 0;
    double worst_t = 0.0;
    for (std::size_t i = 1; i < lines.size(); ++i) {
      const BoundLine& a = lines[i - 1];
      const BoundLine& b = lines[i];
      if (!(a.slope_w < b.slope_w)) continue;
      double x = (b.energy_j - a.energy_j + a.slope_w * a.time_s - b.slope_w * b.time_s) /
                 (a.slope_w - b.slope_w);
      x = std::clamp(x, a.time_s, b.time_s);
      const double below = a.energy_j + a.slope_w * (x - a.time_s);
      const double gap =
          (bound.at(x).first - below) / std::max(1e-300, std::abs(bound.at(x).first));
      if (gap > worst_gap) {
        worst_gap = gap;
        worst = i;
        worst_t = x;
      }
    }
    if (worst == 0) break;
    lines.insert(lines.begin() + static_cast<long>(worst), tangent(worst_t));
  }
  return lines;
}

// Lower bounds on every realized point of a problem: bound_time_s, bound_energy_j (the corner,
// energy at the least Σ h) and bound_lines, tangents of the convex bound
//   E(T) ≥ replicas · (Σ_gpu chain_gpu(T) + P_blocking·GPUs·T + per_iter_extra_j).
// Realized energy is Σ h + P_blocking·GPUs·T (+ the once-per-iteration work), and each GPU's chain
// lies on a path of the DAG whose other nodes take at least their fastest times, so the chain's
// instructions share at most T − (that path's other time). Everything is shrunk by 1e-9 so that
// summation order cannot make a bound exceed a realized value.
void set_bounds(const frontier::PlanningProblem& problem, double p_blocking_w,
                double per_iter_extra_j, double replicas, TrialResult& r) {
  const pipeline::OperationDag& dag = problem.dag;
  // No options for an instruction: no bounds, so the tactic never skips it.
  const std::optional<FastestTimes> fastest = fastest_times(problem, p_blocking_w);
  if (!fastest) return;
  const double time_s = frontier::longest_path(dag, fastest->time_s);
  r.bound_time_s = time_s * (1.0 - 1e-9);
  const double gpus = static_cast<double>(dag.num_gpus);
  {
    const double pipe_j = fastest->above_blocking_j + p_blocking_w * gpus * time_s;
    const double energy_j = (pipe_j + per_iter_extra_j) * replicas;
    r.bound_energy_j = energy_j - std::abs(energy_j) * 1e-9;
  }
  const ChainsEnergyBound bound{chain_bounds(problem, fastest->time_s, p_blocking_w),
                                p_blocking_w * gpus, per_iter_extra_j, replicas};
  std::vector<BoundLine> lines = tangent_lines(bound, time_s);
  for (BoundLine& line : lines) line.energy_j -= std::abs(line.energy_j) * 1e-9;
  r.bound_lines = std::move(lines);
}

}  // namespace

EnergyBound::EnergyBound(const TrialResult& bounds) : bounds_(bounds) {
  argmin_s_ = bounds.bound_time_s;
  const std::vector<BoundLine>& lines = bounds.bound_lines;
  // A maximum of lines is convex; its least value from bound_time_s on lies there, where two
  // lines cross, or (when every line falls) nowhere: it falls for ever, least at the far end.
  if (!lines.empty() &&
      std::all_of(lines.begin(), lines.end(), [](const BoundLine& l) { return l.slope_w < 0.0; })) {
    argmin_s_ = std::numeric_limits<double>::infinity();
    return;
  }
  double least = at(argmin_s_);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    for (std::size_t j = i + 1; j < lines.size(); ++j) {
      const BoundLine& a = lines[i];
      const BoundLine& b = lines[j];
      if (a.slope_w == b.slope_w) continue;
      const double x = (b.energy_j - a.energy_j + a.slope_w * a.time_s - b.slope_w * b.time_s) /
                       (a.slope_w - b.slope_w);
      if (!(x > bounds.bound_time_s) || !std::isfinite(x)) continue;
      if (const double e = at(x); e < least) {
        least = e;
        argmin_s_ = x;
      }
    }
  }
}

double EnergyBound::at(double time_s) const {
  if (bounds_.bound_lines.empty()) return bounds_.bound_energy_j;
  double e = -std::numeric_limits<double>::infinity();
  for (const BoundLine& line : bounds_.bound_lines)
    e = std::max(e, line.energy_j + line.slope_w * (time_s - line.time_s));
  return e;
}

double EnergyBound::least(double lo_s, double hi_s) const {
  lo_s = std::max(lo_s, bounds_.bound_time_s);
  if (!(lo_s <= hi_s)) return std::numeric_limits<double>::infinity();
  // Convex: over an interval, least at the point nearest the overall minimum.
  return at(std::clamp(argmin_s_, lo_s, hi_s));
}

std::string_view status_name(TrialStatus status) {
  switch (status) {
    case TrialStatus::kOk:
      return "ok";
    case TrialStatus::kInvalid:
      return "invalid";
    case TrialStatus::kOom:
      return "oom";
    case TrialStatus::kPrunedOom:
      return "pruned-oom";
    case TrialStatus::kPrunedDominated:
      return "pruned-dominated";
    case TrialStatus::kPrunedBound:
      return "pruned-bound";
  }
  return "?";
}

TrialResult check_config(const SearchSpec& spec, const Config& config) {
  return check(spec, config, nullptr);
}

TrialResult pruned_by_bound(TrialResult planned, std::string reason) {
  TrialResult r;
  r.config = std::move(planned.config);
  r.status = TrialStatus::kPrunedBound;
  r.reason = std::move(reason);
  r.dp = planned.dp;
  r.num_microbatches = planned.num_microbatches;
  r.peak_memory_gib = planned.peak_memory_gib;
  r.bound_time_s = planned.bound_time_s;
  r.bound_energy_j = planned.bound_energy_j;
  r.bound_lines = std::move(planned.bound_lines);
  r.seconds = planned.seconds;
  return r;
}

TrialResult evaluate_config(const SearchSpec& spec, const Config& config, const BoundFilter& skip) {
  const auto started = std::chrono::steady_clock::now();
  profile::ModelJob job;
  TrialResult r = check(spec, config, &job);
  auto done = [&](TrialResult out) {
    out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    return out;
  };
  if (r.status != TrialStatus::kOk) return done(std::move(r));
  const ConfigValues c = values_of(spec, config);
  const int v = c.virtual_stages;
  if (v > 1) {
    auto chunked =
        profile::build_model_job(request_for(spec, c, r.dp, r.num_microbatches, c.pp * v));
    if (!chunked) return done(invalid(r, chunked.error().message));
    job = std::move(*chunked);
  }
  const profile::Profile profile = profile::generate_profile(job);

  // Once-per-iteration work (gradient reduction, optimizer step) at the highest clock: a constant
  // node per GPU, whose energy above blocking power is added to every point.
  const int max_clock = job.gpu.max_clock_mhz();
  std::vector<double> per_iter_s(static_cast<std::size_t>(c.pp), 0.0);
  double per_iter_extra_j = 0.0;
  for (std::size_t s = 0; s < job.stages.size(); ++s) {
    const auto& stage = job.stages[s];
    const std::size_t gpu = s % static_cast<std::size_t>(c.pp);
    const auto e =
        device::estimate_work(job.gpu, workload::works_of(stage.per_iteration), max_clock);
    per_iter_s[gpu] += e.time_s;
    per_iter_extra_j += e.energy_j - job.gpu.p_blocking_w * e.time_s;
  }
  pipeline::PipelineSpec pipe;
  pipe.schedule = v > 1         ? pipeline::ScheduleKind::kInterleavedOneFOneB
                  : c.recompute ? pipeline::ScheduleKind::kOneFOneBEarlyRecompute
                                : pipeline::ScheduleKind::kOneFOneB;
  pipe.num_gpus = c.pp;
  pipe.chunks_per_gpu = v;
  pipe.num_microbatches = r.num_microbatches;
  pipe.optimizer_step_time_s = *std::max_element(per_iter_s.begin(), per_iter_s.end());
  // Coarse τ: a fraction of the shortest instruction at the highest clock, so that rounding
  // each instruction to whole τ (ceil) costs at most 1/tau_steps of it.
  double shortest_s = std::numeric_limits<double>::infinity();
  for (const auto& entry : profile.entries)
    for (const auto& option : entry.options)
      if (option.time_s > 0.0) shortest_s = std::min(shortest_s, option.time_s);
  frontier::PlanningSettings settings;
  settings.unit_time_s = shortest_s / spec.tau_steps;
  settings.p_blocking_w = job.gpu.p_blocking_w;
  settings.cost_model = frontier::CostModelKind::kPiecewiseLinear;
  auto problem = frontier::build_planning_problem(profile, pipe, settings);
  if (!problem) return done(invalid(r, problem.error().message));
  // The pipeline's energy stands for one tensor-parallel rank of one data-parallel replica.
  const double replicas = static_cast<double>(c.tp) * r.dp;
  set_bounds(*problem, settings.p_blocking_w, per_iter_extra_j, replicas, r);
  if (skip) {
    if (std::string why = skip(r); !why.empty()) {
      r.status = TrialStatus::kPrunedBound;
      r.reason = std::move(why);
      return done(std::move(r));
    }
  }
  frontier::Frontier solved = frontier::solve_frontier(*problem);
  frontier::pin_fastest_point(*problem, solved);

  // Points are the realized ones (modelled time and energy at the planned clocks, without the τ
  // rounding), Pareto-filtered: rounding can make a planned point realize no better than another.
  const std::vector<frontier::RealizedPlan> realized = frontier::realize_frontier(*problem, solved);
  std::vector<TrialPoint> points;
  for (std::size_t i = 0; i < realized.size(); ++i)
    points.push_back({realized[i].time_s, (realized[i].energy_j + per_iter_extra_j) * replicas,
                      static_cast<int>(i)});
  std::stable_sort(points.begin(), points.end(), [](const TrialPoint& a, const TrialPoint& b) {
    return a.time_s != b.time_s ? a.time_s > b.time_s : a.energy_j < b.energy_j;
  });
  // Slowest first; keep a point only if it uses less energy than every faster point.
  double least = std::numeric_limits<double>::infinity();
  for (auto it = points.rbegin(); it != points.rend(); ++it) {
    if (it->energy_j < least) {
      least = it->energy_j;
      r.frontier.push_back(*it);
    }
  }
  std::reverse(r.frontier.begin(), r.frontier.end());
  const frontier::RealizedPlan baseline = frontier::all_max_clock_baseline(*problem);
  r.baseline_time_s = baseline.time_s;
  r.baseline_energy_j = (baseline.energy_j + per_iter_extra_j) * replicas;
  r.t_min_s = r.frontier.back().time_s;
  r.energy_at_t_min_j = r.frontier.back().energy_j;
  r.t_star_s = r.frontier.front().time_s;
  r.energy_at_t_star_j = r.frontier.front().energy_j;
  return done(std::move(r));
}

}  // namespace powertrain::search
