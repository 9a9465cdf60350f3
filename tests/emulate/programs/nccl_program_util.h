// Helpers for the NCCL test programs (plain CUDA/NCCL host code; works on a real GPU too):
// return-code checks and the file-based exchange of rank 0's ncclUniqueId.
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "emu_check.h"

#define NCCL_CHECK(call)                                                        \
  do {                                                                          \
    const ncclResult_t res_ = (call);                                           \
    if (res_ != ncclSuccess) {                                                  \
      std::fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call, \
                   ncclGetErrorString(res_));                                   \
      std::exit(1);                                                             \
    }                                                                           \
  } while (0)

inline int env_int(const char* name, int fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? std::atoi(value) : fallback;
}

/// The directory for the id file: argv[1] if given, else $POWERTRAIN_EMU_DIR.
inline std::string exchange_dir(int argc, char** argv) {
  if (argc > 1) return argv[1];
  const char* dir = std::getenv("POWERTRAIN_EMU_DIR");
  if (dir == nullptr || *dir == '\0') {
    std::fprintf(stderr,
                 "usage: %s DIR (or set POWERTRAIN_EMU_DIR): a directory shared by all "
                 "ranks for the NCCL unique id\n",
                 argv[0]);
    std::exit(2);
  }
  return dir;
}

/// Rank 0 creates the id and publishes it atomically (write + rename); the others wait for it.
inline ncclUniqueId exchange_unique_id(const std::string& dir, const char* name, int rank) {
  ncclUniqueId id;
  const std::string path = dir + "/" + name;
  if (rank == 0) {
    NCCL_CHECK(ncclGetUniqueId(&id));
    const std::string tmp = path + ".tmp";
    FILE* out = std::fopen(tmp.c_str(), "wb");
    EMU_REQUIRE(out != nullptr);
    EMU_REQUIRE(std::fwrite(&id, sizeof id, 1, out) == 1);
    EMU_REQUIRE(std::fclose(out) == 0);
    EMU_REQUIRE(std::rename(tmp.c_str(), path.c_str()) == 0);
    return id;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (std::chrono::steady_clock::now() < deadline) {
    if (FILE* in = std::fopen(path.c_str(), "rb")) {
      const size_t got = std::fread(&id, sizeof id, 1, in);
      std::fclose(in);
      if (got == 1) return id;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::fprintf(stderr, "rank %d: timed out waiting for %s\n", rank, path.c_str());
  std::exit(1);
}

/// Selects this process's GPU: LOCAL_RANK modulo the visible devices.
inline int select_device(int local_rank) {
  int count = 0;
  EMU_CHECK(cudaGetDeviceCount(&count));
  EMU_REQUIRE(count > 0);
  const int device = local_rank % count;
  EMU_CHECK(cudaSetDevice(device));
  return device;
}

/// One process driving `ndev` GPUs, as nccl-tests' `-g ndev` does: ncclCommInitAll, then per
/// device a stream (created with `stream_flags`) and one `max_bytes` buffer.
struct SingleProcessDevices {
  std::vector<ncclComm_t> comms;
  std::vector<cudaStream_t> streams;
  std::vector<float*> bufs;
};

/// Exits 1 (with a message) when fewer than `ndev` devices are visible.
inline SingleProcessDevices init_all_devices(int ndev, size_t max_bytes,
                                             unsigned int stream_flags) {
  int visible = 0;
  EMU_CHECK(cudaGetDeviceCount(&visible));
  if (visible < ndev) {
    std::fprintf(stderr, "needs %d devices, %d visible\n", ndev, visible);
    std::exit(1);
  }
  SingleProcessDevices devices{std::vector<ncclComm_t>(ndev), std::vector<cudaStream_t>(ndev),
                               std::vector<float*>(ndev)};
  NCCL_CHECK(ncclCommInitAll(devices.comms.data(), ndev, nullptr));
  for (int i = 0; i < ndev; ++i) {
    EMU_CHECK(cudaSetDevice(i));
    // cudaStreamCreate for default streams: the emulation trace names the entry point called.
    if (stream_flags == cudaStreamDefault) {
      EMU_CHECK(cudaStreamCreate(&devices.streams[i]));
    } else {
      EMU_CHECK(cudaStreamCreateWithFlags(&devices.streams[i], stream_flags));
    }
    EMU_CHECK(cudaMalloc(&devices.bufs[i], max_bytes));
  }
  return devices;
}

/// One grouped in-place fp32 sum all-reduce of `bytes` on every device.
inline void all_reduce_all(const SingleProcessDevices& devices, size_t bytes) {
  NCCL_CHECK(ncclGroupStart());
  for (size_t i = 0; i < devices.comms.size(); ++i) {
    NCCL_CHECK(ncclAllReduce(devices.bufs[i], devices.bufs[i], bytes / sizeof(float), ncclFloat32,
                             ncclSum, devices.comms[i], devices.streams[i]));
  }
  NCCL_CHECK(ncclGroupEnd());
}

/// Prints nccl-tests' line for one size: algbw = size / time, busbw = algbw × 2(n−1)/n.
inline void print_bandwidth(size_t bytes, double us, int ndev) {
  const double algbw = static_cast<double>(bytes) / (us * 1e-6) / 1e9;
  std::printf("size %zu time_us %.2f algbw %.2f busbw %.2f\n", bytes, us, algbw,
              algbw * 2.0 * (ndev - 1) / ndev);
}

/// Frees the buffers and destroys the communicators, device by device.
inline void destroy_all_devices(const SingleProcessDevices& devices) {
  for (size_t i = 0; i < devices.comms.size(); ++i) {
    EMU_CHECK(cudaSetDevice(static_cast<int>(i)));
    EMU_CHECK(cudaFree(devices.bufs[i]));
    NCCL_CHECK(ncclCommDestroy(devices.comms[i]));
  }
}
