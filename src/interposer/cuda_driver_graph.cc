// The driver's graph API (cuGraph*, as JAX/XLA's stream executor builds its graphs) on the
// runtime's graphs (cudart_graph.cc): a CUgraph is a cudaGraph_t, a CUgraphNode a
// cudaGraphNode_t, a CUgraphExec a cudaGraphExec_t, so nodes added either way mix, and a graph
// launched by cuGraphLaunch replays like one launched by cudaGraphLaunch. The node parameter
// structs are converted field by field (the kernel node's CUkernel and context, the 3D copy's
// byte offsets and memory types); the runtime's last error is kept as it was (ErrorScope).
#include <cuda.h>
#include <driver_functions.h>

#include <cstring>
#include <string>

#include "interposer/cuda_driver_common.h"
#include "interposer/cudart_impl.h"
#include "interposer/cudart_internal.h"

// The runtime's edge-data forms by their `_v2` names (CUDA 12.3–12.9's; cudart_graph.cc and
// cudart_stream.cc). The driver calls these, not the plain names: this file is also built into
// the CUDA 12 drop-in, where the plain names take CUDA 12's arguments (no edge data).
extern "C" {
cudaError_t cudaGraphAddNode_v2(cudaGraphNode_t*, cudaGraph_t, const cudaGraphNode_t*,
                                const cudaGraphEdgeData*, size_t, cudaGraphNodeParams*);
cudaError_t cudaGraphAddDependencies_v2(cudaGraph_t, const cudaGraphNode_t*, const cudaGraphNode_t*,
                                        const cudaGraphEdgeData*, size_t);
cudaError_t cudaGraphRemoveDependencies_v2(cudaGraph_t, const cudaGraphNode_t*,
                                           const cudaGraphNode_t*, const cudaGraphEdgeData*,
                                           size_t);
cudaError_t cudaGraphGetEdges_v2(cudaGraph_t, cudaGraphNode_t*, cudaGraphNode_t*,
                                 cudaGraphEdgeData*, size_t*);
cudaError_t cudaGraphNodeGetDependencies_v2(cudaGraphNode_t, cudaGraphNode_t*, cudaGraphEdgeData*,
                                            size_t*);
cudaError_t cudaGraphNodeGetDependentNodes_v2(cudaGraphNode_t, cudaGraphNode_t*, cudaGraphEdgeData*,
                                              size_t*);
cudaError_t cudaStreamUpdateCaptureDependencies_v2(cudaStream_t, cudaGraphNode_t*,
                                                   const cudaGraphEdgeData*, size_t, unsigned int);
}

namespace detail = powertrain::emu::detail;
namespace impl = powertrain::emu::detail::impl;
using detail::ErrorScope;
using detail::to_driver;

