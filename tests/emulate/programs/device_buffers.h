// Shared by the library test programs: host <-> device copies and zeroed device buffers, every
// CUDA call checked (EMU_CHECK), and the device `info` words the solver libraries write.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

#include "emu_check.h"

namespace emu_programs {

// A device copy of `host` (at least one element is allocated, so empty vectors work too).
template <typename T>
T* to_device(const std::vector<T>& host) {
  T* device = nullptr;
  EMU_CHECK(cudaMalloc(&device, std::max<size_t>(host.size(), 1) * sizeof(T)));
  if (!host.empty())
    EMU_CHECK(cudaMemcpy(device, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
  return device;
}

template <typename T>
std::vector<T> to_host(const T* device, size_t count) {
  std::vector<T> host(count);
  EMU_CHECK(cudaMemcpy(host.data(), device, count * sizeof(T), cudaMemcpyDeviceToHost));
  return host;
}

template <typename T>
T* device_zeros(size_t count) {
  T* device = nullptr;
  EMU_CHECK(cudaMalloc(&device, count * sizeof(T)));
  EMU_CHECK(cudaMemset(device, 0, count * sizeof(T)));
  return device;
}

// Entry `index` of a device array of info words.
inline int host_info(const int* d_info, int index = 0) {
  std::vector<int> info(static_cast<size_t>(index) + 1, -1);
  EMU_CHECK(cudaMemcpy(info.data(), d_info, info.size() * sizeof(int), cudaMemcpyDeviceToHost));
  return info[static_cast<size_t>(index)];
}

}  // namespace emu_programs

using emu_programs::device_zeros;
using emu_programs::host_info;
using emu_programs::to_device;
using emu_programs::to_host;
