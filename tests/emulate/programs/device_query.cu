// Prints what the runtime says about the device(s) as key=value lines (the test compares them
// with the emulator's configuration), then allocates 1 MiB on every device after selecting it,
// so per-device accounting and set_device records can be checked. Valid on a real GPU too.
#include "emu_check.h"

int main() {
  int count = 0;
  EMU_CHECK(cudaGetDeviceCount(&count));
  int runtime = 0, driver = 0;
  EMU_CHECK(cudaRuntimeGetVersion(&runtime));
  EMU_CHECK(cudaDriverGetVersion(&driver));
  std::printf("device_count=%d\nruntime_version=%d\ndriver_version=%d\n", count, runtime, driver);
  cudaDeviceProp prop;
  EMU_CHECK(cudaGetDeviceProperties(&prop, 0));
  int clock_khz = 0, sms = 0, major = 0, minor = 0, warp = 0, optin = 0;
  EMU_CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0));
  EMU_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  EMU_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0));
  EMU_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0));
  EMU_CHECK(cudaDeviceGetAttribute(&warp, cudaDevAttrWarpSize, 0));
  EMU_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0));
  std::printf("name=%s\ntotal_global_mem=%zu\nsm_count=%d\ncc=%d.%d\n", prop.name,
              prop.totalGlobalMem, prop.multiProcessorCount, prop.major, prop.minor);
  std::printf("attr_sm_count=%d\nattr_cc=%d.%d\nattr_clock_khz=%d\nwarp_size=%d\n", sms, major,
              minor, clock_khz, warp);
  std::printf("shared_optin=%d\nmax_threads_per_block=%d\n", optin, prop.maxThreadsPerBlock);
  int bad = 0;
  EMU_EXPECT_ERROR(cudaDeviceGetAttribute(&bad, static_cast<cudaDeviceAttr>(100000), 0),
                   cudaErrorInvalidValue);
  (void)cudaGetLastError();

  for (int d = 0; d < count; ++d) {
    EMU_CHECK(cudaSetDevice(d));
    size_t free_before = 0, free_bytes = 0, total = 0;
    EMU_CHECK(cudaMemGetInfo(&free_before, &total));
    void* p = nullptr;
    EMU_CHECK(cudaMalloc(&p, 1 << 20));
    EMU_CHECK(cudaMemGetInfo(&free_bytes, &total));
    EMU_REQUIRE(free_before - free_bytes == (1u << 20));
    EMU_CHECK(cudaFree(p));
  }
  EMU_CHECK(cudaSetDevice(0));
  return 0;
}
