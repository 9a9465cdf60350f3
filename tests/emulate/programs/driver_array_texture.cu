// After NVIDIA's simpleTextureDrv: CUDA arrays and texture/surface objects through the driver
// API (cuArrayCreate, cuArray3DCreate, cuMemcpy2D/3D with array ends, cuMemcpyHtoA/AtoH/AtoA/
// AtoD/DtoA, cuTexObjectCreate, cuSurfObjectCreate), sharing the runtime's state: the runtime
// copies out of a CUarray and launches a kernel with the driver's texture object.
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>
#include <vector>

#include "emu_driver_check.h"

__global__ void read_texture_kernel(float* out, CUtexObject texture, int width) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  if (x < width) out[x] = tex2D<float>(texture, x + 0.5f, 0.5f);
}

int main() {
  constexpr int kWidth = 32;
  constexpr int kHeight = 16;
  constexpr size_t kRow = kWidth * sizeof(float);
  CUdevice device;
  current_primary_context(&device);

  std::vector<float> image(kWidth * kHeight);
  for (size_t i = 0; i < image.size(); ++i) image[i] = 2.0f * i + 1.0f;

  CUDA_ARRAY_DESCRIPTOR desc{};
  desc.Width = kWidth;
  desc.Height = kHeight;
  desc.Format = CU_AD_FORMAT_FLOAT;
  desc.NumChannels = 1;
  CUarray array;
  CU_CHECK(cuArrayCreate(&array, &desc));
  CUDA_MEMCPY2D up{};
  up.srcMemoryType = CU_MEMORYTYPE_HOST;
  up.srcHost = image.data();
  up.srcPitch = kRow;
  up.dstMemoryType = CU_MEMORYTYPE_ARRAY;
  up.dstArray = array;
  up.WidthInBytes = kRow;
  up.Height = kHeight;
  CU_CHECK(cuMemcpy2D(&up));
  CUDA_ARRAY_DESCRIPTOR got{};
  CU_CHECK(cuArrayGetDescriptor(&got, array));
  EMU_REQUIRE(got.Width == kWidth && got.Height == kHeight && got.Format == CU_AD_FORMAT_FLOAT &&
              got.NumChannels == 1);

  // The runtime reads the driver's array (one state): rows 3..4.
  std::vector<float> rows(2 * kWidth, -1.0f);
  EMU_CHECK(cudaMemcpy2DFromArray(rows.data(), kRow, reinterpret_cast<cudaArray_t>(array), 0, 3,
                                  kRow, 2, cudaMemcpyDeviceToHost));
  EMU_REQUIRE(std::memcmp(rows.data(), &image[3 * kWidth], rows.size() * sizeof(float)) == 0);

  // Linear copies: array → array (AtoA), array → device (AtoD), device → array (DtoA), → host.
  CUarray second;
  CU_CHECK(cuArrayCreate(&second, &desc));
  CU_CHECK(cuMemcpyAtoA(second, 0, array, 0, kRow * kHeight));
  CUdeviceptr linear;
  CU_CHECK(cuMemAlloc(&linear, kRow * kHeight));
  CU_CHECK(cuMemcpyAtoD(linear, second, kRow, kRow));  // row 1
  CU_CHECK(cuMemcpyDtoA(second, 0, linear, kRow));     // into row 0
  std::vector<float> back(kWidth * kHeight, -1.0f);
  CU_CHECK(cuMemcpyAtoH(back.data(), second, 0, kRow * kHeight));
  EMU_REQUIRE(std::memcmp(&back[0], &image[kWidth], kRow) == 0);
  EMU_REQUIRE(std::memcmp(&back[kWidth], &image[kWidth], (kHeight - 1) * kRow) == 0);
  CU_CHECK(cuMemcpyHtoA(second, kRow, image.data(), kRow));  // row 1 = row 0 of the image
  CU_CHECK(cuMemcpyAtoH(back.data(), second, kRow, kRow));
  EMU_REQUIRE(std::memcmp(back.data(), image.data(), kRow) == 0);

  // A texture object on the array, used by a runtime launch; its resource read back.
  CUDA_RESOURCE_DESC resource{};
  resource.resType = CU_RESOURCE_TYPE_ARRAY;
  resource.res.array.hArray = array;
  CUDA_TEXTURE_DESC texture_desc{};
  texture_desc.addressMode[0] = CU_TR_ADDRESS_MODE_CLAMP;
  texture_desc.addressMode[1] = CU_TR_ADDRESS_MODE_CLAMP;
  texture_desc.filterMode = CU_TR_FILTER_MODE_POINT;
  CUtexObject texture;
  CU_CHECK(cuTexObjectCreate(&texture, &resource, &texture_desc, nullptr));
  CUDA_RESOURCE_DESC got_resource{};
  CU_CHECK(cuTexObjectGetResourceDesc(&got_resource, texture));
  EMU_REQUIRE(got_resource.resType == CU_RESOURCE_TYPE_ARRAY &&
              got_resource.res.array.hArray == array);
  float* out = nullptr;
  EMU_CHECK(cudaMalloc(&out, kRow));
  read_texture_kernel<<<1, kWidth>>>(out, texture, kWidth);
  EMU_CHECK(cudaGetLastError());
  EMU_CHECK(cudaDeviceSynchronize());

  // A layered 3D array with surface load/store: cuMemcpy3D into layer 1, a surface object.
  CUDA_ARRAY3D_DESCRIPTOR desc3{};
  desc3.Width = kWidth;
  desc3.Height = kHeight;
  desc3.Depth = 2;
  desc3.Format = CU_AD_FORMAT_FLOAT;
  desc3.NumChannels = 1;
  desc3.Flags = CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_SURFACE_LDST;
  CUarray layered;
  CU_CHECK(cuArray3DCreate(&layered, &desc3));
  CUDA_MEMCPY3D copy3{};
  copy3.srcMemoryType = CU_MEMORYTYPE_HOST;
  copy3.srcHost = image.data();
  copy3.srcPitch = kRow;
  copy3.srcHeight = kHeight;
  copy3.dstMemoryType = CU_MEMORYTYPE_ARRAY;
  copy3.dstArray = layered;
  copy3.dstZ = 1;
  copy3.WidthInBytes = kRow;
  copy3.Height = kHeight;
  copy3.Depth = 1;
  CU_CHECK(cuMemcpy3D(&copy3));
  std::vector<float> layer(kWidth * kHeight, -1.0f);
  CUDA_MEMCPY3D down3{};
  down3.srcMemoryType = CU_MEMORYTYPE_ARRAY;
  down3.srcArray = layered;
  down3.srcZ = 1;
  down3.dstMemoryType = CU_MEMORYTYPE_HOST;
  down3.dstHost = layer.data();
  down3.dstPitch = kRow;
  down3.dstHeight = kHeight;
  down3.WidthInBytes = kRow;
  down3.Height = kHeight;
  down3.Depth = 1;
  CU_CHECK(cuMemcpy3D(&down3));
  EMU_REQUIRE(std::memcmp(layer.data(), image.data(), kRow * kHeight) == 0);
  CUDA_ARRAY3D_DESCRIPTOR got3{};
  CU_CHECK(cuArray3DGetDescriptor(&got3, layered));
  EMU_REQUIRE(got3.Depth == 2 && got3.Flags == desc3.Flags);
  resource.res.array.hArray = layered;
  CUsurfObject surface;
  CU_CHECK(cuSurfObjectCreate(&surface, &resource));
  // Refusals: a surface on an array without CUDA_ARRAY3D_SURFACE_LDST, a 3-channel format.
  resource.res.array.hArray = array;
  CUsurfObject refused_surface;
  EMU_REQUIRE(cuSurfObjectCreate(&refused_surface, &resource) == CUDA_ERROR_INVALID_VALUE);
  desc.NumChannels = 3;
  CUarray refused_array;
  EMU_REQUIRE(cuArrayCreate(&refused_array, &desc) == CUDA_ERROR_INVALID_VALUE);

  CU_CHECK(cuSurfObjectDestroy(surface));
  CU_CHECK(cuTexObjectDestroy(texture));
  CU_CHECK(cuArrayDestroy(layered));
  CU_CHECK(cuArrayDestroy(second));
  CU_CHECK(cuArrayDestroy(array));
  EMU_REQUIRE(cuArrayDestroy(array) != CUDA_SUCCESS);
  CU_CHECK(cuMemFree(linear));
  EMU_CHECK(cudaFree(out));
  CU_CHECK(cuDevicePrimaryCtxRelease(device));
  std::printf("driver_array_texture: round trips ok\n");
  return 0;
}