namespace {

cudaGraph_t rt(CUgraph graph) { return reinterpret_cast<cudaGraph_t>(graph); }
cudaGraphNode_t rt(CUgraphNode node) { return reinterpret_cast<cudaGraphNode_t>(node); }
cudaGraphExec_t rt(CUgraphExec exec) { return reinterpret_cast<cudaGraphExec_t>(exec); }
cudaGraphNode_t* rt(CUgraphNode* nodes) { return reinterpret_cast<cudaGraphNode_t*>(nodes); }
const cudaGraphNode_t* rt(const CUgraphNode* nodes) {
  return reinterpret_cast<const cudaGraphNode_t*>(nodes);
}
const cudaGraphEdgeData* rt(const CUgraphEdgeData* edges) {
  return reinterpret_cast<const cudaGraphEdgeData*>(edges);
}
cudaGraphEdgeData* rt(CUgraphEdgeData* edges) {
  return reinterpret_cast<cudaGraphEdgeData*>(edges);
}

// The kernel is `func`, or `kern` (a library's CUkernel) when func is NULL.
cudaKernelNodeParams kernel_params(const CUDA_KERNEL_NODE_PARAMS& p) {
  cudaKernelNodeParams out{};
  out.func = p.func != nullptr ? reinterpret_cast<void*>(p.func) : reinterpret_cast<void*>(p.kern);
  out.gridDim = dim3(p.gridDimX, p.gridDimY, p.gridDimZ);
  out.blockDim = dim3(p.blockDimX, p.blockDimY, p.blockDimZ);
  out.sharedMemBytes = p.sharedMemBytes;
  out.kernelParams = p.kernelParams;
  out.extra = p.extra;
  return out;
}

CUDA_KERNEL_NODE_PARAMS driver_kernel_params(const cudaKernelNodeParams& p) {
  CUDA_KERNEL_NODE_PARAMS out{};
  out.func = reinterpret_cast<CUfunction>(p.func);
  out.gridDimX = p.gridDim.x;
  out.gridDimY = p.gridDim.y;
  out.gridDimZ = p.gridDim.z;
  out.blockDimX = p.blockDim.x;
  out.blockDimY = p.blockDim.y;
  out.blockDimZ = p.blockDim.z;
  out.sharedMemBytes = p.sharedMemBytes;
  out.kernelParams = p.kernelParams;
  out.extra = p.extra;
  return out;
}

// The CUDA 12.0 kernel node struct: the same fields without kern and ctx.
CUDA_KERNEL_NODE_PARAMS from_v1(const CUDA_KERNEL_NODE_PARAMS_v1& p) {
  CUDA_KERNEL_NODE_PARAMS out{};
  out.func = p.func;
  out.gridDimX = p.gridDimX;
  out.gridDimY = p.gridDimY;
  out.gridDimZ = p.gridDimZ;
  out.blockDimX = p.blockDimX;
  out.blockDimY = p.blockDimY;
  out.blockDimZ = p.blockDimZ;
  out.sharedMemBytes = p.sharedMemBytes;
  out.kernelParams = p.kernelParams;
  out.extra = p.extra;
  return out;
}

cudaMemsetParams memset_params(const CUDA_MEMSET_NODE_PARAMS& p) {
  cudaMemsetParams out{};
  out.dst = reinterpret_cast<void*>(p.dst);
  out.pitch = p.pitch;
  out.value = p.value;
  out.elementSize = p.elementSize;
  out.width = p.width;
  out.height = p.height;
  return out;
}

// Bytes per element of an array (the driver's copy offsets are in bytes, the runtime's array
// offsets and extents in elements).
bool array_element_bytes(cudaArray_t array, std::size_t* bytes) {
  cudaChannelFormatDesc desc{};
  cudaExtent extent{};
  unsigned flags = 0;
  if (cudaArrayGetInfo(&desc, &extent, &flags, array) != cudaSuccess) return false;
  *bytes = static_cast<std::size_t>(desc.x + desc.y + desc.z + desc.w) / 8;
  return *bytes > 0;
}

// One side of a driver 3D copy as the runtime's pitched pointer or array, with its position.
bool copy_side(CUmemorytype type, const void* host, CUdeviceptr device, CUarray array,
               std::size_t pitch, std::size_t height, std::size_t x_bytes, std::size_t y,
               std::size_t z, cudaPitchedPtr* pointer, cudaArray_t* array_out, cudaPos* position,
               std::size_t* element_bytes) {
  *element_bytes = 1;
  switch (type) {
    case CU_MEMORYTYPE_HOST:
      *pointer = make_cudaPitchedPtr(const_cast<void*>(host), pitch, pitch, height);
      break;
    case CU_MEMORYTYPE_DEVICE:
    case CU_MEMORYTYPE_UNIFIED:
      *pointer = make_cudaPitchedPtr(reinterpret_cast<void*>(device), pitch, pitch, height);
      break;
    case CU_MEMORYTYPE_ARRAY:
      *array_out = reinterpret_cast<cudaArray_t>(array);
      if (!array_element_bytes(*array_out, element_bytes)) return false;
      break;
    default:
      return false;
  }
  *position = make_cudaPos(x_bytes / *element_bytes, y, z);
  return true;
}

bool memcpy_params(const CUDA_MEMCPY3D& p, cudaMemcpy3DParms* out) {
  *out = cudaMemcpy3DParms{};
  std::size_t src_element = 1;
  std::size_t dst_element = 1;
  if (!copy_side(p.srcMemoryType, p.srcHost, p.srcDevice, p.srcArray, p.srcPitch, p.srcHeight,
                 p.srcXInBytes, p.srcY, p.srcZ, &out->srcPtr, &out->srcArray, &out->srcPos,
                 &src_element) ||
      !copy_side(p.dstMemoryType, p.dstHost, p.dstDevice, p.dstArray, p.dstPitch, p.dstHeight,
                 p.dstXInBytes, p.dstY, p.dstZ, &out->dstPtr, &out->dstArray, &out->dstPos,
                 &dst_element)) {
    return false;
  }
  const std::size_t element = out->srcArray != nullptr   ? src_element
                              : out->dstArray != nullptr ? dst_element
                                                         : 1;
  out->extent = make_cudaExtent(p.WidthInBytes / element, p.Height, p.Depth);
  out->kind = cudaMemcpyDefault;
  return true;
}

CUresult invalid_copy(const char* api) {
  powertrain::emu::report_misuse(api, "a copy side has an unknown memory type or array");
  return CUDA_ERROR_INVALID_VALUE;
}

}  // namespace

// ---- graphs and nodes
// ------------------------------------------------------------------------------

PT_EXPORT CUresult cuGraphCreate(CUgraph* graph, unsigned int flags) {
  ErrorScope scope;
  return to_driver(cudaGraphCreate(reinterpret_cast<cudaGraph_t*>(graph), flags));
}

PT_EXPORT CUresult cuGraphAddKernelNode(CUgraphNode* node, CUgraph graph,
                                        const CUgraphNode* dependencies, size_t count,
                                        const CUDA_KERNEL_NODE_PARAMS* params) {
  if (params == nullptr) return CUDA_ERROR_INVALID_VALUE;
  ErrorScope scope;
  const cudaKernelNodeParams p = kernel_params(*params);
  return to_driver(cudaGraphAddKernelNode(reinterpret_cast<cudaGraphNode_t*>(node), rt(graph),
                                          rt(dependencies), count, &p));
}

PT_EXPORT CUresult cuGraphKernelNodeGetParams(CUgraphNode node, CUDA_KERNEL_NODE_PARAMS* params) {
  if (params == nullptr) return CUDA_ERROR_INVALID_VALUE;
  ErrorScope scope;
  cudaKernelNodeParams p{};
  const cudaError_t error = cudaGraphKernelNodeGetParams(rt(node), &p);
  if (error == cudaSuccess) *params = driver_kernel_params(p);
  return to_driver(error);
}

PT_EXPORT CUresult cuGraphKernelNodeSetParams(CUgraphNode node,
                                              const CUDA_KERNEL_NODE_PARAMS* params) {
  if (params == nullptr) return CUDA_ERROR_INVALID_VALUE;
  ErrorScope scope;
  const cudaKernelNodeParams p = kernel_params(*params);
  return to_driver(cudaGraphKernelNodeSetParams(rt(node), &p));
}

PT_EXPORT CUresult cuGraphExecKernelNodeSetParams(CUgraphExec exec, CUgraphNode node,
                                                  const CUDA_KERNEL_NODE_PARAMS* params) {
  if (params == nullptr) return CUDA_ERROR_INVALID_VALUE;
  ErrorScope scope;
  const cudaKernelNodeParams p = kernel_params(*params);
  return to_driver(cudaGraphExecKernelNodeSetParams(rt(exec), rt(node), &p));
}

PT_EXPORT CUresult cuGraphAddMemcpyNode(CUgraphNode* node, CUgraph graph,
                                        const CUgraphNode* dependencies, size_t count,
                                        const CUDA_MEMCPY3D* copy, CUcontext ctx) {
  (void)ctx;  // the copy runs on the graph's device
  if (copy == nullptr) return CUDA_ERROR_INVALID_VALUE;
  cudaMemcpy3DParms p;
  if (!memcpy_params(*copy, &p)) return invalid_copy("cuGraphAddMemcpyNode");
  ErrorScope scope;
  return to_driver(cudaGraphAddMemcpyNode(reinterpret_cast<cudaGraphNode_t*>(node), rt(graph),
                                          rt(dependencies), count, &p));
}

