#include "search/search.h"

#include <fmt/core.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <thread>

#include "search/cmaes.h"
#include "search/nsga2.h"

namespace powertrain::search {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr std::size_t kBatch = 64;  // grid/random proposals decided before planning in parallel
// λ: with repaired proposals, 8 reached 2 % of the grid's best within 15 % of the valid
// configurations on every seed tried, where 12 needed more trials (docs/search.md).
constexpr int kCmaesPopulation = 8;

int idx(const Config& c, int knob) { return c.index[static_cast<std::size_t>(knob)]; }

// Same configuration except the knobs in `except`.
bool same_except(const Config& a, const Config& b, std::initializer_list<int> except) {
  for (int k = 0; k < kNumKnobs; ++k) {
    if (std::find(except.begin(), except.end(), k) != except.end()) continue;
    if (idx(a, k) != idx(b, k)) return false;
  }
  return true;
}

// Lower is better; value indices are sorted ascending, booleans 0 < 1.
std::uint64_t rng_below(std::mt19937_64& rng, std::uint64_t n) { return rng() % n; }

}  // namespace

double objective_value(Objective objective, const TrialResult& trial) {
  if (!trial.usable()) return kInf;
  return objective == Objective::kEnergy ? trial.energy_at_t_star_j : trial.t_min_s;
}

TrialStatus prune_status(const SearchSpec& spec, const Config& c,
                         const std::vector<TrialResult>& decided, int* dominator) {
  const int pp_value = spec.values[kPp][static_cast<std::size_t>(idx(c, kPp))];
  for (std::size_t i = 0; i < decided.size(); ++i) {
    const TrialResult& h = decided[i];
    const Config& d = h.config;
    if (h.status == TrialStatus::kOom || h.status == TrialStatus::kPrunedOom) {
      // Needs at least as much memory per GPU: same tp and pp (so the same dp), a microbatch no
      // smaller, no more memory savers (recompute, sequence parallel, distributed optimizer),
      // at least as many virtual stages.
      if (idx(c, kTp) == idx(d, kTp) && idx(c, kPp) == idx(d, kPp) &&
          idx(c, kMicrobatchSize) >= idx(d, kMicrobatchSize) &&
          idx(c, kVirtualStages) >= idx(d, kVirtualStages) &&
          idx(c, kRecompute) <= idx(d, kRecompute) &&
          idx(c, kSequenceParallel) <= idx(d, kSequenceParallel) &&
          idx(c, kDistributedOptimizer) <= idx(d, kDistributedOptimizer)) {
        if (dominator) *dominator = static_cast<int>(i);
        return TrialStatus::kPrunedOom;
      }
    } else if (h.status == TrialStatus::kOk || h.status == TrialStatus::kPrunedBound) {
      // (A bound-pruned configuration fits too; only its planning was skipped.)
      const bool dominated =
          // Maya's distributed-optimizer tactic is left out: here the sharded Adam step is
          // shorter by dp, which can outweigh the parameter all-gather (docs/search.md).
          // Recomputation only adds work once the job fits without it.
          (idx(c, kRecompute) == 1 && idx(d, kRecompute) == 0 && same_except(c, d, {kRecompute})) ||
          // Maya: without pipelining, more (smaller) microbatches only lower GPU utilization.
          (pp_value == 1 && idx(c, kMicrobatchSize) < idx(d, kMicrobatchSize) &&
           same_except(c, d, {kMicrobatchSize}));
      if (dominated) {
        if (dominator) *dominator = static_cast<int>(i);
        return TrialStatus::kPrunedDominated;
      }
    }
  }
  return TrialStatus::kOk;
}

std::vector<ParetoPoint> cross_frontier(const std::vector<TrialResult>& trials) {
  std::vector<ParetoPoint> all;
  for (std::size_t t = 0; t < trials.size(); ++t) {
    if (!trials[t].usable()) continue;
    for (std::size_t p = 0; p < trials[t].frontier.size(); ++p)
      all.push_back({static_cast<int>(t), trials[t].frontier[p].plan_point,
                     trials[t].frontier[p].time_s, trials[t].frontier[p].energy_j});
  }
  std::sort(all.begin(), all.end(), [](const ParetoPoint& a, const ParetoPoint& b) {
    if (a.time_s != b.time_s) return a.time_s < b.time_s;
    if (a.energy_j != b.energy_j) return a.energy_j < b.energy_j;
    if (a.trial != b.trial) return a.trial < b.trial;
    return a.point < b.point;
  });
  std::vector<ParetoPoint> front;
  double least = kInf;
  for (const ParetoPoint& p : all) {
    if (p.energy_j < least) {
      front.push_back(p);
      least = p.energy_j;
    }
  }
  return front;
}

