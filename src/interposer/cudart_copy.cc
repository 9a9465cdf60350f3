// Copies and memsets. Each one is validated like the runtime does (direction, NULL pointers,
// device pointers that are not allocations, ranges that overrun an allocation) and recorded;
// the bytes really move when both sides are real memory (host memory, or device allocations
// small enough to be backed), so a program that checks what it copied back sees its data. A
// copy out of an unbacked (large) allocation yields zeros.
#include <cstring>
#include <string>
#include <utility>

#include "interposer/cudart_impl.h"
#include "interposer/cudart_internal.h"
#include "interposer/trace_schema.h"

namespace powertrain::emu::detail {
namespace {

// One side of a copy: where it is and whether its bytes exist.
struct Side {
  bool device = false;  // device-side memory (device, managed, stream-ordered)
  bool backed = true;   // bytes can be read/written
  int device_index = 0;
};

// Resolves one side. `device_expected` is what the copy kind says (ignored for
// cudaMemcpyDefault, where the allocation decides). `extent` = bytes touched from `pointer`.
bool resolve_side(const void* pointer, std::size_t extent, bool device_expected, bool by_default,
                  const char* role, const char* api, Side* side) {
  const PointerInfo info = lookup_pointer(pointer);
  if (info.known) {
    side->device = info.device_side;
    side->backed = info.backed;
    side->device_index = info.device;
    if (extent > info.available) {
      misuse(api, cudaErrorInvalidValue,
             std::string(role) + " range of " + std::to_string(extent) + " bytes at " +
                 pointer_text(pointer) + " overruns its allocation of " +
                 std::to_string(info.bytes) + " bytes at " +
                 pointer_text(reinterpret_cast<void*>(info.base)));
      return false;
    }
    return true;
  }
  if (device_expected && !by_default) {
    misuse(api, cudaErrorInvalidValue,
           std::string(role) + " " + pointer_text(pointer) +
               " is not device memory allocated through the CUDA runtime");
    return false;
  }
  side->device = false;  // pageable host memory of the program
  side->backed = true;
  return true;
}

CopyKind trace_kind(const Side& dst, const Side& src) {
  if (dst.device && src.device) {
    return dst.device_index == src.device_index ? CopyKind::kDtoD : CopyKind::kPtoP;
  }
  if (dst.device) return CopyKind::kHtoD;
  if (src.device) return CopyKind::kDtoH;
  return CopyKind::kHtoH;
}

void record_copy(std::int64_t start, const StreamRef& ref, CopyKind kind, std::size_t bytes,
                 bool async, const char* api) {
  Record record = make_record(Op::kMemcpy, start, ref.device);
  record.a[0] = ref.id;
  record.a[1] = next_correlation();
  record.a[2] = static_cast<std::int64_t>(bytes);
  record.sub = static_cast<std::uint8_t>(kind);
  record.flag = async;
  record.api = api;
  append(std::move(record));
  // Second pass of --two-pass: a blocking copy returns on the paced predicted schedule, so a host
  // timer around it (bandwidthTest's pageable path) measures the predicted copy time.
  if (!async) impl::pace_wait(ref.device, trace_schema::kPaceBlockingCopy);
}

// Rows of `width` bytes, `height` times per slice, `depth` slices, with the given row and slice
// pitches (a 1D copy is one row, a 2D copy one slice).
struct Shape {
  std::size_t width = 0;
  std::size_t height = 1;
  std::size_t dpitch = 0;
  std::size_t spitch = 0;
  std::size_t depth = 1;
  std::size_t dslice = 0;
  std::size_t sslice = 0;
  std::size_t dst_extent() const { return extent(dpitch, dslice); }
  std::size_t src_extent() const { return extent(spitch, sslice); }
  std::size_t extent(std::size_t pitch, std::size_t slice) const {
    if (height == 0 || depth == 0) return 0;
    return slice * (depth - 1) + pitch * (height - 1) + width;
  }
};

cudaError_t copy(void* dst, const void* src, const Shape& shape, cudaMemcpyKind kind,
                 cudaStream_t stream, bool async, bool per_thread, const char* api) {
  const std::int64_t start = now_ns();
  StreamRef ref;
  if (!stream_or_fail(stream, per_thread, api, &ref)) return cudaErrorInvalidResourceHandle;
  if (kind < cudaMemcpyHostToHost || kind > cudaMemcpyDefault) {
    return misuse(api, cudaErrorInvalidMemcpyDirection,
                  "unknown cudaMemcpyKind " + std::to_string(static_cast<int>(kind)));
  }
  const std::size_t bytes = shape.width * shape.height * shape.depth;
  if (bytes == 0) return cudaSuccess;  // nothing to do, nothing enqueued
  if (dst == nullptr || src == nullptr) {
    return misuse(api, cudaErrorInvalidValue, "NULL source or destination");
  }
  const bool by_default = kind == cudaMemcpyDefault;
  const bool dst_device = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
  const bool src_device = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
  Side dst_side;
  Side src_side;
  if (!resolve_side(dst, shape.dst_extent(), dst_device, by_default, "destination", api,
                    &dst_side) ||
      !resolve_side(src, shape.src_extent(), src_device, by_default, "source", api, &src_side)) {
    return cudaErrorInvalidValue;
  }
  if (dst_side.backed) {
    auto* d = static_cast<unsigned char*>(dst);
    const auto* s = static_cast<const unsigned char*>(src);
    for (std::size_t slice = 0; slice < shape.depth; ++slice) {
      for (std::size_t row = 0; row < shape.height; ++row) {
        unsigned char* to = d + slice * shape.dslice + row * shape.dpitch;
        if (src_side.backed) {
          std::memmove(to, s + slice * shape.sslice + row * shape.spitch, shape.width);
        } else {
          std::memset(to, 0, shape.width);
        }
      }
    }
  }
  record_copy(start, ref, trace_kind(dst_side, src_side), bytes, async, api);
  return cudaSuccess;
}

cudaError_t fill(void* pointer, int value, const Shape& shape, cudaStream_t stream, bool async,
                 bool per_thread, const char* api) {
  const std::int64_t start = now_ns();
  StreamRef ref;
  if (!stream_or_fail(stream, per_thread, api, &ref)) return cudaErrorInvalidResourceHandle;
  const std::size_t bytes = shape.width * shape.height * shape.depth;
  if (bytes == 0) return cudaSuccess;
  const PointerInfo info = lookup_pointer(pointer);
  if (!info.known || !info.device_side) {
    return misuse(api, cudaErrorInvalidValue,
                  pointer_text(pointer) + " is not device memory allocated through the runtime");
  }
  if (shape.dst_extent() > info.available) {
    return misuse(api, cudaErrorInvalidValue,
                  "range of " + std::to_string(shape.dst_extent()) + " bytes at " +
                      pointer_text(pointer) + " overruns its allocation of " +
                      std::to_string(info.bytes) + " bytes");
  }
  if (info.backed) {
    auto* d = static_cast<unsigned char*>(pointer);
    for (std::size_t slice = 0; slice < shape.depth; ++slice) {
      for (std::size_t row = 0; row < shape.height; ++row) {
        std::memset(d + slice * shape.dslice + row * shape.dpitch, value, shape.width);
      }
    }
  }
  Record record = make_record(Op::kMemset, start, ref.device);
  record.a[0] = ref.id;
  record.a[1] = next_correlation();
  record.a[2] = static_cast<std::int64_t>(bytes);
  record.flag = async;
  record.api = api;
  append(std::move(record));
  return cudaSuccess;
}

}  // namespace

namespace impl {

cudaError_t symbol_copy_direction(bool to_symbol, cudaMemcpyKind kind, const char* api) {
  const cudaMemcpyKind host_side = to_symbol ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost;
  if (kind != host_side && kind != cudaMemcpyDeviceToDevice && kind != cudaMemcpyDefault) {
    return misuse(api, cudaErrorInvalidMemcpyDirection,
                  to_symbol ? "a copy to a symbol must go to device"
                            : "a copy from a symbol must come from device");
  }
  return cudaSuccess;
}

// Resolves a symbol's device storage for a copy of `count` bytes at `offset`.
cudaError_t symbol_range(const void* symbol, std::size_t count, std::size_t offset, const char* api,
                         unsigned char** storage) {
  const VariableInfo v = lookup_variable(symbol);
  if (!v.known) {
    return misuse(api, cudaErrorInvalidSymbol,
                  pointer_text(symbol) + " is not a registered __device__/__constant__ variable");
  }
  if (offset > v.size || count > v.size - offset) {
    return misuse(api, cudaErrorInvalidValue,
                  "offset " + std::to_string(offset) + " + count " + std::to_string(count) +
                      " exceeds the variable's " + std::to_string(v.size) + " bytes");
  }
  *storage = static_cast<unsigned char*>(v.storage) + offset;
  return cudaSuccess;
}

cudaError_t memcpy_1d(void* dst, const void* src, size_t count, cudaMemcpyKind kind,
                      cudaStream_t stream, bool async, bool per_thread, const char* api) {
  return copy(dst, src, Shape{count, 1, count, count}, kind, stream, async, per_thread, api);
}

cudaError_t memcpy_2d(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width,
                      size_t height, cudaMemcpyKind kind, cudaStream_t stream, bool async,
                      bool per_thread, const char* api) {
  if (height > 1 && (width > dpitch || width > spitch)) {
    return misuse(api, cudaErrorInvalidPitchValue,
                  "width " + std::to_string(width) + " exceeds a pitch (" + std::to_string(dpitch) +
                      ", " + std::to_string(spitch) + ")");
  }
  return copy(dst, src, Shape{width, height, dpitch, spitch}, kind, stream, async, per_thread, api);
}

cudaError_t memcpy_3d(void* dst, size_t dpitch, size_t dslice, const void* src, size_t spitch,
                      size_t sslice, size_t width, size_t height, size_t depth, cudaMemcpyKind kind,
                      cudaStream_t stream, bool async, bool per_thread, const char* api) {
  if ((height > 1 || depth > 1) && (width > dpitch || width > spitch)) {
    return misuse(api, cudaErrorInvalidPitchValue,
                  "width " + std::to_string(width) + " exceeds a pitch (" + std::to_string(dpitch) +
                      ", " + std::to_string(spitch) + ")");
  }
  // Sizes and the extents on both sides must be representable (no wrap-around into a small
  // range that would pass the allocation checks).
  std::size_t product = 0;
  std::size_t extent = 0;
  for (const auto& [pitch, slice] : {std::pair{dpitch, dslice}, std::pair{spitch, sslice}}) {
    extent = 0;
    if (__builtin_mul_overflow(width, height, &product) ||
        __builtin_mul_overflow(product, depth, &product) ||
        (height > 0 && __builtin_mul_overflow(pitch, height - 1, &extent)) ||
        (depth > 0 && __builtin_mul_overflow(slice, depth - 1, &product)) ||
        __builtin_add_overflow(extent, product, &extent) ||
        __builtin_add_overflow(extent, width, &extent)) {
      return misuse(api, cudaErrorInvalidValue,
                    "a 3D copy of " + std::to_string(width) + " x " + std::to_string(height) +
                        " x " + std::to_string(depth) + " overflows the address range");
    }
  }
  if (depth > 1 && (dslice < dpitch * height || sslice < spitch * height)) {
    return misuse(api, cudaErrorInvalidValue,
                  "a slice (" + std::to_string(dslice) + ", " + std::to_string(sslice) +
                      " bytes) is smaller than its " + std::to_string(height) + " rows");
  }
  return copy(dst, src, Shape{width, height, dpitch, spitch, depth, dslice, sslice}, kind, stream,
              async, per_thread, api);
}

cudaError_t memcpy_to_symbol(const void* symbol, const void* src, size_t count, size_t offset,
                             cudaMemcpyKind kind, cudaStream_t stream, bool async, bool per_thread,
                             const char* api) {
  if (const cudaError_t error = symbol_copy_direction(true, kind, api); error != cudaSuccess) {
    return error;
  }
  unsigned char* storage = nullptr;
  const cudaError_t error = symbol_range(symbol, count, offset, api, &storage);
  if (error != cudaSuccess) return error;
  return memcpy_1d(storage, src, count, kind, stream, async, per_thread, api);
}

cudaError_t memcpy_from_symbol(void* dst, const void* symbol, size_t count, size_t offset,
                               cudaMemcpyKind kind, cudaStream_t stream, bool async,
                               bool per_thread, const char* api) {
  if (const cudaError_t error = symbol_copy_direction(false, kind, api); error != cudaSuccess) {
    return error;
  }
  unsigned char* storage = nullptr;
  const cudaError_t error = symbol_range(symbol, count, offset, api, &storage);
  if (error != cudaSuccess) return error;
  return memcpy_1d(dst, storage, count, kind, stream, async, per_thread, api);
}

cudaError_t memset_1d(void* pointer, int value, size_t count, cudaStream_t stream, bool async,
                      bool per_thread, const char* api) {
  return fill(pointer, value, Shape{count, 1, count, count}, stream, async, per_thread, api);
}

cudaError_t memset_3d(cudaPitchedPtr pointer, int value, cudaExtent extent, cudaStream_t stream,
                      bool async, bool per_thread, const char* api) {
  const size_t pitch = pointer.pitch;
  size_t slice = 0;
  size_t product = 0;
  if (__builtin_mul_overflow(pitch, pointer.ysize, &slice) ||
      __builtin_mul_overflow(extent.width, extent.height, &product) ||
      __builtin_mul_overflow(product, extent.depth, &product) ||
      (extent.depth > 1 && __builtin_mul_overflow(slice, extent.depth - 1, &product))) {
    return misuse(api, cudaErrorInvalidValue, "the extent overflows the address range");
  }
  if ((extent.height > 1 || extent.depth > 1) && extent.width > pitch) {
    return misuse(api, cudaErrorInvalidPitchValue, "width exceeds pitch");
  }
  if (extent.depth > 1 && extent.height > pointer.ysize) {
    return misuse(api, cudaErrorInvalidValue,
                  "height " + std::to_string(extent.height) +
                      " exceeds the pitched pointer's ysize " + std::to_string(pointer.ysize));
  }
  return fill(pointer.ptr, value,
              Shape{extent.width, extent.height, pitch, pitch, extent.depth, slice, slice}, stream,
              async, per_thread, api);
}

cudaError_t memset_2d(void* pointer, size_t pitch, int value, size_t width, size_t height,
                      cudaStream_t stream, bool async, bool per_thread, const char* api) {
  if (height > 1 && width > pitch) {
    return misuse(api, cudaErrorInvalidPitchValue, "width exceeds pitch");
  }
  return fill(pointer, value, Shape{width, height, pitch, pitch}, stream, async, per_thread, api);
}

}  // namespace impl
}  // namespace powertrain::emu::detail