PT_EXPORT CUresult cuGraphAddMemsetNode(CUgraphNode* node, CUgraph graph,
                                        const CUgraphNode* dependencies, size_t count,
                                        const CUDA_MEMSET_NODE_PARAMS* params, CUcontext ctx) {
  (void)ctx;
  if (params == nullptr) return CUDA_ERROR_INVALID_VALUE;
  ErrorScope scope;
  const cudaMemsetParams p = memset_params(*params);
  return to_driver(cudaGraphAddMemsetNode(reinterpret_cast<cudaGraphNode_t*>(node), rt(graph),
                                          rt(dependencies), count, &p));
}

PT_EXPORT CUresult cuGraphAddHostNode(CUgraphNode* node, CUgraph graph,
                                      const CUgraphNode* dependencies, size_t count,
                                      const CUDA_HOST_NODE_PARAMS* params) {
  if (params == nullptr) return CUDA_ERROR_INVALID_VALUE;
  ErrorScope scope;
  const cudaHostNodeParams p{params->fn, params->userData};
  return to_driver(cudaGraphAddHostNode(reinterpret_cast<cudaGraphNode_t*>(node), rt(graph),
                                        rt(dependencies), count, &p));
}

PT_EXPORT CUresult cuGraphHostNodeGetParams(CUgraphNode node, CUDA_HOST_NODE_PARAMS* params) {
  if (params == nullptr) return CUDA_ERROR_INVALID_VALUE;
  ErrorScope scope;
  cudaHostNodeParams p{};
  const cudaError_t error = cudaGraphHostNodeGetParams(rt(node), &p);
  if (error == cudaSuccess) *params = CUDA_HOST_NODE_PARAMS{p.fn, p.userData};
  return to_driver(error);
}

PT_EXPORT CUresult cuGraphHostNodeSetParams(CUgraphNode node, const CUDA_HOST_NODE_PARAMS* params) {
  if (params == nullptr) return CUDA_ERROR_INVALID_VALUE;
  ErrorScope scope;
  const cudaHostNodeParams p{params->fn, params->userData};
  return to_driver(cudaGraphHostNodeSetParams(rt(node), &p));
}

PT_EXPORT CUresult cuGraphExecHostNodeSetParams(CUgraphExec exec, CUgraphNode node,
                                                const CUDA_HOST_NODE_PARAMS* params) {
  if (params == nullptr) return CUDA_ERROR_INVALID_VALUE;
  ErrorScope scope;
  const cudaHostNodeParams p{params->fn, params->userData};
  return to_driver(cudaGraphExecHostNodeSetParams(rt(exec), rt(node), &p));
}

PT_EXPORT CUresult cuGraphAddEmptyNode(CUgraphNode* node, CUgraph graph,
                                       const CUgraphNode* dependencies, size_t count) {
  ErrorScope scope;
  return to_driver(cudaGraphAddEmptyNode(reinterpret_cast<cudaGraphNode_t*>(node), rt(graph),
                                         rt(dependencies), count));
}

PT_EXPORT CUresult cuGraphAddChildGraphNode(CUgraphNode* node, CUgraph graph,
                                            const CUgraphNode* dependencies, size_t count,
                                            CUgraph child) {
  ErrorScope scope;
  return to_driver(cudaGraphAddChildGraphNode(reinterpret_cast<cudaGraphNode_t*>(node), rt(graph),
                                              rt(dependencies), count, rt(child)));
}

PT_EXPORT CUresult cuGraphAddEventRecordNode(CUgraphNode* node, CUgraph graph,
                                             const CUgraphNode* dependencies, size_t count,
                                             CUevent event) {
  ErrorScope scope;
  return to_driver(cudaGraphAddEventRecordNode(reinterpret_cast<cudaGraphNode_t*>(node), rt(graph),
                                               rt(dependencies), count, event));
}

PT_EXPORT CUresult cuGraphAddEventWaitNode(CUgraphNode* node, CUgraph graph,
                                           const CUgraphNode* dependencies, size_t count,
                                           CUevent event) {
  ErrorScope scope;
  return to_driver(cudaGraphAddEventWaitNode(reinterpret_cast<cudaGraphNode_t*>(node), rt(graph),
                                             rt(dependencies), count, event));
}

PT_EXPORT CUresult cuGraphAddMemAllocNode(CUgraphNode* node, CUgraph graph,
                                          const CUgraphNode* dependencies, size_t count,
                                          CUDA_MEM_ALLOC_NODE_PARAMS* params) {
  if (params == nullptr) return CUDA_ERROR_INVALID_VALUE;
  ErrorScope scope;
  cudaMemAllocNodeParams p{};
  p.poolProps = *reinterpret_cast<const cudaMemPoolProps*>(&params->poolProps);
  p.accessDescs = reinterpret_cast<const cudaMemAccessDesc*>(params->accessDescs);
  p.accessDescCount = params->accessDescCount;
  p.bytesize = params->bytesize;
  const cudaError_t error = cudaGraphAddMemAllocNode(reinterpret_cast<cudaGraphNode_t*>(node),
                                                     rt(graph), rt(dependencies), count, &p);
  if (error == cudaSuccess) params->dptr = reinterpret_cast<CUdeviceptr>(p.dptr);
  return to_driver(error);
}

PT_EXPORT CUresult cuGraphAddMemFreeNode(CUgraphNode* node, CUgraph graph,
                                         const CUgraphNode* dependencies, size_t count,
                                         CUdeviceptr pointer) {
  ErrorScope scope;
  return to_driver(cudaGraphAddMemFreeNode(reinterpret_cast<cudaGraphNode_t*>(node), rt(graph),
                                           rt(dependencies), count,
                                           reinterpret_cast<void*>(pointer)));
}

