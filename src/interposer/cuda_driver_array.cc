// The driver API's CUDA arrays, texture and surface objects over the runtime's (cudart_array.cc):
// a CUarray is a cudaArray_t, a CUmipmappedArray a cudaMipmappedArray_t, a CUtexObject a
// cudaTextureObject_t, so arrays made by either API are usable by the other. Array formats
// (CUarray_format × channels) translate to channel descriptors and back; copies are the runtime's
// (validated, recorded and timed), named by the driver function.
#include <cuda.h>

#include <string>

#include "interposer/cuda_driver_common.h"
#include "interposer/cudart_array.h"
#include "interposer/cudart_internal.h"

namespace powertrain::emu::detail {
namespace {

CUresult driver_invalid(const char* api, const std::string& what) {
  report_misuse(api, what);
  return CUDA_ERROR_INVALID_VALUE;
}

// CUarray_format × channels → channel descriptor; false for formats the emulator does not hold
// (planar YUV, block-compressed, packed 10-bit).
bool format_desc(CUarray_format format, unsigned channels, cudaChannelFormatDesc* out) {
  if (channels != 1 && channels != 2 && channels != 4) return false;
  int bits = 0;
  cudaChannelFormatKind kind = cudaChannelFormatKindNone;
  switch (format) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
      bits = 8;
      kind = cudaChannelFormatKindUnsigned;
      break;
    case CU_AD_FORMAT_UNSIGNED_INT16:
      bits = 16;
      kind = cudaChannelFormatKindUnsigned;
      break;
    case CU_AD_FORMAT_UNSIGNED_INT32:
      bits = 32;
      kind = cudaChannelFormatKindUnsigned;
      break;
    case CU_AD_FORMAT_SIGNED_INT8:
      bits = 8;
      kind = cudaChannelFormatKindSigned;
      break;
    case CU_AD_FORMAT_SIGNED_INT16:
      bits = 16;
      kind = cudaChannelFormatKindSigned;
      break;
    case CU_AD_FORMAT_SIGNED_INT32:
      bits = 32;
      kind = cudaChannelFormatKindSigned;
      break;
    case CU_AD_FORMAT_HALF:
      bits = 16;
      kind = cudaChannelFormatKindFloat;
      break;
    case CU_AD_FORMAT_FLOAT:
      bits = 32;
      kind = cudaChannelFormatKindFloat;
      break;
    default: {
      // The normalized formats carry their channel count: X1, X2, X4 in order.
      const int base = static_cast<int>(format) - CU_AD_FORMAT_UNORM_INT8X1;
      if (base < 0 || base > CU_AD_FORMAT_SNORM_INT16X4 - CU_AD_FORMAT_UNORM_INT8X1) return false;
      const unsigned counts[3] = {1, 2, 4};
      if (counts[base % 3] != channels) return false;
      bits = (base / 3) % 2 == 0 ? 8 : 16;
      kind = static_cast<cudaChannelFormatKind>(cudaChannelFormatKindUnsignedNormalized8X1 + base);
    }
  }
  *out = cudaChannelFormatDesc{bits, channels > 1 ? bits : 0, channels > 2 ? bits : 0,
                               channels > 2 ? bits : 0, kind};
  return true;
}

// The reverse, for the getters.
void desc_format(const cudaChannelFormatDesc& d, CUarray_format* format, unsigned* channels) {
  *channels = (d.x > 0) + (d.y > 0) + (d.z > 0) + (d.w > 0);
  switch (d.f) {
    case cudaChannelFormatKindUnsigned:
      *format = d.x == 8    ? CU_AD_FORMAT_UNSIGNED_INT8
                : d.x == 16 ? CU_AD_FORMAT_UNSIGNED_INT16
                            : CU_AD_FORMAT_UNSIGNED_INT32;
      return;
    case cudaChannelFormatKindSigned:
      *format = d.x == 8    ? CU_AD_FORMAT_SIGNED_INT8
                : d.x == 16 ? CU_AD_FORMAT_SIGNED_INT16
                            : CU_AD_FORMAT_SIGNED_INT32;
      return;
    case cudaChannelFormatKindFloat:
      *format = d.x == 16 ? CU_AD_FORMAT_HALF : CU_AD_FORMAT_FLOAT;
      return;
    default:
      *format = static_cast<CUarray_format>(
          CU_AD_FORMAT_UNORM_INT8X1 +
          (static_cast<int>(d.f) - cudaChannelFormatKindUnsignedNormalized8X1));
  }
}

CUresult create(CUarray* out, std::size_t width, std::size_t height, std::size_t depth,
                CUarray_format format, unsigned channels, unsigned flags, const char* api) {
  cudaChannelFormatDesc desc;
  if (!format_desc(format, channels, &desc)) {
    return driver_invalid(api, "format " + std::to_string(static_cast<int>(format)) + " with " +
                                   std::to_string(channels) +
                                   " channels is invalid or not emulated (1, 2 or 4 channels of "
                                   "integer, half, float or normalized formats)");
  }
  ErrorScope scope;
  return to_driver(create_array(reinterpret_cast<cudaArray_t*>(out), &desc,
                                cudaExtent{width, height, depth}, flags, api));
}

CUresult view_of(CUarray array, const char* api, ArrayView* out) {
  if (array_view(reinterpret_cast<cudaArray_const_t>(array), out)) return CUDA_SUCCESS;
  report_misuse(api, pointer_text(array) + " is not a live CUDA array");
  return CUDA_ERROR_INVALID_HANDLE;
}

// One end of cuMemcpy2D/3D.
CUresult end_of(CUmemorytype type, const void* host, CUdeviceptr device, CUarray array,
                std::size_t pitch, std::size_t rows, std::size_t x, std::size_t y, std::size_t z,
                const char* role, const char* api, CopyEnd* out, bool* host_side, bool* unified) {
  out->x_bytes = x;
  out->y = y;
  out->z = z;
  switch (type) {
    case CU_MEMORYTYPE_HOST:
      out->pointer = const_cast<void*>(host);
      *host_side = true;
      break;
    case CU_MEMORYTYPE_DEVICE:
    case CU_MEMORYTYPE_UNIFIED:
      out->pointer = reinterpret_cast<void*>(device);
      *unified = *unified || type == CU_MEMORYTYPE_UNIFIED;
      break;
    case CU_MEMORYTYPE_ARRAY:
      out->array = reinterpret_cast<cudaArray_const_t>(array);
      return CUDA_SUCCESS;
    default:
      return driver_invalid(api, std::string(role) + " memory type " +
                                     std::to_string(static_cast<int>(type)) + " is unknown");
  }
  out->pitch = pitch;
  out->slice_rows = rows;
  return CUDA_SUCCESS;
}

CUresult copy_3d(const CUDA_MEMCPY3D* p, CUstream stream, bool async, const char* api) {
  if (p == nullptr) return driver_invalid(api, "pCopy is NULL");
  if (p->srcLOD != 0 || p->dstLOD != 0) return driver_invalid(api, "srcLOD/dstLOD must be 0");
  CopyEnd src;
  CopyEnd dst;
  bool src_host = false;
  bool dst_host = false;
  bool unified = false;
  CUresult r =
      end_of(p->srcMemoryType, p->srcHost, p->srcDevice, p->srcArray, p->srcPitch, p->srcHeight,
             p->srcXInBytes, p->srcY, p->srcZ, "source", api, &src, &src_host, &unified);
  if (r == CUDA_SUCCESS) {
    r = end_of(p->dstMemoryType, p->dstHost, p->dstDevice, p->dstArray, p->dstPitch, p->dstHeight,
               p->dstXInBytes, p->dstY, p->dstZ, "destination", api, &dst, &dst_host, &unified);
  }
  if (r != CUDA_SUCCESS) return r;
  const cudaMemcpyKind kind = unified ? cudaMemcpyDefault
                              : src_host
                                  ? (dst_host ? cudaMemcpyHostToHost : cudaMemcpyHostToDevice)
                                  : (dst_host ? cudaMemcpyDeviceToHost : cudaMemcpyDeviceToDevice);
  ErrorScope scope;
  return to_driver(
      copy_ends(dst, src, p->WidthInBytes, p->Height, p->Depth, kind, stream, async, false, api));
}

// A 2D copy is the 3D copy of one slice (no slice height, z 0, LOD 0).
CUresult copy_2d(const CUDA_MEMCPY2D* p, CUstream stream, bool async, const char* api) {
  if (p == nullptr) return driver_invalid(api, "pCopy is NULL");
  CUDA_MEMCPY3D q{};
  q.srcXInBytes = p->srcXInBytes;
  q.srcY = p->srcY;
  q.srcMemoryType = p->srcMemoryType;
  q.srcHost = p->srcHost;
  q.srcDevice = p->srcDevice;
  q.srcArray = p->srcArray;
  q.srcPitch = p->srcPitch;
  q.dstXInBytes = p->dstXInBytes;
  q.dstY = p->dstY;
  q.dstMemoryType = p->dstMemoryType;
  q.dstHost = p->dstHost;
  q.dstDevice = p->dstDevice;
  q.dstArray = p->dstArray;
  q.dstPitch = p->dstPitch;
  q.WidthInBytes = p->WidthInBytes;
  q.Height = p->Height;
  q.Depth = 1;
  return copy_3d(&q, stream, async, api);
}

// A linear range of an array from byte `offset` (cuMemcpyHtoA & co.): its storage is contiguous.
CUresult linear_end(CUarray array, std::size_t offset, std::size_t bytes, const char* api,
                    CopyEnd* out) {
  ArrayView a;
  const CUresult r = view_of(array, api, &a);
  if (r != CUDA_SUCCESS) return r;
  const std::size_t total = a.row_bytes() * a.rows() * a.slices();
  if (offset > total || bytes > total - offset) {
    return driver_invalid(api, std::to_string(bytes) + " bytes at offset " +
                                   std::to_string(offset) + " exceed the array's " +
                                   std::to_string(total) + " bytes");
  }
  out->pointer = a.storage + offset;
  out->pitch = bytes;
  return CUDA_SUCCESS;
}

CUresult linear_copy(const CopyEnd& dst, const CopyEnd& src, std::size_t bytes, cudaMemcpyKind kind,
                     CUstream stream, bool async, const char* api) {
  ErrorScope scope;
  return to_driver(copy_ends(dst, src, bytes, 1, 1, kind, stream, async, false, api));
}

CopyEnd pointer_end(const void* pointer, std::size_t bytes) {
  CopyEnd end;
  end.pointer = const_cast<void*>(pointer);
  end.pitch = bytes;
  return end;
}

CUresult htoa(CUarray dst, std::size_t offset, const void* src, std::size_t bytes, CUstream stream,
              bool async, const char* api) {
  CopyEnd d;
  const CUresult r = linear_end(dst, offset, bytes, api, &d);
  if (r != CUDA_SUCCESS) return r;
  return linear_copy(d, pointer_end(src, bytes), bytes, cudaMemcpyHostToDevice, stream, async, api);
}

CUresult atoh(void* dst, CUarray src, std::size_t offset, std::size_t bytes, CUstream stream,
              bool async, const char* api) {
  CopyEnd s;
  const CUresult r = linear_end(src, offset, bytes, api, &s);
  if (r != CUDA_SUCCESS) return r;
  return linear_copy(pointer_end(dst, bytes), s, bytes, cudaMemcpyDeviceToHost, stream, async, api);
}

// Synchronous device-side copies between an array and linear memory or another array; `stream`
// is NULL (legacy) or the per-thread default stream (the *_ptds entry points).
CUresult atod(CUdeviceptr dst, CUarray src, std::size_t offset, std::size_t bytes, CUstream stream,
              const char* api) {
  CopyEnd s;
  const CUresult r = linear_end(src, offset, bytes, api, &s);
  if (r != CUDA_SUCCESS) return r;
  return linear_copy(pointer_end(reinterpret_cast<void*>(dst), bytes), s, bytes,
                     cudaMemcpyDeviceToDevice, stream, false, api);
}

CUresult dtoa(CUarray dst, std::size_t offset, CUdeviceptr src, std::size_t bytes, CUstream stream,
              const char* api) {
  CopyEnd d;
  const CUresult r = linear_end(dst, offset, bytes, api, &d);
  if (r != CUDA_SUCCESS) return r;
  return linear_copy(d, pointer_end(reinterpret_cast<void*>(src), bytes), bytes,
                     cudaMemcpyDeviceToDevice, stream, false, api);
}

CUresult atoa(CUarray dst, std::size_t dst_offset, CUarray src, std::size_t src_offset,
              std::size_t bytes, CUstream stream, const char* api) {
  CopyEnd d;
  CopyEnd s;
  CUresult r = linear_end(dst, dst_offset, bytes, api, &d);
  if (r == CUDA_SUCCESS) r = linear_end(src, src_offset, bytes, api, &s);
  if (r != CUDA_SUCCESS) return r;
  return linear_copy(d, s, bytes, cudaMemcpyDeviceToDevice, stream, false, api);
}

// Driver resource description → runtime's; false (reported) for an invalid format.
bool to_runtime(const CUDA_RESOURCE_DESC& in, cudaResourceDesc* out, const char* api) {
  *out = cudaResourceDesc{};
  out->resType = static_cast<cudaResourceType>(in.resType);
  out->flags = in.flags;
  switch (in.resType) {
    case CU_RESOURCE_TYPE_ARRAY:
      out->res.array.array = reinterpret_cast<cudaArray_t>(in.res.array.hArray);
      return true;
    case CU_RESOURCE_TYPE_MIPMAPPED_ARRAY:
      out->res.mipmap.mipmap =
          reinterpret_cast<cudaMipmappedArray_t>(in.res.mipmap.hMipmappedArray);
      return true;
    case CU_RESOURCE_TYPE_LINEAR:
      out->res.linear.devPtr = reinterpret_cast<void*>(in.res.linear.devPtr);
      out->res.linear.sizeInBytes = in.res.linear.sizeInBytes;
      if (!format_desc(in.res.linear.format, in.res.linear.numChannels, &out->res.linear.desc)) {
        report_misuse(api, "res.linear: invalid or unemulated format/channel count");
        return false;
      }
      return true;
    case CU_RESOURCE_TYPE_PITCH2D:
      out->res.pitch2D.devPtr = reinterpret_cast<void*>(in.res.pitch2D.devPtr);
      out->res.pitch2D.width = in.res.pitch2D.width;
      out->res.pitch2D.height = in.res.pitch2D.height;
      out->res.pitch2D.pitchInBytes = in.res.pitch2D.pitchInBytes;
      if (!format_desc(in.res.pitch2D.format, in.res.pitch2D.numChannels, &out->res.pitch2D.desc)) {
        report_misuse(api, "res.pitch2D: invalid or unemulated format/channel count");
        return false;
      }
      return true;
  }
  return true;  // an unknown type: the runtime's validation names it
}

void to_driver_desc(const cudaResourceDesc& in, CUDA_RESOURCE_DESC* out) {
  *out = CUDA_RESOURCE_DESC{};
  out->resType = static_cast<CUresourcetype>(in.resType);
  out->flags = in.flags;
  switch (in.resType) {
    case cudaResourceTypeArray:
      out->res.array.hArray = reinterpret_cast<CUarray>(in.res.array.array);
      break;
    case cudaResourceTypeMipmappedArray:
      out->res.mipmap.hMipmappedArray = reinterpret_cast<CUmipmappedArray>(in.res.mipmap.mipmap);
      break;
    case cudaResourceTypeLinear:
      out->res.linear.devPtr = reinterpret_cast<CUdeviceptr>(in.res.linear.devPtr);
      out->res.linear.sizeInBytes = in.res.linear.sizeInBytes;
      desc_format(in.res.linear.desc, &out->res.linear.format, &out->res.linear.numChannels);
      break;
    case cudaResourceTypePitch2D:
      out->res.pitch2D.devPtr = reinterpret_cast<CUdeviceptr>(in.res.pitch2D.devPtr);
      out->res.pitch2D.width = in.res.pitch2D.width;
      out->res.pitch2D.height = in.res.pitch2D.height;
      out->res.pitch2D.pitchInBytes = in.res.pitch2D.pitchInBytes;
      desc_format(in.res.pitch2D.desc, &out->res.pitch2D.format, &out->res.pitch2D.numChannels);
      break;
  }
}

// The channel format a resource reads (for the driver's integer promotion rule).
cudaChannelFormatDesc resource_format(const cudaResourceDesc& r) {
  ArrayView a;
  if (r.resType == cudaResourceTypeArray && array_view(r.res.array.array, &a)) return a.desc;
  if (r.resType == cudaResourceTypeLinear) return r.res.linear.desc;
  if (r.resType == cudaResourceTypePitch2D) return r.res.pitch2D.desc;
  return cudaChannelFormatDesc{32, 0, 0, 0, cudaChannelFormatKindFloat};
}

}  // namespace
}  // namespace powertrain::emu::detail

