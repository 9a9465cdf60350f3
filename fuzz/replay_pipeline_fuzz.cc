// libFuzzer target through the whole replay pipeline: Kineto JSON -> execution graph -> replay ->
// metrics and verdict. Nothing may crash, hang or lose a task: every task of the graph must have run
// (start <= end) once the replay returns.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "graph/graph_builder.h"
#include "sim/metrics.h"
#include "sim/simulator.h"
#include "trace/kineto_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace powertrain;
  if (size < 1) return 0;
  const std::uint8_t mode = data[0];
  // Up to three ranks from one input, split at 0x1e bytes (record separators).
  std::vector<trace::RankTrace> traces;
  trace::ReadOptions options;
  options.max_events = 20'000;
  options.max_json_bytes = std::size_t{1} << 22;
  std::string_view rest(reinterpret_cast<const char*>(data + 1), size - 1);
  for (int rank = 0; rank < 3 && !rest.empty(); ++rank) {
    const std::size_t cut = (mode & 1) ? rest.find('\x1e') : std::string_view::npos;
    const std::string_view part = rest.substr(0, cut);
    rest = cut == std::string_view::npos ? std::string_view() : rest.substr(cut + 1);
    auto trace = trace::parse_kineto_json(part, "fuzz.json", rank, options);
    if (!trace) return 0;
    traces.push_back(std::move(*trace));
  }
  if (traces.empty()) return 0;
  auto graph = graph::build_execution_graph(traces);
  if (!graph) return 0;
  sim::ReplayOptions replay_options;
  if (mode & 2) {
    replay_options.collective_time = sim::ReplayOptions::CollectiveTime::kBandwidthLatency;
    replay_options.bus_bandwidth_gb_s = 100.0;
    replay_options.collective_latency_s = 1e-5;
  }
  const sim::ReplayResult result = sim::replay(*graph, replay_options);
  if (result.stalled_tasks != 0) __builtin_trap();  // a task never ran
  for (std::size_t v = 0; v < result.start_ns.size(); ++v) {
    if (result.end_ns[v] < result.start_ns[v]) __builtin_trap();
  }
  const sim::StepMetrics input = sim::metrics_of_input(*graph);
  const sim::StepMetrics replayed = sim::metrics_of_replay(*graph, result);
  const sim::ReplayAccuracy accuracy = sim::compare_replay(*graph, result, input, replayed);
  (void)sim::judge_replay(*graph, result, input, replayed, accuracy);
  return 0;
}