namespace {
CUDA_MEMSET_NODE_PARAMS driver_memset_params(const cudaMemsetParams& p) {
  CUDA_MEMSET_NODE_PARAMS out{};
  out.dst = reinterpret_cast<CUdeviceptr>(p.dst);
  out.pitch = p.pitch;
  out.value = p.value;
  out.elementSize = p.elementSize;
  out.width = p.width;
  out.height = p.height;
  return out;
}

// The runtime's 3D copy as the driver's (pointer operands: graph copies of arrays are refused).
CUDA_MEMCPY3D driver_copy(const cudaMemcpy3DParms& p) {
  CUDA_MEMCPY3D out{};
  const auto side = [](const cudaPitchedPtr& ptr, const cudaPos& pos, CUmemorytype* type,
                       CUdeviceptr* device, std::size_t* pitch, std::size_t* height, std::size_t* x,
                       std::size_t* y, std::size_t* z) {
    *type = CU_MEMORYTYPE_UNIFIED;
    *device = reinterpret_cast<CUdeviceptr>(ptr.ptr);
    *pitch = ptr.pitch;
    *height = ptr.ysize;
    *x = pos.x;
    *y = pos.y;
    *z = pos.z;
  };
  side(p.srcPtr, p.srcPos, &out.srcMemoryType, &out.srcDevice, &out.srcPitch, &out.srcHeight,
       &out.srcXInBytes, &out.srcY, &out.srcZ);
  side(p.dstPtr, p.dstPos, &out.dstMemoryType, &out.dstDevice, &out.dstPitch, &out.dstHeight,
       &out.dstXInBytes, &out.dstY, &out.dstZ);
  out.WidthInBytes = p.extent.width;
  out.Height = p.extent.height;
  out.Depth = p.extent.depth;
  return out;
}
}  // namespace

PT_EXPORT CUresult cuGraphMemcpyNodeGetParams(CUgraphNode node, CUDA_MEMCPY3D* copy) {
  if (copy == nullptr) return CUDA_ERROR_INVALID_VALUE;
  ErrorScope scope;
  cudaMemcpy3DParms p{};
  const cudaError_t error = cudaGraphMemcpyNodeGetParams(rt(node), &p);
  if (error == cudaSuccess) *copy = driver_copy(p);
  return to_driver(error);
}

PT_EXPORT CUresult cuGraphMemcpyNodeSetParams(CUgraphNode node, const CUDA_MEMCPY3D* copy) {
  if (copy == nullptr) return CUDA_ERROR_INVALID_VALUE;
  cudaMemcpy3DParms p;
  if (!memcpy_params(*copy, &p)) return invalid_copy("cuGraphMemcpyNodeSetParams");
  ErrorScope scope;
  return to_driver(cudaGraphMemcpyNodeSetParams(rt(node), &p));
}

PT_EXPORT CUresult cuGraphExecMemcpyNodeSetParams(CUgraphExec exec, CUgraphNode node,
                                                  const CUDA_MEMCPY3D* copy, CUcontext ctx) {
  (void)ctx;
  if (copy == nullptr) return CUDA_ERROR_INVALID_VALUE;
  cudaMemcpy3DParms p;
  if (!memcpy_params(*copy, &p)) return invalid_copy("cuGraphExecMemcpyNodeSetParams");
  ErrorScope scope;
  return to_driver(cudaGraphExecMemcpyNodeSetParams(rt(exec), rt(node), &p));
}

PT_EXPORT CUresult cuGraphMemsetNodeGetParams(CUgraphNode node, CUDA_MEMSET_NODE_PARAMS* params) {
  if (params == nullptr) return CUDA_ERROR_INVALID_VALUE;
  ErrorScope scope;
  cudaMemsetParams p{};
  const cudaError_t error = cudaGraphMemsetNodeGetParams(rt(node), &p);
  if (error == cudaSuccess) *params = driver_memset_params(p);
  return to_driver(error);
}

PT_EXPORT CUresult cuGraphMemsetNodeSetParams(CUgraphNode node,
                                              const CUDA_MEMSET_NODE_PARAMS* params) {
  if (params == nullptr) return CUDA_ERROR_INVALID_VALUE;
  ErrorScope scope;
  const cudaMemsetParams p = memset_params(*params);
  return to_driver(cudaGraphMemsetNodeSetParams(rt(node), &p));
}

PT_EXPORT CUresult cuGraphExecMemsetNodeSetParams(CUgraphExec exec, CUgraphNode node,
                                                  const CUDA_MEMSET_NODE_PARAMS* params,
                                                  CUcontext ctx) {
  (void)ctx;
  if (params == nullptr) return CUDA_ERROR_INVALID_VALUE;
  ErrorScope scope;
  const cudaMemsetParams p = memset_params(*params);
  return to_driver(cudaGraphExecMemsetNodeSetParams(rt(exec), rt(node), &p));
}

PT_EXPORT CUresult cuGraphEventRecordNodeGetEvent(CUgraphNode node, CUevent* event) {
  ErrorScope scope;
  return to_driver(cudaGraphEventRecordNodeGetEvent(rt(node), event));
}

PT_EXPORT CUresult cuGraphEventRecordNodeSetEvent(CUgraphNode node, CUevent event) {
  ErrorScope scope;
  return to_driver(cudaGraphEventRecordNodeSetEvent(rt(node), event));
}

PT_EXPORT CUresult cuGraphEventWaitNodeGetEvent(CUgraphNode node, CUevent* event) {
  ErrorScope scope;
  return to_driver(cudaGraphEventWaitNodeGetEvent(rt(node), event));
}

PT_EXPORT CUresult cuGraphEventWaitNodeSetEvent(CUgraphNode node, CUevent event) {
  ErrorScope scope;
  return to_driver(cudaGraphEventWaitNodeSetEvent(rt(node), event));
}

