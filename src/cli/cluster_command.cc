// `powertrain cluster`: emulate data-parallel pipelines with a straggler (Perseus §6.3) and report
// Perseus's intrinsic and extrinsic savings next to EnvPipe's.
#include <fmt/core.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "cli/commands.h"
#include "cli/flags.h"
#include "cli/planning_flags.h"
#include "core/atomic_output.h"
#include "profile/model_profile.h"
#include "profile/profile.h"
#include "report/cluster_report.h"
#include "study/cluster.h"

namespace powertrain::cli {
namespace {

const char* const kCommand = "cluster";

// Numeric flags are read as text so that every bad value gets a one-line error naming the flag.
struct ClusterFlags {
  std::string profile;
  profile::ModelJobRequest job;  // --model/--gpu: profile modelled instead of read
  bool model_mode = false;
  std::string p_blocking_w;
  std::string unit_time_s = "0.001";
  std::string stages;
  std::string tp = "1";
  std::string gpus;
  std::string global_batch;
  std::string microbatch_size = "1";
  std::string slowdowns = "1,1.05,1.1,1.2,1.3,1.4,1.5";
  std::string schedule = "1f1b";
  std::string chunks = "1";
  std::string cost_model = "exponential";
  std::string quantization = "ceil";
  std::string max_flow = "dinic";
  std::string out = "powertrain-cluster-out";
  bool quiet = false;
  bool force = false;
};

std::string trimmed(const std::string& text) {
  const auto begin = text.find_first_not_of(" \t");
  if (begin == std::string::npos) return "";
  return text.substr(begin, text.find_last_not_of(" \t") - begin + 1);
}

core::Result<long long> parse_count(const std::string& flag, const std::string& text) {
  const std::string item = trimmed(text);
  long long value = 0;
  auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), value);
  if (item.empty() || ec != std::errc() || ptr != item.data() + item.size() || value <= 0 ||
      value > 1'000'000'000LL) {
    return core::Error{
        fmt::format("{}: expected a positive integer up to 1e9, got '{}'", flag, text)};
  }
  return value;
}

core::Result<double> parse_number(const std::string& flag, const std::string& text) {
  const std::string item = trimmed(text);
  double value = 0.0;
  auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), value);
  if (item.empty() || ec != std::errc() || ptr != item.data() + item.size() ||
      !std::isfinite(value)) {
    return core::Error{fmt::format("{}: expected a number, got '{}'", flag, text)};
  }
  return value;
}

// "1024,2048" -> items; empty items are errors (a stray comma is more likely a typo than intent).
template <typename T, typename Parse>
core::Result<std::vector<T>> parse_list(const std::string& flag, const std::string& text,
                                        Parse parse) {
  std::vector<T> values;
  std::size_t begin = 0;
  while (true) {
    const std::size_t end = std::min(text.find(',', begin), text.size());
    auto value = parse(flag, text.substr(begin, end - begin));
    if (!value) {
      return core::Error{fmt::format("{} (in '{}')", value.error().message, text)};
    }
    values.push_back(static_cast<T>(*value));
    if (end == text.size()) break;
    begin = end + 1;
  }
  return values;
}

