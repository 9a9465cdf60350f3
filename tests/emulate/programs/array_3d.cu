// After NVIDIA's simpleTexture3D, simpleLayeredTexture and simpleCubemapTexture: a 3D array, a
// layered 2D array and a cubemap, filled and read back with cudaMemcpy3D[Async] (extents in
// elements of the array, pitched pointers on the other end, positions into both), textures on
// them read by kernels, a 3D copy through cudaMalloc3D memory and cudaMemcpy3DPeer. Invalid
// extents (a cubemap whose width differs from its height, a layered array without layers) are
// refused.
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "emu_check.h"

__global__ void sample_3d_kernel(float* out, cudaTextureObject_t volume, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = tex3D<float>(volume, i + 0.5f, 0.5f, 0.5f);
}

__global__ void sample_layers_kernel(float* out, cudaTextureObject_t layers, int layer, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = tex2DLayered<float>(layers, i + 0.5f, 0.5f, layer);
}

int main() {
  constexpr int kW = 16, kH = 8, kD = 4;
  std::vector<float> volume(kW * kH * kD);
  for (size_t i = 0; i < volume.size(); ++i) volume[i] = float(i);
  const cudaChannelFormatDesc channel = cudaCreateChannelDesc<float>();

  // The 3D array: host → array, array → cudaMalloc3D memory (at z = 1, y = 2), → host.
  cudaArray_t array = nullptr;
  EMU_CHECK(cudaMalloc3DArray(&array, &channel, make_cudaExtent(kW, kH, kD)));
  cudaMemcpy3DParms up{};
  up.srcPtr = make_cudaPitchedPtr(volume.data(), kW * sizeof(float), kW, kH);
  up.dstArray = array;
  up.extent = make_cudaExtent(kW, kH, kD);
  up.kind = cudaMemcpyHostToDevice;
  EMU_CHECK(cudaMemcpy3D(&up));
  cudaPitchedPtr device{};
  EMU_CHECK(cudaMalloc3D(&device, make_cudaExtent(kW * sizeof(float), kH, kD)));
  cudaMemcpy3DParms across{};
  across.srcArray = array;
  across.srcPos = make_cudaPos(0, 2, 1);
  across.dstPtr = device;
  across.extent = make_cudaExtent(kW, kH - 2, kD - 1);
  across.kind = cudaMemcpyDeviceToDevice;
  EMU_CHECK(cudaMemcpy3D(&across));
  std::vector<float> back(kW * (kH - 2) * (kD - 1), -1.0f);
  cudaMemcpy3DParms down{};
  down.srcPtr = device;
  down.dstPtr = make_cudaPitchedPtr(back.data(), kW * sizeof(float), kW, kH - 2);
  down.extent = make_cudaExtent(kW * sizeof(float), kH - 2, kD - 1);  // bytes: no array
  down.kind = cudaMemcpyDeviceToHost;
  EMU_CHECK(cudaMemcpy3D(&down));
  for (int z = 0; z < kD - 1; ++z) {
    for (int y = 0; y < kH - 2; ++y) {
      EMU_REQUIRE(std::memcmp(&back[(z * (kH - 2) + y) * kW], &volume[((z + 1) * kH + y + 2) * kW],
                              kW * sizeof(float)) == 0);
    }
  }
  // A region past the array's end is refused.
  across.srcPos = make_cudaPos(1, 2, 1);
  across.extent = make_cudaExtent(kW, kH - 2, kD - 1);
  EMU_EXPECT_ERROR(cudaMemcpy3D(&across), cudaErrorInvalidValue);
  // Offsets so large that a sum would wrap around: refused, never a wild pointer.
  EMU_EXPECT_ERROR(cudaMemcpy2DToArray(array, SIZE_MAX - 10, 0, volume.data(), kW * sizeof(float),
                                       20, 1, cudaMemcpyHostToDevice),
                   cudaErrorInvalidValue);
  up.srcPos = make_cudaPos(0, SIZE_MAX / 8, 0);  // a host end: nothing else would catch it
  up.extent = make_cudaExtent(kW, 1, 1);
  EMU_EXPECT_ERROR(cudaMemcpy3D(&up), cudaErrorInvalidValue);
  EMU_EXPECT_ERROR(cudaGetLastError(), cudaErrorInvalidValue);  // read and cleared

  cudaResourceDesc resource{};
  resource.resType = cudaResourceTypeArray;
  resource.res.array.array = array;
  cudaTextureDesc point{};
  cudaTextureObject_t volume_texture = 0;
  EMU_CHECK(cudaCreateTextureObject(&volume_texture, &resource, &point, nullptr));
  float* out = nullptr;
  EMU_CHECK(cudaMalloc(&out, kW * sizeof(float)));
  sample_3d_kernel<<<1, kW>>>(out, volume_texture, kW);
  EMU_CHECK(cudaGetLastError());

  // A layered 2D array of 3 layers: layer 2 written asynchronously on a stream, read back.
  cudaArray_t layered = nullptr;
  EMU_CHECK(cudaMalloc3DArray(&layered, &channel, make_cudaExtent(kW, kH, 3), cudaArrayLayered));
  cudaStream_t stream = nullptr;
  EMU_CHECK(cudaStreamCreate(&stream));
  cudaMemcpy3DParms layer_up{};
  layer_up.srcPtr = make_cudaPitchedPtr(volume.data(), kW * sizeof(float), kW, kH);
  layer_up.dstArray = layered;
  layer_up.dstPos = make_cudaPos(0, 0, 2);
  layer_up.extent = make_cudaExtent(kW, kH, 1);
  layer_up.kind = cudaMemcpyHostToDevice;
  EMU_CHECK(cudaMemcpy3DAsync(&layer_up, stream));
  std::vector<float> layer_back(kW * kH, -1.0f);
  cudaMemcpy3DParms layer_down{};
  layer_down.srcArray = layered;
  layer_down.srcPos = make_cudaPos(0, 0, 2);
  layer_down.dstPtr = make_cudaPitchedPtr(layer_back.data(), kW * sizeof(float), kW, kH);
  layer_down.extent = make_cudaExtent(kW, kH, 1);
  layer_down.kind = cudaMemcpyDeviceToHost;
  EMU_CHECK(cudaMemcpy3DAsync(&layer_down, stream));
  EMU_CHECK(cudaStreamSynchronize(stream));
  EMU_REQUIRE(std::memcmp(layer_back.data(), volume.data(), kW * kH * sizeof(float)) == 0);
  resource.res.array.array = layered;
  cudaTextureObject_t layers_texture = 0;
  EMU_CHECK(cudaCreateTextureObject(&layers_texture, &resource, &point, nullptr));
  sample_layers_kernel<<<1, kW, 0, stream>>>(out, layers_texture, 2, kW);
  EMU_CHECK(cudaGetLastError());

  // A cubemap (6 faces of 8 x 8) with surface load/store, face 5 by a peer copy.
  cudaArray_t cubemap = nullptr;
  EMU_CHECK(cudaMalloc3DArray(&cubemap, &channel, make_cudaExtent(8, 8, 6),
                              cudaArrayCubemap | cudaArraySurfaceLoadStore));
  cudaMemcpy3DPeerParms peer{};
  peer.srcPtr = make_cudaPitchedPtr(volume.data(), 8 * sizeof(float), 8, 8);
  peer.dstArray = cubemap;
  peer.dstPos = make_cudaPos(0, 0, 5);
  peer.extent = make_cudaExtent(8, 8, 1);
  EMU_CHECK(cudaMemcpy3DPeer(&peer));
  cudaExtent extent{};
  unsigned flags = 0;
  EMU_CHECK(cudaArrayGetInfo(nullptr, &extent, &flags, cubemap));
  EMU_REQUIRE(extent.width == 8 && extent.depth == 6 &&
              flags == (cudaArrayCubemap | cudaArraySurfaceLoadStore));

  // Refused extents: a cubemap of 8 x 4, a layered array with 0 layers, a 3D array of 16385.
  cudaArray_t refused = nullptr;
  EMU_EXPECT_ERROR(
      cudaMalloc3DArray(&refused, &channel, make_cudaExtent(8, 4, 6), cudaArrayCubemap),
      cudaErrorInvalidValue);
  EMU_EXPECT_ERROR(
      cudaMalloc3DArray(&refused, &channel, make_cudaExtent(8, 8, 0), cudaArrayLayered),
      cudaErrorInvalidValue);
  EMU_EXPECT_ERROR(cudaMalloc3DArray(&refused, &channel, make_cudaExtent(16385, 4, 4)),
                   cudaErrorInvalidValue);

  // cudaMemset3D over the whole cudaMalloc3D volume (width in bytes), one value read back from
  // slice 3, row 1.
  EMU_CHECK(cudaMemset3D(device, 0x3f, make_cudaExtent(kW * sizeof(float), kH, kD)));
  unsigned char probe[4] = {};
  EMU_CHECK(cudaMemcpy(probe, static_cast<char*>(device.ptr) + 3 * device.pitch * kH + device.pitch,
                       sizeof probe, cudaMemcpyDeviceToHost));
  EMU_REQUIRE(probe[0] == 0x3f && probe[3] == 0x3f);

  EMU_CHECK(cudaDeviceSynchronize());
  EMU_CHECK(cudaDestroyTextureObject(layers_texture));
  EMU_CHECK(cudaDestroyTextureObject(volume_texture));
  EMU_CHECK(cudaFreeArray(cubemap));
  EMU_CHECK(cudaFreeArray(layered));
  EMU_CHECK(cudaFreeArray(array));
  EMU_CHECK(cudaFree(device.ptr));
  EMU_CHECK(cudaFree(out));
  EMU_CHECK(cudaStreamDestroy(stream));
  std::printf("array_3d: 3D, layered and cubemap round trips ok\n");
  return 0;
}
