// Size limits for outside data, in one place: every reader checks against these before it keeps
// more bytes, so a wrong path (/dev/zero, a gzip bomb) ends with a one-line error, not with the
// machine out of memory. The CLI raises them with --max-input-mb.
#pragma once

#include <cstddef>
#include <string>

namespace powertrain::core {

struct InputLimits {
  /// Text inputs: profile CSVs, model JSON, kernel tables, plan stores.
  std::size_t max_text_bytes = std::size_t{256} << 20;
  /// One trace document (Kineto JSON or an emulation trace), after gzip inflation.
  std::size_t max_trace_bytes = std::size_t{4} << 30;
};

/// The limits in force (process-wide; set once at start-up, read by the readers).
const InputLimits& input_limits();
void set_input_limits(const InputLimits& limits);

/// "more than the limit of 256 MiB (raise it with --max-input-mb)".
std::string limit_text(std::size_t max_bytes);

}  // namespace powertrain::core
