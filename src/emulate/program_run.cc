#include "emulate/program_run.h"

#include <fmt/core.h>

#include <algorithm>
#include <system_error>

#include "emulate/two_pass.h"
#include "graph/execution_graph.h"

namespace powertrain::emulate {
namespace {

namespace fs = std::filesystem;

void say(const std::function<void(const std::string&)>& to, const std::string& line) {
  if (to) to(line);
}

// Names each process that did not end cleanly; 1 when there was one, else 0.
int report_failed_processes(const ProgramRunRequest& request, const LaunchResult& launched,
                            const char* pass) {
  int exit_code = 0;
  for (const auto& p : launched.processes) {
    if (!p.ok()) {
      say(request.notice,
          fmt::format("{}rank {} (pid {}) ended with {}", pass, p.rank, p.pid, p.describe()));
      exit_code = 1;
    }
  }
  return exit_code;
}

// Keeps what a failed run recorded for a look at the failure (the staging dir is removed). Never
// over an existing path: the first free "<out>.traces[-N]".
void keep_failed_traces(const ProgramRunRequest& request, const fs::path& run_dir) {
  fs::path kept = fs::path(request.out).string() + ".traces";
  std::error_code ec;
  for (int n = 2; fs::exists(fs::symlink_status(kept, ec)) && n < 1000; ++n)
    kept = fs::path(request.out).string() + fmt::format(".traces-{}", n);
  fs::rename(run_dir, kept, ec);
  if (!ec) say(request.notice, fmt::format("traces kept in {}", kept.string()));
}

// True when the run left at least one trace-*.jsonl (the interposer writes one per process at
// its first recorded call).
bool wrote_a_trace(const fs::path& run_dir) {
  std::error_code ec;
  for (fs::directory_iterator it(run_dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind("trace-", 0) == 0 && it->path().extension() == ".jsonl") return true;
  }
  return false;
}

// Pass 1 (or the only pass): runs the program under the interposer, its traces in `run_dir`.
// Returns the process exit summary (0 or 1), or the error; `options` is kept for pass 2.
core::Result<int> first_pass(const ProgramRunRequest& request, const fs::path& run_dir,
                             LaunchOptions& options) {
  auto interposer = find_interposer(request.interposer, request.interposer_near);
  if (!interposer) return interposer.error();
  options.command = request.command;
  options.gpu = request.options.gpu;
  options.nodes = request.layout.nodes;
  options.gpus_per_node = request.layout.gpus_per_node;
  options.devices_per_process = request.layout.devices_per_process;
  options.trace_dir = run_dir;
  options.interposer = *interposer;
  options.timeout_s = request.timeout_s;
  say(request.progress, fmt::format("starting {} of {}; interposer {}", request.layout.explanation,
                                    request.options.gpu, *interposer));
  if (request.two_pass) {
    // The program's own output comes from the second pass (its timings are predictions); the
    // recording pass prints with host timings, so its output is held back.
    options.on_line = [](int, bool, std::string_view) {};
    say(request.progress, "pass 1 of 2: recording (program output held back)");
  }
  auto launched = launch(options);
  if (!launched) return launched.error();
  const int exit_code = report_failed_processes(request, *launched, "");
  say(request.progress,
      fmt::format("{} process(es) finished in {:.2f} s (wall clock of the emulated run)",
                  launched->processes.size(), launched->wall_s));
  return exit_code;
}

// Pass 2: the same program, its event timings answered from the prediction of pass 1. Returns the
// process exit summary (0 or 1), or the error.
core::Result<int> second_pass(const ProgramRunRequest& request, const EmulationResult& result,
                              const LaunchOptions& first, const fs::path& staging) {
  const fs::path events_dir = staging / "predicted_events";
  if (auto written = write_predicted_events(result, events_dir); !written) return written.error();
  LaunchOptions second = first;
  second.on_line = nullptr;
  second.trace_dir = staging / "traces-pass2";
  second.event_times_dir = events_dir;
  say(request.progress,
      "pass 2 of 2: the program again; cudaEventElapsedTime reports the predicted device time of "
      "pass 1");
  auto relaunched = launch(second);
  if (!relaunched) return relaunched.error();
  const int exit_code = report_failed_processes(request, *relaunched, "pass 2: ");
  std::error_code ec;
  fs::remove_all(second.trace_dir, ec);
  return exit_code;
}

}  // namespace

core::Result<ProgramRun> run_program(const ProgramRunRequest& request, const fs::path& staging) {
  ProgramRun run;
  std::vector<std::string> trace_paths = request.traces;
  fs::path run_dir;
  LaunchOptions launch_options;
  if (!request.command.empty()) {
    run_dir = staging / "traces";
    auto ran = first_pass(request, run_dir, launch_options);
    if (!ran) return ran.error();
    run.exit_code = *ran;
    trace_paths = {run_dir.string()};
    if (!wrote_a_trace(run_dir)) {
      return core::Error{
          "the program wrote no trace: it made no CUDA runtime, driver or library call the "
          "emulator records (a program without GPU work, a CUDA runtime linked statically or "
          "loaded where the interposer does not see it, or processes that ended before their "
          "first call), so there is nothing to predict"};
    }
  }
  say(request.progress, "analysing traces ...");
  auto result = emulate_trace_paths(trace_paths, request.options);
  if (!result) {
    if (!run_dir.empty()) keep_failed_traces(request, run_dir);
    return result.error();
  }
  run.result = std::move(*result);
  if (request.two_pass && !run_dir.empty() && run.result.ranks_from_several_processes) {
    // Each process of pass 2 reads its predicted times by RANK; processes sharing a rank would
    // read each other's.
    say(request.progress,
        "pass 2 skipped: several processes share a rank (see warnings), so their event times "
        "cannot be told apart; the prediction is pass 1's");
    graph::add_warning(run.result.warnings,
                       "--two-pass skipped: several processes share a rank, and pass 2 reads "
                       "predicted event times by RANK",
                       "the prediction and the written files are pass 1's");
  } else if (request.two_pass && !run_dir.empty()) {
    auto second = second_pass(request, run.result, launch_options, staging);
    if (!second) return second.error();
    run.exit_code = std::max(run.exit_code, *second);
  }
  if (!run_dir.empty() && !request.keep_traces) {
    std::error_code ec;
    fs::remove_all(run_dir, ec);
  }
  run.kept_traces = !run_dir.empty() && request.keep_traces;
  return run;
}

}  // namespace powertrain::emulate