PT_EXPORT CUresult cuGraphExecEventRecordNodeSetEvent(CUgraphExec exec, CUgraphNode node,
                                                      CUevent event) {
  ErrorScope scope;
  return to_driver(cudaGraphExecEventRecordNodeSetEvent(rt(exec), rt(node), event));
}

PT_EXPORT CUresult cuGraphExecEventWaitNodeSetEvent(CUgraphExec exec, CUgraphNode node,
                                                    CUevent event) {
  ErrorScope scope;
  return to_driver(cudaGraphExecEventWaitNodeSetEvent(rt(exec), rt(node), event));
}

PT_EXPORT CUresult cuGraphNodeSetEnabled(CUgraphExec exec, CUgraphNode node, unsigned int enabled) {
  ErrorScope scope;
  return to_driver(cudaGraphNodeSetEnabled(rt(exec), rt(node), enabled));
}

PT_EXPORT CUresult cuGraphNodeGetEnabled(CUgraphExec exec, CUgraphNode node,
                                         unsigned int* enabled) {
  ErrorScope scope;
  return to_driver(cudaGraphNodeGetEnabled(rt(exec), rt(node), enabled));
}

PT_EXPORT CUresult cuGraphNodeFindInClone(CUgraphNode* node, CUgraphNode original, CUgraph clone) {
  ErrorScope scope;
  return to_driver(
      cudaGraphNodeFindInClone(reinterpret_cast<cudaGraphNode_t*>(node), rt(original), rt(clone)));
}

// ---- structure
// ---------------------------------------------------------------------------------------

PT_EXPORT CUresult cuGraphAddDependencies(CUgraph graph, const CUgraphNode* from,
                                          const CUgraphNode* to, const CUgraphEdgeData* edges,
                                          size_t count) {
  ErrorScope scope;
  return to_driver(cudaGraphAddDependencies_v2(rt(graph), rt(from), rt(to), rt(edges), count));
}

PT_EXPORT CUresult cuGraphRemoveDependencies(CUgraph graph, const CUgraphNode* from,
                                             const CUgraphNode* to, const CUgraphEdgeData* edges,
                                             size_t count) {
  ErrorScope scope;
  return to_driver(cudaGraphRemoveDependencies_v2(rt(graph), rt(from), rt(to), rt(edges), count));
}

PT_EXPORT CUresult cuGraphGetNodes(CUgraph graph, CUgraphNode* nodes, size_t* count) {
  ErrorScope scope;
  return to_driver(cudaGraphGetNodes(rt(graph), rt(nodes), count));
}

PT_EXPORT CUresult cuGraphGetRootNodes(CUgraph graph, CUgraphNode* nodes, size_t* count) {
  ErrorScope scope;
  return to_driver(cudaGraphGetRootNodes(rt(graph), rt(nodes), count));
}

PT_EXPORT CUresult cuGraphGetEdges(CUgraph graph, CUgraphNode* from, CUgraphNode* to,
                                   CUgraphEdgeData* edges, size_t* count) {
  ErrorScope scope;
  return to_driver(cudaGraphGetEdges_v2(rt(graph), rt(from), rt(to), rt(edges), count));
}

PT_EXPORT CUresult cuGraphNodeGetDependencies(CUgraphNode node, CUgraphNode* dependencies,
                                              CUgraphEdgeData* edges, size_t* count) {
  ErrorScope scope;
  return to_driver(cudaGraphNodeGetDependencies_v2(rt(node), rt(dependencies), rt(edges), count));
}

PT_EXPORT CUresult cuGraphNodeGetDependentNodes(CUgraphNode node, CUgraphNode* dependents,
                                                CUgraphEdgeData* edges, size_t* count) {
  ErrorScope scope;
  return to_driver(cudaGraphNodeGetDependentNodes_v2(rt(node), rt(dependents), rt(edges), count));
}

PT_EXPORT CUresult cuGraphNodeGetType(CUgraphNode node, CUgraphNodeType* type) {
  ErrorScope scope;  // CUgraphNodeType and cudaGraphNodeType share their values
  return to_driver(cudaGraphNodeGetType(rt(node), reinterpret_cast<cudaGraphNodeType*>(type)));
}

PT_EXPORT CUresult cuGraphDestroyNode(CUgraphNode node) {
  ErrorScope scope;
  return to_driver(cudaGraphDestroyNode(rt(node)));
}

PT_EXPORT CUresult cuGraphChildGraphNodeGetGraph(CUgraphNode node, CUgraph* graph) {
  ErrorScope scope;
  return to_driver(
      cudaGraphChildGraphNodeGetGraph(rt(node), reinterpret_cast<cudaGraph_t*>(graph)));
}

PT_EXPORT CUresult cuGraphClone(CUgraph* clone, CUgraph original) {
  ErrorScope scope;
  return to_driver(cudaGraphClone(reinterpret_cast<cudaGraph_t*>(clone), rt(original)));
}

PT_EXPORT CUresult cuGraphDebugDotPrint(CUgraph graph, const char* path, unsigned int flags) {
  ErrorScope scope;
  return to_driver(cudaGraphDebugDotPrint(rt(graph), path, flags));
}

// ---- executable graphs
// -------------------------------------------------------------------------------

extern "C" cudaError_t cudaGraphInstantiateWithParams_ptsz(cudaGraphExec_t*, cudaGraph_t,
                                                           cudaGraphInstantiateParams*);
namespace {
CUresult instantiate_with_params(CUgraphExec* exec, CUgraph graph,
                                 CUDA_GRAPH_INSTANTIATE_PARAMS* params, bool per_thread) {
  if (params == nullptr) return CUDA_ERROR_INVALID_VALUE;
  ErrorScope scope;
  cudaGraphInstantiateParams p{};
  p.flags = params->flags;
  p.uploadStream = params->hUploadStream;
  auto* out = reinterpret_cast<cudaGraphExec_t*>(exec);
  const cudaError_t error = per_thread ? cudaGraphInstantiateWithParams_ptsz(out, rt(graph), &p)
                                       : cudaGraphInstantiateWithParams(out, rt(graph), &p);
  params->hErrNode_out = reinterpret_cast<CUgraphNode>(p.errNode_out);
  params->result_out = static_cast<CUgraphInstantiateResult>(p.result_out);
  return to_driver(error);
}
}  // namespace

