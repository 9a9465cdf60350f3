// Editing a graph after building it, as graph-rewriting code does: a node removed with
// cudaGraphDestroyNode takes its edges with it (and a child graph node its work), a child graph
// node's graph is read back with cudaGraphChildGraphNodeGetGraph. The graph is launched before and
// after the removals. Prints "graph_edit: nodes 4 -> 3 -> 2, edges 3 -> 2 -> 0, child nodes 2,
// child edit accepted" ("refused" under the emulator).
// Valid CUDA: the same binary runs on a real GPU (where editing the child's graph would succeed;
// the emulator reports it instead, see the test).
#include <cstdio>

#include "emu_check.h"

__global__ void first(float* x, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += 1.0f;
}
__global__ void inner(float* x, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= 2.0f;
}
__global__ void last(float* x, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] -= 1.0f;
}

size_t count_nodes(cudaGraph_t graph) {
  size_t n = 0;
  EMU_CHECK(cudaGraphGetNodes(graph, nullptr, &n));
  return n;
}

size_t count_edges(cudaGraph_t graph) {
  size_t n = 0;
  EMU_CHECK(cudaGraphGetEdges(graph, nullptr, nullptr, nullptr, &n));
  return n;
}

void launch_once(cudaGraph_t graph, cudaStream_t stream) {
  cudaGraphExec_t exec;
  EMU_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  EMU_CHECK(cudaGraphLaunch(exec, stream));
  EMU_CHECK(cudaStreamSynchronize(stream));
  EMU_CHECK(cudaGraphExecDestroy(exec));
}

int main() {
  const int n = 1 << 14;
  float* x = nullptr;
  EMU_CHECK(cudaMalloc(&x, n * sizeof(float)));
  cudaStream_t stream;
  EMU_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  int count = n;
  void* args[] = {&x, &count};
  cudaKernelNodeParams kp{};
  kp.gridDim = dim3(n / 256);
  kp.blockDim = dim3(256);
  kp.kernelParams = args;

  // The child: a memset, then the inner kernel.
  cudaGraph_t child;
  EMU_CHECK(cudaGraphCreate(&child, 0));
  cudaMemsetParams mp{};
  mp.dst = x;
  mp.value = 0;
  mp.elementSize = 4;
  mp.width = n;
  mp.height = 1;
  cudaGraphNode_t fill, scale;
  EMU_CHECK(cudaGraphAddMemsetNode(&fill, child, nullptr, 0, &mp));
  kp.func = reinterpret_cast<void*>(inner);
  EMU_CHECK(cudaGraphAddKernelNode(&scale, child, &fill, 1, &kp));

  // The parent: first → child → last, and a side memset after first.
  cudaGraph_t graph;
  EMU_CHECK(cudaGraphCreate(&graph, 0));
  cudaGraphNode_t a, child_node, z, side;
  kp.func = reinterpret_cast<void*>(first);
  EMU_CHECK(cudaGraphAddKernelNode(&a, graph, nullptr, 0, &kp));
  EMU_CHECK(cudaGraphAddChildGraphNode(&child_node, graph, &a, 1, child));
  kp.func = reinterpret_cast<void*>(last);
  EMU_CHECK(cudaGraphAddKernelNode(&z, graph, &child_node, 1, &kp));
  EMU_CHECK(cudaGraphAddMemsetNode(&side, graph, &a, 1, &mp));
  const size_t nodes0 = count_nodes(graph), edges0 = count_edges(graph);
  launch_once(graph, stream);

  // The child node's graph, read back.
  cudaGraph_t embedded;
  EMU_CHECK(cudaGraphChildGraphNodeGetGraph(child_node, &embedded));
  const size_t child_nodes = count_nodes(embedded);
  // Adding to it is valid CUDA; the emulator, whose copy would not reach the node, refuses.
  cudaGraphNode_t extra;
  const bool edit_accepted = cudaGraphAddEmptyNode(&extra, embedded, nullptr, 0) == cudaSuccess;
  cudaGetLastError();

  EMU_CHECK(cudaGraphDestroyNode(side));
  const size_t nodes1 = count_nodes(graph), edges1 = count_edges(graph);
  cudaGraphNodeType type;
  EMU_REQUIRE(cudaGraphNodeGetType(side, &type) != cudaSuccess);  // the handle is gone
  cudaGetLastError();
  launch_once(graph, stream);

  EMU_CHECK(cudaGraphDestroyNode(child_node));
  const size_t nodes2 = count_nodes(graph), edges2 = count_edges(graph);
  launch_once(graph, stream);

  EMU_CHECK(cudaGraphDestroy(graph));
  EMU_CHECK(cudaGraphDestroy(child));
  EMU_CHECK(cudaStreamDestroy(stream));
  EMU_CHECK(cudaFree(x));
  std::printf(
      "graph_edit: nodes %zu -> %zu -> %zu, edges %zu -> %zu -> %zu, child nodes %zu, child edit "
      "%s\n",
      nodes0, nodes1, nodes2, edges0, edges1, edges2, child_nodes,
      edit_accepted ? "accepted" : "refused");
  return 0;
}
