// `powertrain frontier`: plan every Pareto-optimal frequency plan of one iteration and write them.
#include <fmt/core.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <set>

#include "cli/commands.h"
#include "cli/flags.h"
#include "cli/model_job_options.h"
#include "cli/planning_flags.h"
#include "core/atomic_output.h"
#include "core/csv.h"
#include "core/progress.h"
#include "core/savings_text.h"
#include "frontier/problem.h"
#include "frontier/solver.h"
#include "profile/example_profile.h"
#include "profile/model_profile.h"
#include "report/frontier_report.h"
#include "study/frontier_run.h"

namespace powertrain::cli {
namespace {

constexpr std::string_view kPBlockingRequired =
    "--p-blocking-w: required with --profile (power in W of a GPU blocked on P2P communication)";

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

// Parses "tstar,tmin,stragglers,all,12,40" into point indices.
core::Result<std::vector<std::size_t>> parse_emit_plans(const std::string& spec,
                                                        const study::FrontierRun& run) {
  std::set<std::size_t> points;
  const std::size_t last = run.frontier->points.size() - 1;
  std::size_t begin = 0;
  while (begin <= spec.size()) {
    std::size_t end = spec.find(',', begin);
    if (end == std::string::npos) end = spec.size();
    const std::string item = spec.substr(begin, end - begin);
    begin = end + 1;
    if (item.empty() || item == "none") continue;
    if (item == "all") {
      for (std::size_t p = 0; p <= last; ++p) points.insert(p);
    } else if (item == "tstar") {
      points.insert(0);
    } else if (item == "tmin") {
      points.insert(last);
    } else if (item == "stragglers") {
      for (const auto& s : run.stragglers) points.insert(s.point);
    } else {
      auto index = core::parse_integer(item, "--emit-plans", 0, "point");
      if (!index || *index < 0 || static_cast<std::size_t>(*index) > last) {
        return core::Error{
            fmt::format("--emit-plans: expected tstar, tmin, stragglers, all, none or a point 0 to "
                        "{}, got '{}'",
                        last, item)};
      }
      points.insert(static_cast<std::size_t>(*index));
    }
  }
  return std::vector<std::size_t>(points.begin(), points.end());
}

// What is planned: the profile and where it came from.
struct ProfileSource {
  std::optional<profile::ModelJob> job;  // --model/--gpu: the profile is modelled
  bool builtin = false;                  // neither --profile nor --model: the built-in example
  profile::Profile profile;
};

// Models the job of --model/--gpu, reads --profile, or parses the built-in example.
core::Result<ProfileSource> load_profile(const FrontierFlags& flags) {
  ProfileSource source;
  source.builtin = flags.profile.empty() && !flags.model_mode;
  if (flags.model_mode) {
    profile::ModelJobRequest request = flags.job;
    if (flags.microbatches > 0) request.microbatches = flags.microbatches;
    auto built = profile::build_model_job(request);
    if (!built) return built.error();
    source.job = std::move(*built);
    source.profile = profile::generate_profile(*source.job);
    return source;
  }
  if (source.builtin) {
    auto table = core::parse_csv(profile::example_profile_csv(), "<built-in example profile>");
    if (!table) return table.error();
    auto parsed = profile::parse_profile(*table);
    if (!parsed) return parsed.error();
    source.profile = std::move(*parsed);
    return source;
  }
  auto read = profile::read_profile(flags.profile);
  if (!read) return read.error();
  source.profile = std::move(*read);
  return source;
}

// Model chunks per GPU: --chunks for interleaved 1F1B, else 1.
int chunks_per_gpu(const FrontierFlags& flags, pipeline::ScheduleKind schedule) {
  return schedule == pipeline::ScheduleKind::kInterleavedOneFOneB ? std::max(1, flags.chunks) : 1;
}

// The pipeline to plan: the job's degree, --pp, or as many GPUs as the profile has stages.
pipeline::PipelineSpec pipeline_spec(const FrontierFlags& flags, const PlanningChoices& choices,
                                     const ProfileSource& source) {
  const profile::ExampleDefaults example;
  pipeline::PipelineSpec spec;
  spec.schedule = choices.schedule;
  spec.chunks_per_gpu = flags.chunks;
  const int chunks = chunks_per_gpu(flags, spec.schedule);
  spec.num_gpus = source.job       ? source.job->parallel.pp
                  : flags.pp_given ? flags.job.pp
                                   : std::max(1, source.profile.num_stages() / chunks);
  spec.num_microbatches = flags.microbatches > 0 ? flags.microbatches : example.microbatches;
  spec.data_loading_time_s = flags.data_loading_s;
  spec.optimizer_step_time_s = flags.optimizer_step_s;
  spec.p2p_time_s = flags.p2p_s;
  return spec;
}

// Fit, cost model, quantization, tau and P_blocking (the flag, else the job's GPU, else the
// example's). Errors are usage errors.
core::Result<frontier::PlanningSettings> planning_settings(const FrontierFlags& flags,
                                                           const PlanningChoices& choices,
                                                           const ProfileSource& source) {
  const profile::ExampleDefaults example;
  frontier::PlanningSettings settings;
  auto fit_method = frontier::parse_fit_method(flags.fit);
  if (!fit_method)
    return core::Error{fmt::format("--fit: unknown '{}'; known: reference, global", flags.fit)};
  settings.fit_method = *fit_method;
  settings.cost_model = choices.cost_model;
  settings.quantization = choices.quantization;
  settings.unit_time_s = flags.unit_time_s > 0.0 ? flags.unit_time_s : example.unit_time_s;
  if (flags.p_blocking_w >= 0.0) {
    settings.p_blocking_w = flags.p_blocking_w;
  } else if (source.job) {
    settings.p_blocking_w = source.job->gpu.p_blocking_w;
  } else if (source.builtin) {
    settings.p_blocking_w = example.p_blocking_w;
  } else {
    return core::Error{std::string(kPBlockingRequired)};
  }
  return settings;
}

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

// Warnings about the input: averaged repeated rows and fits that fell back.
void warn_about_input(const profile::Profile& profile, const frontier::PlanningProblem& problem) {
  if (profile.merged_duplicate_rows > 0) {
    fmt::print(stderr,
               "warning: {}:{}: {} repeated (stage, instruction, frequency) row(s) averaged\n",
               profile.source, profile.first_duplicate_line, profile.merged_duplicate_rows);
  }
  if (const std::string fallbacks = frontier::fit_fallback_summary(problem); !fallbacks.empty()) {
    fmt::print(stderr, "warning: exponential fit fell back for {}\n", fallbacks);
  }
}

// The console summary of a written run.
void print_frontier_summary(const FrontierFlags& flags, const ProfileSource& source,
                            const pipeline::PipelineSpec& spec, const study::FrontierRun& run,
                            const std::string& directory, std::size_t timeline_point,
                            std::size_t plans_written) {
  const frontier::PlanningProblem& problem = *run.problem;
  const frontier::Frontier& solved = *run.frontier;
  const frontier::PlanningSettings& settings = problem.settings;
  const profile::Profile& profile = source.profile;
  const bool builtin = source.builtin;
  const double tau = settings.unit_time_s;
  const auto& first = solved.points.front();
  const auto& fastest = solved.points.back();
  const double t_min = fastest.time_units * tau;
  const double paper_baseline = frontier::max_clock_energy_at(problem, t_min);
  double max_fit_error = 0.0;
  for (const auto& model : problem.models)
    max_fit_error = std::max(max_fit_error, model.fit().max_relative_error);
  fmt::print(
      "powertrain frontier: {} stages x {} microbatches, {}, tau = {} s, P_blocking = {} W\n",
      spec.num_gpus, spec.num_microbatches, pipeline::schedule_name(spec.schedule), tau,
      settings.p_blocking_w);
  fmt::print("  profile       {}{}\n", profile.source,
             builtin ? " (run `powertrain example-profile` to see it)" : "");
  if (!source.job && !builtin && !flags.pp_given) {
    // Said aloud: a truncated profile would otherwise plan a shorter pipeline without a word.
    fmt::print("  note          --pp not given: planned the {} stage(s) found in the profile\n",
               spec.num_gpus);
  }
  const char* basis = source.job ? "modelled" : "measured";
  if (source.job) {
    fmt::print(
        "  note          the profile is modelled by the device model: 'measured' below means "
        "the modelled time and energy at a clock, not a GPU measurement\n");
  }
  fmt::print("  cost model    {} fit ({}), largest fit error {:.2f} % of {} energy\n",
             frontier::cost_model_name(settings.cost_model),
             frontier::fit_method_name(settings.fit_method), 100.0 * max_fit_error, basis);
  fmt::print("  quantization  {}{}\n", frontier::quantization_name(settings.quantization),
             settings.quantization == frontier::Quantization::kCeil
                 ? " (realized points never slower than planned)"
                 : " (reference solver's rule; realized may exceed planned)");
  fmt::print(
      "  frontier      {} points, T_min = {:.4f} s .. T* = {:.4f} s (planned); solved in {:.2f} "
      "s\n",
      solved.points.size(), t_min, first.time_units * tau, solved.stats.seconds);
  fmt::print("  baseline      all max clock: {:.4f} s, {:.1f} J per iteration ({})\n",
             run.baseline.time_s, run.baseline.energy_j, basis);
  fmt::print(
      "  at T_min      {:.1f} J planned: {:.2f} % less than max clock at T_min ({:.1f} J, Perseus "
      "Table 6 "
      "definition)\n",
      fastest.energy_j, 100.0 * (1.0 - fastest.energy_j / paper_baseline), paper_baseline);
  fmt::print(
      "                realized with {} clocks: {:.4f} s, {:.1f} J ({:+.2f} % energy vs "
      "baseline)\n",
      basis, run.realized.back().time_s, run.realized.back().energy_j,
      100.0 * (run.realized.back().energy_j / run.baseline.energy_j - 1.0));
  fmt::print("  at T*         {:.1f} J planned (least energy), {:.2f} % slower than T_min\n",
             first.energy_j, 100.0 * (first.time_units * tau / t_min - 1.0));
  fmt::print(
      "  stragglers    slowdown T'/T_min -> plan point, planned time, savings incl. blocking "
      "(planned)\n");
  for (const auto& s : run.stragglers) {
    fmt::print("                {:.2f}x  T' = {:.4f} s -> point {:5d}, {:.4f} s, {}\n", s.slowdown,
               s.straggler_time_s, s.point, s.planned_time_s,
               core::savings_phrase(s.savings_fraction));
  }
  fmt::print("{}", report::baselines_summary(run));
  fmt::print(
      "  files         {}/: frontier.csv plans.csv summary.json baselines.csv frontier.svg "
      "timeline_{:05d}.json "
      "and {} plan(s) as freqs_pipeline_NNNNN.py + plan_NNNNN.json\n",
      directory, timeline_point, plans_written);
  if (!builtin && profile.find(0, pipeline::InstructionKind::kRecompute) != nullptr &&
      spec.schedule != pipeline::ScheduleKind::kOneFOneBEarlyRecompute) {
    fmt::print(
        "note: {} has recompute rows; they are planned only with --schedule 1f1b-recompute\n",
        profile.source);
  }
}

int run_frontier(const FrontierFlags& flags) {
  const char* kCommand = "frontier";
  if (flags.model_mode && !flags.profile.empty())
    return usage_error(kCommand, "give either --profile or --model/--gpu, not both");
  if (!flags.model_mode && !flags.profile.empty() && flags.p_blocking_w < 0.0)
    return usage_error(kCommand, std::string(kPBlockingRequired));
  if (auto checked = core::check_output_directory(flags.out, output_policy(flags.force));
      !checked) {
    return fail(kCommand, checked.error().message);
  }
  auto source = load_profile(flags);
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
  const pipeline::PipelineSpec spec = pipeline_spec(flags, *choices, *source);
  const int chunks = chunks_per_gpu(flags, spec.schedule);
  if (!source->job && !source->builtin && profile.num_stages() != spec.num_profile_stages()) {
    return fail(kCommand,
                fmt::format("{}: has {} stage(s) but --pp {}{} needs {}; is the file truncated, "
                            "or --pp wrong?",
                            profile.source, profile.num_stages(), spec.num_gpus,
                            chunks > 1 ? fmt::format(" x --chunks {}", chunks) : "",
                            spec.num_profile_stages()));
  }
  auto settings = planning_settings(flags, *choices, *source);
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
  warn_about_input(profile, *problem);

  study::FrontierRun run = study::analyze(*problem, solved, profile.source, &profile);
  run.fastest_point_pinned = pinned;

  auto emit = parse_emit_plans(flags.emit_plans, run);
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
  print_frontier_summary(flags, *source, spec, run, output->target().string(), timeline_point,
                         emit->size());
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
