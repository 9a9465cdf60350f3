// Conditional graph nodes, built the ways programs build them: an IF node after the kernel that
// would set its condition, a do-while loop whose body is captured into the node's body graph, a
// WHILE node added by hand to a graph under stream capture, an IF/ELSE pair and a SWITCH. Under
// the emulator no device code runs, so each condition is its handle's default value; the trace
// shows which body ran (kernel names) and one assumption per conditional node.
#include <cuda_runtime.h>

#include <cstdio>

#include "emu_check.h"

__global__ void set_condition(char* flag, cudaGraphConditionalHandle handle) {
  cudaGraphSetConditional(handle, *flag & 1);
}
__global__ void then_body() {}
__global__ void else_body() {}
__global__ void loop_body(char* counter, cudaGraphConditionalHandle handle) {
  if (--(*counter) == 0) cudaGraphSetConditional(handle, 0);
}
__global__ void after_loop() {}
__global__ void case_body(int which) { (void)which; }

namespace {

cudaGraphNodeParams kernel_params(void* func, void** args) {
  cudaGraphNodeParams p{};
  p.type = cudaGraphNodeTypeKernel;
  p.kernel.func = func;
  p.kernel.gridDim = dim3(1);
  p.kernel.blockDim = dim3(32);
  p.kernel.kernelParams = args;
  return p;
}

cudaGraphNodeParams conditional_params(cudaGraphConditionalHandle handle,
                                       cudaGraphConditionalNodeType type, unsigned int size) {
  cudaGraphNodeParams c{};
  c.type = cudaGraphNodeTypeConditional;
  c.conditional.handle = handle;
  c.conditional.type = type;
  c.conditional.size = size;
  return c;
}

void launch_twice(cudaGraph_t graph) {
  cudaGraphExec_t exec;
  EMU_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  EMU_CHECK(cudaGraphLaunch(exec, 0));
  EMU_CHECK(cudaGraphLaunch(exec, 0));
  EMU_CHECK(cudaStreamSynchronize(0));
  EMU_CHECK(cudaGraphExecDestroy(exec));
}

// A -> IF [then_body]; a default value of 1 without cudaGraphCondAssignDefault is never applied,
// so the body does not run (A's setting is device code).
void if_after_kernel(char* flag) {
  cudaGraph_t graph;
  EMU_CHECK(cudaGraphCreate(&graph, 0));
  cudaGraphConditionalHandle handle;
  EMU_CHECK(cudaGraphConditionalHandleCreate(&handle, graph, 1, 0));
  void* args[] = {&flag, &handle};
  cudaGraphNodeParams a = kernel_params(reinterpret_cast<void*>(set_condition), args);
  cudaGraphNode_t a_node, if_node, body_node;
  EMU_CHECK(cudaGraphAddNode(&a_node, graph, nullptr, nullptr, 0, &a));
  cudaGraphNodeParams c = conditional_params(handle, cudaGraphCondTypeIf, 1);
  EMU_CHECK(cudaGraphAddNode(&if_node, graph, &a_node, nullptr, 1, &c));
  EMU_REQUIRE(c.conditional.phGraph_out != nullptr);
  cudaGraphNodeParams then = kernel_params(reinterpret_cast<void*>(then_body), nullptr);
  EMU_CHECK(cudaGraphAddNode(&body_node, c.conditional.phGraph_out[0], nullptr, nullptr, 0, &then));
  cudaGraphNodeType type;
  EMU_CHECK(cudaGraphNodeGetType(if_node, &type));
  EMU_REQUIRE(type == cudaGraphNodeTypeConditional);
  // The body belongs to the node: destroying it is refused; a graph with conditionals is not
  // cloned.
  EMU_EXPECT_ERROR(cudaGraphDestroy(c.conditional.phGraph_out[0]), cudaErrorInvalidValue);
  cudaGraph_t clone;
  EMU_EXPECT_ERROR(cudaGraphClone(&clone, graph), cudaErrorInvalidValue);
  launch_twice(graph);
  EMU_CHECK(cudaGraphDestroy(graph));
}

// WHILE with default 1, assigned at each launch: a do-while whose body is captured into the
// node's body graph. It runs once per launch (device code would end it).
void do_while_captured(char* counter) {
  cudaGraph_t graph;
  EMU_CHECK(cudaGraphCreate(&graph, 0));
  cudaGraphConditionalHandle handle;
  EMU_CHECK(cudaGraphConditionalHandleCreate(&handle, graph, 1, cudaGraphCondAssignDefault));
  cudaGraphNodeParams c = conditional_params(handle, cudaGraphCondTypeWhile, 1);
  cudaGraphNode_t loop;
  EMU_CHECK(cudaGraphAddNode(&loop, graph, nullptr, nullptr, 0, &c));
  cudaStream_t stream;
  EMU_CHECK(cudaStreamCreate(&stream));
  EMU_CHECK(cudaStreamBeginCaptureToGraph(stream, c.conditional.phGraph_out[0], nullptr, nullptr, 0,
                                          cudaStreamCaptureModeGlobal));
  then_body<<<1, 32, 0, stream>>>();
  then_body<<<1, 32, 0, stream>>>();
  loop_body<<<1, 1, 0, stream>>>(counter, handle);
  EMU_CHECK(cudaStreamEndCapture(stream, nullptr));
  EMU_CHECK(cudaStreamDestroy(stream));
  launch_twice(graph);
  EMU_CHECK(cudaGraphDestroy(graph));
}

// A -> WHILE [loop_body] -> after_loop, the WHILE node added to the graph under capture.
void while_in_capture(char* counter) {
  cudaStream_t stream;
  EMU_CHECK(cudaStreamCreate(&stream));
  EMU_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  cudaStreamCaptureStatus status;
  cudaGraph_t graph;
  const cudaGraphNode_t* deps = nullptr;
  size_t count = 0;
  EMU_CHECK(cudaStreamGetCaptureInfo(stream, &status, nullptr, &graph, &deps, nullptr, &count));
  cudaGraphConditionalHandle handle;
  EMU_CHECK(cudaGraphConditionalHandleCreate(&handle, graph, 0, 0));
  loop_body<<<1, 1, 0, stream>>>(counter, handle);
  EMU_CHECK(cudaStreamGetCaptureInfo(stream, &status, nullptr, &graph, &deps, nullptr, &count));
  cudaGraphNodeParams c = conditional_params(handle, cudaGraphCondTypeWhile, 1);
  cudaGraphNode_t loop;
  EMU_CHECK(cudaGraphAddNode(&loop, graph, deps, nullptr, count, &c));
  cudaGraph_t body = c.conditional.phGraph_out[0];
  EMU_CHECK(cudaStreamUpdateCaptureDependencies(stream, &loop, nullptr, 1,
                                                cudaStreamSetCaptureDependencies));
  after_loop<<<1, 32, 0, stream>>>();
  EMU_CHECK(cudaStreamEndCapture(stream, &graph));
  EMU_CHECK(cudaStreamBeginCaptureToGraph(stream, body, nullptr, nullptr, 0,
                                          cudaStreamCaptureModeGlobal));
  loop_body<<<1, 1, 0, stream>>>(counter, handle);
  EMU_CHECK(cudaStreamEndCapture(stream, nullptr));
  EMU_CHECK(cudaStreamDestroy(stream));
  launch_twice(graph);
  EMU_CHECK(cudaGraphDestroy(graph));
}

// IF/ELSE with default 0 runs the ELSE body; SWITCH with default 2 of 3 runs body 2.
void if_else_and_switch() {
  cudaGraph_t graph;
  EMU_CHECK(cudaGraphCreate(&graph, 0));
  cudaGraphConditionalHandle if_handle, switch_handle;
  EMU_CHECK(cudaGraphConditionalHandleCreate(&if_handle, graph, 0, cudaGraphCondAssignDefault));
  EMU_CHECK(cudaGraphConditionalHandleCreate(&switch_handle, graph, 2, cudaGraphCondAssignDefault));
  cudaGraphNodeParams c = conditional_params(if_handle, cudaGraphCondTypeIf, 2);
  cudaGraphNode_t if_node, switch_node, n;
  EMU_CHECK(cudaGraphAddNode(&if_node, graph, nullptr, nullptr, 0, &c));
  cudaGraphNodeParams then = kernel_params(reinterpret_cast<void*>(then_body), nullptr);
  cudaGraphNodeParams otherwise = kernel_params(reinterpret_cast<void*>(else_body), nullptr);
  EMU_CHECK(cudaGraphAddNode(&n, c.conditional.phGraph_out[0], nullptr, nullptr, 0, &then));
  EMU_CHECK(cudaGraphAddNode(&n, c.conditional.phGraph_out[1], nullptr, nullptr, 0, &otherwise));
  cudaGraphNodeParams s = conditional_params(switch_handle, cudaGraphCondTypeSwitch, 3);
  EMU_CHECK(cudaGraphAddNode(&switch_node, graph, &if_node, nullptr, 1, &s));
  int which[3] = {0, 1, 2};
  for (int k = 0; k < 3; ++k) {
    void* args[] = {&which[k]};
    cudaGraphNodeParams body = kernel_params(reinterpret_cast<void*>(case_body), args);
    body.kernel.gridDim = dim3(k + 1);  // tells the bodies apart in the trace
    EMU_CHECK(cudaGraphAddNode(&n, s.conditional.phGraph_out[k], nullptr, nullptr, 0, &body));
  }
  // Refused: a WHILE with two bodies, a handle never made.
  cudaGraphNodeParams bad = c;
  bad.conditional.type = cudaGraphCondTypeWhile;
  EMU_EXPECT_ERROR(cudaGraphAddNode(&n, graph, nullptr, nullptr, 0, &bad), cudaErrorInvalidValue);
  bad = c;
  bad.conditional.handle = 9999;
  EMU_EXPECT_ERROR(cudaGraphAddNode(&n, graph, nullptr, nullptr, 0, &bad), cudaErrorInvalidValue);
  launch_twice(graph);
  EMU_CHECK(cudaGraphDestroy(graph));
}

// Refused as CUDA refuses them: a host node in a body (bodies take kernels, copies, memsets,
// empty, child and conditional nodes), a body still being captured; a destroyed conditional
// node's body is gone with it.
void refusals() {
  cudaGraph_t graph;
  EMU_CHECK(cudaGraphCreate(&graph, 0));
  cudaGraphConditionalHandle handle;
  EMU_CHECK(cudaGraphConditionalHandleCreate(&handle, graph, 1, cudaGraphCondAssignDefault));
  cudaGraphNodeParams c = conditional_params(handle, cudaGraphCondTypeIf, 1);
  cudaGraphNode_t if_node, n;
  EMU_CHECK(cudaGraphAddNode(&if_node, graph, nullptr, nullptr, 0, &c));
  cudaGraph_t body = c.conditional.phGraph_out[0];
  cudaGraphNodeParams host{};
  host.type = cudaGraphNodeTypeHost;
  host.host.fn = [](void*) {};
  EMU_CHECK(cudaGraphAddNode(&n, body, nullptr, nullptr, 0, &host));
  cudaGraphExec_t exec;
  EMU_EXPECT_ERROR(cudaGraphInstantiate(&exec, graph, 0), cudaErrorInvalidValue);
  EMU_CHECK(cudaGraphDestroyNode(n));
  cudaStream_t stream;
  EMU_CHECK(cudaStreamCreate(&stream));
  EMU_CHECK(cudaStreamBeginCaptureToGraph(stream, body, nullptr, nullptr, 0,
                                          cudaStreamCaptureModeGlobal));
  EMU_EXPECT_ERROR(cudaGraphInstantiate(&exec, graph, 0), cudaErrorInvalidValue);
  // Neither the node nor its graph can go while the body is being captured into.
  EMU_EXPECT_ERROR(cudaGraphDestroyNode(if_node), cudaErrorInvalidValue);
  EMU_EXPECT_ERROR(cudaGraphDestroy(graph), cudaErrorInvalidValue);
  then_body<<<1, 32, 0, stream>>>();
  EMU_CHECK(cudaStreamEndCapture(stream, nullptr));
  EMU_CHECK(cudaStreamDestroy(stream));
  EMU_CHECK(cudaGraphDestroyNode(if_node));
  cudaGraphNodeParams then = kernel_params(reinterpret_cast<void*>(then_body), nullptr);
  EMU_EXPECT_ERROR(cudaGraphAddNode(&n, body, nullptr, nullptr, 0, &then), cudaErrorInvalidValue);
  EMU_CHECK(cudaGraphDestroy(graph));

  // Every body is checked, also on a branch the default value does not take: an IF that runs
  // nothing (default 0) whose body holds a WHILE whose body holds a host node.
  cudaGraph_t outer;
  EMU_CHECK(cudaGraphCreate(&outer, 0));
  cudaGraphConditionalHandle outer_handle, inner_handle;
  EMU_CHECK(cudaGraphConditionalHandleCreate(&outer_handle, outer, 0, cudaGraphCondAssignDefault));
  EMU_CHECK(cudaGraphConditionalHandleCreate(&inner_handle, outer, 0, cudaGraphCondAssignDefault));
  cudaGraphNodeParams outer_if = conditional_params(outer_handle, cudaGraphCondTypeIf, 1);
  cudaGraphNode_t outer_node, inner_node;
  EMU_CHECK(cudaGraphAddNode(&outer_node, outer, nullptr, nullptr, 0, &outer_if));
  cudaGraphNodeParams inner_while = conditional_params(inner_handle, cudaGraphCondTypeWhile, 1);
  EMU_CHECK(cudaGraphAddNode(&inner_node, outer_if.conditional.phGraph_out[0], nullptr, nullptr, 0,
                             &inner_while));
  EMU_CHECK(
      cudaGraphAddNode(&n, inner_while.conditional.phGraph_out[0], nullptr, nullptr, 0, &host));
  EMU_EXPECT_ERROR(cudaGraphInstantiate(&exec, outer, 0), cudaErrorInvalidValue);
  EMU_CHECK(cudaGraphDestroy(outer));
}

}  // namespace

int main() {
  char* flag = nullptr;
  EMU_CHECK(cudaMalloc(&flag, 2));
  EMU_CHECK(cudaMemset(flag, 1, 2));
  if_after_kernel(flag);
  do_while_captured(flag + 1);
  while_in_capture(flag + 1);
  if_else_and_switch();
  refusals();
  EMU_CHECK(cudaFree(flag));
  std::printf("graph_conditional: done\n");
  return 0;
}