namespace impl = powertrain::emu::detail::impl;

PT_EXPORT cudaError_t cudaMemcpy(void* dst, const void* src, size_t count,
                                 enum cudaMemcpyKind kind) {
  return impl::memcpy_1d(dst, src, count, kind, nullptr, false, false, "cudaMemcpy");
}

PT_EXPORT cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t count,
                                      enum cudaMemcpyKind kind, cudaStream_t stream) {
  return impl::memcpy_1d(dst, src, count, kind, stream, true, false, "cudaMemcpyAsync");
}

PT_EXPORT cudaError_t cudaMemcpy2D(void* dst, size_t dpitch, const void* src, size_t spitch,
                                   size_t width, size_t height, enum cudaMemcpyKind kind) {
  return impl::memcpy_2d(dst, dpitch, src, spitch, width, height, kind, nullptr, false, false,
                         "cudaMemcpy2D");
}

PT_EXPORT cudaError_t cudaMemcpy2DAsync(void* dst, size_t dpitch, const void* src, size_t spitch,
                                        size_t width, size_t height, enum cudaMemcpyKind kind,
                                        cudaStream_t stream) {
  return impl::memcpy_2d(dst, dpitch, src, spitch, width, height, kind, stream, true, false,
                         "cudaMemcpy2DAsync");
}

