// Shared by the driver API's files (cuda_driver.cc, cuda_driver_array.cc): the runtime's last
// error kept out of driver calls and the cudaError_t → CUresult mapping.
#pragma once

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <string_view>

#include "interposer/cudart_internal.h"

namespace powertrain::emu::detail {

// Keeps the runtime's last error as it was (driver calls have no sticky error state).
class ErrorScope {
 public:
  ErrorScope() : saved_(thread_state().last_error) {}
  ~ErrorScope() { thread_state().last_error = saved_; }
  ErrorScope(const ErrorScope&) = delete;
  ErrorScope& operator=(const ErrorScope&) = delete;

 private:
  int saved_;
};

// cudaError_t → CUresult: equal numbers where both define the condition (0-4, 100+), else
// CUDA_ERROR_INVALID_VALUE (launch configuration, pointers); an unknown function is a handle
// error in the driver.
inline CUresult to_driver(cudaError_t error) {
  const int e = static_cast<int>(error);
  if (error == cudaErrorInvalidDeviceFunction) return CUDA_ERROR_INVALID_HANDLE;
  if (e <= 4 || e >= 100) return static_cast<CUresult>(e);
  return CUDA_ERROR_INVALID_VALUE;
}

// A CUdeviceptr is the emulator's pointer.
inline void* as_pointer(CUdeviceptr p) { return reinterpret_cast<void*>(p); }

// The per-thread-default-stream entry points (*_ptsz / *_ptds): a NULL stream is the calling
// thread's own.
inline CUstream per_thread(CUstream stream) {
  return stream == nullptr ? CU_STREAM_PER_THREAD : stream;
}

// A driver call refused: reported as misuse naming `api`, `error` returned (cuda_driver.cc).
CUresult driver_misuse(std::string_view api, CUresult error, std::string_view what);
// True for a device index of this process (cuda_driver.cc).
bool valid_device(CUdevice device);

// Device of a context handle, or -1 when it is not a live context (cuda_driver.cc).
int driver_context_device(CUcontext ctx);
// cuStreamGetCaptureInfo's work for every form (cuda_driver_graph.cc): the outputs not asked
// for are NULL; edges are always default edges.
CUresult driver_capture_info(CUstream stream, CUstreamCaptureStatus* status, cuuint64_t* id,
                             CUgraph* graph, const CUgraphNode** dependencies,
                             const CUgraphEdgeData** edges, size_t* count, bool per_thread,
                             const char* api);
// The primary context of `device` (cuda_driver.cc).
CUcontext driver_primary_context(int device);

// cuMemsetD2D{8,16,32}[Async] and the 1-D forms (height 1): `height` rows of `width` elements of
// `element_bytes` bytes, `pitch` bytes apart; the element pattern (little-endian, as the GPU
// stores it) is written where the memory is backed (cuda_driver.cc).
CUresult driver_memset_2d(CUdeviceptr dst, size_t pitch, unsigned value, size_t width,
                          size_t height, int element_bytes, CUstream stream, bool async,
                          const char* api);

}  // namespace powertrain::emu::detail
