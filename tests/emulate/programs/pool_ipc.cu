// streamOrderedAllocationIPC's calls: a memory pool created with the POSIX file descriptor handle
// type is exported (cudaMemPoolExportToShareableHandle), an allocation from it exported with
// cudaMemPoolExportPointer; a forked child imports the pool from the inherited descriptor and the
// pointer from the export data (a stand-in of the same size there), clears it and frees it. The
// exporting process imports its own pointer back (the allocation itself). A pool created without
// a shareable handle type is refused its export. Prints "pool_ipc: exported 1048576 bytes, child
// exit 0, own import same 1, plain pool refused 1".
// Valid CUDA on a real GPU except that a forked child cannot use CUDA there (the sample sends the
// descriptor to processes it spawned, over a Unix socket; the emulator's child stands for them).
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "emu_check.h"

int main() {
  cudaStream_t stream;
  EMU_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaMemPoolProps props = {};
  props.allocType = cudaMemAllocationTypePinned;
  props.handleTypes = cudaMemHandleTypePosixFileDescriptor;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = 0;
  cudaMemPool_t pool;
  EMU_CHECK(cudaMemPoolCreate(&pool, &props));
  int fd = -1;
  EMU_CHECK(cudaMemPoolExportToShareableHandle(&fd, pool, cudaMemHandleTypePosixFileDescriptor, 0));
  const size_t bytes = 1 << 20;
  void* buffer = nullptr;
  EMU_CHECK(cudaMallocFromPoolAsync(&buffer, bytes, pool, stream));
  EMU_CHECK(cudaStreamSynchronize(stream));
  cudaMemPoolPtrExportData data;
  EMU_CHECK(cudaMemPoolExportPointer(&data, buffer));

  const pid_t child = ::fork();
  if (child == 0) {
    cudaMemPool_t imported_pool;
    EMU_CHECK(cudaMemPoolImportFromShareableHandle(
        &imported_pool, reinterpret_cast<void*>(static_cast<std::uintptr_t>(fd)),
        cudaMemHandleTypePosixFileDescriptor, 0));
    void* imported = nullptr;
    EMU_CHECK(cudaMemPoolImportPointer(&imported, imported_pool, &data));
    EMU_CHECK(cudaMemset(imported, 0, bytes));
    EMU_CHECK(cudaFree(imported));
    EMU_CHECK(cudaMemPoolDestroy(imported_pool));
    std::exit(0);  // the emulator's exit handlers write the child's trace
  }
  int status = 0;
  EMU_REQUIRE(::waitpid(child, &status, 0) == child && WIFEXITED(status));

  void* own = nullptr;
  EMU_CHECK(cudaMemPoolImportPointer(&own, pool, &data));
  const int same = own == buffer;

  cudaMemPoolProps plain_props = props;
  plain_props.handleTypes = cudaMemHandleTypeNone;
  cudaMemPool_t plain;
  EMU_CHECK(cudaMemPoolCreate(&plain, &plain_props));
  int plain_fd = -1;
  const int refused = cudaMemPoolExportToShareableHandle(
                          &plain_fd, plain, cudaMemHandleTypePosixFileDescriptor, 0) != cudaSuccess;
  cudaGetLastError();

  EMU_CHECK(cudaFreeAsync(buffer, stream));
  EMU_CHECK(cudaStreamSynchronize(stream));
  EMU_CHECK(cudaMemPoolDestroy(plain));
  EMU_CHECK(cudaMemPoolDestroy(pool));
  ::close(fd);
  EMU_CHECK(cudaStreamDestroy(stream));
  std::printf(
      "pool_ipc: exported %zu bytes, child exit %d, own import same %d, plain pool refused %d\n",
      bytes, WEXITSTATUS(status), same, refused);
  return 0;
}
