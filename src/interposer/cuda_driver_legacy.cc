// The earlier forms of driver functions CUDA later renamed, written over the newest form.
// cuGetProcAddress hands them to callers that ask for an older CUDA version (kVersionedNames in
// cuda_driver.cc: NCCL asks for cuCtxCreate at 11040, CUDA 11 builds for cuStreamWaitValue32 at
// 8000), and programs linked against an older cuda.h call them by name. Where the signature did
// not change they forward; where it did, the missing arguments take the earlier meaning.
#include <cuda.h>

#include <cstddef>
#include <string>

#include "interposer/cuda_driver_common.h"
#include "interposer/cudart_internal.h"
#include "interposer/emulator.h"

namespace detail = powertrain::emu::detail;
using detail::ErrorScope;
using detail::to_driver;

// Per-thread-default-stream forms defined elsewhere in this library (cuda.h declares them only
// for --default-stream per-thread builds).
extern "C" {
CUresult cuStreamWaitValue32_v2_ptsz(CUstream, CUdeviceptr, cuuint32_t, unsigned int);
CUresult cuStreamWaitValue64_v2_ptsz(CUstream, CUdeviceptr, cuuint64_t, unsigned int);
CUresult cuStreamWriteValue32_v2_ptsz(CUstream, CUdeviceptr, cuuint32_t, unsigned int);
CUresult cuStreamWriteValue64_v2_ptsz(CUstream, CUdeviceptr, cuuint64_t, unsigned int);
CUresult cuStreamBatchMemOp_v2_ptsz(CUstream, unsigned int, CUstreamBatchMemOpParams*,
                                    unsigned int);
CUresult cuStreamBeginCapture_v2_ptsz(CUstream, CUstreamCaptureMode);
cudaError_t cudaStreamBeginCaptureToGraph_ptsz(cudaStream_t, cudaGraph_t, const cudaGraphNode_t*,
                                               const cudaGraphEdgeData*, size_t,
                                               cudaStreamCaptureMode);
cudaError_t cudaStreamUpdateCaptureDependencies_v2_ptsz(cudaStream_t, cudaGraphNode_t*,
                                                        const cudaGraphEdgeData*, size_t,
                                                        unsigned int);
cudaError_t cudaStreamAttachMemAsync_ptsz(cudaStream_t, void*, size_t, unsigned int);
CUresult cuCtxCreate_v2(CUcontext*, unsigned int, CUdevice);  // not declared by CUDA 13
}

// ---- stream memory operations (CUDA 8/9 forms; the _v2 forms of 11.7 have the same arguments)

#undef cuStreamWaitValue32
#undef cuStreamWaitValue64
#undef cuStreamWriteValue32
#undef cuStreamWriteValue64
#undef cuStreamBatchMemOp
PT_EXPORT CUresult cuStreamWaitValue32(CUstream stream, CUdeviceptr address, cuuint32_t value,
                                       unsigned int flags) {
  return cuStreamWaitValue32_v2(stream, address, value, flags);
}
PT_EXPORT CUresult cuStreamWaitValue32_ptsz(CUstream stream, CUdeviceptr address, cuuint32_t value,
                                            unsigned int flags) {
  return cuStreamWaitValue32_v2_ptsz(stream, address, value, flags);
}
PT_EXPORT CUresult cuStreamWaitValue64(CUstream stream, CUdeviceptr address, cuuint64_t value,
                                       unsigned int flags) {
  return cuStreamWaitValue64_v2(stream, address, value, flags);
}
PT_EXPORT CUresult cuStreamWaitValue64_ptsz(CUstream stream, CUdeviceptr address, cuuint64_t value,
                                            unsigned int flags) {
  return cuStreamWaitValue64_v2_ptsz(stream, address, value, flags);
}
PT_EXPORT CUresult cuStreamWriteValue32(CUstream stream, CUdeviceptr address, cuuint32_t value,
                                        unsigned int flags) {
  return cuStreamWriteValue32_v2(stream, address, value, flags);
}
PT_EXPORT CUresult cuStreamWriteValue32_ptsz(CUstream stream, CUdeviceptr address, cuuint32_t value,
                                             unsigned int flags) {
  return cuStreamWriteValue32_v2_ptsz(stream, address, value, flags);
}
PT_EXPORT CUresult cuStreamWriteValue64(CUstream stream, CUdeviceptr address, cuuint64_t value,
                                        unsigned int flags) {
  return cuStreamWriteValue64_v2(stream, address, value, flags);
}
PT_EXPORT CUresult cuStreamWriteValue64_ptsz(CUstream stream, CUdeviceptr address, cuuint64_t value,
                                             unsigned int flags) {
  return cuStreamWriteValue64_v2_ptsz(stream, address, value, flags);
}
// The CUDA 8 parameter union has the _v2 one's size and the same operation layouts.
PT_EXPORT CUresult cuStreamBatchMemOp(CUstream stream, unsigned int count,
                                      CUstreamBatchMemOpParams* params, unsigned int flags) {
  return cuStreamBatchMemOp_v2(stream, count, params, flags);
}
PT_EXPORT CUresult cuStreamBatchMemOp_ptsz(CUstream stream, unsigned int count,
                                           CUstreamBatchMemOpParams* params, unsigned int flags) {
  return cuStreamBatchMemOp_v2_ptsz(stream, count, params, flags);
}

