// libFuzzer target for the emulation trace reader and, on what it accepts, the whole analysis
// pipeline (collation, dedup, estimates, timeline, graph, replay, report): nothing may crash or
// trip a sanitizer, and accepted traces must satisfy the reader's invariants. The first byte picks
// whether the input is one trace or two (split at the first empty line, as ranks 0 and 1).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "emulate/emulate.h"
#include "emulate/emulation_trace.h"
#include "report/emulation_report.h"

namespace {

using powertrain::emulate::ProcessTrace;

void check_trace(const ProcessTrace& trace) {
  std::int32_t line = 1;
  for (const auto& r : trace.records) {
    if (r.line <= line) __builtin_trap();  // strictly increasing, after the process line
    line = r.line;
    if (r.device < 0 || r.device >= trace.process.devices) __builtin_trap();
    if (r.name != powertrain::emulate::kNoString && r.name >= trace.strings.size())
      __builtin_trap();
    if (r.detail != powertrain::emulate::kNoString && r.detail >= trace.strings.size()) {
      __builtin_trap();
    }
    if (r.bytes < 0 || r.tid < 0) __builtin_trap();
  }
  for (std::int32_t i : trace.comm_records) {
    if (i < 0 || static_cast<std::size_t>(i) >= trace.records.size()) __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace powertrain::emulate;
  if (size < 1) return 0;
  const bool two = (data[0] & 1) != 0;
  const std::string_view input(reinterpret_cast<const char*>(data + 1), size - 1);
  std::vector<std::string_view> parts;
  const std::size_t split = two ? input.find("\n\n") : std::string_view::npos;
  if (split != std::string_view::npos) {
    parts = {input.substr(0, split + 1), input.substr(split + 2)};
  } else {
    parts = {input};
  }
  TraceReadOptions options;
  options.max_records = 2'000;
  options.max_devices = 16;
  std::vector<ProcessTrace> traces;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    auto trace = parse_emulation_trace(parts[i], "trace-" + std::to_string(i) + ".jsonl", options);
    if (!trace.ok()) {
      if (trace.error().message.empty()) __builtin_trap();
      return 0;
    }
    check_trace(*trace);
    traces.push_back(std::move(*trace));
  }
  EmulateOptions emulate_options;
  emulate_options.gpus_per_node = 4;
  emulate_options.host_costs.comm_init_ns = 1'000;
  emulate_options.dedup = (data[0] & 2) == 0;
  auto result = emulate_traces(traces, emulate_options);
  if (result.ok()) {
    // Processes sharing a rank are joined or reduced (join_sequential_processes): never more
    // ranks than traces.
    if (result->ranks.empty() || result->ranks.size() > traces.size()) __builtin_trap();
    if (!(result->job_step_s >= 0.0)) __builtin_trap();
    (void)powertrain::report::emulation_summary_json(*result);
  } else if (result.error().message.empty()) {
    __builtin_trap();
  }
  return 0;
}
