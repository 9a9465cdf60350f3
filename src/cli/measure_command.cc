// `powertrain measure`: thermally stable time and energy of a command (Kareus §5.3), measured by
// nvml/measure.h and printed by report/measure_report.h.
#include <fmt/core.h>

#include <optional>

#include "cli/commands.h"
#include "cli/flags.h"
#include "core/atomic_output.h"
#include "nvml/measure.h"
#include "nvml/nvml.h"
#include "report/measure_report.h"

namespace powertrain::cli {
namespace {

struct MeasureFlags {
  nvml::MeasureOptions options;
  std::string nvml_library;
  std::string out;
  bool force = false;
};

int run_measure(const MeasureFlags& flags) {
  const char* kCommand = "measure";
  const nvml::MeasureOptions& options = flags.options;
  if (options.command.empty())
    return usage_error(kCommand, "give the command to measure after --, e.g. -- python train.py");
  std::optional<core::AtomicOutputDirectory> output;
  if (!flags.out.empty()) {
    auto created = core::AtomicOutputDirectory::create(flags.out, output_policy(flags.force));
    if (!created) return fail(kCommand, created.error().message);
    output.emplace(std::move(*created));
  }
  auto loaded = nvml::Nvml::load(flags.nvml_library);
  if (!loaded) return fail(kCommand, loaded.error().message);
  const nvml::Nvml& nvml = **loaded;
  auto count = nvml.device_count();
  if (!count) return fail(kCommand, count.error().message);
  if (options.device >= *count)
    return usage_error(
        kCommand, fmt::format("--device: expected 0 to {}, got {}", *count - 1, options.device));
  nvml::EnergyMeter meter(nvml, options.device);
  report::print_measure_header(stdout, options, nvml.library(), meter.source());
  auto summary = nvml::measure(options, nvml, meter, [&](int index, const nvml::MeasuredRun& run) {
    report::print_measure_run(stdout, stderr, options, index, run);
  });
  if (!summary) return fail(kCommand, summary.error().message);
  report::print_measure_mean(stdout, options, *summary);
  if (!output) return 0;
  for (const auto& [name, text] :
       {std::pair<std::string, std::string>{"measurements.csv", report::measurements_csv(*summary)},
        {"summary.json",
         report::measure_summary_json(options, nvml.library(), meter.source(), *summary)}}) {
    if (auto written = output->write_file(name, text); !written)
      return fail(kCommand, written.error().message);
  }
  if (auto committed = output->commit(); !committed)
    return fail(kCommand, committed.error().message);
  fmt::print("  files         {}/: measurements.csv summary.json\n", output->target().string());
  return 0;
}

}  // namespace

Action add_measure_command(CLI::App& app) {
  auto flags = std::make_shared<MeasureFlags>();
  nvml::MeasureOptions& o = flags->options;
  add_option_with_aliases(app, "--warmup-s", {}, o.warmup_s,
                          "Seconds the command runs before the window (default 2)",
                          number_in(0.0, 86400.0));
  add_option_with_aliases(app, "--window-s", {}, o.window_s,
                          "Measurement window, s (default 5; NVML updates about every 0.1 s)",
                          number_in(0.0, 86400.0, true));
  add_option_with_aliases(app, "--cooldown-s", {}, o.cooldown_s,
                          "Idle time before each run, s (default 5)", number_in(0.0, 86400.0));
  add_option_with_aliases(app, "--cooldown-to-c", {}, o.cooldown_to_c,
                          "Also wait until the GPU is at or below this temperature, C",
                          number_in(0.0, 200.0, true));
  add_option_with_aliases(app, "--cooldown-max-s", {}, o.cooldown_max_s,
                          "Longest cooldown with --cooldown-to-c, s (default 60)",
                          number_in(0.0, 86400.0));
  add_option_with_aliases(app, "--sample-period-s", {}, o.sample_period_s,
                          "Power/temperature polling period, s (default 0.1)",
                          number_in(0.0, 60.0, true));
  add_option_with_aliases(app, "--repeats", {}, o.repeats, "Runs (default 1)",
                          integer_in(1, 10000));
  add_option_with_aliases(app, "--device", {}, o.device, "NVML device index (default 0)",
                          integer_in(0, 1024));
  add_option_with_aliases(app, "--clock-mhz", {}, o.clock_mhz,
                          "Lock the GPU clock during each run (reset after)",
                          integer_in(1, 100000));
  app.add_option("--nvml-library", flags->nvml_library,
                 "NVML to load (default $POWERTRAIN_NVML_LIBRARY or libnvidia-ml.so.1)");
  app.add_option("--out", flags->out, "Optional output directory: measurements.csv, summary.json");
  add_force_flag(app, flags->force);
  app.add_option("command", o.command, "The command to measure (after --)");
  return [flags]() { return run_measure(*flags); };
}

}  // namespace powertrain::cli
