// Cost models: Pareto filter, quantization and the convex fits the min-cut solver needs.
#include "frontier/cost_model.h"

#include <fmt/core.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <unsupported/Eigen/NonLinearOptimization>
#include <unsupported/Eigen/NumericalDiff>

namespace powertrain::frontier {
namespace {

// Relative slack when quantizing, so that 0.3 s / 0.1 s counts as 3 units and not 2.999...
constexpr double kQuantizationRelativeSlack = 1e-9;

double sum_squared_error(const std::vector<double>& x, const std::vector<double>& y, double a,
                         double b, double c) {
  double sse = 0.0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double r = a * std::exp(b * x[i]) + c - y[i];
    sse += r * r;
  }
  return sse;
}

// For a fixed exponent b, the best (a, c) is a 2×2 linear least-squares problem.
std::optional<ExponentialFit> solve_linear_part(const std::vector<double>& x,
                                                const std::vector<double>& y, double b) {
  const double n = static_cast<double>(x.size());
  double sp = 0.0, spp = 0.0, sy = 0.0, spy = 0.0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double p = std::exp(b * x[i]);
    sp += p;
    spp += p * p;
    sy += y[i];
    spy += p * y[i];
  }
  const double det = n * spp - sp * sp;
  if (!(det > std::numeric_limits<double>::epsilon() * n * spp)) return std::nullopt;
  const double a = (n * spy - sp * sy) / det;
  const double c = (spp * sy - sp * spy) / det;
  if (!std::isfinite(a) || !std::isfinite(c)) return std::nullopt;
  return ExponentialFit{a, b, c, sum_squared_error(x, y, a, b, c)};
}

// Residuals a·exp(b·x) + c − y for Eigen's MINPACK port (NumericalDiff gives lmdif's
// forward-difference Jacobian with step sqrt(eps)·|p|).
struct ExponentialResiduals {
  using Scalar = double;
  enum { InputsAtCompileTime = Eigen::Dynamic, ValuesAtCompileTime = Eigen::Dynamic };
  using InputType = Eigen::VectorXd;
  using ValueType = Eigen::VectorXd;
  using JacobianType = Eigen::MatrixXd;

  const std::vector<double>* x = nullptr;
  const std::vector<double>* y = nullptr;
  int inputs() const { return 3; }
  int values() const { return static_cast<int>(x->size()); }
  int operator()(const Eigen::VectorXd& p, Eigen::VectorXd& f) const {
    for (std::size_t i = 0; i < x->size(); ++i) {
      f[static_cast<Eigen::Index>(i)] = p[0] * std::exp(p[1] * (*x)[i]) + p[2] - (*y)[i];
    }
    return 0;
  }
};