PT_EXPORT CUresult cuGraphInstantiateWithParams(CUgraphExec* exec, CUgraph graph,
                                                CUDA_GRAPH_INSTANTIATE_PARAMS* params) {
  return instantiate_with_params(exec, graph, params, false);
}

PT_EXPORT CUresult cuGraphInstantiateWithParams_ptsz(CUgraphExec* exec, CUgraph graph,
                                                     CUDA_GRAPH_INSTANTIATE_PARAMS* params) {
  return instantiate_with_params(exec, graph, params, true);
}

PT_EXPORT CUresult cuGraphExecGetFlags(CUgraphExec exec, cuuint64_t* flags) {
  ErrorScope scope;
  unsigned long long value = 0;
  const cudaError_t error = cudaGraphExecGetFlags(rt(exec), &value);
  if (error == cudaSuccess && flags != nullptr) *flags = value;
  return to_driver(error);
}

PT_EXPORT CUresult cuGraphUpload(CUgraphExec exec, CUstream stream) {
  ErrorScope scope;
  return to_driver(impl::graph_upload(rt(exec), stream, false, "cuGraphUpload"));
}

PT_EXPORT CUresult cuGraphUpload_ptsz(CUgraphExec exec, CUstream stream) {
  ErrorScope scope;
  return to_driver(impl::graph_upload(rt(exec), stream, true, "cuGraphUpload_ptsz"));
}

PT_EXPORT CUresult cuGraphExecUpdate(CUgraphExec exec, CUgraph graph,
                                     CUgraphExecUpdateResultInfo* result) {
  ErrorScope scope;  // the result structs share their layout and values
  return to_driver(cudaGraphExecUpdate(rt(exec), rt(graph),
                                       reinterpret_cast<cudaGraphExecUpdateResultInfo*>(result)));
}

// ---- the generic node parameters (cuGraphAddNode, cuGraphNodeSetParams)
// ---------------------------

namespace {
// Zeroed storage for the runtime's node parameters (a union of structs with constructors, so
// not default-constructible in C++).
struct RuntimeNodeParams {
  alignas(cudaGraphNodeParams) unsigned char bytes[sizeof(cudaGraphNodeParams)] = {};
  cudaGraphNodeParams* get() { return reinterpret_cast<cudaGraphNodeParams*>(bytes); }
};

// The driver's node parameters as the runtime's; false (reported) for a type not emulated here.
bool runtime_node_params(const CUgraphNodeParams& in, cudaGraphNodeParams* out, const char* api) {
  std::memset(static_cast<void*>(out), 0, sizeof *out);
  out->type = static_cast<cudaGraphNodeType>(in.type);
  switch (in.type) {
    case CU_GRAPH_NODE_TYPE_KERNEL: {
      const cudaKernelNodeParams k = kernel_params(CUDA_KERNEL_NODE_PARAMS{
          in.kernel.func, in.kernel.gridDimX, in.kernel.gridDimY, in.kernel.gridDimZ,
          in.kernel.blockDimX, in.kernel.blockDimY, in.kernel.blockDimZ, in.kernel.sharedMemBytes,
          in.kernel.kernelParams, in.kernel.extra, in.kernel.kern, in.kernel.ctx});
      out->kernel.func = k.func;
      out->kernel.gridDim = k.gridDim;
      out->kernel.blockDim = k.blockDim;
      out->kernel.sharedMemBytes = k.sharedMemBytes;
      out->kernel.kernelParams = k.kernelParams;
      out->kernel.extra = k.extra;
      return true;
    }
    case CU_GRAPH_NODE_TYPE_MEMCPY:
      if (!memcpy_params(in.memcpy.copyParams, &out->memcpy.copyParams)) {
        invalid_copy(api);
        return false;
      }
      return true;
    case CU_GRAPH_NODE_TYPE_MEMSET:
      out->memset.dst = reinterpret_cast<void*>(in.memset.dst);
      out->memset.pitch = in.memset.pitch;
      out->memset.value = in.memset.value;
      out->memset.elementSize = in.memset.elementSize;
      out->memset.width = in.memset.width;
      out->memset.height = in.memset.height;
      return true;
    case CU_GRAPH_NODE_TYPE_HOST:
      out->host.fn = in.host.fn;
      out->host.userData = in.host.userData;
      return true;
    case CU_GRAPH_NODE_TYPE_GRAPH:
      out->graph.graph = rt(in.graph.graph);
      return true;
    case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
      out->eventRecord.event = in.eventRecord.event;
      return true;
    case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
      out->eventWait.event = in.eventWait.event;
      return true;
    case CU_GRAPH_NODE_TYPE_EMPTY:
      return true;
    case CU_GRAPH_NODE_TYPE_MEM_ALLOC:
      out->alloc.poolProps = *reinterpret_cast<const cudaMemPoolProps*>(&in.alloc.poolProps);
      out->alloc.accessDescs = reinterpret_cast<const cudaMemAccessDesc*>(in.alloc.accessDescs);
      out->alloc.accessDescCount = in.alloc.accessDescCount;
      out->alloc.bytesize = in.alloc.bytesize;
      return true;
    case CU_GRAPH_NODE_TYPE_MEM_FREE:
      out->free.dptr = reinterpret_cast<void*>(in.free.dptr);
      return true;
    case CU_GRAPH_NODE_TYPE_CONDITIONAL:  // the context is the handle's: one per device here
      out->conditional.handle = in.conditional.handle;
      out->conditional.type = static_cast<cudaGraphConditionalNodeType>(in.conditional.type);
      out->conditional.size = in.conditional.size;
      return true;
    default:
      powertrain::emu::report_unsupported(std::string(api) + "(node type " +
                                          std::to_string(static_cast<int>(in.type)) + ")");
      return false;
  }
}
}  // namespace

