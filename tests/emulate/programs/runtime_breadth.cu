// Runtime calls real programs make that are not in the other test programs: copy nodes to and
// from __device__ variables (added, edited in the graph and in the exec), an exec's child graph
// node given new work, CUDA 12.8's cudaEventElapsedTime_v2, the CUDA 13 atomic-capability and
// 1D-texture queries, async-notification callbacks, the deprecated multi-device cooperative
// launch and the no-op double-conversion calls old binaries still make. Prints one line per
// checked result; run under `powertrain emulate --gpus 2`.
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "emu_check.h"

// CUDA 12 runtime entry points that the CUDA 13 headers and libcudart.so.13 no longer have
// (a program built against CUDA 12.8 calls them): found by name in the loaded runtime, as the
// dynamic linker finds them for such a program.
struct LaunchParams {  // cudaLaunchParams of CUDA 11/12
  void* func;
  dim3 gridDim;
  dim3 blockDim;
  void** args;
  size_t sharedMem;
  cudaStream_t stream;
};
using ElapsedTime = cudaError_t (*)(float*, cudaEvent_t, cudaEvent_t);
using SetDouble = cudaError_t (*)(double*);
using MultiDeviceLaunch = cudaError_t (*)(LaunchParams*, unsigned int, unsigned int);

template <typename F>
F runtime_entry(const char* name) {
  void* entry = dlsym(RTLD_DEFAULT, name);
  if (entry == nullptr) {
    std::fprintf(stderr, "runtime_breadth: the runtime has no %s\n", name);
    std::exit(1);
  }
  return reinterpret_cast<F>(entry);
}

__device__ int table[16];
__constant__ float weights[8];

__global__ void grid_kernel(int* out) {
  if (out != nullptr) out[threadIdx.x] = static_cast<int>(blockIdx.x);
}

