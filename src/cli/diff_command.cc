// `powertrain diff A B`: compares two traces (or sets of ranks) by op and GPU event name, like
// HTA's TraceDiff; writes summary.json and diff.csv.
#include <fmt/core.h>

#include "analyze/diff.h"
#include "cli/commands.h"
#include "cli/flags.h"
#include "core/atomic_output.h"
#include "replay/replay.h"
#include "report/analysis_document.h"

namespace powertrain::cli {
namespace {

struct DiffFlags {
  std::string a;
  std::string b;
  std::string out = "powertrain-diff";
  int top = 20;
  bool force = false;
};

int run_diff(const DiffFlags& flags) {
  const char* command = "diff";
  auto output = core::AtomicOutputDirectory::create(flags.out, output_policy(flags.force));
  if (!output) return fail(command, output.error().message);
  auto a = replay::read_traces({flags.a});
  if (!a) return fail(command, a.error().message);
  auto b = replay::read_traces({flags.b});
  if (!b) return fail(command, b.error().message);
  const analyze::TraceDiff diff = analyze::diff_traces(a->ranks, b->ranks);
  if (auto w = output->write_file("summary.json",
                                  report::diff_summary_json(diff, flags.a, flags.b, flags.top));
      !w)
    return fail(command, w.error().message);
  if (auto w = output->write_file("diff.csv", report::diff_csv(diff)); !w)
    return fail(command, w.error().message);
  if (auto c = output->commit(); !c) return fail(command, c.error().message);
  fmt::print("{}", report::diff_console(diff, flags.top, output->target().string()));
  return 0;
}

}  // namespace

Action add_diff_command(CLI::App& app) {
  auto flags = std::make_shared<DiffFlags>();
  app.add_option("a", flags->a, "Baseline: a Kineto trace, a directory of ranks or a .tar.gz")
      ->required();
  app.add_option("b", flags->b, "The trace to compare with the baseline")->required();
  app.add_option("--out", flags->out,
                 "Output directory: new, empty or an earlier powertrain output (default "
                 "powertrain-diff)");
  add_option_with_aliases(app, "--top", {}, flags->top, "Changes listed (default 20)",
                          integer_in(1, 1'000'000));
  add_force_flag(app, flags->force);
  add_input_limit_flag(app);
  return [flags]() { return run_diff(*flags); };
}

}  // namespace powertrain::cli