PT_EXPORT cudaError_t cudaMemcpyToSymbol(const void* symbol, const void* src, size_t count,
                                         size_t offset, enum cudaMemcpyKind kind) {
  return impl::memcpy_to_symbol(symbol, src, count, offset, kind, nullptr, false, false,
                                "cudaMemcpyToSymbol");
}

PT_EXPORT cudaError_t cudaMemcpyToSymbolAsync(const void* symbol, const void* src, size_t count,
                                              size_t offset, enum cudaMemcpyKind kind,
                                              cudaStream_t stream) {
  return impl::memcpy_to_symbol(symbol, src, count, offset, kind, stream, true, false,
                                "cudaMemcpyToSymbolAsync");
}

PT_EXPORT cudaError_t cudaMemcpyFromSymbol(void* dst, const void* symbol, size_t count,
                                           size_t offset, enum cudaMemcpyKind kind) {
  return impl::memcpy_from_symbol(dst, symbol, count, offset, kind, nullptr, false, false,
                                  "cudaMemcpyFromSymbol");
}

PT_EXPORT cudaError_t cudaMemcpyFromSymbolAsync(void* dst, const void* symbol, size_t count,
                                                size_t offset, enum cudaMemcpyKind kind,
                                                cudaStream_t stream) {
  return impl::memcpy_from_symbol(dst, symbol, count, offset, kind, stream, true, false,
                                  "cudaMemcpyFromSymbolAsync");
}

