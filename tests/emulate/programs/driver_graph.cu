// CUDA graphs through the driver API, as JAX/XLA's stream executor builds them: a graph of a
// memset, two kernel nodes, a device-to-host copy (CUDA_MEMCPY3D) and a host node joined by an
// empty node, plus a child graph and an event record node; instantiated with parameters,
// uploaded, launched twice with a kernel node's grid changed in between and a third time with
// that node disabled, the memset halved and another event recorded; an edge added and removed;
// its structure and node parameters read back, cloned and a node found in the clone; a user
// object owned by the graph, freed after its last holder; kernel node attributes; then the
// same work captured from a stream with
// cuStreamBeginCapture / cuStreamGetCaptureInfo / cuStreamEndCapture and launched.
// Valid CUDA: the same binary runs on a real GPU.
#include <cuda.h>

#include <cstring>
#include <vector>

#include "emu_driver_check.h"

const char* kPtx = R"(
.version 8.0
.target sm_90
.address_size 64

.visible .entry produce(
	.param .u64 produce_param_0,
	.param .u32 produce_param_1
)
{
	ret;
}

.visible .entry consume(
	.param .u64 consume_param_0,
	.param .u32 consume_param_1
)
{
	ret;
}
)";

void CUDA_CB count_call(void* user) { ++*static_cast<int*>(user); }

int g_destroyed = 0;  // the user object's destructor ran
void CUDA_CB destroy_resource(void* resource) {
  ++g_destroyed;
  delete static_cast<std::vector<float>*>(resource);
}

CUDA_KERNEL_NODE_PARAMS kernel_node(CUfunction f, unsigned grid, void** args) {
  CUDA_KERNEL_NODE_PARAMS p = {};
  p.func = f;
  p.gridDimX = grid;
  p.gridDimY = p.gridDimZ = 1;
  p.blockDimX = 256;
  p.blockDimY = p.blockDimZ = 1;
  p.kernelParams = args;
  return p;
}

