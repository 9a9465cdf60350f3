// Batched copies and placement hints (CUDA 12.8+): cudaMemcpyBatchAsync, which KV-cache swapping
// and checkpoint loaders use to move many buffers in one call, and CUDA 13's batched prefetch and
// discard. cudaMemcpyBatchAsync's arguments differ between the runtime ABIs this library presents
// (one object file serves both):
//   CUDA 13:      (dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, stream)
//   CUDA 12.8/9:  (dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, failIdx, stream)
// Under the x86-64 System V ABI the first six arrive in registers and the rest on the stack in
// order, so the eighth argument is the stream (13) or failIdx (12) and the ninth the stream (12);
// the function reads the stream from where the caller's ABI put it, as cudart_prefetch.cc does.
// Each copy of the batch is performed and recorded as a cudaMemcpyAsync-like copy on the stream
// (the copy engine runs a batch's copies one after another).
#define cudaMemcpyBatchAsync powertrain_header_cudaMemcpyBatchAsync
#define cudaMemcpyBatchAsync_ptsz powertrain_header_cudaMemcpyBatchAsync_ptsz
#include "interposer/cudart_impl.h"
#include "interposer/cudart_internal.h"
#undef cudaMemcpyBatchAsync
#undef cudaMemcpyBatchAsync_ptsz

#include <cstdint>
#include <limits>
#include <string>

namespace {

namespace detail = powertrain::emu::detail;
namespace impl = powertrain::emu::detail::impl;

cudaError_t batch_copy(void* const* dsts, const void* const* srcs, const size_t* sizes,
                       size_t count, const cudaMemcpyAttributes* attrs, const size_t* attr_indices,
                       size_t attr_count, size_t* fail_index, cudaStream_t stream, bool per_thread,
                       const char* api) {
  if (fail_index != nullptr) *fail_index = std::numeric_limits<size_t>::max();
  if (count == 0 || dsts == nullptr || srcs == nullptr || sizes == nullptr) {
    return detail::misuse(api, cudaErrorInvalidValue, "count is 0 or dsts/srcs/sizes is NULL");
  }
  if ((!per_thread && stream == nullptr) || stream == cudaStreamLegacy) {
    // The runtime refuses the legacy default stream for batches.
    return detail::misuse(api, cudaErrorInvalidValue, "the legacy NULL stream cannot take a batch");
  }
  if (attr_count == 0 || attr_count > count || attrs == nullptr || attr_indices == nullptr ||
      attr_indices[0] != 0) {
    return detail::misuse(api, cudaErrorInvalidValue,
                          "numAttrs must be 1..count with attrsIdxs[0] == 0 (got numAttrs " +
                              std::to_string(attr_count) + ")");
  }
  for (size_t a = 0; a < attr_count; ++a) {
    if (a > 0 && (attr_indices[a] <= attr_indices[a - 1] || attr_indices[a] >= count)) {
      return detail::misuse(
          api, cudaErrorInvalidValue,
          "attrsIdxs must increase and stay below count (entry " + std::to_string(a) + ")");
    }
    const int order = static_cast<int>(attrs[a].srcAccessOrder);
    if (order < cudaMemcpySrcAccessOrderStream || order > cudaMemcpySrcAccessOrderAny) {
      return detail::misuse(api, cudaErrorInvalidValue,
                            "attrs[" + std::to_string(a) + "].srcAccessOrder " +
                                std::to_string(order) + " is not a cudaMemcpySrcAccessOrder");
    }
  }
  for (size_t i = 0; i < count; ++i) {
    const cudaError_t error = impl::memcpy_1d(dsts[i], srcs[i], sizes[i], cudaMemcpyDefault, stream,
                                              true, per_thread, api);
    if (error != cudaSuccess) {
      if (fail_index != nullptr) *fail_index = i;
      return error;
    }
  }
  return cudaSuccess;
}

cudaError_t batch_hint(void** pointers, size_t* sizes, size_t count, cudaStream_t stream,
                       bool per_thread, const char* api) {
  if (count == 0 || pointers == nullptr || sizes == nullptr) {
    return detail::misuse(api, cudaErrorInvalidValue, "count is 0 or dptrs/sizes is NULL");
  }
  for (size_t i = 0; i < count; ++i) {
    if (!detail::lookup_pointer(pointers[i]).known) {
      return detail::misuse(api, cudaErrorInvalidValue,
                            "dptrs[" + std::to_string(i) + "] " +
                                detail::pointer_text(pointers[i]) + " is not CUDA memory");
    }
  }
  // Placement hints: an emulated device's memory has no placement to change.
  return impl::stream_accept(stream, per_thread, api);
}

// A batched prefetch: location k applies from operation indices[k] on (the first must be 0);
// managed ranges remember their destination.
cudaError_t batch_prefetch(void** pointers, size_t* sizes, size_t count,
                           const cudaMemLocation* locations, const size_t* indices,
                           size_t location_count, cudaStream_t stream, bool per_thread,
                           const char* api) {
  if (location_count == 0 || locations == nullptr || indices == nullptr || indices[0] != 0 ||
      location_count > count) {
    return detail::misuse(api, cudaErrorInvalidValue,
                          "numPrefetchLocs is 0 or above count, prefetchLocs/prefetchLocIdxs is "
                          "NULL, or prefetchLocIdxs[0] is not 0");
  }
  for (size_t k = 1; k < location_count; ++k) {
    if (indices[k] <= indices[k - 1] || indices[k] >= count) {
      return detail::misuse(api, cudaErrorInvalidValue,
                            "prefetchLocIdxs[" + std::to_string(k) +
                                "] is not above the one before it and below count");
    }
  }
  for (size_t k = 0; k < location_count; ++k) {
    if (const cudaError_t bad = detail::check_prefetch_location(api, locations[k]);
        bad != cudaSuccess) {
      return bad;
    }
  }
  const cudaError_t status = batch_hint(pointers, sizes, count, stream, per_thread, api);
  if (status != cudaSuccess) return status;
  size_t k = 0;
  for (size_t i = 0; i < count; ++i) {
    while (k + 1 < location_count && indices[k + 1] <= i) ++k;
    detail::note_prefetch(pointers[i], sizes[i], locations[k]);
  }
  return cudaSuccess;
}

}  // namespace