void print_table(const study::ClusterEmulation& emulation, const std::string& out_dir) {
  const auto& first = emulation.configs.front().config;
  // One energy unit for the whole table, large enough to keep a few significant digits.
  double largest_j = 0.0;
  for (const auto& c : emulation.configs) {
    for (const auto& s : c.slowdowns) largest_j = std::max(largest_j, s.baseline.cluster_energy_j);
  }
  const auto [unit, joules_per_unit] = largest_j >= 1e6   ? std::pair{"MJ", 1e6}
                                       : largest_j >= 1e3 ? std::pair{"kJ", 1e3}
                                                          : std::pair{"J", 1.0};
  fmt::print(
      "powertrain cluster: {} pipeline stages, {}, tau = {} s, P_blocking = {} W, global batch {} "
      "samples, microbatch {} sample(s)\n",
      first.pipeline_stages, pipeline::schedule_name(emulation.pipeline.schedule),
      emulation.planning.unit_time_s, emulation.planning.p_blocking_w, first.global_batch_samples,
      first.microbatch_samples);
  fmt::print("  profile   {}\n", emulation.profile_source);
  const bool pinned = std::any_of(emulation.configs.begin(), emulation.configs.end(),
                                  [](const auto& c) { return c.fastest_point_pinned; });
  fmt::print("  quantization  {}{}\n", frontier::quantization_name(emulation.planning.quantization),
             emulation.planning.quantization == frontier::Quantization::kCeil
                 ? (pinned ? " (plans never slower than all max clock; T_min's plan pinned to it)"
                           : " (plans never slower than all max clock)")
                 : " (the reference's rule: realized plans may be slower than planned)");
  fmt::print(
      "  model     per configuration, one straggler pipeline takes T' = slowdown x T_min at all "
      "max clock;\n"
      "            the other N-1 run Perseus's plan for T_opt = min(T*, T') and block at "
      "P_blocking until T'.\n"
      "            Energies: {} per iteration of the whole cluster (every GPU, tensor-parallel "
      "ones included).\n"
      "            base  = every pipeline at max clock (measured energies, planned T_min), "
      "blocking until T'.\n"
      "            saved = Perseus planned (fitted cost model) vs base: intrinsic (its T_min plan "
      "alone)\n"
      "                    + extrinsic (the rest, from slowing to T_opt); pipeline = one "
      "non-straggler.\n"
      "            realized, EnvPipe = measured clocks vs max clock measured, T' = slowdown x "
      "measured max-clock time.\n"
      "            All savings are % of the baseline energy.\n",
      unit);
  for (const study::ClusterConfigResult& c : emulation.configs) {
    fmt::print(
        "\n{} GPUs = {} pipelines x (TP{} x PP{}), {} microbatches per pipeline: T_min = {:.3f} s, "
        "T* = {:.3f} s (planned), T*/T_min = {:.3f} (the star)\n",
        c.config.gpus, c.shape.pipelines, c.config.tensor_parallel, c.config.pipeline_stages,
        c.shape.microbatches_per_pipeline, c.t_min_s, c.t_star_s, c.t_star_s / c.t_min_s);
    fmt::print(
        "  no straggler: Perseus T_min plan saves {:.2f} % per pipeline (planned, Perseus Table "
        "6); EnvPipe {:.2f} % at {:.3f} s vs max clock {:.3f} s (measured)\n",
        100.0 * c.pipeline_intrinsic_fraction, 100.0 * c.envpipe_fraction, c.envpipe_time_s,
        c.max_clock_time_s);
    fmt::print("  {:>8} {:>8} {:>8} {:>9} {:>10} | {:>7} {:>9} {:>9} {:>8} | {:>8} {:>8}\n",
               "T'/T_min", "T' s", "T_opt s", fmt::format("base {}", unit),
               fmt::format("Perseus {}", unit), "saved %", "intrins %", "extrins %", "pipeln %",
               "realiz %", "EnvPipe %");
    for (const study::ClusterSlowdownResult& s : c.slowdowns) {
      fmt::print(
          "  {:>8.3f} {:>8.3f} {:>8.3f} {:>9.3f} {:>10.3f} | {:>7.2f} {:>9.2f} {:>9.2f} {:>8.2f} | "
          "{:>8.2f} {:>8.2f}\n",
          s.slowdown, s.straggler_time_s, s.target_time_s,
          s.baseline.cluster_energy_j / joules_per_unit,
          s.perseus.cluster_energy_j / joules_per_unit, 100.0 * s.perseus.savings_fraction,
          100.0 * s.intrinsic_fraction, 100.0 * s.extrinsic_fraction,
          100.0 * s.perseus.pipeline_savings_fraction, 100.0 * s.perseus_realized.savings_fraction,
          100.0 * s.envpipe.savings_fraction);
    }
    const auto& star = c.at_t_star;
    fmt::print(
        "  at T' = T*: saved {:.2f} % (intrinsic {:.2f} + extrinsic {:.2f}); solved in {:.2f} s, "
        "{} frontier points\n",
        100.0 * star.perseus.savings_fraction, 100.0 * star.intrinsic_fraction,
        100.0 * star.extrinsic_fraction, c.solve_seconds, c.frontier_points);
  }
  fmt::print("\n  files     {}/: cluster.csv summary.json cluster.svg\n", out_dir);
}

