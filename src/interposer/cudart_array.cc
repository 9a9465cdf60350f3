// CUDA arrays, mipmapped arrays, texture and surface objects. An array is a handle (tagged integer,
// never reused) over device storage allocated and accounted like cudaMalloc (a `malloc` record
// named by the creating API; cudaMemGetInfo counts it; backed by real memory up to the backed
// limit), laid out as rows of width × element bytes without padding, so data copied in comes back
// out. Copies to, from and between arrays go through the runtime's copy path (validated, recorded
// and timed as copies). Texture and surface objects are validated as the runtime does and kept
// for their getters; kernels that read them are recorded, never run.
#include "interposer/cudart_array.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "interposer/cudart_impl.h"
#include "interposer/cudart_internal.h"

namespace powertrain::emu::detail {
namespace {

constexpr std::uintptr_t kArrayTag = std::uintptr_t{0x4152} << 48;   // "AR"
constexpr std::uintptr_t kMipmapTag = std::uintptr_t{0x4d50} << 48;  // "MP"
constexpr std::uint64_t kTextureTag = std::uint64_t{0x5458} << 48;   // "TX"
constexpr std::uint64_t kSurfaceTag = std::uint64_t{0x5346} << 48;   // "SF"
constexpr std::uint64_t kIndexMask = (std::uint64_t{1} << 48) - 1;
// The runtime's documented limits of the emulated architecture (cudaDeviceProp, H100/A100).
constexpr std::size_t kMax1D = 131072;                            // maxTexture1D
constexpr std::size_t kMax2D[2] = {131072, 65536};                // maxTexture2D
constexpr std::size_t kMax3D = 16384;                             // maxTexture3D, each dimension
constexpr std::size_t kMaxLayers = 2048;                          // maxTexture2DLayered[2]
constexpr std::size_t kMaxCubemap = 32768;                        // maxTextureCubemap
constexpr std::size_t kMaxLinearElements = 268435456;             // maxTexture1DLinear
constexpr std::size_t kMaxPitch2D[3] = {131072, 65000, 2097120};  // maxTexture2DLinear
constexpr std::size_t kTextureAlignment = 512;                    // textureAlignment (bytes)
constexpr std::size_t kTexturePitchAlignment = 32;                // texturePitchAlignment (bytes)
constexpr unsigned kKnownArrayFlags =
    cudaArrayLayered | cudaArraySurfaceLoadStore | cudaArrayCubemap | cudaArrayTextureGather;
constexpr unsigned kUnbackedArrayFlags = cudaArraySparse | cudaArrayDeferredMapping;

struct Array {
  ArrayView view;
  std::size_t bytes = 0;  // storage size
  // The device allocation holding the storage (a mipmapped array's, for a level).
  const unsigned char* allocation = nullptr;
  std::size_t allocation_bytes = 0;
  void* allocation_mutable() const { return const_cast<unsigned char*>(allocation); }
  int mipmap = -1;  // index of the owning mipmapped array (a level), else -1
  bool live = true;
};

struct Mipmap {
  cudaChannelFormatDesc desc{};
  cudaExtent extent{};
  unsigned flags = 0;
  unsigned char* storage = nullptr;    // all levels, one allocation
  std::vector<std::uintptr_t> levels;  // array indices
  bool live = true;
};

struct Texture {
  cudaResourceDesc resource{};
  cudaTextureDesc texture{};
  cudaResourceViewDesc view{};
  bool live = true;
};

struct Surface {
  cudaResourceDesc resource{};
  bool live = true;
};

struct ArrayState {
  std::mutex mutex;
  std::vector<Array> arrays;
  std::vector<Mipmap> mipmaps;
  std::vector<Texture> textures;
  std::vector<Surface> surfaces;
};

ArrayState& arrays() {
  static auto* state = new ArrayState;  // never destroyed: calls arrive from atexit handlers
  return *state;
}

// Index of a tagged handle, or -1.
long long index_of(std::uint64_t bits, std::uint64_t tag, std::size_t size) {
  if ((bits & ~kIndexMask) != tag) return -1;
  const std::uint64_t index = bits & kIndexMask;
  return index < size ? static_cast<long long>(index) : -1;
}

// The live entry a tagged handle names, or nullptr.
template <typename T>
T* live_entry(std::vector<T>& entries, std::uint64_t bits, std::uint64_t tag) {
  const long long i = index_of(bits, tag, entries.size());
  if (i < 0 || !entries[static_cast<std::size_t>(i)].live) return nullptr;
  return &entries[static_cast<std::size_t>(i)];
}

// The error for a texture or surface object handle that names no live object.
cudaError_t object_not_live(const char* api, const char* kind, std::uint64_t object) {
  return misuse(
      api, cudaErrorInvalidValue,
      std::string(kind) + " " + pointer_text(reinterpret_cast<void*>(object)) + " is not live");
}

// Destroys the texture or surface object `object` (one of `entries`, tagged `tag`).
template <typename T>
cudaError_t retire_object(std::vector<T> ArrayState::*entries, std::uint64_t object,
                          std::uint64_t tag, const char* kind, const char* api) {
  ArrayState& s = arrays();
  std::lock_guard<std::mutex> lock(s.mutex);
  T* t = live_entry(s.*entries, object, tag);
  if (t == nullptr) return object_not_live(api, kind, object);
  t->live = false;
  return cudaSuccess;
}

// The array's allocation is still the one it was made with (cudaDeviceReset frees every device
// allocation; a later one of another size or place does not revive the handle).
bool storage_live(const Array& a) {
  const PointerInfo info = lookup_pointer(a.allocation);
  return info.known && info.base == reinterpret_cast<std::uintptr_t>(a.allocation) &&
         info.bytes == a.allocation_bytes;
}

std::string dims_text(cudaExtent e) {
  return std::to_string(e.width) + " x " + std::to_string(e.height) + " x " +
         std::to_string(e.depth);
}

// Checks an extent and its flags as cudaMalloc3DArray documents them; "" when valid.
std::string extent_problem(cudaExtent e, unsigned flags) {
  if (e.width == 0) return "width is 0";
  const bool layered = (flags & cudaArrayLayered) != 0;
  const bool cubemap = (flags & cudaArrayCubemap) != 0;
  if (cubemap) {
    if (e.width != e.height) return "a cubemap's width must equal its height";
    if (layered ? (e.depth == 0 || e.depth % 6 != 0) : e.depth != 6) {
      return layered ? "a layered cubemap's depth must be a multiple of 6"
                     : "a cubemap's depth must be 6";
    }
    if (e.width > kMaxCubemap) return "cubemap width exceeds " + std::to_string(kMaxCubemap);
    return "";
  }
  if (layered) {
    if (e.depth == 0 || e.depth > kMaxLayers) {
      return "a layered array needs 1 to " + std::to_string(kMaxLayers) + " layers (depth)";
    }
    if (e.width > kMax2D[0] / 4 || e.height > kMax2D[1] / 2) {
      return "layered width/height exceed 32768 x 32768";
    }
    return "";
  }
  if (e.height == 0 && e.depth != 0) return "a 1D array (height 0) must have depth 0";
  if (e.depth != 0) {
    if (e.width > kMax3D || e.height > kMax3D || e.depth > kMax3D) {
      return "3D extent exceeds " + std::to_string(kMax3D) + " per dimension";
    }
  } else if (e.height != 0) {
    if (e.width > kMax2D[0] || e.height > kMax2D[1]) return "2D extent exceeds 131072 x 65536";
  } else if (e.width > kMax1D) {
    return "1D width exceeds " + std::to_string(kMax1D);
  }
  return "";
}

std::size_t storage_bytes(const cudaExtent& e, std::size_t element) {
  return e.width * element * (e.height == 0 ? 1 : e.height) * (e.depth == 0 ? 1 : e.depth);
}

cudaArray_t array_handle(std::size_t index) {
  return reinterpret_cast<cudaArray_t>(kArrayTag | index);
}

std::string handle_text(const void* handle) { return pointer_text(handle); }

// The array behind a handle or misuse(`error`) naming it.
cudaError_t array_or_fail(cudaArray_const_t array, const char* api, ArrayView* out,
                          const char* role = "array") {
  if (array_view(array, out)) return cudaSuccess;
  return misuse(api, cudaErrorInvalidValue,
                std::string(role) + " " + handle_text(array) +
                    " is not a live CUDA array (never created, freed, or freed by "
                    "cudaDeviceReset)");
}

// Resource descriptions shared by textures and surfaces: "" when valid.
std::string resource_problem(const cudaResourceDesc& r, bool for_surface) {
  if (r.flags != 0) return "resource flags must be 0";
  ArrayView view;
  switch (r.resType) {
    case cudaResourceTypeArray:
      if (!array_view(r.res.array.array, &view)) {
        return "res.array.array " + handle_text(r.res.array.array) + " is not a live CUDA array";
      }
      if (for_surface && (view.flags & cudaArraySurfaceLoadStore) == 0) {
        return "the array was not created with cudaArraySurfaceLoadStore";
      }
      return "";
    case cudaResourceTypeMipmappedArray: {
      if (for_surface) return "a surface needs an array resource";
      ArrayState& s = arrays();
      std::lock_guard<std::mutex> lock(s.mutex);
      if (live_entry(s.mipmaps, reinterpret_cast<std::uintptr_t>(r.res.mipmap.mipmap),
                     kMipmapTag) == nullptr) {
        return "res.mipmap.mipmap " + handle_text(r.res.mipmap.mipmap) +
               " is not a live mipmapped array";
      }
      return "";
    }
    case cudaResourceTypeLinear:
    case cudaResourceTypePitch2D: {
      if (for_surface) return "a surface needs an array resource";
      const bool linear = r.resType == cudaResourceTypeLinear;
      void* pointer = linear ? r.res.linear.devPtr : r.res.pitch2D.devPtr;
      const cudaChannelFormatDesc& desc = linear ? r.res.linear.desc : r.res.pitch2D.desc;
      const char* why = "";
      const std::size_t element = element_bytes_of(desc, &why);
      if (element == 0) return std::string("invalid channel format: ") + why;
      const PointerInfo info = lookup_pointer(pointer);
      if (!info.known || !info.device_side) {
        return "devPtr " + pointer_text(pointer) + " is not device memory";
      }
      // A GPU's allocations start at least 512-aligned; the emulator's host-backed ones only
      // 256-aligned, so the alignment is checked as an offset into the allocation.
      if ((reinterpret_cast<std::uintptr_t>(pointer) - info.base) % kTextureAlignment != 0) {
        return "devPtr " + pointer_text(pointer) + " (offset " +
               std::to_string(reinterpret_cast<std::uintptr_t>(pointer) - info.base) +
               " into its allocation) is not aligned to textureAlignment (512)";
      }
      std::size_t extent = 0;
      if (linear) {
        const std::size_t size = r.res.linear.sizeInBytes;
        if (size == 0 || size % element != 0 || size / element > kMaxLinearElements) {
          return "sizeInBytes " + std::to_string(size) +
                 " is 0, not a multiple of the element size or above maxTexture1DLinear";
        }
        extent = size;
      } else {
        const auto& p = r.res.pitch2D;
        if (p.width == 0 || p.height == 0 || p.width > kMaxPitch2D[0] ||
            p.height > kMaxPitch2D[1]) {
          return "pitch2D extent " + std::to_string(p.width) + " x " + std::to_string(p.height) +
                 " is 0 or exceeds maxTexture2DLinear (131072 x 65000)";
        }
        if (p.pitchInBytes < p.width * element || p.pitchInBytes % kTexturePitchAlignment != 0 ||
            p.pitchInBytes > kMaxPitch2D[2]) {
          return "pitchInBytes " + std::to_string(p.pitchInBytes) +
                 " is below width x element size, not a multiple of texturePitchAlignment (32) "
                 "or above 2097120";
        }
        extent = p.pitchInBytes * (p.height - 1) + p.width * element;
      }
      if (extent > info.available) {
        return std::to_string(extent) + " bytes from devPtr overrun its allocation of " +
               std::to_string(info.bytes) + " bytes";
      }
      return "";
    }
  }
  return "unknown resType " + std::to_string(static_cast<int>(r.resType));
}

std::string texture_problem(const cudaResourceDesc& r, const cudaTextureDesc& t,
                            const cudaResourceViewDesc* view) {
  for (int i = 0; i < 3; ++i) {
    if (t.addressMode[i] < cudaAddressModeWrap || t.addressMode[i] > cudaAddressModeBorder) {
      return "addressMode[" + std::to_string(i) + "] " +
             std::to_string(static_cast<int>(t.addressMode[i])) + " is unknown";
    }
  }
  if (t.filterMode != cudaFilterModePoint && t.filterMode != cudaFilterModeLinear) {
    return "filterMode " + std::to_string(static_cast<int>(t.filterMode)) + " is unknown";
  }
  if (t.mipmapFilterMode != cudaFilterModePoint && t.mipmapFilterMode != cudaFilterModeLinear) {
    return "mipmapFilterMode " + std::to_string(static_cast<int>(t.mipmapFilterMode)) +
           " is unknown";
  }
  if (t.readMode != cudaReadModeElementType && t.readMode != cudaReadModeNormalizedFloat) {
    return "readMode " + std::to_string(static_cast<int>(t.readMode)) + " is unknown";
  }
  // The channel format the texture reads.
  cudaChannelFormatDesc desc{};
  ArrayView array;
  if (r.resType == cudaResourceTypeArray && array_view(r.res.array.array, &array)) {
    desc = array.desc;
  } else if (r.resType == cudaResourceTypeLinear) {
    desc = r.res.linear.desc;
  } else if (r.resType == cudaResourceTypePitch2D) {
    desc = r.res.pitch2D.desc;
  } else {
    desc.f = cudaChannelFormatKindFloat;  // mipmapped: checked at creation
  }
  const bool integer =
      desc.f == cudaChannelFormatKindSigned || desc.f == cudaChannelFormatKindUnsigned;
  // Linear filtering interpolates: the texture must return floating point.
  if (t.filterMode == cudaFilterModeLinear && integer && t.readMode == cudaReadModeElementType) {
    return "linear filtering of an integer format needs readMode cudaReadModeNormalizedFloat";
  }
  if (t.readMode == cudaReadModeNormalizedFloat && integer && desc.x > 16) {
    return "cudaReadModeNormalizedFloat applies to 8- and 16-bit integer formats only";
  }
  if (view != nullptr && r.resType != cudaResourceTypeArray &&
      r.resType != cudaResourceTypeMipmappedArray) {
    return "a resource view applies to array and mipmapped-array resources only";
  }
  return "";
}

}  // namespace

std::size_t element_bytes_of(const cudaChannelFormatDesc& d, const char** why) {
  const int bits[4] = {d.x, d.y, d.z, d.w};
  int channels = 0;
  for (int i = 0; i < 4; ++i) {
    if (bits[i] < 0) {
      *why = "negative channel size";
      return 0;
    }
    if (bits[i] == 0) continue;
    if (i != channels) {
      *why = "channels must be filled from x without gaps";
      return 0;
    }
    ++channels;
  }
  if (channels == 0) {
    *why = "no channel has a size";
    return 0;
  }
  if (channels == 3) {
    *why = "three-channel formats are not supported (use 1, 2 or 4 channels)";
    return 0;
  }
  for (int i = 1; i < channels; ++i) {
    if (bits[i] != bits[0]) {
      *why = "channels of unequal sizes";
      return 0;
    }
  }
  const int size = bits[0];
  switch (d.f) {
    case cudaChannelFormatKindSigned:
    case cudaChannelFormatKindUnsigned:
      if (size != 8 && size != 16 && size != 32) {
        *why = "integer channels must be 8, 16 or 32 bits";
        return 0;
      }
      break;
    case cudaChannelFormatKindFloat:
      if (size != 16 && size != 32) {
        *why = "float channels must be 16 or 32 bits";
        return 0;
      }
      break;
    case cudaChannelFormatKindUnsignedNormalized8X1:
    case cudaChannelFormatKindUnsignedNormalized8X2:
    case cudaChannelFormatKindUnsignedNormalized8X4:
    case cudaChannelFormatKindSignedNormalized8X1:
    case cudaChannelFormatKindSignedNormalized8X2:
    case cudaChannelFormatKindSignedNormalized8X4:
      if (size != 8) {
        *why = "an 8-bit normalized kind needs 8-bit channels";
        return 0;
      }
      break;
    case cudaChannelFormatKindUnsignedNormalized16X1:
    case cudaChannelFormatKindUnsignedNormalized16X2:
    case cudaChannelFormatKindUnsignedNormalized16X4:
    case cudaChannelFormatKindSignedNormalized16X1:
    case cudaChannelFormatKindSignedNormalized16X2:
    case cudaChannelFormatKindSignedNormalized16X4:
      if (size != 16) {
        *why = "a 16-bit normalized kind needs 16-bit channels";
        return 0;
      }
      break;
    default:
      *why = "the channel kind is none, planar (NV12) or block-compressed (not emulated)";
      return 0;
  }
  return static_cast<std::size_t>(channels * size / 8);
}

bool array_view(cudaArray_const_t array, ArrayView* out) {
  ArrayState& s = arrays();
  Array a;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    const Array* live = live_entry(s.arrays, reinterpret_cast<std::uintptr_t>(array), kArrayTag);
    if (live == nullptr) return false;
    a = *live;
  }
  if (!storage_live(a)) return false;
  *out = a.view;
  return true;
}