// ---- stream capture (CUDA 10.0: no mode; 10.1 and 11.3: fewer outputs) -------------------------

#undef cuStreamBeginCapture
#undef cuStreamGetCaptureInfo
#undef cuStreamUpdateCaptureDependencies
PT_EXPORT CUresult cuStreamBeginCapture(CUstream stream) {
  return cuStreamBeginCapture_v2(stream, CU_STREAM_CAPTURE_MODE_GLOBAL);
}
PT_EXPORT CUresult cuStreamBeginCapture_ptsz(CUstream stream) {
  return cuStreamBeginCapture_v2_ptsz(stream, CU_STREAM_CAPTURE_MODE_GLOBAL);
}
PT_EXPORT CUresult cuStreamGetCaptureInfo(CUstream stream, CUstreamCaptureStatus* status,
                                          cuuint64_t* id) {
  return detail::driver_capture_info(stream, status, id, nullptr, nullptr, nullptr, nullptr, false,
                                     "cuStreamGetCaptureInfo");
}
PT_EXPORT CUresult cuStreamGetCaptureInfo_ptsz(CUstream stream, CUstreamCaptureStatus* status,
                                               cuuint64_t* id) {
  return detail::driver_capture_info(stream, status, id, nullptr, nullptr, nullptr, nullptr, true,
                                     "cuStreamGetCaptureInfo_ptsz");
}
PT_EXPORT CUresult cuStreamGetCaptureInfo_v2(CUstream stream, CUstreamCaptureStatus* status,
                                             cuuint64_t* id, CUgraph* graph,
                                             const CUgraphNode** dependencies, size_t* count) {
  return detail::driver_capture_info(stream, status, id, graph, dependencies, nullptr, count, false,
                                     "cuStreamGetCaptureInfo_v2");
}
PT_EXPORT CUresult cuStreamGetCaptureInfo_v2_ptsz(CUstream stream, CUstreamCaptureStatus* status,
                                                  cuuint64_t* id, CUgraph* graph,
                                                  const CUgraphNode** dependencies, size_t* count) {
  return detail::driver_capture_info(stream, status, id, graph, dependencies, nullptr, count, true,
                                     "cuStreamGetCaptureInfo_v2_ptsz");
}
PT_EXPORT CUresult cuStreamGetCaptureInfo_v3_ptsz(CUstream stream, CUstreamCaptureStatus* status,
                                                  cuuint64_t* id, CUgraph* graph,
                                                  const CUgraphNode** dependencies,
                                                  const CUgraphEdgeData** edges, size_t* count) {
  return detail::driver_capture_info(stream, status, id, graph, dependencies, edges, count, true,
                                     "cuStreamGetCaptureInfo_v3_ptsz");
}
PT_EXPORT CUresult cuStreamUpdateCaptureDependencies(CUstream stream, CUgraphNode* dependencies,
                                                     size_t count, unsigned int flags) {
  return cuStreamUpdateCaptureDependencies_v2(stream, dependencies, nullptr, count, flags);
}
PT_EXPORT CUresult cuStreamUpdateCaptureDependencies_ptsz(CUstream stream,
                                                          CUgraphNode* dependencies, size_t count,
                                                          unsigned int flags) {
  ErrorScope scope;
  return to_driver(cudaStreamUpdateCaptureDependencies_v2_ptsz(
      stream, reinterpret_cast<cudaGraphNode_t*>(dependencies), nullptr, count, flags));
}
PT_EXPORT CUresult cuStreamUpdateCaptureDependencies_v2_ptsz(CUstream stream,
                                                             CUgraphNode* dependencies,
                                                             const CUgraphEdgeData* edges,
                                                             size_t count, unsigned int flags) {
  ErrorScope scope;
  return to_driver(cudaStreamUpdateCaptureDependencies_v2_ptsz(
      stream, reinterpret_cast<cudaGraphNode_t*>(dependencies),
      reinterpret_cast<const cudaGraphEdgeData*>(edges), count, flags));
}
PT_EXPORT CUresult cuStreamBeginCaptureToGraph_ptsz(CUstream stream, CUgraph graph,
                                                    const CUgraphNode* dependencies,
                                                    const CUgraphEdgeData* edges, size_t count,
                                                    CUstreamCaptureMode mode) {
  ErrorScope scope;
  return to_driver(
      cudaStreamBeginCaptureToGraph_ptsz(stream, reinterpret_cast<cudaGraph_t>(graph),
                                         reinterpret_cast<const cudaGraphNode_t*>(dependencies),
                                         reinterpret_cast<const cudaGraphEdgeData*>(edges), count,
                                         static_cast<cudaStreamCaptureMode>(mode)));
}
// CUDA 10.2's exec update: the error node and the result as two outputs.
namespace {
CUresult exec_update_v1(CUgraphExec exec, CUgraph graph, CUgraphNode* error_node,
                        CUgraphExecUpdateResult* result) {
  CUgraphExecUpdateResultInfo info{};
  const CUresult status = cuGraphExecUpdate_v2(exec, graph, &info);
  if (error_node != nullptr) *error_node = info.errorNode;
  if (result != nullptr) *result = info.result;
  return status;
}
}  // namespace
#undef cuGraphExecUpdate
PT_EXPORT CUresult cuGraphExecUpdate(CUgraphExec exec, CUgraph graph, CUgraphNode* hErrorNode_out,
                                     CUgraphExecUpdateResult* updateResult_out) {
  return exec_update_v1(exec, graph, hErrorNode_out, updateResult_out);
}

