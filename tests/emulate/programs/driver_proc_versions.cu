// cuGetProcAddress by version: a caller built against an older CUDA gets the form of a renamed
// function with that CUDA's signature (NCCL asks for cuCtxCreate at 11040, vLLM for
// cuMemcpyBatchAsync at 12080), a caller older than a function gets "version not sufficient",
// and the forms the CUDA 13 headers no longer name (cuGraphInstantiate with an error node and a
// log, cuCtxGetDevice_v2 / cuCtxSynchronize_v2 / cuStreamGetCtx_v2 with a context argument) work.
#include <cuda.h>
#include <cudaProfiler.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstring>

#include "emu_check.h"
#include "emu_driver_check.h"

namespace {

int checks = 0;

void* exported(const char* name) {
  void* f = dlsym(RTLD_DEFAULT, name);
  if (f == nullptr) {
    std::fprintf(stderr, "driver_proc_versions: the driver exports no %s\n", name);
    std::exit(1);
  }
  return f;
}

// `name` asked for at `version` is the exported function `expected`.
void expect_form(const char* name, int version, const char* expected, cuuint64_t flags = 0) {
  void* f = nullptr;
  CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  CU_CHECK(cuGetProcAddress(name, &f, version, flags, &status));
  if (status != CU_GET_PROC_ADDRESS_SUCCESS || f != exported(expected)) {
    std::fprintf(stderr, "cuGetProcAddress(%s, %d): status %d, not %s\n", name, version,
                 static_cast<int>(status), expected);
    std::exit(1);
  }
  ++checks;
}

}  // namespace