namespace detail = powertrain::emu::detail;
using detail::per_thread;

PT_EXPORT CUresult cuArrayCreate(CUarray* pHandle, const CUDA_ARRAY_DESCRIPTOR* pAllocateArray) {
  if (pHandle == nullptr || pAllocateArray == nullptr) {
    return detail::driver_invalid("cuArrayCreate_v2", "pHandle or pAllocateArray is NULL");
  }
  const CUDA_ARRAY_DESCRIPTOR& d = *pAllocateArray;
  return detail::create(pHandle, d.Width, d.Height, 0, d.Format, d.NumChannels, 0,
                        "cuArrayCreate_v2");
}

PT_EXPORT CUresult cuArray3DCreate(CUarray* pHandle,
                                   const CUDA_ARRAY3D_DESCRIPTOR* pAllocateArray) {
  if (pHandle == nullptr || pAllocateArray == nullptr) {
    return detail::driver_invalid("cuArray3DCreate_v2", "pHandle or pAllocateArray is NULL");
  }
  const CUDA_ARRAY3D_DESCRIPTOR& d = *pAllocateArray;
  return detail::create(pHandle, d.Width, d.Height, d.Depth, d.Format, d.NumChannels, d.Flags,
                        "cuArray3DCreate_v2");
}

PT_EXPORT CUresult cuArrayDestroy(CUarray hArray) {
  if (hArray == nullptr) return detail::driver_invalid("cuArrayDestroy", "hArray is NULL");
  detail::ErrorScope scope;
  return detail::to_driver(
      detail::destroy_array(reinterpret_cast<cudaArray_t>(hArray), "cuArrayDestroy"));
}