// ---- contexts and memory (CUDA 4–11 forms with the arguments of today's) -----------------------

#undef cuDevicePrimaryCtxRelease
#undef cuDevicePrimaryCtxReset
#undef cuDevicePrimaryCtxSetFlags
#undef cuIpcOpenMemHandle
#undef cuMemHostRegister
PT_EXPORT CUresult cuDevicePrimaryCtxRelease(CUdevice device) {
  return cuDevicePrimaryCtxRelease_v2(device);
}
PT_EXPORT CUresult cuDevicePrimaryCtxReset(CUdevice device) {
  return cuDevicePrimaryCtxReset_v2(device);
}
PT_EXPORT CUresult cuDevicePrimaryCtxSetFlags(CUdevice device, unsigned int flags) {
  return cuDevicePrimaryCtxSetFlags_v2(device, flags);
}
PT_EXPORT CUresult cuIpcOpenMemHandle(CUdeviceptr* pointer, CUipcMemHandle handle,
                                      unsigned int flags) {
  return cuIpcOpenMemHandle_v2(pointer, handle, flags);
}
PT_EXPORT CUresult cuMemHostRegister(void* pointer, size_t bytes, unsigned int flags) {
  return cuMemHostRegister_v2(pointer, bytes, flags);
}

// CUDA 11.4's context with execution affinity (an SM count limit): the context is made; the limit
// is not modelled (its kernels are timed on the whole device), which is reported as an assumption.
PT_EXPORT CUresult cuCtxCreate_v3(CUcontext* pctx, CUexecAffinityParam* paramsArray, int numParams,
                                  unsigned int flags, CUdevice dev) {
  if (numParams < 0 || (numParams > 0 && paramsArray == nullptr)) return CUDA_ERROR_INVALID_VALUE;
  const CUresult status = cuCtxCreate_v2(pctx, flags, dev);
  if (status == CUDA_SUCCESS && numParams > 0) {
    powertrain::emu::report_assumption(
        "cuCtxCreate_v3",
        "execution affinity (an SM count limit) is not modelled: the context's kernels are timed "
        "on the whole device");
  }
  return status;
}

// Managed memory attached to a stream: every emulated device sees managed memory, so the
// attachment only checks the stream and the range.
PT_EXPORT CUresult cuStreamAttachMemAsync(CUstream stream, CUdeviceptr dptr, size_t length,
                                          unsigned int flags) {
  ErrorScope scope;
  return to_driver(cudaStreamAttachMemAsync(stream, reinterpret_cast<void*>(dptr), length, flags));
}
PT_EXPORT CUresult cuStreamAttachMemAsync_ptsz(CUstream stream, CUdeviceptr dptr, size_t length,
                                               unsigned int flags) {
  ErrorScope scope;
  return to_driver(
      cudaStreamAttachMemAsync_ptsz(stream, reinterpret_cast<void*>(dptr), length, flags));
}