// The flags, channel format and extent of a new (mipmapped) array: the element size, or the error.
cudaError_t check_array_request(const cudaChannelFormatDesc& desc, cudaExtent extent,
                                unsigned flags, const char* api, std::size_t* element) {
  if ((flags & kUnbackedArrayFlags) != 0) {
    return fail(static_cast<cudaError_t>(
        report_unsupported(std::string(api) + "(cudaArraySparse/cudaArrayDeferredMapping)")));
  }
  if ((flags & ~kKnownArrayFlags) != 0) {
    return misuse(api, cudaErrorInvalidValue, "unknown flags " + std::to_string(flags));
  }
  const char* why = "";
  *element = element_bytes_of(desc, &why);
  if (*element == 0) return misuse(api, cudaErrorInvalidValue, std::string("desc: ") + why);
  const std::string problem = extent_problem(extent, flags);
  if (!problem.empty()) {
    return misuse(api, cudaErrorInvalidValue, "extent " + dims_text(extent) + ": " + problem);
  }
  return cudaSuccess;
}

cudaError_t create_array(cudaArray_t* out, const cudaChannelFormatDesc* desc, cudaExtent extent,
                         unsigned flags, const char* api) {
  if (out == nullptr || desc == nullptr) {
    return misuse(api, cudaErrorInvalidValue, "array or desc is NULL");
  }
  std::size_t element = 0;
  const cudaError_t checked = check_array_request(*desc, extent, flags, api, &element);
  if (checked != cudaSuccess) return checked;
  const std::size_t bytes = storage_bytes(extent, element);
  void* storage = nullptr;
  const cudaError_t error = allocate_on_device(&storage, bytes, current_device(), api);
  if (error != cudaSuccess) return error;
  Array a;
  a.view.desc = *desc;
  a.view.extent = extent;
  a.view.flags = flags;
  a.view.device = current_device();
  a.view.element_bytes = element;
  a.view.storage = static_cast<unsigned char*>(storage);
  a.bytes = bytes;
  a.allocation = a.view.storage;
  a.allocation_bytes = bytes;
  ArrayState& s = arrays();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.arrays.push_back(a);
  *out = array_handle(s.arrays.size() - 1);
  return cudaSuccess;
}

