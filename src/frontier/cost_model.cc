// Cost models: Pareto filter, quantization and the convex fits the min-cut solver needs.
#include "frontier/cost_model.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

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

}  // namespace

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

std::vector<QuantizedOption> pareto_filter(const std::vector<QuantizedOption>& options,
                                           double noise_factor) {
  std::vector<QuantizedOption> kept;
  for (const auto& option : options) {
    const bool dominated =
        std::any_of(options.begin(), options.end(), [&](const QuantizedOption& other) {
          return other.units < option.units && other.energy_j < option.energy_j * noise_factor;
        });
    if (!dominated) kept.push_back(option);
  }
  // One option per quantized time: the lowest energy, ties to the higher clock for determinism.
  std::map<int, QuantizedOption> best;
  for (const auto& option : kept) {
    auto it = best.find(option.units);
    if (it == best.end() || option.energy_j < it->second.energy_j ||
        (option.energy_j == it->second.energy_j &&
         option.frequency_mhz > it->second.frequency_mhz)) {
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

core::Result<InstructionCostModel> build_cost_model(const InstructionProfile& profile,
                                                    double unit_time_s, double p_blocking_w,
                                                    CostModelKind kind, Quantization quantization) {
  const std::string what =
      fmt::format("stage {} {}", profile.stage, pipeline::instruction_name(profile.kind));
  std::vector<QuantizedOption> quantized;
  for (const MeasuredOption& m : profile.options) {
    const int units = quantize(m.time_s, unit_time_s, quantization);
    if (units > 100'000'000) {
      return core::Error{
          fmt::format("{} at {} MHz takes {} s = {} time units; increase --unit-time", what,
                      m.frequency_mhz, m.time_s, units)};
    }
    quantized.push_back({units, m.frequency_mhz, m.time_s, m.energy_j,
                         m.energy_j - p_blocking_w * units * unit_time_s});
  }
  std::vector<QuantizedOption> options = pareto_filter(quantized, 1.0);
  if (options.size() <= 3) options = pareto_filter(quantized, 0.95);

  InstructionCostModel model;
  model.options_ = options;
  model.min_units_ = options.front().units;
  model.max_units_ = options.back().units;
  FitReport& fit = model.fit_;
  fit.kind = kind;
  fit.num_points = static_cast<int>(options.size());
  fit.t0_units = model.min_units_;

  std::vector<double> x, y;
  for (const auto& option : options) {
    x.push_back(option.units - model.min_units_);
    y.push_back(option.effective_energy_j);
  }
  if (options.size() == 1) {
    model.costs_ = {options.front().effective_energy_j};
    return model;
  }
  bool use_hull = kind == CostModelKind::kPiecewiseLinear;
  if (!use_hull && options.size() < 3) {
    use_hull = true;
    fit.fell_back_to_piecewise_linear = true;
  }
  if (use_hull) {
    model.costs_ = convex_hull_interpolation(x, y, 0, model.max_units_ - model.min_units_);
  } else {
    auto exp_fit = fit_exponential(x, y);
    if (!exp_fit) {
      return core::Error{fmt::format(
          "{}: exponential fit failed on {} options; try --cost-model pwl", what, options.size())};
    }
    if (!(exp_fit->a > 0.0)) {
      return core::Error{
          fmt::format("{}: exponential fit is not convex (a = {:.4g}): the measured energies do "
                      "not fall with time as "
                      "expected; try --cost-model pwl",
                      what, exp_fit->a)};
    }
    fit.a = exp_fit->a;
    fit.b = exp_fit->b;
    fit.c = exp_fit->c;
    for (int t = 0; t <= model.max_units_ - model.min_units_; ++t) {
      model.costs_.push_back(fit.a * std::exp(fit.b * t) + fit.c);
    }
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
  for (double value : model.costs_) {
    if (!std::isfinite(value)) {
      return core::Error{
          fmt::format("{}: the fitted cost is not finite; try --cost-model pwl", what)};
    }
  }
  return model;
}

}  // namespace powertrain::frontier