PT_EXPORT cudaError_t cudaMemcpyPeer(void* dst, int dstDevice, const void* src, int srcDevice,
                                     size_t count) {
  const int devices = powertrain::emu::device_count();
  if (dstDevice < 0 || dstDevice >= devices || srcDevice < 0 || srcDevice >= devices) {
    return powertrain::emu::detail::misuse("cudaMemcpyPeer", cudaErrorInvalidDevice,
                                           "invalid device ordinal");
  }
  return impl::memcpy_1d(dst, src, count, cudaMemcpyDefault, nullptr, false, false,
                         "cudaMemcpyPeer");
}

PT_EXPORT cudaError_t cudaMemcpyPeerAsync(void* dst, int dstDevice, const void* src, int srcDevice,
                                          size_t count, cudaStream_t stream) {
  const int devices = powertrain::emu::device_count();
  if (dstDevice < 0 || dstDevice >= devices || srcDevice < 0 || srcDevice >= devices) {
    return powertrain::emu::detail::misuse("cudaMemcpyPeerAsync", cudaErrorInvalidDevice,
                                           "invalid device ordinal");
  }
  return impl::memcpy_1d(dst, src, count, cudaMemcpyDefault, stream, true, false,
                         "cudaMemcpyPeerAsync");
}

PT_EXPORT cudaError_t cudaMemset(void* devPtr, int value, size_t count) {
  return impl::memset_1d(devPtr, value, count, nullptr, false, false, "cudaMemset");
}

