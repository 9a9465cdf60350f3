// Error reporting API: per-thread last error (cudaGetLastError resets it, cudaPeekAtLastError
// does not) and the names/descriptions of every cudaError_t value, taken from the real runtime
// so messages printed by the host program read exactly as on a GPU machine.
#include <algorithm>
#include <iterator>

#include "interposer/cudart_internal.h"

namespace powertrain::emu::detail {
namespace {

struct ErrorEntry {
  int value;
  const char* name;
  const char* description;
};

constexpr ErrorEntry kErrors[] = {
#include "interposer/cudart_error_table.inc"
};

const ErrorEntry* find_error(int value) {
  const auto it = std::find_if(std::begin(kErrors), std::end(kErrors),
                               [value](const ErrorEntry& e) { return e.value == value; });
  return it == std::end(kErrors) ? nullptr : it;
}

}  // namespace
}  // namespace powertrain::emu::detail

using powertrain::emu::detail::find_error;
using powertrain::emu::detail::thread_state;

PT_EXPORT const char* cudaGetErrorName(cudaError_t error) {
  const auto* entry = find_error(static_cast<int>(error));
  return entry != nullptr ? entry->name : "unrecognized error code";
}

PT_EXPORT const char* cudaGetErrorString(cudaError_t error) {
  const auto* entry = find_error(static_cast<int>(error));
  return entry != nullptr ? entry->description : "unrecognized error code";
}

PT_EXPORT cudaError_t cudaGetLastError() {
  auto& state = thread_state();
  const int error = state.last_error;
  state.last_error = 0;
  return static_cast<cudaError_t>(error);
}

PT_EXPORT cudaError_t cudaPeekAtLastError() {
  return static_cast<cudaError_t>(thread_state().last_error);
}