namespace {
// The 3D descriptor of a live array (the 2D descriptor is its width, height and format).
CUresult array_descriptor(CUDA_ARRAY3D_DESCRIPTOR* out, CUarray array, const char* api) {
  if (out == nullptr) return detail::driver_invalid(api, "pArrayDescriptor is NULL");
  detail::ArrayView a;
  const CUresult r = detail::view_of(array, api, &a);
  if (r != CUDA_SUCCESS) return r;
  out->Width = a.extent.width;
  out->Height = a.extent.height;
  out->Depth = a.extent.depth;
  out->Flags = a.flags;
  detail::desc_format(a.desc, &out->Format, &out->NumChannels);
  return CUDA_SUCCESS;
}
}  // namespace

PT_EXPORT CUresult cuArrayGetDescriptor(CUDA_ARRAY_DESCRIPTOR* pArrayDescriptor, CUarray hArray) {
  const char* api = "cuArrayGetDescriptor_v2";
  if (pArrayDescriptor == nullptr) return detail::driver_invalid(api, "pArrayDescriptor is NULL");
  CUDA_ARRAY3D_DESCRIPTOR d{};
  const CUresult r = array_descriptor(&d, hArray, api);
  if (r != CUDA_SUCCESS) return r;
  pArrayDescriptor->Width = d.Width;
  pArrayDescriptor->Height = d.Height;
  pArrayDescriptor->Format = d.Format;
  pArrayDescriptor->NumChannels = d.NumChannels;
  return CUDA_SUCCESS;
}

