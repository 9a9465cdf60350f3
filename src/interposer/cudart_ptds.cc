// Per-thread-default-stream entry points. Programs built with `--default-stream per-thread`
// (CUDA_API_PER_THREAD_DEFAULT_STREAM) call `*_ptds` (synchronous) and `*_ptsz` (stream)
// variants, where a NULL stream means the calling thread's default stream. This file is
// compiled with CUDA_API_PER_THREAD_DEFAULT_STREAM defined, so the CUDA header renames every
// definition below (cudaMemcpy → cudaMemcpy_ptds, ...) and checks it against the real
// declaration. (__cudaLaunchKernel_ptsz lives with the other launch hooks.)
#ifndef CUDA_API_PER_THREAD_DEFAULT_STREAM
#error "cudart_ptds.cc must be compiled with -DCUDA_API_PER_THREAD_DEFAULT_STREAM"
#endif

#include "interposer/cudart_impl.h"

namespace impl = powertrain::emu::detail::impl;

// The exported names, as the trace and error messages show them.
#define PT_NAME(api) #api "_ptds"
#define PT_NAME_SZ(api) #api "_ptsz"

// ---- synchronous copies (_ptds) -------------------------------------------------------------

PT_EXPORT cudaError_t cudaMemcpy(void* dst, const void* src, size_t count,
                                 enum cudaMemcpyKind kind) {
  return impl::memcpy_1d(dst, src, count, kind, nullptr, false, true, PT_NAME(cudaMemcpy));
}

PT_EXPORT cudaError_t cudaMemcpy2D(void* dst, size_t dpitch, const void* src, size_t spitch,
                                   size_t width, size_t height, enum cudaMemcpyKind kind) {
  return impl::memcpy_2d(dst, dpitch, src, spitch, width, height, kind, nullptr, false, true,
                         PT_NAME(cudaMemcpy2D));
}

PT_EXPORT cudaError_t cudaMemcpyToSymbol(const void* symbol, const void* src, size_t count,
                                         size_t offset, enum cudaMemcpyKind kind) {
  return impl::memcpy_to_symbol(symbol, src, count, offset, kind, nullptr, false, true,
                                PT_NAME(cudaMemcpyToSymbol));
}

PT_EXPORT cudaError_t cudaMemcpyFromSymbol(void* dst, const void* symbol, size_t count,
                                           size_t offset, enum cudaMemcpyKind kind) {
  return impl::memcpy_from_symbol(dst, symbol, count, offset, kind, nullptr, false, true,
                                  PT_NAME(cudaMemcpyFromSymbol));
}

PT_EXPORT cudaError_t cudaMemset(void* devPtr, int value, size_t count) {
  return impl::memset_1d(devPtr, value, count, nullptr, false, true, PT_NAME(cudaMemset));
}

PT_EXPORT cudaError_t cudaMemset2D(void* devPtr, size_t pitch, int value, size_t width,
                                   size_t height) {
  return impl::memset_2d(devPtr, pitch, value, width, height, nullptr, false, true,
                         PT_NAME(cudaMemset2D));
}

// ---- stream-ordered calls (_ptsz) -------------------------------------------------------------

PT_EXPORT cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t count,
                                      enum cudaMemcpyKind kind, cudaStream_t stream) {
  return impl::memcpy_1d(dst, src, count, kind, stream, true, true, PT_NAME_SZ(cudaMemcpyAsync));
}

PT_EXPORT cudaError_t cudaMemcpy2DAsync(void* dst, size_t dpitch, const void* src, size_t spitch,
                                        size_t width, size_t height, enum cudaMemcpyKind kind,
                                        cudaStream_t stream) {
  return impl::memcpy_2d(dst, dpitch, src, spitch, width, height, kind, stream, true, true,
                         PT_NAME_SZ(cudaMemcpy2DAsync));
}

PT_EXPORT cudaError_t cudaMemcpyToSymbolAsync(const void* symbol, const void* src, size_t count,
                                              size_t offset, enum cudaMemcpyKind kind,
                                              cudaStream_t stream) {
  return impl::memcpy_to_symbol(symbol, src, count, offset, kind, stream, true, true,
                                PT_NAME_SZ(cudaMemcpyToSymbolAsync));
}

PT_EXPORT cudaError_t cudaMemcpyFromSymbolAsync(void* dst, const void* symbol, size_t count,
                                                size_t offset, enum cudaMemcpyKind kind,
                                                cudaStream_t stream) {
  return impl::memcpy_from_symbol(dst, symbol, count, offset, kind, stream, true, true,
                                  PT_NAME_SZ(cudaMemcpyFromSymbolAsync));
}

PT_EXPORT cudaError_t cudaMemsetAsync(void* devPtr, int value, size_t count, cudaStream_t stream) {
  return impl::memset_1d(devPtr, value, count, stream, true, true, PT_NAME_SZ(cudaMemsetAsync));
}

