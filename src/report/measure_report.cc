#include "report/measure_report.h"

#include <fmt/core.h>

#include <nlohmann/json.hpp>

namespace powertrain::report {
namespace {

std::string temperature_text(double c) { return c < 0.0 ? "unknown" : fmt::format("{:.0f} C", c); }

}  // namespace

void print_measure_header(std::FILE* to, const nvml::MeasureOptions& options,
                          const std::string& library, const char* energy_source) {
  std::string command_text;
  for (const auto& a : options.command) command_text += (command_text.empty() ? "" : " ") + a;
  fmt::print(
      to,
      "powertrain measure: {} | warm-up {} s, window {} s, cooldown {} s{}, {} run(s); NVML {} "
      "device {} ({}){}\n",
      command_text, options.warmup_s, options.window_s, options.cooldown_s,
      options.cooldown_to_c > 0.0 ? fmt::format(" and until <= {} C (at most {} s)",
                                                options.cooldown_to_c, options.cooldown_max_s)
                                  : "",
      options.repeats, library, options.device, energy_source,
      options.clock_mhz > 0 ? fmt::format(", clock locked at {} MHz", options.clock_mhz) : "");
}

void print_measure_run(std::FILE* to, std::FILE* warn, const nvml::MeasureOptions& options,
                       int index, const nvml::MeasuredRun& run) {
  if (!run.cooled_to_target) {
    fmt::print(warn,
               "warning: run {}: still above {} C after {:.1f} s of cooldown; measured anyway\n",
               index, options.cooldown_to_c, run.cooldown_s);
  }
  fmt::print(to,
             "  run {}: cooled {:.2f} s to {}; measured {:.3f} s, {:.3f} J, {:.1f} W average; "
             "temperature {} -> {} (measured)\n",
             index, run.cooldown_s, temperature_text(run.start_temperature_c), run.window_s,
             run.energy_j, run.energy_j / run.window_s, temperature_text(run.start_temperature_c),
             temperature_text(run.end_temperature_c));
}

void print_measure_mean(std::FILE* to, const nvml::MeasureOptions& options,
                        const nvml::MeasureSummary& summary) {
  fmt::print(
      to,
      "  mean over {} run(s): {:.3f} J per {} s window (stddev {:.3f} J), {:.1f} W (measured)\n",
      summary.runs.size(), summary.mean_energy_j, options.window_s, summary.stddev_energy_j,
      summary.mean_power_w);
}

std::string measurements_csv(const nvml::MeasureSummary& summary) {
  std::string csv =
      "run,cooldown_s,window_s,energy_j,average_power_w,start_temperature_c,end_temperature_c\n";
  for (std::size_t i = 0; i < summary.runs.size(); ++i) {
    const auto& r = summary.runs[i];
    csv += fmt::format("{},{},{},{},{},{},{}\n", i + 1, r.cooldown_s, r.window_s, r.energy_j,
                       r.energy_j / r.window_s, r.start_temperature_c, r.end_temperature_c);
  }
  return csv;
}

std::string measure_summary_json(const nvml::MeasureOptions& options, const std::string& library,
                                 const char* energy_source, const nvml::MeasureSummary& summary) {
  nlohmann::json doc = {{"units", "seconds, joules, watts, degrees Celsius; measured by NVML"},
                        {"command", options.command},
                        {"nvml_library", library},
                        {"energy_source", energy_source},
                        {"warmup_s", options.warmup_s},
                        {"window_s", options.window_s},
                        {"cooldown_s", options.cooldown_s},
                        {"cooldown_to_c", options.cooldown_to_c},
                        {"clock_mhz", options.clock_mhz},
                        {"mean_energy_j", summary.mean_energy_j},
                        {"stddev_energy_j", summary.stddev_energy_j},
                        {"mean_power_w", summary.mean_power_w}};
  return doc.dump(2) + "\n";
}

}  // namespace powertrain::report
