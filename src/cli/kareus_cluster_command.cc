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

std::string pct(std::optional<double> v) { return v ? fmt::format("{:.1f}", *v) : "—"; }
std::string deviation(std::optional<double> ours, std::optional<double> paper) {
  return ours && paper ? fmt::format("{:+.1f}", *ours - *paper) : "—";
}

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

  fmt::print(
      "powertrain kareus-cluster: {}, global batch {} samples = {} microbatches (Kareus §6.3, "
      "Table 6)\n",
      result->description, flags.options.global_batch,
      flags.options.global_batch / std::max(1, flags.options.request.microbatch_size));
  fmt::print(
      "  profiler: {}; search: {} of {} schedules of {} distinct partition types ({}, seed {})\n",
      result->profiler, result->evaluated, result->space, result->partition_types, flags.search,
      flags.seed);
  fmt::print(
      "  times and energies modelled (profiler model) per iteration; energy of all GPUs = tp × "
      "pipelines × one pipeline's realized energy\n\n");
  fmt::print("  {:>6s} {:>9s} {:>4s} | {:>9s} {:>10s} | {:>9s} {:>10s} | {:>9s} {:>10s}\n", "GPUs",
             "pipelines", "M", "Meg. t s", "Meg. E MJ", "M+P t s", "M+P E MJ", "Kar. t s",
             "Kar. E MJ");
  for (const auto& r : result->rows)
    fmt::print(
        "  {:>6d} {:>9d} {:>4d} | {:>9.3f} {:>10.3f} | {:>9.3f} {:>10.3f} | {:>9.3f} {:>10.3f}\n",
        r.config.gpus, r.shape.pipelines, r.shape.microbatches_per_pipeline, r.megatron.time_s,
        r.megatron.energy_j / 1e6, r.perseus_fastest.time_s, r.perseus_fastest.energy_j / 1e6,
        r.kareus_fastest.time_s, r.kareus_fastest.energy_j / 1e6);
  fmt::print(
      "\n  Table 7 (max throughput vs Megatron-LM, %): ours / paper / deviation (pp)\n"
      "  {:>6s} {:>4s} | {:>20s} | {:>20s} | {:>20s} | {:>20s}\n",
      "GPUs", "M", "M+P time red.", "Kareus time red.", "M+P energy red.", "Kareus energy red.");
  for (const auto& r : result->rows) {
    const auto paper = kareus::paper_large_scale_row(r.shape.microbatches_per_pipeline);
    auto cell = [&](double ours, std::optional<double> p) {
      return fmt::format("{:>6.1f} {:>6s} {:>6s}", ours, p ? fmt::format("{:.1f}", *p) : "—",
                         deviation(ours, p));
    };
    fmt::print("  {:>6d} {:>4d} | {} | {} | {} | {}\n", r.config.gpus,
               r.shape.microbatches_per_pipeline,
               cell(r.perseus_time_reduction_pct,
                    paper ? std::optional(paper->mp_time_pct) : std::nullopt),
               cell(r.kareus_time_reduction_pct,
                    paper ? std::optional(paper->kareus_time_pct) : std::nullopt),
               cell(r.perseus_energy_reduction_pct,
                    paper ? std::optional(paper->mp_energy_pct) : std::nullopt),
               cell(r.kareus_energy_reduction_pct,
                    paper ? std::optional(paper->kareus_energy_pct) : std::nullopt));
  }
  fmt::print(
      "\n  Table 8 (Kareus vs Megatron-LM + Perseus, %): ours / paper / deviation (pp)\n"
      "  {:>6s} {:>4s} | {:>22s} | {:>22s}\n",
      "GPUs", "M", "iso-time energy red.", "iso-energy time red.");
  for (const auto& r : result->rows) {
    const auto paper = kareus::paper_large_scale_row(r.shape.microbatches_per_pipeline);
    const std::optional<double> pe =
        paper ? std::optional(paper->iso_time_energy_pct) : std::nullopt;
    const std::optional<double> pt =
        paper ? std::optional(paper->iso_energy_time_pct) : std::nullopt;
    fmt::print("  {:>6d} {:>4d} | {:>8s} {:>6s} {:>6s} | {:>8s} {:>6s} {:>6s}\n", r.config.gpus,
               r.shape.microbatches_per_pipeline, pct(r.iso_time_energy_reduction_pct), pct(pe),
               deviation(r.iso_time_energy_reduction_pct, pe), pct(r.iso_energy_time_reduction_pct),
               pct(pt), deviation(r.iso_energy_time_reduction_pct, pt));
  }
  fmt::print("\n  wall time (measured): search {:.2f} s, total {:.2f} s\n", result->search_s,
             total_s);

  if (flags.out.empty()) return 0;
  auto output = core::AtomicOutputDirectory::create(flags.out, output_policy(flags.force));
  if (!output) return fail(kCommand, output.error().message);
  std::string csv = "gpus,pipelines,microbatches,method,time_s,energy_j\n";
  for (const auto& r : result->rows) {
    auto rows = [&](const char* method, const std::vector<kareus::ClusterPoint>& points) {
      for (const auto& p : points)
        csv += fmt::format("{},{},{},{},{:.9g},{:.9g}\n", r.config.gpus, r.shape.pipelines,
                           r.shape.microbatches_per_pipeline, method, p.time_s, p.energy_j);
    };
    rows("Megatron-LM", {r.megatron});
    rows("Megatron-LM + Perseus", r.perseus);
    rows("Kareus", r.kareus);
  }
  for (const auto& [name, contents] :
       {std::pair<std::string, std::string>{"large_scale.csv", csv},
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
