// Thrust and CUB (CCCL, header-only, in every CUDA toolkit and in most CUDA code bases): device
// vectors, sequence/transform/reduce/sort/scan, a copy back to the host, and CUB's two-phase
// calls (a temporary-storage query, then the run) for a reduction and a radix sort. Their
// launches go through the runtime like any kernel; what they need from it is the launch
// machinery, cudaFuncGetAttributes and occupancy queries, device attributes, stream-ordered
// copies and synchronization, and error queries. Under emulation the kernels do not run, so the
// values the program prints are not the GPU's; the program checks only the calls' status.
// Written for the emulator's tests; valid CUDA: the same binary runs on a real GPU.
#include <thrust/device_vector.h>
#include <thrust/functional.h>
#include <thrust/host_vector.h>
#include <thrust/reduce.h>
#include <thrust/scan.h>
#include <thrust/sequence.h>
#include <thrust/sort.h>
#include <thrust/transform.h>

#include <cstdio>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_reduce.cuh>

#include "emu_check.h"

namespace {

struct Square {
  __host__ __device__ float operator()(float x) const { return x * x; }
};

}  // namespace

int main() {
  const int n = 1 << 20;
  thrust::device_vector<float> a(n);
  thrust::sequence(a.begin(), a.end());
  thrust::device_vector<float> b(n);
  thrust::transform(a.begin(), a.end(), b.begin(), Square());
  const float sum = thrust::reduce(b.begin(), b.end(), 0.0f, thrust::plus<float>());
  std::printf("thrust_cub: reduce returned (%s)\n", sum >= 0 ? "a value" : "a negative value");
  thrust::sort(b.begin(), b.end(), thrust::greater<float>());
  thrust::inclusive_scan(a.begin(), a.end(), b.begin());
  thrust::host_vector<float> host = b;
  std::printf("thrust_cub: %zu values copied back\n", host.size());

  thrust::device_vector<int> keys(n);
  thrust::sequence(keys.begin(), keys.end(), n, -1);
  thrust::device_vector<float> total(1);
  void* temp = nullptr;
  size_t temp_bytes = 0;
  EMU_CHECK(cub::DeviceReduce::Sum(temp, temp_bytes, thrust::raw_pointer_cast(a.data()),
                                   thrust::raw_pointer_cast(total.data()), n));
  EMU_REQUIRE(temp_bytes > 0);
  EMU_CHECK(cudaMalloc(&temp, temp_bytes));
  EMU_CHECK(cub::DeviceReduce::Sum(temp, temp_bytes, thrust::raw_pointer_cast(a.data()),
                                   thrust::raw_pointer_cast(total.data()), n));
  EMU_CHECK(cudaFree(temp));
  thrust::device_vector<int> sorted(n);
  temp = nullptr;
  temp_bytes = 0;
  EMU_CHECK(cub::DeviceRadixSort::SortKeys(temp, temp_bytes, thrust::raw_pointer_cast(keys.data()),
                                           thrust::raw_pointer_cast(sorted.data()), n));
  EMU_REQUIRE(temp_bytes > 0);
  EMU_CHECK(cudaMalloc(&temp, temp_bytes));
  EMU_CHECK(cub::DeviceRadixSort::SortKeys(temp, temp_bytes, thrust::raw_pointer_cast(keys.data()),
                                           thrust::raw_pointer_cast(sorted.data()), n));
  EMU_CHECK(cudaFree(temp));
  EMU_CHECK(cudaDeviceSynchronize());
  EMU_CHECK(cudaGetLastError());
  std::printf("thrust_cub: done\n");
  return 0;
}
