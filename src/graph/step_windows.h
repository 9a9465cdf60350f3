// Step windows: which ProfilerStep#N spans of a rank's trace are training steps, and how many
// steps they stand for. One source of truth for the replay's step time (RankInfo::profiler_steps,
// step_count) and analyze's step window and step list. Rules: docs/replay.md "Step window".
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "trace/trace_events.h"

namespace powertrain::graph {

struct StepWindows {
  // Trace event indices of the spans that are steps, in start order.
  std::vector<std::uint32_t> events;
  // Steps they stand for: per host thread, kept spans plus steps whose span is missing; the
  // rank's count is its threads' largest (threads or processes of one file step together).
  std::int32_t step_count = 0;
  // What the rules decided: (warning kind, example), for the graph's warnings.
  std::vector<std::pair<std::string, std::string>> notes;
};

/// True for an event that is a ProfilerStep#N span (user_annotation, or cpu_op as older PyTorch
/// writes it).
bool is_step_span(const trace::RankTrace& trace, const trace::TraceEvent& e);

/// The rank's step windows (empty when the trace has no ProfilerStep spans).
StepWindows step_windows(const trace::RankTrace& trace);

}  // namespace powertrain::graph