int main() {
  CUdevice device;
  CUcontext context = current_primary_context(&device);

  expect_form("cuCtxCreate", 3020, "cuCtxCreate_v2");
  expect_form("cuCtxCreate", 11040, "cuCtxCreate_v3");
  expect_form("cuCtxCreate", 12040, "cuCtxCreate_v3");
  expect_form("cuCtxCreate", 13000, "cuCtxCreate_v4");
  expect_form("cuStreamGetCaptureInfo", 10010, "cuStreamGetCaptureInfo");
  expect_form("cuStreamGetCaptureInfo", 11030, "cuStreamGetCaptureInfo_v2");
  expect_form("cuStreamGetCaptureInfo", 12030, "cuStreamGetCaptureInfo_v3");
  expect_form("cuMemcpyBatchAsync", 12080, "cuMemcpyBatchAsync");
  expect_form("cuMemcpyBatchAsync", 13000, "cuMemcpyBatchAsync_v2");
  expect_form("cuMemPrefetchAsync", 12000, "cuMemPrefetchAsync");
  expect_form("cuMemPrefetchAsync", 12020, "cuMemPrefetchAsync_v2");
  expect_form("cuMemAlloc", 12000, "cuMemAlloc_v2");
  expect_form("cuCtxGetDevice", 12090, "cuCtxGetDevice");
  expect_form("cuCtxGetDevice", 13000, "cuCtxGetDevice_v2");
  expect_form("cuGraphInstantiate", 11000, "cuGraphInstantiate_v2");
  expect_form("cuGraphInstantiate", 12000, "cuGraphInstantiateWithFlags");  // cuda.h's mapping
  expect_form("cuLaunchKernel", 12000, "cuLaunchKernel");                   // one form only
  // Each form's per-thread variant (_ptsz, or _ptds for synchronous copies).
  expect_form("cuStreamGetCtx", 13000, "cuStreamGetCtx_v2_ptsz",
              CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
  expect_form("cuStreamGetCtx", 12000, "cuStreamGetCtx_ptsz",
              CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
  expect_form("cuMemcpyBatchAsync", 12080, "cuMemcpyBatchAsync_ptsz",
              CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
  expect_form("cuMemcpyHtoD", 12000, "cuMemcpyHtoD_v2_ptds",
              CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
  expect_form("cuGraphInstantiateWithParams", 12000, "cuGraphInstantiateWithParams_ptsz",
              CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
  expect_form("cuStreamBeginCapture", 12000, "cuStreamBeginCapture_v2_ptsz",
              CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);

  // Older than the function: not found, and why.
  void* f = reinterpret_cast<void*>(1);
  CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SUCCESS;
  const CUresult too_old = cuGetProcAddress("cuMemcpyBatchAsync", &f, 12060, 0, &status);
  EMU_REQUIRE(too_old == CUDA_ERROR_NOT_FOUND && f == nullptr &&
              status == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
  const CUresult unknown = cuGetProcAddress("cuNoSuchFunction", &f, 13000, 0, &status);
  EMU_REQUIRE(unknown == CUDA_ERROR_NOT_FOUND && status == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
  ++checks;

  // The older forms run: CUDA 11's instantiation with an error node and a log ...
  CUgraph graph;
  CU_CHECK(cuGraphCreate(&graph, 0));
  CUgraphNode empty;
  CU_CHECK(cuGraphAddEmptyNode(&empty, graph, nullptr, 0));
  using Instantiate = CUresult (*)(CUgraphExec*, CUgraph, CUgraphNode*, char*, size_t);
  CU_CHECK(cuGetProcAddress("cuGraphInstantiate", &f, 11000, 0, &status));
  CUgraphExec exec = nullptr;
  CUgraphNode error_node = empty;
  char log[16];
  std::memset(log, 'x', sizeof log);
  CU_CHECK(reinterpret_cast<Instantiate>(f)(&exec, graph, &error_node, log, sizeof log));
  EMU_REQUIRE(exec != nullptr && error_node == nullptr && log[0] == '\0');
  CU_CHECK(cuGraphLaunch(exec, nullptr));
  CU_CHECK(cuGraphExecDestroy(exec));
  CU_CHECK(cuGraphDestroy(graph));
  ++checks;

  // ... and CUDA 13's context-naming forms.
  using GetDevice = CUresult (*)(CUdevice*, CUcontext);
  using Synchronize = CUresult (*)(CUcontext);
  using GetCtx = CUresult (*)(CUstream, CUcontext*, CUgreenCtx*);
  CUdevice named = -1;
  CU_CHECK(reinterpret_cast<GetDevice>(exported("cuCtxGetDevice_v2"))(&named, context));
  EMU_REQUIRE(named == device);
  CU_CHECK(reinterpret_cast<Synchronize>(exported("cuCtxSynchronize_v2"))(context));
  CU_CHECK(reinterpret_cast<Synchronize>(exported("cuCtxSynchronize_v2"))(nullptr));
  CUstream stream;
  CU_CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  CUcontext of_stream = nullptr;
  CUgreenCtx green = reinterpret_cast<CUgreenCtx>(1);
  CU_CHECK(reinterpret_cast<GetCtx>(exported("cuStreamGetCtx_v2"))(stream, &of_stream, &green));
  EMU_REQUIRE(of_stream == context && green == nullptr);
  CU_CHECK(cuStreamDestroy(stream));
  ++checks;

  // The batched copy in both forms, as vLLM (12.8, with failIdx) and a CUDA 13 build call it.
  using Batch128 = CUresult (*)(CUdeviceptr*, CUdeviceptr*, size_t*, size_t, CUmemcpyAttributes*,
                                size_t*, size_t, size_t*, CUstream);
  using Batch130 = CUresult (*)(CUdeviceptr*, CUdeviceptr*, size_t*, size_t, CUmemcpyAttributes*,
                                size_t*, size_t, CUstream);
  CUdeviceptr device_buffer;
  CU_CHECK(cuMemAlloc(&device_buffer, 256));
  int host_in[32], host_out[32] = {};
  for (int i = 0; i < 32; ++i) host_in[i] = i * 7;
  CUstream copy_stream;
  CU_CHECK(cuStreamCreate(&copy_stream, CU_STREAM_NON_BLOCKING));
  CUmemcpyAttributes attrs = {};
  attrs.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
  size_t attr_index = 0;
  CUdeviceptr to_device[2] = {device_buffer, device_buffer + 64};
  CUdeviceptr from_host[2] = {reinterpret_cast<CUdeviceptr>(host_in),
                              reinterpret_cast<CUdeviceptr>(host_in + 16)};
  size_t sizes[2] = {64, 64};
  size_t fail = 0;
  CU_CHECK(cuGetProcAddress("cuMemcpyBatchAsync", &f, 12080, 0, &status));
  CU_CHECK(reinterpret_cast<Batch128>(f)(to_device, from_host, sizes, 2, &attrs, &attr_index, 1,
                                         &fail, copy_stream));
  CUdeviceptr to_host[2] = {reinterpret_cast<CUdeviceptr>(host_out),
                            reinterpret_cast<CUdeviceptr>(host_out + 16)};
  CU_CHECK(cuGetProcAddress("cuMemcpyBatchAsync", &f, 13000, 0, &status));
  CU_CHECK(reinterpret_cast<Batch130>(f)(to_host, to_device, sizes, 2, &attrs, &attr_index, 1,
                                         copy_stream));
  CU_CHECK(cuStreamSynchronize(copy_stream));
  EMU_REQUIRE(std::memcmp(host_in, host_out, sizeof host_in) == 0);
  // The legacy NULL stream cannot take a batch.
  EMU_REQUIRE(reinterpret_cast<Batch130>(f)(to_host, to_device, sizes, 2, &attrs, &attr_index, 1,
                                            nullptr) == CUDA_ERROR_INVALID_VALUE);
  // The 3D batch in both forms: 64 packed bytes (16 x 2 x 2) into rows of 32 on the device, back.
  using Batch3D128 =
      CUresult (*)(size_t, CUDA_MEMCPY3D_BATCH_OP*, size_t*, unsigned long long, CUstream);
  using Batch3D130 = CUresult (*)(size_t, CUDA_MEMCPY3D_BATCH_OP*, unsigned long long, CUstream);
  CUDA_MEMCPY3D_BATCH_OP op3 = {};
  op3.src.type = CU_MEMCPY_OPERAND_TYPE_POINTER;
  op3.src.op.ptr.ptr = reinterpret_cast<CUdeviceptr>(host_in);
  op3.dst.type = CU_MEMCPY_OPERAND_TYPE_POINTER;
  op3.dst.op.ptr.ptr = device_buffer + 128;
  op3.dst.op.ptr.rowLength = 32;
  op3.extent = {16, 2, 2};
  op3.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
  fail = 0;
  CU_CHECK(cuGetProcAddress("cuMemcpy3DBatchAsync", &f, 12080, 0, &status));
  CU_CHECK(reinterpret_cast<Batch3D128>(f)(1, &op3, &fail, 0, copy_stream));
  CUDA_MEMCPY3D_BATCH_OP back3 = op3;
  back3.src = op3.dst;
  back3.dst = op3.src;
  back3.dst.op.ptr.ptr = reinterpret_cast<CUdeviceptr>(host_out);
  std::memset(host_out, 0, sizeof host_out);
  CU_CHECK(cuGetProcAddress("cuMemcpy3DBatchAsync", &f, 13000, 0, &status));
  CU_CHECK(reinterpret_cast<Batch3D130>(f)(1, &back3, 0, copy_stream));
  CU_CHECK(cuStreamSynchronize(copy_stream));
  EMU_REQUIRE(std::memcmp(host_in, host_out, 64) == 0);
  CU_CHECK(cuStreamDestroy(copy_stream));
  CU_CHECK(cuMemFree(device_buffer));
  ++checks;

  // The earlier forms, as a CUDA 10/11 build asks for them: capture without a mode, capture info
  // with fewer outputs, dependencies without edge data, the exec update with two outputs, the
  // CUDA 8 stream memory operations and CUDA 11.4's context with execution affinity.
  using BeginV1 = CUresult (*)(CUstream);
  using InfoV1 = CUresult (*)(CUstream, CUstreamCaptureStatus*, cuuint64_t*);
  using InfoV2 = CUresult (*)(CUstream, CUstreamCaptureStatus*, cuuint64_t*, CUgraph*,
                              const CUgraphNode**, size_t*);
  using UpdateV1 = CUresult (*)(CUstream, CUgraphNode*, size_t, unsigned int);
  using ExecUpdateV1 = CUresult (*)(CUgraphExec, CUgraph, CUgraphNode*, CUgraphExecUpdateResult*);
  using WriteV1 = CUresult (*)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);
  using CtxCreateV3 = CUresult (*)(CUcontext*, CUexecAffinityParam*, int, unsigned int, CUdevice);
  const auto old_form = [&](const char* name, int version) {
    void* entry = nullptr;
    CU_CHECK(cuGetProcAddress(name, &entry, version, 0, &status));
    EMU_REQUIRE(entry != nullptr);
    return entry;
  };
  CUstream capture_stream;
  CU_CHECK(cuStreamCreate(&capture_stream, CU_STREAM_NON_BLOCKING));
  CUdeviceptr flag;
  CU_CHECK(cuMemAlloc(&flag, 64));
  CU_CHECK(reinterpret_cast<BeginV1>(old_form("cuStreamBeginCapture", 10000))(capture_stream));
  CUstreamCaptureStatus capture_status = CU_STREAM_CAPTURE_STATUS_NONE;
  cuuint64_t capture_id = 0;
  CU_CHECK(reinterpret_cast<InfoV1>(old_form("cuStreamGetCaptureInfo", 10010))(
      capture_stream, &capture_status, &capture_id));
  EMU_REQUIRE(capture_status == CU_STREAM_CAPTURE_STATUS_ACTIVE && capture_id != 0);
  CU_CHECK(cuMemsetD8Async(flag, 1, 64, capture_stream));
  CUgraph captured = nullptr;
  const CUgraphNode* tail = nullptr;
  size_t tail_count = 0;
  CU_CHECK(reinterpret_cast<InfoV2>(old_form("cuStreamGetCaptureInfo", 11030))(
      capture_stream, &capture_status, &capture_id, &captured, &tail, &tail_count));
  EMU_REQUIRE(captured != nullptr && tail_count == 1);
  CUgraphNode memset_node = tail[0];
  CU_CHECK(reinterpret_cast<UpdateV1>(old_form("cuStreamUpdateCaptureDependencies", 11030))(
      capture_stream, &memset_node, 1, CU_STREAM_SET_CAPTURE_DEPENDENCIES));
  CU_CHECK(reinterpret_cast<WriteV1>(old_form("cuStreamWriteValue32", 8000))(
      capture_stream, flag, 7, CU_STREAM_WRITE_VALUE_DEFAULT));
  CU_CHECK(cuStreamEndCapture(capture_stream, &captured));
  CUgraphExec captured_exec;
  CU_CHECK(cuGraphInstantiateWithFlags(&captured_exec, captured, 0));
  CUgraphNode update_error = memset_node;
  CUgraphExecUpdateResult update_result = CU_GRAPH_EXEC_UPDATE_ERROR;
  CU_CHECK(reinterpret_cast<ExecUpdateV1>(old_form("cuGraphExecUpdate", 10020))(
      captured_exec, captured, &update_error, &update_result));
  EMU_REQUIRE(update_result == CU_GRAPH_EXEC_UPDATE_SUCCESS && update_error == nullptr);
  CU_CHECK(cuGraphLaunch(captured_exec, capture_stream));
  CU_CHECK(reinterpret_cast<WriteV1>(old_form("cuStreamWaitValue32", 8000))(
      capture_stream, flag, 7, CU_STREAM_WAIT_VALUE_EQ));
  CU_CHECK(cuStreamSynchronize(capture_stream));
  CU_CHECK(cuGraphExecDestroy(captured_exec));
  CU_CHECK(cuGraphDestroy(captured));
  CU_CHECK(cuMemFree(flag));
  CU_CHECK(cuStreamDestroy(capture_stream));
  CUexecAffinityParam affinity{};
  affinity.type = CU_EXEC_AFFINITY_TYPE_SM_COUNT;
  affinity.param.smCount.val = 16;
  CUcontext limited = nullptr;
  CU_CHECK(reinterpret_cast<CtxCreateV3>(old_form("cuCtxCreate", 11040))(&limited, &affinity, 1, 0,
                                                                         device));
  CU_CHECK(cuCtxDestroy(limited));
  CU_CHECK(cuCtxSetCurrent(context));
  ++checks;

  // The driver's twins of the CUDA 13 runtime queries, and the access a mapping was given.
  const CUatomicOperation add = CU_ATOMIC_OPERATION_INTEGER_ADD;
  unsigned int host_caps = 99;
  CU_CHECK(cuDeviceGetHostAtomicCapabilities(&host_caps, &add, 1, device));
  EMU_REQUIRE(host_caps == 0);
  size_t linear_width = 0;
  CU_CHECK(cuDeviceGetTexture1DLinearMaxWidth(&linear_width, CU_AD_FORMAT_FLOAT, 4, device));
  EMU_REQUIRE(linear_width == (size_t{1} << 28));
  EMU_REQUIRE(cuDeviceGetTexture1DLinearMaxWidth(&linear_width, CU_AD_FORMAT_FLOAT, 3, device) ==
              CUDA_ERROR_INVALID_VALUE);
  CUasyncCallbackHandle notification = nullptr;
  CU_CHECK(cuDeviceRegisterAsyncNotification(
      device, [](CUasyncNotificationInfo*, void*, CUasyncCallbackHandle) {}, nullptr,
      &notification));
  CU_CHECK(cuDeviceUnregisterAsyncNotification(device, notification));
  CU_CHECK(cuFlushGPUDirectRDMAWrites(CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TARGET_CURRENT_CTX,
                                      CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TO_OWNER));
  CUmemAllocationProp prop = {};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  size_t granularity = 0;
  CU_CHECK(cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  CUmemGenericAllocationHandle physical;
  CU_CHECK(cuMemCreate(&physical, granularity, &prop, 0));
  CUdeviceptr range;
  CU_CHECK(cuMemAddressReserve(&range, granularity, 0, 0, 0));
  CU_CHECK(cuMemMap(range, granularity, 0, physical, 0));
  unsigned long long access = 99;
  CU_CHECK(cuMemGetAccess(&access, &prop.location, range + 128));
  EMU_REQUIRE(access == CU_MEM_ACCESS_FLAGS_PROT_NONE);
  CUmemAccessDesc read_write = {};
  read_write.location = prop.location;
  read_write.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  CU_CHECK(cuMemSetAccess(range, granularity, &read_write, 1));
  CU_CHECK(cuMemGetAccess(&access, &prop.location, range + 128));
  EMU_REQUIRE(access == CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
  // A 3D copy between contexts, into the mapped range (64 x 2 x 2 bytes).
  CUdeviceptr box;
  CU_CHECK(cuMemAlloc(&box, 256));
  CUDA_MEMCPY3D_PEER peer = {};
  peer.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  peer.srcDevice = box;
  peer.srcContext = context;
  peer.srcPitch = 64;
  peer.srcHeight = 2;
  peer.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  peer.dstDevice = range;
  peer.dstContext = context;
  peer.dstPitch = 64;
  peer.dstHeight = 2;
  peer.WidthInBytes = 64;
  peer.Height = 2;
  peer.Depth = 2;
  CU_CHECK(cuMemcpy3DPeer(&peer));
  CU_CHECK(cuMemcpy3DPeerAsync(&peer, nullptr));
  peer.dstContext = nullptr;
  EMU_REQUIRE(cuMemcpy3DPeer(&peer) == CUDA_ERROR_INVALID_CONTEXT);
  CU_CHECK(cuCtxSynchronize());
  CU_CHECK(cuMemFree(box));
  CU_CHECK(cuMemUnmap(range, granularity));
  CU_CHECK(cuMemRelease(physical));
  CU_CHECK(cuMemAddressFree(range, granularity));
  ++checks;

  // Markers programs wrap in error checks.
  CU_CHECK(cuProfilerStart());
  CU_CHECK(cuProfilerStop());
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
  CU_CHECK(cuThreadExchangeStreamCaptureMode(&mode));
  EMU_REQUIRE(mode == CU_STREAM_CAPTURE_MODE_GLOBAL);
  CU_CHECK(cuThreadExchangeStreamCaptureMode(&mode));
  ++checks;

  CU_CHECK(cuDevicePrimaryCtxRelease(device));
  std::printf("driver_proc_versions: %d checks passed\n", checks);
  return 0;
}