PT_EXPORT CUresult cuArray3DGetDescriptor(CUDA_ARRAY3D_DESCRIPTOR* pArrayDescriptor,
                                          CUarray hArray) {
  return array_descriptor(pArrayDescriptor, hArray, "cuArray3DGetDescriptor_v2");
}

PT_EXPORT CUresult cuMipmappedArrayCreate(CUmipmappedArray* pHandle,
                                          const CUDA_ARRAY3D_DESCRIPTOR* pMipmappedArrayDesc,
                                          unsigned int numMipmapLevels) {
  const char* api = "cuMipmappedArrayCreate";
  if (pHandle == nullptr || pMipmappedArrayDesc == nullptr) {
    return detail::driver_invalid(api, "pHandle or pMipmappedArrayDesc is NULL");
  }
  const CUDA_ARRAY3D_DESCRIPTOR& d = *pMipmappedArrayDesc;
  cudaChannelFormatDesc desc;
  if (!detail::format_desc(d.Format, d.NumChannels, &desc)) {
    return detail::driver_invalid(api, "invalid or unemulated format/channel count");
  }
  detail::ErrorScope scope;
  return detail::to_driver(detail::create_mipmapped_array(
      reinterpret_cast<cudaMipmappedArray_t*>(pHandle), &desc,
      cudaExtent{d.Width, d.Height, d.Depth}, numMipmapLevels, d.Flags, api));
}

