// Managed-memory advice and prefetch destinations read back, as RAPIDS' memory manager and
// unified-memory programs read them: cudaMemAdvise / cudaMemPrefetchAsync (and their batched and
// driver forms) set hints per page; cudaMemRangeGetAttribute(s) and cuMemRangeGetAttribute(s)
// return what the whole queried range shares. Runs on 2 emulated GPUs.
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "emu_check.h"
#include "emu_driver_check.h"

namespace {

__managed__ float g_managed_table[2048];

constexpr size_t kPage = 4096;
constexpr size_t kBytes = 4 << 20;  // 1024 pages
constexpr size_t kHalf = kBytes / 2;

cudaMemLocation device_location(int id) {
  cudaMemLocation location = {};
  location.type = cudaMemLocationTypeDevice;
  location.id = id;
  return location;
}

cudaMemLocation host_location() {
  cudaMemLocation location = {};
  location.type = cudaMemLocationTypeHost;
  return location;
}

int int_attribute(cudaMemRangeAttribute attribute, const void* pointer, size_t bytes) {
  int value = 12345;
  EMU_CHECK(cudaMemRangeGetAttribute(&value, sizeof value, attribute, pointer, bytes));
  return value;
}

// The devices with SetAccessedBy over the whole range, sorted (the order is not specified),
// and how many slots were left cudaInvalidDeviceId.
std::vector<int> accessed_by(const void* pointer, size_t bytes, size_t slots, int* unused) {
  std::vector<int> out(slots, 12345);
  EMU_CHECK(cudaMemRangeGetAttribute(out.data(), slots * sizeof(int),
                                     cudaMemRangeAttributeAccessedBy, pointer, bytes));
  std::vector<int> devices;
  *unused = 0;
  for (int d : out) {
    if (d == cudaInvalidDeviceId) {
      ++*unused;
    } else {
      devices.push_back(d);
    }
  }
  std::sort(devices.begin(), devices.end());
  return devices;
}

}  // namespace

