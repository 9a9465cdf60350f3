// `powertrain calibrate`: fit a GPU's DVFS model to a measured Perseus profile of a known job.
#include <fmt/core.h>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/flags.h"
#include "cli/model_job_options.h"
#include "core/atomic_output.h"
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
  bool force = false;
};

nlohmann::json params_json(const device::DvfsParams& p) {
  nlohmann::json doc = nlohmann::json::object();
  for (const device::DvfsParamField& field : device::dvfs_param_fields())
    doc[field.name] = p.*field.member;
  return doc;
}

int run_calibrate(const CalibrateFlags& flags) {
  if (flags.profile.empty()) return usage_error(kCommand, "--profile is required");
  if (!flags.out.empty()) {
    if (auto checked = core::check_output_file(flags.out, output_policy(flags.force)); !checked)
      return fail(kCommand, checked.error().message);
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
  fmt::print("  model error   (mean absolute % error vs measured, max in brackets)\n");
  for (const device::GroupError& g : report->groups) {
    fmt::print("    {:<20s} {:3d} clocks: time {:5.2f} % ({:5.2f}), energy {:5.2f} % ({:5.2f})\n",
               g.group, g.samples, g.time_mape_percent, g.time_max_error_percent,
               g.energy_mape_percent, g.energy_max_error_percent);
  }
  fmt::print("    all: time {:.2f} %, energy {:.2f} %\n", report->time_mape_percent,
             report->energy_mape_percent);
  if (!flags.out.empty()) {
    nlohmann::json doc;
    doc["gpu"] = job->gpu.name;
    doc["profile"] = flags.profile;
    doc["job"] = job->description;
    doc["params"] = params_json(p);
    doc["errors_percent"] = nlohmann::json::array();
    for (const device::GroupError& g : report->groups) {
      doc["errors_percent"].push_back({{"group", g.group},
                                       {"samples", g.samples},
                                       {"time_mape", g.time_mape_percent},
                                       {"time_max", g.time_max_error_percent},
                                       {"energy_mape", g.energy_mape_percent},
                                       {"energy_max", g.energy_max_error_percent}});
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
  add_force_flag(app, flags->force);
  add_input_limit_flag(app);
  return [flags]() { return run_calibrate(*flags); };
}

}  // namespace powertrain::cli
