// `powertrain cluster`: emulate data-parallel pipelines with a straggler (Perseus §6.3) and report
// Perseus's intrinsic and extrinsic savings next to EnvPipe's.
#include <fmt/core.h>

#include <memory>
#include <string>
#include <utility>

#include "cli/cluster_flags.h"
#include "cli/commands.h"
#include "cli/flags.h"
#include "core/atomic_output.h"
#include "report/cluster_report.h"
#include "study/cluster.h"
#include "study/cluster_run.h"

namespace powertrain::cli {
namespace {

const char* const kCommand = "cluster";

int run_cluster(const ClusterFlags& flags) {
  if (auto required = check_required_cluster_flags(flags); !required)
    return usage_error(kCommand, required.error().message);
  if (auto checked = core::check_output_directory(flags.out, output_policy(flags.force));
      !checked) {
    return fail(kCommand, checked.error().message);
  }
  auto numbers = parse_cluster_numbers(flags);
  if (!numbers) return usage_error(kCommand, numbers.error().message);
  const ClusterNumbers& n = *numbers;

  study::ClusterSettings settings;
  settings.engine = n.choices.engine;
  settings.planning.unit_time_s = n.unit_time_s;
  settings.planning.cost_model = n.choices.cost_model;
  settings.planning.quantization = n.choices.quantization;
  settings.pipeline.schedule = n.choices.schedule;
  settings.pipeline.chunks_per_gpu = static_cast<int>(n.chunks);
  settings.slowdowns = n.slowdowns;
  study::ClusterRequest request{.profile_path = flags.profile,
                                .job = std::nullopt,
                                .p_blocking_w = std::nullopt,
                                .tp = n.tp,
                                .microbatch_samples = n.microbatch,
                                .global_batch_samples = n.global_batch,
                                .stages = n.stages,
                                .gpus = n.gpus};
  if (flags.model_mode) request.job = flags.job;
  if (!flags.p_blocking_w.empty()) request.p_blocking_w = n.p_blocking_w;
  auto inputs = study::prepare_cluster(request, settings, stderr_progress(kCommand, flags.quiet));
  if (!inputs) return fail(kCommand, inputs.error().message);
  settings.planning.p_blocking_w = inputs->p_blocking_w;

  // Validate the output location before spending seconds on the solves.
  auto output = core::AtomicOutputDirectory::create(flags.out, output_policy(flags.force));
  if (!output) return fail(kCommand, output.error().message);
  if (!flags.quiet) report::print_cluster_progress(settings, stderr);
  auto emulation = study::emulate_cluster(inputs->profile, inputs->configs, settings);
  if (!emulation) return fail(kCommand, emulation.error().message);

  const std::pair<const char*, std::string> files[] = {
      {"cluster.csv", report::cluster_csv(*emulation)},
      {"summary.json", report::cluster_summary_json(*emulation)},
      {"cluster.svg", report::cluster_svg(*emulation)},
  };
  for (const auto& [name, contents] : files) {
    if (auto written = output->write_file(name, contents); !written)
      return fail(kCommand, written.error().message);
  }
  if (auto committed = output->commit(); !committed)
    return fail(kCommand, committed.error().message);
  report::print_cluster_summary(stdout, *emulation, output->target().string(),
                                inputs->stages_from_profile);
  return 0;
}

}  // namespace

Action add_cluster_command(CLI::App& app) {
  auto flags = std::make_shared<ClusterFlags>();
  app.add_option("--profile", flags->profile,
                 "Perseus profile CSV stage,instruction,frequency,time,energy (MHz, s, J per GPU)");
  add_option_with_aliases(app, "--p-blocking-w", {"--p-blocking"}, flags->p_blocking_w,
                          "Power of a GPU blocked on P2P communication, W (required with "
                          "--profile)")
      ->type_name("NUMBER");
  add_option_with_aliases(app, "--unit-time-s", {"--unit-time"}, flags->unit_time_s,
                          "Time quantum tau in seconds (default 0.001)")
      ->type_name("NUMBER");
  add_option_with_aliases(app, "--pp", {"--stages"}, flags->stages,
                          "Pipeline stages (GPUs along a pipeline); default: the profile's")
      ->type_name("INT");
  app.add_option("--tp", flags->tp, "Tensor-parallel GPUs per stage (default 1)")->type_name("INT");
  app.add_option("--gpus", flags->gpus,
                 "Total GPUs of each configuration, comma-separated, e.g. 1024,2048,4096,8192")
      ->type_name("INT,...");
  app.add_option("--global-batch", flags->global_batch,
                 "Samples per iteration of the whole job (constant: strong scaling)")
      ->type_name("INT");
  app.add_option("--microbatch-size", flags->microbatch_size, "Samples per microbatch (default 1)")
      ->type_name("INT");
  app.add_option("--slowdowns", flags->slowdowns,
                 "Straggler slowdowns T'/T_min, comma-separated (default "
                 "1,1.05,1.1,1.2,1.3,1.4,1.5)")
      ->type_name("NUMBER,...");
  app.add_option("--schedule", flags->schedule,
                 "gpipe, 1f1b, interleaved-1f1b, 1f1b-recompute (default 1f1b)");
  app.add_option("--chunks", flags->chunks, "Model chunks per GPU for interleaved-1f1b")
      ->type_name("INT");
  app.add_option("--cost-model", flags->cost_model,
                 "exponential (a*exp(b*t)+c, default) or pwl (convex hull)");
  app.add_option("--quantization", flags->quantization,
                 "ceil (default: deployed plans never slower than all max clock) or floor (the "
                 "reference's golden-file rule)");
  app.add_option("--max-flow", flags->max_flow,
                 "dinic (default), boykov-kolmogorov or edmonds-karp");
  app.add_option("--out", flags->out,
                 "Output directory: new, empty or an earlier powertrain output (default "
                 "powertrain-cluster-out)");
  add_force_flag(app, flags->force);
  add_input_limit_flag(app);
  app.add_flag("--quiet", flags->quiet, "No progress output");
  app.add_option("--model", flags->job.model,
                 "Plan from a built-in model instead of --profile (e.g. gpt3-175b)");
  app.add_option("--gpu", flags->job.gpu, "GPU type for --model (e.g. a100-sxm)");
  app.add_option("--gpu-params", flags->job.gpu_params,
                 "DVFS parameters JSON from `powertrain calibrate --out`");
  app.add_option("--num-layers", flags->job.num_layers,
                 "Override the model's Transformer layers (a profiled slice, or a what-if)")
      ->check(integer_in(1, 100'000));
  app.add_option("--seq-len", flags->job.seq_len, "Tokens per sequence (default: the model's)")
      ->check(integer_in(1, 100'000'000));
  app.add_option("--partition", flags->job.partition,
                 "min-imbalance (default), uniform, or boundaries like [0,12,...,97]");
  app.parse_complete_callback(
      [&app, flags]() { flags->model_mode = app.count("--model") > 0 || app.count("--gpu") > 0; });
  return [flags]() { return run_cluster(*flags); };
}

}  // namespace powertrain::cli
