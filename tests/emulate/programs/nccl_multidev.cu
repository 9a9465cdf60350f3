// One process driving several GPUs (8 by default, argv[1] to change): ncclCommInitAll, then
// grouped collectives with one communicator and stream per device — an allreduce per device, a
// nested group of allgathers, a grouped ncclCommSplit into even and odd devices and an
// allreduce on each half. Valid CUDA/NCCL: the same binary runs on a real 8-GPU machine.
#include <vector>

#include "nccl_program_util.h"

int main(int argc, char** argv) {
  int visible = 0;
  EMU_CHECK(cudaGetDeviceCount(&visible));
  const int ndev = argc > 1 ? std::atoi(argv[1]) : 8;
  if (visible < ndev || ndev < 2 || ndev % 2 != 0) {
    std::fprintf(stderr, "needs an even number >= 2 of devices, %d requested, %d visible\n", ndev,
                 visible);
    return 1;
  }
  std::vector<ncclComm_t> comms(ndev);
  NCCL_CHECK(ncclCommInitAll(comms.data(), ndev, nullptr));

  const size_t n = 1 << 16;
  std::vector<cudaStream_t> streams(ndev);
  std::vector<float*> bufs(ndev), gathered(ndev);
  for (int i = 0; i < ndev; ++i) {
    int device = -1, rank = -1, count = 0;
    NCCL_CHECK(ncclCommCuDevice(comms[i], &device));
    NCCL_CHECK(ncclCommUserRank(comms[i], &rank));
    NCCL_CHECK(ncclCommCount(comms[i], &count));
    EMU_REQUIRE(device == i && rank == i && count == ndev);
    EMU_CHECK(cudaSetDevice(i));
    EMU_CHECK(cudaStreamCreate(&streams[i]));
    EMU_CHECK(cudaMalloc(&bufs[i], n * sizeof(float)));
    EMU_CHECK(cudaMalloc(&gathered[i], n * ndev * sizeof(float)));
  }

  NCCL_CHECK(ncclGroupStart());
  for (int i = 0; i < ndev; ++i) {
    NCCL_CHECK(ncclAllReduce(bufs[i], bufs[i], n, ncclFloat32, ncclSum, comms[i], streams[i]));
  }
  NCCL_CHECK(ncclGroupEnd());

  NCCL_CHECK(ncclGroupStart());  // nested groups: one group for the runtime
  for (int i = 0; i < ndev; ++i) {
    NCCL_CHECK(ncclGroupStart());
    NCCL_CHECK(ncclAllGather(bufs[i], gathered[i], n, ncclFloat32, comms[i], streams[i]));
    NCCL_CHECK(ncclGroupEnd());
  }
  NCCL_CHECK(ncclGroupEnd());

  std::vector<ncclComm_t> halves(ndev);
  NCCL_CHECK(ncclGroupStart());
  for (int i = 0; i < ndev; ++i) {
    NCCL_CHECK(ncclCommSplit(comms[i], i % 2, i, &halves[i], nullptr));
  }
  NCCL_CHECK(ncclGroupEnd());
  for (int i = 0; i < ndev; ++i) {
    int rank = -1, count = 0;
    NCCL_CHECK(ncclCommUserRank(halves[i], &rank));
    NCCL_CHECK(ncclCommCount(halves[i], &count));
    EMU_REQUIRE(rank == i / 2 && count == ndev / 2);
  }
  NCCL_CHECK(ncclGroupStart());
  for (int i = 0; i < ndev; ++i) {
    NCCL_CHECK(ncclAllReduce(bufs[i], bufs[i], n / 2, ncclFloat16, ncclSum, halves[i], streams[i]));
  }
  NCCL_CHECK(ncclGroupEnd());

  for (int i = 0; i < ndev; ++i) {
    EMU_CHECK(cudaSetDevice(i));
    EMU_CHECK(cudaStreamSynchronize(streams[i]));
  }
  for (int i = 0; i < ndev; ++i) {
    NCCL_CHECK(ncclCommDestroy(halves[i]));
    NCCL_CHECK(ncclCommDestroy(comms[i]));
    EMU_CHECK(cudaSetDevice(i));
    EMU_CHECK(cudaFree(gathered[i]));
    EMU_CHECK(cudaFree(bufs[i]));
    EMU_CHECK(cudaStreamDestroy(streams[i]));
  }
  // ncclMemAlloc gives device memory: cudaMemGetInfo sees it.
  EMU_CHECK(cudaSetDevice(0));
  size_t free_before = 0, free_during = 0, free_after = 0, total = 0;
  EMU_CHECK(cudaMemGetInfo(&free_before, &total));
  void* nccl_buffer = nullptr;
  NCCL_CHECK(ncclMemAlloc(&nccl_buffer, size_t{64} << 20));
  EMU_CHECK(cudaMemGetInfo(&free_during, &total));
  EMU_REQUIRE(free_before - free_during == (size_t{64} << 20));
  NCCL_CHECK(ncclMemFree(nccl_buffer));
  EMU_CHECK(cudaMemGetInfo(&free_after, &total));
  EMU_REQUIRE(free_after == free_before);
  std::printf("%d devices: ok\n", ndev);
  return 0;
}
