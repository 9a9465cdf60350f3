// How CUDA samples print and extend graphs: a graph built node by node (A → B, A → C, B and C →
// D, and a child graph after D), its structure read back with cudaGraphGetRootNodes,
// cudaGraphGetEdges and cudaGraphNodeGetDependencies/DependentNodes (count first, then the
// handles), then more work captured into the same graph after the child node with
// cudaStreamBeginCaptureToGraph (the second kernel also after D, through
// cudaStreamGetCaptureInfo and cudaStreamUpdateCaptureDependencies); the graph is instantiated with
// cudaGraphInstantiateWithParams (upload flag, read back with cudaGraphExecGetFlags) and launched
// twice. Prints "graph_structure: nodes N edges E roots R root_is_a 1 deps_of_d 2 dependents_of_a 2
// child_deps 1 captured_into_same 1 nodes_after 7 edges_after 8 dot_nodes 7 dot_edges 8" (the
// last two counted in the cudaGraphDebugDotPrint drawing); then "graph_structure: host runs 0 0 1"
// (a host node's function argument replaced in the graph, then in the exec).
// Valid CUDA: the same binary runs on a real GPU.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>

#include "emu_check.h"

__global__ void step(float* x, int n, float v) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += v;
}

int g_host_runs[3] = {0, 0, 0};
void CUDART_CB host_fn(void* which) { ++g_host_runs[*static_cast<int*>(which)]; }

