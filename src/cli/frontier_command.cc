// `powertrain frontier`: plan every Pareto-optimal frequency plan of one iteration and write them.
#include <fmt/core.h>

#include <cstdio>
#include <optional>

#include "cli/commands.h"
#include "cli/flags.h"
#include "cli/model_job_options.h"
#include "cli/planning_flags.h"
#include "core/atomic_output.h"
#include "core/progress.h"
#include "frontier/problem.h"
#include "frontier/solver.h"
#include "report/frontier_report.h"
#include "study/frontier_inputs.h"
#include "study/frontier_run.h"

namespace powertrain::cli {
namespace {

struct FrontierFlags {
  std::string profile;
  bool pp_given = false;  // --pp (also the job's pipeline degree with --model)
  int microbatches = 0;
  double p_blocking_w = -1.0;
  double unit_time_s = 0.0;
  std::string schedule = "1f1b";
  int chunks = 1;
  std::string cost_model = "exponential";
  std::string quantization = "ceil";
  std::string fit = "reference";
  double data_loading_s = 0.0;
  double optimizer_step_s = 0.0;
  double p2p_s = 0.0;
  std::string out = "powertrain-out";
  std::string emit_plans = "tstar,tmin,stragglers";
  long long timeline_point = -1;
  std::string max_flow = "dinic";
  profile::ModelJobRequest job;  // used when --model or --gpu is given
  bool model_mode = false;
  bool quiet = false;
  bool force = false;
};

// Solves with a progress line over the time range from T* down to the T_min bound (tau units).
frontier::Frontier solve_with_progress(const frontier::PlanningProblem& problem,
                                       frontier::MaxFlowEngine engine, bool quiet) {
  frontier::SolverOptions options;
  options.engine = engine;
  core::ProgressLine progress("planning", "tau units from T* toward T_min", !quiet);
  options.progress = [&progress](long long done, long long total) { progress.update(done, total); };
  frontier::Frontier solved = frontier::solve_frontier(problem, options);
  progress.finish();
  return solved;
}

int run_frontier(const FrontierFlags& flags) {
  const char* kCommand = "frontier";
  if (flags.model_mode && !flags.profile.empty())
    return usage_error(kCommand, "give either --profile or --model/--gpu, not both");
  if (!flags.model_mode && !flags.profile.empty() && flags.p_blocking_w < 0.0)
    return usage_error(kCommand, std::string(study::kFrontierPBlockingRequired));
  if (auto checked = core::check_output_directory(flags.out, output_policy(flags.force));
      !checked) {
    return fail(kCommand, checked.error().message);
  }
  study::FrontierRequest request{.profile_path = flags.profile,
                                 .job = std::nullopt,
                                 .pp = std::nullopt,
                                 .microbatches = flags.microbatches,
                                 .chunks = flags.chunks,
                                 .p_blocking_w = flags.p_blocking_w,
                                 .unit_time_s = flags.unit_time_s,
                                 .fit = flags.fit,
                                 .data_loading_s = flags.data_loading_s,
                                 .optimizer_step_s = flags.optimizer_step_s,
                                 .p2p_s = flags.p2p_s};
  if (flags.model_mode) request.job = flags.job;
  if (flags.pp_given) request.pp = flags.job.pp;
  auto source = study::load_profile(request);
  if (!source) return fail(kCommand, source.error().message);
  const profile::Profile& profile = source->profile;
  if (source->job) {
    fmt::print("powertrain frontier: profile modelled for {}\n", source->job->description);
    print_job_summary(*source->job);
  }

  auto choices = parse_planning_choices(
      source->job && source->job->parallel.recompute && flags.schedule == "1f1b" ? "1f1b-recompute"
                                                                                 : flags.schedule,
      flags.cost_model, flags.quantization, flags.max_flow);
  if (!choices) return usage_error(kCommand, choices.error().message);
  const pipeline::PipelineSpec spec = study::pipeline_spec(request, choices->schedule, *source);
  const int chunks = study::chunks_per_gpu(request, spec.schedule);
  if (!source->job && !source->builtin && profile.num_stages() != spec.num_profile_stages()) {
    return fail(kCommand,
                fmt::format("{}: has {} stage(s) but --pp {}{} needs {}; is the file truncated, "
                            "or --pp wrong?",
                            profile.source, profile.num_stages(), spec.num_gpus,
                            chunks > 1 ? fmt::format(" x --chunks {}", chunks) : "",
                            spec.num_profile_stages()));
  }
  auto settings =
      study::planning_settings(request, choices->cost_model, choices->quantization, *source);
  if (!settings) return usage_error(kCommand, settings.error().message);
  auto problem = frontier::build_planning_problem(profile, spec, *settings);
  if (!problem) return fail(kCommand, problem.error().message);
  // Validate the output location before spending time on the solve.
  auto output = core::AtomicOutputDirectory::create(flags.out, output_policy(flags.force));
  if (!output) return fail(kCommand, output.error().message);

  frontier::Frontier solved = solve_with_progress(*problem, choices->engine, flags.quiet);
  // Ceil promises plans never slower than all max clock; floor stays the reference's frontier.
  const bool pinned = settings->quantization == frontier::Quantization::kCeil &&
                      frontier::pin_fastest_point(*problem, solved);
  report::print_input_warnings(stderr, profile, *problem);

  study::FrontierRun run = study::analyze(*problem, solved, profile.source, &profile);
  run.fastest_point_pinned = pinned;

  auto emit = study::parse_plan_points(flags.emit_plans, run);
  if (!emit) return fail(kCommand, emit.error().message);
  const std::size_t last = solved.points.size() - 1;
  if (flags.timeline_point > static_cast<long long>(last)) {
    return usage_error(kCommand, fmt::format("--timeline-point: expected 0 to {}, got {}", last,
                                             flags.timeline_point));
  }
  const std::size_t timeline_point =
      flags.timeline_point < 0 ? last : static_cast<std::size_t>(flags.timeline_point);

  std::vector<report::OutputFile> files = report::frontier_files(run, timeline_point);
  for (std::size_t point : *emit) {
    for (auto& file : report::plan_files(run, point)) files.push_back(std::move(file));
  }
  for (const auto& [name, contents] : files) {
    if (auto written = output->write_file(name, contents); !written)
      return fail(kCommand, written.error().message);
  }
  if (auto committed = output->commit(); !committed)
    return fail(kCommand, committed.error().message);
  report::print_frontier_summary(stdout, *source, spec, run, output->target().string(),
                                 timeline_point, emit->size(), flags.pp_given);
  return 0;
}

}  // namespace

Action add_frontier_command(CLI::App& app) {
  auto flags = std::make_shared<FrontierFlags>();
  app.add_option("--profile", flags->profile,
                 "Perseus profile CSV stage,instruction,frequency,time,energy (MHz, s, J); "
                 "default: built-in example");
  add_option_with_aliases(app, "--microbatches", {}, flags->microbatches,
                          "Microbatches per iteration (default 8)", integer_in(1, 1'000'000));
  add_option_with_aliases(app, "--p-blocking-w", {"--p-blocking"}, flags->p_blocking_w,
                          "Power of a GPU blocked on P2P communication, W", number_in(0.0, 1e5));
  add_option_with_aliases(app, "--unit-time-s", {"--unit-time"}, flags->unit_time_s,
                          "Time quantum tau in seconds (default 0.001)",
                          number_in(0.0, 3600.0, true));
  app.add_option("--schedule", flags->schedule,
                 "gpipe, 1f1b, interleaved-1f1b, 1f1b-recompute (default 1f1b)");
  add_option_with_aliases(app, "--chunks", {}, flags->chunks,
                          "Model chunks per GPU for interleaved-1f1b (profile stage = chunk id)",
                          integer_in(1, 4096));
  app.add_option("--cost-model", flags->cost_model,
                 "exponential (a*exp(b*t)+c, default) or pwl (convex hull)");
  app.add_option("--quantization", flags->quantization,
                 "ceil (default: realized never slower than planned, fastest point no slower "
                 "than all max clock) or floor (reference solver's rule, for its frontiers)");
  app.add_option("--fit", flags->fit,
                 "Exponential fit: reference (lowtime's multi-start Levenberg-Marquardt, default) "
                 "or global (global least squares)");
  add_option_with_aliases(app, "--data-loading-s", {"--data-loading-time"}, flags->data_loading_s,
                          "Constant data loading per GPU, s (default 0)", number_in(0.0, 1e5));
  add_option_with_aliases(app, "--optimizer-step-s", {"--optimizer-step-time"},
                          flags->optimizer_step_s, "Constant optimizer step per GPU, s (default 0)",
                          number_in(0.0, 1e5));
  add_option_with_aliases(app, "--p2p-s", {"--p2p-time"}, flags->p2p_s,
                          "Constant inter-stage transfer on slow links, s (default 0)",
                          number_in(0.0, 1e5));
  app.add_option("--out", flags->out,
                 "Output directory: new, empty or an earlier powertrain output (default "
                 "powertrain-out)");
  add_force_flag(app, flags->force);
  add_input_limit_flag(app);
  app.add_option(
      "--emit-plans", flags->emit_plans,
      "Points to write as Zeus plan files: tstar,tmin,stragglers,all,none or indices (default "
      "tstar,tmin,stragglers)");
  add_option_with_aliases(app, "--timeline-point", {}, flags->timeline_point,
                          "Point whose timeline to write (default: T_min)",
                          integer_in(0, 1'000'000'000));
  app.add_option("--max-flow", flags->max_flow,
                 "Max-flow engine: dinic (hand-written, default), boykov-kolmogorov or "
                 "edmonds-karp (Boost.Graph; cross-checks)");
  app.add_flag("--quiet", flags->quiet, "No progress output");
  add_model_job_options(app, flags->job);
  app.parse_complete_callback([&app, flags]() {
    flags->model_mode = app.count("--model") > 0 || app.count("--gpu") > 0;
    flags->pp_given = app.count("--pp") > 0 || app.count("--stages") > 0;
  });
  return [flags]() { return run_frontier(*flags); };
}

}  // namespace powertrain::cli
