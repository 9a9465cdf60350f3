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
#include "report/calibration_report.h"

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

  std::optional<report::CalibrationTransfer> transfer;
  if (!flags.transfer_from.empty()) {
    const device::DvfsParams carried = device::transfer_params(
        transfer_source, transfer_source.dvfs, job->gpu, start.power_limit_w);
    transfer =
        report::CalibrationTransfer{transfer_source.name, flags.transfer_from,
                                    device::evaluate_calibration(job->gpu, carried, *samples)};
  }
  const report::CalibrationTransfer* carried = transfer ? &*transfer : nullptr;
  report::print_calibration(stdout, job->gpu, flags.profile, job->description, *report, carried);
  if (!flags.out.empty()) {
    const std::string doc =
        report::calibration_json(job->gpu, flags.profile, job->description, *report, carried);
    if (auto written = core::write_file_atomically(flags.out, doc, output_policy(flags.force));
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
