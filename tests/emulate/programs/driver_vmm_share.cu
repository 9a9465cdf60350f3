// Physical memory shared between processes through the driver's virtual memory management, as
// NVIDIA's memMapIPCDrv and PyTorch's expandable segments do: an allocation created with a POSIX
// file descriptor handle type is exported, imported again in the same process (a second handle to
// the same memory) and, after fork(), by a child process that maps it into its own reservation
// and writes it. An export of an allocation created without that handle type is refused.
// Prints "driver_vmm_share: exported, imported here and in the child (exit 0), unshareable
// refused".
// Valid CUDA on a real GPU except that a forked child cannot use CUDA there (real programs pass
// the descriptor to another process over a Unix socket; the emulator's child stands for it).
#include <cuda.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "emu_driver_check.h"

size_t granularity_of(const CUmemAllocationProp& prop) {
  size_t granularity = 0;
  CU_CHECK(cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  return granularity;
}

// Maps `handle` (`bytes`) into a fresh reservation, zeroes it and unmaps it.
void map_and_clear(CUmemGenericAllocationHandle handle, size_t bytes) {
  CUdeviceptr address = 0;
  CU_CHECK(cuMemAddressReserve(&address, bytes, 0, 0, 0));
  CU_CHECK(cuMemMap(address, bytes, 0, handle, 0));
  CUmemAccessDesc access = {};
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = 0;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  CU_CHECK(cuMemSetAccess(address, bytes, &access, 1));
  CU_CHECK(cuMemsetD32(address, 0, bytes / 4));
  CU_CHECK(cuCtxSynchronize());
  CU_CHECK(cuMemUnmap(address, bytes));
  CU_CHECK(cuMemAddressFree(address, bytes));
}

int main() {
  CU_CHECK(cuInit(0));
  CUdevice device;
  CU_CHECK(cuDeviceGet(&device, 0));
  CUcontext ctx;
  CU_CHECK(cuDevicePrimaryCtxRetain(&ctx, device));
  CU_CHECK(cuCtxSetCurrent(ctx));

  CUmemAllocationProp prop = {};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  const size_t bytes = 4 * granularity_of(prop);
  CUmemGenericAllocationHandle handle;
  CU_CHECK(cuMemCreate(&handle, bytes, &prop, 0));
  int fd = -1;
  CU_CHECK(cuMemExportToShareableHandle(&fd, handle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
  EMU_REQUIRE(fd >= 0);

  // Imported here: another handle to the same memory, with the same properties.
  CUmemGenericAllocationHandle again;
  CU_CHECK(cuMemImportFromShareableHandle(&again,
                                          reinterpret_cast<void*>(static_cast<std::uintptr_t>(fd)),
                                          CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
  CUmemAllocationProp read_back = {};
  CU_CHECK(cuMemGetAllocationPropertiesFromHandle(&read_back, again));
  EMU_REQUIRE(read_back.location.id == 0 &&
              read_back.requestedHandleTypes == CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  map_and_clear(again, bytes);
  CU_CHECK(cuMemRelease(again));

  // A child process imports it from the inherited descriptor.
  const pid_t child = ::fork();
  if (child == 0) {
    CU_CHECK(cuInit(0));
    CUcontext child_ctx;
    CU_CHECK(cuDevicePrimaryCtxRetain(&child_ctx, device));
    CU_CHECK(cuCtxSetCurrent(child_ctx));
    CUmemGenericAllocationHandle imported;
    CU_CHECK(cuMemImportFromShareableHandle(
        &imported, reinterpret_cast<void*>(static_cast<std::uintptr_t>(fd)),
        CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
    map_and_clear(imported, bytes);
    CU_CHECK(cuMemRelease(imported));
    std::exit(0);  // runs the emulator's exit handlers: the child's trace is written
  }
  int status = 0;
  EMU_REQUIRE(::waitpid(child, &status, 0) == child && WIFEXITED(status));
  ::close(fd);

  // Created without a shareable handle type: the export is refused.
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_NONE;
  CUmemGenericAllocationHandle local;
  CU_CHECK(cuMemCreate(&local, bytes, &prop, 0));
  int refused_fd = -1;
  const CUresult refused =
      cuMemExportToShareableHandle(&refused_fd, local, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
  EMU_REQUIRE(refused != CUDA_SUCCESS);
  CU_CHECK(cuMemRelease(local));
  CU_CHECK(cuMemRelease(handle));
  CU_CHECK(cuDevicePrimaryCtxRelease(device));
  std::printf(
      "driver_vmm_share: exported, imported here and in the child (exit %d), unshareable "
      "refused\n",
      WEXITSTATUS(status));
  return 0;
}