PT_EXPORT CUresult cuMipmappedArrayDestroy(CUmipmappedArray hMipmappedArray) {
  if (hMipmappedArray == nullptr) {
    return detail::driver_invalid("cuMipmappedArrayDestroy", "hMipmappedArray is NULL");
  }
  detail::ErrorScope scope;
  return detail::to_driver(detail::destroy_mipmapped_array(
      reinterpret_cast<cudaMipmappedArray_t>(hMipmappedArray), "cuMipmappedArrayDestroy"));
}

PT_EXPORT CUresult cuMipmappedArrayGetLevel(CUarray* pLevelArray, CUmipmappedArray hMipmappedArray,
                                            unsigned int level) {
  detail::ErrorScope scope;
  return detail::to_driver(
      detail::mipmapped_array_level(reinterpret_cast<cudaArray_t*>(pLevelArray),
                                    reinterpret_cast<cudaMipmappedArray_const_t>(hMipmappedArray),
                                    level, "cuMipmappedArrayGetLevel"));
}

PT_EXPORT CUresult cuMemcpyHtoA(CUarray dstArray, size_t dstOffset, const void* srcHost,
                                size_t ByteCount) {
  return detail::htoa(dstArray, dstOffset, srcHost, ByteCount, nullptr, false, "cuMemcpyHtoA_v2");
}
PT_EXPORT CUresult cuMemcpyHtoAAsync(CUarray dstArray, size_t dstOffset, const void* srcHost,
                                     size_t ByteCount, CUstream hStream) {
  return detail::htoa(dstArray, dstOffset, srcHost, ByteCount, hStream, true,
                      "cuMemcpyHtoAAsync_v2");
}
PT_EXPORT CUresult cuMemcpyAtoH(void* dstHost, CUarray srcArray, size_t srcOffset,
                                size_t ByteCount) {
  return detail::atoh(dstHost, srcArray, srcOffset, ByteCount, nullptr, false, "cuMemcpyAtoH_v2");
}
PT_EXPORT CUresult cuMemcpyAtoHAsync(void* dstHost, CUarray srcArray, size_t srcOffset,
                                     size_t ByteCount, CUstream hStream) {
  return detail::atoh(dstHost, srcArray, srcOffset, ByteCount, hStream, true,
                      "cuMemcpyAtoHAsync_v2");
}
PT_EXPORT CUresult cuMemcpyAtoD(CUdeviceptr dstDevice, CUarray srcArray, size_t srcOffset,
                                size_t ByteCount) {
  return detail::atod(dstDevice, srcArray, srcOffset, ByteCount, nullptr, "cuMemcpyAtoD_v2");
}
PT_EXPORT CUresult cuMemcpyDtoA(CUarray dstArray, size_t dstOffset, CUdeviceptr srcDevice,
                                size_t ByteCount) {
  return detail::dtoa(dstArray, dstOffset, srcDevice, ByteCount, nullptr, "cuMemcpyDtoA_v2");
}
PT_EXPORT CUresult cuMemcpyAtoA(CUarray dstArray, size_t dstOffset, CUarray srcArray,
                                size_t srcOffset, size_t ByteCount) {
  return detail::atoa(dstArray, dstOffset, srcArray, srcOffset, ByteCount, nullptr,
                      "cuMemcpyAtoA_v2");
}

