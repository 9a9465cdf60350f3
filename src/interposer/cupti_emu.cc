// CUPTI under emulation: there is no profiler. A profiling client (PyTorch's Kineto, Nsight-style
// tools, NVIDIA's CUPTI samples) must see that cleanly and carry on without GPU activity records,
// never crash inside the real libcupti (which would look for a driver). So every CUPTI function
// the real library exports is defined here: the generated stubs (gen_library_stubs.cmake) report
// the call by name (once on stderr, every call in the trace) and return CUPTI_ERROR_NOT_SUPPORTED
// (27) — activity tracing, callbacks, events, metrics, the profiler and PC sampling. Written by
// hand are the calls a client makes to *handle* that answer or that have a meaningful answer
// without a profiler: result strings (Kineto prints them with every failed call), the version,
// the timestamp (host steady clock, ns, as CUPTI's own is a host clock), the last error, and the
// flush/finalize calls, which succeed because there is nothing buffered.
// CUDA 12 toolkits may keep CUPTI under extras/CUPTI: without its header there is nothing to
// define (and the stub generator finds no lib64/libcupti.so either).
#if __has_include(<cupti.h>)
#include <cupti.h>

#include <chrono>
#include <cstdint>

#include "interposer/cudart_internal.h"

namespace {

const char* result_text(CUptiResult result) {
  switch (result) {
    case CUPTI_SUCCESS:
      return "CUPTI_SUCCESS";
    case CUPTI_ERROR_INVALID_PARAMETER:
      return "CUPTI_ERROR_INVALID_PARAMETER";
    case CUPTI_ERROR_NOT_INITIALIZED:
      return "CUPTI_ERROR_NOT_INITIALIZED";
    case CUPTI_ERROR_NOT_SUPPORTED:
      return "CUPTI_ERROR_NOT_SUPPORTED: no profiler under the powertrain GPU emulator";
    default:
      return nullptr;
  }
}

}  // namespace

PT_EXPORT CUptiResult cuptiGetResultString(CUptiResult result, const char** str) {
  if (str == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  const char* text = result_text(result);
  *str = text != nullptr ? text : "CUPTI_ERROR_UNKNOWN (emulated CUPTI)";
  return text != nullptr ? CUPTI_SUCCESS : CUPTI_ERROR_INVALID_PARAMETER;
}

PT_EXPORT CUptiResult cuptiGetErrorMessage(CUptiResult result, const char** str) {
  return cuptiGetResultString(result, str);
}

PT_EXPORT CUptiResult cuptiGetVersion(uint32_t* version) {
  if (version == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  *version = CUPTI_API_VERSION;
  return CUPTI_SUCCESS;
}

PT_EXPORT CUptiResult cuptiGetTimestamp(uint64_t* timestamp) {
  if (timestamp == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  *timestamp = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                         std::chrono::steady_clock::now().time_since_epoch())
                                         .count());
  return CUPTI_SUCCESS;
}

PT_EXPORT CUptiResult cuptiGetLastError(void) { return CUPTI_SUCCESS; }

// Nothing is ever buffered: flushing and finalizing succeed.
PT_EXPORT CUptiResult cuptiActivityFlushAll(uint32_t flag) {
  (void)flag;
  return CUPTI_SUCCESS;
}

PT_EXPORT CUptiResult cuptiFinalize(void) { return CUPTI_SUCCESS; }

#endif  // __has_include(<cupti.h>)
