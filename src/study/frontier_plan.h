// The `frontier` flow as one call: load the profile (CSV, built-in example or a model's job),
// build the planning problem, solve it and analyse the frontier, with every check of what was
// asked for. The caller writes the result (report/frontier_report.h).
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/flow_error.h"
#include "core/result.h"
#include "frontier/problem.h"
#include "frontier/solver.h"
#include "pipeline/schedule.h"
#include "profile/model_profile.h"
#include "study/frontier_inputs.h"
#include "study/frontier_run.h"

namespace powertrain::study {

/// What is asked for, as plain values (the command line's).
struct FrontierSettings {
  std::string profile;    // CSV path; empty: the built-in example (or the job)
  bool pp_given = false;  // job.pp is the pipeline degree
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
  std::string emit_plans = "tstar,tmin,stragglers";
  long long timeline_point = -1;  // < 0: the last point (T_min)
  std::string max_flow = "dinic";
  profile::ModelJobRequest job;  // used when model_mode
  bool model_mode = false;
  bool quiet = false;  // no progress line while solving
};

/// Where the caller steps in: each may be empty.
struct FrontierHooks {
  std::function<core::Status()> before_load;  // e.g. check the output directory; errors stop
  std::function<void(const ProfileSource&)> profile_loaded;  // e.g. print the modelled job
  std::function<core::Status()> before_solve;  // e.g. create the output directory; errors stop
  std::function<void(const profile::Profile&, const frontier::PlanningProblem&)> solved;
};

/// A solved and analysed frontier; `run` points into `problem` and `frontier` (so the plan is
/// handed out behind a pointer and never moves).
struct FrontierPlan {
  ProfileSource source;
  pipeline::PipelineSpec spec;
  frontier::PlanningProblem problem;
  frontier::Frontier frontier;
  FrontierRun run;
  std::vector<std::size_t> emit;   // points that get plan files
  std::size_t timeline_point = 0;  // the point whose timeline is written
};

/// Plans the frontier `settings` ask for: checks, before_load, load the profile, profile_loaded,
/// build the problem, before_solve, solve (a progress line unless quiet; with ceil quantization
/// the fastest point pinned to all max clock), solved, analyse, pick the points to write.
core::FlowResult<std::unique_ptr<FrontierPlan>> plan_frontier(const FrontierSettings& settings,
                                                              const FrontierHooks& hooks);

}  // namespace powertrain::study
