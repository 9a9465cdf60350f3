// CUDA graphs built node by node: the same iteration as graph_capture (branch A: 8 kernels,
// branch B: 8 kernels in parallel, then tail C after both) made with cudaGraphAddKernelNode,
// branch B as a child graph (cudaGraphAddChildGraphNode), an empty root node, an edge added
// later (cudaGraphAddDependencies) and the tail through the generic cudaGraphAddNode. A setup
// graph has a 1D memcpy node, a memset node, a host node and an event record node; a second
// graph waits for that event (event wait node). A conditional node without a handle is refused. The
// instantiated graph's first A kernel is reconfigured to 2 blocks
// (cudaGraphExecKernelNodeSetParams), the graph is cloned, and the iteration graph is launched 6
// times with a cudaStreamSynchronize after each.
// Valid CUDA: the same binary runs on a real GPU (which refuses the handle-less conditional too).
#include <cstring>
#include <vector>

#include "emu_check.h"
#include "graph_iteration.h"

cudaKernelNodeParams kernel_params(void* func, void** args) {
  cudaKernelNodeParams p = {};
  p.func = func;
  p.gridDim = dim3(1);
  p.blockDim = dim3(32);
  p.kernelParams = args;
  return p;
}

int main() {
  int n = 32;
  float *x = nullptr, *y = nullptr;
  EMU_CHECK(cudaMalloc(&x, n * sizeof(float)));
  EMU_CHECK(cudaMalloc(&y, n * sizeof(float)));
  cudaStream_t s;
  EMU_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaEvent_t ready;
  EMU_CHECK(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming));

  // Setup graph: copy in, clear y, count on the host, then record `ready`.
  std::vector<float> host(n, 1.0f);
  int calls = 0;
  cudaGraph_t setup;
  EMU_CHECK(cudaGraphCreate(&setup, 0));
  cudaGraphNode_t copy, clear, count, record;
  EMU_CHECK(cudaGraphAddMemcpyNode1D(&copy, setup, nullptr, 0, x, host.data(), n * sizeof(float),
                                     cudaMemcpyHostToDevice));
  cudaMemsetParams memset_params = {};
  memset_params.dst = y;
  memset_params.value = 0;
  memset_params.elementSize = 4;
  memset_params.width = n;
  memset_params.height = 1;
  EMU_CHECK(cudaGraphAddMemsetNode(&clear, setup, nullptr, 0, &memset_params));
  cudaHostNodeParams host_params = {count_call, &calls};
  const cudaGraphNode_t both[] = {copy, clear};
  EMU_CHECK(cudaGraphAddHostNode(&count, setup, both, 2, &host_params));
  EMU_CHECK(cudaGraphAddEventRecordNode(&record, setup, &count, 1, ready));
  cudaGraphExec_t setup_exec;
  EMU_CHECK(cudaGraphInstantiate(&setup_exec, setup, 0));
  EMU_REQUIRE(calls == 0);
  EMU_CHECK(cudaGraphLaunch(setup_exec, s));
  EMU_CHECK(cudaStreamSynchronize(s));
  EMU_REQUIRE(calls == 1);  // the host node ran at launch

  // The iteration graph.
  void* a_args[] = {&x, &n};
  void* b_args[] = {&y, &n};
  void* c_args[] = {&x, &y, &n};
  cudaGraph_t graph, child;
  EMU_CHECK(cudaGraphCreate(&graph, 0));
  EMU_CHECK(cudaGraphCreate(&child, 0));
  cudaGraphNode_t root, wait;
  EMU_CHECK(cudaGraphAddEmptyNode(&root, graph, nullptr, 0));
  EMU_CHECK(cudaGraphAddEventWaitNode(&wait, graph, nullptr, 0, ready));
  cudaGraphNode_t last_a = root, first_a = nullptr;
  for (int k = 0; k < kKernels; ++k) {
    const cudaKernelNodeParams p = kernel_params(reinterpret_cast<void*>(branch_a), a_args);
    cudaGraphNode_t node;
    EMU_CHECK(cudaGraphAddKernelNode(&node, graph, &last_a, 1, &p));
    if (first_a == nullptr) first_a = node;
    last_a = node;
  }
  cudaGraphNode_t last_b = nullptr;
  for (int k = 0; k < kKernels; ++k) {
    const cudaKernelNodeParams p = kernel_params(reinterpret_cast<void*>(branch_b), b_args);
    cudaGraphNode_t node;
    EMU_CHECK(cudaGraphAddKernelNode(&node, child, last_b != nullptr ? &last_b : nullptr,
                                     last_b != nullptr ? 1 : 0, &p));
    last_b = node;
  }
  cudaGraphNode_t branch_b_node;
  EMU_CHECK(cudaGraphAddChildGraphNode(&branch_b_node, graph, &root, 1, child));
  // The wait node gates both branches: an edge added after the fact.
  EMU_CHECK(cudaGraphAddDependencies(graph, &wait, &root, nullptr, 1));
  cudaGraphNodeParams tail = {};
  tail.type = cudaGraphNodeTypeKernel;
  tail.kernel.func = reinterpret_cast<void*>(tail_c);
  tail.kernel.gridDim = dim3(1);
  tail.kernel.blockDim = dim3(32);
  tail.kernel.kernelParams = c_args;
  const cudaGraphNode_t joins[] = {last_a, branch_b_node};
  cudaGraphNode_t tail_node;
  EMU_CHECK(cudaGraphAddNode(&tail_node, graph, joins, nullptr, 2, &tail));
  cudaGraphNodeType type;
  EMU_CHECK(cudaGraphNodeGetType(branch_b_node, &type));
  EMU_REQUIRE(type == cudaGraphNodeTypeGraph);
  size_t nodes = 0;
  EMU_CHECK(cudaGraphGetNodes(graph, nullptr, &nodes));
  EMU_REQUIRE(nodes == 2 + kKernels + 1 + 1);  // root, wait, A x 8, child, tail

  // A conditional node without a handle or bodies is refused, the graph is unchanged.
  cudaGraphNodeParams conditional = {};
  conditional.type = cudaGraphNodeTypeConditional;
  cudaGraphNode_t refused;
  const cudaError_t status =
      cudaGraphAddNode(&refused, graph, &tail_node, nullptr, 1, &conditional);
  std::printf("conditional node: %s\n", cudaGetErrorName(status));
  (void)cudaGetLastError();

  cudaGraphExec_t exec;
  EMU_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  // The instantiated graph's first A kernel is reconfigured to 2 blocks (the graph keeps 1).
  cudaKernelNodeParams first_params;
  EMU_CHECK(cudaGraphKernelNodeGetParams(first_a, &first_params));
  EMU_REQUIRE(first_params.func == reinterpret_cast<void*>(branch_a));
  EMU_REQUIRE(first_params.gridDim.x == 1 && first_params.blockDim.x == 32);
  first_params.gridDim = dim3(2);
  EMU_CHECK(cudaGraphExecKernelNodeSetParams(exec, first_a, &first_params));
  // A clone has the same nodes.
  cudaGraph_t copy_of_graph;
  EMU_CHECK(cudaGraphClone(&copy_of_graph, graph));
  size_t cloned = 0;
  EMU_CHECK(cudaGraphGetNodes(copy_of_graph, nullptr, &cloned));
  EMU_REQUIRE(cloned == nodes);
  EMU_CHECK(cudaGraphDestroy(copy_of_graph));
  for (int i = 0; i <= kIterations; ++i) {
    EMU_CHECK(cudaGraphLaunch(exec, s));
    EMU_CHECK(cudaStreamSynchronize(s));
  }
  EMU_CHECK(cudaGraphExecDestroy(exec));
  EMU_CHECK(cudaGraphExecDestroy(setup_exec));
  EMU_CHECK(cudaGraphDestroy(graph));
  EMU_CHECK(cudaGraphDestroy(child));
  EMU_CHECK(cudaGraphDestroy(setup));
  std::printf("graph_explicit: %d iterations\n", kIterations + 1);
  return 0;
}
