// Interning of event names and the per-name facts the reader needs (NCCL, launches, syncs),
// plus the small ParseState and WarningSink members.
#include <fmt/format.h>

#include "trace/kineto_json.h"
#include "trace/kineto_parser.h"
#include "trace/kineto_values.h"

namespace powertrain::trace::detail {

void WarningSink::add_overflow(std::string_view kind, std::int64_t count) {
  for (TraceWarning& warning : warnings_) {
    if (warning.kind == "other warnings") {
      warning.count += count;
      return;
    }
  }
  warnings_.push_back(TraceWarning{"other warnings", std::string(kind), count});
}

ParseState::ParseState(std::string source, int default_rank, const ReadOptions& read_options)
    : options(read_options) {
  trace.source = std::move(source);
  trace.rank = default_rank;
}

std::uint32_t intern_name(ParseState& state, std::string_view raw) {
  std::string_view key = raw;
  std::string decoded;
  if (raw.find('\\') != std::string_view::npos) {
    if (!json_unescape(raw, &decoded)) {
      state.warnings.add("name with an invalid JSON escape (kept as written)",
                         [&] { return clip(raw); });
      decoded = std::string(raw);
    }
    key = decoded;
  }
  if (const auto it = state.name_index.find(key); it != state.name_index.end()) return it->second;
  if (!decoded.empty()) key = state.unescaped.emplace_back(std::move(decoded));
  const auto index = static_cast<std::uint32_t>(state.trace.names.size());
  state.name_index.emplace(key, index);
  state.trace.names.emplace_back(key);

  std::uint16_t flags = 0;
  const auto starts = [&](std::string_view prefix) {
    return key.substr(0, prefix.size()) == prefix;
  };
  if (starts("nccl")) flags |= kNameNcclKernel;
  if (starts("nccl:")) flags |= kNameNcclAnnotation;
  if (key == "record_param_comms") flags |= kNameRecordParamComms;
  if (starts("ProfilerStep#")) flags |= kNameProfilerStep;
  if (key == "INVALID") flags |= kNameInvalid;
  for (std::string_view prefix :
       {"cudaLaunch", "cuLaunch", "cudaGraphLaunch", "cuGraphLaunch", "cudaMemcpy", "cuMemcpy",
        "cudaMemset", "cuMemset", "hipLaunch", "hipExtLaunch", "hipExtModuleLaunch",
        "hipModuleLaunch", "hipGraphLaunch", "hipMemcpy", "hipMemset"}) {
    if (starts(prefix)) flags |= kNameLaunch;
  }
  for (std::string_view event_api :
       {"cudaEventRecord", "cudaEventRecordWithFlags", "cudaStreamWaitEvent",
        "cudaEventSynchronize", "cudaEventQuery", "cuEventRecord", "cuEventRecordWithFlags",
        "cuStreamWaitEvent", "cuEventSynchronize", "cuEventQuery", "hipEventRecord",
        "hipStreamWaitEvent", "hipEventSynchronize", "hipEventQuery"}) {
    if (key == event_api) flags |= kNameEventApi;
  }
  if (key == "cudaStreamWaitEvent" || key == "cuStreamWaitEvent" || key == "hipStreamWaitEvent") {
    flags |= kNameStreamWait;
  }
  if (key == "cudaStreamSynchronize" || key == "cuStreamSynchronize" ||
      key == "hipStreamSynchronize") {
    flags |= kNameStreamSync;
  }
  if (key == "cudaEventSynchronize" || key == "cuEventSynchronize" ||
      key == "hipEventSynchronize") {
    flags |= kNameEventSync;
  }
  if (key == "cudaDeviceSynchronize" || key == "cuCtxSynchronize" ||
      key == "hipDeviceSynchronize") {
    flags |= kNameContextSync;
  }
  state.name_flags.push_back(flags);
  return index;
}

}  // namespace powertrain::trace::detail
