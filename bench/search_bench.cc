// The exhaustive configuration grid of Maya's knob table (issue 17 must-show 1) with the model
// backend: GPT-3 2.7B (global batch 192) on 8, 16 and 64 H100s and GPT-3 18.4B (global batch 512,
// examples/gpt3_18.4b.json) on 64 and 128, pruned as by default, on 2 threads; and GPT-3 175B on
// 1,024 A100s (must-show 2). One iteration each: a run takes seconds to a minute.
#include <benchmark/benchmark.h>

#include <string>

#include "search/search.h"

namespace powertrain::search {
namespace {

SearchSpec spec_for(const std::string& model, const std::string& gpu, int gpus, int batch) {
  SearchSpec spec = default_search_spec();
  spec.source = "search_bench";
  spec.model = model;
  spec.gpu = gpu;
  spec.num_gpus = gpus;
  spec.global_batch = batch;
  spec.algorithm = Algorithm::kGrid;
  return spec;
}

void run(benchmark::State& state, const SearchSpec& spec) {
  SearchOptions options;
  options.threads = 2;
  SearchResult result;
  for (auto _ : state) {
    result = run_search(spec, options);
    benchmark::DoNotOptimize(result);
  }
  state.counters["planned"] = static_cast<double>(result.planned);
  state.counters["pruned_bound"] = static_cast<double>(result.pruned_bound);
  state.counters["valid"] = static_cast<double>(result.decided);
}

void BM_SearchGrid_GPT3_2_7B_H100(benchmark::State& state) {
  run(state, spec_for("gpt3-2.7b", "h100-sxm", static_cast<int>(state.range(0)), 192));
}
BENCHMARK(BM_SearchGrid_GPT3_2_7B_H100)
    ->Arg(8)
    ->Arg(16)
    ->Arg(64)
    ->Iterations(1)
    ->Unit(benchmark::kSecond)
    ->UseRealTime();

void BM_SearchGrid_GPT3_18_4B_H100(benchmark::State& state) {
  run(state, spec_for(std::string(POWERTRAIN_SOURCE_DIR) + "/examples/gpt3_18.4b.json", "h100-sxm",
                      static_cast<int>(state.range(0)), 512));
}
BENCHMARK(BM_SearchGrid_GPT3_18_4B_H100)
    ->Arg(64)
    ->Arg(128)
    ->Iterations(1)
    ->Unit(benchmark::kSecond)
    ->UseRealTime();

void BM_SearchGrid_GPT3_175B_A100_1024(benchmark::State& state) {
  run(state, spec_for("gpt3-175b", "a100-sxm", 1024, 1536));
}
BENCHMARK(BM_SearchGrid_GPT3_175B_A100_1024)
    ->Iterations(1)
    ->Unit(benchmark::kSecond)
    ->UseRealTime();

}  // namespace
}  // namespace powertrain::search

BENCHMARK_MAIN();
