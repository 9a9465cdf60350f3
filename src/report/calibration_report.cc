// What `powertrain calibrate` prints and writes.
#include "report/calibration_report.h"

#include <fmt/core.h>

#include <nlohmann/json.hpp>

namespace powertrain::report {
namespace {

nlohmann::json params_json(const device::DvfsParams& p) {
  nlohmann::json doc = nlohmann::json::object();
  for (const device::DvfsParamField& field : device::dvfs_param_fields())
    doc[field.name] = p.*field.member;
  return doc;
}

// The errors per group, then over all samples.
void print_errors(std::FILE* to, const device::CalibrationReport& report) {
  fmt::print(to, "    {:<20s} {:>6s}  {:>22s}  {:>22s}  {:>24s}\n", "", "", "time % MAPE (max)",
             "energy % MAPE (max)", "normalized time / energy");
  for (const device::GroupError& g : report.groups) {
    fmt::print(
        to,
        "    {:<20s} {:3d} clocks  {:8.2f} ({:6.2f})        {:8.2f} ({:6.2f})        {:5.2f} "
        "({:5.2f}) / {:5.2f} ({:5.2f})\n",
        g.group, g.samples, g.time_mape_percent, g.time_max_error_percent, g.energy_mape_percent,
        g.energy_max_error_percent, g.time_normalized_mape_percent,
        g.time_normalized_max_error_percent, g.energy_normalized_mape_percent,
        g.energy_normalized_max_error_percent);
  }
  fmt::print(to, "    all: time {:.2f} %, energy {:.2f} %\n", report.time_mape_percent,
             report.energy_mape_percent);
}

nlohmann::json group_errors_json(const device::CalibrationReport& report) {
  nlohmann::json groups = nlohmann::json::array();
  for (const device::GroupError& g : report.groups) {
    groups.push_back({{"group", g.group},
                      {"samples", g.samples},
                      {"time_mape", g.time_mape_percent},
                      {"time_max", g.time_max_error_percent},
                      {"energy_mape", g.energy_mape_percent},
                      {"energy_max", g.energy_max_error_percent},
                      {"reference_clock_mhz", g.reference_clock_mhz},
                      {"time_normalized_mape", g.time_normalized_mape_percent},
                      {"time_normalized_max", g.time_normalized_max_error_percent},
                      {"energy_normalized_mape", g.energy_normalized_mape_percent},
                      {"energy_normalized_max", g.energy_normalized_max_error_percent}});
  }
  return groups;
}

}  // namespace

void print_calibration(std::FILE* to, const device::GpuSpec& gpu, const std::string& profile,
                       const std::string& job, const device::CalibrationReport& fit,
                       const CalibrationTransfer* transfer) {
  const device::DvfsParams& p = fit.params;
  fmt::print(to, "powertrain calibrate: {} against {}\n", gpu.display_name, profile);
  fmt::print(to, "  job           {}\n", job);
  fmt::print(to,
             "  fitted        GEMM efficiency {:.3f} of peak; link efficiency {:.3f} forward, "
             "{:.3f} backward\n",
             p.matmul_efficiency, p.link_efficiency, p.backward_link_efficiency);
  fmt::print(to,
             "                static {:.1f} W, dynamic {:.1f} W at {} MHz, voltage min {:.3f} "
             "knee {:.0f} MHz; activity memory {:.2f} comm {:.2f}; power limit {:.0f} W (given)\n",
             p.static_power_w, p.dynamic_power_w, gpu.max_clock_mhz(), p.voltage_min,
             p.voltage_knee_mhz, p.memory_activity, p.collective_activity, p.power_limit_w);
  fmt::print(to,
             "  model error   in sample (%, max in brackets; normalized: model and measurement "
             "each divided by their value at the group's highest measured clock)\n");
  print_errors(to, fit);
  if (transfer == nullptr) return;
  fmt::print(to,
             "  out of sample parameters fitted on {} ({}), carried to {} "
             "(device::transfer_params), not refitted\n",
             transfer->from_gpu, transfer->from_file, gpu.name);
  print_errors(to, transfer->report);
}

std::string calibration_json(const device::GpuSpec& gpu, const std::string& profile,
                             const std::string& job, const device::CalibrationReport& fit,
                             const CalibrationTransfer* transfer) {
  nlohmann::json doc;
  doc["gpu"] = gpu.name;
  doc["profile"] = profile;
  doc["job"] = job;
  doc["params"] = params_json(fit.params);
  doc["errors_percent"] = group_errors_json(fit);
  if (transfer != nullptr) {
    doc["transfer"] = {{"from_gpu", transfer->from_gpu},
                       {"from_file", transfer->from_file},
                       {"params", params_json(transfer->report.params)},
                       {"errors_percent", group_errors_json(transfer->report)}};
  }
  return doc.dump(2) + "\n";
}

}  // namespace powertrain::report
