// After NVIDIA's simpleTexture (and the calls of convolutionTexture, boxFilter, bindlessTexture):
// a 2D float CUDA array filled with cudaMemcpy2DToArray, read by a kernel through a texture
// object (normalized coordinates, linear filtering, wrap), the result copied back. Under the
// emulator kernels do not run, so the program checks what does not depend on them: the array's
// data round trip (host → array → array → host), the descriptors read back from the objects,
// memory accounting, mipmapped levels, pitch2D and linear textures, and the runtime's refusals.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>
#include <vector>

#include "emu_check.h"

__global__ void transform_kernel(float* out, int width, int height, float theta,
                                 cudaTextureObject_t texture) {
  const unsigned x = blockIdx.x * blockDim.x + threadIdx.x;
  const unsigned y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= width || y >= height) return;
  float u = x / float(width) - 0.5f;
  float v = y / float(height) - 0.5f;
  const float tu = u * cosf(theta) - v * sinf(theta) + 0.5f;
  const float tv = v * cosf(theta) + u * sinf(theta) + 0.5f;
  out[y * width + x] = tex2D<float>(texture, tu, tv);
}

int main() {
  constexpr int kWidth = 64;
  constexpr int kHeight = 32;
  constexpr size_t kBytes = kWidth * kHeight * sizeof(float);
  std::vector<float> image(kWidth * kHeight);
  for (int i = 0; i < kWidth * kHeight; ++i) image[i] = 0.25f * i;

  size_t free_before = 0, total = 0;
  EMU_CHECK(cudaMemGetInfo(&free_before, &total));
  const cudaChannelFormatDesc channel = cudaCreateChannelDesc<float>();
  cudaArray_t array = nullptr;
  EMU_CHECK(cudaMallocArray(&array, &channel, kWidth, kHeight));
  size_t free_after = 0;
  EMU_CHECK(cudaMemGetInfo(&free_after, &total));
  EMU_CHECK(cudaMemcpy2DToArray(array, 0, 0, image.data(), kWidth * sizeof(float),
                                kWidth * sizeof(float), kHeight, cudaMemcpyHostToDevice));

  cudaResourceDesc resource{};
  resource.resType = cudaResourceTypeArray;
  resource.res.array.array = array;
  cudaTextureDesc texture_desc{};
  texture_desc.addressMode[0] = cudaAddressModeWrap;
  texture_desc.addressMode[1] = cudaAddressModeWrap;
  texture_desc.filterMode = cudaFilterModeLinear;
  texture_desc.readMode = cudaReadModeElementType;
  texture_desc.normalizedCoords = 1;
  cudaTextureObject_t texture = 0;
  EMU_CHECK(cudaCreateTextureObject(&texture, &resource, &texture_desc, nullptr));

  float* out = nullptr;
  EMU_CHECK(cudaMalloc(&out, kBytes));
  transform_kernel<<<dim3(kWidth / 8, kHeight / 8), dim3(8, 8)>>>(out, kWidth, kHeight, 0.5f,
                                                                  texture);
  EMU_CHECK(cudaGetLastError());
  EMU_CHECK(cudaDeviceSynchronize());
  std::vector<float> result(kWidth * kHeight);
  EMU_CHECK(cudaMemcpy(result.data(), out, kBytes, cudaMemcpyDeviceToHost));

  // The array's data round trip: array → second array (2D, then the deprecated 1D form) → host.
  cudaArray_t copy = nullptr;
  EMU_CHECK(cudaMallocArray(&copy, &channel, kWidth, kHeight));
  EMU_CHECK(cudaMemcpy2DArrayToArray(copy, 0, 0, array, 0, 0, kWidth * sizeof(float), kHeight,
                                     cudaMemcpyDeviceToDevice));
  std::vector<float> back(kWidth * kHeight, -1.0f);
  EMU_CHECK(cudaMemcpy2DFromArray(back.data(), kWidth * sizeof(float), copy, 0, 0,
                                  kWidth * sizeof(float), kHeight, cudaMemcpyDeviceToHost));
  EMU_REQUIRE(std::memcmp(back.data(), image.data(), kBytes) == 0);
  // A sub-rectangle: columns 8..15 of rows 4..5 (offsets in bytes and rows).
  float corner[2][8];
  EMU_CHECK(cudaMemcpy2DFromArray(corner, sizeof corner[0], array, 8 * sizeof(float), 4,
                                  sizeof corner[0], 2, cudaMemcpyDeviceToHost));
  EMU_REQUIRE(corner[0][0] == image[4 * kWidth + 8] && corner[1][7] == image[5 * kWidth + 15]);

  // What the objects say about themselves.
  cudaChannelFormatDesc got_channel{};
  cudaExtent extent{};
  unsigned flags = 99;
  EMU_CHECK(cudaArrayGetInfo(&got_channel, &extent, &flags, array));
  EMU_REQUIRE(got_channel.x == 32 && got_channel.y == 0 &&
              got_channel.f == cudaChannelFormatKindFloat);
  EMU_REQUIRE(extent.width == kWidth && extent.height == kHeight && extent.depth == 0 &&
              flags == 0);
  cudaResourceDesc got_resource{};
  EMU_CHECK(cudaGetTextureObjectResourceDesc(&got_resource, texture));
  EMU_REQUIRE(got_resource.resType == cudaResourceTypeArray &&
              got_resource.res.array.array == array);
  cudaTextureDesc got_texture{};
  EMU_CHECK(cudaGetTextureObjectTextureDesc(&got_texture, texture));
  EMU_REQUIRE(got_texture.filterMode == cudaFilterModeLinear && got_texture.normalizedCoords == 1);

  // A pitched 2D texture over cudaMallocPitch memory and a linear one over cudaMalloc memory.
  float* pitched = nullptr;
  size_t pitch = 0;
  EMU_CHECK(
      cudaMallocPitch(reinterpret_cast<void**>(&pitched), &pitch, kWidth * sizeof(float), kHeight));
  cudaResourceDesc pitch_resource{};
  pitch_resource.resType = cudaResourceTypePitch2D;
  pitch_resource.res.pitch2D.devPtr = pitched;
  pitch_resource.res.pitch2D.desc = channel;
  pitch_resource.res.pitch2D.width = kWidth;
  pitch_resource.res.pitch2D.height = kHeight;
  pitch_resource.res.pitch2D.pitchInBytes = pitch;
  cudaTextureDesc point{};
  point.filterMode = cudaFilterModePoint;
  cudaTextureObject_t pitch_texture = 0;
  EMU_CHECK(cudaCreateTextureObject(&pitch_texture, &pitch_resource, &point, nullptr));
  cudaResourceDesc linear{};
  linear.resType = cudaResourceTypeLinear;
  linear.res.linear.devPtr = out;
  linear.res.linear.desc = channel;
  linear.res.linear.sizeInBytes = kBytes;
  cudaTextureObject_t linear_texture = 0;
  EMU_CHECK(cudaCreateTextureObject(&linear_texture, &linear, &point, nullptr));

  // Refused as the runtime refuses them: a three-channel format, linear filtering of integers
  // read as integers, a linear range beyond its allocation, a destroyed array.
  cudaResourceDesc bad = linear;
  bad.res.linear.desc = cudaCreateChannelDesc(32, 32, 32, 0, cudaChannelFormatKindFloat);
  cudaTextureObject_t refused = 0;
  EMU_EXPECT_ERROR(cudaCreateTextureObject(&refused, &bad, &point, nullptr), cudaErrorInvalidValue);
  cudaArray_t integers = nullptr;
  const cudaChannelFormatDesc int_channel = cudaCreateChannelDesc<int>();
  EMU_CHECK(cudaMallocArray(&integers, &int_channel, 16, 16));
  cudaResourceDesc int_resource{};
  int_resource.resType = cudaResourceTypeArray;
  int_resource.res.array.array = integers;
  EMU_EXPECT_ERROR(cudaCreateTextureObject(&refused, &int_resource, &texture_desc, nullptr),
                   cudaErrorInvalidValue);
  bad = linear;
  bad.res.linear.sizeInBytes = 2 * kBytes;
  EMU_EXPECT_ERROR(cudaCreateTextureObject(&refused, &bad, &point, nullptr), cudaErrorInvalidValue);
  EMU_CHECK(cudaFreeArray(integers));
  EMU_EXPECT_ERROR(cudaCreateTextureObject(&refused, &int_resource, &point, nullptr),
                   cudaErrorInvalidValue);
  EMU_EXPECT_ERROR(cudaFreeArray(integers), cudaErrorInvalidValue);
  EMU_EXPECT_ERROR(cudaGetLastError(), cudaErrorInvalidValue);

  // A mipmapped array: 4 levels of 64 x 32 (64x32, 32x16, 16x8, 8x4), level 2 round trip.
  cudaMipmappedArray_t mipmap = nullptr;
  EMU_CHECK(cudaMallocMipmappedArray(&mipmap, &channel, make_cudaExtent(kWidth, kHeight, 0), 4));
  cudaArray_t level2 = nullptr;
  EMU_CHECK(cudaGetMipmappedArrayLevel(&level2, mipmap, 2));
  EMU_CHECK(cudaArrayGetInfo(nullptr, &extent, nullptr, level2));
  EMU_REQUIRE(extent.width == 16 && extent.height == 8);
  EMU_CHECK(cudaMemcpy2DToArray(level2, 0, 0, image.data(), 16 * sizeof(float), 16 * sizeof(float),
                                8, cudaMemcpyHostToDevice));
  std::vector<float> level_back(16 * 8);
  EMU_CHECK(cudaMemcpy2DFromArray(level_back.data(), 16 * sizeof(float), level2, 0, 0,
                                  16 * sizeof(float), 8, cudaMemcpyDeviceToHost));
  EMU_REQUIRE(std::memcmp(level_back.data(), image.data(), level_back.size() * sizeof(float)) == 0);
  EMU_EXPECT_ERROR(cudaGetMipmappedArrayLevel(&level2, mipmap, 4), cudaErrorInvalidValue);
  cudaResourceDesc mip_resource{};
  mip_resource.resType = cudaResourceTypeMipmappedArray;
  mip_resource.res.mipmap.mipmap = mipmap;
  texture_desc.mipmapFilterMode = cudaFilterModeLinear;
  texture_desc.maxMipmapLevelClamp = 3.0f;
  cudaTextureObject_t mip_texture = 0;
  EMU_CHECK(cudaCreateTextureObject(&mip_texture, &mip_resource, &texture_desc, nullptr));

  EMU_CHECK(cudaDestroyTextureObject(mip_texture));
  EMU_CHECK(cudaDestroyTextureObject(linear_texture));
  EMU_CHECK(cudaDestroyTextureObject(pitch_texture));
  EMU_CHECK(cudaDestroyTextureObject(texture));
  EMU_EXPECT_ERROR(cudaDestroyTextureObject(texture), cudaErrorInvalidValue);
  EMU_CHECK(cudaFreeMipmappedArray(mipmap));
  EMU_CHECK(cudaFreeArray(copy));
  EMU_CHECK(cudaFreeArray(array));
  EMU_CHECK(cudaFree(pitched));
  EMU_CHECK(cudaFree(out));
  std::printf("texture_2d: array %zu bytes counted %zu, round trip ok, first result %.2f\n", kBytes,
              free_before - free_after, result[0]);
  return 0;
}