PT_EXPORT CUresult cuGraphAddNode(CUgraphNode* node, CUgraph graph, const CUgraphNode* dependencies,
                                  const CUgraphEdgeData* edges, size_t count,
                                  CUgraphNodeParams* params) {
  if (params == nullptr) return CUDA_ERROR_INVALID_VALUE;
  RuntimeNodeParams p;
  if (!runtime_node_params(*params, p.get(), "cuGraphAddNode_v2")) return CUDA_ERROR_NOT_SUPPORTED;
  ErrorScope scope;
  const cudaError_t error = cudaGraphAddNode_v2(reinterpret_cast<cudaGraphNode_t*>(node), rt(graph),
                                                rt(dependencies), rt(edges), count, p.get());
  if (error == cudaSuccess && params->type == CU_GRAPH_NODE_TYPE_MEM_ALLOC) {
    params->alloc.dptr = reinterpret_cast<CUdeviceptr>(p.get()->alloc.dptr);
  }
  if (error == cudaSuccess && params->type == CU_GRAPH_NODE_TYPE_CONDITIONAL) {
    params->conditional.phGraph_out = reinterpret_cast<CUgraph*>(p.get()->conditional.phGraph_out);
  }
  return to_driver(error);
}

// A conditional handle of `hGraph`; the context must be a live one (every emulated device has
// one context, so the handle does not depend on it).
PT_EXPORT CUresult cuGraphConditionalHandleCreate(CUgraphConditionalHandle* pHandle_out,
                                                  CUgraph hGraph, CUcontext ctx,
                                                  unsigned int defaultLaunchValue,
                                                  unsigned int flags) {
  if (ctx != nullptr && powertrain::emu::detail::driver_context_device(ctx) < 0) {
    return CUDA_ERROR_INVALID_CONTEXT;
  }
  ErrorScope scope;
  return to_driver(
      cudaGraphConditionalHandleCreate(reinterpret_cast<cudaGraphConditionalHandle*>(pHandle_out),
                                       rt(hGraph), defaultLaunchValue, flags));
}

