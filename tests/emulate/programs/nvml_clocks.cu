// NVML under emulation, as Zeus, pynvml and the powertrain client use it: libnvidia-ml.so.1 is
// opened at run time (no link-time dependency), the devices listed and described, the supported
// clocks read, and a compute-bound kernel launched at the default clock, with the SM clock locked
// to 990 MHz, and after the lock is reset; memory in use follows the program's allocations; the
// measurements an emulated GPU does not have (power, energy counter) answer "not supported".
// Valid CUDA: the same binary runs on a real GPU (where locking clocks needs root).
#include <dlfcn.h>

#include <cstring>
#include <vector>

#include "emu_check.h"

// A GEMM-like kernel by name, so the emulator times it as tensor-core work (compute-bound).
__global__ void sgemm_tile_kernel(float* c, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] += 1.0f;
}

struct NvmlMemory {
  unsigned long long total, free, used;
};

template <typename F>
F nvml(void* library, const char* name) {
  void* f = dlsym(library, name);
  if (f == nullptr) {
    std::fprintf(stderr, "nvml_clocks: %s missing\n", name);
    std::exit(1);
  }
  return reinterpret_cast<F>(f);
}

#define NVML_CHECK(call)                                                                      \
  do {                                                                                        \
    const int nvml_status = (call);                                                           \
    if (nvml_status != 0) {                                                                   \
      std::fprintf(stderr, "%s:%d: %s failed: %d\n", __FILE__, __LINE__, #call, nvml_status); \
      std::exit(1);                                                                           \
    }                                                                                         \
  } while (0)

int main() {
  void* library = dlopen("libnvidia-ml.so.1", RTLD_NOW);
  if (library == nullptr) {
    std::fprintf(stderr, "nvml_clocks: %s\n", dlerror());
    return 1;
  }
  const auto init = nvml<int (*)()>(library, "nvmlInit_v2");
  const auto count_of = nvml<int (*)(unsigned*)>(library, "nvmlDeviceGetCount_v2");
  const auto handle_of = nvml<int (*)(unsigned, void**)>(library, "nvmlDeviceGetHandleByIndex_v2");
  const auto name_of = nvml<int (*)(void*, char*, unsigned)>(library, "nvmlDeviceGetName");
  const auto memory_of = nvml<int (*)(void*, NvmlMemory*)>(library, "nvmlDeviceGetMemoryInfo");
  const auto memory_clocks =
      nvml<int (*)(void*, unsigned*, unsigned*)>(library, "nvmlDeviceGetSupportedMemoryClocks");
  const auto graphics_clocks = nvml<int (*)(void*, unsigned, unsigned*, unsigned*)>(
      library, "nvmlDeviceGetSupportedGraphicsClocks");
  const auto lock =
      nvml<int (*)(void*, unsigned, unsigned)>(library, "nvmlDeviceSetGpuLockedClocks");
  const auto unlock = nvml<int (*)(void*)>(library, "nvmlDeviceResetGpuLockedClocks");
  const auto clock_of = nvml<int (*)(void*, int, unsigned*)>(library, "nvmlDeviceGetClockInfo");
  const auto power_limit =
      nvml<int (*)(void*, unsigned*)>(library, "nvmlDeviceGetPowerManagementLimit");
  const auto energy =
      nvml<int (*)(void*, unsigned long long*)>(library, "nvmlDeviceGetTotalEnergyConsumption");
  const auto shutdown = nvml<int (*)()>(library, "nvmlShutdown");

  NVML_CHECK(init());
  unsigned count = 0;
  NVML_CHECK(count_of(&count));
  int cuda_count = 0;
  EMU_CHECK(cudaGetDeviceCount(&cuda_count));
  EMU_REQUIRE(count == static_cast<unsigned>(cuda_count));
  void* device = nullptr;
  NVML_CHECK(handle_of(0, &device));
  char name[96];
  NVML_CHECK(name_of(device, name, sizeof name));
  cudaDeviceProp prop;
  EMU_CHECK(cudaGetDeviceProperties(&prop, 0));
  EMU_REQUIRE(std::strcmp(name, prop.name) == 0);

  // Supported clocks: one memory clock, SM clocks highest first.
  unsigned memory_clock = 0, n_memory = 1;
  NVML_CHECK(memory_clocks(device, &n_memory, &memory_clock));
  unsigned n_sm = 0;
  EMU_REQUIRE(graphics_clocks(device, memory_clock, &n_sm, nullptr) == 7);  // insufficient size
  std::vector<unsigned> sm(n_sm);
  NVML_CHECK(graphics_clocks(device, memory_clock, &n_sm, sm.data()));
  EMU_REQUIRE(n_sm > 2 && sm.front() > sm.back());
  unsigned limit_mw = 0;
  NVML_CHECK(power_limit(device, &limit_mw));
  EMU_REQUIRE(limit_mw > 0);
  unsigned long long millijoules = 0;
  EMU_REQUIRE(energy(device, &millijoules) == 3);  // NVML_ERROR_NOT_SUPPORTED

  const int n = 1 << 20;
  NvmlMemory before{}, after{};
  NVML_CHECK(memory_of(device, &before));
  float* c = nullptr;
  EMU_CHECK(cudaMalloc(&c, n * sizeof(float)));
  NVML_CHECK(memory_of(device, &after));
  EMU_REQUIRE(after.used == before.used + n * sizeof(float) && after.total == before.total);

  // The same kernel at the default clock, locked to 990 MHz, and unlocked again.
  sgemm_tile_kernel<<<n / 256, 256>>>(c, n);
  NVML_CHECK(lock(device, 990, 990));
  unsigned sm_clock = 0;
  NVML_CHECK(clock_of(device, 1, &sm_clock));  // NVML_CLOCK_SM
  EMU_REQUIRE(sm_clock == 990);
  sgemm_tile_kernel<<<n / 256, 256>>>(c, n);
  NVML_CHECK(unlock(device));
  NVML_CHECK(clock_of(device, 1, &sm_clock));
  EMU_REQUIRE(sm_clock == sm.front());
  sgemm_tile_kernel<<<n / 256, 256>>>(c, n);
  EMU_CHECK(cudaDeviceSynchronize());
  EMU_CHECK(cudaFree(c));
  NVML_CHECK(shutdown());
  std::printf("nvml_clocks: %u device(s), %u SM clocks %u-%u MHz, power limit %u W\n", count, n_sm,
              sm.back(), sm.front(), limit_mw / 1000);
  return 0;
}
