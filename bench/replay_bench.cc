// Kineto ingest throughput on synthetic multi-rank traces written to a temporary directory.
// BM_Read times the reader alone (files → RankTraces: map, parse, link; not freeing them);
// BM_ReadBuildReplay the whole pipeline with each phase's process CPU time as a counter (issue 13:
// ≥ 1 GB/s per core for the reader on the 1 GB trace, peak memory < 2 GB).
#include <benchmark/benchmark.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/result.h"
#include "graph/graph_builder.h"
#include "sim/simulator.h"
#include "trace/kineto_reader.h"
#include "../tests/support/synthetic_trace.h"

namespace powertrain {
namespace {

namespace fs = std::filesystem;

double peak_rss_mib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;
}

// Process CPU seconds: what one core delivers, unaffected by other jobs on a shared machine.
double cpu_s() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

struct Job {
  fs::path dir;
  std::size_t bytes = 0;
};

// Writes `ranks` trace files of about `megabytes_total` together, once per size per process (the
// generator's strings are freed before any timing, so they do not count in the peak RSS of a
// first run... except through ru_maxrss, which is monotonic: see docs/benchmarks.md).
const Job& job(int ranks, std::size_t megabytes_total) {
  static std::vector<std::pair<std::size_t, Job>> jobs;
  for (const auto& [size, j] : jobs) {
    if (size == megabytes_total) return j;
  }
  Job j;
  // POWERTRAIN_REPLAY_BENCH_DIR keeps the generated job between processes, so that alternating
  // binaries read the same bytes (and a run does not spend ~30 s generating 1 GiB first).
  const char* keep = std::getenv("POWERTRAIN_REPLAY_BENCH_DIR");
  if (keep != nullptr && *keep != '\0') {
    j.dir =
        fs::path(keep) / ("job-" + std::to_string(ranks) + "-" + std::to_string(megabytes_total));
    std::error_code error;
    if (fs::exists(j.dir / ("rank" + std::to_string(ranks - 1) + ".json"), error)) {
      for (int r = 0; r < ranks; ++r) {
        j.bytes += fs::file_size(j.dir / ("rank" + std::to_string(r) + ".json"));
      }
      jobs.emplace_back(megabytes_total, j);
      return jobs.back().second;
    }
  } else {
    j.dir = fs::temp_directory_path() / ("powertrain-replay-bench-" + std::to_string(::getpid()) +
                                         "-" + std::to_string(megabytes_total));
  }
  fs::create_directories(j.dir);
  for (int r = 0; r < ranks; ++r) {
    trace::SyntheticTraceSpec spec;
    spec.rank = r;
    spec.world_size = ranks;
    spec.seed = 1;  // one job: the same seed on every rank
    // About 230 bytes of JSON per event in these traces.
    spec.target_events = static_cast<std::int64_t>(megabytes_total * 1024 * 1024 / ranks / 230);
    const std::string json = trace::make_synthetic_kineto_trace(spec);
    std::ofstream(j.dir / ("rank" + std::to_string(r) + ".json"), std::ios::binary) << json;
    j.bytes += json.size();
  }
  jobs.emplace_back(megabytes_total, j);
  return jobs.back().second;
}

struct RemoveJobs {
  ~RemoveJobs() {
    std::error_code error;
    for (const fs::directory_entry& entry :
         fs::directory_iterator(fs::temp_directory_path(), error)) {
      if (entry.path().filename().string().starts_with("powertrain-replay-bench-" +
                                                       std::to_string(::getpid()) + "-")) {
        fs::remove_all(entry.path(), error);
      }
    }
  }
} remove_jobs;

void BM_Read(benchmark::State& state) {
  const Job& j = job(8, static_cast<std::size_t>(state.range(0)));
  std::int64_t events = 0;
  for (auto _ : state) {
    auto traces = trace::read_kineto_traces({j.dir.string()});
    if (!traces) {
      state.SkipWithError(traces.error().message.c_str());
      break;
    }
    events = 0;
    for (const auto& t : *traces) events += static_cast<std::int64_t>(t.events.size());
    benchmark::DoNotOptimize(traces->data());
    state.PauseTiming();  // freeing the traces is not reading them
    traces = core::Error{};
    state.ResumeTiming();
  }
  state.counters["events"] = static_cast<double>(events);
  state.counters["json_MiB"] = static_cast<double>(j.bytes) / (1024.0 * 1024.0);
  state.SetBytesProcessed(static_cast<std::int64_t>(j.bytes) * state.iterations());
  state.counters["peak_rss_MiB"] = peak_rss_mib();
}
BENCHMARK(BM_Read)->Arg(128)->Arg(1024)->Unit(benchmark::kSecond)->Iterations(3);

void BM_ReadBuildReplay(benchmark::State& state) {
  const Job& j = job(8, static_cast<std::size_t>(state.range(0)));
  std::int64_t events = 0;
  double read_s = 0;
  double build_s = 0;
  double replay_s = 0;
  for (auto _ : state) {
    const double t0 = cpu_s();
    auto traces = trace::read_kineto_traces({j.dir.string()});
    if (!traces) {
      state.SkipWithError(traces.error().message.c_str());
      break;
    }
    const double t1 = cpu_s();
    events = 0;
    for (const auto& t : *traces) events += static_cast<std::int64_t>(t.events.size());
    auto graph = graph::build_execution_graph(*traces);
    if (!graph) {
      state.SkipWithError(graph.error().message.c_str());
      break;
    }
    const double t2 = cpu_s();
    const sim::ReplayResult result = sim::replay(*graph);
    benchmark::DoNotOptimize(result.end_ns.data());
    const double t3 = cpu_s();
    read_s += t1 - t0;
    build_s += t2 - t1;
    replay_s += t3 - t2;
  }
  const auto n = static_cast<double>(state.iterations());
  state.counters["events"] = static_cast<double>(events);
  state.counters["json_MiB"] = static_cast<double>(j.bytes) / (1024.0 * 1024.0);
  state.counters["events_per_s"] = benchmark::Counter(
      static_cast<double>(events), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["read_cpu_s"] = read_s / n;
  state.counters["build_cpu_s"] = build_s / n;
  state.counters["replay_cpu_s"] = replay_s / n;
  state.counters["read_GB_per_cpu_s"] = static_cast<double>(j.bytes) * 1e-9 / (read_s / n);
  state.counters["peak_rss_MiB"] = peak_rss_mib();
}
BENCHMARK(BM_ReadBuildReplay)->Arg(128)->Arg(1024)->Unit(benchmark::kSecond)->Iterations(1);

}  // namespace
}  // namespace powertrain

BENCHMARK_MAIN();
