// Forks after using CUDA, like a data-loader worker: the child writes its own trace (its pid) with
// only its own calls, and the parent's trace does not contain the child's.
#include <sys/wait.h>
#include <unistd.h>

#include "emu_check.h"

__global__ void parent_kernel() {}
__global__ void child_kernel() {}

int main() {
  parent_kernel<<<1, 1>>>();
  EMU_CHECK(cudaGetLastError());
  const pid_t pid = fork();
  if (pid == 0) {
    child_kernel<<<2, 2>>>();
    EMU_CHECK(cudaGetLastError());
    std::exit(0);  // normal exit: the child's trace is written
  }
  int status = 0;
  waitpid(pid, &status, 0);
  EMU_REQUIRE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  parent_kernel<<<3, 3>>>();
  EMU_CHECK(cudaGetLastError());
  EMU_CHECK(cudaDeviceSynchronize());
  std::printf("fork_child ok\n");
  return 0;
}
