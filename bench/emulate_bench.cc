// Issue 5's deduplication claim: N data-parallel ranks of one program are predicted in about the
// time of one (one representative simulated), with the result of simulating all of them. Also the
// trace reader's throughput. Traces are generated in memory (emulate/synthetic_programs.h).
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "emulate/emulate.h"
#include "emulate/synthetic_programs.h"

namespace powertrain {
namespace {

emulate::DataParallelSpec bench_spec() {
  emulate::DataParallelSpec spec;
  spec.layers = 32;
  spec.iterations = 5;
  return spec;
}

std::vector<std::string> texts_for(int ranks) {
  std::vector<std::string> texts;
  for (int r = 0; r < ranks; ++r)
    texts.push_back(emulate::data_parallel_program(r, ranks, bench_spec()));
  return texts;
}

std::vector<emulate::ProcessTrace> traces_for(int ranks) {
  std::vector<emulate::ProcessTrace> traces;
  const auto texts = texts_for(ranks);
  for (std::size_t r = 0; r < texts.size(); ++r) {
    traces.push_back(
        *emulate::parse_emulation_trace(texts[r], "trace-" + std::to_string(r) + ".jsonl"));
  }
  return traces;
}

// Collation, dedup, estimates, graph build, replay and report (everything after reading).
void BM_EmulateDataParallel(benchmark::State& state) {
  const int ranks = static_cast<int>(state.range(0));
  const bool dedup = state.range(1) != 0;
  const auto traces = traces_for(ranks);
  emulate::EmulateOptions options;
  options.dedup = dedup;
  options.gpus_per_node = 8;
  double step_s = 0.0;
  std::int64_t records = 0;
  std::size_t simulated = 0;
  for (auto _ : state) {
    auto result = emulate::emulate_traces(traces, options);
    if (!result) {
      state.SkipWithError(result.error().message.c_str());
      break;
    }
    step_s = result->job_step_s;
    records = result->records;
    simulated = result->graph.ranks.size();
    benchmark::DoNotOptimize(result->energy_j_per_step);
  }
  state.counters["predicted_step_ms"] = step_s * 1e3;
  state.counters["records"] = static_cast<double>(records);
  state.counters["simulated_ranks"] = static_cast<double>(simulated);
}
BENCHMARK(BM_EmulateDataParallel)
    ->ArgsProduct({{1, 8, 16, 32, 64}, {1, 0}})
    ->ArgNames({"ranks", "dedup"})
    ->Unit(benchmark::kMillisecond);

void BM_ParseTraces(benchmark::State& state) {
  const auto texts = texts_for(static_cast<int>(state.range(0)));
  std::size_t bytes = 0, records = 0;
  for (const auto& t : texts) bytes += t.size();
  for (auto _ : state) {
    records = 0;
    for (std::size_t r = 0; r < texts.size(); ++r) {
      auto trace = emulate::parse_emulation_trace(texts[r], "trace.jsonl");
      records += trace->records.size();
    }
    benchmark::DoNotOptimize(records);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * bytes));
  state.counters["records_per_s"] = benchmark::Counter(
      static_cast<double>(records), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_ParseTraces)->Arg(64)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace powertrain

BENCHMARK_MAIN();