PT_EXPORT cudaError_t cudaMemset2DAsync(void* devPtr, size_t pitch, int value, size_t width,
                                        size_t height, cudaStream_t stream) {
  return impl::memset_2d(devPtr, pitch, value, width, height, stream, true, true,
                         PT_NAME_SZ(cudaMemset2DAsync));
}

PT_EXPORT cudaError_t cudaStreamQuery(cudaStream_t stream) {
  return impl::stream_query(stream, true, PT_NAME_SZ(cudaStreamQuery));
}

PT_EXPORT cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  return impl::stream_synchronize(stream, true, PT_NAME_SZ(cudaStreamSynchronize));
}

PT_EXPORT cudaError_t cudaStreamGetDevice(cudaStream_t hStream, int* device) {
  return impl::stream_get_device(hStream, device, true, PT_NAME_SZ(cudaStreamGetDevice));
}

PT_EXPORT cudaError_t cudaStreamGetFlags(cudaStream_t hStream, unsigned int* flags) {
  return impl::stream_get_flags(hStream, flags, true, PT_NAME_SZ(cudaStreamGetFlags));
}

PT_EXPORT cudaError_t cudaStreamGetId(cudaStream_t hStream, unsigned long long* streamId) {
  return impl::stream_get_id(hStream, streamId, true, PT_NAME_SZ(cudaStreamGetId));
}

PT_EXPORT cudaError_t cudaStreamGetPriority(cudaStream_t hStream, int* priority) {
  return impl::stream_get_priority(hStream, priority, true, PT_NAME_SZ(cudaStreamGetPriority));
}

PT_EXPORT cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  return impl::event_record(event, stream, 0, true, PT_NAME_SZ(cudaEventRecord));
}

PT_EXPORT cudaError_t cudaEventRecordWithFlags(cudaEvent_t event, cudaStream_t stream,
                                               unsigned int flags) {
  return impl::event_record(event, stream, flags, true, PT_NAME_SZ(cudaEventRecordWithFlags));
}

PT_EXPORT cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event,
                                          unsigned int flags) {
  return impl::stream_wait_event(stream, event, flags, true, PT_NAME_SZ(cudaStreamWaitEvent));
}

PT_EXPORT cudaError_t cudaStreamAddCallback(cudaStream_t stream, cudaStreamCallback_t callback,
                                            void* userData, unsigned int flags) {
  return impl::stream_add_callback(stream, callback, userData, flags, true,
                                   PT_NAME_SZ(cudaStreamAddCallback));
}

PT_EXPORT cudaError_t cudaStreamAttachMemAsync(cudaStream_t stream, void* devPtr, size_t length,
                                               unsigned int flags) {
  (void)devPtr;
  (void)length;
  (void)flags;
  return impl::stream_accept(stream, true, PT_NAME_SZ(cudaStreamAttachMemAsync));
}

PT_EXPORT cudaError_t cudaStreamIsCapturing(cudaStream_t stream,
                                            enum cudaStreamCaptureStatus* pCaptureStatus) {
  return impl::stream_is_capturing(stream, pCaptureStatus, true, PT_NAME_SZ(cudaStreamIsCapturing));
}

PT_EXPORT cudaError_t cudaStreamGetCaptureInfo(cudaStream_t stream,
                                               enum cudaStreamCaptureStatus* captureStatus_out,
                                               unsigned long long* id_out, cudaGraph_t* graph_out,
                                               const cudaGraphNode_t** dependencies_out,
                                               const cudaGraphEdgeData** edgeData_out,
                                               size_t* numDependencies_out) {
  return impl::stream_get_capture_info(stream, captureStatus_out, id_out, graph_out,
                                       dependencies_out, edgeData_out, numDependencies_out, true,
                                       PT_NAME_SZ(cudaStreamGetCaptureInfo));
}

PT_EXPORT cudaError_t cudaStreamGetAttribute(cudaStream_t stream, cudaStreamAttrID attr,
                                             cudaStreamAttrValue* value) {
  (void)attr;
  const cudaError_t error = impl::stream_accept(stream, true, PT_NAME_SZ(cudaStreamGetAttribute));
  if (error == cudaSuccess && value != nullptr) *value = cudaStreamAttrValue{};
  return error;
}

PT_EXPORT cudaError_t cudaStreamSetAttribute(cudaStream_t stream, cudaStreamAttrID attr,
                                             const cudaStreamAttrValue* param) {
  (void)attr;
  (void)param;
  return impl::stream_accept(stream, true, PT_NAME_SZ(cudaStreamSetAttribute));
}