int main() {
  CUdevice device;
  const CUcontext ctx = current_primary_context(&device);
  CUmodule module;
  CU_CHECK(cuModuleLoadData(&module, kPtx));
  CUfunction produce, consume;
  CU_CHECK(cuModuleGetFunction(&produce, module, "produce"));
  CU_CHECK(cuModuleGetFunction(&consume, module, "consume"));
  CUstream stream;
  CU_CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  const int n = 1 << 16;
  CUdeviceptr data;
  CU_CHECK(cuMemAlloc(&data, n * sizeof(float)));
  std::vector<float> host(n, -1.0f);
  void* args[] = {&data, const_cast<int*>(&n)};

  // The graph, node by node.
  CUgraph graph;
  CU_CHECK(cuGraphCreate(&graph, 0));
  CUDA_MEMSET_NODE_PARAMS clear = {};
  clear.dst = data;
  clear.value = 0;
  clear.elementSize = 4;
  clear.width = n;
  clear.height = 1;
  CUgraphNode memset_node, produce_node, consume_node, copy_node, host_node, join, child_node,
      record_node;
  CU_CHECK(cuGraphAddMemsetNode(&memset_node, graph, nullptr, 0, &clear, ctx));
  CUDA_KERNEL_NODE_PARAMS produce_params = kernel_node(produce, n / 256, args);
  CU_CHECK(cuGraphAddKernelNode(&produce_node, graph, &memset_node, 1, &produce_params));
  CUDA_KERNEL_NODE_PARAMS consume_params = kernel_node(consume, 64, args);
  CU_CHECK(cuGraphAddKernelNode(&consume_node, graph, &produce_node, 1, &consume_params));
  CUDA_MEMCPY3D copy = {};
  copy.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  copy.srcDevice = data;
  copy.dstMemoryType = CU_MEMORYTYPE_HOST;
  copy.dstHost = host.data();
  copy.WidthInBytes = n * sizeof(float);
  copy.Height = 1;
  copy.Depth = 1;
  CU_CHECK(cuGraphAddMemcpyNode(&copy_node, graph, &consume_node, 1, &copy, ctx));
  int host_calls = 0;
  CUDA_HOST_NODE_PARAMS host_params = {count_call, &host_calls};
  CU_CHECK(cuGraphAddHostNode(&host_node, graph, &copy_node, 1, &host_params));
  CUgraph child;
  CU_CHECK(cuGraphCreate(&child, 0));
  CUgraphNode child_kernel;
  CUDA_KERNEL_NODE_PARAMS child_params = kernel_node(consume, 8, args);
  CU_CHECK(cuGraphAddKernelNode(&child_kernel, child, nullptr, 0, &child_params));
  CU_CHECK(cuGraphAddChildGraphNode(&child_node, graph, &memset_node, 1, child));
  const CUgraphNode joined[] = {host_node, child_node};
  CU_CHECK(cuGraphAddEmptyNode(&join, graph, joined, 2));
  CUevent done;
  CU_CHECK(cuEventCreate(&done, CU_EVENT_DEFAULT));
  CU_CHECK(cuGraphAddEventRecordNode(&record_node, graph, &join, 1, done));

  // A resource the graph owns (moved from the caller): freed after the graph, its clone and its
  // executable graph are all destroyed.
  CUuserObject resource;
  CU_CHECK(cuUserObjectCreate(&resource, new std::vector<float>(16), destroy_resource, 1,
                              CU_USER_OBJECT_NO_DESTRUCTOR_SYNC));
  CU_CHECK(cuGraphRetainUserObject(graph, resource, 1, CU_GRAPH_USER_OBJECT_MOVE));
  // Kernel node attributes, set on one node and copied to another.
  CUkernelNodeAttrValue priority = {};
  priority.priority = 1;
  CU_CHECK(cuGraphKernelNodeSetAttribute(produce_node, CU_LAUNCH_ATTRIBUTE_PRIORITY, &priority));
  CU_CHECK(cuGraphKernelNodeCopyAttributes(consume_node, produce_node));
  CUkernelNodeAttrValue copied = {};
  CU_CHECK(cuGraphKernelNodeGetAttribute(consume_node, CU_LAUNCH_ATTRIBUTE_PRIORITY, &copied));
  EMU_REQUIRE(copied.priority == 1);

  // An edge added and taken away again.
  CU_CHECK(cuGraphAddDependencies(graph, &memset_node, &consume_node, nullptr, 1));
  size_t with_extra_edge = 0;
  CU_CHECK(cuGraphGetEdges(graph, nullptr, nullptr, nullptr, &with_extra_edge));
  EMU_REQUIRE(with_extra_edge == 9);
  CU_CHECK(cuGraphRemoveDependencies(graph, &memset_node, &consume_node, nullptr, 1));
  EMU_REQUIRE(cuGraphRemoveDependencies(graph, &memset_node, &consume_node, nullptr, 1) ==
              CUDA_ERROR_INVALID_VALUE);

  // Its structure, read back.
  size_t node_count = 0, root_count = 0, edge_count = 0;
  CU_CHECK(cuGraphGetNodes(graph, nullptr, &node_count));
  CU_CHECK(cuGraphGetRootNodes(graph, nullptr, &root_count));
  CU_CHECK(cuGraphGetEdges(graph, nullptr, nullptr, nullptr, &edge_count));
  EMU_REQUIRE(node_count == 8 && root_count == 1 && edge_count == 8);
  CUgraphNodeType type;
  CU_CHECK(cuGraphNodeGetType(copy_node, &type));
  EMU_REQUIRE(type == CU_GRAPH_NODE_TYPE_MEMCPY);
  CU_CHECK(cuGraphNodeGetType(child_node, &type));
  EMU_REQUIRE(type == CU_GRAPH_NODE_TYPE_GRAPH);
  size_t dependency_count = 0;
  CU_CHECK(cuGraphNodeGetDependencies(join, nullptr, nullptr, &dependency_count));
  EMU_REQUIRE(dependency_count == 2);
  CUDA_KERNEL_NODE_PARAMS read_back = {};
  CU_CHECK(cuGraphKernelNodeGetParams(consume_node, &read_back));
  EMU_REQUIRE(read_back.func == consume && read_back.gridDimX == 64);
  CUDA_MEMSET_NODE_PARAMS memset_read = {};
  CU_CHECK(cuGraphMemsetNodeGetParams(memset_node, &memset_read));
  EMU_REQUIRE(memset_read.dst == data && memset_read.width == size_t(n) &&
              memset_read.elementSize == 4);
  CUDA_MEMCPY3D copy_read = {};
  CU_CHECK(cuGraphMemcpyNodeGetParams(copy_node, &copy_read));
  EMU_REQUIRE(copy_read.WidthInBytes == n * sizeof(float) && copy_read.srcDevice == data);
  CUevent recorded = nullptr;
  CU_CHECK(cuGraphEventRecordNodeGetEvent(record_node, &recorded));
  EMU_REQUIRE(recorded == done);
  CUgraph clone;
  CU_CHECK(cuGraphClone(&clone, graph));
  size_t clone_nodes = 0;
  CU_CHECK(cuGraphGetNodes(clone, nullptr, &clone_nodes));
  EMU_REQUIRE(clone_nodes == node_count);
  CUgraphNode cloned_produce;
  CU_CHECK(cuGraphNodeFindInClone(&cloned_produce, produce_node, clone));
  CUDA_KERNEL_NODE_PARAMS cloned_params = {};
  CU_CHECK(cuGraphKernelNodeGetParams(cloned_produce, &cloned_params));
  EMU_REQUIRE(cloned_params.func == produce && cloned_params.gridDimX == unsigned(n / 256));

  // Instantiated, uploaded, launched twice; the second launch runs consume on 128 blocks.
  CUgraphExec exec;
  CUDA_GRAPH_INSTANTIATE_PARAMS instantiate = {};
  instantiate.flags = CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD;
  instantiate.hUploadStream = stream;
  CU_CHECK(cuGraphInstantiateWithParams(&exec, graph, &instantiate));
  EMU_REQUIRE(instantiate.result_out == CUDA_GRAPH_INSTANTIATE_SUCCESS);
  CU_CHECK(cuGraphUpload(exec, stream));
  CU_CHECK(cuGraphLaunch(exec, stream));
  consume_params.gridDimX = 128;
  CU_CHECK(cuGraphExecKernelNodeSetParams(exec, consume_node, &consume_params));
  CU_CHECK(cuGraphLaunch(exec, stream));
  // A third launch with consume disabled, half the memset, and another event recorded.
  CU_CHECK(cuGraphNodeSetEnabled(exec, consume_node, 0));
  unsigned enabled = 1;
  CU_CHECK(cuGraphNodeGetEnabled(exec, consume_node, &enabled));
  EMU_REQUIRE(enabled == 0);
  CUDA_MEMSET_NODE_PARAMS half = clear;
  half.width = n / 2;
  CU_CHECK(cuGraphExecMemsetNodeSetParams(exec, memset_node, &half, ctx));
  CUevent other;
  CU_CHECK(cuEventCreate(&other, CU_EVENT_DEFAULT));
  CU_CHECK(cuGraphExecEventRecordNodeSetEvent(exec, record_node, other));
  CU_CHECK(cuGraphLaunch(exec, stream));
  CU_CHECK(cuStreamSynchronize(stream));
  EMU_REQUIRE(host_calls == 3);
  // (On a GPU host[] now holds the memset's zeros; the emulator records graph copies and
  // memsets with their sizes but does not move their data.)

  // The same two kernels captured from the stream.
  CU_CHECK(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CUstreamCaptureStatus status;
  cuuint64_t capture_id = 0;
  CU_CHECK(
      cuStreamGetCaptureInfo(stream, &status, &capture_id, nullptr, nullptr, nullptr, nullptr));
  EMU_REQUIRE(status == CU_STREAM_CAPTURE_STATUS_ACTIVE && capture_id != 0);
  CU_CHECK(cuLaunchKernel(produce, n / 256, 1, 1, 256, 1, 1, 0, stream, args, nullptr));
  CU_CHECK(cuLaunchKernel(consume, 64, 1, 1, 256, 1, 1, 0, stream, args, nullptr));
  CUgraph captured;
  CU_CHECK(cuStreamEndCapture(stream, &captured));
  size_t captured_nodes = 0;
  CU_CHECK(cuGraphGetNodes(captured, nullptr, &captured_nodes));
  EMU_REQUIRE(captured_nodes == 2);
  CUgraphExec captured_exec;
  CU_CHECK(cuGraphInstantiate(&captured_exec, captured, 0));
  CU_CHECK(cuGraphLaunch(captured_exec, stream));
  CU_CHECK(cuStreamSynchronize(stream));

  // A graph of one kernel node added through the generic parameters (cuGraphAddNode), its grid
  // changed on the graph (48 blocks) and then on the executable graph (16 blocks).
  CUgraph generic;
  CU_CHECK(cuGraphCreate(&generic, 0));
  CUgraphNodeParams node_params = {};
  node_params.type = CU_GRAPH_NODE_TYPE_KERNEL;
  node_params.kernel.func = produce;
  node_params.kernel.gridDimX = 32;
  node_params.kernel.gridDimY = node_params.kernel.gridDimZ = 1;
  node_params.kernel.blockDimX = 256;
  node_params.kernel.blockDimY = node_params.kernel.blockDimZ = 1;
  node_params.kernel.kernelParams = args;
  CUgraphNode generic_node;
  CU_CHECK(cuGraphAddNode(&generic_node, generic, nullptr, nullptr, 0, &node_params));
  node_params.kernel.gridDimX = 48;
  CU_CHECK(cuGraphNodeSetParams(generic_node, &node_params));
  CUgraphExec generic_exec;
  CU_CHECK(cuGraphInstantiate(&generic_exec, generic, 0));
  CU_CHECK(cuGraphLaunch(generic_exec, stream));
  node_params.kernel.gridDimX = 16;
  CU_CHECK(cuGraphExecNodeSetParams(generic_exec, generic_node, &node_params));
  CU_CHECK(cuGraphLaunch(generic_exec, stream));
  CU_CHECK(cuStreamSynchronize(stream));
  CU_CHECK(cuGraphExecDestroy(generic_exec));
  CU_CHECK(cuGraphDestroy(generic));

  CU_CHECK(cuGraphExecDestroy(captured_exec));
  CU_CHECK(cuGraphExecDestroy(exec));
  CU_CHECK(cuGraphDestroy(captured));
  CU_CHECK(cuGraphDestroy(clone));
  CU_CHECK(cuGraphDestroy(child));
  EMU_REQUIRE(g_destroyed == 0);  // the graph still holds the resource
  CU_CHECK(cuGraphDestroy(graph));
  EMU_REQUIRE(g_destroyed == 1);
  CU_CHECK(cuEventDestroy(done));
  CU_CHECK(cuEventDestroy(other));
  CU_CHECK(cuMemFree(data));
  CU_CHECK(cuModuleUnload(module));
  std::printf("driver_graph: %zu nodes, %zu edges, host node ran %d times\n", node_count,
              edge_count, host_calls);
  return 0;
}