PT_EXPORT CUresult cuMemcpy2D(const CUDA_MEMCPY2D* pCopy) {
  return detail::copy_2d(pCopy, nullptr, false, "cuMemcpy2D_v2");
}
PT_EXPORT CUresult cuMemcpy2DUnaligned(const CUDA_MEMCPY2D* pCopy) {
  return detail::copy_2d(pCopy, nullptr, false, "cuMemcpy2DUnaligned_v2");
}
PT_EXPORT CUresult cuMemcpy2DAsync(const CUDA_MEMCPY2D* pCopy, CUstream hStream) {
  return detail::copy_2d(pCopy, hStream, true, "cuMemcpy2DAsync_v2");
}
PT_EXPORT CUresult cuMemcpy3D(const CUDA_MEMCPY3D* pCopy) {
  return detail::copy_3d(pCopy, nullptr, false, "cuMemcpy3D_v2");
}
PT_EXPORT CUresult cuMemcpy3DAsync(const CUDA_MEMCPY3D* pCopy, CUstream hStream) {
  return detail::copy_3d(pCopy, hStream, true, "cuMemcpy3DAsync_v2");
}

// Per-thread default stream (`--default-stream per-thread`): a NULL stream is the calling
// thread's default stream, CU_STREAM_PER_THREAD passed explicitly.
PT_EXPORT CUresult cuMemcpyHtoA_v2_ptds(CUarray dstArray, size_t dstOffset, const void* srcHost,
                                        size_t ByteCount) {
  return detail::htoa(dstArray, dstOffset, srcHost, ByteCount, CU_STREAM_PER_THREAD, false,
                      "cuMemcpyHtoA_v2_ptds");
}
PT_EXPORT CUresult cuMemcpyHtoAAsync_v2_ptsz(CUarray dstArray, size_t dstOffset,
                                             const void* srcHost, size_t ByteCount,
                                             CUstream hStream) {
  return detail::htoa(dstArray, dstOffset, srcHost, ByteCount, per_thread(hStream), true,
                      "cuMemcpyHtoAAsync_v2_ptsz");
}
PT_EXPORT CUresult cuMemcpyAtoH_v2_ptds(void* dstHost, CUarray srcArray, size_t srcOffset,
                                        size_t ByteCount) {
  return detail::atoh(dstHost, srcArray, srcOffset, ByteCount, CU_STREAM_PER_THREAD, false,
                      "cuMemcpyAtoH_v2_ptds");
}
PT_EXPORT CUresult cuMemcpyAtoHAsync_v2_ptsz(void* dstHost, CUarray srcArray, size_t srcOffset,
                                             size_t ByteCount, CUstream hStream) {
  return detail::atoh(dstHost, srcArray, srcOffset, ByteCount, per_thread(hStream), true,
                      "cuMemcpyAtoHAsync_v2_ptsz");
}
PT_EXPORT CUresult cuMemcpyAtoD_v2_ptds(CUdeviceptr dstDevice, CUarray srcArray, size_t srcOffset,
                                        size_t ByteCount) {
  return detail::atod(dstDevice, srcArray, srcOffset, ByteCount, CU_STREAM_PER_THREAD,
                      "cuMemcpyAtoD_v2_ptds");
}
PT_EXPORT CUresult cuMemcpyDtoA_v2_ptds(CUarray dstArray, size_t dstOffset, CUdeviceptr srcDevice,
                                        size_t ByteCount) {
  return detail::dtoa(dstArray, dstOffset, srcDevice, ByteCount, CU_STREAM_PER_THREAD,
                      "cuMemcpyDtoA_v2_ptds");
}
PT_EXPORT CUresult cuMemcpyAtoA_v2_ptds(CUarray dstArray, size_t dstOffset, CUarray srcArray,
                                        size_t srcOffset, size_t ByteCount) {
  return detail::atoa(dstArray, dstOffset, srcArray, srcOffset, ByteCount, CU_STREAM_PER_THREAD,
                      "cuMemcpyAtoA_v2_ptds");
}
PT_EXPORT CUresult cuMemcpy2D_v2_ptds(const CUDA_MEMCPY2D* pCopy) {
  return detail::copy_2d(pCopy, CU_STREAM_PER_THREAD, false, "cuMemcpy2D_v2_ptds");
}
PT_EXPORT CUresult cuMemcpy2DUnaligned_v2_ptds(const CUDA_MEMCPY2D* pCopy) {
  return detail::copy_2d(pCopy, CU_STREAM_PER_THREAD, false, "cuMemcpy2DUnaligned_v2_ptds");
}
PT_EXPORT CUresult cuMemcpy2DAsync_v2_ptsz(const CUDA_MEMCPY2D* pCopy, CUstream hStream) {
  return detail::copy_2d(pCopy, per_thread(hStream), true, "cuMemcpy2DAsync_v2_ptsz");
}
PT_EXPORT CUresult cuMemcpy3D_v2_ptds(const CUDA_MEMCPY3D* pCopy) {
  return detail::copy_3d(pCopy, CU_STREAM_PER_THREAD, false, "cuMemcpy3D_v2_ptds");
}
PT_EXPORT CUresult cuMemcpy3DAsync_v2_ptsz(const CUDA_MEMCPY3D* pCopy, CUstream hStream) {
  return detail::copy_3d(pCopy, per_thread(hStream), true, "cuMemcpy3DAsync_v2_ptsz");
}