// One curve_fit(method='lm', maxfev=50000) run; nullopt where curve_fit raises or its covariance
// has an infinite entry (lowtime skips those starts).
std::optional<ExponentialFit> levenberg_marquardt(const std::vector<double>& x,
                                                  const std::vector<double>& y, double a0,
                                                  double b0, double c0) {
  ExponentialResiduals residuals{&x, &y};
  Eigen::NumericalDiff<ExponentialResiduals> functor(residuals);
  Eigen::LevenbergMarquardt<Eigen::NumericalDiff<ExponentialResiduals>> lm(functor);
  // scipy.optimize.leastsq defaults (= MINPACK's recommended values), maxfev from lowtime.
  lm.parameters.ftol = 1.49012e-08;
  lm.parameters.xtol = 1.49012e-08;
  lm.parameters.gtol = 0.0;
  lm.parameters.factor = 100.0;
  lm.parameters.maxfev = 50000;
  Eigen::VectorXd p(3);
  p << a0, b0, c0;
  using Status = Eigen::LevenbergMarquardtSpace::Status;
  auto status = lm.minimizeInit(p);
  if (status == Status::ImproperInputParameters) return std::nullopt;
  // Once a·exp(b·x) underflows to exactly 0 at every x, the Jacobian's a and b columns are
  // exactly 0 and no later step can move a or b: the run would end with a singular covariance
  // (skipped) after up to 50 000 evaluations, so stop now with the same outcome.
  auto stuck = [&] {
    return std::all_of(x.begin(), x.end(), [&](double xi) { return std::exp(p[1] * xi) == 0.0; });
  };
  do {
    status = lm.minimizeOneStep(p);
    if (status == Status::Running && stuck()) return std::nullopt;
  } while (status == Status::Running);
  if (status != Status::RelativeReductionTooSmall && status != Status::RelativeErrorTooSmall &&
      status != Status::RelativeErrorAndReductionTooSmall && status != Status::CosinusTooSmall) {
    return std::nullopt;  // curve_fit raises "Optimal parameters not found"
  }
  if (!p.allFinite()) return std::nullopt;
  const std::size_t m = x.size();
  if (m <= 3) return std::nullopt;  // curve_fit fills the covariance with inf
  // Covariance as leastsq computes it: inv(RᵀR) from the last QR of the Jacobian; numpy's inv
  // fails only on an exactly singular matrix.
  const Eigen::MatrixXd r = lm.fjac.topRows(3).triangularView<Eigen::Upper>();
  const Eigen::MatrixXd rtr = r.transpose() * r;
  Eigen::FullPivLU<Eigen::MatrixXd> lu(rtr);
  lu.setThreshold(0.0);
  if (!lu.isInvertible()) return std::nullopt;
  const double sse = sum_squared_error(x, y, p[0], p[1], p[2]);
  const Eigen::MatrixXd covariance = lu.inverse() * (sse / static_cast<double>(m - 3));
  constexpr double kInf = std::numeric_limits<double>::infinity();
  if ((covariance.array() == kInf).any()) return std::nullopt;
  if (!std::isfinite(sse)) return std::nullopt;
  return ExponentialFit{p[0], p[1], p[2], sse};
}

}  // namespace

std::string_view fit_method_name(FitMethod method) {
  return method == FitMethod::kReference ? "reference" : "global";
}

std::optional<FitMethod> parse_fit_method(std::string_view name) {
  if (name == "reference") return FitMethod::kReference;
  if (name == "global") return FitMethod::kGlobal;
  return std::nullopt;
}

std::string_view quantization_name(Quantization rule) {
  return rule == Quantization::kFloor ? "floor" : "ceil";
}

std::string_view fit_fallback_name(FitFallback fallback) {
  switch (fallback) {
    case FitFallback::kNone:
      return "none";
    case FitFallback::kNoiseTolerantFilter:
      return "noise-tolerant-filter";
    case FitFallback::kConvexHull:
      return "convex-hull";
  }
  return "none";
}

std::optional<ExponentialFit> fit_exponential_reference(const std::vector<double>& x,
                                                        const std::vector<double>& y,
                                                        double unit_time_s) {
  if (x.size() != y.size() || x.size() < 3) return std::nullopt;
  const double b_scale = unit_time_s / 0.001;
  std::optional<ExponentialFit> best;
  double best_mse = std::numeric_limits<double>::infinity();
  int converged = 0;
  for (double a0 : {1e1, 1e2, 1e3}) {
    for (double b0 : {0.01, 0.02, 0.03, 0.04, 0.05, 0.1}) {
      for (double c0 : {1e1, 1e2, 1e3}) {
        auto fit = levenberg_marquardt(x, y, a0, -b0 * b_scale, c0);
        if (!fit) continue;
        const double mse = fit->sse / static_cast<double>(x.size());
        if (!std::isfinite(mse)) continue;
        ++converged;
        if (mse < best_mse) {
          best_mse = mse;
          best = fit;
        }
      }
    }
  }
  if (best) best->converged_starts = converged;
  return best;
}

std::string_view cost_model_name(CostModelKind kind) {
  return kind == CostModelKind::kExponential ? "exponential" : "piecewise-linear";
}

std::optional<CostModelKind> parse_cost_model(std::string_view name) {
  if (name == "exponential" || name == "exp") return CostModelKind::kExponential;
  if (name == "piecewise-linear" || name == "pwl") return CostModelKind::kPiecewiseLinear;
  return std::nullopt;
}

std::optional<Quantization> parse_quantization(std::string_view name) {
  if (name == "floor") return Quantization::kFloor;
  if (name == "ceil") return Quantization::kCeil;
  return std::nullopt;
}

