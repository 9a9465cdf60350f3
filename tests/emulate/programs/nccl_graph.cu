// NCCL inside CUDA graphs, as nccl-tests' -G mode, PyTorch's CUDA-graphed DDP and Megatron's
// captured steps use it: one process drives 2 devices (argv[1] to change); on each device a
// "gradient" kernel and a grouped all-reduce are captured into a graph (thread-local capture),
// the graphs are launched 3 times, then one more all-reduce runs uncaptured. Valid CUDA/NCCL:
// the same binary runs on a real multi-GPU machine. Written for the emulator's tests.
#include <vector>

#include "nccl_program_util.h"

__global__ void produce_gradient(float* grad, int n, float step) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) grad[i] = step * static_cast<float>(i % 7);
}

int main(int argc, char** argv) {
  int visible = 0;
  EMU_CHECK(cudaGetDeviceCount(&visible));
  const int ndev = argc > 1 ? std::atoi(argv[1]) : 2;
  if (ndev < 1 || visible < ndev) {
    std::fprintf(stderr, "needs %d devices, %d visible\n", ndev, visible);
    return 1;
  }
  std::vector<ncclComm_t> comms(ndev);
  NCCL_CHECK(ncclCommInitAll(comms.data(), ndev, nullptr));
  const int n = 1 << 20;  // 4 MiB of fp32 gradients per device
  std::vector<cudaStream_t> streams(ndev);
  std::vector<float*> grads(ndev);
  std::vector<cudaGraph_t> graphs(ndev);
  std::vector<cudaGraphExec_t> execs(ndev);
  for (int i = 0; i < ndev; ++i) {
    EMU_CHECK(cudaSetDevice(i));
    EMU_CHECK(cudaStreamCreateWithFlags(&streams[i], cudaStreamNonBlocking));
    EMU_CHECK(cudaMalloc(&grads[i], n * sizeof(float)));
  }

  // Capture: per device the producer kernel, then one group of all-reduces over the devices.
  for (int i = 0; i < ndev; ++i) {
    EMU_CHECK(cudaSetDevice(i));
    EMU_CHECK(cudaStreamBeginCapture(streams[i], cudaStreamCaptureModeThreadLocal));
    produce_gradient<<<n / 256, 256, 0, streams[i]>>>(grads[i], n, 0.5f);
    EMU_CHECK(cudaGetLastError());
  }
  NCCL_CHECK(ncclGroupStart());
  for (int i = 0; i < ndev; ++i) {
    NCCL_CHECK(ncclAllReduce(grads[i], grads[i], n, ncclFloat32, ncclSum, comms[i], streams[i]));
  }
  NCCL_CHECK(ncclGroupEnd());
  for (int i = 0; i < ndev; ++i) {
    EMU_CHECK(cudaSetDevice(i));
    EMU_CHECK(cudaStreamEndCapture(streams[i], &graphs[i]));
    size_t nodes = 0;
    EMU_CHECK(cudaGraphGetNodes(graphs[i], nullptr, &nodes));
    EMU_REQUIRE(nodes == 2);  // the kernel and the all-reduce
    EMU_CHECK(cudaGraphInstantiate(&execs[i], graphs[i], 0));
  }

  const int launches = 3;
  for (int step = 0; step < launches; ++step) {
    for (int i = 0; i < ndev; ++i) {
      EMU_CHECK(cudaSetDevice(i));
      EMU_CHECK(cudaGraphLaunch(execs[i], streams[i]));
    }
    for (int i = 0; i < ndev; ++i) {
      EMU_CHECK(cudaSetDevice(i));
      EMU_CHECK(cudaStreamSynchronize(streams[i]));
    }
  }

  // The same all-reduce outside a graph continues the communicators' sequence.
  NCCL_CHECK(ncclGroupStart());
  for (int i = 0; i < ndev; ++i) {
    NCCL_CHECK(ncclAllReduce(grads[i], grads[i], n, ncclFloat32, ncclSum, comms[i], streams[i]));
  }
  NCCL_CHECK(ncclGroupEnd());
  for (int i = 0; i < ndev; ++i) {
    EMU_CHECK(cudaSetDevice(i));
    EMU_CHECK(cudaStreamSynchronize(streams[i]));
    EMU_CHECK(cudaGraphExecDestroy(execs[i]));
    EMU_CHECK(cudaGraphDestroy(graphs[i]));
    EMU_CHECK(cudaFree(grads[i]));
    EMU_CHECK(cudaStreamDestroy(streams[i]));
    NCCL_CHECK(ncclCommDestroy(comms[i]));
  }
  std::printf("nccl_graph: %d devices, %d launches of a captured all-reduce: ok\n", ndev, launches);
  return 0;
}
