// `powertrain profile`: write the Perseus profile CSV a built-in model predicts on a GPU.
#include <fmt/core.h>

#include "cli/commands.h"
#include "cli/flags.h"
#include "cli/model_job_options.h"
#include "core/atomic_output.h"
#include "profile/model_profile.h"
#include "workload/memory.h"

namespace powertrain::cli {
namespace {

constexpr const char* kCommand = "profile";

struct ProfileFlags {
  profile::ModelJobRequest job;
  std::string out;
  bool force = false;
};

int run_profile(const ProfileFlags& flags) {
  auto job = profile::build_model_job(flags.job);
  if (!job) return fail(kCommand, job.error().message);
  const profile::Profile profile = profile::generate_profile(*job);
  const std::string csv = profile::profile_csv(profile);
  if (flags.out.empty()) {
    fmt::print("{}", csv);
  } else if (auto written = core::write_file_atomically(flags.out, csv, output_policy(flags.force));
             !written) {
    return fail(kCommand, written.error().message);
  }
  // The summary goes to stderr when the CSV goes to stdout.
  std::FILE* info = flags.out.empty() ? stderr : stdout;
  fmt::print(info, "powertrain profile: {}\n", job->description);
  fmt::print(info, "  gpu           {} ({})\n", job->gpu.display_name, job->gpu.calibration);
  fmt::print(info, "  partition     {} (imbalance {:.3f}, modelled)\n",
             workload::to_string(job->partition), job->imbalance_ratio);
  auto memory = workload::estimate_memory(job->model, job->parallel, job->partition,
                                          job->gpu.memory_gib * 1024.0 * 1024.0 * 1024.0);
  if (memory) fmt::print(info, "  memory        {} (modelled)\n", memory->verdict);
  fmt::print(info,
             "  rows          {} stages x {} instructions x {} clocks ({}-{} MHz), modelled "
             "time (s) and energy (J) per instruction\n",
             job->stages.size(),
             profile.entries.size() / std::max<std::size_t>(1, job->stages.size()),
             job->gpu.clocks_mhz.size(), job->gpu.min_clock_mhz(), job->gpu.max_clock_mhz());
  if (!flags.out.empty()) fmt::print(info, "  wrote         {}\n", flags.out);
  return 0;
}

}  // namespace

Action add_profile_command(CLI::App& app) {
  auto flags = std::make_shared<ProfileFlags>();
  add_model_job_options(app, flags->job);
  add_option_with_aliases(app, "--microbatches", {}, flags->job.microbatches,
                          "Microbatches per iteration (memory model: in-flight activations; "
                          "default 8)",
                          integer_in(1, 1'000'000));
  app.add_option("--out", flags->out, "Output CSV path (default: standard output)");
  add_force_flag(app, flags->force);
  return [flags]() { return run_profile(*flags); };
}

}  // namespace powertrain::cli
