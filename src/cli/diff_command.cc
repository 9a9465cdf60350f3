// `powertrain diff A B`: compares two traces (or sets of ranks) by op and GPU event name, like
// HTA's TraceDiff; writes summary.json and diff.csv.
#include <fmt/core.h>

#include <nlohmann/json.hpp>

#include "analyze/diff.h"
#include "cli/commands.h"
#include "cli/flags.h"
#include "core/atomic_output.h"
#include "replay/replay.h"
#include "report/analysis_document.h"
#include "report/csv.h"

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
  nlohmann::json doc = report::diff_json(diff, flags.top);
  doc["a"] = flags.a;
  doc["b"] = flags.b;
  if (auto w = output->write_file("summary.json", doc.dump(2) + "\n"); !w)
    return fail(command, w.error().message);
  std::string csv =
      "kind,name,status,count_a,count_b,total_a_s,total_b_s,mean_a_s,mean_b_s,delta_s\n";
  for (const auto& r : diff.rows)
    csv += fmt::format("{},{},{},{},{},{:.9f},{:.9f},{:.9f},{:.9f},{:.9f}\n", r.kind,
                       report::csv_field(r.name), analyze::to_string(r.status), r.count_a,
                       r.count_b, r.total_a_ns * 1e-9, r.total_b_ns * 1e-9, r.mean_a_ns() * 1e-9,
                       r.mean_b_ns() * 1e-9, r.delta_ns() * 1e-9);
  if (auto w = output->write_file("diff.csv", csv); !w) return fail(command, w.error().message);
  if (auto c = output->commit(); !c) return fail(command, c.error().message);

  fmt::print(
      "powertrain diff: A {} rank(s), B {} rank(s); {} names, {} added in B, {} removed "
      "(measured)\n",
      diff.ranks_a, diff.ranks_b, diff.rows.size(), diff.added, diff.removed);
  fmt::print("  GPU time A {:.3f} ms, B {:.3f} ms; op time A {:.3f} ms, B {:.3f} ms\n",
             diff.gpu_total_a_ns * 1e-6, diff.gpu_total_b_ns * 1e-6, diff.op_total_a_ns * 1e-6,
             diff.op_total_b_ns * 1e-6);
  fmt::print("  {:<4} {:<8} {:<56} {:>8} {:>8} {:>11} {:>11} {:>11}\n", "kind", "status", "name",
             "count A", "count B", "total A ms", "total B ms", "delta ms");
  for (std::size_t i = 0; i < diff.rows.size() && static_cast<int>(i) < flags.top; ++i) {
    const auto& r = diff.rows[i];
    std::string name = r.name.size() > 56 ? r.name.substr(0, 53) + "..." : r.name;
    fmt::print("  {:<4} {:<8} {:<56} {:>8} {:>8} {:>11.3f} {:>11.3f} {:>+11.3f}\n", r.kind,
               analyze::to_string(r.status), name, r.count_a, r.count_b, r.total_a_ns * 1e-6,
               r.total_b_ns * 1e-6, r.delta_ns() * 1e-6);
  }
  fmt::print("  files         {}/: summary.json diff.csv\n", output->target().string());
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
