#include "device/calibration.h"

#include <fmt/core.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <set>
#include <unsupported/Eigen/NonLinearOptimization>
#include <unsupported/Eigen/NumericalDiff>

namespace powertrain::device {
namespace {

constexpr int kNumParameters = 9;

double logistic(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double logit(double p) { return std::log(p / (1.0 - p)); }

// Unconstrained coordinates keep every parameter in its physical range during the search.
DvfsParams decode(const Eigen::VectorXd& x, const DvfsParams& start, const GpuSpec& gpu) {
  DvfsParams p = start;
  const double attention_ratio = start.attention_efficiency / start.matmul_efficiency;
  p.matmul_efficiency = logistic(x[0]);
  p.attention_efficiency = p.matmul_efficiency * attention_ratio;
  p.link_efficiency = logistic(x[1]);
  p.static_power_w = std::exp(x[2]);
  p.dynamic_power_w = std::exp(x[3]);
  p.voltage_min = 0.3 + 0.69 * logistic(x[4]);
  p.voltage_knee_mhz =
      gpu.min_clock_mhz() + (gpu.max_clock_mhz() - gpu.min_clock_mhz()) * logistic(x[5]);
  p.collective_activity = logistic(x[6]);
  p.memory_activity = logistic(x[7]);
  p.backward_link_efficiency = logistic(x[8]);
  return p;
}

Eigen::VectorXd encode(const DvfsParams& p, const GpuSpec& gpu) {
  Eigen::VectorXd x(kNumParameters);
  auto inside = [](double v, double lo, double hi) { return std::clamp(v, lo, hi); };
  x[0] = logit(inside(p.matmul_efficiency, 0.02, 0.98));
  x[1] = logit(inside(p.link_efficiency, 0.02, 0.98));
  x[2] = std::log(std::max(1.0, p.static_power_w));
  x[3] = std::log(std::max(1.0, p.dynamic_power_w));
  x[4] = logit(inside((p.voltage_min - 0.3) / 0.69, 0.02, 0.98));
  x[5] = logit(inside(
      (p.voltage_knee_mhz - gpu.min_clock_mhz()) / (gpu.max_clock_mhz() - gpu.min_clock_mhz()),
      0.02, 0.98));
  x[6] = logit(inside(p.collective_activity, 0.02, 0.98));
  x[7] = logit(inside(p.memory_activity, 0.02, 0.98));
  x[8] = logit(inside(p.backward_link_efficiency, 0.02, 0.98));
  return x;
}

struct LogErrorFunctor {
  using Scalar = double;
  enum { InputsAtCompileTime = Eigen::Dynamic, ValuesAtCompileTime = Eigen::Dynamic };
  using InputType = Eigen::VectorXd;
  using ValueType = Eigen::VectorXd;
  using JacobianType = Eigen::MatrixXd;

  const GpuSpec* gpu;
  const DvfsParams* start;
  const std::vector<CalibrationSample>* samples;
  mutable int evaluations = 0;

  int inputs() const { return kNumParameters; }
  int values() const { return static_cast<int>(2 * samples->size()); }
  int operator()(const Eigen::VectorXd& x, Eigen::VectorXd& residual) const {
    ++evaluations;
    const DvfsParams p = decode(x, *start, *gpu);
    for (std::size_t i = 0; i < samples->size(); ++i) {
      const CalibrationSample& s = (*samples)[i];
      const WorkEstimate e = estimate_work(*gpu, p, s.work, s.clock_mhz);
      residual[static_cast<Eigen::Index>(2 * i)] = std::log(e.time_s / s.measured_time_s);
      residual[static_cast<Eigen::Index>(2 * i + 1)] = std::log(e.energy_j / s.measured_energy_j);
    }
    return 0;
  }
};

}  // namespace

CalibrationReport evaluate_calibration(const GpuSpec& gpu, const DvfsParams& params,
                                       const std::vector<CalibrationSample>& samples) {
  CalibrationReport report;
  report.params = params;
  std::vector<WorkEstimate> estimates;
  estimates.reserve(samples.size());
  for (const CalibrationSample& s : samples)
    estimates.push_back(estimate_work(gpu, params, s.work, s.clock_mhz));
  auto group_of = [&](const std::string& name) {
    auto it = std::find_if(report.groups.begin(), report.groups.end(),
                           [&](const GroupError& g) { return g.group == name; });
    if (it != report.groups.end()) return it;
    report.groups.push_back({name});
    return report.groups.end() - 1;
  };
  // Reference sample of each group for the normalized errors: its highest measured clock.
  for (std::size_t i = 0; i < samples.size(); ++i) {
    auto it = group_of(samples[i].group);
    if (samples[i].clock_mhz > it->reference_clock_mhz)
      it->reference_clock_mhz = samples[i].clock_mhz;
  }
  std::vector<int> normalized_count(report.groups.size(), 0);
  double time_sum = 0.0, energy_sum = 0.0;
  for (std::size_t i = 0; i < samples.size(); ++i) {
    const CalibrationSample& s = samples[i];
    const WorkEstimate& e = estimates[i];
    auto it = group_of(s.group);
    const double time_error = 100.0 * std::abs(e.time_s - s.measured_time_s) / s.measured_time_s;
    const double energy_error =
        100.0 * std::abs(e.energy_j - s.measured_energy_j) / s.measured_energy_j;
    ++it->samples;
    it->time_mape_percent += time_error;
    it->energy_mape_percent += energy_error;
    it->time_max_error_percent = std::max(it->time_max_error_percent, time_error);
    it->energy_max_error_percent = std::max(it->energy_max_error_percent, energy_error);
    time_sum += time_error;
    energy_sum += energy_error;
  }
  for (std::size_t g = 0; g < report.groups.size(); ++g) {
    GroupError& group = report.groups[g];
    // First sample at the reference clock (replicated rows are already dropped upstream).
    std::size_t ref = samples.size();
    for (std::size_t i = 0; i < samples.size() && ref == samples.size(); ++i)
      if (samples[i].group == group.group && samples[i].clock_mhz == group.reference_clock_mhz)
        ref = i;
    for (std::size_t i = 0; i < samples.size(); ++i) {
      if (samples[i].group != group.group || i == ref) continue;
      const double model_time = estimates[i].time_s / estimates[ref].time_s;
      const double measured_time = samples[i].measured_time_s / samples[ref].measured_time_s;
      const double model_energy = estimates[i].energy_j / estimates[ref].energy_j;
      const double measured_energy = samples[i].measured_energy_j / samples[ref].measured_energy_j;
      const double time_error = 100.0 * std::abs(model_time / measured_time - 1.0);
      const double energy_error = 100.0 * std::abs(model_energy / measured_energy - 1.0);
      ++normalized_count[g];
      group.time_normalized_mape_percent += time_error;
      group.energy_normalized_mape_percent += energy_error;
      group.time_normalized_max_error_percent =
          std::max(group.time_normalized_max_error_percent, time_error);
      group.energy_normalized_max_error_percent =
          std::max(group.energy_normalized_max_error_percent, energy_error);
    }
    group.time_mape_percent /= group.samples;
    group.energy_mape_percent /= group.samples;
    if (normalized_count[g] > 0) {
      group.time_normalized_mape_percent /= normalized_count[g];
      group.energy_normalized_mape_percent /= normalized_count[g];
    }
  }
  if (!samples.empty()) {
    report.time_mape_percent = time_sum / static_cast<double>(samples.size());
    report.energy_mape_percent = energy_sum / static_cast<double>(samples.size());
  }
  return report;
}

DvfsParams transfer_params(const GpuSpec& fitted_on, const DvfsParams& fitted,
                           const GpuSpec& target, double target_power_limit_w) {
  DvfsParams p = fitted;
  const double clock_scale =
      static_cast<double>(target.max_clock_mhz()) / fitted_on.max_clock_mhz();
  p.voltage_knee_mhz = fitted.voltage_knee_mhz * clock_scale;
  p.voltage_knee_width_mhz = fitted.voltage_knee_width_mhz * clock_scale;
  const double power_scale = target_power_limit_w / fitted.power_limit_w;
  p.static_power_w = fitted.static_power_w * power_scale;
  p.dynamic_power_w = fitted.dynamic_power_w * power_scale;
  p.power_limit_w = target_power_limit_w;
  return p;
}

core::Result<CalibrationReport> calibrate(const GpuSpec& gpu,
                                          const std::vector<CalibrationSample>& samples,
                                          const DvfsParams& start) {
  if (samples.size() < 8)
    return core::Error{
        fmt::format("calibration needs at least 8 measurements, got {}", samples.size())};
  std::set<double> clocks;
  for (const CalibrationSample& s : samples) {
    if (!(s.measured_time_s > 0.0) || !(s.measured_energy_j > 0.0))
      return core::Error{fmt::format("{} at {} MHz: measured time and energy must be positive",
                                     s.group, s.clock_mhz)};
    if (s.work.empty())
      return core::Error{fmt::format("{}: no work described for this measurement", s.group)};
    clocks.insert(s.clock_mhz);
  }
  if (clocks.size() < 2) return core::Error{"calibration needs measurements at two or more clocks"};

  LogErrorFunctor functor{&gpu, &start, &samples};
  Eigen::NumericalDiff<LogErrorFunctor> numeric(functor);
  // The voltage knee makes the problem non-convex: start from a small grid and keep the best.
  double best_cost = std::numeric_limits<double>::infinity();
  Eigen::VectorXd best;
  int evaluations = 0;
  for (double knee_fraction : {0.35, 0.55, 0.75}) {
    for (double voltage_min : {0.5, 0.75}) {
      for (double link_efficiency : {0.05, 0.2, 0.7}) {
        DvfsParams guess = start;
        guess.link_efficiency = link_efficiency;
        guess.backward_link_efficiency = link_efficiency;
        guess.voltage_knee_mhz =
            gpu.min_clock_mhz() + knee_fraction * (gpu.max_clock_mhz() - gpu.min_clock_mhz());
        guess.voltage_min = voltage_min;
        Eigen::VectorXd x = encode(guess, gpu);
        Eigen::LevenbergMarquardt<Eigen::NumericalDiff<LogErrorFunctor>> solver(numeric);
        solver.parameters.maxfev = 4000;
        solver.minimize(x);
        Eigen::VectorXd residual(functor.values());
        functor(x, residual);
        const double cost = residual.squaredNorm();
        if (std::isfinite(cost) && cost < best_cost) {
          best_cost = cost;
          best = x;
        }
      }
    }
  }
  evaluations = numeric.evaluations + functor.evaluations;
  if (best.size() == 0) return core::Error{"calibration failed: no finite fit"};
  CalibrationReport report = evaluate_calibration(gpu, decode(best, start, gpu), samples);
  report.evaluations = evaluations;
  return report;
}

}  // namespace powertrain::device
