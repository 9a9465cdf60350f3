// One search trial with the model backend: build the job, check memory, plan its Perseus
// frontier at a coarse τ, and keep T_min, energy at T_min, the all-max-clock baseline and the
// frontier points.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "search/space.h"

namespace powertrain::search {

enum class TrialStatus {
  kOk,               // planned
  kInvalid,          // structurally impossible (GPU count, batch divisibility, Megatron's rules)
  kOom,              // the memory model says it does not fit
  kPrunedOom,        // skipped: a config needing no more memory already ran out
  kPrunedDominated,  // skipped: a config that is never slower and no more energy already fits
  kPrunedBound,      // not planned: a point already found beats its time and energy lower bounds
};
std::string_view status_name(TrialStatus status);

/// One point of a configuration's frontier, for the whole job (all tp × pp × dp GPUs).
struct TrialPoint {
  double time_s = 0.0;    // iteration time realized with the plan's clocks (modelled)
  double energy_j = 0.0;  // energy per iteration, all GPUs, realized (modelled)
  int plan_point = 0;     // the Perseus frontier point (clock plan) it comes from, 0 = T*
};

/// A line below every realized point of a configuration's frontier: a point (t, e) has
/// e ≥ energy_j + slope_w·(t − time_s). The bound tactic's curve is the maximum of such lines.
struct BoundLine {
  double time_s = 0.0;
  double energy_j = 0.0;
  double slope_w = 0.0;
};

struct TrialResult {
  Config config;
  TrialStatus status = TrialStatus::kInvalid;
  std::string reason;  // invalid/OOM/pruned: why, one line
  int dp = 0;
  int num_microbatches = 0;
  double peak_memory_gib = 0.0;  // modelled, per GPU of the fullest stage (0 when not checked)
  double t_min_s = 0.0;          // fastest realized iteration (modelled)
  double energy_at_t_min_j = 0.0;
  double t_star_s = 0.0;  // least-energy point
  double energy_at_t_star_j = 0.0;
  double baseline_time_s = 0.0;  // all max clock (modelled)
  double baseline_energy_j = 0.0;
  // Lower bounds on every realized point (kOk and kPrunedBound): time with every instruction at its
  // fastest option, energy with each at its least energy above blocking power (modelled).
  double bound_time_s = 0.0;
  double bound_energy_j = 0.0;
  // A tighter energy bound as a function of time (kOk and kPrunedBound of the model backend;
  // empty elsewhere, when only bound_energy_j applies): tangents of the convex lower bound from
  // each GPU's chain of instructions (docs/search.md, the bound tactic).
  std::vector<BoundLine> bound_lines;
  std::vector<TrialPoint> frontier;  // slowest (T*) first
  double seconds = 0.0;              // wall time of the evaluation
  bool usable() const { return status == TrialStatus::kOk; }
};

/// Structural checks and the memory model only (cheap; no planning). status is kOk when the
/// configuration fits, else kInvalid or kOom with the reason.
TrialResult check_config(const SearchSpec& spec, const Config& config);

/// Decides whether a fitting configuration needs planning from its bounds (bound_time_s,
/// bound_energy_j, bound_lines): a non-empty reason skips it as kPrunedBound.
using BoundFilter = std::function<std::string(const TrialResult& bounds)>;

/// The energy bound of a configuration as a function of time: the maximum of its bound_lines, or
/// bound_energy_j when there are none, for times from bound_time_s on (it has no points before).
/// Keeps a reference to `bounds`, which must outlive it.
class EnergyBound {
 public:
  explicit EnergyBound(const TrialResult& bounds);
  /// The least energy any realized point can have at a time in [lo_s, hi_s] (hi_s may be +inf);
  /// +inf when the interval ends before bound_time_s.
  double least(double lo_s, double hi_s) const;

 private:
  double at(double time_s) const;
  const TrialResult& bounds_;
  double argmin_s_ = 0.0;  // where the convex maximum of lines is least, from bound_time_s on
};

/// check_config, then the frontier when it fits. Before solving, the lower bounds are passed to
/// `skip` (when set). Thread-safe (no shared state; `skip` must be safe to call concurrently).
TrialResult evaluate_config(const SearchSpec& spec, const Config& config,
                            const BoundFilter& skip = {});

/// A planned trial turned into the one evaluate_config returns when `skip` prunes it: the checks'
/// fields and the bounds stay, the plan's are cleared.
TrialResult pruned_by_bound(TrialResult planned, std::string reason);

}  // namespace powertrain::search