PT_EXPORT CUresult cuTexObjectCreate(CUtexObject* pTexObject, const CUDA_RESOURCE_DESC* pResDesc,
                                     const CUDA_TEXTURE_DESC* pTexDesc,
                                     const CUDA_RESOURCE_VIEW_DESC* pResViewDesc) {
  const char* api = "cuTexObjectCreate";
  if (pTexObject == nullptr || pResDesc == nullptr || pTexDesc == nullptr) {
    return detail::driver_invalid(api, "pTexObject, pResDesc or pTexDesc is NULL");
  }
  cudaResourceDesc resource;
  if (!detail::to_runtime(*pResDesc, &resource, api)) return CUDA_ERROR_INVALID_VALUE;
  cudaTextureDesc texture{};
  for (int i = 0; i < 3; ++i) {
    texture.addressMode[i] = static_cast<cudaTextureAddressMode>(pTexDesc->addressMode[i]);
  }
  texture.filterMode = static_cast<cudaTextureFilterMode>(pTexDesc->filterMode);
  texture.mipmapFilterMode = static_cast<cudaTextureFilterMode>(pTexDesc->mipmapFilterMode);
  // Without CU_TRSF_READ_AS_INTEGER the driver promotes 8- and 16-bit integers to [0, 1] floats.
  const cudaChannelFormatDesc format = detail::resource_format(resource);
  const bool small_integer =
      (format.f == cudaChannelFormatKindSigned || format.f == cudaChannelFormatKindUnsigned) &&
      format.x <= 16;
  texture.readMode = small_integer && (pTexDesc->flags & CU_TRSF_READ_AS_INTEGER) == 0
                         ? cudaReadModeNormalizedFloat
                         : cudaReadModeElementType;
  texture.normalizedCoords = (pTexDesc->flags & CU_TRSF_NORMALIZED_COORDINATES) != 0;
  texture.sRGB = (pTexDesc->flags & CU_TRSF_SRGB) != 0;
  texture.maxAnisotropy = pTexDesc->maxAnisotropy;
  texture.mipmapLevelBias = pTexDesc->mipmapLevelBias;
  texture.minMipmapLevelClamp = pTexDesc->minMipmapLevelClamp;
  texture.maxMipmapLevelClamp = pTexDesc->maxMipmapLevelClamp;
  for (int i = 0; i < 4; ++i) texture.borderColor[i] = pTexDesc->borderColor[i];
  cudaResourceViewDesc view{};
  if (pResViewDesc != nullptr) {
    view.format = static_cast<cudaResourceViewFormat>(pResViewDesc->format);
    view.width = pResViewDesc->width;
    view.height = pResViewDesc->height;
    view.depth = pResViewDesc->depth;
    view.firstMipmapLevel = pResViewDesc->firstMipmapLevel;
    view.lastMipmapLevel = pResViewDesc->lastMipmapLevel;
    view.firstLayer = pResViewDesc->firstLayer;
    view.lastLayer = pResViewDesc->lastLayer;
  }
  detail::ErrorScope scope;
  return detail::to_driver(detail::create_texture_object(
      pTexObject, &resource, &texture, pResViewDesc != nullptr ? &view : nullptr, api));
}

PT_EXPORT CUresult cuTexObjectDestroy(CUtexObject texObject) {
  detail::ErrorScope scope;
  return detail::to_driver(detail::destroy_texture_object(texObject, "cuTexObjectDestroy"));
}