cudaError_t destroy_array(cudaArray_t array, const char* api) {
  if (array == nullptr) return cudaSuccess;  // as cudaFree(NULL)
  ArrayState& s = arrays();
  Array retired;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    Array* live = live_entry(s.arrays, reinterpret_cast<std::uintptr_t>(array), kArrayTag);
    if (live == nullptr) {
      return misuse(api, cudaErrorInvalidValue,
                    handle_text(array) + " is not a live CUDA array (double free or forged)");
    }
    Array& a = *live;
    if (a.mipmap >= 0) {
      return misuse(api, cudaErrorInvalidValue,
                    handle_text(array) +
                        " is a level of a mipmapped array; free it with cudaFreeMipmappedArray");
    }
    a.live = false;
    retired = a;
  }
  // After cudaDeviceReset the storage is already gone: the handle is simply retired.
  if (!storage_live(retired)) return cudaSuccess;
  return static_cast<cudaError_t>(free_device_memory(retired.view.storage, api));
}

cudaError_t create_mipmapped_array(cudaMipmappedArray_t* out, const cudaChannelFormatDesc* desc,
                                   cudaExtent extent, unsigned levels, unsigned flags,
                                   const char* api) {
  if (out == nullptr || desc == nullptr) {
    return misuse(api, cudaErrorInvalidValue, "mipmappedArray or desc is NULL");
  }
  std::size_t element = 0;
  const cudaError_t checked = check_array_request(*desc, extent, flags, api, &element);
  if (checked != cudaSuccess) return checked;
  // Layers (and a cubemap's six faces) do not shrink from level to level.
  const bool depth_is_layers = (flags & (cudaArrayLayered | cudaArrayCubemap)) != 0;
  std::size_t largest = std::max(extent.width, extent.height);
  if (!depth_is_layers) largest = std::max(largest, extent.depth);
  unsigned max_levels = 1;
  while ((largest >> max_levels) > 0) ++max_levels;
  if (levels == 0 || levels > max_levels) {
    return misuse(api, cudaErrorInvalidValue,
                  "numLevels " + std::to_string(levels) + " must be 1 to " +
                      std::to_string(max_levels) + " for extent " + dims_text(extent));
  }
  std::vector<cudaExtent> level_extents;
  std::size_t total = 0;
  for (unsigned level = 0; level < levels; ++level) {
    auto shrink = [level](std::size_t v) {
      return v == 0 ? 0 : std::max<std::size_t>(1, v >> level);
    };
    cudaExtent e{shrink(extent.width), shrink(extent.height),
                 depth_is_layers ? extent.depth : shrink(extent.depth)};
    level_extents.push_back(e);
    total += storage_bytes(e, element);
  }
  void* storage = nullptr;
  const cudaError_t error = allocate_on_device(&storage, total, current_device(), api);
  if (error != cudaSuccess) return error;
  ArrayState& s = arrays();
  std::lock_guard<std::mutex> lock(s.mutex);
  Mipmap m;
  m.desc = *desc;
  m.extent = extent;
  m.flags = flags;
  m.storage = static_cast<unsigned char*>(storage);
  std::size_t offset = 0;
  for (const cudaExtent& e : level_extents) {
    Array a;
    a.view.desc = *desc;
    a.view.extent = e;
    a.view.flags = flags;
    a.view.device = current_device();
    a.view.element_bytes = element;
    a.view.storage = m.storage + offset;
    a.bytes = storage_bytes(e, element);
    a.allocation = m.storage;
    a.allocation_bytes = total;
    a.mipmap = static_cast<int>(s.mipmaps.size());
    offset += a.bytes;
    m.levels.push_back(s.arrays.size());
    s.arrays.push_back(a);
  }
  s.mipmaps.push_back(std::move(m));
  *out = reinterpret_cast<cudaMipmappedArray_t>(kMipmapTag | (s.mipmaps.size() - 1));
  return cudaSuccess;
}

