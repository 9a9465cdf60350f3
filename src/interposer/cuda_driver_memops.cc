// Driver calls for memory between streams, devices and processes: 2-D memsets of 8/16/32-bit
// elements, peer copies between contexts, IPC handles (the runtime's, under their driver names),
// and stream memory operations (cuStreamWriteValue*/cuStreamWaitValue*/cuStreamBatchMemOp), which
// CUDA-aware MPI, NVSHMEM-style flags and GPU-side producer/consumer code use to order streams
// through a word in memory.
//
// A write is recorded as a memset of its 4 or 8 bytes on its stream (the value lands in backed
// memory) followed by an event record on an event the emulator keeps for that address; a wait
// whose condition the last written value meets is recorded as a wait on that event, so the
// analysis orders the waiting stream after the write as the GPU would. A condition met by a value
// the host wrote needs no wait. A condition nothing has met yet (the writer is enqueued later in
// host order) cannot be ordered in a trace that is written in host order: the stream is not held,
// and the call is reported as unsupported by its name with "(value written later)".
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#include <cuda.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <string>

#include "interposer/cuda_driver_common.h"
#include "interposer/cudart_impl.h"
#include "interposer/cudart_internal.h"

namespace detail = powertrain::emu::detail;
namespace impl = powertrain::emu::detail::impl;
using detail::as_pointer;
using detail::ErrorScope;
using detail::per_thread;
using detail::to_driver;