namespace powertrain::emu::detail::impl {
cudaError_t batch_copy_1d(void* const* dsts, const void* const* srcs, const size_t* sizes,
                          size_t count, const cudaMemcpyAttributes* attrs,
                          const size_t* attr_indices, size_t attr_count, size_t* fail_index,
                          cudaStream_t stream, bool per_thread, const char* api) {
  return batch_copy(dsts, srcs, sizes, count, attrs, attr_indices, attr_count, fail_index, stream,
                    per_thread, api);
}
}  // namespace powertrain::emu::detail::impl

namespace {

// The stream (and CUDA 12's failIdx) from where the caller's ABI put them.
cudaError_t batch_copy_abi(void* const* dsts, const void* const* srcs, const size_t* sizes,
                           size_t count, cudaMemcpyAttributes* attrs, size_t* attr_indices,
                           size_t attr_count, std::uint64_t eighth, cudaStream_t ninth,
                           bool per_thread, const char* api) {
  const bool cuda12 = detail::cudart_abi() == 12;
  return batch_copy(dsts, srcs, sizes, count, attrs, attr_indices, attr_count,
                    cuda12 ? reinterpret_cast<size_t*>(eighth) : nullptr,
                    cuda12 ? ninth : reinterpret_cast<cudaStream_t>(eighth), per_thread, api);
}

}  // namespace

PT_EXPORT cudaError_t cudaMemcpyBatchAsync(void* const* dsts, const void* const* srcs,
                                           const size_t* sizes, size_t count,
                                           cudaMemcpyAttributes* attrs, size_t* attrsIdxs,
                                           size_t numAttrs, std::uint64_t eighth,
                                           cudaStream_t ninth) {
  return batch_copy_abi(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, eighth, ninth, false,
                        "cudaMemcpyBatchAsync");
}

PT_EXPORT cudaError_t cudaMemcpyBatchAsync_ptsz(void* const* dsts, const void* const* srcs,
                                                const size_t* sizes, size_t count,
                                                cudaMemcpyAttributes* attrs, size_t* attrsIdxs,
                                                size_t numAttrs, std::uint64_t eighth,
                                                cudaStream_t ninth) {
  return batch_copy_abi(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, eighth, ninth, true,
                        "cudaMemcpyBatchAsync_ptsz");
}

PT_EXPORT cudaError_t cudaMemPrefetchBatchAsync(void** dptrs, size_t* sizes, size_t count,
                                                struct cudaMemLocation* prefetchLocs,
                                                size_t* prefetchLocIdxs, size_t numPrefetchLocs,
                                                unsigned long long /*flags*/, cudaStream_t stream) {
  return batch_prefetch(dptrs, sizes, count, prefetchLocs, prefetchLocIdxs, numPrefetchLocs, stream,
                        false, "cudaMemPrefetchBatchAsync");
}

PT_EXPORT cudaError_t cudaMemPrefetchBatchAsync_ptsz(void** dptrs, size_t* sizes, size_t count,
                                                     struct cudaMemLocation* prefetchLocs,
                                                     size_t* prefetchLocIdxs,
                                                     size_t numPrefetchLocs,
                                                     unsigned long long /*flags*/,
                                                     cudaStream_t stream) {
  return batch_prefetch(dptrs, sizes, count, prefetchLocs, prefetchLocIdxs, numPrefetchLocs, stream,
                        true, "cudaMemPrefetchBatchAsync_ptsz");
}

PT_EXPORT cudaError_t cudaMemDiscardBatchAsync(void** dptrs, size_t* sizes, size_t count,
                                               unsigned long long /*flags*/, cudaStream_t stream) {
  return batch_hint(dptrs, sizes, count, stream, false, "cudaMemDiscardBatchAsync");
}

PT_EXPORT cudaError_t cudaMemDiscardBatchAsync_ptsz(void** dptrs, size_t* sizes, size_t count,
                                                    unsigned long long /*flags*/,
                                                    cudaStream_t stream) {
  return batch_hint(dptrs, sizes, count, stream, true, "cudaMemDiscardBatchAsync_ptsz");
}

PT_EXPORT cudaError_t cudaMemDiscardAndPrefetchBatchAsync(void** dptrs, size_t* sizes, size_t count,
                                                          struct cudaMemLocation* prefetchLocs,
                                                          size_t* prefetchLocIdxs,
                                                          size_t numPrefetchLocs,
                                                          unsigned long long /*flags*/,
                                                          cudaStream_t stream) {
  return batch_prefetch(dptrs, sizes, count, prefetchLocs, prefetchLocIdxs, numPrefetchLocs, stream,
                        false, "cudaMemDiscardAndPrefetchBatchAsync");
}

PT_EXPORT cudaError_t cudaMemDiscardAndPrefetchBatchAsync_ptsz(
    void** dptrs, size_t* sizes, size_t count, struct cudaMemLocation* prefetchLocs,
    size_t* prefetchLocIdxs, size_t numPrefetchLocs, unsigned long long /*flags*/,
    cudaStream_t stream) {
  return batch_prefetch(dptrs, sizes, count, prefetchLocs, prefetchLocIdxs, numPrefetchLocs, stream,
                        true, "cudaMemDiscardAndPrefetchBatchAsync_ptsz");
}
