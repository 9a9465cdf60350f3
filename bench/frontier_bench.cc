// Speed of the frontier solver on the real Perseus profiles (../shared/data) and the built-in
// example. Single core. Counters: frontier points, solver seconds, peak resident memory.
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <filesystem>

#include "core/csv.h"
#include "frontier/example_profile.h"
#include "frontier/problem.h"
#include "frontier/solver.h"

namespace {

using namespace powertrain;
namespace fs = std::filesystem;

double peak_rss_mib() {
  struct rusage usage {};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss / 1024.0;
}

void run_case(benchmark::State& state, const core::Result<frontier::Profile>& profile, int stages,
              int microbatches, double p_blocking_w, double unit_time_s) {
  if (!profile) {
    state.SkipWithError(("profile unavailable: " + profile.error().message).c_str());
    return;
  }
  pipeline::PipelineSpec spec;
  spec.num_gpus = stages;
  spec.num_microbatches = microbatches;
  frontier::PlanningSettings settings;
  settings.unit_time_s = unit_time_s;
  settings.p_blocking_w = p_blocking_w;
  auto problem = frontier::build_planning_problem(*profile, spec, settings);
  if (!problem) {
    state.SkipWithError(problem.error().message.c_str());
    return;
  }
  std::size_t points = 0;
  for (auto _ : state) {
    const frontier::Frontier result = frontier::solve_frontier(*problem);
    points = result.points.size();
    benchmark::DoNotOptimize(result.points.data());
  }
  state.counters["points"] = static_cast<double>(points);
  state.counters["peak_rss_MiB"] = peak_rss_mib();
}

core::Result<frontier::Profile> perseus_profile(const char* name) {
  const fs::path path =
      fs::path(POWERTRAIN_SOURCE_DIR) / ".." / "shared" / "data" / "perseus" / name;
  return frontier::read_profile(path.string());
}

void BM_Example_4x8(benchmark::State& state) {
  auto table = core::parse_csv(frontier::example_profile_csv(), "example");
  run_case(state, frontier::parse_profile(*table), 4, 8, 120.0, 1e-3);
}
BENCHMARK(BM_Example_4x8)->Unit(benchmark::kMillisecond);

void BM_A100_GPT3_175B(benchmark::State& state) {
  run_case(state, perseus_profile("gpt3-175b+a100_sxm_bf16.csv"), 8,
           static_cast<int>(state.range(0)), 83.64, 1e-3);
}
BENCHMARK(BM_A100_GPT3_175B)
    ->Arg(12)
    ->Arg(24)
    ->Arg(48)
    ->Arg(96)
    ->Unit(benchmark::kSecond)
    ->Iterations(1);

void BM_A40_GPT3_175B_tau100us(benchmark::State& state) {
  run_case(state, perseus_profile("gpt3-175b+a40_bf16.csv"), 8, static_cast<int>(state.range(0)),
           70.38, 1e-4);
}
BENCHMARK(BM_A40_GPT3_175B_tau100us)->Arg(12)->Arg(96)->Unit(benchmark::kSecond)->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