EnergyAwareSaving energy_aware_saving(const SearchResult& result, double slack) {
  EnergyAwareSaving out;
  for (std::size_t t = 0; t < result.trials.size(); ++t) {
    const TrialResult& trial = result.trials[t];
    if (!trial.usable()) continue;
    if (out.reference_trial < 0 ||
        trial.t_min_s < result.trials[static_cast<std::size_t>(out.reference_trial)].t_min_s)
      out.reference_trial = static_cast<int>(t);
  }
  if (out.reference_trial < 0 || result.frontier.empty()) return out;
  const TrialResult& ref = result.trials[static_cast<std::size_t>(out.reference_trial)];
  out.reference_time_s = ref.baseline_time_s;
  out.reference_energy_j = ref.baseline_energy_j;
  out.time_budget_s = (1.0 + slack) * ref.baseline_time_s;
  // Fastest first with falling energy: the last point within the budget uses the least energy.
  out.chosen = result.frontier.front();
  for (const ParetoPoint& p : result.frontier)
    if (p.time_s <= out.time_budget_s) out.chosen = p;
  out.saving_fraction = 1.0 - out.chosen.energy_j / out.reference_energy_j;
  return out;
}

namespace {

class Driver {
 public:
  Driver(const SearchSpec& spec, const SearchOptions& options) : spec_(spec), options_(options) {
    result_.grid_size = spec.grid_size();
    budget_ = spec.max_trials > 0 ? spec.max_trials
              : spec.algorithm == Algorithm::kGrid
                  ? result_.grid_size
                  : std::max<long long>(1, static_cast<long long>(0.15 * result_.grid_size));
    if (spec.algorithm == Algorithm::kGrid) budget_ = std::min(budget_, result_.grid_size);
  }

  bool done() const { return result_.decided >= budget_ || result_.early_stopped; }

  // Decides a batch of proposals in order, plans the fitting ones concurrently, and returns the
  // trial index of every proposal (-1 for proposals past the budget).
  std::vector<int> run_batch(const std::vector<Config>& proposals) {
    std::vector<int> out;
    std::vector<int> to_plan;
    const std::size_t first = result_.trials.size();
    for (const Config& c : proposals) {
      if (auto it = seen_.find(c); it != seen_.end()) {
        out.push_back(it->second);
        continue;
      }
      if (done()) {
        out.push_back(-1);
        continue;
      }
      const int index = static_cast<int>(result_.trials.size());
      seen_[c] = index;
      out.push_back(index);
      int dominator = -1;
      // Structural checks first: they cost nothing, and a configuration that cannot exist is no
      // trial, whether or not a tactic would also have skipped it.
      TrialResult trial = check_config(spec_, c);
      TrialStatus pruned = TrialStatus::kOk;
      if (spec_.pruning && trial.status != TrialStatus::kInvalid)
        pruned = prune_status(spec_, c, result_.trials, &dominator);
      if (pruned != TrialStatus::kOk) {
        trial.status = pruned;
        trial.reason = fmt::format(
            "{} {}",
            pruned == TrialStatus::kPrunedOom ? "needs no less memory than OOM"
                                              : "no faster than fitting",
            config_label(spec_, result_.trials[static_cast<std::size_t>(dominator)].config));
      } else if (trial.status == TrialStatus::kOk) {
        to_plan.push_back(index);
      }
      if (trial.status != TrialStatus::kInvalid) ++result_.decided;
      result_.trials.push_back(std::move(trial));
      result_.dominator.push_back(dominator);
    }
    plan(to_plan);
    // Early stopping, in proposal order, over every configuration that fits (Maya: "the top 5
    // unchanged for 20 consecutive non-OOMing configs"); a pruned-dominated one enters with the
    // value it copies from its dominator, as Maya reports the copied runtime to the tuner.
    for (std::size_t i = first; i < result_.trials.size(); ++i) observe(static_cast<int>(i));
    return out;
  }

