// Green contexts as FlashInfer's split_device_green_ctx builds them: the device's SM resource
// split into groups of 16 SMs, one descriptor and green context per group and one for the rest,
// a stream in each, a kernel launched on each stream, then the green context made current as a
// CUcontext. Prints the SM counts it was given; run under the emulator (H100: 132 SMs).
#include <cuda.h>

#include <cstdio>
#include <vector>

#include "emu_check.h"
#include "emu_driver_check.h"

__global__ void partition_work(int group) { (void)group; }

int main() {
  CUdevice device;
  CUcontext primary = current_primary_context(&device);

  CUdevResource whole;
  CU_CHECK(cuDeviceGetDevResource(device, &whole, CU_DEV_RESOURCE_TYPE_SM));
  unsigned int groups = 0;
  CU_CHECK(cuDevSmResourceSplitByCount(nullptr, &groups, &whole, nullptr, 0, 16));
  EMU_REQUIRE(groups == whole.sm.smCount / 16);
  // Three groups of 16 (as FlashInfer asks for [16, 16, 16]) and the remainder.
  std::vector<CUdevResource> parts(3);
  CUdevResource rest;
  unsigned int made = 3;
  CU_CHECK(cuDevSmResourceSplitByCount(parts.data(), &made, &whole, &rest, 0, 16));
  EMU_REQUIRE(made == 3 && rest.sm.smCount == whole.sm.smCount - 48);
  // A count that is not a multiple of the step is rounded up (Hopper: groups of 8).
  unsigned int odd_groups = 1;
  CUdevResource odd;
  CU_CHECK(cuDevSmResourceSplitByCount(&odd, &odd_groups, &whole, nullptr, 0, 13));
  EMU_REQUIRE(odd.sm.smCount == 16);
  // A split's result cannot be split again.
  unsigned int again = 0;
  EMU_REQUIRE(cuDevSmResourceSplitByCount(nullptr, &again, &parts[0], nullptr, 0, 8) ==
              CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION);

  std::vector<CUgreenCtx> greens;
  std::vector<CUstream> streams;
  for (CUdevResource* r : {&parts[0], &parts[1], &parts[2], &rest}) {
    CUdevResourceDesc desc;
    CU_CHECK(cuDevResourceGenerateDesc(&desc, r, 1));
    CUgreenCtx green;
    CU_CHECK(cuGreenCtxCreate(&green, desc, device, CU_GREEN_CTX_DEFAULT_STREAM));
    CUstream stream;
    CU_CHECK(cuGreenCtxStreamCreate(&stream, green, CU_STREAM_NON_BLOCKING, 0));
    greens.push_back(green);
    streams.push_back(stream);
  }
  for (size_t i = 0; i < streams.size(); ++i) {
    CUdevResource got;
    CU_CHECK(cuGreenCtxGetDevResource(greens[i], &got, CU_DEV_RESOURCE_TYPE_SM));
    CUgreenCtx owner = nullptr;
    CU_CHECK(cuStreamGetGreenCtx(streams[i], &owner));
    EMU_REQUIRE(owner == greens[i]);
    partition_work<<<got.sm.smCount, 128, 0, streams[i]>>>(static_cast<int>(i));
    std::printf("driver_green_contexts: green context %zu has %u SMs\n", i, got.sm.smCount);
  }
  CU_CHECK(cuCtxSynchronize());
  // A green context as a context: current on its device.
  CUcontext as_context = nullptr;
  CU_CHECK(cuCtxFromGreenCtx(&as_context, greens[0]));
  CU_CHECK(cuCtxSetCurrent(as_context));
  CUdevice current = -1;
  CU_CHECK(cuCtxGetDevice(&current));
  EMU_REQUIRE(current == device);
  CU_CHECK(cuCtxSetCurrent(primary));
  // Refused: a descriptor of two groups from different splits, a context without its default
  // stream flag, a blocking stream.
  CUdevResource mixed[2] = {parts[0], odd};
  CUdevResourceDesc bad_desc;
  EMU_REQUIRE(cuDevResourceGenerateDesc(&bad_desc, mixed, 2) ==
              CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION);
  CUdevResourceDesc desc;
  CU_CHECK(cuDevResourceGenerateDesc(&desc, &odd, 1));
  CUgreenCtx refused;
  EMU_REQUIRE(cuGreenCtxCreate(&refused, desc, device, 0) == CUDA_ERROR_INVALID_VALUE);
  CUstream blocking;
  EMU_REQUIRE(cuGreenCtxStreamCreate(&blocking, greens[0], CU_STREAM_DEFAULT, 0) ==
              CUDA_ERROR_INVALID_VALUE);
  for (CUstream s : streams) CU_CHECK(cuStreamDestroy(s));
  for (CUgreenCtx g : greens) CU_CHECK(cuGreenCtxDestroy(g));
  EMU_REQUIRE(cuGreenCtxDestroy(greens[0]) == CUDA_ERROR_INVALID_CONTEXT);
  CU_CHECK(cuDevicePrimaryCtxRelease(device));
  std::printf("driver_green_contexts: done\n");
  return 0;
}
