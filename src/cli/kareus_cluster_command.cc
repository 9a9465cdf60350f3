// `powertrain kareus-cluster`: Kareus §6.3 large-scale emulation (Tables 6–8): Llama 3.3 70B,
// TP 8 × PP 10 on 1,280–10,240 GPUs, Kareus vs Megatron-LM + Perseus vs Megatron-LM, next to the
// paper's values (docs/kareus.md).
#include <fmt/core.h>

#include <chrono>
#include <memory>

#include "cli/commands.h"
#include "cli/flags.h"
#include "cli/model_job_options.h"
#include "core/atomic_output.h"
#include "kareus/large_scale.h"
#include "kareus/profiler_gpu.h"
#include "report/kareus_report.h"

namespace powertrain::cli {
namespace {

constexpr const char* kCommand = "kareus-cluster";

struct KareusClusterFlags {
  kareus::LargeScaleOptions options = kareus::paper_large_scale_options();
  std::string search = "mbo";
  long long seed = 1;
  std::string profiler = "model";
  std::string out;
  bool force = false;
};

int run_kareus_cluster(KareusClusterFlags flags) {
  const auto start = std::chrono::steady_clock::now();
  flags.options.exhaustive = flags.search == "exhaustive";
  flags.options.seed = static_cast<std::uint64_t>(flags.seed);
  if (!flags.out.empty()) {
    if (auto checked = core::check_output_directory(flags.out, output_policy(flags.force));
        !checked)
      return fail(kCommand, checked.error().message);
  }
  auto job = profile::build_model_job(flags.options.request);
  if (!job) return fail(kCommand, job.error().message);
  auto profiler = kareus::make_profiler(flags.profiler, job->gpu, kareus::ConcurrencyParams{});
  if (!profiler) return fail(kCommand, profiler.error().message);
  auto result = kareus::emulate_large_scale(flags.options, **profiler);
  if (!result) return fail(kCommand, result.error().message);
  const double total_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  report::print_large_scale(stdout, *result, flags.options, flags.search, flags.seed, total_s);

  if (flags.out.empty()) return 0;
  auto output = core::AtomicOutputDirectory::create(flags.out, output_policy(flags.force));
  if (!output) return fail(kCommand, output.error().message);
  for (const auto& [name, contents] :
       {std::pair<std::string, std::string>{"large_scale.csv", report::large_scale_csv(*result)},
        {"kareus_profile.csv", profile::profile_csv(result->kareus_profile)},
        {"megatron_profile.csv", profile::profile_csv(result->megatron_profile)}}) {
    if (auto written = output->write_file(name, contents); !written)
      return fail(kCommand, written.error().message);
  }
  if (auto committed = output->commit(); !committed)
    return fail(kCommand, committed.error().message);
  fmt::print(
      "  wrote {0}/large_scale.csv (realized frontiers, all GPUs), {0}/kareus_profile.csv and "
      "{0}/megatron_profile.csv (per-pipeline microbatch options, option codes as frequencies: "
      "input for powertrain cluster --profile)\n",
      flags.out);
  return 0;
}

}  // namespace

Action add_kareus_cluster_command(CLI::App& app) {
  auto flags = std::make_shared<KareusClusterFlags>();
  // The shared job flags' help shows their generic defaults; this command's are §6.3's.
  app.description(app.get_description() +
                  "\nDefaults here: --model llama3.3-70b --gpu a100-sxm --tp 8 --pp 10 "
                  "--microbatch-size 4 --seq-len 4096 --partition uniform");
  add_model_job_options(app, flags->options.request);
  app.add_option("--gpus", flags->options.gpus,
                 "GPU counts, comma-separated (Table 6: 10240,5120,2560,1280)")
      ->delimiter(',')
      ->check(CLI::Range(1LL, 1LL << 40));
  add_option_with_aliases(app, "--global-batch", {}, flags->options.global_batch,
                          "Samples per iteration (8192 = Table 6's 2048 microbatches of 4)",
                          integer_in(1, 1LL << 40));
  app.add_option("--search", flags->search, "Per-partition search: mbo (default) or exhaustive")
      ->check(CLI::IsMember({"mbo", "exhaustive"}));
  add_option_with_aliases(app, "--seed", {}, flags->seed, "MBO seed (1)", integer_in(0, 1LL << 40));
  app.add_option("--profiler", flags->profiler,
                 "Partition measurements: model (default) or gpu (docs/kareus.md)")
      ->check(CLI::IsMember({"model", "gpu"}));
  app.add_option("--out", flags->out,
                 "Output directory (large_scale.csv, kareus_profile.csv, megatron_profile.csv)");
  add_force_flag(app, flags->force);
  return [flags]() { return run_kareus_cluster(*flags); };
}

}  // namespace powertrain::cli