cudaError_t destroy_mipmapped_array(cudaMipmappedArray_t mipmap, const char* api) {
  if (mipmap == nullptr) return cudaSuccess;
  ArrayState& s = arrays();
  Array retired;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    Mipmap* live = live_entry(s.mipmaps, reinterpret_cast<std::uintptr_t>(mipmap), kMipmapTag);
    if (live == nullptr) {
      return misuse(api, cudaErrorInvalidValue,
                    handle_text(mipmap) + " is not a live mipmapped array (double free or forged)");
    }
    Mipmap& m = *live;
    m.live = false;
    for (const std::uintptr_t level : m.levels) s.arrays[level].live = false;
    retired = s.arrays[m.levels.front()];  // any level: they share the allocation
  }
  if (!storage_live(retired)) return cudaSuccess;
  return static_cast<cudaError_t>(free_device_memory(retired.allocation_mutable(), api));
}

cudaError_t mipmapped_array_level(cudaArray_t* out, cudaMipmappedArray_const_t mipmap,
                                  unsigned level, const char* api) {
  if (out == nullptr) return misuse(api, cudaErrorInvalidValue, "levelArray is NULL");
  ArrayState& s = arrays();
  std::lock_guard<std::mutex> lock(s.mutex);
  const Mipmap* live = live_entry(s.mipmaps, reinterpret_cast<std::uintptr_t>(mipmap), kMipmapTag);
  if (live == nullptr) {
    return misuse(api, cudaErrorInvalidValue,
                  handle_text(mipmap) + " is not a live mipmapped array");
  }
  const Mipmap& m = *live;
  if (level >= m.levels.size()) {
    return misuse(api, cudaErrorInvalidValue,
                  "level " + std::to_string(level) + " of a mipmapped array with " +
                      std::to_string(m.levels.size()) + " levels");
  }
  *out = array_handle(m.levels[level]);
  return cudaSuccess;
}

cudaError_t copy_ends(const CopyEnd& dst, const CopyEnd& src, std::size_t width_bytes,
                      std::size_t height, std::size_t depth, cudaMemcpyKind kind,
                      cudaStream_t stream, bool async, bool per_thread, const char* api) {
  if (kind < cudaMemcpyHostToHost || kind > cudaMemcpyDefault) {
    return misuse(api, cudaErrorInvalidMemcpyDirection,
                  "unknown cudaMemcpyKind " + std::to_string(static_cast<int>(kind)));
  }
  // An array is device memory whatever the kind says; the other end keeps what the kind says
  // about it (the runtime corrects the kind the same way).
  const bool src_host_by_kind = kind == cudaMemcpyHostToHost || kind == cudaMemcpyHostToDevice;
  const bool dst_host_by_kind = kind == cudaMemcpyHostToHost || kind == cudaMemcpyDeviceToHost;
  if (kind != cudaMemcpyDefault) {
    const bool src_host = src.array == nullptr && src_host_by_kind;
    const bool dst_host = dst.array == nullptr && dst_host_by_kind;
    kind = src_host ? (dst_host ? cudaMemcpyHostToHost : cudaMemcpyHostToDevice)
                    : (dst_host ? cudaMemcpyDeviceToHost : cudaMemcpyDeviceToDevice);
  }
  struct Resolved {
    unsigned char* base = nullptr;
    std::size_t pitch = 0;
    std::size_t slice = 0;
  };
  auto resolve = [&](const CopyEnd& end, const char* role, Resolved* out) -> cudaError_t {
    if (end.array != nullptr) {
      ArrayView a;
      const cudaError_t error = array_or_fail(end.array, api, &a, role);
      if (error != cudaSuccess) return error;
      // Written so that no sum can wrap around.
      if (end.x_bytes > a.row_bytes() || width_bytes > a.row_bytes() - end.x_bytes ||
          end.y > a.rows() || height > a.rows() - end.y || end.z > a.slices() ||
          depth > a.slices() - end.z) {
        return misuse(api, cudaErrorInvalidValue,
                      std::string(role) + " region (x " + std::to_string(end.x_bytes) +
                          " bytes + " + std::to_string(width_bytes) + ", y " +
                          std::to_string(end.y) + " + " + std::to_string(height) + ", z " +
                          std::to_string(end.z) + " + " + std::to_string(depth) +
                          ") exceeds the array's " + std::to_string(a.row_bytes()) + " bytes x " +
                          std::to_string(a.rows()) + " rows x " + std::to_string(a.slices()) +
                          " slices");
      }
      out->pitch = a.row_bytes();
      out->slice = a.row_bytes() * a.rows();
      out->base = a.storage + end.z * out->slice + end.y * out->pitch + end.x_bytes;
      return cudaSuccess;
    }
    if (end.pointer == nullptr) {
      return misuse(api, cudaErrorInvalidValue, std::string(role) + " is NULL");
    }
    if (height > 1 && end.pitch < width_bytes) {
      return misuse(api, cudaErrorInvalidPitchValue,
                    std::string(role) + " pitch " + std::to_string(end.pitch) +
                        " is below the width of " + std::to_string(width_bytes) + " bytes");
    }
    const std::size_t rows = std::max(end.slice_rows, height);
    out->pitch = end.pitch == 0 ? width_bytes : end.pitch;
    std::size_t offset = 0;
    std::size_t row_offset = 0;
    if (__builtin_mul_overflow(out->pitch, rows, &out->slice) ||
        __builtin_mul_overflow(end.z, out->slice, &offset) ||
        __builtin_mul_overflow(end.y, out->pitch, &row_offset) ||
        __builtin_add_overflow(offset, row_offset, &offset) ||
        __builtin_add_overflow(offset, end.x_bytes, &offset)) {
      return misuse(api, cudaErrorInvalidValue,
                    std::string(role) + " position overflows the address range");
    }
    out->base = static_cast<unsigned char*>(end.pointer) + offset;
    return cudaSuccess;
  };
  Resolved d;
  Resolved s;
  cudaError_t error = resolve(dst, "destination", &d);
  if (error != cudaSuccess) return error;
  error = resolve(src, "source", &s);
  if (error != cudaSuccess) return error;
  return impl::memcpy_3d(d.base, d.pitch, d.slice, s.base, s.pitch, s.slice, width_bytes, height,
                         depth, kind, stream, async, per_thread, api);
}

cudaError_t create_texture_object(cudaTextureObject_t* out, const cudaResourceDesc* resource,
                                  const cudaTextureDesc* texture, const cudaResourceViewDesc* view,
                                  const char* api) {
  if (out == nullptr || resource == nullptr || texture == nullptr) {
    return misuse(api, cudaErrorInvalidValue, "pTexObject, pResDesc or pTexDesc is NULL");
  }
  std::string problem = resource_problem(*resource, false);
  if (problem.empty()) problem = texture_problem(*resource, *texture, view);
  if (!problem.empty()) return misuse(api, cudaErrorInvalidValue, problem);
  Texture t;
  t.resource = *resource;
  t.texture = *texture;
  if (view != nullptr) t.view = *view;
  ArrayState& s = arrays();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.textures.push_back(t);
  *out = kTextureTag | (s.textures.size() - 1);
  return cudaSuccess;
}

