// CUDA graph memory nodes as NVIDIA's graphMemoryNodes sample uses them, and stream-ordered
// allocation in a capture. (1) Explicit: an alloc node (1 MiB on device 0), a kernel writing it,
// a free node after the kernel; instantiated with cudaGraphInstantiateFlagAutoFreeOnLaunch,
// uploaded, launched 3 times; the alloc node's parameters read back; the graph-memory attributes
// read and trimmed. (2) The generic cudaGraphAddNode with alloc/free parameters. (3) Captured:
// cudaMallocAsync, a kernel, cudaFreeAsync on a capturing stream, launched twice. Prints
// "graph_memory_nodes: used B reserved R params_match M generic_dptr G captured_launches 2" (B: 0,
// the free node ran; R: the pool keeps the 1 MiB), then after destroying the graphs and execs
// "graph_memory_nodes: after destroy used 0 reserved 0 used_high 0" (given back; the high
// watermark was reset after the launches).
// Valid CUDA: the same binary runs on a real GPU.
#include <cstdint>

#include "emu_check.h"

__global__ void fill(float* x, int n, float v) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = v;
}

int main() {
  const int n = 1 << 18;  // 1 MiB of floats
  cudaStream_t s;
  EMU_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

  // (1) explicit alloc → kernel → free
  cudaGraph_t graph;
  EMU_CHECK(cudaGraphCreate(&graph, 0));
  cudaMemAllocNodeParams alloc{};
  alloc.poolProps.allocType = cudaMemAllocationTypePinned;
  alloc.poolProps.location.type = cudaMemLocationTypeDevice;
  alloc.poolProps.location.id = 0;
  alloc.bytesize = n * sizeof(float);
  cudaGraphNode_t alloc_node, kernel_node, free_node;
  EMU_CHECK(cudaGraphAddMemAllocNode(&alloc_node, graph, nullptr, 0, &alloc));
  float* buffer = static_cast<float*>(alloc.dptr);
  if (buffer == nullptr) return 1;
  float value = 1.0f;
  int count = n;
  void* args[] = {&buffer, &count, &value};
  cudaKernelNodeParams kp{};
  kp.func = reinterpret_cast<void*>(fill);
  kp.gridDim = dim3(n / 256);
  kp.blockDim = dim3(256);
  kp.kernelParams = args;
  EMU_CHECK(cudaGraphAddKernelNode(&kernel_node, graph, &alloc_node, 1, &kp));
  EMU_CHECK(cudaGraphAddMemFreeNode(&free_node, graph, &kernel_node, 1, buffer));
  cudaGraphNodeType type;
  EMU_CHECK(cudaGraphNodeGetType(alloc_node, &type));
  if (type != cudaGraphNodeTypeMemAlloc) return 1;
  cudaMemAllocNodeParams read_back{};
  EMU_CHECK(cudaGraphMemAllocNodeGetParams(alloc_node, &read_back));
  void* freed = nullptr;
  EMU_CHECK(cudaGraphMemFreeNodeGetParams(free_node, &freed));
  const bool params_match =
      read_back.dptr == buffer && read_back.bytesize == alloc.bytesize && freed == buffer;
  cudaGraphExec_t exec;
  EMU_CHECK(cudaGraphInstantiateWithFlags(&exec, graph, cudaGraphInstantiateFlagAutoFreeOnLaunch));
  EMU_CHECK(cudaGraphUpload(exec, s));
  for (int i = 0; i < 3; ++i) EMU_CHECK(cudaGraphLaunch(exec, s));
  EMU_CHECK(cudaStreamSynchronize(s));
  std::uint64_t used = 0, reserved = 0;
  EMU_CHECK(cudaDeviceGetGraphMemAttribute(0, cudaGraphMemAttrUsedMemCurrent, &used));
  EMU_CHECK(cudaDeviceGetGraphMemAttribute(0, cudaGraphMemAttrReservedMemCurrent, &reserved));
  std::uint64_t zero = 0;
  EMU_CHECK(cudaDeviceSetGraphMemAttribute(0, cudaGraphMemAttrUsedMemHigh, &zero));
  EMU_CHECK(cudaDeviceGraphMemTrim(0));

  // (2) the generic node API
  cudaGraph_t generic;
  EMU_CHECK(cudaGraphCreate(&generic, 0));
  cudaGraphNodeParams gp{};
  gp.type = cudaGraphNodeTypeMemAlloc;
  gp.alloc.poolProps = alloc.poolProps;
  gp.alloc.bytesize = 4096;
  cudaGraphNode_t generic_alloc, generic_free;
  EMU_CHECK(cudaGraphAddNode(&generic_alloc, generic, nullptr, nullptr, 0, &gp));
  const bool generic_dptr = gp.alloc.dptr != nullptr;
  cudaGraphNodeParams fp{};
  fp.type = cudaGraphNodeTypeMemFree;
  fp.free.dptr = gp.alloc.dptr;
  EMU_CHECK(cudaGraphAddNode(&generic_free, generic, &generic_alloc, nullptr, 1, &fp));

  // (3) stream-ordered allocation inside a capture
  cudaGraph_t captured;
  EMU_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  float* scratch = nullptr;
  EMU_CHECK(cudaMallocAsync(&scratch, n * sizeof(float), s));
  fill<<<n / 256, 256, 0, s>>>(scratch, n, 2.0f);
  EMU_CHECK(cudaFreeAsync(scratch, s));
  EMU_CHECK(cudaStreamEndCapture(s, &captured));
  cudaGraphExec_t captured_exec;
  EMU_CHECK(cudaGraphInstantiate(&captured_exec, captured, 0));
  int launches = 0;
  for (; launches < 2; ++launches) EMU_CHECK(cudaGraphLaunch(captured_exec, s));
  EMU_CHECK(cudaStreamSynchronize(s));

  std::printf(
      "graph_memory_nodes: used %llu reserved %llu params_match %d generic_dptr %d "
      "captured_launches %d\n",
      static_cast<unsigned long long>(used), static_cast<unsigned long long>(reserved),
      params_match ? 1 : 0, generic_dptr ? 1 : 0, launches);
  EMU_CHECK(cudaGraphExecDestroy(captured_exec));
  EMU_CHECK(cudaGraphDestroy(captured));
  EMU_CHECK(cudaGraphDestroy(generic));
  EMU_CHECK(cudaGraphExecDestroy(exec));
  EMU_CHECK(cudaGraphDestroy(graph));
  std::uint64_t used_high = 0;
  EMU_CHECK(cudaDeviceGetGraphMemAttribute(0, cudaGraphMemAttrUsedMemCurrent, &used));
  EMU_CHECK(cudaDeviceGetGraphMemAttribute(0, cudaGraphMemAttrReservedMemCurrent, &reserved));
  EMU_CHECK(cudaDeviceGetGraphMemAttribute(0, cudaGraphMemAttrUsedMemHigh, &used_high));
  std::printf("graph_memory_nodes: after destroy used %llu reserved %llu used_high %llu\n",
              static_cast<unsigned long long>(used), static_cast<unsigned long long>(reserved),
              static_cast<unsigned long long>(used_high));
  // The pool keeps the unmapped memory of the destroyed graphs until a trim gives it back.
  EMU_CHECK(cudaDeviceGraphMemTrim(0));
  EMU_CHECK(cudaDeviceGetGraphMemAttribute(0, cudaGraphMemAttrReservedMemCurrent, &reserved));
  std::printf("graph_memory_nodes: after trim reserved %llu\n",
              static_cast<unsigned long long>(reserved));
  EMU_CHECK(cudaStreamDestroy(s));
  return 0;
}