PT_EXPORT cudaError_t cudaMemsetAsync(void* devPtr, int value, size_t count, cudaStream_t stream) {
  return impl::memset_1d(devPtr, value, count, stream, true, false, "cudaMemsetAsync");
}

PT_EXPORT cudaError_t cudaMemset2D(void* devPtr, size_t pitch, int value, size_t width,
                                   size_t height) {
  return impl::memset_2d(devPtr, pitch, value, width, height, nullptr, false, false,
                         "cudaMemset2D");
}

PT_EXPORT cudaError_t cudaMemset2DAsync(void* devPtr, size_t pitch, int value, size_t width,
                                        size_t height, cudaStream_t stream) {
  return impl::memset_2d(devPtr, pitch, value, width, height, stream, true, false,
                         "cudaMemset2DAsync");
}

PT_EXPORT cudaError_t cudaMemset3D(struct cudaPitchedPtr pitchedDevPtr, int value,
                                   struct cudaExtent extent) {
  return impl::memset_3d(pitchedDevPtr, value, extent, nullptr, false, false, "cudaMemset3D");
}

PT_EXPORT cudaError_t cudaMemset3D_ptds(struct cudaPitchedPtr pitchedDevPtr, int value,
                                        struct cudaExtent extent) {
  return impl::memset_3d(pitchedDevPtr, value, extent, nullptr, false, true, "cudaMemset3D_ptds");
}

PT_EXPORT cudaError_t cudaMemset3DAsync(struct cudaPitchedPtr pitchedDevPtr, int value,
                                        struct cudaExtent extent, cudaStream_t stream) {
  return impl::memset_3d(pitchedDevPtr, value, extent, stream, true, false, "cudaMemset3DAsync");
}

PT_EXPORT cudaError_t cudaMemset3DAsync_ptsz(struct cudaPitchedPtr pitchedDevPtr, int value,
                                             struct cudaExtent extent, cudaStream_t stream) {
  return impl::memset_3d(pitchedDevPtr, value, extent, stream, true, true,
                         "cudaMemset3DAsync_ptsz");
}