// The numeric flags, parsed and range-checked.
struct ClusterNumbers {
  double p_blocking_w = 0.0;
  double unit_time_s = 0.0;
  long long tp = 1, global_batch = 0, microbatch = 1, chunks = 1;
  std::vector<long long> gpus;
  std::vector<double> slowdowns;
  PlanningChoices choices;
  std::optional<long long> stages;  // --pp when given
};

// Errors are usage errors (exit 2), naming the flag.
core::Result<ClusterNumbers> parse_cluster_numbers(const ClusterFlags& flags) {
  ClusterNumbers n;
  auto p_blocking = flags.p_blocking_w.empty() ? core::Result<double>(0.0)
                                               : parse_number("--p-blocking-w", flags.p_blocking_w);
  if (!p_blocking) return p_blocking.error();
  auto unit_time = parse_number("--unit-time-s", flags.unit_time_s);
  if (!unit_time) return unit_time.error();
  if (!(*unit_time > 0.0 && *unit_time <= 3600.0)) {
    return core::Error{fmt::format("--unit-time-s: expected a number > 0 and <= 3600, got '{}'",
                                   flags.unit_time_s)};
  }
  if (*p_blocking < 0.0 || *p_blocking > 1e5) {
    return core::Error{fmt::format("--p-blocking-w: expected a number from 0 to 1e5, got '{}'",
                                   flags.p_blocking_w)};
  }
  n.p_blocking_w = *p_blocking;
  n.unit_time_s = *unit_time;
  const std::pair<const char*, std::pair<const std::string*, long long*>> counts[] = {
      {"--tp", {&flags.tp, &n.tp}},
      {"--global-batch", {&flags.global_batch, &n.global_batch}},
      {"--microbatch-size", {&flags.microbatch_size, &n.microbatch}},
      {"--chunks", {&flags.chunks, &n.chunks}},
  };
  for (const auto& [name, field] : counts) {
    auto parsed = parse_count(name, *field.first);
    if (!parsed) return parsed.error();
    *field.second = *parsed;
  }
  auto gpus = parse_list<long long>("--gpus", flags.gpus, parse_count);
  if (!gpus) return gpus.error();
  n.gpus = std::move(*gpus);
  auto slowdowns = parse_list<double>("--slowdowns", flags.slowdowns, parse_number);
  if (!slowdowns) return slowdowns.error();
  for (double s : *slowdowns) {
    if (s < 1.0 || s > 100.0) {
      return core::Error{fmt::format(
          "--slowdowns: expected straggler slowdowns T'/T_min from 1 to 100, got {} (in '{}')", s,
          flags.slowdowns)};
    }
  }
  n.slowdowns = std::move(*slowdowns);
  auto choices =
      parse_planning_choices(flags.schedule, flags.cost_model, flags.quantization, flags.max_flow);
  if (!choices) return choices.error();
  n.choices = *choices;
  if (!flags.stages.empty()) {
    auto parsed = parse_count("--pp", flags.stages);
    if (!parsed) return parsed.error();
    n.stages = *parsed;
  }
  return n;
}

// The profile CSV, or the built-in model's profile (which also gives P_blocking when
// --p-blocking-w is not set).
core::Result<profile::Profile> cluster_profile(const ClusterFlags& flags, ClusterNumbers& n) {
  if (!flags.model_mode) return profile::read_profile(flags.profile);
  profile::ModelJobRequest request = flags.job;
  request.tp = static_cast<int>(n.tp);
  request.microbatch_size = static_cast<int>(n.microbatch);
  request.pp = static_cast<int>(std::min<long long>(n.stages.value_or(8), 1'000'000));
  auto job = profile::build_model_job(request);
  if (!job) return job.error();
  if (flags.p_blocking_w.empty()) n.p_blocking_w = job->gpu.p_blocking_w;
  auto profile = profile::generate_profile(*job);
  if (!flags.quiet) fmt::print(stderr, "cluster: profile modelled for {}\n", job->description);
  return profile;
}

