// `powertrain kareus`: Kareus (joint clock, communication-SM and launch-timing search over
// partitioned overlap) against Megatron-LM, Megatron+Perseus, Nanobatching and
// Nanobatching+Perseus, all modelled (docs/kareus.md).
#include <fmt/core.h>

#include <optional>

#include "cli/commands.h"
#include "cli/flags.h"
#include "cli/model_job_options.h"
#include "core/atomic_output.h"
#include "kareus/job_run.h"
#include "kareus/paper_tables.h"
#include "kareus/table3_run.h"
#include "report/kareus_report.h"

namespace powertrain::cli {
namespace {

constexpr const char* kCommand = "kareus";

struct KareusFlags {
  kareus::JobRunSettings settings;
  std::string out;
  bool force = false;
  bool table3 = false;
  bool table7 = true;
  long long plan_points = 16;  // frontier points with plan files (0: all)
};

int run_kareus(const KareusFlags& flags) {
  if (!flags.out.empty()) {
    if (auto checked = core::check_output_directory(flags.out, output_policy(flags.force));
        !checked)
      return fail(kCommand, checked.error().message);
  }
  const kareus::JobRunSettings& settings = flags.settings;
  const bool modelled = settings.profiler == "model";
  const kareus::JobRunHooks hooks{.job_built =
                                      [&](const profile::ModelJob& job) {
                                        report::print_kareus_job(stdout, job,
                                                                 settings.request.microbatches);
                                      },
                                  .profiler_ready =
                                      [&](const kareus::Profiler& profiler) {
                                        report::print_kareus_profiler(stdout, profiler, modelled);
                                      }};
  auto run = kareus::run_job(settings, hooks);
  if (!run) return fail(kCommand, run.error().message);
  const device::GpuSpec& gpu = run->job.gpu;
  report::print_kareus_systems(stdout, run->result, gpu.dvfs.static_power_w, settings.search,
                               modelled);

  if (flags.out.empty()) return 0;
  auto output = core::AtomicOutputDirectory::create(flags.out, output_policy(flags.force));
  if (!output) return fail(kCommand, output.error().message);
  auto files = report::kareus_job_files(run->result, run->job.description, gpu, run->options.params,
                                        static_cast<std::size_t>(flags.plan_points));
  if (!files) return fail(kCommand, files.error().message);
  for (const auto& [name, contents] : *files) {
    if (auto written = output->write_file(name, contents); !written)
      return fail(kCommand, written.error().message);
  }
  if (auto committed = output->commit(); !committed)
    return fail(kCommand, committed.error().message);
  report::print_kareus_job_written(stdout, flags.out, files->size());
  return 0;
}

// --table3: the 12 Table 3 workloads × 5 systems (and Llama 3.3 70B for Tables 7–8), with the
// paper's values side by side.
int run_table3(const KareusFlags& flags) {
  std::optional<core::AtomicOutputDirectory> output;
  if (!flags.out.empty()) {
    auto created = core::AtomicOutputDirectory::create(flags.out, output_policy(flags.force));
    if (!created) return fail(kCommand, created.error().message);
    output.emplace(std::move(*created));
  }
  report::KareusTable3Files table3_files;
  report::print_kareus_table3_header(stdout, flags.settings.search);
  auto run = kareus::run_table3(
      kareus::systems_options(flags.settings.search, flags.settings.seed), flags.table7,
      [&](const kareus::Table3Outcome& o, const profile::ModelJob& job) -> core::Status {
        auto svg = table3_files.add(o, job);
        if (output) {
          if (auto written = output->write_file(svg.first, svg.second); !written)
            return written.error();
        }
        report::print_kareus_table3_memory(stdout, o);
        return core::Ok{};
      });
  if (!run) return fail(kCommand, run.error().message);
  report::print_kareus_table3_searches(stdout, *run);
  const std::string md = kareus::paper_tables_markdown(run->outcomes, run->table7);
  fmt::print("{}", md);
  if (!output) return 0;
  for (const auto& [name, contents] : {std::pair<std::string, std::string>{"tables.md", md},
                                       {"frontiers.csv", table3_files.csv}}) {
    if (auto written = output->write_file(name, contents); !written)
      return fail(kCommand, written.error().message);
  }
  if (auto committed = output->commit(); !committed)
    return fail(kCommand, committed.error().message);
  report::print_kareus_table3_written(stdout, flags.out);
  return 0;
}

}  // namespace

Action add_kareus_command(CLI::App& app) {
  auto flags = std::make_shared<KareusFlags>();
  add_model_job_options(app, flags->settings.request);
  add_option_with_aliases(app, "--microbatches", {}, flags->settings.request.microbatches,
                          "Microbatches per pipeline per iteration (8)", integer_in(1, 4096));
  app.add_option("--out", flags->out,
                 "Output directory (frontier.svg, frontier.csv, schedules.json, Zeus plan files)");
  app.add_option("--search", flags->settings.search,
                 "Per-partition search: mbo (default) or exhaustive")
      ->check(CLI::IsMember({"mbo", "exhaustive"}));
  add_option_with_aliases(app, "--seed", {}, flags->settings.seed, "MBO seed (1)",
                          integer_in(0, 1LL << 40));
  add_option_with_aliases(app, "--cp", {}, flags->settings.request.cp,
                          "Context-parallel degree: K/V all-gather over cp ranks (1)",
                          integer_in(1, 64));
  app.add_flag("--table3", flags->table3,
               "Run the paper's Table 3 workloads x 5 systems (and Llama 3.3 70B for Tables 7-8) "
               "and print Tables 1, 4, 5, 7, 8 next to the paper's values; job flags are ignored");
  app.add_flag("!--no-table7", flags->table7,
               "With --table3: skip the Llama 3.3 70B runs of Tables 7-8");
  app.add_option("--profiler", flags->settings.profiler,
                 "Partition measurements: model (default) or gpu (GPU 0 via libcuda and NVML, "
                 "5 s window and 5 s cooldown per candidate; docs/kareus.md)")
      ->check(CLI::IsMember({"model", "gpu"}));
  add_option_with_aliases(app, "--plan-points", {}, flags->plan_points,
                          "With --out: frontier points of Kareus and M+P that get Zeus plan files "
                          "and schedules.json entries, spread evenly, always the slowest and the "
                          "fastest (16; 0: every point)",
                          integer_in(0, 1LL << 30));
  add_force_flag(app, flags->force);
  return [flags]() {
    if (flags->table3 && flags->settings.profiler != "model")
      return usage_error(kCommand, "--table3 runs on the model profiler only (drop --profiler)");
    return flags->table3 ? run_table3(*flags) : run_kareus(*flags);
  };
}

}  // namespace powertrain::cli