namespace {

// ---- stream memory operations ------------------------------------------------------------------

struct WrittenWord {
  std::uint64_t value = 0;
  cudaEvent_t event = nullptr;  // recorded right after the write on the writer's stream
  std::uintptr_t base = 0;      // the allocation written (a later one at the address is another)
  std::size_t bytes = 0;
};

// Writes and waits hold the mutex from reading or writing the word to recording the event or
// the wait, so a wait on another thread never sees a value without its event.
struct MemopState {
  std::mutex mutex;
  std::map<std::uintptr_t, WrittenWord> written;  // by address
};

MemopState& memops() {
  static auto* state = new MemopState;  // outlives static destruction (calls at exit)
  return *state;
}

// The last stream write at `address` into the allocation `info` describes, or nullptr (none, or
// one into memory freed since: its entry is dropped). Mutex held.
WrittenWord* written_word(MemopState& s, std::uintptr_t address, const detail::PointerInfo& info) {
  const auto it = s.written.find(address);
  if (it == s.written.end()) return nullptr;
  if (it->second.base != info.base || it->second.bytes != info.bytes) {
    if (it->second.event != nullptr) cudaEventDestroy(it->second.event);
    s.written.erase(it);
    return nullptr;
  }
  return &it->second;
}

// The word at `address`: what memory holds where it is readable (backed device memory, host
// memory), else the last value a stream operation wrote there; false when neither is known.
// Mutex held.
bool current_word(MemopState& s, const detail::PointerInfo& info, std::uintptr_t address, int bytes,
                  std::uint64_t* value) {
  if (info.backed || !info.device_side) {
    std::uint64_t word = 0;
    std::memcpy(&word, reinterpret_cast<const void*>(address), static_cast<size_t>(bytes));
    *value = word;
    return true;
  }
  const WrittenWord* written = written_word(s, address, info);
  if (written == nullptr) return false;
  *value = written->value;
  return true;
}

// The address must be memory the emulator allocated (device, managed, pinned or registered host
// memory) and aligned to the word.
CUresult check_word(CUdeviceptr address, int bytes, const char* api, detail::PointerInfo* info) {
  *info = detail::lookup_pointer(as_pointer(address));
  if (!info->known || info->available < static_cast<size_t>(bytes)) {
    powertrain::emu::report_misuse(
        api, "address " + std::to_string(address) +
                 " is not memory allocated through the emulated runtime or driver");
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (address % static_cast<CUdeviceptr>(bytes) != 0) {
    powertrain::emu::report_misuse(api, "address " + std::to_string(address) + " is not " +
                                            std::to_string(bytes) + "-byte aligned");
    return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

CUresult write_value(CUstream stream, CUdeviceptr address, std::uint64_t value, int bytes,
                     bool per_thread_stream, const char* api) {
  ErrorScope scope;
  detail::PointerInfo info;
  if (const CUresult bad = check_word(address, bytes, api, &info); bad != CUDA_SUCCESS) return bad;
  MemopState& s = memops();
  std::lock_guard<std::mutex> lock(s.mutex);
  cudaError_t error = cudaSuccess;
  if (info.device_side) {
    // The write is a memset of the word on the stream (the analysis orders and times it).
    error = impl::memset_1d(as_pointer(address), 0, static_cast<size_t>(bytes), stream, true,
                            per_thread_stream, api);
  } else {
    error = impl::stream_accept(stream, per_thread_stream, api);
  }
  if (error != cudaSuccess) return to_driver(error);
  if (info.backed || !info.device_side) {
    std::memcpy(as_pointer(address), &value, static_cast<size_t>(bytes));
  }
  const auto at = static_cast<std::uintptr_t>(address);
  WrittenWord* word = written_word(s, at, info);
  if (word == nullptr) {
    word = &s.written[at];
    word->base = info.base;
    word->bytes = info.bytes;
    if (cudaEventCreateWithFlags(&word->event, cudaEventDisableTiming) != cudaSuccess) {
      s.written.erase(at);
      return CUDA_ERROR_OUT_OF_MEMORY;
    }
  }
  word->value = value;
  return to_driver(impl::event_record(word->event, stream, 0, per_thread_stream, api));
}

// CU_STREAM_WAIT_VALUE_GEQ compares cyclically ((int32)(word − value) ≥ 0), EQ, AND (any bit in
// common) and NOR (~(word | value) ≠ 0), on 32 or 64 bits.
bool condition_met(std::uint64_t word, std::uint64_t value, unsigned flags, int bytes) {
  const std::uint64_t mask = bytes == 4 ? 0xffffffffULL : ~0ULL;
  word &= mask;
  value &= mask;
  switch (flags & 0x3U) {
    case CU_STREAM_WAIT_VALUE_GEQ:
      return bytes == 4 ? static_cast<std::int32_t>(static_cast<std::uint32_t>(word - value)) >= 0
                        : static_cast<std::int64_t>(word - value) >= 0;
    case CU_STREAM_WAIT_VALUE_EQ:
      return word == value;
    case CU_STREAM_WAIT_VALUE_AND:
      return (word & value) != 0;
    default:  // CU_STREAM_WAIT_VALUE_NOR
      return (~(word | value) & mask) != 0;
  }
}

CUresult wait_value(CUstream stream, CUdeviceptr address, std::uint64_t value, unsigned flags,
                    int bytes, bool per_thread_stream, const char* api) {
  ErrorScope scope;
  detail::PointerInfo info;
  if (const CUresult bad = check_word(address, bytes, api, &info); bad != CUDA_SUCCESS) return bad;
  MemopState& s = memops();
  std::unique_lock<std::mutex> lock(s.mutex);
  const auto at = static_cast<std::uintptr_t>(address);
  std::uint64_t word = 0;
  if (!current_word(s, info, at, bytes, &word) || !condition_met(word, value, flags, bytes)) {
    lock.unlock();
    powertrain::emu::report_unsupported(std::string(api) + " (value written later)");
    return to_driver(impl::stream_accept(stream, per_thread_stream, api));
  }
  // Met by a stream's write: wait for it; met by the host's: nothing to wait for.
  const std::uint64_t mask = bytes == 4 ? 0xffffffffULL : ~0ULL;
  const WrittenWord* written = written_word(s, at, info);
  if (written == nullptr || (written->value & mask) != (word & mask)) {
    return to_driver(impl::stream_accept(stream, per_thread_stream, api));
  }
  return to_driver(impl::stream_wait_event(stream, written->event, 0, per_thread_stream, api));
}

CUresult batch_mem_op(CUstream stream, unsigned count, CUstreamBatchMemOpParams* params,
                      unsigned flags, bool per_thread_stream, const char* api) {
  (void)flags;  // must be 0
  if (count > 0 && params == nullptr) return CUDA_ERROR_INVALID_VALUE;
  for (unsigned i = 0; i < count; ++i) {
    const CUstreamBatchMemOpParams& p = params[i];
    CUresult result = CUDA_SUCCESS;
    switch (p.operation) {
      case CU_STREAM_MEM_OP_WAIT_VALUE_32:
        result = wait_value(stream, p.waitValue.address, p.waitValue.value, p.waitValue.flags, 4,
                            per_thread_stream, api);
        break;
      case CU_STREAM_MEM_OP_WAIT_VALUE_64:
        result = wait_value(stream, p.waitValue.address, p.waitValue.value64, p.waitValue.flags, 8,
                            per_thread_stream, api);
        break;
      case CU_STREAM_MEM_OP_WRITE_VALUE_32:
        result = write_value(stream, p.writeValue.address, p.writeValue.value, 4, per_thread_stream,
                             api);
        break;
      case CU_STREAM_MEM_OP_WRITE_VALUE_64:
        result = write_value(stream, p.writeValue.address, p.writeValue.value64, 8,
                             per_thread_stream, api);
        break;
      case CU_STREAM_MEM_OP_FLUSH_REMOTE_WRITES:
      case CU_STREAM_MEM_OP_BARRIER:
        break;  // ordering within the stream is what the emulation keeps anyway
      default:
        powertrain::emu::report_misuse(
            api, "operation " + std::to_string(static_cast<int>(p.operation)) + " of entry " +
                     std::to_string(i) + " is not a CUstreamBatchMemOpType");
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (result != CUDA_SUCCESS) return result;
  }
  return CUDA_SUCCESS;
}

// ---- peer copies
// ---------------------------------------------------------------------------------

CUresult copy_peer(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src, CUcontext src_ctx,
                   size_t bytes, CUstream stream, bool async, const char* api) {
  if (detail::driver_context_device(dst_ctx) < 0 || detail::driver_context_device(src_ctx) < 0) {
    powertrain::emu::report_misuse(api, "a context is not a live context");
    return CUDA_ERROR_INVALID_CONTEXT;
  }
  ErrorScope scope;
  return to_driver(impl::memcpy_1d(as_pointer(dst), as_pointer(src), bytes, cudaMemcpyDefault,
                                   stream, async, false, api));
}

}  // namespace

// ---- 2-D memsets -------------------------------------------------------------------------------

PT_EXPORT CUresult cuMemsetD2D8(CUdeviceptr dst, size_t pitch, unsigned char value, size_t width,
                                size_t height) {
  return detail::driver_memset_2d(dst, pitch, value, width, height, 1, nullptr, false,
                                  "cuMemsetD2D8_v2");
}
PT_EXPORT CUresult cuMemsetD2D16(CUdeviceptr dst, size_t pitch, unsigned short value, size_t width,
                                 size_t height) {
  return detail::driver_memset_2d(dst, pitch, value, width, height, 2, nullptr, false,
                                  "cuMemsetD2D16_v2");
}
PT_EXPORT CUresult cuMemsetD2D32(CUdeviceptr dst, size_t pitch, unsigned int value, size_t width,
                                 size_t height) {
  return detail::driver_memset_2d(dst, pitch, value, width, height, 4, nullptr, false,
                                  "cuMemsetD2D32_v2");
}
PT_EXPORT CUresult cuMemsetD2D8Async(CUdeviceptr dst, size_t pitch, unsigned char value,
                                     size_t width, size_t height, CUstream stream) {
  return detail::driver_memset_2d(dst, pitch, value, width, height, 1, stream, true,
                                  "cuMemsetD2D8Async");
}
PT_EXPORT CUresult cuMemsetD2D16Async(CUdeviceptr dst, size_t pitch, unsigned short value,
                                      size_t width, size_t height, CUstream stream) {
  return detail::driver_memset_2d(dst, pitch, value, width, height, 2, stream, true,
                                  "cuMemsetD2D16Async");
}
PT_EXPORT CUresult cuMemsetD2D32Async(CUdeviceptr dst, size_t pitch, unsigned int value,
                                      size_t width, size_t height, CUstream stream) {
  return detail::driver_memset_2d(dst, pitch, value, width, height, 4, stream, true,
                                  "cuMemsetD2D32Async");
}
PT_EXPORT CUresult cuMemsetD2D8_v2_ptds(CUdeviceptr dst, size_t pitch, unsigned char value,
                                        size_t width, size_t height) {
  return detail::driver_memset_2d(dst, pitch, value, width, height, 1, CU_STREAM_PER_THREAD, false,
                                  "cuMemsetD2D8_v2_ptds");
}
PT_EXPORT CUresult cuMemsetD2D16_v2_ptds(CUdeviceptr dst, size_t pitch, unsigned short value,
                                         size_t width, size_t height) {
  return detail::driver_memset_2d(dst, pitch, value, width, height, 2, CU_STREAM_PER_THREAD, false,
                                  "cuMemsetD2D16_v2_ptds");
}
PT_EXPORT CUresult cuMemsetD2D32_v2_ptds(CUdeviceptr dst, size_t pitch, unsigned int value,
                                         size_t width, size_t height) {
  return detail::driver_memset_2d(dst, pitch, value, width, height, 4, CU_STREAM_PER_THREAD, false,
                                  "cuMemsetD2D32_v2_ptds");
}
PT_EXPORT CUresult cuMemsetD2D8Async_ptsz(CUdeviceptr dst, size_t pitch, unsigned char value,
                                          size_t width, size_t height, CUstream stream) {
  return detail::driver_memset_2d(dst, pitch, value, width, height, 1, per_thread(stream), true,
                                  "cuMemsetD2D8Async_ptsz");
}
PT_EXPORT CUresult cuMemsetD2D16Async_ptsz(CUdeviceptr dst, size_t pitch, unsigned short value,
                                           size_t width, size_t height, CUstream stream) {
  return detail::driver_memset_2d(dst, pitch, value, width, height, 2, per_thread(stream), true,
                                  "cuMemsetD2D16Async_ptsz");
}
PT_EXPORT CUresult cuMemsetD2D32Async_ptsz(CUdeviceptr dst, size_t pitch, unsigned int value,
                                           size_t width, size_t height, CUstream stream) {
  return detail::driver_memset_2d(dst, pitch, value, width, height, 4, per_thread(stream), true,
                                  "cuMemsetD2D32Async_ptsz");
}

// ---- peer copies -------------------------------------------------------------------------------

PT_EXPORT CUresult cuMemcpyPeer(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src,
                                CUcontext src_ctx, size_t bytes) {
  return copy_peer(dst, dst_ctx, src, src_ctx, bytes, nullptr, false, "cuMemcpyPeer");
}
PT_EXPORT CUresult cuMemcpyPeerAsync(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src,
                                     CUcontext src_ctx, size_t bytes, CUstream stream) {
  return copy_peer(dst, dst_ctx, src, src_ctx, bytes, stream, true, "cuMemcpyPeerAsync");
}
PT_EXPORT CUresult cuMemcpyPeer_ptds(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src,
                                     CUcontext src_ctx, size_t bytes) {
  return copy_peer(dst, dst_ctx, src, src_ctx, bytes, CU_STREAM_PER_THREAD, false,
                   "cuMemcpyPeer_ptds");
}
PT_EXPORT CUresult cuMemcpyPeerAsync_ptsz(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src,
                                          CUcontext src_ctx, size_t bytes, CUstream stream) {
  return copy_peer(dst, dst_ctx, src, src_ctx, bytes, per_thread(stream), true,
                   "cuMemcpyPeerAsync_ptsz");
}

// ---- IPC (the runtime's handles: the same 64 bytes)
// ----------------------------------------------

static_assert(sizeof(CUipcMemHandle) == sizeof(cudaIpcMemHandle_t));
static_assert(sizeof(CUipcEventHandle) == sizeof(cudaIpcEventHandle_t));

PT_EXPORT CUresult cuIpcGetMemHandle(CUipcMemHandle* handle, CUdeviceptr pointer) {
  ErrorScope scope;
  return to_driver(
      cudaIpcGetMemHandle(reinterpret_cast<cudaIpcMemHandle_t*>(handle), as_pointer(pointer)));
}
PT_EXPORT CUresult cuIpcOpenMemHandle(CUdeviceptr* pointer, CUipcMemHandle handle,
                                      unsigned int flags) {
  ErrorScope scope;
  cudaIpcMemHandle_t runtime_handle;
  std::memcpy(&runtime_handle, &handle, sizeof(runtime_handle));
  return to_driver(cudaIpcOpenMemHandle(reinterpret_cast<void**>(pointer), runtime_handle, flags));
}
PT_EXPORT CUresult cuIpcCloseMemHandle(CUdeviceptr pointer) {
  ErrorScope scope;
  return to_driver(cudaIpcCloseMemHandle(as_pointer(pointer)));
}
PT_EXPORT CUresult cuIpcGetEventHandle(CUipcEventHandle* handle, CUevent event) {
  ErrorScope scope;
  return to_driver(cudaIpcGetEventHandle(reinterpret_cast<cudaIpcEventHandle_t*>(handle), event));
}
PT_EXPORT CUresult cuIpcOpenEventHandle(CUevent* event, CUipcEventHandle handle) {
  ErrorScope scope;
  cudaIpcEventHandle_t runtime_handle;
  std::memcpy(&runtime_handle, &handle, sizeof(runtime_handle));
  return to_driver(cudaIpcOpenEventHandle(reinterpret_cast<cudaEvent_t*>(event), runtime_handle));
}

// ---- stream memory operations
// --------------------------------------------------------------------

PT_EXPORT CUresult cuStreamWriteValue32(CUstream stream, CUdeviceptr address, cuuint32_t value,
                                        unsigned int flags) {
  (void)flags;  // CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER: ordering is kept anyway
  return write_value(stream, address, value, 4, false, "cuStreamWriteValue32_v2");
}
PT_EXPORT CUresult cuStreamWriteValue64(CUstream stream, CUdeviceptr address, cuuint64_t value,
                                        unsigned int flags) {
  (void)flags;
  return write_value(stream, address, value, 8, false, "cuStreamWriteValue64_v2");
}
PT_EXPORT CUresult cuStreamWaitValue32(CUstream stream, CUdeviceptr address, cuuint32_t value,
                                       unsigned int flags) {
  return wait_value(stream, address, value, flags, 4, false, "cuStreamWaitValue32_v2");
}
PT_EXPORT CUresult cuStreamWaitValue64(CUstream stream, CUdeviceptr address, cuuint64_t value,
                                       unsigned int flags) {
  return wait_value(stream, address, value, flags, 8, false, "cuStreamWaitValue64_v2");
}
PT_EXPORT CUresult cuStreamBatchMemOp(CUstream stream, unsigned int count,
                                      CUstreamBatchMemOpParams* params, unsigned int flags) {
  return batch_mem_op(stream, count, params, flags, false, "cuStreamBatchMemOp_v2");
}
PT_EXPORT CUresult cuStreamWriteValue32_v2_ptsz(CUstream stream, CUdeviceptr address,
                                                cuuint32_t value, unsigned int flags) {
  (void)flags;
  return write_value(per_thread(stream), address, value, 4, true, "cuStreamWriteValue32_v2_ptsz");
}
PT_EXPORT CUresult cuStreamWriteValue64_v2_ptsz(CUstream stream, CUdeviceptr address,
                                                cuuint64_t value, unsigned int flags) {
  (void)flags;
  return write_value(per_thread(stream), address, value, 8, true, "cuStreamWriteValue64_v2_ptsz");
}
PT_EXPORT CUresult cuStreamWaitValue32_v2_ptsz(CUstream stream, CUdeviceptr address,
                                               cuuint32_t value, unsigned int flags) {
  return wait_value(per_thread(stream), address, value, flags, 4, true,
                    "cuStreamWaitValue32_v2_ptsz");
}
PT_EXPORT CUresult cuStreamWaitValue64_v2_ptsz(CUstream stream, CUdeviceptr address,
                                               cuuint64_t value, unsigned int flags) {
  return wait_value(per_thread(stream), address, value, flags, 8, true,
                    "cuStreamWaitValue64_v2_ptsz");
}
PT_EXPORT CUresult cuStreamBatchMemOp_v2_ptsz(CUstream stream, unsigned int count,
                                              CUstreamBatchMemOpParams* params,
                                              unsigned int flags) {
  return batch_mem_op(per_thread(stream), count, params, flags, true, "cuStreamBatchMemOp_v2_ptsz");
}

// ---- batched copies (CUDA 12.8: with failIdx; CUDA 13's _v2: without) -------------------------
// CUmemcpyAttributes has cudaMemcpyAttributes' layout and values (access order, location hints,
// flags); the copies are the runtime's.

namespace {
static_assert(sizeof(CUmemcpyAttributes) == sizeof(cudaMemcpyAttributes));

CUresult driver_batch_copy(CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes, size_t count,
                           CUmemcpyAttributes* attrs, size_t* attr_indices, size_t attr_count,
                           size_t* fail_index, CUstream stream, bool per_thread, const char* api) {
  ErrorScope scope;
  return to_driver(impl::batch_copy_1d(
      reinterpret_cast<void* const*>(dsts), reinterpret_cast<const void* const*>(srcs), sizes,
      count, reinterpret_cast<const cudaMemcpyAttributes*>(attrs), attr_indices, attr_count,
      fail_index, stream, per_thread, api));
}
}  // namespace

#undef cuMemcpyBatchAsync
PT_EXPORT CUresult cuMemcpyBatchAsync(CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes,
                                      size_t count, CUmemcpyAttributes* attrs, size_t* attrsIdxs,
                                      size_t numAttrs, size_t* failIdx, CUstream hStream) {
  return driver_batch_copy(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, failIdx, hStream,
                           false, "cuMemcpyBatchAsync");
}
PT_EXPORT CUresult cuMemcpyBatchAsync_ptsz(CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes,
                                           size_t count, CUmemcpyAttributes* attrs,
                                           size_t* attrsIdxs, size_t numAttrs, size_t* failIdx,
                                           CUstream hStream) {
  return driver_batch_copy(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, failIdx, hStream,
                           true, "cuMemcpyBatchAsync_ptsz");
}
PT_EXPORT CUresult cuMemcpyBatchAsync_v2(CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes,
                                         size_t count, CUmemcpyAttributes* attrs, size_t* attrsIdxs,
                                         size_t numAttrs, CUstream hStream) {
  return driver_batch_copy(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, nullptr, hStream,
                           false, "cuMemcpyBatchAsync_v2");
}
PT_EXPORT CUresult cuMemcpyBatchAsync_v2_ptsz(CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes,
                                              size_t count, CUmemcpyAttributes* attrs,
                                              size_t* attrsIdxs, size_t numAttrs,
                                              CUstream hStream) {
  return driver_batch_copy(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, nullptr, hStream,
                           true, "cuMemcpyBatchAsync_v2_ptsz");
}

// 3D batches: CUDA_MEMCPY3D_BATCH_OP has cudaMemcpy3DBatchOp's layout (operands of the same
// types and values, the extent, the access order, flags); the copies are the runtime's.
namespace {
static_assert(sizeof(CUDA_MEMCPY3D_BATCH_OP) == sizeof(cudaMemcpy3DBatchOp));
static_assert(CU_MEMCPY_OPERAND_TYPE_POINTER == static_cast<int>(cudaMemcpyOperandTypePointer) &&
              CU_MEMCPY_OPERAND_TYPE_ARRAY == static_cast<int>(cudaMemcpyOperandTypeArray));

CUresult driver_batch_copy_3d(size_t count, CUDA_MEMCPY3D_BATCH_OP* ops, size_t* fail_index,
                              unsigned long long flags, CUstream stream, bool per_thread,
                              const char* api) {
  ErrorScope scope;
  return to_driver(impl::batch_copy_3d(count, reinterpret_cast<const cudaMemcpy3DBatchOp*>(ops),
                                       fail_index, flags, stream, per_thread, api));
}
}  // namespace

#undef cuMemcpy3DBatchAsync
PT_EXPORT CUresult cuMemcpy3DBatchAsync(size_t numOps, CUDA_MEMCPY3D_BATCH_OP* opList,
                                        size_t* failIdx, unsigned long long flags,
                                        CUstream hStream) {
  return driver_batch_copy_3d(numOps, opList, failIdx, flags, hStream, false,
                              "cuMemcpy3DBatchAsync");
}
PT_EXPORT CUresult cuMemcpy3DBatchAsync_ptsz(size_t numOps, CUDA_MEMCPY3D_BATCH_OP* opList,
                                             size_t* failIdx, unsigned long long flags,
                                             CUstream hStream) {
  return driver_batch_copy_3d(numOps, opList, failIdx, flags, hStream, true,
                              "cuMemcpy3DBatchAsync_ptsz");
}
PT_EXPORT CUresult cuMemcpy3DBatchAsync_v2(size_t numOps, CUDA_MEMCPY3D_BATCH_OP* opList,
                                           unsigned long long flags, CUstream hStream) {
  return driver_batch_copy_3d(numOps, opList, nullptr, flags, hStream, false,
                              "cuMemcpy3DBatchAsync_v2");
}
PT_EXPORT CUresult cuMemcpy3DBatchAsync_v2_ptsz(size_t numOps, CUDA_MEMCPY3D_BATCH_OP* opList,
                                                unsigned long long flags, CUstream hStream) {
  return driver_batch_copy_3d(numOps, opList, nullptr, flags, hStream, true,
                              "cuMemcpy3DBatchAsync_v2_ptsz");
}
