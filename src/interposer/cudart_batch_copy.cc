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
// (the copy engine runs a batch's copies one after another). cudaMemcpy3DBatchAsync is read the
// same way: CUDA 13 (numOps, opList, flags, stream), CUDA 12.8 (numOps, opList, failIdx, flags,
// stream), all in registers.
#define cudaMemcpyBatchAsync powertrain_header_cudaMemcpyBatchAsync
#define cudaMemcpyBatchAsync_ptsz powertrain_header_cudaMemcpyBatchAsync_ptsz
#define cudaMemcpy3DBatchAsync powertrain_header_cudaMemcpy3DBatchAsync
#define cudaMemcpy3DBatchAsync_ptsz powertrain_header_cudaMemcpy3DBatchAsync_ptsz
#include "interposer/cudart_array.h"
#include "interposer/cudart_impl.h"
#include "interposer/cudart_internal.h"
#undef cudaMemcpyBatchAsync
#undef cudaMemcpyBatchAsync_ptsz
#undef cudaMemcpy3DBatchAsync
#undef cudaMemcpy3DBatchAsync_ptsz

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace {

namespace detail = powertrain::emu::detail;
namespace impl = powertrain::emu::detail::impl;

// What every batch needs of its stream, checked before any copy (failIdx stays SIZE_MAX): not the
// legacy default stream, a live stream, and not under capture — CUDA 13 refuses a batch on a
// capturing stream with cudaErrorStreamCaptureUnsupported and leaves the capture as it was.
cudaError_t batch_stream(cudaStream_t stream, bool per_thread, const char* api) {
  if ((!per_thread && stream == nullptr) || stream == cudaStreamLegacy) {
    return detail::misuse(api, cudaErrorInvalidValue, "the legacy NULL stream cannot take a batch");
  }
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  if (const cudaError_t error = impl::stream_is_capturing(stream, &capture, per_thread, api);
      error != cudaSuccess) {
    return error;
  }
  if (capture != cudaStreamCaptureStatusNone) {
    return detail::misuse(api, cudaErrorStreamCaptureUnsupported,
                          "a batched copy cannot be captured");
  }
  return cudaSuccess;
}

cudaError_t batch_copy(void* const* dsts, const void* const* srcs, const size_t* sizes,
                       size_t count, const cudaMemcpyAttributes* attrs, const size_t* attr_indices,
                       size_t attr_count, size_t* fail_index, cudaStream_t stream, bool per_thread,
                       const char* api) {
  if (fail_index != nullptr) *fail_index = std::numeric_limits<size_t>::max();
  if (count == 0 || dsts == nullptr || srcs == nullptr || sizes == nullptr) {
    return detail::misuse(api, cudaErrorInvalidValue, "count is 0 or dsts/srcs/sizes is NULL");
  }
  if (const cudaError_t error = batch_stream(stream, per_thread, api); error != cudaSuccess) {
    return error;
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

// ---- 3D batches (cudaMemcpy3DBatchAsync, CUDA 12.8) ---------------------------------------------
// Each operation copies extent.width × height × depth elements between two operands, each a
// pointer (rows of rowLength elements, layers of layerHeight rows; 0: packed to the extent) or an
// array at an element offset. The element is 1 byte between pointers and the array's element
// otherwise (two arrays must agree). Checked as a whole first, then copied in order.

namespace powertrain::emu::detail::impl {
namespace {
struct Operand3D {
  bool array = false;
  cudaArray_const_t handle = nullptr;
  void* pointer = nullptr;
  std::size_t row_length = 0;    // elements, 0: packed
  std::size_t layer_height = 0;  // rows, 0: packed
  std::size_t x = 0, y = 0, z = 0;
};

bool read_operand(const cudaMemcpy3DOperand& in, Operand3D* out) {
  if (in.type == cudaMemcpyOperandTypePointer) {
    out->pointer = in.op.ptr.ptr;
    out->row_length = in.op.ptr.rowLength;
    out->layer_height = in.op.ptr.layerHeight;
    return out->pointer != nullptr;
  }
  if (in.type == cudaMemcpyOperandTypeArray) {
    out->array = true;
    out->handle = in.op.array.array;
    out->x = in.op.array.offset.x;
    out->y = in.op.array.offset.y;
    out->z = in.op.array.offset.z;
    return out->handle != nullptr;
  }
  return false;
}

CopyEnd end_of(const Operand3D& o, std::size_t element, const cudaExtent& extent) {
  CopyEnd end;
  if (o.array) {
    end.array = o.handle;
    end.x_bytes = o.x * element;
    end.y = o.y;
    end.z = o.z;
  } else {
    end.pointer = o.pointer;
    end.pitch = (o.row_length != 0 ? o.row_length : extent.width) * element;
    end.slice_rows = o.layer_height != 0 ? o.layer_height : extent.height;
  }
  return end;
}

// Checks operation `i`; on success `src`, `dst`, `element` describe it.
cudaError_t check_3d_op(const cudaMemcpy3DBatchOp& op, std::size_t i, const char* api,
                        Operand3D* src, Operand3D* dst, std::size_t* element) {
  const std::string which = "opList[" + std::to_string(i) + "]";
  if (!read_operand(op.src, src) || !read_operand(op.dst, dst)) {
    return misuse(api, cudaErrorInvalidValue,
                  which + ": an operand is neither a non-NULL pointer nor a CUDA array");
  }
  const cudaExtent& e = op.extent;
  if (e.width == 0 || e.height == 0 || e.depth == 0) {
    return misuse(api, cudaErrorInvalidValue, which + ": the extent has a zero dimension");
  }
  for (const Operand3D* o : {src, dst}) {
    if (!o->array && ((o->row_length != 0 && o->row_length < e.width) ||
                      (o->layer_height != 0 && o->layer_height < e.height))) {
      return misuse(api, cudaErrorInvalidValue,
                    which + ": rowLength or layerHeight below the extent's width or height");
    }
  }
  const int order = static_cast<int>(op.srcAccessOrder);
  if (order < cudaMemcpySrcAccessOrderStream || order > cudaMemcpySrcAccessOrderAny) {
    return misuse(
        api, cudaErrorInvalidValue,
        which + ": srcAccessOrder " + std::to_string(order) + " is not a cudaMemcpySrcAccessOrder");
  }
  *element = 1;
  std::size_t array_element = 0;
  for (const Operand3D* o : {src, dst}) {
    if (!o->array) continue;
    ArrayView view;
    if (!array_view(o->handle, &view)) {
      return misuse(api, cudaErrorInvalidValue,
                    which + ": " + pointer_text(o->handle) + " is not a live CUDA array");
    }
    if (array_element != 0 && view.element_bytes != array_element) {
      return misuse(api, cudaErrorInvalidValue,
                    which + ": the two arrays have different element sizes");
    }
    array_element = view.element_bytes;
    *element = array_element;
    // The region must lie inside the array (checked here, before any copy of the batch runs).
    const std::size_t row_elements = view.extent.width;
    if (o->x > row_elements || e.width > row_elements - o->x || o->y > view.rows() ||
        e.height > view.rows() - o->y || o->z > view.slices() || e.depth > view.slices() - o->z) {
      return misuse(api, cudaErrorInvalidValue,
                    which + ": the region at (" + std::to_string(o->x) + ", " +
                        std::to_string(o->y) + ", " + std::to_string(o->z) + ") of " +
                        std::to_string(e.width) + " x " + std::to_string(e.height) + " x " +
                        std::to_string(e.depth) + " runs past the array");
    }
  }
  constexpr std::size_t kMax = ~std::size_t{0};
  if (e.width > kMax / *element || src->x > kMax / *element || dst->x > kMax / *element ||
      (src->row_length > kMax / *element) || (dst->row_length > kMax / *element)) {
    return misuse(api, cudaErrorInvalidValue, which + ": extent or offset too large");
  }
  return cudaSuccess;
}
}  // namespace

cudaError_t batch_copy_3d(std::size_t count, const cudaMemcpy3DBatchOp* ops, size_t* fail_index,
                          unsigned long long flags, cudaStream_t stream, bool per_thread,
                          const char* api) {
  if (fail_index != nullptr) *fail_index = std::numeric_limits<size_t>::max();
  if (count == 0 || ops == nullptr) {
    return misuse(api, cudaErrorInvalidValue, "numOps is 0 or opList is NULL");
  }
  if (flags != 0) return misuse(api, cudaErrorInvalidValue, "flags must be 0");
  if (const cudaError_t error = batch_stream(stream, per_thread, api); error != cudaSuccess) {
    return error;
  }
  std::vector<Operand3D> sources(count), destinations(count);
  std::vector<std::size_t> elements(count);
  for (std::size_t i = 0; i < count; ++i) {
    const cudaError_t error =
        check_3d_op(ops[i], i, api, &sources[i], &destinations[i], &elements[i]);
    if (error != cudaSuccess) {
      if (fail_index != nullptr) *fail_index = i;
      return error;
    }
  }
  for (std::size_t i = 0; i < count; ++i) {
    const cudaExtent& e = ops[i].extent;
    const cudaError_t error = copy_ends(
        end_of(destinations[i], elements[i], e), end_of(sources[i], elements[i], e),
        e.width * elements[i], e.height, e.depth, cudaMemcpyDefault, stream, true, per_thread, api);
    if (error != cudaSuccess) {
      if (fail_index != nullptr) *fail_index = i;
      return error;
    }
  }
  return cudaSuccess;
}
}  // namespace powertrain::emu::detail::impl

// CUDA 12.8's form has failIdx before the flags; CUDA 13's has none (by the caller's ABI).
namespace {
cudaError_t batch_3d_abi(size_t count, cudaMemcpy3DBatchOp* ops, std::uint64_t third,
                         std::uint64_t fourth, cudaStream_t fifth, bool per_thread,
                         const char* api) {
  const bool cuda12 = detail::cudart_abi() == 12;
  return impl::batch_copy_3d(
      count, ops, cuda12 ? reinterpret_cast<size_t*>(third) : nullptr, cuda12 ? fourth : third,
      cuda12 ? fifth : reinterpret_cast<cudaStream_t>(fourth), per_thread, api);
}
}  // namespace

PT_EXPORT cudaError_t cudaMemcpy3DBatchAsync(size_t numOps, struct cudaMemcpy3DBatchOp* opList,
                                             std::uint64_t third, std::uint64_t fourth,
                                             cudaStream_t fifth) {
  return batch_3d_abi(numOps, opList, third, fourth, fifth, false, "cudaMemcpy3DBatchAsync");
}

PT_EXPORT cudaError_t cudaMemcpy3DBatchAsync_ptsz(size_t numOps, struct cudaMemcpy3DBatchOp* opList,
                                                  std::uint64_t third, std::uint64_t fourth,
                                                  cudaStream_t fifth) {
  return batch_3d_abi(numOps, opList, third, fourth, fifth, true, "cudaMemcpy3DBatchAsync_ptsz");
}