  // The bound tactic: skip planning a configuration when, at every time it could reach (no less
  // than its time bound), a point of the cross-configuration frontier of the trials planned before
  // this batch is no slower and uses less energy than its energy bound at that time, so none of its
  // points can be on the frontier or be the best (docs/search.md). The frontier is frozen per
  // batch, so results do not depend on threads.
  std::string bound_reason(const TrialResult& bounds) const {
    // front_ is fastest first with falling energy: between two of its points' times, the earlier
    // one has the least energy among the points no slower.
    auto it = std::upper_bound(front_.begin(), front_.end(), bounds.bound_time_s,
                               [](double t, const ParetoPoint& p) { return t < p.time_s; });
    if (it == front_.begin()) return {};
    const EnergyBound bound(bounds);
    for (auto p = std::prev(it); p != front_.end(); ++p) {
      const double hi_s = std::next(p) == front_.end() ? kInf : std::next(p)->time_s;
      if (!(p->energy_j < bound.least(p->time_s, hi_s))) return {};
    }
    const ParetoPoint& p = *std::prev(it);
    return fmt::format(
        "frontier points from {:.6g} s {:.6g} J of {} beat its bounds from {:.6g} s {:.6g} J",
        p.time_s, p.energy_j,
        config_label(spec_, result_.trials[static_cast<std::size_t>(p.trial)].config),
        bounds.bound_time_s, bound.least(bounds.bound_time_s, bounds.bound_time_s));
  }