int main() {
  const int n = 1 << 16;
  float* x = nullptr;
  EMU_CHECK(cudaMalloc(&x, n * sizeof(float)));
  cudaStream_t s;
  EMU_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

  float value = 1.0f;
  int count = n;
  void* args[] = {&x, &count, &value};
  cudaKernelNodeParams kp{};
  kp.func = reinterpret_cast<void*>(step);
  kp.gridDim = dim3(n / 256);
  kp.blockDim = dim3(256);
  kp.kernelParams = args;

  cudaGraph_t graph;
  EMU_CHECK(cudaGraphCreate(&graph, 0));
  cudaGraphNode_t a, b, c, d, child_node;
  EMU_CHECK(cudaGraphAddKernelNode(&a, graph, nullptr, 0, &kp));
  EMU_CHECK(cudaGraphAddKernelNode(&b, graph, &a, 1, &kp));
  EMU_CHECK(cudaGraphAddKernelNode(&c, graph, &a, 1, &kp));
  const cudaGraphNode_t bc[] = {b, c};
  EMU_CHECK(cudaGraphAddKernelNode(&d, graph, bc, 2, &kp));
  cudaGraph_t child;
  EMU_CHECK(cudaGraphCreate(&child, 0));
  cudaGraphNode_t c1, c2;
  EMU_CHECK(cudaGraphAddKernelNode(&c1, child, nullptr, 0, &kp));
  EMU_CHECK(cudaGraphAddKernelNode(&c2, child, &c1, 1, &kp));
  EMU_CHECK(cudaGraphAddChildGraphNode(&child_node, graph, &d, 1, child));

  size_t nodes = 0, edges = 0, roots = 0;
  EMU_CHECK(cudaGraphGetNodes(graph, nullptr, &nodes));
  EMU_CHECK(cudaGraphGetEdges(graph, nullptr, nullptr, nullptr, &edges));
  std::vector<cudaGraphNode_t> from(edges), to(edges);
  EMU_CHECK(cudaGraphGetEdges(graph, from.data(), to.data(), nullptr, &edges));
  // Every edge the program added, once.
  const std::pair<cudaGraphNode_t, cudaGraphNode_t> expected[] = {
      {a, b}, {a, c}, {b, d}, {c, d}, {d, child_node}};
  for (const auto& e : expected) {
    int found = 0;
    for (size_t k = 0; k < edges; ++k) found += from[k] == e.first && to[k] == e.second;
    EMU_REQUIRE(found == 1);
  }
  EMU_CHECK(cudaGraphGetRootNodes(graph, nullptr, &roots));
  cudaGraphNode_t root = nullptr;
  size_t one = 1;
  EMU_CHECK(cudaGraphGetRootNodes(graph, &root, &one));
  size_t deps_of_d = 0, dependents_of_a = 0, child_deps = 0;
  EMU_CHECK(cudaGraphNodeGetDependencies(d, nullptr, nullptr, &deps_of_d));
  std::vector<cudaGraphNode_t> d_deps(deps_of_d);
  EMU_CHECK(cudaGraphNodeGetDependencies(d, d_deps.data(), nullptr, &deps_of_d));
  EMU_REQUIRE(std::count(d_deps.begin(), d_deps.end(), b) == 1);
  EMU_REQUIRE(std::count(d_deps.begin(), d_deps.end(), c) == 1);
  EMU_CHECK(cudaGraphNodeGetDependentNodes(a, nullptr, nullptr, &dependents_of_a));
  cudaGraphNode_t child_dep = nullptr;
  child_deps = 1;
  EMU_CHECK(cudaGraphNodeGetDependencies(child_node, &child_dep, nullptr, &child_deps));
  EMU_REQUIRE(child_dep == d);
  cudaGraphNodeType type;
  EMU_CHECK(cudaGraphNodeGetType(child_node, &type));
  EMU_REQUIRE(type == cudaGraphNodeTypeGraph);

  // Capture two more kernels into the same graph, after the child graph node.
  EMU_CHECK(cudaStreamBeginCaptureToGraph(s, graph, &child_node, nullptr, 1,
                                          cudaStreamCaptureModeGlobal));
  cudaStreamCaptureStatus status;
  EMU_CHECK(cudaStreamIsCapturing(s, &status));
  EMU_REQUIRE(status == cudaStreamCaptureStatusActive);
  step<<<n / 256, 256, 0, s>>>(x, n, 2.0f);
  // The capture's dependencies are the kernel just captured; add D to them (PyTorch joins side
  // work into a capture this way), so the next kernel depends on both.
  const cudaGraphNode_t* capture_deps = nullptr;
  size_t capture_dep_count = 0;
  EMU_CHECK(cudaStreamGetCaptureInfo(s, &status, nullptr, nullptr, &capture_deps, nullptr,
                                     &capture_dep_count));
  EMU_REQUIRE(capture_dep_count == 1 && capture_deps != nullptr);
  cudaGraphNodeType captured_type;
  EMU_CHECK(cudaGraphNodeGetType(capture_deps[0], &captured_type));
  EMU_REQUIRE(captured_type == cudaGraphNodeTypeKernel);
  EMU_CHECK(
      cudaStreamUpdateCaptureDependencies(s, &d, nullptr, 1, cudaStreamAddCaptureDependencies));
  step<<<n / 256, 256, 0, s>>>(x, n, 3.0f);
  cudaGraph_t captured = nullptr;
  EMU_CHECK(cudaStreamEndCapture(s, &captured));
  size_t nodes_after = 0, edges_after = 0;
  EMU_CHECK(cudaGraphGetNodes(graph, nullptr, &nodes_after));
  EMU_CHECK(cudaGraphGetEdges(graph, nullptr, nullptr, nullptr, &edges_after));
  // The Graphviz drawing (PyTorch's CUDAGraph::debug_dump): one line per node and per edge.
  EMU_CHECK(cudaGraphDebugDotPrint(graph, "graph_structure.dot", cudaGraphDebugDotFlagsVerbose));
  int dot_nodes = 0, dot_edges = 0;
  if (std::FILE* dot = std::fopen("graph_structure.dot", "r")) {
    char line[256];
    while (std::fgets(line, sizeof line, dot) != nullptr) {
      dot_nodes += std::strstr(line, "[label=") != nullptr;
      dot_edges += std::strstr(line, " -> ") != nullptr;
    }
    std::fclose(dot);
  }

  cudaGraphExec_t exec;
  cudaGraphInstantiateParams params = {};
  params.flags = cudaGraphInstantiateFlagUpload;
  params.uploadStream = s;
  EMU_CHECK(cudaGraphInstantiateWithParams(&exec, graph, &params));
  EMU_REQUIRE(params.result_out == cudaGraphInstantiateSuccess);
  unsigned long long exec_flags = 0;
  EMU_CHECK(cudaGraphExecGetFlags(exec, &exec_flags));
  EMU_REQUIRE(exec_flags == cudaGraphInstantiateFlagUpload);
  for (int i = 0; i < 2; ++i) EMU_CHECK(cudaGraphLaunch(exec, s));
  EMU_CHECK(cudaStreamSynchronize(s));
  std::printf(
      "graph_structure: nodes %zu edges %zu roots %zu root_is_a %d deps_of_d %zu "
      "dependents_of_a %zu child_deps %zu captured_into_same %d nodes_after %zu edges_after %zu "
      "dot_nodes %d dot_edges %d\n",
      nodes, edges, roots, root == a ? 1 : 0, deps_of_d, dependents_of_a, child_deps,
      captured == graph ? 1 : 0, nodes_after, edges_after, dot_nodes, dot_edges);
  EMU_CHECK(cudaGraphExecDestroy(exec));
  EMU_CHECK(cudaGraphDestroy(graph));

  // A host node's parameters read back and replaced in the graph, then in the exec: only the
  // exec's function runs at launch.
  int which[3] = {0, 1, 2};
  cudaGraph_t host_graph;
  EMU_CHECK(cudaGraphCreate(&host_graph, 0));
  cudaHostNodeParams hp{};
  hp.fn = host_fn;
  hp.userData = &which[0];
  cudaGraphNode_t host_node;
  EMU_CHECK(cudaGraphAddHostNode(&host_node, host_graph, nullptr, 0, &hp));
  cudaHostNodeParams read{};
  EMU_CHECK(cudaGraphHostNodeGetParams(host_node, &read));
  EMU_REQUIRE(read.fn == host_fn && read.userData == &which[0]);
  hp.userData = &which[1];
  EMU_CHECK(cudaGraphHostNodeSetParams(host_node, &hp));
  cudaGraphExec_t host_exec;
  EMU_CHECK(cudaGraphInstantiate(&host_exec, host_graph, 0));
  hp.userData = &which[2];
  EMU_CHECK(cudaGraphExecHostNodeSetParams(host_exec, host_node, &hp));
  EMU_CHECK(cudaGraphLaunch(host_exec, s));
  EMU_CHECK(cudaStreamSynchronize(s));
  std::printf("graph_structure: host runs %d %d %d\n", g_host_runs[0], g_host_runs[1],
              g_host_runs[2]);
  EMU_CHECK(cudaGraphExecDestroy(host_exec));
  EMU_CHECK(cudaGraphDestroy(host_graph));
  EMU_CHECK(cudaGraphDestroy(child));
  EMU_CHECK(cudaStreamDestroy(s));
  EMU_CHECK(cudaFree(x));
  return 0;
}
