// CUDA arrays, mipmapped arrays, texture and surface objects (cudart_array.cc), shared by the
// runtime entry points and the driver API (cuda_driver_array.cc): a CUarray is a cudaArray_t, a
// CUmipmappedArray a cudaMipmappedArray_t, a CUtexObject a cudaTextureObject_t.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace powertrain::emu::detail {

/// What an array handle stands for: its format, extent as created (0 for absent dimensions),
/// flags and its storage (rows of width × element_bytes, height rows per slice, depth slices,
/// no padding), a device allocation accounted like cudaMalloc.
struct ArrayView {
  cudaChannelFormatDesc desc{};
  cudaExtent extent{};  // as created: height 0 for 1D, depth 0 for 2D
  unsigned flags = 0;
  int device = 0;
  std::size_t element_bytes = 0;
  unsigned char* storage = nullptr;
  std::size_t rows() const { return extent.height == 0 ? 1 : extent.height; }
  std::size_t slices() const { return extent.depth == 0 ? 1 : extent.depth; }
  std::size_t row_bytes() const { return extent.width * element_bytes; }
};

/// The live array of a handle; false (nothing reported) for a forged, freed or released one.
bool array_view(cudaArray_const_t array, ArrayView* out);

/// Bytes per element of a channel format, or 0 when the format is invalid (channels of unequal or
/// unsupported sizes, gaps, an unknown kind); `why` says what is wrong.
std::size_t element_bytes_of(const cudaChannelFormatDesc& desc, const char** why);

/// cudaMalloc3DArray's work (`api` names the record and messages): validates like the runtime
/// and allocates accounted storage on the current device.
cudaError_t create_array(cudaArray_t* out, const cudaChannelFormatDesc* desc, cudaExtent extent,
                         unsigned flags, const char* api);
cudaError_t destroy_array(cudaArray_t array, const char* api);
cudaError_t create_mipmapped_array(cudaMipmappedArray_t* out, const cudaChannelFormatDesc* desc,
                                   cudaExtent extent, unsigned levels, unsigned flags,
                                   const char* api);
cudaError_t destroy_mipmapped_array(cudaMipmappedArray_t mipmap, const char* api);
cudaError_t mipmapped_array_level(cudaArray_t* out, cudaMipmappedArray_const_t mipmap,
                                  unsigned level, const char* api);

/// One end of a 3D copy: an array (offsets in bytes, rows, slices) or memory with a row pitch
/// and rows per slice (`pointer` NULL for an array end).
struct CopyEnd {
  cudaArray_const_t array = nullptr;
  void* pointer = nullptr;
  std::size_t pitch = 0;       // memory: bytes per row
  std::size_t slice_rows = 0;  // memory: rows per slice
  std::size_t x_bytes = 0;
  std::size_t y = 0;
  std::size_t z = 0;
};

/// Copies `width_bytes` × `height` × `depth` between two ends (either may be an array), checking
/// that each array contains the region; recorded and timed as a runtime copy named `api`. `kind`
/// is corrected for array ends (an array is always device memory), as the runtime does.
cudaError_t copy_ends(const CopyEnd& dst, const CopyEnd& src, std::size_t width_bytes,
                      std::size_t height, std::size_t depth, cudaMemcpyKind kind,
                      cudaStream_t stream, bool async, bool per_thread, const char* api);

/// Texture and surface objects: validated and kept; `view` may be NULL.
cudaError_t create_texture_object(cudaTextureObject_t* out, const cudaResourceDesc* resource,
                                  const cudaTextureDesc* texture, const cudaResourceViewDesc* view,
                                  const char* api);
cudaError_t destroy_texture_object(cudaTextureObject_t object, const char* api);
/// Any output may be NULL.
cudaError_t texture_object_descs(cudaTextureObject_t object, cudaResourceDesc* resource,
                                 cudaTextureDesc* texture, cudaResourceViewDesc* view,
                                 const char* api);
cudaError_t create_surface_object(cudaSurfaceObject_t* out, const cudaResourceDesc* resource,
                                  const char* api);
cudaError_t destroy_surface_object(cudaSurfaceObject_t object, const char* api);
cudaError_t surface_object_desc(cudaSurfaceObject_t object, cudaResourceDesc* resource,
                                const char* api);

}  // namespace powertrain::emu::detail
