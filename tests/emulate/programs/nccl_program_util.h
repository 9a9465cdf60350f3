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
