// Per-instruction time–energy cost models over quantized time (Perseus §4.1, App. D).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "frontier/profile.h"

namespace powertrain::frontier {

/// How measured options become a continuous convex cost over time.
enum class CostModelKind {
  kExponential,      // a·exp(b·(t − t0)) + c, least squares (the paper's relaxation)
  kPiecewiseLinear,  // lower convex hull of the measured points (no fit)
};
std::string_view cost_model_name(CostModelKind kind);
std::optional<CostModelKind> parse_cost_model(std::string_view name);

/// How a measured time becomes an integer number of time units τ. Floor is the reference solver's
/// rule; ceil never plans an instruction faster than it was measured, so realized ≤ planned.
enum class Quantization { kFloor, kCeil };
std::optional<Quantization> parse_quantization(std::string_view name);

/// A Pareto-optimal measured option on the quantized time axis.
struct QuantizedOption {
  int units = 0;  // quantized time in τ
  int frequency_mhz = 0;
  double time_s = 0.0;              // measured
  double energy_j = 0.0;            // measured
  double effective_energy_j = 0.0;  // energy − P_blocking × units × τ
};

/// Fitted parameters and fit quality, for reports.
struct FitReport {
  CostModelKind kind = CostModelKind::kExponential;
  double a = 0.0, b = 0.0, c = 0.0;  // exponential only; t in τ units, shifted by t0
  int t0_units = 0;
  double rms_error_j = 0.0;         // over the Pareto options, fitted vs measured effective energy
  double max_relative_error = 0.0;  // max |fit − measured| / |measured energy|
  int num_points = 0;
  bool fell_back_to_piecewise_linear = false;  // too few points for an exponential
};

/// Cost model of one (stage, instruction): fitted effective energy at every duration in
/// [min_units, max_units], and the options used to turn a planned duration back into a clock.
class InstructionCostModel {
 public:
  int min_units() const { return min_units_; }
  int max_units() const { return max_units_; }
  /// Fitted effective energy (J) at a duration. Precondition: min_units ≤ units ≤ max_units.
  double cost(int units) const { return costs_[static_cast<std::size_t>(units - min_units_)]; }
  /// Pareto options, fastest first.
  const std::vector<QuantizedOption>& options() const { return options_; }
  const FitReport& fit() const { return fit_; }
  /// The slowest option whose quantized time is not longer than the planned duration; the fastest
  /// option if none is. With ceil quantization its measured time is then within planned_units × τ.
  const QuantizedOption& option_for(int planned_units) const;

  /// A model with a single duration and cost (constant-time operations).
  static InstructionCostModel constant(int units, double effective_energy_j);
  /// A model with given costs at durations min_units, min_units + 1, ...; each duration gets a
  /// synthetic option (clock = 1000 + units MHz, time = units × τ, energy = cost). For tests and
  /// synthetic workloads. Precondition: costs non-empty.
  static InstructionCostModel from_costs(int min_units, std::vector<double> costs,
                                         double unit_time_s);

  friend core::Result<InstructionCostModel> build_cost_model(const InstructionProfile&, double,
                                                             double, CostModelKind, Quantization);

 private:
  int min_units_ = 0;
  int max_units_ = 0;
  std::vector<double> costs_;
  std::vector<QuantizedOption> options_;
  FitReport fit_;
};

/// Quantizes a time: floor or ceil of time/τ, with a relative tolerance so that 0.3/0.1 is 3.
int quantize(double time_s, double unit_time_s, Quantization rule);

/// Pareto filter used by the reference solver: an option is dropped when another is faster in
/// quantized time and lower in energy × `noise_factor`; then one option per quantized time (lowest
/// energy) is kept. Returns options sorted fastest first.
std::vector<QuantizedOption> pareto_filter(const std::vector<QuantizedOption>& options,
                                           double noise_factor);

/// Builds the model. If 3 or fewer options survive the filter, it is rerun with noise factor 0.95.
/// Errors: a fit that does not produce a finite convex curve (names stage and instruction).
core::Result<InstructionCostModel> build_cost_model(const InstructionProfile& profile,
                                                    double unit_time_s, double p_blocking_w,
                                                    CostModelKind kind, Quantization quantization);

/// Least-squares fit of y ≈ a·exp(b·x) + c by variable projection (a, c linear; b searched on a
/// log grid and refined by golden section). Returns {a, b, c, sse}. Needs ≥ 3 points with distinct
/// x.
struct ExponentialFit {
  double a, b, c, sse;
};
std::optional<ExponentialFit> fit_exponential(const std::vector<double>& x,
                                              const std::vector<double>& y);

/// Lower convex hull of points (x ascending, distinct), evaluated at integer x in [x0, x1].
std::vector<double> convex_hull_interpolation(const std::vector<double>& x,
                                              const std::vector<double>& y, int x0, int x1);

}  // namespace powertrain::frontier
