// `powertrain kareus`: Kareus (joint clock, communication-SM and launch-timing search over
// partitioned overlap) against Megatron-LM, Megatron+Perseus, Nanobatching and
// Nanobatching+Perseus, all modelled (docs/kareus.md).
#include <fmt/core.h>

#include <memory>
#include <optional>

#include "cli/commands.h"
#include "cli/flags.h"
#include "cli/model_job_options.h"
#include "core/atomic_output.h"
#include "kareus/paper_tables.h"
#include "kareus/profiler_gpu.h"
#include "kareus/surrogate.h"
#include "kareus/systems.h"
#include "kareus/table3_run.h"
#include "profile/model_profile.h"
#include "report/kareus_report.h"

namespace powertrain::cli {
namespace {

constexpr const char* kCommand = "kareus";

struct KareusFlags {
  profile::ModelJobRequest request;
  std::string out;
  bool force = false;
  std::string search = "mbo";
  long long seed = 1;
  bool table3 = false;
  bool table7 = true;
  std::string profiler = "model";
  long long plan_points = 16;  // frontier points with plan files (0: all)
};

kareus::SystemsOptions systems_options(const KareusFlags& flags) {
  kareus::SystemsOptions o;
  o.exhaustive = flags.search == "exhaustive";
  o.seed = static_cast<std::uint64_t>(flags.seed);
  return o;
}

int run_kareus(const KareusFlags& flags) {
  if (!flags.out.empty()) {
    if (auto checked = core::check_output_directory(flags.out, output_policy(flags.force));
        !checked)
      return fail(kCommand, checked.error().message);
  }
  auto job = profile::build_model_job(flags.request);
  if (!job) return fail(kCommand, job.error().message);
  if (flags.request.tp < 2 && flags.request.cp < 2)
    return fail(kCommand,
                "--tp or --cp must be at least 2: partitions pair collectives with compute");
  const device::GpuSpec& gpu = job->gpu;
  fmt::print("powertrain kareus: {} ({} microbatches, surrogate: {})\n", job->description,
             flags.request.microbatches, kareus::surrogate_name());
  kareus::SystemsOptions options = systems_options(flags);
  auto profiler = kareus::make_profiler(flags.profiler, gpu, options.params);
  if (!profiler) return fail(kCommand, profiler.error().message);
  if (flags.profiler != "model") options.profiler = profiler->get();
  fmt::print("  profiler: {}{}\n", (*profiler)->name(),
             flags.profiler == "model"
                 ? ""
                 : " (partition candidates measured; solo kernels, sequential microbatches and "
                   "the composition modelled)");
  auto r = kareus::run_systems(*job, flags.request.microbatches, options, nullptr);
  if (!r) return fail(kCommand, r.error().message);
  report::print_kareus_systems(stdout, *r, gpu.dvfs.static_power_w, flags.search,
                               flags.profiler == "model");

  if (flags.out.empty()) return 0;
  auto output = core::AtomicOutputDirectory::create(flags.out, output_policy(flags.force));
  if (!output) return fail(kCommand, output.error().message);
  auto files = report::kareus_job_files(*r, job->description, gpu, options.params,
                                        static_cast<std::size_t>(flags.plan_points));
  if (!files) return fail(kCommand, files.error().message);
  for (const auto& [name, contents] : *files) {
    if (auto written = output->write_file(name, contents); !written)
      return fail(kCommand, written.error().message);
  }
  if (auto committed = output->commit(); !committed)
    return fail(kCommand, committed.error().message);
  fmt::print(
      "\n  wrote {}/frontier.svg, frontier.csv, schedules.json and {} Zeus plan files "
      "(kareus_freqs_pipeline_*.py, megatron_perseus_freqs_pipeline_*.py)\n",
      flags.out, files->size() - 3);
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
  std::string csv = "workload,method,time_s,energy_j,static_j,dynamic_j\n";
  fmt::print(
      "powertrain kareus --table3: 12 workloads of Kareus Table 3 × 5 systems (modelled; A100 "
      "SXM4 {:.0f} GB as on the paper's p4d.24xlarge testbed; search {}, surrogate {})\n",
      kareus::kTable3GpuMemoryGib, flags.search, kareus::surrogate_name());
  auto run = kareus::run_table3(
      systems_options(flags), flags.table7,
      [&](const kareus::Table3Outcome& o, const profile::ModelJob& job) -> core::Status {
        const std::string label = o.workload.label();
        csv += report::kareus_frontier_rows(*o.result, job.gpu.dvfs.static_power_w, label + ",");
        if (output) {
          std::string name = label;
          for (char& c : name)
            if (c == ' ' || c == '+') c = '_';
          auto written = output->write_file(
              "frontier_" + name + ".svg", report::kareus_frontier_svg(*o.result, job.description));
          if (!written) return written.error();
        }
        fmt::print("  {:<28s} memory (modelled): {}\n", label, o.memory_verdict);
        return core::Ok{};
      });
  if (!run) return fail(kCommand, run.error().message);
  fmt::print("  partition-type searches: {} run, {} reused from identical types\n\n",
             run->searches_run, run->searches_reused);
  const std::string md = kareus::paper_tables_markdown(run->outcomes, run->table7);
  fmt::print("{}", md);
  if (!output) return 0;
  for (const auto& [name, contents] :
       {std::pair<std::string, std::string>{"tables.md", md}, {"frontiers.csv", csv}}) {
    if (auto written = output->write_file(name, contents); !written)
      return fail(kCommand, written.error().message);
  }
  if (auto committed = output->commit(); !committed)
    return fail(kCommand, committed.error().message);
  fmt::print("  wrote {}/tables.md, frontiers.csv and frontier_*.svg\n", flags.out);
  return 0;
}

}  // namespace

Action add_kareus_command(CLI::App& app) {
  auto flags = std::make_shared<KareusFlags>();
  flags->request.model = "llama3.2-3b";
  flags->request.tp = 8;
  flags->request.pp = 2;
  flags->request.microbatch_size = 8;
  flags->request.seq_len = 4096;
  flags->request.microbatches = 8;
  add_model_job_options(app, flags->request);
  add_option_with_aliases(app, "--microbatches", {}, flags->request.microbatches,
                          "Microbatches per pipeline per iteration (8)", integer_in(1, 4096));
  app.add_option("--out", flags->out,
                 "Output directory (frontier.svg, frontier.csv, schedules.json, Zeus plan files)");
  app.add_option("--search", flags->search, "Per-partition search: mbo (default) or exhaustive")
      ->check(CLI::IsMember({"mbo", "exhaustive"}));
  add_option_with_aliases(app, "--seed", {}, flags->seed, "MBO seed (1)", integer_in(0, 1LL << 40));
  add_option_with_aliases(app, "--cp", {}, flags->request.cp,
                          "Context-parallel degree: K/V all-gather over cp ranks (1)",
                          integer_in(1, 64));
  app.add_flag("--table3", flags->table3,
               "Run the paper's Table 3 workloads x 5 systems (and Llama 3.3 70B for Tables 7-8) "
               "and print Tables 1, 4, 5, 7, 8 next to the paper's values; job flags are ignored");
  app.add_flag("!--no-table7", flags->table7,
               "With --table3: skip the Llama 3.3 70B runs of Tables 7-8");
  app.add_option("--profiler", flags->profiler,
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
    if (flags->table3 && flags->profiler != "model")
      return usage_error(kCommand, "--table3 runs on the model profiler only (drop --profiler)");
    return flags->table3 ? run_table3(*flags) : run_kareus(*flags);
  };
}

}  // namespace powertrain::cli