cudaError_t destroy_texture_object(cudaTextureObject_t object, const char* api) {
  return retire_object(&ArrayState::textures, object, kTextureTag, "texture object", api);
}

cudaError_t texture_object_descs(cudaTextureObject_t object, cudaResourceDesc* resource,
                                 cudaTextureDesc* texture, cudaResourceViewDesc* view,
                                 const char* api) {
  ArrayState& s = arrays();
  std::lock_guard<std::mutex> lock(s.mutex);
  const Texture* t = live_entry(s.textures, object, kTextureTag);
  if (t == nullptr) return object_not_live(api, "texture object", object);
  if (resource != nullptr) *resource = t->resource;
  if (texture != nullptr) *texture = t->texture;
  if (view != nullptr) *view = t->view;
  return cudaSuccess;
}

cudaError_t create_surface_object(cudaSurfaceObject_t* out, const cudaResourceDesc* resource,
                                  const char* api) {
  if (out == nullptr || resource == nullptr) {
    return misuse(api, cudaErrorInvalidValue, "pSurfObject or pResDesc is NULL");
  }
  const std::string problem = resource_problem(*resource, true);
  if (!problem.empty()) return misuse(api, cudaErrorInvalidValue, problem);
  ArrayState& s = arrays();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.surfaces.push_back(Surface{*resource, true});
  *out = kSurfaceTag | (s.surfaces.size() - 1);
  return cudaSuccess;
}

cudaError_t destroy_surface_object(cudaSurfaceObject_t object, const char* api) {
  return retire_object(&ArrayState::surfaces, object, kSurfaceTag, "surface object", api);
}

cudaError_t surface_object_desc(cudaSurfaceObject_t object, cudaResourceDesc* resource,
                                const char* api) {
  if (resource == nullptr) return misuse(api, cudaErrorInvalidValue, "pResDesc is NULL");
  ArrayState& s = arrays();
  std::lock_guard<std::mutex> lock(s.mutex);
  const Surface* t = live_entry(s.surfaces, object, kSurfaceTag);
  if (t == nullptr) return object_not_live(api, "surface object", object);
  *resource = t->resource;
  return cudaSuccess;
}

}  // namespace powertrain::emu::detail

// ---- exported runtime entry points -------------------------------------------------------------

namespace detail = powertrain::emu::detail;
using detail::CopyEnd;
using detail::misuse;

namespace {

// A 2D region of an array at (x bytes, y rows) of layer 0.
CopyEnd array_end(cudaArray_const_t array, size_t x_bytes, size_t y) {
  CopyEnd end;
  end.array = array;
  end.x_bytes = x_bytes;
  end.y = y;
  return end;
}

CopyEnd memory_end(const void* pointer, size_t pitch) {
  CopyEnd end;
  end.pointer = const_cast<void*>(pointer);
  end.pitch = pitch;
  return end;
}

// The deprecated 1D copies address an array linearly from (x, y): the storage has no padding,
// so that is `count` contiguous bytes.
cudaError_t linear_array_end(cudaArray_const_t array, size_t x_bytes, size_t y, size_t count,
                             const char* api, CopyEnd* out) {
  detail::ArrayView a;
  if (!detail::array_view(array, &a)) {
    return misuse(api, cudaErrorInvalidValue,
                  detail::pointer_text(array) + " is not a live CUDA array");
  }
  const size_t total = a.row_bytes() * a.rows() * a.slices();
  const size_t rows = a.rows() * a.slices();
  const size_t offset = y < rows ? y * a.row_bytes() + x_bytes : total + 1;
  if (x_bytes > a.row_bytes() || offset > total || count > total - offset) {
    return misuse(api, cudaErrorInvalidValue,
                  std::to_string(count) + " bytes at (" + std::to_string(x_bytes) + ", " +
                      std::to_string(y) + ") exceed the array's " + std::to_string(total) +
                      " bytes");
  }
  // One row of `count` bytes over a storage whose row is `total` bytes long.
  out->array = nullptr;
  out->pointer = a.storage + offset;
  out->pitch = count;
  return cudaSuccess;
}

cudaError_t memcpy_3d_parms(const cudaMemcpy3DParms* p, cudaStream_t stream, bool async,
                            bool per_thread, const char* api) {
  if (p == nullptr) return misuse(api, cudaErrorInvalidValue, "the parameters are NULL");
  const bool src_array = p->srcArray != nullptr;
  const bool dst_array = p->dstArray != nullptr;
  if (src_array == (p->srcPtr.ptr != nullptr) || dst_array == (p->dstPtr.ptr != nullptr)) {
    return misuse(api, cudaErrorInvalidValue,
                  "exactly one of srcArray/srcPtr and one of dstArray/dstPtr must be set");
  }
  // Extents and positions count elements of the array(s) taking part, bytes otherwise.
  size_t element = 1;
  detail::ArrayView a;
  if (src_array) {
    if (!detail::array_view(p->srcArray, &a)) {
      return misuse(api, cudaErrorInvalidValue,
                    "srcArray " + detail::pointer_text(p->srcArray) + " is not a live CUDA array");
    }
    element = a.element_bytes;
  }
  if (dst_array) {
    if (!detail::array_view(p->dstArray, &a)) {
      return misuse(api, cudaErrorInvalidValue,
                    "dstArray " + detail::pointer_text(p->dstArray) + " is not a live CUDA array");
    }
    if (src_array && a.element_bytes != element) {
      return misuse(api, cudaErrorInvalidValue,
                    "source and destination arrays have different element sizes (" +
                        std::to_string(element) + ", " + std::to_string(a.element_bytes) + ")");
    }
    element = a.element_bytes;
  }
  constexpr size_t kMax = ~size_t{0};
  if (p->extent.width > kMax / element || p->srcPos.x > kMax / element ||
      p->dstPos.x > kMax / element) {
    return misuse(api, cudaErrorInvalidValue, "extent or position too large");
  }
  auto end_of = [&](cudaArray_t array, const cudaPitchedPtr& ptr, const cudaPos& pos) {
    CopyEnd end;
    end.x_bytes = pos.x * (array != nullptr ? element : 1);
    end.y = pos.y;
    end.z = pos.z;
    if (array != nullptr) {
      end.array = array;
    } else {
      end.pointer = ptr.ptr;
      end.pitch = ptr.pitch;
      end.slice_rows = ptr.ysize;
    }
    return end;
  };
  return detail::copy_ends(end_of(p->dstArray, p->dstPtr, p->dstPos),
                           end_of(p->srcArray, p->srcPtr, p->srcPos), p->extent.width * element,
                           p->extent.height, p->extent.depth, p->kind, stream, async, per_thread,
                           api);
}

cudaError_t memcpy_3d_peer(const cudaMemcpy3DPeerParms* p, cudaStream_t stream, bool async,
                           bool per_thread, const char* api) {
  if (p == nullptr) return misuse(api, cudaErrorInvalidValue, "the parameters are NULL");
  const int devices = powertrain::emu::device_count();
  if (p->srcDevice < 0 || p->srcDevice >= devices || p->dstDevice < 0 || p->dstDevice >= devices) {
    return misuse(api, cudaErrorInvalidDevice, "invalid device ordinal");
  }
  cudaMemcpy3DParms q{};
  q.srcArray = p->srcArray;
  q.srcPos = p->srcPos;
  q.srcPtr = p->srcPtr;
  q.dstArray = p->dstArray;
  q.dstPos = p->dstPos;
  q.dstPtr = p->dstPtr;
  q.extent = p->extent;
  q.kind = cudaMemcpyDefault;  // peer copies infer the direction
  return memcpy_3d_parms(&q, stream, async, per_thread, api);
}

cudaError_t to_array_2d(cudaArray_t dst, size_t w_offset, size_t h_offset, const void* src,
                        size_t spitch, size_t width, size_t height, cudaMemcpyKind kind,
                        cudaStream_t stream, bool async, bool per_thread, const char* api) {
  return detail::copy_ends(array_end(dst, w_offset, h_offset), memory_end(src, spitch), width,
                           height, 1, kind, stream, async, per_thread, api);
}

cudaError_t from_array_2d(void* dst, size_t dpitch, cudaArray_const_t src, size_t w_offset,
                          size_t h_offset, size_t width, size_t height, cudaMemcpyKind kind,
                          cudaStream_t stream, bool async, bool per_thread, const char* api) {
  return detail::copy_ends(memory_end(dst, dpitch), array_end(src, w_offset, h_offset), width,
                           height, 1, kind, stream, async, per_thread, api);
}

cudaError_t array_to_array_2d(cudaArray_t dst, size_t wd, size_t hd, cudaArray_const_t src,
                              size_t ws, size_t hs, size_t width, size_t height,
                              cudaMemcpyKind kind, bool per_thread, const char* api) {
  return detail::copy_ends(array_end(dst, wd, hd), array_end(src, ws, hs), width, height, 1, kind,
                           nullptr, false, per_thread, api);
}

cudaError_t to_array_1d(cudaArray_t dst, size_t w_offset, size_t h_offset, const void* src,
                        size_t count, cudaMemcpyKind kind, cudaStream_t stream, bool async,
                        bool per_thread, const char* api) {
  CopyEnd end;
  const cudaError_t error = linear_array_end(dst, w_offset, h_offset, count, api, &end);
  if (error != cudaSuccess) return error;
  if (kind == cudaMemcpyDeviceToHost) kind = cudaMemcpyDeviceToDevice;  // corrected: an array
  if (kind == cudaMemcpyHostToHost) kind = cudaMemcpyHostToDevice;
  return detail::copy_ends(end, memory_end(src, count), count, 1, 1, kind, stream, async,
                           per_thread, api);
}

cudaError_t from_array_1d(void* dst, cudaArray_const_t src, size_t w_offset, size_t h_offset,
                          size_t count, cudaMemcpyKind kind, cudaStream_t stream, bool async,
                          bool per_thread, const char* api) {
  CopyEnd end;
  const cudaError_t error = linear_array_end(src, w_offset, h_offset, count, api, &end);
  if (error != cudaSuccess) return error;
  if (kind == cudaMemcpyHostToDevice) kind = cudaMemcpyDeviceToDevice;
  if (kind == cudaMemcpyHostToHost) kind = cudaMemcpyDeviceToHost;
  return detail::copy_ends(memory_end(dst, count), end, count, 1, 1, kind, stream, async,
                           per_thread, api);
}

cudaError_t array_to_array_1d(cudaArray_t dst, size_t wd, size_t hd, cudaArray_const_t src,
                              size_t ws, size_t hs, size_t count, bool per_thread,
                              const char* api) {
  CopyEnd d;
  CopyEnd s;
  cudaError_t error = linear_array_end(dst, wd, hd, count, api, &d);
  if (error == cudaSuccess) error = linear_array_end(src, ws, hs, count, api, &s);
  if (error != cudaSuccess) return error;
  return detail::copy_ends(d, s, count, 1, 1, cudaMemcpyDeviceToDevice, nullptr, false, per_thread,
                           api);
}

}  // namespace