  void plan(const std::vector<int>& indices) {
    if (indices.empty()) return;
    if (spec_.pruning) front_ = cross_frontier(result_.trials);
    BoundFilter skip;
    if (spec_.pruning && !front_.empty())
      skip = [this](const TrialResult& bounds) { return bound_reason(bounds); };
    // Longest first, so a long solve does not start last and leave the other threads idle: the
    // solver's steps grow with the pipeline's instructions (microbatches x stages x chunks). The
    // order of planning does not change any result.
    std::vector<int> order = indices;
    auto cost = [&](int index) {
      const TrialResult& t = result_.trials[static_cast<std::size_t>(index)];
      const ConfigValues c = values_of(spec_, t.config);
      return static_cast<double>(t.num_microbatches) * c.pp * c.virtual_stages *
             (c.recompute ? 1.5 : 1.0);
    };
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return cost(a) > cost(b); });
    if (options_.evaluate_batch) {
      std::vector<TrialResult> batch;
      for (int i : order) batch.push_back(result_.trials[static_cast<std::size_t>(i)]);
      options_.evaluate_batch(spec_, batch, skip);
      for (std::size_t i = 0; i < order.size(); ++i) {
        TrialResult& slot = result_.trials[static_cast<std::size_t>(order[i])];
        slot = std::move(batch[i]);
        // MPI workers and checkpointed trials were planned without this batch's frozen frontier:
        // apply the bound tactic here too, so every rank count and resume gives the same result.
        if (skip && slot.status == TrialStatus::kOk)
          if (std::string why = skip(slot); !why.empty())
            slot = pruned_by_bound(std::move(slot), std::move(why));
      }
      return;
    }
    std::atomic<std::size_t> next{0};
    auto work = [&]() {
      for (std::size_t i = next++; i < order.size(); i = next++) {
        const auto slot = static_cast<std::size_t>(order[i]);
        const Config config = result_.trials[slot].config;
        TrialResult planned = evaluate_config(spec_, config, skip);
        result_.trials[slot] = std::move(planned);
      }
    };
    const int threads = std::clamp(options_.threads, 1,
                                   static_cast<int>(std::min<std::size_t>(indices.size(), 256)));
    std::vector<std::thread> pool;
    for (int t = 1; t < threads; ++t) pool.emplace_back(work);
    work();
    for (auto& t : pool) t.join();
  }

  void observe(int index) {
    const TrialResult& trial = result_.trials[static_cast<std::size_t>(index)];
    // Bound-pruned ones enter with their bounds (for time, its T_min: every instruction at its
    // fastest option); they are never the best, as a planned point is no slower.
    if (trial.status != TrialStatus::kOk && trial.status != TrialStatus::kPrunedDominated &&
        trial.status != TrialStatus::kPrunedBound)
      return;
    const double value = fitness(index);
    if (trial.usable() && (best_ < 0 || value < best_value_)) {
      best_ = index;
      best_value_ = value;
    }
    // Top-k by (value, index); early stop when it stays the same for `patience` valid trials.
    top_.emplace_back(value, index);
    std::sort(top_.begin(), top_.end());
    if (top_.size() > static_cast<std::size_t>(spec_.early_stop_top))
      top_.resize(static_cast<std::size_t>(spec_.early_stop_top));
    const bool changed =
        std::find(top_.begin(), top_.end(), std::make_pair(value, index)) != top_.end();
    unchanged_ = changed ? 0 : unchanged_ + 1;
    maybe_stop();
  }

  void maybe_stop() {
    if (spec_.algorithm != Algorithm::kGrid && spec_.early_stop_patience > 0 &&
        top_.size() >= static_cast<std::size_t>(spec_.early_stop_top) &&
        unchanged_ >= spec_.early_stop_patience)
      result_.early_stopped = true;
  }

  void report() {
    if (!options_.progress) return;
    SearchProgress p;
    p.trials = result_.decided;
    p.budget = budget_;
    p.best_trial = best_;
    p.best_value = best_value_;
    options_.progress(p, result_.trials);
  }

  double fitness(int trial) const {
    if (trial < 0) return kInf;
    auto t = static_cast<std::size_t>(trial);
    // Maya's tactic copies the dominator's runtime.
    if (result_.trials[t].status == TrialStatus::kPrunedDominated)
      t = static_cast<std::size_t>(result_.dominator[t]);
    const TrialResult& r = result_.trials[t];
    // A bound-pruned configuration ranks by its bounds; its T_min is no less than bound_time_s.
    if (r.status == TrialStatus::kPrunedBound)
      return spec_.objective == Objective::kEnergy ? r.bound_energy_j : r.bound_time_s;
    return objective_value(spec_.objective, r);
  }

  // (T_min, least energy) for NSGA-II, with the same stand-ins as fitness(); +inf when unknown.
  std::vector<double> objectives(int trial) const {
    if (trial < 0) return {kInf, kInf};
    auto t = static_cast<std::size_t>(trial);
    if (result_.trials[t].status == TrialStatus::kPrunedDominated)
      t = static_cast<std::size_t>(result_.dominator[t]);
    const TrialResult& r = result_.trials[t];
    if (r.status == TrialStatus::kPrunedBound) return {r.bound_time_s, r.bound_energy_j};
    if (!r.usable()) return {kInf, kInf};
    return {r.t_min_s, r.energy_at_t_star_j};
  }

  SearchResult finish() {
    for (const TrialResult& t : result_.trials) {
      switch (t.status) {
        case TrialStatus::kOk:
          ++result_.planned;
          break;
        case TrialStatus::kOom:
          ++result_.oom;
          break;
        case TrialStatus::kPrunedOom:
          ++result_.pruned_oom;
          break;
        case TrialStatus::kPrunedDominated:
          ++result_.pruned_dominated;
          break;
        case TrialStatus::kPrunedBound:
          ++result_.pruned_bound;
          break;
        case TrialStatus::kInvalid:
          ++result_.invalid;
          break;
      }
    }
    result_.best = best_;
    result_.frontier = cross_frontier(result_.trials);
    return std::move(result_);
  }

  long long budget() const { return budget_; }
  std::size_t num_trials() const { return result_.trials.size(); }

 private:
  const SearchSpec& spec_;
  const SearchOptions& options_;
  SearchResult result_;
  std::map<Config, int> seen_;
  long long budget_ = 0;
  int best_ = -1;
  double best_value_ = kInf;
  std::vector<std::pair<double, int>> top_;
  std::vector<ParetoPoint> front_;  // cross frontier before the batch being planned
  int unchanged_ = 0;
};

}  // namespace

