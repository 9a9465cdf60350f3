// torch.multiprocessing.spawn's pattern without Python: a launcher that makes no CUDA call
// starts one worker per device by fork + exec of itself (`worker K N DIR`), as the spawn start
// method does; every worker inherits the launcher's environment (RANK included), selects device
// K, joins an N-rank NCCL communicator through a unique id shared in DIR, all-reduces and exits.
// The launcher waits for them. Usage: nccl_spawn_workers N. Valid CUDA/NCCL: the same binary runs
// on real GPUs.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "nccl_program_util.h"

namespace {

int worker(int k, int n, const std::string& dir) {
  EMU_CHECK(cudaSetDevice(k));
  const ncclUniqueId id = exchange_unique_id(dir, "nccl_spawn_workers.id", k);
  ncclComm_t comm;
  NCCL_CHECK(ncclCommInitRank(&comm, n, id, k));
  cudaStream_t stream;
  EMU_CHECK(cudaStreamCreate(&stream));
  const size_t count = 1 << 20;
  float* buffer = nullptr;
  EMU_CHECK(cudaMalloc(&buffer, count * sizeof(float)));
  EMU_CHECK(cudaMemsetAsync(buffer, 0, count * sizeof(float), stream));
  NCCL_CHECK(ncclAllReduce(buffer, buffer, count, ncclFloat, ncclSum, comm, stream));
  EMU_CHECK(cudaStreamSynchronize(stream));
  NCCL_CHECK(ncclCommDestroy(comm));
  EMU_CHECK(cudaFree(buffer));
  EMU_CHECK(cudaStreamDestroy(stream));
  std::printf("worker %d of %d: all-reduce done on device %d\n", k, n, k);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 5 && std::strcmp(argv[1], "worker") == 0) {
    return worker(std::atoi(argv[2]), std::atoi(argv[3]), argv[4]);
  }
  const int n = argc > 1 ? std::atoi(argv[1]) : 2;
  EMU_REQUIRE(n >= 1 && n <= 64);
  std::string dir;
  if (const char* shared = std::getenv("POWERTRAIN_EMU_DIR"); shared != nullptr && *shared) {
    dir = shared;
  } else {
    char pattern[] = "/tmp/nccl-spawn-XXXXXX";
    EMU_REQUIRE(mkdtemp(pattern) != nullptr);
    dir = pattern;
  }
  std::vector<pid_t> children;
  for (int k = 0; k < n; ++k) {
    const pid_t pid = fork();
    EMU_REQUIRE(pid >= 0);
    if (pid == 0) {
      const std::string index = std::to_string(k);
      const std::string count = std::to_string(n);
      execl("/proc/self/exe", argv[0], "worker", index.c_str(), count.c_str(), dir.c_str(),
            static_cast<char*>(nullptr));
      std::_Exit(127);
    }
    children.push_back(pid);
  }
  int failed = 0;
  for (pid_t pid : children) {
    int status = 0;
    EMU_REQUIRE(waitpid(pid, &status, 0) == pid);
    failed += !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  std::printf("nccl_spawn_workers: %d workers, %d failed\n", n, failed);
  return failed == 0 ? 0 : 1;
}
