// `powertrain calibrate`: fit a GPU's DVFS model to a measured Perseus profile of a known job.
#include <fmt/core.h>

#include <nlohmann/json.hpp>
#include <optional>

#include "cli/commands.h"
#include "cli/flags.h"
#include "cli/model_job_options.h"
#include "core/atomic_output.h"
#include "core/csv.h"
#include "device/calibration.h"
#include "profile/model_profile.h"
#include "profile/profile.h"

namespace powertrain::cli {
namespace {

constexpr const char* kCommand = "calibrate";

struct CalibrateFlags {
  profile::ModelJobRequest job;
  std::string profile;
  double power_limit_w = 0.0;
  std::string out;
  std::string transfer_from;  // calibration JSON of another GPU to predict this profile with
  bool force = false;
};

nlohmann::json params_json(const device::DvfsParams& p) {
  nlohmann::json doc = nlohmann::json::object();
  for (const device::DvfsParamField& field : device::dvfs_param_fields())
    doc[field.name] = p.*field.member;
  return doc;
}

// The GPU a calibration JSON was fitted for, with its fitted parameters.
core::Result<device::GpuSpec> read_calibrated_gpu(const std::string& path) {
  auto text = core::read_text_file(path);
  if (!text) return text.error();
  const nlohmann::json doc = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object() || !doc.contains("gpu") || !doc["gpu"].is_string())
    return core::Error{path +
                       ": expected the JSON of powertrain calibrate --out with a \"gpu\" name"};
  auto gpu = device::find_gpu(doc["gpu"].get<std::string>());
  if (!gpu) return core::Error{path + ": " + gpu.error().message};
  if (auto loaded = profile::load_gpu_params(path, *gpu); !loaded) return loaded.error();
  return gpu;
}

void print_group_errors(const device::CalibrationReport& report) {
  fmt::print("    {:<20s} {:>6s}  {:>22s}  {:>22s}  {:>24s}\n", "", "", "time % MAPE (max)",
             "energy % MAPE (max)", "normalized time / energy");
  for (const device::GroupError& g : report.groups) {
    fmt::print(
        "    {:<20s} {:3d} clocks  {:8.2f} ({:6.2f})        {:8.2f} ({:6.2f})        {:5.2f} "
        "({:5.2f}) / {:5.2f} ({:5.2f})\n",
        g.group, g.samples, g.time_mape_percent, g.time_max_error_percent, g.energy_mape_percent,
        g.energy_max_error_percent, g.time_normalized_mape_percent,
        g.time_normalized_max_error_percent, g.energy_normalized_mape_percent,
        g.energy_normalized_max_error_percent);
  }
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

int run_calibrate(const CalibrateFlags& flags) {
  if (flags.profile.empty()) return usage_error(kCommand, "--profile is required");
  if (!flags.out.empty()) {
    if (auto checked = core::check_output_file(flags.out, output_policy(flags.force)); !checked)
      return fail(kCommand, checked.error().message);
  }
  device::GpuSpec transfer_source;
  if (!flags.transfer_from.empty()) {
    auto source = read_calibrated_gpu(flags.transfer_from);
    if (!source) return fail(kCommand, "--transfer-from: " + source.error().message);
    transfer_source = std::move(*source);
  }
  auto measured = profile::read_profile(flags.profile);
  if (!measured) return fail(kCommand, measured.error().message);
  auto job = profile::build_model_job(flags.job);
  if (!job) return fail(kCommand, job.error().message);
  auto samples = profile::calibration_samples(*job, *measured);
  if (!samples) return fail(kCommand, samples.error().message);
  device::DvfsParams start = job->gpu.dvfs;
  if (!(flags.power_limit_w >= 0.0) || flags.power_limit_w > 1e5)
    return usage_error(kCommand, "--power-limit-w must be a number from 0 to 1e5 W");
  if (flags.power_limit_w > 0.0) start.power_limit_w = flags.power_limit_w;
  fmt::print(stderr, "calibrate: fitting {} parameters to {} measurements ...\n", 9,
             samples->size());
  auto report = device::calibrate(job->gpu, *samples, start);
  if (!report) return fail(kCommand, flags.profile + ": " + report.error().message);

  const device::DvfsParams& p = report->params;
  fmt::print("powertrain calibrate: {} against {}\n", job->gpu.display_name, flags.profile);
  fmt::print("  job           {}\n", job->description);
  fmt::print(
      "  fitted        GEMM efficiency {:.3f} of peak; link efficiency {:.3f} forward, "
      "{:.3f} backward\n",
      p.matmul_efficiency, p.link_efficiency, p.backward_link_efficiency);
  fmt::print(
      "                static {:.1f} W, dynamic {:.1f} W at {} MHz, voltage min {:.3f} "
      "knee {:.0f} MHz; activity memory {:.2f} comm {:.2f}; power limit {:.0f} W (given)\n",
      p.static_power_w, p.dynamic_power_w, job->gpu.max_clock_mhz(), p.voltage_min,
      p.voltage_knee_mhz, p.memory_activity, p.collective_activity, p.power_limit_w);
  fmt::print(
      "  model error   in sample (%, max in brackets; normalized: model and measurement each "
      "divided by their value at the group's highest measured clock)\n");
  print_group_errors(*report);
  fmt::print("    all: time {:.2f} %, energy {:.2f} %\n", report->time_mape_percent,
             report->energy_mape_percent);
  std::optional<device::CalibrationReport> transferred;
  if (!flags.transfer_from.empty()) {
    const device::DvfsParams carried = device::transfer_params(
        transfer_source, transfer_source.dvfs, job->gpu, start.power_limit_w);
    transferred = device::evaluate_calibration(job->gpu, carried, *samples);
    fmt::print(
        "  out of sample parameters fitted on {} ({}), carried to {} (device::transfer_params), "
        "not refitted\n",
        transfer_source.name, flags.transfer_from, job->gpu.name);
    print_group_errors(*transferred);
    fmt::print("    all: time {:.2f} %, energy {:.2f} %\n", transferred->time_mape_percent,
               transferred->energy_mape_percent);
  }
  if (!flags.out.empty()) {
    nlohmann::json doc;
    doc["gpu"] = job->gpu.name;
    doc["profile"] = flags.profile;
    doc["job"] = job->description;
    doc["params"] = params_json(p);
    doc["errors_percent"] = group_errors_json(*report);
    if (transferred) {
      doc["transfer"] = {{"from_gpu", transfer_source.name},
                         {"from_file", flags.transfer_from},
                         {"params", params_json(transferred->params)},
                         {"errors_percent", group_errors_json(*transferred)}};
    }
    if (auto written =
            core::write_file_atomically(flags.out, doc.dump(2) + "\n", output_policy(flags.force));
        !written)
      return fail(kCommand, written.error().message);
    fmt::print("  wrote         {}\n", flags.out);
  }
  return 0;
}

}  // namespace

Action add_calibrate_command(CLI::App& app) {
  auto flags = std::make_shared<CalibrateFlags>();
  flags->job.partition = "uniform";
  app.add_option("--profile", flags->profile, "Measured Perseus profile CSV to fit")->required();
  add_model_job_options(app, flags->job);
  add_option_with_aliases(app, "--power-limit-w", {"--power-limit"}, flags->power_limit_w,
                          "Board power limit of the measured system, W (default: the GPU's TDP)",
                          number_in(0.0, 1e5, true));
  app.add_option("--out", flags->out, "Write fitted parameters and errors as JSON");
  app.add_option("--transfer-from", flags->transfer_from,
                 "Leave-one-GPU-out: also predict this profile with the parameters of another "
                 "GPU's calibrate --out JSON, carried over by device::transfer_params");
  add_force_flag(app, flags->force);
  add_input_limit_flag(app);
  return [flags]() { return run_calibrate(*flags); };
}

}  // namespace powertrain::cli