PT_EXPORT cudaError_t cudaMallocArray(cudaArray_t* array, const struct cudaChannelFormatDesc* desc,
                                      size_t width, size_t height, unsigned int flags) {
  constexpr unsigned kAllowed = cudaArraySurfaceLoadStore | cudaArrayTextureGather |
                                cudaArraySparse | cudaArrayDeferredMapping;
  if ((flags & ~kAllowed) != 0) {
    return misuse(
        "cudaMallocArray", cudaErrorInvalidValue,
        "flags " + std::to_string(flags) + ": layered and cubemap arrays need cudaMalloc3DArray");
  }
  return detail::create_array(array, desc, cudaExtent{width, height, 0}, flags, "cudaMallocArray");
}

PT_EXPORT cudaError_t cudaMalloc3DArray(cudaArray_t* array,
                                        const struct cudaChannelFormatDesc* desc,
                                        struct cudaExtent extent, unsigned int flags) {
  return detail::create_array(array, desc, extent, flags, "cudaMalloc3DArray");
}

PT_EXPORT cudaError_t cudaFreeArray(cudaArray_t array) {
  return detail::destroy_array(array, "cudaFreeArray");
}

PT_EXPORT cudaError_t cudaMallocMipmappedArray(cudaMipmappedArray_t* mipmappedArray,
                                               const struct cudaChannelFormatDesc* desc,
                                               struct cudaExtent extent, unsigned int numLevels,
                                               unsigned int flags) {
  return detail::create_mipmapped_array(mipmappedArray, desc, extent, numLevels, flags,
                                        "cudaMallocMipmappedArray");
}

PT_EXPORT cudaError_t cudaFreeMipmappedArray(cudaMipmappedArray_t mipmappedArray) {
  return detail::destroy_mipmapped_array(mipmappedArray, "cudaFreeMipmappedArray");
}

PT_EXPORT cudaError_t cudaGetMipmappedArrayLevel(cudaArray_t* levelArray,
                                                 cudaMipmappedArray_const_t mipmappedArray,
                                                 unsigned int level) {
  return detail::mipmapped_array_level(levelArray, mipmappedArray, level,
                                       "cudaGetMipmappedArrayLevel");
}

PT_EXPORT cudaError_t cudaArrayGetInfo(struct cudaChannelFormatDesc* desc,
                                       struct cudaExtent* extent, unsigned int* flags,
                                       cudaArray_t array) {
  detail::ArrayView a;
  if (!detail::array_view(array, &a)) {
    return misuse("cudaArrayGetInfo", cudaErrorInvalidValue,
                  detail::pointer_text(array) + " is not a live CUDA array");
  }
  if (desc != nullptr) *desc = a.desc;
  if (extent != nullptr) *extent = a.extent;
  if (flags != nullptr) *flags = a.flags;
  return cudaSuccess;
}

PT_EXPORT cudaError_t cudaGetChannelDesc(struct cudaChannelFormatDesc* desc,
                                         cudaArray_const_t array) {
  if (desc == nullptr) return misuse("cudaGetChannelDesc", cudaErrorInvalidValue, "desc is NULL");
  detail::ArrayView a;
  if (!detail::array_view(array, &a)) {
    return misuse("cudaGetChannelDesc", cudaErrorInvalidValue,
                  detail::pointer_text(array) + " is not a live CUDA array");
  }
  *desc = a.desc;
  return cudaSuccess;
}

PT_EXPORT cudaError_t cudaArrayGetPlane(cudaArray_t* pPlaneArray, cudaArray_t hArray,
                                        unsigned int planeIdx) {
  detail::ArrayView a;
  if (pPlaneArray == nullptr || !detail::array_view(hArray, &a)) {
    return misuse(
        "cudaArrayGetPlane", cudaErrorInvalidValue,
        "pPlaneArray is NULL or " + detail::pointer_text(hArray) + " is not a live CUDA array");
  }
  // Only planar formats (NV12) have planes; they are not emulated, so no array has any.
  return misuse("cudaArrayGetPlane", cudaErrorInvalidValue,
                "plane " + std::to_string(planeIdx) + " of an array without a planar format");
}

