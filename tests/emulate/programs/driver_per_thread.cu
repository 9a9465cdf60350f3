// nvcc-flags: --default-stream per-thread -lpthread
// The driver API built with --default-stream per-thread: cuda.h turns every call that takes a
// stream into its *_ptsz entry point and the synchronous copies and memsets into *_ptds, where a
// NULL stream is the calling thread's own default stream. Two threads each copy, set, launch and
// synchronize on their NULL stream; cuGetProcAddress with the per-thread flag hands out the same
// variants.
// Valid CUDA: the same binary runs on a real GPU.
#include <cuda.h>

#include <cstring>
#include <thread>

#include "emu_driver_check.h"

const char* kPtx = R"(
.version 8.0
.target sm_90
.address_size 64

.visible .entry bump(
	.param .u64 bump_param_0,
	.param .u32 bump_param_1
)
{
	ret;
}
)";

CUfunction g_bump;

void worker(CUcontext ctx, int id) {
  CU_CHECK(cuCtxSetCurrent(ctx));
  const int n = 256 * id;
  CUdeviceptr d;
  CU_CHECK(cuMemAlloc(&d, n * sizeof(int)));
  CU_CHECK(cuMemsetD32(d, 0, n));  // cuMemsetD32_v2_ptds
  void* args[] = {&d, const_cast<int*>(&n)};
  CU_CHECK(cuLaunchKernel(g_bump, id, 1, 1, 256, 1, 1, 0, nullptr, args, nullptr));
  int sent[64], received[64];
  for (int i = 0; i < 64; ++i) sent[i] = id * 1000 + i;
  CU_CHECK(cuMemcpyHtoDAsync(d, sent, sizeof sent, nullptr));  // _v2_ptsz
  CU_CHECK(cuStreamSynchronize(nullptr));                      // _ptsz
  CU_CHECK(cuMemcpyDtoH(received, d, sizeof received));        // _v2_ptds
  EMU_REQUIRE(std::memcmp(sent, received, sizeof sent) == 0);
  CUevent done;
  CU_CHECK(cuEventCreate(&done, CU_EVENT_DEFAULT));
  CU_CHECK(cuEventRecord(done, nullptr));  // _ptsz
  CU_CHECK(cuEventSynchronize(done));
  CU_CHECK(cuEventDestroy(done));
  CU_CHECK(cuMemFree(d));
}

typedef CUresult (*SyncFn)(CUstream);

int main() {
  CUdevice device;
  const CUcontext ctx = current_primary_context(&device);
  CUmodule module;
  CU_CHECK(cuModuleLoadData(&module, kPtx));
  CU_CHECK(cuModuleGetFunction(&g_bump, module, "bump"));
  // Sequential threads: thread indexes (and so per-thread stream ids) are deterministic.
  std::thread first(worker, ctx, 1);
  first.join();
  std::thread second(worker, ctx, 2);
  second.join();

  // The entry points by name: the per-thread flag selects the *_ptsz variant.
  void* legacy = nullptr;
  void* per_thread = nullptr;
  CUdriverProcAddressQueryResult status;
  CU_CHECK(cuGetProcAddress("cuStreamSynchronize", &legacy, 12000,
                            CU_GET_PROC_ADDRESS_LEGACY_STREAM, &status));
  CU_CHECK(cuGetProcAddress("cuStreamSynchronize", &per_thread, 12000,
                            CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &status));
  EMU_REQUIRE(legacy != nullptr && per_thread != nullptr && legacy != per_thread);
  CU_CHECK(reinterpret_cast<SyncFn>(per_thread)(nullptr));
  CU_CHECK(reinterpret_cast<SyncFn>(legacy)(nullptr));
  CU_CHECK(cuModuleUnload(module));
  std::printf("driver_per_thread: done\n");
  return 0;
}