int quantize(double time_s, double unit_time_s, Quantization rule) {
  const double ratio = time_s / unit_time_s;
  const double slack = ratio * kQuantizationRelativeSlack;
  const double units =
      rule == Quantization::kFloor ? std::floor(ratio + slack) : std::ceil(ratio - slack);
  return static_cast<int>(units);
}

std::optional<int> quantize_checked(double time_s, double unit_time_s, Quantization rule) {
  const double ratio = time_s / unit_time_s;
  // Checked before the int conversion, which is undefined beyond INT_MAX.
  if (!std::isfinite(ratio) || !(ratio >= 0.0) || ratio > kMaxUnitsPerInstruction) {
    return std::nullopt;
  }
  return quantize(time_s, unit_time_s, rule);
}

std::vector<QuantizedOption> pareto_filter_measured_time(
    const std::vector<QuantizedOption>& options, double noise_factor) {
  std::vector<QuantizedOption> kept;
  for (const auto& option : options) {
    const bool dominated =
        std::any_of(options.begin(), options.end(), [&](const QuantizedOption& other) {
          return other.time_s < option.time_s && other.energy_j < option.energy_j * noise_factor;
        });
    if (!dominated) kept.push_back(option);
  }
  // One option per quantized time: the fastest measured, so that the clock a planned duration
  // maps to is never slower than the fastest clock of that duration (ties: the higher clock).
  std::map<int, QuantizedOption> best;
  for (const auto& option : kept) {
    auto it = best.find(option.units);
    if (it == best.end() || option.time_s < it->second.time_s ||
        (option.time_s == it->second.time_s && option.frequency_mhz > it->second.frequency_mhz)) {
      best[option.units] = option;
    }
  }
  std::vector<QuantizedOption> result;
  for (auto& [units, option] : best) result.push_back(option);
  return result;
}

std::optional<ExponentialFit> fit_exponential(const std::vector<double>& x,
                                              const std::vector<double>& y) {
  if (x.size() < 3 || x.size() != y.size()) return std::nullopt;
  const auto [min_it, max_it] = std::minmax_element(x.begin(), x.end());
  const double range = *max_it - *min_it;
  if (!(range > 0.0)) return std::nullopt;
  // Search the exponent as b·range on a symmetric log grid; the fit is invariant to shifting x.
  std::optional<ExponentialFit> best;
  std::vector<double> grid;
  constexpr int kGridPerSign = 160;
  constexpr double kMinScale = 1e-4, kMaxScale = 80.0;
  for (int i = 0; i < kGridPerSign; ++i) {
    const double s = kMinScale * std::pow(kMaxScale / kMinScale, i / double(kGridPerSign - 1));
    grid.push_back(-s / range);
    grid.push_back(s / range);
  }
  std::sort(grid.begin(), grid.end());
  std::size_t best_index = 0;
  for (std::size_t i = 0; i < grid.size(); ++i) {
    auto fit = solve_linear_part(x, y, grid[i]);
    if (fit && (!best || fit->sse < best->sse)) {
      best = fit;
      best_index = i;
    }
  }
  if (!best) return std::nullopt;
  // Golden-section refinement between the neighbours of the best grid point.
  double lo = grid[best_index > 0 ? best_index - 1 : 0];
  double hi = grid[std::min(best_index + 1, grid.size() - 1)];
  const double phi = (std::sqrt(5.0) - 1.0) / 2.0;
  auto sse_at = [&](double b) {
    auto fit = solve_linear_part(x, y, b);
    return fit ? fit->sse : std::numeric_limits<double>::infinity();
  };
  double m1 = hi - phi * (hi - lo), m2 = lo + phi * (hi - lo);
  double f1 = sse_at(m1), f2 = sse_at(m2);
  for (int iteration = 0; iteration < 100; ++iteration) {
    if (f1 < f2) {
      hi = m2;
      m2 = m1;
      f2 = f1;
      m1 = hi - phi * (hi - lo);
      f1 = sse_at(m1);
    } else {
      lo = m1;
      m1 = m2;
      f1 = f2;
      m2 = lo + phi * (hi - lo);
      f2 = sse_at(m2);
    }
  }
  auto refined = solve_linear_part(x, y, 0.5 * (lo + hi));
  if (refined && refined->sse <= best->sse) best = refined;
  return best;
}

