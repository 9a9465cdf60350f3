// Search over one partition's execution schedules (Kareus §4.3, Alg. 1, App. C): the space of
// clock × communication SMs × launch slot, an exhaustive reference on the model, and multi-pass
// multi-objective Bayesian optimization with surrogate models.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/result.h"
#include "kareus/concurrency.h"

namespace powertrain::kareus {

class Profiler;  // kareus/profiler.h

/// The candidate schedules of a partition.
struct SearchSpace {
  std::vector<int> clocks_mhz;  // ascending
  std::vector<int> comm_sms;    // ascending
  std::vector<int> launch_slots;
  std::size_t size() const { return clocks_mhz.size() * comm_sms.size() * launch_slots.size(); }
  /// Candidate i: clock-major, then SMs, then slot.
  Schedule at(std::size_t i) const;
};

/// App. C: clocks from f_max down to min_clock_fraction × f_max every `clock_stride` catalog
/// steps (A100: 900–1410 MHz every 30 MHz, 18 clocks); SMs 3..30 step 3 when the group has ≥ 4
/// GPUs, else 1..20; launch slots: every compute kernel except those after which the remaining
/// compute, run alone at f_max, is shorter than half the collective alone on the most SMs (it
/// would be exposed longer than overlapped). Slot 0 is always kept.
SearchSpace default_search_space(const device::GpuSpec& gpu, const ConcurrencyParams& params,
                                 const PartitionType& partition, int clock_stride = 2,
                                 double min_clock_fraction = 900.0 / 1410.0);

/// An evaluated candidate.
struct Evaluated {
  std::size_t index = 0;  // into the space
  Schedule schedule;
  Cost cost;
};

/// Every candidate of the space, in index order.
std::vector<Evaluated> exhaustive(const device::GpuSpec& gpu, const ConcurrencyParams& params,
                                  const PartitionType& partition, const SearchSpace& space);
/// The same through a profiler. Errors: the profiler's first failure.
core::Result<std::vector<Evaluated>> exhaustive(Profiler& profiler, const PartitionType& partition,
                                                const SearchSpace& space);

// ---- Two-objective hypervolume (minimization) -------------------------------------------------

struct Point2 {
  double x = 0.0;
  double y = 0.0;
};
/// Non-dominated points, sorted by x ascending (y then descending). O(n log n).
std::vector<Point2> pareto_front(std::vector<Point2> points);
/// Area dominated by the points and bounded by the reference (points not below it ignored).
double hypervolume(const std::vector<Point2>& points, Point2 reference);
/// HV(front ∪ {p}) − HV(front), for a front from pareto_front. O(|front|).
double hypervolume_improvement(const std::vector<Point2>& front, Point2 p, Point2 reference);

// ---- Multi-pass MBO --------------------------------------------------------------------------

struct MboOptions {
  int initial_samples = 0;                                         // 0: by partition size (App. C)
  int batch_size = 0;                                              // 0: by partition size
  int max_batches = 0;                                             // 0: by partition size
  double pass_total = 0.4, pass_dynamic = 0.2, pass_static = 0.2;  // rest: uncertainty
  int ensemble_size = 5;
  double bootstrap_fraction = 0.8;
  int stop_window = 2;         // R
  double stop_epsilon = 1e-3;  // ε on the moving average of relative HV improvement
  std::uint64_t seed = 1;
};

/// App. C sizes: small (1 compute kernel) 36 + 3 × 16; medium (2–3) 48 + 4 × 16; large 96 + 4 × 32.
MboOptions app_c_options(const PartitionType& partition, std::uint64_t seed = 1);

/// Which step found a candidate.
enum class Pass { kInitial, kTotal, kDynamic, kStatic, kUncertainty };
const char* pass_name(Pass pass);

struct MboResult {
  std::vector<Evaluated> evaluated;  // in evaluation order
  std::vector<Pass> found_by;        // per evaluated candidate
  int batches = 0;
  bool converged = false;            // stopped by the HV criterion before max_batches
  std::vector<double> hypervolumes;  // normalized (time, total energy) HV after init and each batch
};

/// Alg. 1 with the model as the "profiler": surrogates T̂ and Ê_dyn; total = T̂·P_static + Ê_dyn;
/// exploitation by HVI on (time, total), (time, dynamic) and (time, static) energy; exploration
/// by the sum of the bootstrap ensemble's standard deviations. Objectives are normalized by the
/// initial sample's maxima; reference r = 1.1 × the worst observed. Deterministic for the seed.
/// Errors: surrogate failures.
core::Result<MboResult> run_mbo(const device::GpuSpec& gpu, const ConcurrencyParams& params,
                                const PartitionType& partition, const SearchSpace& space,
                                const MboOptions& options);
/// Alg. 1 evaluating candidates through `profiler` (P_static from profiler.static_power_w()); the
/// overload above is this with a ModelProfiler. Errors: surrogate or profiler failures.
core::Result<MboResult> run_mbo(Profiler& profiler, const PartitionType& partition,
                                const SearchSpace& space, const MboOptions& options);

/// Normalized (time, total energy) hypervolume of `found` relative to that of `all` (both with
/// the normalization and reference of `all`): 1 when found contains all's frontier.
double hypervolume_ratio(const std::vector<Evaluated>& found, const std::vector<Evaluated>& all);

}  // namespace powertrain::kareus
