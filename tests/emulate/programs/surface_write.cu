// nvcc-flags: -Wno-deprecated-declarations
// After NVIDIA's simpleSurfaceWrite: a kernel writes a CUDA array through a surface object, the
// array is read back. The deprecated 1D copies (cudaMemcpyToArray/FromArray/ArrayToArray, still
// exported and used by older samples) carry the data round trip; a surface on an array made
// without cudaArraySurfaceLoadStore is refused.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>
#include <vector>

#include "emu_check.h"

__global__ void surface_write_kernel(cudaSurfaceObject_t surface, int width, int height) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x < width && y < height) surf2Dwrite(float(x + y), surface, x * sizeof(float), y);
}

int main() {
  constexpr int kWidth = 32;
  constexpr int kHeight = 16;
  constexpr size_t kBytes = kWidth * kHeight * sizeof(float);
  const cudaChannelFormatDesc channel =
      cudaCreateChannelDesc(32, 0, 0, 0, cudaChannelFormatKindFloat);
  cudaArray_t array = nullptr;
  EMU_CHECK(cudaMallocArray(&array, &channel, kWidth, kHeight, cudaArraySurfaceLoadStore));
  std::vector<float> input(kWidth * kHeight);
  for (int i = 0; i < kWidth * kHeight; ++i) input[i] = 1.5f * i;
  EMU_CHECK(cudaMemcpyToArray(array, 0, 0, input.data(), kBytes, cudaMemcpyHostToDevice));

  cudaResourceDesc resource{};
  resource.resType = cudaResourceTypeArray;
  resource.res.array.array = array;
  cudaSurfaceObject_t surface = 0;
  EMU_CHECK(cudaCreateSurfaceObject(&surface, &resource));
  cudaResourceDesc got{};
  EMU_CHECK(cudaGetSurfaceObjectResourceDesc(&got, surface));
  EMU_REQUIRE(got.resType == cudaResourceTypeArray && got.res.array.array == array);
  cudaStream_t stream = nullptr;
  EMU_CHECK(cudaStreamCreate(&stream));
  surface_write_kernel<<<dim3(kWidth / 8, kHeight / 8), dim3(8, 8), 0, stream>>>(surface, kWidth,
                                                                                 kHeight);
  EMU_CHECK(cudaGetLastError());
  EMU_CHECK(cudaStreamSynchronize(stream));

  // Rows 2..3 from the array through a second array (offsets: 0 bytes, row 2), asynchronously.
  cudaArray_t rows = nullptr;
  EMU_CHECK(cudaMallocArray(&rows, &channel, kWidth, 2));
  EMU_CHECK(cudaMemcpyArrayToArray(rows, 0, 0, array, 0, 2, 2 * kWidth * sizeof(float),
                                   cudaMemcpyDeviceToDevice));
  std::vector<float> back(2 * kWidth, -1.0f);
  EMU_CHECK(cudaMemcpyFromArrayAsync(back.data(), rows, 0, 0, back.size() * sizeof(float),
                                     cudaMemcpyDeviceToHost, stream));
  EMU_CHECK(cudaStreamSynchronize(stream));
  EMU_REQUIRE(std::memcmp(back.data(), &input[2 * kWidth], back.size() * sizeof(float)) == 0);
  // Beyond the end: refused.
  EMU_EXPECT_ERROR(
      cudaMemcpyFromArray(back.data(), rows, 4, 1, kWidth * sizeof(float), cudaMemcpyDeviceToHost),
      cudaErrorInvalidValue);

  // A surface needs cudaArraySurfaceLoadStore.
  cudaSurfaceObject_t refused = 0;
  resource.res.array.array = rows;
  EMU_EXPECT_ERROR(cudaCreateSurfaceObject(&refused, &resource), cudaErrorInvalidValue);

  std::vector<float> output(kWidth * kHeight);
  EMU_CHECK(cudaMemcpyFromArray(output.data(), array, 0, 0, kBytes, cudaMemcpyDeviceToHost));
  EMU_CHECK(cudaDestroySurfaceObject(surface));
  EMU_CHECK(cudaFreeArray(rows));
  EMU_CHECK(cudaFreeArray(array));
  EMU_CHECK(cudaStreamDestroy(stream));
  std::printf("surface_write: round trip ok, output[%d] %.1f\n", kWidth + 1, output[kWidth + 1]);
  return 0;
}
