// Memory between streams, devices and processes through the driver API, as CUDA-aware MPI,
// NVSHMEM-style flag code and older samples use it: 16/32-bit element memsets (1-D and 2-D),
// peer copies between two devices' contexts, IPC handles, and stream memory operations that
// order one stream after another through a flag word (run with 2 devices).
// Valid CUDA: the same binary runs on a real GPU.
#include <cuda.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "emu_driver_check.h"

const char* kPtx = R"(
.version 8.0
.target sm_90
.address_size 64

.visible .entry consume(
	.param .u64 consume_param_0
)
{
	ret;
}
)";

int main() {
  CU_CHECK(cuInit(0));
  int devices = 0;
  CU_CHECK(cuDeviceGetCount(&devices));
  EMU_REQUIRE(devices >= 2);
  CUdevice device, peer;
  CU_CHECK(cuDeviceGet(&device, 0));
  CU_CHECK(cuDeviceGet(&peer, 1));
  CUcontext ctx, peer_ctx;
  CU_CHECK(cuDevicePrimaryCtxRetain(&ctx, device));
  CU_CHECK(cuDevicePrimaryCtxRetain(&peer_ctx, peer));
  CU_CHECK(cuCtxSetCurrent(ctx));

  // Element patterns: 1.0f in every float, 0xBEEF in every short.
  constexpr size_t kFloats = 4096;
  CUdeviceptr floats;
  CU_CHECK(cuMemAlloc(&floats, kFloats * sizeof(float)));
  CU_CHECK(cuMemsetD32(floats, 0x3f800000u, kFloats));
  std::vector<float> host_floats(kFloats, 0.0f);
  CU_CHECK(cuMemcpyDtoH(host_floats.data(), floats, kFloats * sizeof(float)));
  for (float f : host_floats) EMU_REQUIRE(f == 1.0f);
  // A count whose bytes overflow the address range is refused.
  EMU_REQUIRE(cuMemsetD32(floats, 1, static_cast<size_t>(-1) / 4 + 2) != CUDA_SUCCESS);

  // 2-D: 100 shorts of 0xBEEF in each of 8 rows of a pitched allocation, the rest zero.
  CUdeviceptr pitched;
  size_t pitch = 0;
  CU_CHECK(cuMemAllocPitch(&pitched, &pitch, 512, 8, 4));
  CU_CHECK(cuMemsetD2D8(pitched, pitch, 0, 512, 8));
  CUstream first, second;
  CU_CHECK(cuStreamCreate(&first, CU_STREAM_NON_BLOCKING));
  CU_CHECK(cuStreamCreate(&second, CU_STREAM_NON_BLOCKING));
  CU_CHECK(cuMemsetD2D16Async(pitched, pitch, 0xBEEF, 100, 8, first));
  CU_CHECK(cuStreamSynchronize(first));
  std::vector<std::uint16_t> rows(pitch * 8 / 2, 1);
  CU_CHECK(cuMemcpyDtoH(rows.data(), pitched, pitch * 8));
  for (size_t row = 0; row < 8; ++row) {
    for (size_t i = 0; i < 256; ++i) {
      EMU_REQUIRE(rows[row * pitch / 2 + i] == (i < 100 ? 0xBEEF : 0));
    }
  }

  // Peer copies: device 0 → device 1 and back.
  CUdeviceptr on_peer, back;
  CU_CHECK(cuCtxSetCurrent(peer_ctx));
  CU_CHECK(cuMemAlloc(&on_peer, kFloats * sizeof(float)));
  CU_CHECK(cuCtxSetCurrent(ctx));
  CU_CHECK(cuMemAlloc(&back, kFloats * sizeof(float)));
  CU_CHECK(cuMemcpyPeer(on_peer, peer_ctx, floats, ctx, kFloats * sizeof(float)));
  CU_CHECK(cuMemcpyPeerAsync(back, ctx, on_peer, peer_ctx, kFloats * sizeof(float), first));
  CU_CHECK(cuStreamSynchronize(first));
  std::fill(host_floats.begin(), host_floats.end(), 0.0f);
  CU_CHECK(cuMemcpyDtoH(host_floats.data(), back, kFloats * sizeof(float)));
  for (float f : host_floats) EMU_REQUIRE(f == 1.0f);

  // IPC handles for memory and an interprocess event (opened by another process of a job).
  CUipcMemHandle memory_handle;
  CU_CHECK(cuIpcGetMemHandle(&memory_handle, floats));
  CUevent shared_event;
  CU_CHECK(cuEventCreate(&shared_event, CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING));
  CUipcEventHandle event_handle;
  CU_CHECK(cuIpcGetEventHandle(&event_handle, shared_event));

  // Stream memory operations: `second` consumes once `first` has raised the flag.
  CUmodule module;
  CU_CHECK(cuModuleLoadData(&module, kPtx));
  CUfunction consume;
  CU_CHECK(cuModuleGetFunction(&consume, module, "consume"));
  CUdeviceptr flags;
  CU_CHECK(cuMemAlloc(&flags, 64));
  CU_CHECK(cuMemsetD8(flags, 0, 64));
  int waits = 0;
  CU_CHECK(cuStreamWriteValue32(first, flags, 1, CU_STREAM_WRITE_VALUE_DEFAULT));
  CU_CHECK(cuStreamWaitValue32(second, flags, 1, CU_STREAM_WAIT_VALUE_GEQ));
  ++waits;
  void* args[] = {&floats};
  CU_CHECK(cuLaunchKernel(consume, 64, 1, 1, 128, 1, 1, 0, second, args, nullptr));
  // 64-bit, in one batch: write on `first`, wait for equality on `second`.
  CUstreamBatchMemOpParams write_op;
  std::memset(&write_op, 0, sizeof(write_op));
  write_op.writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_64;
  write_op.writeValue.address = flags + 8;
  write_op.writeValue.value64 = 0x100000007ULL;
  CU_CHECK(cuStreamBatchMemOp(first, 1, &write_op, 0));
  CUstreamBatchMemOpParams wait_op;
  std::memset(&wait_op, 0, sizeof(wait_op));
  wait_op.waitValue.operation = CU_STREAM_MEM_OP_WAIT_VALUE_64;
  wait_op.waitValue.address = flags + 8;
  wait_op.waitValue.value64 = 0x100000007ULL;
  wait_op.waitValue.flags = CU_STREAM_WAIT_VALUE_EQ;
  CU_CHECK(cuStreamBatchMemOp(second, 1, &wait_op, 0));
  ++waits;
  CU_CHECK(cuLaunchKernel(consume, 32, 1, 1, 128, 1, 1, 0, second, args, nullptr));
  // A flag the host raised in pinned memory: nothing on a stream to wait for.
  std::uint32_t* host_flag = nullptr;
  CU_CHECK(cuMemAllocHost(reinterpret_cast<void**>(&host_flag), sizeof(std::uint32_t)));
  *host_flag = 5;
  CUdeviceptr host_flag_device;
  CU_CHECK(cuMemHostGetDevicePointer(&host_flag_device, host_flag, 0));
  CU_CHECK(cuStreamWaitValue32(second, host_flag_device, 5, CU_STREAM_WAIT_VALUE_EQ));
  ++waits;
  // Waiting before the write is enqueued (valid on a GPU: `second` holds until it lands).
  CU_CHECK(cuStreamWaitValue32(second, flags + 16, 9, CU_STREAM_WAIT_VALUE_EQ));
  ++waits;
  CU_CHECK(cuStreamWriteValue32(first, flags + 16, 9, CU_STREAM_WRITE_VALUE_DEFAULT));
  CU_CHECK(cuCtxSynchronize());
  std::uint32_t words[6] = {};
  CU_CHECK(cuMemcpyDtoH(words, flags, sizeof(words)));
  EMU_REQUIRE(words[0] == 1 && words[2] == 7 && words[3] == 1 && words[4] == 9);

  CU_CHECK(cuMemFreeHost(host_flag));
  CU_CHECK(cuEventDestroy(shared_event));
  CU_CHECK(cuModuleUnload(module));
  CU_CHECK(cuStreamDestroy(first));
  CU_CHECK(cuStreamDestroy(second));
  CU_CHECK(cuMemFree(flags));
  CU_CHECK(cuMemFree(back));
  CU_CHECK(cuMemFree(pitched));
  CU_CHECK(cuMemFree(floats));
  CU_CHECK(cuCtxSetCurrent(peer_ctx));
  CU_CHECK(cuMemFree(on_peer));
  CU_CHECK(cuDevicePrimaryCtxRelease(peer));
  CU_CHECK(cuDevicePrimaryCtxRelease(device));
  std::printf("driver_memops: patterns, 2-D rows, peer copies and %d stream waits checked\n",
              waits);
  return 0;
}
