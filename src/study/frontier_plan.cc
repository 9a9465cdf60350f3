#include "study/frontier_plan.h"

#include <fmt/core.h>

#include <optional>
#include <utility>

#include "core/progress.h"
#include "study/planning_choices.h"

namespace powertrain::study {
namespace {

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

core::FlowError failed(std::string message, bool usage) {
  return core::FlowError{.message = std::move(message), .usage = usage};
}

FrontierRequest frontier_request(const FrontierSettings& settings) {
  FrontierRequest request{.profile_path = settings.profile,
                          .job = std::nullopt,
                          .pp = std::nullopt,
                          .microbatches = settings.microbatches,
                          .chunks = settings.chunks,
                          .p_blocking_w = settings.p_blocking_w,
                          .unit_time_s = settings.unit_time_s,
                          .fit = settings.fit,
                          .data_loading_s = settings.data_loading_s,
                          .optimizer_step_s = settings.optimizer_step_s,
                          .p2p_s = settings.p2p_s};
  if (settings.model_mode) request.job = settings.job;
  if (settings.pp_given) request.pp = settings.job.pp;
  return request;
}

}  // namespace

core::FlowResult<std::unique_ptr<FrontierPlan>> plan_frontier(const FrontierSettings& settings,
                                                              const FrontierHooks& hooks) {
  if (settings.model_mode && !settings.profile.empty())
    return failed("give either --profile or --model/--gpu, not both", true);
  if (!settings.model_mode && !settings.profile.empty() && settings.p_blocking_w < 0.0)
    return failed(std::string(kFrontierPBlockingRequired), true);
  if (hooks.before_load) {
    if (auto checked = hooks.before_load(); !checked) return failed(checked.error().message, false);
  }
  const FrontierRequest request = frontier_request(settings);
  auto source = load_profile(request);
  if (!source) return failed(source.error().message, false);
  if (hooks.profile_loaded) hooks.profile_loaded(*source);
  const profile::Profile& profile = source->profile;

  auto choices = parse_planning_choices(
      source->job && source->job->parallel.recompute && settings.schedule == "1f1b"
          ? "1f1b-recompute"
          : settings.schedule,
      settings.cost_model, settings.quantization, settings.max_flow);
  if (!choices) return failed(choices.error().message, true);
  const pipeline::PipelineSpec spec = pipeline_spec(request, choices->schedule, *source);
  const int chunks = chunks_per_gpu(request, spec.schedule);
  if (!source->job && !source->builtin && profile.num_stages() != spec.num_profile_stages()) {
    return failed(fmt::format("{}: has {} stage(s) but --pp {}{} needs {}; is the file truncated, "
                              "or --pp wrong?",
                              profile.source, profile.num_stages(), spec.num_gpus,
                              chunks > 1 ? fmt::format(" x --chunks {}", chunks) : "",
                              spec.num_profile_stages()),
                  false);
  }
  auto planning = planning_settings(request, choices->cost_model, choices->quantization, *source);
  if (!planning) return failed(planning.error().message, true);
  auto problem = frontier::build_planning_problem(profile, spec, *planning);
  if (!problem) return failed(problem.error().message, false);
  // Validate the output location before spending time on the solve.
  if (hooks.before_solve) {
    if (auto ready = hooks.before_solve(); !ready) return failed(ready.error().message, false);
  }

  auto plan = std::make_unique<FrontierPlan>(FrontierPlan{.source = std::move(*source),
                                                          .spec = spec,
                                                          .problem = std::move(*problem),
                                                          .frontier = {},
                                                          .run = {},
                                                          .emit = {},
                                                          .timeline_point = 0});
  plan->frontier = solve_with_progress(plan->problem, choices->engine, settings.quiet);
  // Ceil promises plans never slower than all max clock; floor stays the reference's frontier.
  const bool pinned = planning->quantization == frontier::Quantization::kCeil &&
                      frontier::pin_fastest_point(plan->problem, plan->frontier);
  if (hooks.solved) hooks.solved(plan->source.profile, plan->problem);

  plan->run =
      analyze(plan->problem, plan->frontier, plan->source.profile.source, &plan->source.profile);
  plan->run.fastest_point_pinned = pinned;

  auto emit = parse_plan_points(settings.emit_plans, plan->run);
  if (!emit) return failed(emit.error().message, false);
  plan->emit = std::move(*emit);
  const std::size_t last = plan->frontier.points.size() - 1;
  if (settings.timeline_point > static_cast<long long>(last)) {
    return failed(
        fmt::format("--timeline-point: expected 0 to {}, got {}", last, settings.timeline_point),
        true);
  }
  plan->timeline_point =
      settings.timeline_point < 0 ? last : static_cast<std::size_t>(settings.timeline_point);
  return plan;
}

}  // namespace powertrain::study