PT_EXPORT CUresult cuTexObjectGetResourceDesc(CUDA_RESOURCE_DESC* pResDesc, CUtexObject texObject) {
  const char* api = "cuTexObjectGetResourceDesc";
  if (pResDesc == nullptr) return detail::driver_invalid(api, "pResDesc is NULL");
  cudaResourceDesc resource;
  detail::ErrorScope scope;
  const cudaError_t error =
      detail::texture_object_descs(texObject, &resource, nullptr, nullptr, api);
  if (error != cudaSuccess) return detail::to_driver(error);
  detail::to_driver_desc(resource, pResDesc);
  return CUDA_SUCCESS;
}

PT_EXPORT CUresult cuSurfObjectCreate(CUsurfObject* pSurfObject,
                                      const CUDA_RESOURCE_DESC* pResDesc) {
  const char* api = "cuSurfObjectCreate";
  if (pSurfObject == nullptr || pResDesc == nullptr) {
    return detail::driver_invalid(api, "pSurfObject or pResDesc is NULL");
  }
  cudaResourceDesc resource;
  if (!detail::to_runtime(*pResDesc, &resource, api)) return CUDA_ERROR_INVALID_VALUE;
  detail::ErrorScope scope;
  return detail::to_driver(detail::create_surface_object(pSurfObject, &resource, api));
}

PT_EXPORT CUresult cuSurfObjectDestroy(CUsurfObject surfObject) {
  detail::ErrorScope scope;
  return detail::to_driver(detail::destroy_surface_object(surfObject, "cuSurfObjectDestroy"));
}

PT_EXPORT CUresult cuSurfObjectGetResourceDesc(CUDA_RESOURCE_DESC* pResDesc,
                                               CUsurfObject surfObject) {
  const char* api = "cuSurfObjectGetResourceDesc";
  if (pResDesc == nullptr) return detail::driver_invalid(api, "pResDesc is NULL");
  cudaResourceDesc resource;
  detail::ErrorScope scope;
  const cudaError_t error = detail::surface_object_desc(surfObject, &resource, api);
  if (error != cudaSuccess) return detail::to_driver(error);
  detail::to_driver_desc(resource, pResDesc);
  return CUDA_SUCCESS;
}

// ---- 3D copies between contexts (cuMemcpy3DPeer): the same copy as cuMemcpy3D, since every
// emulated device's memory is addressed in one space; the contexts must be live.

namespace {
CUresult copy_3d_peer(const CUDA_MEMCPY3D_PEER* p, CUstream stream, bool async, const char* api) {
  if (p == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (detail::driver_context_device(p->srcContext) < 0 ||
      detail::driver_context_device(p->dstContext) < 0) {
    return CUDA_ERROR_INVALID_CONTEXT;
  }
  CUDA_MEMCPY3D copy{};
  copy.srcXInBytes = p->srcXInBytes;
  copy.srcY = p->srcY;
  copy.srcZ = p->srcZ;
  copy.srcLOD = p->srcLOD;
  copy.srcMemoryType = p->srcMemoryType;
  copy.srcHost = p->srcHost;
  copy.srcDevice = p->srcDevice;
  copy.srcArray = p->srcArray;
  copy.srcPitch = p->srcPitch;
  copy.srcHeight = p->srcHeight;
  copy.dstXInBytes = p->dstXInBytes;
  copy.dstY = p->dstY;
  copy.dstZ = p->dstZ;
  copy.dstLOD = p->dstLOD;
  copy.dstMemoryType = p->dstMemoryType;
  copy.dstHost = p->dstHost;
  copy.dstDevice = p->dstDevice;
  copy.dstArray = p->dstArray;
  copy.dstPitch = p->dstPitch;
  copy.dstHeight = p->dstHeight;
  copy.WidthInBytes = p->WidthInBytes;
  copy.Height = p->Height;
  copy.Depth = p->Depth;
  return detail::copy_3d(&copy, stream, async, api);
}
}  // namespace

PT_EXPORT CUresult cuMemcpy3DPeer(const CUDA_MEMCPY3D_PEER* pCopy) {
  return copy_3d_peer(pCopy, nullptr, false, "cuMemcpy3DPeer");
}
PT_EXPORT CUresult cuMemcpy3DPeerAsync(const CUDA_MEMCPY3D_PEER* pCopy, CUstream hStream) {
  return copy_3d_peer(pCopy, hStream, true, "cuMemcpy3DPeerAsync");
}
PT_EXPORT CUresult cuMemcpy3DPeer_ptds(const CUDA_MEMCPY3D_PEER* pCopy) {
  return copy_3d_peer(pCopy, CU_STREAM_PER_THREAD, false, "cuMemcpy3DPeer_ptds");
}
PT_EXPORT CUresult cuMemcpy3DPeerAsync_ptsz(const CUDA_MEMCPY3D_PEER* pCopy, CUstream hStream) {
  return copy_3d_peer(pCopy, per_thread(hStream), true, "cuMemcpy3DPeerAsync_ptsz");
}