std::vector<double> convex_hull_interpolation(const std::vector<double>& x,
                                              const std::vector<double>& y, int x0, int x1) {
  // Andrew's monotone chain, lower hull only.
  std::vector<std::size_t> hull;
  for (std::size_t i = 0; i < x.size(); ++i) {
    while (hull.size() >= 2) {
      const std::size_t p = hull[hull.size() - 2], q = hull.back();
      const double cross = (x[q] - x[p]) * (y[i] - y[p]) - (y[q] - y[p]) * (x[i] - x[p]);
      if (cross <= 0.0) {
        hull.pop_back();
      } else {
        break;
      }
    }
    hull.push_back(i);
  }
  std::vector<double> values;
  std::size_t segment = 0;
  for (int t = x0; t <= x1; ++t) {
    if (hull.size() == 1) {
      values.push_back(y[hull[0]]);
      continue;
    }
    while (segment + 2 < hull.size() && x[hull[segment + 1]] < t) ++segment;
    const std::size_t p = hull[segment], q = hull[segment + 1];
    const double w = (t - x[p]) / (x[q] - x[p]);
    values.push_back(y[p] + w * (y[q] - y[p]));
  }
  return values;
}

const QuantizedOption& InstructionCostModel::option_for(int planned_units) const {
  const QuantizedOption* chosen = &options_.front();
  for (const auto& option : options_) {
    if (option.units <= planned_units) chosen = &option;
  }
  return *chosen;
}

InstructionCostModel InstructionCostModel::constant(int units, double effective_energy_j) {
  InstructionCostModel model;
  model.min_units_ = model.max_units_ = units;
  model.costs_ = {effective_energy_j};
  model.options_ = {QuantizedOption{units, 0, 0.0, 0.0, effective_energy_j}};
  model.fit_.kind = CostModelKind::kPiecewiseLinear;
  model.fit_.num_points = 1;
  return model;
}

InstructionCostModel InstructionCostModel::from_costs(int min_units, std::vector<double> costs,
                                                      double unit_time_s) {
  InstructionCostModel model;
  model.min_units_ = min_units;
  model.max_units_ = min_units + static_cast<int>(costs.size()) - 1;
  for (int u = model.min_units_; u <= model.max_units_; ++u) {
    const double cost = costs[static_cast<std::size_t>(u - min_units)];
    model.options_.push_back({u, 1000 + u, u * unit_time_s, cost, cost});
  }
  model.costs_ = std::move(costs);
  model.fit_.kind = CostModelKind::kPiecewiseLinear;
  model.fit_.num_points = static_cast<int>(model.options_.size());
  return model;
}

namespace {

// An exponential fit over options (t in τ units: absolute for the reference fit, shifted by the
// fastest option for the global one), or nullopt when it fails or is not convex.
struct ConvexFit {
  ExponentialFit fit;
  int t0_units = 0;
};
std::optional<ConvexFit> convex_exponential(const std::vector<QuantizedOption>& options,
                                            double unit_time_s, FitMethod method,
                                            std::string* reason) {
  if (options.size() < 3) {
    *reason = fmt::format("{} option(s) after filtering, an exponential needs 3", options.size());
    return std::nullopt;
  }
  const int t0 = method == FitMethod::kReference ? 0 : options.front().units;
  std::vector<double> x, y;
  for (const auto& option : options) {
    x.push_back(option.units - t0);
    y.push_back(option.effective_energy_j);
  }
  auto fit = method == FitMethod::kReference ? fit_exponential_reference(x, y, unit_time_s)
                                             : fit_exponential(x, y);
  if (!fit) {
    *reason = method == FitMethod::kReference
                  ? fmt::format("no start guess converged on {} options", options.size())
                  : fmt::format("least squares failed on {} options", options.size());
    return std::nullopt;
  }
  if (!(fit->a > 0.0)) {
    *reason = fmt::format("the fit is concave (a = {:.4g})", fit->a);
    return std::nullopt;
  }
  const int span = options.back().units - options.front().units;
  for (int t = 0; t <= span; ++t) {
    const double v = fit->a * std::exp(fit->b * (options.front().units - t0 + t)) + fit->c;
    if (!std::isfinite(v)) {
      *reason = "the fitted cost is not finite";
      return std::nullopt;
    }
  }
  return ConvexFit{*fit, t0};
}

}  // namespace

