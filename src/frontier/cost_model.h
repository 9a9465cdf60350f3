// Per-instruction time–energy cost models over quantized time (Perseus §4.1, App. D).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "profile/profile.h"

namespace powertrain::frontier {

/// How measured options become a continuous convex cost over time.
enum class CostModelKind {
  kExponential,      // a·exp(b·(t − t0)) + c, least squares (the paper's relaxation)
  kPiecewiseLinear,  // lower convex hull of the measured points (no fit)
};
std::string_view cost_model_name(CostModelKind kind);
std::optional<CostModelKind> parse_cost_model(std::string_view name);

/// How the exponential is fitted. kReference follows the reference solver (lowtime) exactly:
/// t = quantized time (not shifted), Levenberg–Marquardt (MINPACK lmdif, as scipy's curve_fit
/// 'lm') from each start of a fixed grid, starts that fail or have an infinite covariance
/// skipped, lowest mean squared error wins. kGlobal is the global least-squares optimum by
/// variable projection (no start guesses).
enum class FitMethod { kReference, kGlobal };
std::string_view fit_method_name(FitMethod method);
std::optional<FitMethod> parse_fit_method(std::string_view name);

/// How a measured time becomes an integer number of time units τ. Either way options are
/// Pareto-filtered on measured time and energy and one option per quantized time is kept, the
/// fastest measured (the reference solver's filter).
/// kCeil (default): a planned duration never maps to a clock slower than planned (realized ≤
/// planned), and the fastest option is the fastest measured clock.
/// kFloor: the reference solver's rule; a clock may run up to τ longer than planned. For
/// comparing with the reference solver's frontiers.
enum class Quantization { kFloor, kCeil };
std::optional<Quantization> parse_quantization(std::string_view name);
std::string_view quantization_name(Quantization rule);

/// Limits that keep the solver's work bounded (it takes one step per τ between T* and T_min).
inline constexpr double kMaxUnitsPerInstruction = 1e8;

/// A Pareto-optimal measured option on the quantized time axis.
struct QuantizedOption {
  int units = 0;  // quantized time in τ
  int frequency_mhz = 0;
  double time_s = 0.0;              // measured
  double energy_j = 0.0;            // measured
  double effective_energy_j = 0.0;  // energy − P_blocking × units × τ
};

/// Why an exponential was not fitted on the normally filtered options.
enum class FitFallback {
  kNone,
  kNoiseTolerantFilter,  // the fit failed or was concave; refitted after the 5 % noise filter
  kConvexHull,           // no convex fit at all (or < 3 options): convex piecewise-linear hull
};
std::string_view fit_fallback_name(FitFallback fallback);

/// Fitted parameters and fit quality, for reports.
struct FitReport {
  CostModelKind kind = CostModelKind::kExponential;
  FitMethod method = FitMethod::kReference;
  double a = 0.0, b = 0.0, c = 0.0;  // exponential only; t in τ units, shifted by t0
  int t0_units = 0;                  // 0 for the reference fit (t not shifted)
  double rms_error_j = 0.0;          // over the Pareto options, fitted vs measured effective energy
  double max_relative_error = 0.0;   // max |fit − measured| / |measured energy|
  int num_points = 0;
  int converged_starts = 0;   // reference fit: start guesses that gave a usable fit
  bool noise_filter = false;  // the options came from the 5 % noise-tolerant filter
  FitFallback fallback = FitFallback::kNone;
  std::string fallback_reason;                 // why, when fallback != kNone
  bool fell_back_to_piecewise_linear = false;  // fallback == kConvexHull with an exponential asked
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

  friend core::Result<InstructionCostModel> build_cost_model(const profile::InstructionProfile&,
                                                             double, double, CostModelKind,
                                                             Quantization, FitMethod);

 private:
  int min_units_ = 0;
  int max_units_ = 0;
  std::vector<double> costs_;
  std::vector<QuantizedOption> options_;
  FitReport fit_;
};

/// Quantizes a time: floor or ceil of time/τ, with a relative tolerance so that 0.3/0.1 is 3.
/// Precondition: time_s / unit_time_s ≤ kMaxUnitsPerInstruction (see quantize_checked).
int quantize(double time_s, double unit_time_s, Quantization rule);
/// quantize(), or nullopt when the ratio is not finite or exceeds kMaxUnitsPerInstruction.
std::optional<int> quantize_checked(double time_s, double unit_time_s, Quantization rule);

/// The reference solver's filter: an option is dropped when another is faster in measured time and
/// lower in energy × `noise_factor`; then one option per quantized time is kept, the fastest
/// measured (on the Pareto set, lowtime's "largest energy"). Returns options sorted fastest first.
std::vector<QuantizedOption> pareto_filter_measured_time(
    const std::vector<QuantizedOption>& options, double noise_factor);

/// Builds the model. If 3 or fewer options survive the filter, it is rerun with noise factor 0.95.
/// An exponential fit that fails or is concave falls back (FitReport::fallback) to the noise
/// filter, then to the convex hull; it is never an error. Errors: a time that is more than
/// kMaxUnitsPerInstruction units of τ (names stage, instruction and clock).
core::Result<InstructionCostModel> build_cost_model(const profile::InstructionProfile& profile,
                                                    double unit_time_s, double p_blocking_w,
                                                    CostModelKind kind, Quantization quantization,
                                                    FitMethod method = FitMethod::kReference);

/// Least-squares fit of y ≈ a·exp(b·x) + c by variable projection (a, c linear; b searched on a
/// log grid and refined by golden section). Returns {a, b, c, sse}. Needs ≥ 3 points with distinct
/// x.
struct ExponentialFit {
  double a, b, c, sse;
  int converged_starts = 0;  // reference fit only
};
std::optional<ExponentialFit> fit_exponential(const std::vector<double>& x,
                                              const std::vector<double>& y);

/// The reference solver's fit: Levenberg–Marquardt with forward-difference Jacobian (MINPACK
/// lmdif semantics: ftol = xtol = 1.49012e−8, gtol = 0, factor 100, up to 50 000 evaluations)
/// from every start (a, b, c) ∈ {10, 100, 1000} × {−0.01, −0.02, −0.03, −0.04, −0.05, −0.1}·τ/1 ms
/// × {10, 100, 1000}, x in τ units as given (not shifted). A start is skipped when LM does not
/// converge or the covariance (inverse of JᵀJ times the residual variance, as curve_fit) is
/// singular or infinite (always so with 3 points). The lowest mean squared error wins; ties keep
/// the earlier start. nullopt when no start fits.
std::optional<ExponentialFit> fit_exponential_reference(const std::vector<double>& x,
                                                        const std::vector<double>& y,
                                                        double unit_time_s);

/// Lower convex hull of points (x ascending, distinct), evaluated at integer x in [x0, x1].
std::vector<double> convex_hull_interpolation(const std::vector<double>& x,
                                              const std::vector<double>& y, int x0, int x1);

}  // namespace powertrain::frontier