PT_EXPORT CUresult cuGraphNodeSetParams(CUgraphNode node, CUgraphNodeParams* params) {
  if (params == nullptr) return CUDA_ERROR_INVALID_VALUE;
  RuntimeNodeParams p;
  if (!runtime_node_params(*params, p.get(), "cuGraphNodeSetParams")) {
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  ErrorScope scope;
  return to_driver(cudaGraphNodeSetParams(rt(node), p.get()));
}

PT_EXPORT CUresult cuGraphExecNodeSetParams(CUgraphExec exec, CUgraphNode node,
                                            CUgraphNodeParams* params) {
  if (params == nullptr) return CUDA_ERROR_INVALID_VALUE;
  RuntimeNodeParams p;
  if (!runtime_node_params(*params, p.get(), "cuGraphExecNodeSetParams")) {
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  ErrorScope scope;
  return to_driver(cudaGraphExecNodeSetParams(rt(exec), rt(node), p.get()));
}

// ---- user objects and kernel node attributes ---------------------------------------------------

PT_EXPORT CUresult cuUserObjectCreate(CUuserObject* object, void* ptr, CUhostFn destroy,
                                      unsigned int initial_refs, unsigned int flags) {
  ErrorScope scope;
  return to_driver(cudaUserObjectCreate(reinterpret_cast<cudaUserObject_t*>(object), ptr, destroy,
                                        initial_refs, flags));
}

PT_EXPORT CUresult cuUserObjectRetain(CUuserObject object, unsigned int count) {
  ErrorScope scope;
  return to_driver(cudaUserObjectRetain(reinterpret_cast<cudaUserObject_t>(object), count));
}

PT_EXPORT CUresult cuUserObjectRelease(CUuserObject object, unsigned int count) {
  ErrorScope scope;
  return to_driver(cudaUserObjectRelease(reinterpret_cast<cudaUserObject_t>(object), count));
}

PT_EXPORT CUresult cuGraphRetainUserObject(CUgraph graph, CUuserObject object, unsigned int count,
                                           unsigned int flags) {
  ErrorScope scope;
  return to_driver(cudaGraphRetainUserObject(rt(graph), reinterpret_cast<cudaUserObject_t>(object),
                                             count, flags));
}

PT_EXPORT CUresult cuGraphReleaseUserObject(CUgraph graph, CUuserObject object,
                                            unsigned int count) {
  ErrorScope scope;
  return to_driver(
      cudaGraphReleaseUserObject(rt(graph), reinterpret_cast<cudaUserObject_t>(object), count));
}

PT_EXPORT CUresult cuGraphKernelNodeGetAttribute(CUgraphNode node, CUkernelNodeAttrID attribute,
                                                 CUkernelNodeAttrValue* value) {
  ErrorScope scope;
  return to_driver(
      cudaGraphKernelNodeGetAttribute(rt(node), static_cast<cudaLaunchAttributeID>(attribute),
                                      reinterpret_cast<cudaLaunchAttributeValue*>(value)));
}

PT_EXPORT CUresult cuGraphKernelNodeSetAttribute(CUgraphNode node, CUkernelNodeAttrID attribute,
                                                 const CUkernelNodeAttrValue* value) {
  ErrorScope scope;
  return to_driver(
      cudaGraphKernelNodeSetAttribute(rt(node), static_cast<cudaLaunchAttributeID>(attribute),
                                      reinterpret_cast<const cudaLaunchAttributeValue*>(value)));
}

PT_EXPORT CUresult cuGraphKernelNodeCopyAttributes(CUgraphNode destination, CUgraphNode source) {
  ErrorScope scope;
  return to_driver(cudaGraphKernelNodeCopyAttributes(rt(destination), rt(source)));
}

// ---- stream capture
// ------------------------------------------------------------------------------------

namespace powertrain::emu::detail {
CUresult driver_capture_info(CUstream stream, CUstreamCaptureStatus* status, cuuint64_t* id,
                             CUgraph* graph, const CUgraphNode** dependencies,
                             const CUgraphEdgeData** edges, size_t* count, bool per_thread,
                             const char* api) {
  ErrorScope scope;
  unsigned long long capture_id = 0;
  const cudaError_t error = impl::stream_get_capture_info(
      stream, reinterpret_cast<cudaStreamCaptureStatus*>(status), &capture_id,
      reinterpret_cast<cudaGraph_t*>(graph),
      reinterpret_cast<const cudaGraphNode_t**>(dependencies),
      reinterpret_cast<const cudaGraphEdgeData**>(edges), count, per_thread, api);
  if (error == cudaSuccess && id != nullptr) *id = capture_id;
  return to_driver(error);
}
}  // namespace powertrain::emu::detail

PT_EXPORT CUresult cuStreamGetCaptureInfo(CUstream stream, CUstreamCaptureStatus* status,
                                          cuuint64_t* id, CUgraph* graph,
                                          const CUgraphNode** dependencies,
                                          const CUgraphEdgeData** edges, size_t* count) {
  return detail::driver_capture_info(stream, status, id, graph, dependencies, edges, count, false,
                                     "cuStreamGetCaptureInfo_v3");
}

PT_EXPORT CUresult cuStreamBeginCaptureToGraph(CUstream stream, CUgraph graph,
                                               const CUgraphNode* dependencies,
                                               const CUgraphEdgeData* edges, size_t count,
                                               CUstreamCaptureMode mode) {
  ErrorScope scope;
  return to_driver(cudaStreamBeginCaptureToGraph(stream, rt(graph), rt(dependencies), rt(edges),
                                                 count, static_cast<cudaStreamCaptureMode>(mode)));
}

PT_EXPORT CUresult cuStreamUpdateCaptureDependencies(CUstream stream, CUgraphNode* dependencies,
                                                     const CUgraphEdgeData* edges, size_t count,
                                                     unsigned int flags) {
  ErrorScope scope;
  return to_driver(
      cudaStreamUpdateCaptureDependencies_v2(stream, rt(dependencies), rt(edges), count, flags));
}

// ---- the CUDA 12.0 forms of renamed functions
// ------------------------------------------------------

#undef cuGraphAddNode
PT_EXPORT CUresult cuGraphAddNode(CUgraphNode* node, CUgraph graph, const CUgraphNode* dependencies,
                                  size_t count, CUgraphNodeParams* params) {
  return cuGraphAddNode_v2(node, graph, dependencies, nullptr, count, params);
}
#undef cuGraphAddDependencies
#undef cuGraphRemoveDependencies
#undef cuGraphGetEdges
#undef cuGraphNodeGetDependencies
#undef cuGraphNodeGetDependentNodes
PT_EXPORT CUresult cuGraphAddDependencies(CUgraph graph, const CUgraphNode* from,
                                          const CUgraphNode* to, size_t count) {
  return cuGraphAddDependencies_v2(graph, from, to, nullptr, count);
}
PT_EXPORT CUresult cuGraphRemoveDependencies(CUgraph graph, const CUgraphNode* from,
                                             const CUgraphNode* to, size_t count) {
  return cuGraphRemoveDependencies_v2(graph, from, to, nullptr, count);
}
PT_EXPORT CUresult cuGraphGetEdges(CUgraph graph, CUgraphNode* from, CUgraphNode* to,
                                   size_t* count) {
  return cuGraphGetEdges_v2(graph, from, to, nullptr, count);
}
PT_EXPORT CUresult cuGraphNodeGetDependencies(CUgraphNode node, CUgraphNode* dependencies,
                                              size_t* count) {
  return cuGraphNodeGetDependencies_v2(node, dependencies, nullptr, count);
}
PT_EXPORT CUresult cuGraphNodeGetDependentNodes(CUgraphNode node, CUgraphNode* dependents,
                                                size_t* count) {
  return cuGraphNodeGetDependentNodes_v2(node, dependents, nullptr, count);
}
#undef cuGraphAddKernelNode
#undef cuGraphKernelNodeGetParams
#undef cuGraphKernelNodeSetParams
#undef cuGraphExecKernelNodeSetParams
PT_EXPORT CUresult cuGraphAddKernelNode(CUgraphNode* node, CUgraph graph,
                                        const CUgraphNode* dependencies, size_t count,
                                        const CUDA_KERNEL_NODE_PARAMS_v1* params) {
  if (params == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const CUDA_KERNEL_NODE_PARAMS p = from_v1(*params);
  return cuGraphAddKernelNode_v2(node, graph, dependencies, count, &p);
}

PT_EXPORT CUresult cuGraphKernelNodeGetParams(CUgraphNode node,
                                              CUDA_KERNEL_NODE_PARAMS_v1* params) {
  if (params == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUDA_KERNEL_NODE_PARAMS p{};
  const CUresult r = cuGraphKernelNodeGetParams_v2(node, &p);
  if (r == CUDA_SUCCESS) {
    *params = CUDA_KERNEL_NODE_PARAMS_v1{p.func,         p.gridDimX,  p.gridDimY,  p.gridDimZ,
                                         p.blockDimX,    p.blockDimY, p.blockDimZ, p.sharedMemBytes,
                                         p.kernelParams, p.extra};
  }
  return r;
}

PT_EXPORT CUresult cuGraphKernelNodeSetParams(CUgraphNode node,
                                              const CUDA_KERNEL_NODE_PARAMS_v1* params) {
  if (params == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const CUDA_KERNEL_NODE_PARAMS p = from_v1(*params);
  return cuGraphKernelNodeSetParams_v2(node, &p);
}

PT_EXPORT CUresult cuGraphExecKernelNodeSetParams(CUgraphExec exec, CUgraphNode node,
                                                  const CUDA_KERNEL_NODE_PARAMS_v1* params) {
  if (params == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const CUDA_KERNEL_NODE_PARAMS p = from_v1(*params);
  return cuGraphExecKernelNodeSetParams_v2(exec, node, &p);
}