namespace {

int checks = 0;
void ok() { ++checks; }

void symbol_copy_nodes() {
  int host_in[16] = {};
  int host_out[16] = {};
  void* table_address = nullptr;
  EMU_CHECK(cudaGetSymbolAddress(&table_address, table));
  cudaGraph_t graph;
  EMU_CHECK(cudaGraphCreate(&graph, 0));
  cudaGraphNode_t to_node, from_node;
  EMU_CHECK(cudaGraphAddMemcpyNodeToSymbol(&to_node, graph, nullptr, 0, table, host_in,
                                           8 * sizeof(int), 4 * sizeof(int),
                                           cudaMemcpyHostToDevice));
  EMU_CHECK(cudaGraphAddMemcpyNodeFromSymbol(&from_node, graph, &to_node, 1, host_out, table,
                                             16 * sizeof(int), 0, cudaMemcpyDeviceToHost));
  // The node holds the variable's resolved address, at the offset.
  cudaMemcpy3DParms params{};
  EMU_CHECK(cudaGraphMemcpyNodeGetParams(to_node, &params));
  EMU_REQUIRE(params.dstPtr.ptr == static_cast<char*>(table_address) + 4 * sizeof(int));
  EMU_REQUIRE(params.extent.width == 8 * sizeof(int));
  ok();
  EMU_CHECK(cudaGraphMemcpyNodeGetParams(from_node, &params));
  EMU_REQUIRE(params.srcPtr.ptr == table_address && params.dstPtr.ptr == host_out);
  ok();
  // Edited in the graph: the 16-byte copy to `weights` instead.
  EMU_CHECK(cudaGraphMemcpyNodeSetParamsToSymbol(to_node, weights, host_in, 4 * sizeof(float), 0,
                                                 cudaMemcpyHostToDevice));
  void* weights_address = nullptr;
  EMU_CHECK(cudaGetSymbolAddress(&weights_address, weights));
  EMU_CHECK(cudaGraphMemcpyNodeGetParams(to_node, &params));
  EMU_REQUIRE(params.dstPtr.ptr == weights_address && params.extent.width == 16);
  ok();
  EMU_CHECK(cudaGraphMemcpyNodeSetParamsFromSymbol(from_node, host_out, table, 2 * sizeof(int),
                                                   14 * sizeof(int), cudaMemcpyDeviceToHost));
  cudaGraphExec_t exec;
  EMU_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  EMU_CHECK(cudaGraphLaunch(exec, 0));  // copies of 16 and 8 bytes
  // Edited in the exec only: 64 and 32 bytes at the next launch.
  EMU_CHECK(cudaGraphExecMemcpyNodeSetParamsToSymbol(exec, to_node, table, host_in,
                                                     16 * sizeof(int), 0, cudaMemcpyDefault));
  EMU_CHECK(cudaGraphExecMemcpyNodeSetParamsFromSymbol(
      exec, from_node, host_out, weights, 8 * sizeof(float), 0, cudaMemcpyDeviceToHost));
  EMU_CHECK(cudaGraphLaunch(exec, 0));
  EMU_CHECK(cudaStreamSynchronize(0));
  ok();
  // Refused as the runtime refuses them: past the variable's end, the wrong direction, an
  // address that is not a variable.
  cudaGraphNode_t refused;
  EMU_EXPECT_ERROR(
      cudaGraphAddMemcpyNodeToSymbol(&refused, graph, nullptr, 0, table, host_in, sizeof(int),
                                     16 * sizeof(int), cudaMemcpyHostToDevice),
      cudaErrorInvalidValue);
  EMU_EXPECT_ERROR(cudaGraphAddMemcpyNodeFromSymbol(&refused, graph, nullptr, 0, host_out, table,
                                                    sizeof(int), 0, cudaMemcpyHostToDevice),
                   cudaErrorInvalidMemcpyDirection);
  EMU_EXPECT_ERROR(cudaGraphAddMemcpyNodeToSymbol(&refused, graph, nullptr, 0, host_out, host_in,
                                                  sizeof(int), 0, cudaMemcpyHostToDevice),
                   cudaErrorInvalidSymbol);
  ok();
  EMU_CHECK(cudaGraphExecDestroy(exec));
  EMU_CHECK(cudaGraphDestroy(graph));
}

// A child graph of one memset node after one kernel node; the exec's copy of the child node gets
// a child graph of the same shape with a larger memset.
void child_graph_update() {
  int* buffer = nullptr;
  EMU_CHECK(cudaMalloc(&buffer, 1 << 20));
  const auto make_child = [&](size_t width) {
    cudaGraph_t child;
    EMU_CHECK(cudaGraphCreate(&child, 0));
    cudaKernelNodeParams kernel{};
    void* args[] = {&buffer};
    kernel.func = reinterpret_cast<void*>(grid_kernel);
    kernel.gridDim = dim3(2);
    kernel.blockDim = dim3(32);
    kernel.kernelParams = args;
    cudaGraphNode_t k, m;
    EMU_CHECK(cudaGraphAddKernelNode(&k, child, nullptr, 0, &kernel));
    cudaMemsetParams memset{};
    memset.dst = buffer;
    memset.value = 7;
    memset.elementSize = 1;
    memset.width = width;
    memset.height = 1;
    EMU_CHECK(cudaGraphAddMemsetNode(&m, child, &k, 1, &memset));
    return child;
  };
  cudaGraph_t parent;
  EMU_CHECK(cudaGraphCreate(&parent, 0));
  cudaGraph_t first = make_child(1000);
  cudaGraphNode_t child_node;
  EMU_CHECK(cudaGraphAddChildGraphNode(&child_node, parent, nullptr, 0, first));
  cudaGraphExec_t exec;
  EMU_CHECK(cudaGraphInstantiate(&exec, parent, 0));
  EMU_CHECK(cudaGraphLaunch(exec, 0));  // memset of 1000 bytes
  cudaGraph_t second = make_child(3000);
  EMU_CHECK(cudaGraphExecChildGraphNodeSetParams(exec, child_node, second));
  EMU_CHECK(cudaGraphLaunch(exec, 0));  // memset of 3000 bytes
  ok();
  // Another shape (one node) is refused, and the exec keeps the 3000-byte memset.
  cudaGraph_t other;
  EMU_CHECK(cudaGraphCreate(&other, 0));
  cudaGraphNode_t empty;
  EMU_CHECK(cudaGraphAddEmptyNode(&empty, other, nullptr, 0));
  EMU_EXPECT_ERROR(cudaGraphExecChildGraphNodeSetParams(exec, child_node, other),
                   cudaErrorInvalidValue);
  EMU_EXPECT_ERROR(cudaGraphExecChildGraphNodeSetParams(exec, empty, second),
                   cudaErrorInvalidValue);  // not a node of the exec's graph
  EMU_CHECK(cudaGraphLaunch(exec, 0));      // memset of 3000 bytes again
  EMU_CHECK(cudaStreamSynchronize(0));
  ok();
  for (cudaGraph_t g : {first, second, other, parent}) EMU_CHECK(cudaGraphDestroy(g));
  EMU_CHECK(cudaGraphExecDestroy(exec));
  EMU_CHECK(cudaFree(buffer));
}

void event_time_v2() {
  cudaEvent_t start, stop;
  EMU_CHECK(cudaEventCreate(&start));
  EMU_CHECK(cudaEventCreate(&stop));
  EMU_CHECK(cudaEventRecord(start, 0));
  grid_kernel<<<4, 32>>>(nullptr);
  EMU_CHECK(cudaEventRecord(stop, 0));
  EMU_CHECK(cudaEventSynchronize(stop));
  const auto cudaEventElapsedTime_v2 = runtime_entry<ElapsedTime>("cudaEventElapsedTime_v2");
  float v1 = -1, v2 = -2;
  EMU_CHECK(cudaEventElapsedTime(&v1, start, stop));
  EMU_CHECK(cudaEventElapsedTime_v2(&v2, start, stop));
  EMU_REQUIRE(v1 == v2 && v2 >= 0);
  EMU_EXPECT_ERROR(cudaEventElapsedTime_v2(nullptr, start, stop), cudaErrorInvalidValue);
  ok();
  EMU_CHECK(cudaEventDestroy(start));
  EMU_CHECK(cudaEventDestroy(stop));
}

void device_queries(int devices) {
  const cudaAtomicOperation operations[] = {cudaAtomicOperationIntegerAdd, cudaAtomicOperationCAS,
                                            cudaAtomicOperationFloatAdd,
                                            cudaAtomicOperationFloatMax};
  unsigned int host[4] = {9, 9, 9, 9};
  EMU_CHECK(cudaDeviceGetHostAtomicCapabilities(host, operations, 4, 0));
  int host_native = -1;
  EMU_CHECK(cudaDeviceGetAttribute(&host_native, cudaDevAttrHostNativeAtomicSupported, 0));
  EMU_REQUIRE(host_native == 0 && host[0] == 0 && host[1] == 0 && host[2] == 0 && host[3] == 0);
  ok();
  if (devices >= 2) {
    unsigned int peer[4] = {};
    EMU_CHECK(cudaDeviceGetP2PAtomicCapabilities(peer, operations, 4, 0, 1));
    EMU_REQUIRE((peer[0] & cudaAtomicCapabilityReduction) != 0 &&
                (peer[0] & cudaAtomicCapabilityScalar64) != 0);
    EMU_REQUIRE((peer[1] & cudaAtomicCapabilityScalar128) != 0);
    EMU_REQUIRE((peer[2] & cudaAtomicCapabilityVector32x4) != 0 && peer[3] == 0);
    int native = -1, partial = -1;
    EMU_CHECK(cudaDeviceGetP2PAttribute(&native, cudaDevP2PAttrNativeAtomicSupported, 0, 1));
    EMU_CHECK(
        cudaDeviceGetP2PAttribute(&partial, cudaDevP2PAttrOnlyPartialNativeAtomicSupported, 0, 1));
    EMU_REQUIRE(native == 1 && partial == 1);  // float min/max are not native
    ok();
  }
  EMU_EXPECT_ERROR(cudaDeviceGetP2PAtomicCapabilities(host, operations, 4, 0, 0),
                   cudaErrorInvalidDevice);
  const cudaAtomicOperation bad = static_cast<cudaAtomicOperation>(99);
  EMU_EXPECT_ERROR(cudaDeviceGetHostAtomicCapabilities(host, &bad, 1, 0), cudaErrorInvalidValue);
  ok();
  size_t width = 0;
  const cudaChannelFormatDesc float4_desc = cudaCreateChannelDesc<float4>();
  EMU_CHECK(cudaDeviceGetTexture1DLinearMaxWidth(&width, &float4_desc, 0));
  EMU_REQUIRE(width == (size_t{1} << 28));
  const cudaChannelFormatDesc odd = cudaCreateChannelDesc(12, 0, 0, 0, cudaChannelFormatKindFloat);
  EMU_EXPECT_ERROR(cudaDeviceGetTexture1DLinearMaxWidth(&width, &odd, 0), cudaErrorInvalidValue);
  const cudaChannelFormatDesc byte_float =
      cudaCreateChannelDesc(8, 0, 0, 0, cudaChannelFormatKindFloat);
  EMU_EXPECT_ERROR(cudaDeviceGetTexture1DLinearMaxWidth(&width, &byte_float, 0),
                   cudaErrorInvalidValue);
  ok();
}

// CUDA 12.8's 3D batch, each layout read back directly: a packed host box into rows of 16 bytes
// on the device (the gaps keep their sentinel), back into a packed box; floats (element 4 bytes)
// from host rows of 3 floats into a float array at offset (1, 0, 0) (columns 0 and 3 keep their
// sentinel). Copies within one batch have no order, so each direction is its own batch. A batch
// on a capturing stream is refused and leaves the capture as it was.
void batch_3d() {
  cudaStream_t stream;
  EMU_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  unsigned char box[8 * 4 * 2], back[8 * 4 * 2] = {};
  for (int i = 0; i < 64; ++i) box[i] = static_cast<unsigned char>(i * 3 + 1);
  unsigned char* pitched = nullptr;
  EMU_CHECK(cudaMalloc(&pitched, 16 * 4 * 2));
  EMU_CHECK(cudaMemset(pitched, 0xEE, 16 * 4 * 2));
  cudaMemcpy3DBatchOp in{};
  in.src.type = cudaMemcpyOperandTypePointer;
  in.src.op.ptr.ptr = box;
  in.dst.type = cudaMemcpyOperandTypePointer;
  in.dst.op.ptr.ptr = pitched;
  in.dst.op.ptr.rowLength = 16;
  in.extent = make_cudaExtent(8, 4, 2);
  in.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
  EMU_CHECK(cudaMemcpy3DBatchAsync(1, &in, 0, stream));
  EMU_CHECK(cudaStreamSynchronize(stream));
  unsigned char device_image[16 * 4 * 2];
  EMU_CHECK(cudaMemcpy(device_image, pitched, sizeof device_image, cudaMemcpyDeviceToHost));
  for (int layer = 0; layer < 2; ++layer) {
    for (int row = 0; row < 4; ++row) {
      for (int x = 0; x < 16; ++x) {
        const unsigned char got = device_image[(layer * 4 + row) * 16 + x];
        EMU_REQUIRE(got == (x < 8 ? box[(layer * 4 + row) * 8 + x] : 0xEE));
      }
    }
  }
  cudaMemcpy3DBatchOp out = in;
  out.src = in.dst;
  out.dst = in.src;
  out.dst.op.ptr.ptr = back;
  EMU_CHECK(cudaMemcpy3DBatchAsync(1, &out, 0, stream));
  EMU_CHECK(cudaStreamSynchronize(stream));
  EMU_REQUIRE(std::memcmp(box, back, sizeof box) == 0);
  // Floats into a 4 x 4 x 2 array at (1, 0, 0), from host rows of 3 floats (rowLength 3).
  cudaArray_t array;
  const cudaChannelFormatDesc f32 = cudaCreateChannelDesc<float>();
  EMU_CHECK(cudaMalloc3DArray(&array, &f32, make_cudaExtent(4, 4, 2), 0));
  float sentinel[32];
  for (float& v : sentinel) v = -1.0f;
  cudaMemcpy3DParms fill{};
  fill.srcPtr = make_cudaPitchedPtr(sentinel, 4 * sizeof(float), 4, 4);
  fill.dstArray = array;
  fill.extent = make_cudaExtent(4, 4, 2);
  fill.kind = cudaMemcpyHostToDevice;
  EMU_CHECK(cudaMemcpy3D(&fill));
  float rows_of_three[3 * 4 * 2];
  for (int i = 0; i < 24; ++i) rows_of_three[i] = 0.5f * static_cast<float>(i);
  cudaMemcpy3DBatchOp to_array{};
  to_array.src.type = cudaMemcpyOperandTypePointer;
  to_array.src.op.ptr.ptr = rows_of_three;
  to_array.src.op.ptr.rowLength = 3;
  to_array.dst.type = cudaMemcpyOperandTypeArray;
  to_array.dst.op.array.array = array;
  to_array.dst.op.array.offset = {1, 0, 0};
  to_array.extent = make_cudaExtent(2, 4, 2);
  to_array.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
  EMU_CHECK(cudaMemcpy3DBatchAsync(1, &to_array, 0, stream));
  EMU_CHECK(cudaStreamSynchronize(stream));
  float array_image[32] = {};
  cudaMemcpy3DParms read{};
  read.srcArray = array;
  read.dstPtr = make_cudaPitchedPtr(array_image, 4 * sizeof(float), 4, 4);
  read.extent = make_cudaExtent(4, 4, 2);
  read.kind = cudaMemcpyDeviceToHost;
  EMU_CHECK(cudaMemcpy3D(&read));
  for (int row = 0; row < 8; ++row) {  // 4 rows x 2 layers
    for (int x = 0; x < 4; ++x) {
      const float expected = (x == 1 || x == 2) ? rows_of_three[row * 3 + (x - 1)] : -1.0f;
      EMU_REQUIRE(array_image[row * 4 + x] == expected);
    }
  }
  // Refused: a zero extent, a row shorter than the copy, a region past the array, the legacy
  // NULL stream, and any batch on a capturing stream (the capture goes on).
  cudaMemcpy3DBatchOp bad = in;
  bad.extent.depth = 0;
  EMU_EXPECT_ERROR(cudaMemcpy3DBatchAsync(1, &bad, 0, stream), cudaErrorInvalidValue);
  bad = in;
  bad.dst.op.ptr.rowLength = 4;
  EMU_EXPECT_ERROR(cudaMemcpy3DBatchAsync(1, &bad, 0, stream), cudaErrorInvalidValue);
  bad = to_array;
  bad.dst.op.array.offset = {3, 0, 0};
  EMU_EXPECT_ERROR(cudaMemcpy3DBatchAsync(1, &bad, 0, stream), cudaErrorInvalidValue);
  EMU_EXPECT_ERROR(cudaMemcpy3DBatchAsync(1, &in, 0, 0), cudaErrorInvalidValue);
  EMU_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed));
  EMU_EXPECT_ERROR(cudaMemcpy3DBatchAsync(1, &in, 0, stream), cudaErrorStreamCaptureUnsupported);
  cudaGraph_t captured;
  EMU_CHECK(cudaStreamEndCapture(stream, &captured));
  size_t captured_nodes = 99;
  EMU_CHECK(cudaGraphGetNodes(captured, nullptr, &captured_nodes));
  EMU_REQUIRE(captured_nodes == 0);
  EMU_CHECK(cudaGraphDestroy(captured));
  EMU_CHECK(cudaFreeArray(array));
  EMU_CHECK(cudaFree(pitched));
  EMU_CHECK(cudaStreamDestroy(stream));
  ok();
}