PT_EXPORT cudaError_t cudaArrayGetMemoryRequirements(
    struct cudaArrayMemoryRequirements* memoryRequirements, cudaArray_t array, int device) {
  detail::ArrayView a;
  if (memoryRequirements == nullptr || !detail::array_view(array, &a)) {
    return misuse("cudaArrayGetMemoryRequirements", cudaErrorInvalidValue,
                  "memoryRequirements is NULL or " + detail::pointer_text(array) +
                      " is not a live CUDA array");
  }
  if (device < 0 || device >= powertrain::emu::device_count()) {
    return misuse("cudaArrayGetMemoryRequirements", cudaErrorInvalidDevice,
                  "invalid device ordinal " + std::to_string(device));
  }
  // The emulator's storage (no padding), rounded to the texture alignment: a model, not what a
  // GPU's tiled layout needs.
  const size_t bytes = a.row_bytes() * a.rows() * a.slices();
  *memoryRequirements = cudaArrayMemoryRequirements{};
  memoryRequirements->alignment = 512;
  memoryRequirements->size = (bytes + 511) / 512 * 512;
  return cudaSuccess;
}

PT_EXPORT cudaError_t cudaMemcpy2DToArray(cudaArray_t dst, size_t wOffset, size_t hOffset,
                                          const void* src, size_t spitch, size_t width,
                                          size_t height, enum cudaMemcpyKind kind) {
  return to_array_2d(dst, wOffset, hOffset, src, spitch, width, height, kind, nullptr, false, false,
                     "cudaMemcpy2DToArray");
}
PT_EXPORT cudaError_t cudaMemcpy2DToArray_ptds(cudaArray_t dst, size_t wOffset, size_t hOffset,
                                               const void* src, size_t spitch, size_t width,
                                               size_t height, enum cudaMemcpyKind kind) {
  return to_array_2d(dst, wOffset, hOffset, src, spitch, width, height, kind, nullptr, false, true,
                     "cudaMemcpy2DToArray_ptds");
}
PT_EXPORT cudaError_t cudaMemcpy2DToArrayAsync(cudaArray_t dst, size_t wOffset, size_t hOffset,
                                               const void* src, size_t spitch, size_t width,
                                               size_t height, enum cudaMemcpyKind kind,
                                               cudaStream_t stream) {
  return to_array_2d(dst, wOffset, hOffset, src, spitch, width, height, kind, stream, true, false,
                     "cudaMemcpy2DToArrayAsync");
}
PT_EXPORT cudaError_t cudaMemcpy2DToArrayAsync_ptsz(cudaArray_t dst, size_t wOffset, size_t hOffset,
                                                    const void* src, size_t spitch, size_t width,
                                                    size_t height, enum cudaMemcpyKind kind,
                                                    cudaStream_t stream) {
  return to_array_2d(dst, wOffset, hOffset, src, spitch, width, height, kind, stream, true, true,
                     "cudaMemcpy2DToArrayAsync_ptsz");
}

PT_EXPORT cudaError_t cudaMemcpy2DFromArray(void* dst, size_t dpitch, cudaArray_const_t src,
                                            size_t wOffset, size_t hOffset, size_t width,
                                            size_t height, enum cudaMemcpyKind kind) {
  return from_array_2d(dst, dpitch, src, wOffset, hOffset, width, height, kind, nullptr, false,
                       false, "cudaMemcpy2DFromArray");
}
PT_EXPORT cudaError_t cudaMemcpy2DFromArray_ptds(void* dst, size_t dpitch, cudaArray_const_t src,
                                                 size_t wOffset, size_t hOffset, size_t width,
                                                 size_t height, enum cudaMemcpyKind kind) {
  return from_array_2d(dst, dpitch, src, wOffset, hOffset, width, height, kind, nullptr, false,
                       true, "cudaMemcpy2DFromArray_ptds");
}
PT_EXPORT cudaError_t cudaMemcpy2DFromArrayAsync(void* dst, size_t dpitch, cudaArray_const_t src,
                                                 size_t wOffset, size_t hOffset, size_t width,
                                                 size_t height, enum cudaMemcpyKind kind,
                                                 cudaStream_t stream) {
  return from_array_2d(dst, dpitch, src, wOffset, hOffset, width, height, kind, stream, true, false,
                       "cudaMemcpy2DFromArrayAsync");
}
PT_EXPORT cudaError_t cudaMemcpy2DFromArrayAsync_ptsz(void* dst, size_t dpitch,
                                                      cudaArray_const_t src, size_t wOffset,
                                                      size_t hOffset, size_t width, size_t height,
                                                      enum cudaMemcpyKind kind,
                                                      cudaStream_t stream) {
  return from_array_2d(dst, dpitch, src, wOffset, hOffset, width, height, kind, stream, true, true,
                       "cudaMemcpy2DFromArrayAsync_ptsz");
}

PT_EXPORT cudaError_t cudaMemcpy2DArrayToArray(cudaArray_t dst, size_t wOffsetDst,
                                               size_t hOffsetDst, cudaArray_const_t src,
                                               size_t wOffsetSrc, size_t hOffsetSrc, size_t width,
                                               size_t height, enum cudaMemcpyKind kind) {
  return array_to_array_2d(dst, wOffsetDst, hOffsetDst, src, wOffsetSrc, hOffsetSrc, width, height,
                           kind, false, "cudaMemcpy2DArrayToArray");
}
PT_EXPORT cudaError_t cudaMemcpy2DArrayToArray_ptds(cudaArray_t dst, size_t wOffsetDst,
                                                    size_t hOffsetDst, cudaArray_const_t src,
                                                    size_t wOffsetSrc, size_t hOffsetSrc,
                                                    size_t width, size_t height,
                                                    enum cudaMemcpyKind kind) {
  return array_to_array_2d(dst, wOffsetDst, hOffsetDst, src, wOffsetSrc, hOffsetSrc, width, height,
                           kind, true, "cudaMemcpy2DArrayToArray_ptds");
}