SearchResult run_search(const SearchSpec& spec, const SearchOptions& options) {
  const auto started = std::chrono::steady_clock::now();
  Driver driver(spec, options);
  if (spec.algorithm == Algorithm::kGrid || spec.algorithm == Algorithm::kRandom) {
    std::vector<Config> order = grid_configs(spec);
    if (spec.algorithm == Algorithm::kRandom) {
      std::mt19937_64 rng(spec.seed);
      for (std::size_t i = order.size(); i > 1; --i)
        std::swap(order[i - 1], order[rng_below(rng, i)]);
    }
    for (std::size_t begin = 0; begin < order.size() && !driver.done(); begin += kBatch) {
      const std::size_t end = std::min(order.size(), begin + kBatch);
      driver.run_batch(std::vector<Config>(order.begin() + static_cast<long>(begin),
                                           order.begin() + static_cast<long>(end)));
      driver.report();
    }
  } else if (spec.algorithm == Algorithm::kNsga2) {
    // NSGA-II over the unit cube with the CMA-ES decoding and repair; the two objectives are a
    // configuration's T_min and its least energy (at T*). The GPU count is fixed by the spec.
    Nsga2Options ga_options;
    ga_options.population = spec.cmaes_population > 0 ? spec.cmaes_population : 24;
    ga_options.seed = spec.seed;
    Nsga2 ga(std::vector<double>(kNumKnobs, 0.0), std::vector<double>(kNumKnobs, 1.0), ga_options);
    int stale = 0;
    while (!driver.done() && stale < 20) {
      const auto xs = ga.ask();
      std::vector<Config> proposals;
      for (const auto& x : xs) proposals.push_back(repair_config(spec, decode_unit_point(spec, x)));
      const std::size_t before = driver.num_trials();
      const std::vector<int> trials = driver.run_batch(proposals);
      std::vector<std::vector<double>> objectives;
      for (int t : trials) objectives.push_back(driver.objectives(t));
      ga.tell(objectives);
      driver.report();
      stale = driver.num_trials() > before ? 0 : stale + 1;
    }
  } else {
    // CMA-ES over the unit cube; each coordinate's value is floor(x × count). Restarts from a
    // random mean (same seeded stream) when generations stop finding new configurations.
    std::mt19937_64 restart_rng(spec.seed ^ 0x9e3779b97f4a7c15ULL);
    auto unit = [&]() { return (static_cast<double>(restart_rng() >> 11) + 0.5) * 0x1.0p-53; };
    int restart = 0;
    while (!driver.done()) {
      std::vector<double> mean(kNumKnobs, 0.5);
      if (restart > 0)
        for (double& m : mean) m = unit();
      CmaEs es(mean, 0.3, spec.cmaes_population > 0 ? spec.cmaes_population : kCmaesPopulation,
               spec.seed + static_cast<std::uint64_t>(restart));
      if (spec.cmaes_margin) {
        std::vector<int> levels;
        for (const auto& v : spec.values) levels.push_back(static_cast<int>(v.size()));
        es.set_margin(std::move(levels));
      }
      int stale = 0;
      while (!driver.done() && stale < 8 && es.sigma() > 1e-3) {
        const auto xs = es.ask();
        std::vector<Config> proposals;
        for (const auto& x : xs)
          proposals.push_back(repair_config(spec, decode_unit_point(spec, x)));
        const std::size_t before = driver.num_trials();
        const std::size_t known = proposals.size();
        std::vector<int> trials = driver.run_batch(proposals);
        std::vector<double> fitness;
        for (std::size_t i = 0; i < known; ++i) fitness.push_back(driver.fitness(trials[i]));
        // Penalize leaving the cube a little so the mean stays where the knobs are.
        for (std::size_t i = 0; i < known; ++i) {
          double out = 0.0;
          for (double v : xs[i]) out += std::max(0.0, -v) + std::max(0.0, v - 1.0);
          if (std::isfinite(fitness[i])) fitness[i] *= 1.0 + out;
        }
        es.tell(fitness);
        driver.report();
        stale = driver.num_trials() > before ? 0 : stale + 1;
      }
      ++restart;
      if (restart > 1000) break;
    }
  }
  SearchResult result = driver.finish();
  result.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return result;
}

}  // namespace powertrain::search
