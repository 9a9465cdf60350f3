// `powertrain lookup`: the plan to deploy when a straggler sets the job's iteration time.
#include <fmt/core.h>

#include "cli/commands.h"
#include "cli/flags.h"
#include "core/atomic_output.h"
#include "report/frontier_report.h"
#include "report/plan_store.h"

namespace powertrain::cli {
namespace {

struct LookupFlags {
  std::string frontier_dir;
  double straggler_time_s = -1.0;
  double slowdown = -1.0;
  std::string format = "py";
  std::string out;
  bool force = false;
};

int run_lookup(const LookupFlags& flags) {
  const char* kCommand = "lookup";
  if ((flags.straggler_time_s > 0.0) == (flags.slowdown > 0.0)) {
    return usage_error(
        kCommand, "give exactly one of --straggler-time-s (s, > 0) or --slowdown (T'/T_min, >= 1)");
  }
  if (flags.format != "py" && flags.format != "json") {
    return usage_error(kCommand,
                       fmt::format("--format: expected py or json, got '{}'", flags.format));
  }
  if (!flags.out.empty()) {
    if (auto checked = core::check_output_file(flags.out, output_policy(flags.force)); !checked)
      return fail(kCommand, checked.error().message);
  }
  auto stored = report::read_frontier_directory(flags.frontier_dir);
  if (!stored) return fail(kCommand, stored.error().message);
  const double t_min = stored->points.back().time_s;
  const double straggler =
      flags.straggler_time_s > 0.0 ? flags.straggler_time_s : flags.slowdown * t_min;
  const report::LookupDecision decision = report::decide(*stored, straggler);
  const report::StoredPoint& point = stored->points[decision.point];
  const auto plan = stored->plan_at(decision.point);
  const std::string text =
      flags.format == "py" ? report::zeus_plan_py(plan, point.time_s, point.energy_j,
                                                  point.realized_time_s, point.realized_energy_j)
                           : report::plan_json(plan, decision.point, point.time_s, point.energy_j,
                                               point.realized_time_s, point.realized_energy_j);
  fmt::print(stderr,
             "straggler iteration time T' = {:.4f} s ({:.3f} x T_min = {:.4f} s); T_opt = min(T*, "
             "T') = {:.4f} s\n",
             straggler, straggler / t_min, t_min, decision.target_time_s);
  if (decision.faster_than_t_min) {
    fmt::print(stderr, "note: T' is below T_min; deploying the fastest plan (T_min)\n");
  }
  fmt::print(stderr,
             "deploy point {}: planned {:.4f} s, {:.1f} J; realized with measured clocks {:.4f} s, "
             "{:.1f} J\n",
             decision.point, point.time_s, point.energy_j, point.realized_time_s,
             point.realized_energy_j);
  if (flags.out.empty()) {
    fmt::print("{}", text);
  } else {
    if (auto written = core::write_file_atomically(flags.out, text, output_policy(flags.force));
        !written) {
      return fail(kCommand, written.error().message);
    }
    fmt::print(stderr, "wrote {}\n", flags.out);
  }
  return 0;
}

}  // namespace

Action add_lookup_command(CLI::App& app) {
  auto flags = std::make_shared<LookupFlags>();
  app.add_option("--frontier", flags->frontier_dir, "Directory written by `powertrain frontier`")
      ->required();
  add_option_with_aliases(app, "--straggler-time-s", {"--straggler-time"}, flags->straggler_time_s,
                          "The straggler's iteration time T', s", number_in(0.0, 1e7, true));
  add_option_with_aliases(app, "--slowdown", {}, flags->slowdown,
                          "The straggler's slowdown T'/T_min (>= 1)", number_in(1.0, 1e3));
  app.add_option("--format", flags->format, "py (Zeus freqs_pipeline file, default) or json");
  app.add_option("--out", flags->out, "Write the plan here instead of standard output");
  add_force_flag(app, flags->force);
  add_input_limit_flag(app);
  return [flags]() { return run_lookup(*flags); };
}

}  // namespace powertrain::cli