PT_EXPORT cudaError_t cudaMemcpyToArray(cudaArray_t dst, size_t wOffset, size_t hOffset,
                                        const void* src, size_t count, enum cudaMemcpyKind kind) {
  return to_array_1d(dst, wOffset, hOffset, src, count, kind, nullptr, false, false,
                     "cudaMemcpyToArray");
}
PT_EXPORT cudaError_t cudaMemcpyToArray_ptds(cudaArray_t dst, size_t wOffset, size_t hOffset,
                                             const void* src, size_t count,
                                             enum cudaMemcpyKind kind) {
  return to_array_1d(dst, wOffset, hOffset, src, count, kind, nullptr, false, true,
                     "cudaMemcpyToArray_ptds");
}
PT_EXPORT cudaError_t cudaMemcpyToArrayAsync(cudaArray_t dst, size_t wOffset, size_t hOffset,
                                             const void* src, size_t count,
                                             enum cudaMemcpyKind kind, cudaStream_t stream) {
  return to_array_1d(dst, wOffset, hOffset, src, count, kind, stream, true, false,
                     "cudaMemcpyToArrayAsync");
}
PT_EXPORT cudaError_t cudaMemcpyToArrayAsync_ptsz(cudaArray_t dst, size_t wOffset, size_t hOffset,
                                                  const void* src, size_t count,
                                                  enum cudaMemcpyKind kind, cudaStream_t stream) {
  return to_array_1d(dst, wOffset, hOffset, src, count, kind, stream, true, true,
                     "cudaMemcpyToArrayAsync_ptsz");
}
PT_EXPORT cudaError_t cudaMemcpyFromArray(void* dst, cudaArray_const_t src, size_t wOffset,
                                          size_t hOffset, size_t count, enum cudaMemcpyKind kind) {
  return from_array_1d(dst, src, wOffset, hOffset, count, kind, nullptr, false, false,
                       "cudaMemcpyFromArray");
}
PT_EXPORT cudaError_t cudaMemcpyFromArray_ptds(void* dst, cudaArray_const_t src, size_t wOffset,
                                               size_t hOffset, size_t count,
                                               enum cudaMemcpyKind kind) {
  return from_array_1d(dst, src, wOffset, hOffset, count, kind, nullptr, false, true,
                       "cudaMemcpyFromArray_ptds");
}
PT_EXPORT cudaError_t cudaMemcpyFromArrayAsync(void* dst, cudaArray_const_t src, size_t wOffset,
                                               size_t hOffset, size_t count,
                                               enum cudaMemcpyKind kind, cudaStream_t stream) {
  return from_array_1d(dst, src, wOffset, hOffset, count, kind, stream, true, false,
                       "cudaMemcpyFromArrayAsync");
}
PT_EXPORT cudaError_t cudaMemcpyFromArrayAsync_ptsz(void* dst, cudaArray_const_t src,
                                                    size_t wOffset, size_t hOffset, size_t count,
                                                    enum cudaMemcpyKind kind, cudaStream_t stream) {
  return from_array_1d(dst, src, wOffset, hOffset, count, kind, stream, true, true,
                       "cudaMemcpyFromArrayAsync_ptsz");
}
PT_EXPORT cudaError_t cudaMemcpyArrayToArray(cudaArray_t dst, size_t wOffsetDst, size_t hOffsetDst,
                                             cudaArray_const_t src, size_t wOffsetSrc,
                                             size_t hOffsetSrc, size_t count, enum cudaMemcpyKind) {
  return array_to_array_1d(dst, wOffsetDst, hOffsetDst, src, wOffsetSrc, hOffsetSrc, count, false,
                           "cudaMemcpyArrayToArray");
}
PT_EXPORT cudaError_t cudaMemcpyArrayToArray_ptds(cudaArray_t dst, size_t wOffsetDst,
                                                  size_t hOffsetDst, cudaArray_const_t src,
                                                  size_t wOffsetSrc, size_t hOffsetSrc,
                                                  size_t count, enum cudaMemcpyKind) {
  return array_to_array_1d(dst, wOffsetDst, hOffsetDst, src, wOffsetSrc, hOffsetSrc, count, true,
                           "cudaMemcpyArrayToArray_ptds");
}

PT_EXPORT cudaError_t cudaMemcpy3D(const struct cudaMemcpy3DParms* p) {
  return memcpy_3d_parms(p, nullptr, false, false, "cudaMemcpy3D");
}
PT_EXPORT cudaError_t cudaMemcpy3D_ptds(const struct cudaMemcpy3DParms* p) {
  return memcpy_3d_parms(p, nullptr, false, true, "cudaMemcpy3D_ptds");
}
PT_EXPORT cudaError_t cudaMemcpy3DAsync(const struct cudaMemcpy3DParms* p, cudaStream_t stream) {
  return memcpy_3d_parms(p, stream, true, false, "cudaMemcpy3DAsync");
}
PT_EXPORT cudaError_t cudaMemcpy3DAsync_ptsz(const struct cudaMemcpy3DParms* p,
                                             cudaStream_t stream) {
  return memcpy_3d_parms(p, stream, true, true, "cudaMemcpy3DAsync_ptsz");
}
PT_EXPORT cudaError_t cudaMemcpy3DPeer(const struct cudaMemcpy3DPeerParms* p) {
  return memcpy_3d_peer(p, nullptr, false, false, "cudaMemcpy3DPeer");
}
PT_EXPORT cudaError_t cudaMemcpy3DPeer_ptds(const struct cudaMemcpy3DPeerParms* p) {
  return memcpy_3d_peer(p, nullptr, false, true, "cudaMemcpy3DPeer_ptds");
}
PT_EXPORT cudaError_t cudaMemcpy3DPeerAsync(const struct cudaMemcpy3DPeerParms* p,
                                            cudaStream_t stream) {
  return memcpy_3d_peer(p, stream, true, false, "cudaMemcpy3DPeerAsync");
}
PT_EXPORT cudaError_t cudaMemcpy3DPeerAsync_ptsz(const struct cudaMemcpy3DPeerParms* p,
                                                 cudaStream_t stream) {
  return memcpy_3d_peer(p, stream, true, true, "cudaMemcpy3DPeerAsync_ptsz");
}

PT_EXPORT cudaError_t cudaCreateTextureObject(cudaTextureObject_t* pTexObject,
                                              const struct cudaResourceDesc* pResDesc,
                                              const struct cudaTextureDesc* pTexDesc,
                                              const struct cudaResourceViewDesc* pResViewDesc) {
  return detail::create_texture_object(pTexObject, pResDesc, pTexDesc, pResViewDesc,
                                       "cudaCreateTextureObject");
}
PT_EXPORT cudaError_t cudaDestroyTextureObject(cudaTextureObject_t texObject) {
  return detail::destroy_texture_object(texObject, "cudaDestroyTextureObject");
}
PT_EXPORT cudaError_t cudaGetTextureObjectResourceDesc(struct cudaResourceDesc* pResDesc,
                                                       cudaTextureObject_t texObject) {
  if (pResDesc == nullptr) {
    return misuse("cudaGetTextureObjectResourceDesc", cudaErrorInvalidValue, "pResDesc is NULL");
  }
  return detail::texture_object_descs(texObject, pResDesc, nullptr, nullptr,
                                      "cudaGetTextureObjectResourceDesc");
}
PT_EXPORT cudaError_t cudaGetTextureObjectTextureDesc(struct cudaTextureDesc* pTexDesc,
                                                      cudaTextureObject_t texObject) {
  if (pTexDesc == nullptr) {
    return misuse("cudaGetTextureObjectTextureDesc", cudaErrorInvalidValue, "pTexDesc is NULL");
  }
  return detail::texture_object_descs(texObject, nullptr, pTexDesc, nullptr,
                                      "cudaGetTextureObjectTextureDesc");
}
PT_EXPORT cudaError_t cudaGetTextureObjectResourceViewDesc(
    struct cudaResourceViewDesc* pResViewDesc, cudaTextureObject_t texObject) {
  if (pResViewDesc == nullptr) {
    return misuse("cudaGetTextureObjectResourceViewDesc", cudaErrorInvalidValue,
                  "pResViewDesc is NULL");
  }
  return detail::texture_object_descs(texObject, nullptr, nullptr, pResViewDesc,
                                      "cudaGetTextureObjectResourceViewDesc");
}
PT_EXPORT cudaError_t cudaCreateSurfaceObject(cudaSurfaceObject_t* pSurfObject,
                                              const struct cudaResourceDesc* pResDesc) {
  return detail::create_surface_object(pSurfObject, pResDesc, "cudaCreateSurfaceObject");
}
PT_EXPORT cudaError_t cudaDestroySurfaceObject(cudaSurfaceObject_t surfObject) {
  return detail::destroy_surface_object(surfObject, "cudaDestroySurfaceObject");
}
PT_EXPORT cudaError_t cudaGetSurfaceObjectResourceDesc(struct cudaResourceDesc* pResDesc,
                                                       cudaSurfaceObject_t surfObject) {
  return detail::surface_object_desc(surfObject, pResDesc, "cudaGetSurfaceObjectResourceDesc");
}
