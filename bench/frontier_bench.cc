// Speed of the frontier solver on the real Perseus profiles (../shared/data), the built-in example
// and the built-in GPT-3 175B model at scale (issue 12). Single core. Counters: frontier points,
// solver steps, µs per step, peak live heap of the solve, peak resident memory of the process.
// Each real-data and model case also runs the reference engine (SolverOptions::incremental =
// false, the pre-issue-12 step) for before/after numbers on the same machine.
#include <benchmark/benchmark.h>
#include <malloc.h>
#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <new>

#include "core/csv.h"
#include "frontier/problem.h"
#include "frontier/solver.h"
#include "profile/example_profile.h"
#include "profile/model_profile.h"

// Live-heap accounting for the "peak_heap_MiB" counter: peak RSS is monotonic over a process that
// runs many cases, so it cannot tell one case's memory from the largest earlier one's.
namespace {
std::atomic<long long> g_live_bytes{0};
std::atomic<long long> g_peak_bytes{0};
void note_alloc(void* p) {
  if (p == nullptr) return;
  const long long now = g_live_bytes += static_cast<long long>(malloc_usable_size(p));
  long long peak = g_peak_bytes.load(std::memory_order_relaxed);
  while (now > peak && !g_peak_bytes.compare_exchange_weak(peak, now)) {
  }
}
void* counted_alloc(std::size_t size) {
  void* p = std::malloc(size == 0 ? 1 : size);
  if (p == nullptr) throw std::bad_alloc();
  note_alloc(p);
  return p;
}
void counted_free(void* p) noexcept {
  if (p == nullptr) return;
  g_live_bytes -= static_cast<long long>(malloc_usable_size(p));
  std::free(p);
}
}  // namespace

void* operator new(std::size_t size) { return counted_alloc(size); }
void* operator new[](std::size_t size) { return counted_alloc(size); }
void operator delete(void* p) noexcept { counted_free(p); }
void operator delete[](void* p) noexcept { counted_free(p); }
void operator delete(void* p, std::size_t) noexcept { counted_free(p); }
void operator delete[](void* p, std::size_t) noexcept { counted_free(p); }