void notifications() {
  cudaAsyncCallbackHandle_t handle = nullptr;
  const cudaAsyncCallback callback = [](cudaAsyncNotificationInfo_t*, void*,
                                        cudaAsyncCallbackHandle_t) {};
  EMU_CHECK(cudaDeviceRegisterAsyncNotification(0, callback, nullptr, &handle));
  EMU_REQUIRE(handle != nullptr);
  EMU_CHECK(cudaDeviceUnregisterAsyncNotification(0, handle));
  EMU_EXPECT_ERROR(cudaDeviceUnregisterAsyncNotification(0, handle), cudaErrorInvalidValue);
  ok();
}

void multi_device_cooperative(int devices) {
  const auto cudaLaunchCooperativeKernelMultiDevice =
      runtime_entry<MultiDeviceLaunch>("cudaLaunchCooperativeKernelMultiDevice");
  const auto cudaSetDoubleForDevice = runtime_entry<SetDouble>("cudaSetDoubleForDevice");
  const auto cudaSetDoubleForHost = runtime_entry<SetDouble>("cudaSetDoubleForHost");
  LaunchParams list[2] = {};
  cudaStream_t streams[2] = {};
  int* out = nullptr;
  void* args[] = {&out};
  for (int d = 0; d < devices && d < 2; ++d) {
    EMU_CHECK(cudaSetDevice(d));
    EMU_CHECK(cudaStreamCreate(&streams[d]));
    list[d].func = reinterpret_cast<void*>(grid_kernel);
    list[d].gridDim = dim3(8);
    list[d].blockDim = dim3(64);
    list[d].args = args;
    list[d].stream = streams[d];
  }
  EMU_CHECK(cudaSetDevice(0));
  const unsigned int used = devices >= 2 ? 2 : 1;
  EMU_CHECK(cudaLaunchCooperativeKernelMultiDevice(list, used, 0));
  if (used == 2) {
    LaunchParams same_device[2] = {list[0], list[0]};
    EMU_EXPECT_ERROR(cudaLaunchCooperativeKernelMultiDevice(same_device, 2, 0),
                     cudaErrorInvalidDevice);
  }
  EMU_CHECK(cudaDeviceSynchronize());
  ok();
  double value = 1.5;
  EMU_CHECK(cudaSetDoubleForDevice(&value));
  EMU_CHECK(cudaSetDoubleForHost(&value));
  EMU_REQUIRE(value == 1.5);
  ok();
}

}  // namespace

int main() {
  int devices = 0;
  EMU_CHECK(cudaGetDeviceCount(&devices));
  symbol_copy_nodes();
  child_graph_update();
  event_time_v2();
  device_queries(devices);
  notifications();
  batch_3d();
  multi_device_cooperative(devices);
  std::printf("runtime_breadth: %d checks passed on %d devices\n", checks, devices);
  return 0;
}
