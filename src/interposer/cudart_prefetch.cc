// cudaMemPrefetchAsync and cudaMemPrefetchAsync_ptsz, whose arguments differ between the runtime
// ABIs this library presents (one object file serves both):
//   CUDA 13: (devPtr, count, struct cudaMemLocation location, unsigned flags, cudaStream_t stream)
//   CUDA 12: (devPtr, count, int dstDevice, cudaStream_t stream)
// Under the x86-64 System V ABI the 8-byte location and the int device both arrive in the third
// integer register, and the fourth holds the flags (13) or the stream (12): the functions take
// those registers as 64-bit integers and read the stream from where the caller's ABI put it. The
// header's prototypes are renamed away while it is included, so these definitions can differ.
// A prefetch is a placement hint with no effect on an emulated device's timing: the stream is
// checked and, for managed memory, the destination kept for cudaMemRangeGetAttribute.
#define cudaMemPrefetchAsync powertrain_header_cudaMemPrefetchAsync
#define cudaMemPrefetchAsync_ptsz powertrain_header_cudaMemPrefetchAsync_ptsz
#include "interposer/cudart_impl.h"
#include "interposer/cudart_internal.h"
#undef cudaMemPrefetchAsync
#undef cudaMemPrefetchAsync_ptsz

#include <cstdint>

namespace {

namespace detail = powertrain::emu::detail;

cudaStream_t stream_argument(std::uint64_t fourth, cudaStream_t fifth) {
  return detail::cudart_abi() == 12 ? reinterpret_cast<cudaStream_t>(fourth) : fifth;
}

// CUDA 12's `int device` in the low half, or CUDA 13's location (type low, id high).
cudaMemLocation location_argument(std::uint64_t third) {
  if (detail::cudart_abi() == 12) {
    return detail::legacy_location(static_cast<int>(static_cast<std::uint32_t>(third)));
  }
  cudaMemLocation location = {};
  location.type = static_cast<cudaMemLocationType>(static_cast<std::uint32_t>(third));
  location.id = static_cast<int>(static_cast<std::uint32_t>(third >> 32));
  return location;
}

}  // namespace

PT_EXPORT cudaError_t cudaMemPrefetchAsync(const void* devPtr, size_t count,
                                           std::uint64_t location_or_device,
                                           std::uint64_t flags_or_stream, cudaStream_t stream) {
  return detail::prefetch_managed("cudaMemPrefetchAsync", devPtr, count,
                                  location_argument(location_or_device),
                                  stream_argument(flags_or_stream, stream), false);
}

PT_EXPORT cudaError_t cudaMemPrefetchAsync_ptsz(const void* devPtr, size_t count,
                                                std::uint64_t location_or_device,
                                                std::uint64_t flags_or_stream,
                                                cudaStream_t stream) {
  return detail::prefetch_managed("cudaMemPrefetchAsync_ptsz", devPtr, count,
                                  location_argument(location_or_device),
                                  stream_argument(flags_or_stream, stream), true);
}

// CUDA 12.2–12.9's per-thread name of the location form (the same arguments in both ABIs).
PT_EXPORT cudaError_t cudaMemPrefetchAsync_v2_ptsz(const void* devPtr, size_t count,
                                                   cudaMemLocation location, unsigned int /*flags*/,
                                                   cudaStream_t stream) {
  return detail::prefetch_managed("cudaMemPrefetchAsync_v2_ptsz", devPtr, count, location, stream,
                                  true);
}