namespace {

using namespace powertrain;
namespace fs = std::filesystem;

double process_cpu_s() {
  timespec now{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + 1e-9 * static_cast<double>(now.tv_nsec);
}

double peak_rss_mib() {
  struct rusage usage {};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss / 1024.0;
}

// Solves `problem` once per benchmark iteration; `reference` selects the pre-issue-12 engine.
void solve_case(benchmark::State& state, const frontier::PlanningProblem& problem, bool reference) {
  frontier::SolverOptions options;
  options.incremental = !reference;
  std::size_t points = 0, steps = 0;
  long long heap_peak = 0;
  double cpu_s = 0.0;
  for (auto _ : state) {
    const double cpu_before = process_cpu_s();
    const long long before = g_live_bytes.load();
    g_peak_bytes = before;
    const frontier::Frontier result = frontier::solve_frontier(problem, options);
    heap_peak = std::max(heap_peak, g_peak_bytes.load() - before);
    points = result.points.size();
    steps = result.stats.iterations;
    cpu_s += process_cpu_s() - cpu_before;
    benchmark::DoNotOptimize(result.points.data());
  }
  state.counters["points"] = static_cast<double>(points);
  state.counters["nodes"] = problem.dag.size();
  state.counters["cpu_us_per_step"] =
      cpu_s * 1e6 / static_cast<double>(std::max<std::size_t>(1, steps) * state.iterations());
  state.counters["peak_heap_MiB"] = heap_peak / (1024.0 * 1024.0);
  state.counters["peak_rss_MiB"] = peak_rss_mib();
}

void run_case(benchmark::State& state, const core::Result<profile::Profile>& profile, int stages,
              int microbatches, double p_blocking_w, double unit_time_s, bool reference = false,
              frontier::Quantization quantization = frontier::Quantization::kCeil) {
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
  settings.quantization = quantization;
  auto problem = frontier::build_planning_problem(*profile, spec, settings);
  if (!problem) {
    state.SkipWithError(problem.error().message.c_str());
    return;
  }
  solve_case(state, *problem, reference);
}

core::Result<profile::Profile> perseus_profile(const char* name) {
  const fs::path path =
      fs::path(POWERTRAIN_SOURCE_DIR) / ".." / "shared" / "data" / "perseus" / name;
  return profile::read_profile(path.string());
}

void BM_Example_4x8(benchmark::State& state) {
  auto table = core::parse_csv(profile::example_profile_csv(), "example");
  run_case(state, profile::parse_profile(*table), 4, 8, 120.0, 1e-3);
}
BENCHMARK(BM_Example_4x8)->Unit(benchmark::kMillisecond);

// Argument 0: microbatches; argument 1: 1 = reference engine.
void BM_A100_GPT3_175B(benchmark::State& state) {
  run_case(state, perseus_profile("gpt3-175b+a100_sxm_bf16.csv"), 8,
           static_cast<int>(state.range(0)), 83.64, 1e-3, state.range(1) != 0);
}
BENCHMARK(BM_A100_GPT3_175B)
    ->ArgsProduct({{12, 24, 48, 96}, {0, 1}})
    ->ArgNames({"mb", "reference"})
    ->Unit(benchmark::kSecond)
    ->Iterations(1);

// The issue-12 target case: the golden file's frontier (floor quantization, as the reference
// solver), `powertrain frontier --profile ... --pp 8 --microbatches 96 --quantization floor`.
void BM_A100_GPT3_175B_floor(benchmark::State& state) {
  run_case(state, perseus_profile("gpt3-175b+a100_sxm_bf16.csv"), 8,
           static_cast<int>(state.range(0)), 83.64, 1e-3, state.range(1) != 0,
           frontier::Quantization::kFloor);
}
BENCHMARK(BM_A100_GPT3_175B_floor)
    ->ArgsProduct({{96}, {0, 1}})
    ->ArgNames({"mb", "reference"})
    ->Unit(benchmark::kSecond)
    ->Iterations(1);

void BM_A40_GPT3_175B_tau100us(benchmark::State& state) {
  run_case(state, perseus_profile("gpt3-175b+a40_bf16.csv"), 8, static_cast<int>(state.range(0)),
           70.38, 1e-4, state.range(1) != 0);
}
BENCHMARK(BM_A40_GPT3_175B_tau100us)
    ->ArgsProduct({{12, 96}, {0}})
    ->ArgNames({"mb", "reference"})
    ->Unit(benchmark::kSecond)
    ->Iterations(1);

// The built-in GPT-3 175B model on A100 SXM, TP 8, min-imbalance partition, modelled profile at all
// 81 clocks, τ = 1 ms, as `powertrain frontier --model gpt3-175b --gpu a100-sxm --tp 8 --pp S
// --microbatches M`. Arguments: stages, microbatches, 1 = reference engine.
void BM_Model_GPT3_175B_A100(benchmark::State& state) {
  profile::ModelJobRequest request;
  request.model = "gpt3-175b";
  request.gpu = "a100-sxm";
  request.tp = 8;
  request.pp = static_cast<int>(state.range(0));
  request.microbatches = static_cast<int>(state.range(1));
  auto job = profile::build_model_job(request);
  if (!job) {
    state.SkipWithError(job.error().message.c_str());
    return;
  }
  run_case(state, profile::generate_profile(*job), request.pp, request.microbatches,
           job->gpu.p_blocking_w, 1e-3, state.range(2) != 0);
}
// The issue-12 target and the scaling table (stages × microbatches, 8 microbatches per stage).
BENCHMARK(BM_Model_GPT3_175B_A100)
    ->ArgNames({"pp", "mb", "reference"})
    ->Args({16, 128, 0})
    ->Args({16, 128, 1})
    ->Args({4, 32, 0})
    ->Args({4, 32, 1})
    ->Args({8, 64, 0})
    ->Args({8, 64, 1})
    ->Args({32, 256, 0})
    ->Args({64, 512, 0})
    ->Unit(benchmark::kSecond)
    ->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