PT_EXPORT cudaError_t cudaStreamCopyAttributes(cudaStream_t dst, cudaStream_t src) {
  const cudaError_t error = impl::stream_accept(dst, true, PT_NAME_SZ(cudaStreamCopyAttributes));
  if (error != cudaSuccess) return error;
  return impl::stream_accept(src, true, PT_NAME_SZ(cudaStreamCopyAttributes));
}

PT_EXPORT cudaError_t cudaLaunchKernel(const void* func, dim3 gridDim, dim3 blockDim, void** args,
                                       size_t sharedMem, cudaStream_t stream) {
  (void)args;
  return impl::launch(func, gridDim, blockDim, sharedMem, stream, true,
                      PT_NAME_SZ(cudaLaunchKernel));
}

PT_EXPORT cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t* config, const void* func,
                                          void** args) {
  (void)args;
  return impl::launch_ex(config, func, true, PT_NAME_SZ(cudaLaunchKernelExC));
}

PT_EXPORT cudaError_t cudaLaunchCooperativeKernel(const void* func, dim3 gridDim, dim3 blockDim,
                                                  void** args, size_t sharedMem,
                                                  cudaStream_t stream) {
  (void)args;
  return impl::launch_cooperative(func, gridDim, blockDim, sharedMem, stream, true,
                                  PT_NAME_SZ(cudaLaunchCooperativeKernel));
}

PT_EXPORT cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void* userData) {
  return impl::launch_host_func(stream, fn, userData, true, PT_NAME_SZ(cudaLaunchHostFunc));
}

PT_EXPORT cudaError_t cudaMallocAsync(void** devPtr, size_t size, cudaStream_t hStream) {
  return impl::malloc_async(devPtr, size, hStream, true, PT_NAME_SZ(cudaMallocAsync));
}

PT_EXPORT cudaError_t cudaFreeAsync(void* devPtr, cudaStream_t hStream) {
  return impl::free_async(devPtr, hStream, true, PT_NAME_SZ(cudaFreeAsync));
}

PT_EXPORT cudaError_t cudaMallocFromPoolAsync(void** ptr, size_t size, cudaMemPool_t memPool,
                                              cudaStream_t stream) {
  return impl::malloc_async(ptr, size, stream, true, PT_NAME_SZ(cudaMallocFromPoolAsync), &memPool);
}

// ---- stream capture and graph launch (cudart_graph.cc) ----------------------------------------

PT_EXPORT cudaError_t cudaStreamBeginCapture(cudaStream_t stream, enum cudaStreamCaptureMode mode) {
  return impl::begin_capture(stream, mode, true, PT_NAME_SZ(cudaStreamBeginCapture));
}

PT_EXPORT cudaError_t cudaStreamUpdateCaptureDependencies(cudaStream_t stream,
                                                          cudaGraphNode_t* dependencies,
                                                          const cudaGraphEdgeData* dependencyData,
                                                          size_t numDependencies,
                                                          unsigned int flags) {
  (void)dependencyData;
  if (powertrain::emu::detail::cudart_abi() == 12) {
    // CUDA 12's signature has no edge data: (stream, dependencies, count, flags).
    flags = static_cast<unsigned>(numDependencies);
    numDependencies = static_cast<size_t>(reinterpret_cast<std::uintptr_t>(dependencyData));
  }
  return impl::update_capture_dependencies(stream, dependencies, numDependencies, flags, true,
                                           PT_NAME_SZ(cudaStreamUpdateCaptureDependencies));
}

PT_EXPORT cudaError_t cudaStreamBeginCaptureToGraph(cudaStream_t stream, cudaGraph_t graph,
                                                    const cudaGraphNode_t* dependencies,
                                                    const cudaGraphEdgeData* dependencyData,
                                                    size_t numDependencies,
                                                    enum cudaStreamCaptureMode mode) {
  (void)dependencyData;
  if (graph == nullptr) {
    return powertrain::emu::detail::misuse(PT_NAME_SZ(cudaStreamBeginCaptureToGraph),
                                           cudaErrorInvalidValue, "graph is NULL");
  }
  return impl::begin_capture(stream, mode, true, PT_NAME_SZ(cudaStreamBeginCaptureToGraph), graph,
                             dependencies, numDependencies);
}

PT_EXPORT cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* pGraph) {
  return impl::end_capture(stream, pGraph, true, PT_NAME_SZ(cudaStreamEndCapture));
}

PT_EXPORT cudaError_t cudaGraphLaunch(cudaGraphExec_t graphExec, cudaStream_t stream) {
  return impl::graph_launch(graphExec, stream, true, PT_NAME_SZ(cudaGraphLaunch));
}

PT_EXPORT cudaError_t cudaGraphUpload(cudaGraphExec_t graphExec, cudaStream_t stream) {
  return impl::graph_upload(graphExec, stream, true, PT_NAME_SZ(cudaGraphUpload));
}