int main() {
  int devices = 0;
  EMU_CHECK(cudaGetDeviceCount(&devices));
  EMU_REQUIRE(devices == 2);
  cudaStream_t stream;
  EMU_CHECK(cudaStreamCreate(&stream));
  char* managed = nullptr;
  EMU_CHECK(cudaMallocManaged(&managed, kBytes));
  int checks = 0;

  // Nothing set: no read duplication, no preferred or prefetch location, no accessor.
  EMU_REQUIRE(int_attribute(cudaMemRangeAttributeReadMostly, managed, kBytes) == 0);
  EMU_REQUIRE(int_attribute(cudaMemRangeAttributePreferredLocation, managed, kBytes) ==
              cudaInvalidDeviceId);
  EMU_REQUIRE(int_attribute(cudaMemRangeAttributePreferredLocationType, managed, kBytes) ==
              cudaMemLocationTypeInvalid);
  EMU_REQUIRE(int_attribute(cudaMemRangeAttributeLastPrefetchLocation, managed, kBytes) ==
              cudaInvalidDeviceId);
  int unused = 0;
  EMU_REQUIRE(accessed_by(managed, kBytes, 3, &unused).empty() && unused == 3);
  checks += 5;

  // Read duplication on the first half: all of the first half has it, the whole range not.
  EMU_CHECK(cudaMemAdvise(managed, kHalf, cudaMemAdviseSetReadMostly, device_location(0)));
  EMU_REQUIRE(int_attribute(cudaMemRangeAttributeReadMostly, managed, kHalf) == 1);
  EMU_REQUIRE(int_attribute(cudaMemRangeAttributeReadMostly, managed, kBytes) == 0);
  EMU_REQUIRE(int_attribute(cudaMemRangeAttributeReadMostly, managed + kHalf, kHalf) == 0);
  checks += 3;

  // Advice rounds out to CPU pages: unsetting 10 bytes inside the first page unsets that page.
  EMU_CHECK(cudaMemAdvise(managed + 100, 10, cudaMemAdviseUnsetReadMostly, device_location(0)));
  EMU_REQUIRE(int_attribute(cudaMemRangeAttributeReadMostly, managed, 1) == 0);
  EMU_REQUIRE(int_attribute(cudaMemRangeAttributeReadMostly, managed + kPage - 1, 1) == 0);
  EMU_REQUIRE(int_attribute(cudaMemRangeAttributeReadMostly, managed + kPage, kHalf - kPage) == 1);
  checks += 3;

  // A preferred location on GPU 1 everywhere, then the host for the last 16 pages.
  EMU_CHECK(cudaMemAdvise(managed, kBytes, cudaMemAdviseSetPreferredLocation, device_location(1)));
  EMU_REQUIRE(int_attribute(cudaMemRangeAttributePreferredLocation, managed, kBytes) == 1);
  EMU_REQUIRE(int_attribute(cudaMemRangeAttributePreferredLocationType, managed, kBytes) ==
              cudaMemLocationTypeDevice);
  EMU_REQUIRE(int_attribute(cudaMemRangeAttributePreferredLocationId, managed, kBytes) == 1);
  char* tail = managed + kBytes - 16 * kPage;
  EMU_CHECK(cudaMemAdvise(tail, 16 * kPage, cudaMemAdviseSetPreferredLocation, host_location()));
  EMU_REQUIRE(int_attribute(cudaMemRangeAttributePreferredLocation, tail, 16 * kPage) ==
              cudaCpuDeviceId);
  EMU_REQUIRE(int_attribute(cudaMemRangeAttributePreferredLocationType, tail, 16 * kPage) ==
              cudaMemLocationTypeHost);
  EMU_REQUIRE(int_attribute(cudaMemRangeAttributePreferredLocation, managed, kBytes) ==
              cudaInvalidDeviceId);
  EMU_REQUIRE(int_attribute(cudaMemRangeAttributePreferredLocationType, managed, kBytes) ==
              cudaMemLocationTypeInvalid);
  EMU_REQUIRE(int_attribute(cudaMemRangeAttributePreferredLocation, managed, kHalf) == 1);
  checks += 8;

  // Accessors: GPU 0 and the host everywhere, GPU 1 on the first half only.
  EMU_CHECK(cudaMemAdvise(managed, kBytes, cudaMemAdviseSetAccessedBy, device_location(0)));
  EMU_CHECK(cudaMemAdvise(managed, kBytes, cudaMemAdviseSetAccessedBy, host_location()));
  EMU_CHECK(cudaMemAdvise(managed, kHalf, cudaMemAdviseSetAccessedBy, device_location(1)));
  EMU_CHECK(cudaMemAdvise(managed, kHalf, cudaMemAdviseSetAccessedBy, device_location(1)));
  EMU_REQUIRE((accessed_by(managed, kBytes, 4, &unused) == std::vector<int>{cudaCpuDeviceId, 0}) &&
              unused == 2);
  EMU_REQUIRE(
      (accessed_by(managed, kHalf, 4, &unused) == std::vector<int>{cudaCpuDeviceId, 0, 1}) &&
      unused == 1);
  EMU_REQUIRE(accessed_by(managed, kHalf, 2, &unused).size() == 2 && unused == 0);
  EMU_CHECK(cudaMemAdvise(managed, kBytes, cudaMemAdviseUnsetAccessedBy, device_location(0)));
  EMU_REQUIRE((accessed_by(managed, kBytes, 3, &unused) == std::vector<int>{cudaCpuDeviceId}) &&
              unused == 2);
  checks += 4;

  // Prefetches: everything to GPU 0, then the second half to the host.
  EMU_CHECK(cudaMemPrefetchAsync(managed, kBytes, device_location(0), 0, stream));
  EMU_REQUIRE(int_attribute(cudaMemRangeAttributeLastPrefetchLocation, managed, kBytes) == 0);
  EMU_CHECK(cudaMemPrefetchAsync(managed + kHalf, kHalf, host_location(), 0, stream));
  EMU_REQUIRE(int_attribute(cudaMemRangeAttributeLastPrefetchLocation, managed, kBytes) ==
              cudaInvalidDeviceId);
  EMU_REQUIRE(int_attribute(cudaMemRangeAttributeLastPrefetchLocation, managed + kHalf, kHalf) ==
              cudaCpuDeviceId);
  EMU_REQUIRE(int_attribute(cudaMemRangeAttributeLastPrefetchLocationType, managed + kHalf,
                            kHalf) == cudaMemLocationTypeHost);
  EMU_REQUIRE(int_attribute(cudaMemRangeAttributeLastPrefetchLocationId, managed, kHalf) == 0);
  checks += 5;

  // Several attributes in one call.
  int read_mostly = -1, preferred = -1, last = -1;
  void* data[3] = {&read_mostly, &preferred, &last};
  size_t sizes[3] = {4, 4, 4};
  cudaMemRangeAttribute attributes[3] = {cudaMemRangeAttributeReadMostly,
                                         cudaMemRangeAttributePreferredLocation,
                                         cudaMemRangeAttributeLastPrefetchLocation};
  EMU_CHECK(cudaMemRangeGetAttributes(data, sizes, attributes, 3, managed + kPage, kPage));
  EMU_REQUIRE(read_mostly == 1 && preferred == 1 && last == 0);
  checks += 1;

  // A batched prefetch: the first range to GPU 1, the next two to the host.
  char* second = nullptr;
  EMU_CHECK(cudaMallocManaged(&second, 3 * kPage));
  void* ranges[3] = {managed, second, second + kPage};
  size_t range_bytes[3] = {kPage, kPage, 2 * kPage};
  cudaMemLocation locations[2] = {device_location(1), host_location()};
  size_t location_starts[2] = {0, 1};
  EMU_CHECK(
      cudaMemPrefetchBatchAsync(ranges, range_bytes, 3, locations, location_starts, 2, 0, stream));
  EMU_REQUIRE(int_attribute(cudaMemRangeAttributeLastPrefetchLocation, managed, kPage) == 1);
  EMU_REQUIRE(int_attribute(cudaMemRangeAttributeLastPrefetchLocation, second, 3 * kPage) ==
              cudaCpuDeviceId);
  checks += 2;

  // A small allocation is whole pages: advice may name its last page to the end (not beyond).
  char* small = nullptr;
  EMU_CHECK(cudaMallocManaged(&small, 100));
  EMU_REQUIRE(reinterpret_cast<std::uintptr_t>(small) % kPage == 0);
  EMU_CHECK(cudaMemAdvise(small, kPage, cudaMemAdviseSetReadMostly, device_location(0)));
  EMU_REQUIRE(int_attribute(cudaMemRangeAttributeReadMostly, small + 50, 10) == 1);
  EMU_EXPECT_ERROR(cudaMemAdvise(small, kPage + 1, cudaMemAdviseSetReadMostly, device_location(0)),
                   cudaErrorInvalidValue);
  cudaGetLastError();
  EMU_CHECK(cudaFree(small));
  checks += 3;

  // A __managed__ variable takes advice like cudaMallocManaged memory.
  EMU_CHECK(cudaMemAdvise(g_managed_table, sizeof g_managed_table,
                          cudaMemAdviseSetPreferredLocation, device_location(0)));
  EMU_REQUIRE(int_attribute(cudaMemRangeAttributePreferredLocation, g_managed_table,
                            sizeof g_managed_table) == 0);
  checks += 1;

  // The driver sees the same hints, and what it sets the runtime reads.
  CU_CHECK(cuInit(0));
  const CUdeviceptr pointer = reinterpret_cast<CUdeviceptr>(managed);
  int value = -7;
  CU_CHECK(
      cuMemRangeGetAttribute(&value, 4, CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION, pointer, kHalf));
  EMU_REQUIRE(value == 1);
  CUmemLocation numa = {};
  numa.type = CU_MEM_LOCATION_TYPE_HOST_NUMA;
  numa.id = 0;
  CU_CHECK(cuMemAdvise(pointer, kPage, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, numa));
  EMU_REQUIRE(int_attribute(cudaMemRangeAttributePreferredLocationType, managed, kPage) ==
              cudaMemLocationTypeHostNuma);
  EMU_REQUIRE(int_attribute(cudaMemRangeAttributePreferredLocationId, managed, kPage) == 0);
  EMU_REQUIRE(int_attribute(cudaMemRangeAttributePreferredLocation, managed, kPage) ==
              cudaCpuDeviceId);
  CUmemLocation gpu1 = {};
  gpu1.type = CU_MEM_LOCATION_TYPE_DEVICE;
  gpu1.id = 1;
  CU_CHECK(cuMemPrefetchAsync(pointer + kHalf, kHalf, gpu1, 0, stream));
  int prefetch_type = -1, prefetch_id = -1;
  void* driver_data[2] = {&prefetch_type, &prefetch_id};
  size_t driver_sizes[2] = {4, 4};
  CUmem_range_attribute driver_attributes[2] = {CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE,
                                                CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_ID};
  CU_CHECK(cuMemRangeGetAttributes(driver_data, driver_sizes, driver_attributes, 2, pointer + kHalf,
                                   kHalf));
  EMU_REQUIRE(prefetch_type == CU_MEM_LOCATION_TYPE_DEVICE && prefetch_id == 1);
  checks += 5;

  // Misuse: memory that is not managed, sizes the attribute does not take, devices that do not
  // exist, ranges past the allocation, advice that does not exist.
  void* device_memory = nullptr;
  EMU_CHECK(cudaMalloc(&device_memory, kPage));
  EMU_EXPECT_ERROR(
      cudaMemAdvise(device_memory, kPage, cudaMemAdviseSetReadMostly, device_location(0)),
      cudaErrorInvalidValue);
  EMU_EXPECT_ERROR(
      cudaMemRangeGetAttribute(&value, 4, cudaMemRangeAttributeReadMostly, device_memory, kPage),
      cudaErrorInvalidValue);
  EMU_EXPECT_ERROR(
      cudaMemRangeGetAttribute(&value, 8, cudaMemRangeAttributeReadMostly, managed, kPage),
      cudaErrorInvalidValue);
  int three[3];
  EMU_EXPECT_ERROR(
      cudaMemRangeGetAttribute(three, 6, cudaMemRangeAttributeAccessedBy, managed, kPage),
      cudaErrorInvalidValue);
  EMU_EXPECT_ERROR(
      cudaMemAdvise(managed, kPage, cudaMemAdviseSetPreferredLocation, device_location(5)),
      cudaErrorInvalidDevice);
  EMU_EXPECT_ERROR(
      cudaMemRangeGetAttribute(&value, 4, cudaMemRangeAttributeReadMostly, managed, kBytes + 1),
      cudaErrorInvalidValue);
  EMU_EXPECT_ERROR(
      cudaMemAdvise(managed, kPage, static_cast<cudaMemoryAdvise>(99), device_location(0)),
      cudaErrorInvalidValue);
  EMU_EXPECT_ERROR(
      cudaMemRangeGetAttribute(&value, 4, static_cast<cudaMemRangeAttribute>(42), managed, kPage),
      cudaErrorInvalidValue);
  EMU_EXPECT_ERROR(cudaMemPrefetchAsync(managed, kPage, device_location(7), 0, stream),
                   cudaErrorInvalidDevice);
  cudaGetLastError();
  checks += 9;

  EMU_CHECK(cudaStreamSynchronize(stream));
  EMU_CHECK(cudaFree(device_memory));
  EMU_CHECK(cudaFree(second));
  EMU_CHECK(cudaFree(managed));
  EMU_CHECK(cudaStreamDestroy(stream));
  std::printf("driver_managed_advice: %d checks passed\n", checks);
  return 0;
}
