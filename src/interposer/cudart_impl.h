// Implementations shared by the exported entry points and their per-thread-default-stream twins
// (`*_ptds` / `*_ptsz`, cudart_ptds.cc): `per_thread` selects what the NULL stream means and
// `api` is the exported name written to the trace and to error messages.
#pragma once

#include "interposer/cudart_internal.h"

namespace powertrain::emu::detail::impl {

// Streams and events (cudart_stream.cc).
cudaError_t stream_query(cudaStream_t stream, bool per_thread, const char* api);
/// `named`: the record carries `api` (a library call that waits for its result, e.g. a cuBLAS
/// reduction in host pointer mode).
cudaError_t stream_synchronize(cudaStream_t stream, bool per_thread, const char* api,
                               bool named = false);
cudaError_t stream_get_device(cudaStream_t stream, int* device, bool per_thread, const char* api);
cudaError_t stream_get_flags(cudaStream_t stream, unsigned* flags, bool per_thread,
                             const char* api);
cudaError_t stream_get_id(cudaStream_t stream, unsigned long long* id, bool per_thread,
                          const char* api);
cudaError_t stream_get_priority(cudaStream_t stream, int* priority, bool per_thread,
                                const char* api);
cudaError_t event_record(cudaEvent_t event, cudaStream_t stream, unsigned flags, bool per_thread,
                         const char* api);
cudaError_t stream_wait_event(cudaStream_t stream, cudaEvent_t event, unsigned flags,
                              bool per_thread, const char* api);
cudaError_t stream_add_callback(cudaStream_t stream, cudaStreamCallback_t callback, void* user_data,
                                unsigned flags, bool per_thread, const char* api);
cudaError_t launch_host_func(cudaStream_t stream, cudaHostFn_t fn, void* user_data, bool per_thread,
                             const char* api);
cudaError_t stream_is_capturing(cudaStream_t stream, cudaStreamCaptureStatus* status,
                                bool per_thread, const char* api);
cudaError_t stream_get_capture_info(cudaStream_t stream, cudaStreamCaptureStatus* status,
                                    unsigned long long* id, cudaGraph_t* graph,
                                    const cudaGraphNode_t** dependencies,
                                    const cudaGraphEdgeData** edge_data, size_t* num_dependencies,
                                    bool per_thread, const char* api);
/// cudaStreamUpdateCaptureDependencies (cudart_stream.cc over cudart_graph.cc's capture state).
cudaError_t update_capture_dependencies(cudaStream_t stream, cudaGraphNode_t* dependencies,
                                        size_t count, unsigned flags, bool per_thread,
                                        const char* api);
/// Validates the stream only (stream attributes, memory attach/prefetch hints: accepted no-ops).
cudaError_t stream_accept(cudaStream_t stream, bool per_thread, const char* api);

// Stream-ordered allocation (cudart_memory.cc).
/// `from_pool`: cudaMallocFromPoolAsync's pool argument (the memory is on the pool's device; a NULL
/// or destroyed pool is cudaErrorInvalidValue); NULL: the stream's device's default pool.
cudaError_t malloc_async(void** pointer, size_t size, cudaStream_t stream, bool per_thread,
                         const char* api, const cudaMemPool_t* from_pool = nullptr);
cudaError_t free_async(void* pointer, cudaStream_t stream, bool per_thread, const char* api);

// Copies and memsets (cudart_copy.cc). `async` = the *Async form (recorded as such).
cudaError_t memcpy_1d(void* dst, const void* src, size_t count, cudaMemcpyKind kind,
                      cudaStream_t stream, bool async, bool per_thread, const char* api);
cudaError_t memcpy_2d(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width,
                      size_t height, cudaMemcpyKind kind, cudaStream_t stream, bool async,
                      bool per_thread, const char* api);
/// `depth` slices of `height` rows of `width` bytes; row pitches and slice pitches in bytes
/// (cudaMemcpy3D and the copies to and from CUDA arrays, cudart_array.cc).
cudaError_t memcpy_3d(void* dst, size_t dpitch, size_t dslice, const void* src, size_t spitch,
                      size_t sslice, size_t width, size_t height, size_t depth, cudaMemcpyKind kind,
                      cudaStream_t stream, bool async, bool per_thread, const char* api);
/// The copy kinds allowed to (`to_symbol`) or from a variable: misuse reported otherwise.
cudaError_t symbol_copy_direction(bool to_symbol, cudaMemcpyKind kind, const char* api);
/// A registered __device__/__constant__ variable's storage for `count` bytes at `offset`
/// (misuse reported and an error returned when the symbol is unknown or the range too long).
cudaError_t symbol_range(const void* symbol, std::size_t count, std::size_t offset, const char* api,
                         unsigned char** storage);
cudaError_t memcpy_to_symbol(const void* symbol, const void* src, size_t count, size_t offset,
                             cudaMemcpyKind kind, cudaStream_t stream, bool async, bool per_thread,
                             const char* api);
cudaError_t memcpy_from_symbol(void* dst, const void* symbol, size_t count, size_t offset,
                               cudaMemcpyKind kind, cudaStream_t stream, bool async,
                               bool per_thread, const char* api);
/// cudaMemcpyBatchAsync's copies (checked as a whole, then one async copy each; `fail_index`, when
/// not NULL, gets the failing copy or SIZE_MAX). Also the driver's cuMemcpyBatchAsync.
cudaError_t batch_copy_1d(void* const* dsts, const void* const* srcs, const size_t* sizes,
                          size_t count, const cudaMemcpyAttributes* attrs,
                          const size_t* attr_indices, size_t attr_count, size_t* fail_index,
                          cudaStream_t stream, bool per_thread, const char* api);
/// cudaMemcpy3DBatchAsync's operations (cudart_batch_copy.cc; also the driver's).
cudaError_t batch_copy_3d(std::size_t count, const cudaMemcpy3DBatchOp* ops, size_t* fail_index,
                          unsigned long long flags, cudaStream_t stream, bool per_thread,
                          const char* api);
cudaError_t memset_1d(void* pointer, int value, size_t count, cudaStream_t stream, bool async,
                      bool per_thread, const char* api);
/// cudaMemset3D[Async]: `extent` (width in bytes) of a cudaMalloc3D-style pitched pointer.
cudaError_t memset_3d(cudaPitchedPtr pointer, int value, cudaExtent extent, cudaStream_t stream,
                      bool async, bool per_thread, const char* api);
cudaError_t memset_2d(void* pointer, size_t pitch, int value, size_t width, size_t height,
                      cudaStream_t stream, bool async, bool per_thread, const char* api);

// Kernel launches (cudart_launch.cc). `func` is a host stub or a cudaKernel_t handle.
cudaError_t launch(const void* func, dim3 grid, dim3 block, size_t shmem, cudaStream_t stream,
                   bool per_thread, const char* api);
cudaError_t launch_ex(const cudaLaunchConfig_t* config, const void* func, bool per_thread,
                      const char* api);
/// As launch(), after checking that every block of the grid can be resident at once.
cudaError_t launch_cooperative(const void* func, dim3 grid, dim3 block, size_t shmem,
                               cudaStream_t stream, bool per_thread, const char* api);

// Stream capture and graph launch (cudart_graph.cc).
/// `into` (cudaStreamBeginCaptureToGraph): capture into that existing graph, after its nodes
/// `deps`; NULL: a new graph.
cudaError_t begin_capture(cudaStream_t stream, cudaStreamCaptureMode mode, bool per_thread,
                          const char* api, cudaGraph_t into = nullptr,
                          const cudaGraphNode_t* deps = nullptr, std::size_t count = 0);
cudaError_t end_capture(cudaStream_t stream, cudaGraph_t* out, bool per_thread, const char* api);
cudaError_t graph_launch(cudaGraphExec_t exec, cudaStream_t stream, bool per_thread,
                         const char* api);
/// Second pass of `emulate --two-pass`: waits (real time) until cudaDeviceSynchronize of `device`
/// may return on the paced predicted schedule; no-op otherwise (cudart_stream.cc).
void pace_device_synchronize(int device);
/// The same for any paced wait: `key` is a stream id or one of trace_schema::kPace* (a blocking
/// copy, cudaEventSynchronize). Consumes the occurrence of (device, key).
void pace_wait(int device, std::int64_t key);
/// cudaGraphUpload: checks the exec and the stream (nothing to upload to an emulated device).
cudaError_t graph_upload(cudaGraphExec_t exec, cudaStream_t stream, bool per_thread,
                         const char* api);

}  // namespace powertrain::emu::detail::impl
