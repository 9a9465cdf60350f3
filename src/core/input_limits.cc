#include "core/input_limits.h"

#include <fmt/core.h>

#include <atomic>

namespace powertrain::core {
namespace {
std::atomic<std::size_t> max_text_bytes{InputLimits{}.max_text_bytes};
std::atomic<std::size_t> max_trace_bytes{InputLimits{}.max_trace_bytes};
thread_local InputLimits snapshot;
}  // namespace

const InputLimits& input_limits() {
  snapshot.max_text_bytes = max_text_bytes.load(std::memory_order_relaxed);
  snapshot.max_trace_bytes = max_trace_bytes.load(std::memory_order_relaxed);
  return snapshot;
}

void set_input_limits(const InputLimits& limits) {
  max_text_bytes.store(limits.max_text_bytes, std::memory_order_relaxed);
  max_trace_bytes.store(limits.max_trace_bytes, std::memory_order_relaxed);
}

std::string limit_text(std::size_t max_bytes) {
  const double mib = static_cast<double>(max_bytes) / (1024.0 * 1024.0);
  return fmt::format("more than the limit of {:.0f} MiB (raise it with --max-input-mb)", mib);
}

}  // namespace powertrain::core