// Progress on stderr: one line per configuration.
void print_progress(study::ClusterSettings& settings) {
  settings.on_config_start = [](std::size_t index, std::size_t count,
                                const study::ClusterConfig& config,
                                const study::ClusterShape& shape) {
    fmt::print(stderr, "cluster: [{}/{}] {} GPUs = {} pipelines x {} microbatches: planning...",
               index + 1, count, config.gpus, shape.pipelines, shape.microbatches_per_pipeline);
    std::fflush(stderr);
  };
  settings.on_config_done = [](std::size_t, std::size_t, double seconds) {
    if (seconds > 0.0) {
      fmt::print(stderr, " solved in {:.2f} s\n", seconds);
    } else {
      fmt::print(stderr, " same pipeline as before, reused\n");
    }
  };
}

int run_cluster(const ClusterFlags& flags) {
  if (flags.profile.empty() && !flags.model_mode)
    return usage_error(kCommand,
                       "--profile or --model/--gpu: required (a Perseus profile CSV, or a "
                       "built-in model on a GPU type)");
  if (!flags.profile.empty() && flags.model_mode)
    return usage_error(kCommand, "give either --profile or --model/--gpu, not both");
  if (flags.p_blocking_w.empty() && !flags.model_mode) {
    return usage_error(
        kCommand, "--p-blocking-w: required (power in W of a GPU blocked on P2P communication)");
  }
  if (flags.gpus.empty())
    return usage_error(kCommand, "--gpus: required (e.g. 1024,2048,4096,8192)");
  if (flags.global_batch.empty()) {
    return usage_error(kCommand,
                       "--global-batch: required (samples per iteration of the whole job)");
  }
  if (auto checked = core::check_output_directory(flags.out, output_policy(flags.force));
      !checked) {
    return fail(kCommand, checked.error().message);
  }
  auto numbers = parse_cluster_numbers(flags);
  if (!numbers) return usage_error(kCommand, numbers.error().message);
  ClusterNumbers& n = *numbers;
  auto profile = cluster_profile(flags, n);
  if (!profile) return fail(kCommand, profile.error().message);

  study::ClusterSettings settings;
  settings.engine = n.choices.engine;
  settings.planning.p_blocking_w = n.p_blocking_w;
  settings.planning.unit_time_s = n.unit_time_s;
  settings.planning.cost_model = n.choices.cost_model;
  settings.planning.quantization = n.choices.quantization;
  settings.pipeline.schedule = n.choices.schedule;
  settings.pipeline.chunks_per_gpu = static_cast<int>(n.chunks);
  settings.slowdowns = n.slowdowns;
  const int profile_chunks = n.choices.schedule == pipeline::ScheduleKind::kInterleavedOneFOneB
                                 ? static_cast<int>(n.chunks)
                                 : 1;
  const long long stages = n.stages.value_or(std::max(1, profile->num_stages() / profile_chunks));
  if (!flags.model_mode && n.stages && profile->num_stages() != stages * profile_chunks) {
    return fail(kCommand, fmt::format("{}: has {} stage(s) but --pp {} needs {}; is the file "
                                      "truncated, or --pp wrong?",
                                      profile->source, profile->num_stages(), stages,
                                      stages * profile_chunks));
  }
  if (n.tp > 1'000'000 || stages > 1'000'000) {
    return fail(kCommand,
                fmt::format("--tp {} / --pp {}: expected at most 1000000 each", n.tp, stages));
  }
  std::vector<study::ClusterConfig> configs;
  for (long long g : n.gpus) {
    study::ClusterConfig config;
    config.gpus = g;
    config.tensor_parallel = static_cast<int>(n.tp);
    config.pipeline_stages = static_cast<int>(stages);
    config.global_batch_samples = n.global_batch;
    config.microbatch_samples = n.microbatch;
    configs.push_back(config);
  }

  // Validate the output location before spending seconds on the solves.
  auto output = core::AtomicOutputDirectory::create(flags.out, output_policy(flags.force));
  if (!output) return fail(kCommand, output.error().message);
  if (!flags.quiet) print_progress(settings);
  auto emulation = study::emulate_cluster(*profile, configs, settings);
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
  print_table(*emulation, output->target().string());
  if (!flags.model_mode && !n.stages) {
    // Said aloud: a truncated profile would otherwise plan a shorter pipeline without a word.
    fmt::print("  note      --pp not given: planned the {} stage(s) found in the profile\n",
               stages);
  }
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
