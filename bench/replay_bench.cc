// Read + build + replay throughput on synthetic multi-rank Kineto traces written to a temporary
// directory (issue 4: >= 1 million events per second per core, < 4 GB peak memory for 1 GB).
#include <benchmark/benchmark.h>
#include <sys/resource.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "graph/graph_builder.h"
#include "sim/simulator.h"
#include "trace/kineto_reader.h"
#include "trace/synthetic_trace.h"

namespace powertrain {
namespace {

namespace fs = std::filesystem;

double peak_rss_mib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;
}

// Writes `ranks` trace files of about `megabytes_total` together; returns the directory and the
// number of bytes written.
std::pair<fs::path, std::size_t> write_job(int ranks, std::size_t megabytes_total) {
  const fs::path dir =
      fs::temp_directory_path() / ("powertrain-replay-bench-" + std::to_string(::getpid()) + "-" +
                                   std::to_string(megabytes_total));
  fs::create_directories(dir);
  std::size_t bytes = 0;
  for (int r = 0; r < ranks; ++r) {
    trace::SyntheticTraceSpec spec;
    spec.rank = r;
    spec.world_size = ranks;
    spec.seed = 1 + static_cast<std::uint64_t>(r);
    // About 230 bytes of JSON per event in these traces.
    spec.target_events = static_cast<std::int64_t>(megabytes_total * 1024 * 1024 / ranks / 230);
    const std::string json = trace::make_synthetic_kineto_trace(spec);
    std::ofstream(dir / ("rank" + std::to_string(r) + ".json"), std::ios::binary) << json;
    bytes += json.size();
  }
  return {dir, bytes};
}

void BM_ReadBuildReplay(benchmark::State& state) {
  const auto megabytes = static_cast<std::size_t>(state.range(0));
  const auto [dir, bytes] = write_job(8, megabytes);
  std::int64_t events = 0;
  for (auto _ : state) {
    auto traces = trace::read_kineto_traces({dir.string()});
    if (!traces) {
      state.SkipWithError(traces.error().message.c_str());
      break;
    }
    events = 0;
    for (const auto& t : *traces) events += static_cast<std::int64_t>(t.events.size());
    auto graph = graph::build_execution_graph(*traces);
    if (!graph) {
      state.SkipWithError(graph.error().message.c_str());
      break;
    }
    const sim::ReplayResult result = sim::replay(*graph);
    benchmark::DoNotOptimize(result.end_ns.data());
  }
  fs::remove_all(dir);
  state.counters["events"] = static_cast<double>(events);
  state.counters["json_MiB"] = static_cast<double>(bytes) / (1024.0 * 1024.0);
  state.counters["events_per_s"] = benchmark::Counter(
      static_cast<double>(events), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["peak_rss_MiB"] = peak_rss_mib();
}
BENCHMARK(BM_ReadBuildReplay)->Arg(128)->Arg(1024)->Unit(benchmark::kSecond)->Iterations(1);

}  // namespace
}  // namespace powertrain

BENCHMARK_MAIN();
