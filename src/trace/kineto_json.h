// simdjson-facing internals of the Kineto reader: the per-event walk (kineto_json.cc) used by the
// document-level, windowed walk (kineto_document.cc).
#pragma once

#include <simdjson.h>

#include <cstddef>
#include <string>
#include <string_view>

#include "trace/kineto_parser.h"

namespace powertrain::trace::detail {

namespace od = simdjson::ondemand;
using simdjson::error_code;
using simdjson::SUCCESS;

/// How a walk over (part of) the traceEvents array ended.
struct EventsOutcome {
  error_code error = SUCCESS;  // SUCCESS: the array's closing bracket was reached
  bool too_many = false;       // ReadOptions::max_events hit
  std::size_t committed = 0;   // elements handled in this walk (not counting a skipped first)
  // Where a later walk must resume — the start of an element, which was already handled when
  // restart_skips_first is true. nullptr: no element was reached.
  const char* restart = nullptr;
  bool restart_skips_first = false;
};

/// Walks the elements of a traceEvents array, committing each event into `state`. With
/// `skip_first`, the first element was handled by a previous walk and is skipped.
EventsOutcome parse_events(od::array& events, ParseState& state, bool skip_first);

inline bool key_is(const od::raw_json_string& key, std::string_view text) {
  return key.unsafe_is_equal(text);
}

/// The first 120 characters of `text`, for examples in messages.
inline std::string clip(std::string_view text) {
  constexpr std::size_t kMax = 120;
  if (text.size() <= kMax) return std::string(text);
  return std::string(text.substr(0, kMax)) + "...";
}

}  // namespace powertrain::trace::detail