core::Result<InstructionCostModel> build_cost_model(const profile::InstructionProfile& profile,
                                                    double unit_time_s, double p_blocking_w,
                                                    CostModelKind kind, Quantization quantization,
                                                    FitMethod method) {
  const std::string what =
      fmt::format("stage {} {}", profile.stage, pipeline::instruction_name(profile.kind));
  std::vector<QuantizedOption> quantized;
  for (const profile::MeasuredOption& m : profile.options) {
    const auto units = quantize_checked(m.time_s, unit_time_s, quantization);
    if (!units) {
      return core::Error{
          fmt::format("{}: field 'time': {} at {} MHz takes {} s = {:.3g} time units of {} s, more "
                      "than the limit of "
                      "{:.0e}; increase --unit-time-s",
                      m.line, what, m.frequency_mhz, m.time_s, m.time_s / unit_time_s, unit_time_s,
                      kMaxUnitsPerInstruction)};
    }
    quantized.push_back({*units, m.frequency_mhz, m.time_s, m.energy_j,
                         m.energy_j - p_blocking_w * *units * unit_time_s});
  }
  // The reference solver filters on measured time (lowtime's CandidateExecutionOptions); its
  // frontiers are reproduced to 1e-9 with this and not with a filter on quantized time.
  auto filter = [&](double noise_factor) {
    return pareto_filter_measured_time(quantized, noise_factor);
  };
  std::vector<QuantizedOption> options = filter(1.0);
  bool noise_filter = false;
  if (options.size() <= 3) {
    options = filter(0.95);
    noise_filter = true;
  }

  InstructionCostModel model;
  FitReport& fit = model.fit_;
  fit.kind = kind;
  fit.method = method;
  std::optional<ConvexFit> exponential;
  if (kind == CostModelKind::kExponential && options.size() > 1) {
    std::string reason;
    exponential = convex_exponential(options, unit_time_s, method, &reason);
    if (!exponential && !noise_filter) {
      // Noisy measurements (non-monotone points) can make the fit concave; the noise-tolerant
      // filter keeps fewer, cleaner points.
      auto tolerant = filter(0.95);
      std::string second_reason;
      exponential = convex_exponential(tolerant, unit_time_s, method, &second_reason);
      if (exponential) {
        options = std::move(tolerant);
        noise_filter = true;
        fit.fallback = FitFallback::kNoiseTolerantFilter;
        fit.fallback_reason = reason;
      }
    }
    if (!exponential) {
      fit.fallback = FitFallback::kConvexHull;
      fit.fallback_reason = reason;
      fit.fell_back_to_piecewise_linear = true;
    }
  }
  model.options_ = options;
  model.min_units_ = options.front().units;
  model.max_units_ = options.back().units;
  fit.num_points = static_cast<int>(options.size());
  fit.noise_filter = noise_filter;
  if (options.size() == 1) {
    model.costs_ = {options.front().effective_energy_j};
    return model;
  }
  if (exponential) {
    fit.a = exponential->fit.a;
    fit.b = exponential->fit.b;
    fit.c = exponential->fit.c;
    fit.t0_units = exponential->t0_units;
    fit.converged_starts = exponential->fit.converged_starts;
    for (int t = model.min_units_; t <= model.max_units_; ++t) {
      model.costs_.push_back(fit.a * std::exp(fit.b * (t - fit.t0_units)) + fit.c);
    }
  } else {
    std::vector<double> x, y;
    for (const auto& option : options) {
      x.push_back(option.units - model.min_units_);
      y.push_back(option.effective_energy_j);
    }
    fit.t0_units = model.min_units_;
    model.costs_ = convex_hull_interpolation(x, y, 0, model.max_units_ - model.min_units_);
  }
  double sse = 0.0;
  for (const auto& option : options) {
    const double residual = model.cost(option.units) - option.effective_energy_j;
    sse += residual * residual;
    if (option.energy_j > 0.0) {
      fit.max_relative_error =
          std::max(fit.max_relative_error, std::abs(residual) / option.energy_j);
    }
  }
  fit.rms_error_j = std::sqrt(sse / options.size());
  return model;
}

}  // namespace powertrain::frontier
