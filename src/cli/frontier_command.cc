// `powertrain frontier`: plan every Pareto-optimal frequency plan of one iteration and write them.
#include <fmt/core.h>

#include <cstdio>
#include <optional>

#include "cli/commands.h"
#include "cli/flags.h"
#include "cli/model_job_options.h"
#include "core/atomic_output.h"
#include "report/frontier_report.h"
#include "study/frontier_plan.h"

namespace powertrain::cli {
namespace {

struct FrontierFlags {
  study::FrontierSettings settings;
  std::string out = "powertrain-out";
  bool force = false;
};

int run_frontier(const FrontierFlags& flags) {
  const char* kCommand = "frontier";
  std::optional<core::AtomicOutputDirectory> output;
  const study::FrontierHooks hooks{
      .before_load =
          [&]() { return core::check_output_directory(flags.out, output_policy(flags.force)); },
      .profile_loaded =
          [](const study::ProfileSource& source) {
            if (!source.job) return;
            fmt::print("powertrain frontier: profile modelled for {}\n", source.job->description);
            print_job_summary(*source.job);
          },
      .before_solve = [&]() -> core::Status {
        auto created = core::AtomicOutputDirectory::create(flags.out, output_policy(flags.force));
        if (!created) return created.error();
        output.emplace(std::move(*created));
        return core::Ok{};
      },
      .solved =
          [](const profile::Profile& profile, const frontier::PlanningProblem& problem) {
            report::print_input_warnings(stderr, profile, problem);
          }};
  const auto planned = study::plan_frontier(flags.settings, hooks);
  if (!planned) {
    const core::FlowError& error = planned.error();
    return error.usage ? usage_error(kCommand, error.message) : fail(kCommand, error.message);
  }
  const std::unique_ptr<study::FrontierPlan>& plan = *planned;

  std::vector<report::OutputFile> files = report::frontier_files(plan->run, plan->timeline_point);
  for (std::size_t point : plan->emit) {
    for (auto& file : report::plan_files(plan->run, point)) files.push_back(std::move(file));
  }
  for (const auto& [name, contents] : files) {
    if (auto written = output->write_file(name, contents); !written)
      return fail(kCommand, written.error().message);
  }
  if (auto committed = output->commit(); !committed)
    return fail(kCommand, committed.error().message);
  report::print_frontier_summary(stdout, plan->source, plan->spec, plan->run,
                                 output->target().string(), plan->timeline_point, plan->emit.size(),
                                 flags.settings.pp_given);
  return 0;
}

}  // namespace

Action add_frontier_command(CLI::App& app) {
  auto flags = std::make_shared<FrontierFlags>();
  app.add_option("--profile", flags->settings.profile,
                 "Perseus profile CSV stage,instruction,frequency,time,energy (MHz, s, J); "
                 "default: built-in example");
  add_option_with_aliases(app, "--microbatches", {}, flags->settings.microbatches,
                          "Microbatches per iteration (default 8)", integer_in(1, 1'000'000));
  add_option_with_aliases(app, "--p-blocking-w", {"--p-blocking"}, flags->settings.p_blocking_w,
                          "Power of a GPU blocked on P2P communication, W", number_in(0.0, 1e5));
  add_option_with_aliases(app, "--unit-time-s", {"--unit-time"}, flags->settings.unit_time_s,
                          "Time quantum tau in seconds (default 0.001)",
                          number_in(0.0, 3600.0, true));
  app.add_option("--schedule", flags->settings.schedule,
                 "gpipe, 1f1b, interleaved-1f1b, 1f1b-recompute (default 1f1b)");
  add_option_with_aliases(app, "--chunks", {}, flags->settings.chunks,
                          "Model chunks per GPU for interleaved-1f1b (profile stage = chunk id)",
                          integer_in(1, 4096));
  app.add_option("--cost-model", flags->settings.cost_model,
                 "exponential (a*exp(b*t)+c, default) or pwl (convex hull)");
  app.add_option("--quantization", flags->settings.quantization,
                 "ceil (default: realized never slower than planned, fastest point no slower "
                 "than all max clock) or floor (reference solver's rule, for its frontiers)");
  app.add_option("--fit", flags->settings.fit,
                 "Exponential fit: reference (lowtime's multi-start Levenberg-Marquardt, default) "
                 "or global (global least squares)");
  add_option_with_aliases(app, "--data-loading-s", {"--data-loading-time"},
                          flags->settings.data_loading_s,
                          "Constant data loading per GPU, s (default 0)", number_in(0.0, 1e5));
  add_option_with_aliases(app, "--optimizer-step-s", {"--optimizer-step-time"},
                          flags->settings.optimizer_step_s,
                          "Constant optimizer step per GPU, s (default 0)", number_in(0.0, 1e5));
  add_option_with_aliases(app, "--p2p-s", {"--p2p-time"}, flags->settings.p2p_s,
                          "Constant inter-stage transfer on slow links, s (default 0)",
                          number_in(0.0, 1e5));
  app.add_option("--out", flags->out,
                 "Output directory: new, empty or an earlier powertrain output (default "
                 "powertrain-out)");
  add_force_flag(app, flags->force);
  add_input_limit_flag(app);
  app.add_option(
      "--emit-plans", flags->settings.emit_plans,
      "Points to write as Zeus plan files: tstar,tmin,stragglers,all,none or indices (default "
      "tstar,tmin,stragglers)");
  add_option_with_aliases(app, "--timeline-point", {}, flags->settings.timeline_point,
                          "Point whose timeline to write (default: T_min)",
                          integer_in(0, 1'000'000'000));
  app.add_option("--max-flow", flags->settings.max_flow,
                 "Max-flow engine: dinic (hand-written, default), boykov-kolmogorov or "
                 "edmonds-karp (Boost.Graph; cross-checks)");
  app.add_flag("--quiet", flags->settings.quiet, "No progress output");
  add_model_job_options(app, flags->settings.job);
  app.parse_complete_callback([&app, flags]() {
    flags->settings.model_mode = app.count("--model") > 0 || app.count("--gpu") > 0;
    flags->settings.pp_given = app.count("--pp") > 0 || app.count("--stages") > 0;
  });
  return [flags]() { return run_frontier(*flags); };
}

}  // namespace powertrain::cli
