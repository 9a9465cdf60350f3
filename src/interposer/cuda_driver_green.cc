// Green contexts (CUDA 12.4): SM resources of a device split into groups, a descriptor per
// group, a green context per descriptor and streams inside it (FlashInfer's and SGLang's SM
// partitioning, PyTorch's torch.cuda.green_contexts). The emulator keeps the partition (SM counts,
// which stream belongs to which green context) but times every kernel on the whole device: the
// first green context of a process says so in an `assumption` record.
#include <cuda.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <string>

#include "interposer/cuda_driver_common.h"
#include "interposer/cudart_internal.h"
#include "interposer/emulator.h"

namespace detail = powertrain::emu::detail;
using detail::ErrorScope;
using detail::to_driver;

namespace {

// Stored in the resource's internal padding (the API's own bytes): which device the resource
// is of, and which split made it (resources given to one descriptor must come from one split).
struct ResourceTag {
  std::uint32_t magic;
  std::int32_t device;
  std::uint64_t split;
};
constexpr std::uint32_t kResourceMagic = 0x50545352;  // "PTSR"
static_assert(sizeof(ResourceTag) <= sizeof(CUdevResource::_internal_padding));

struct Descriptor {
  int device = 0;
  unsigned int sms = 0;
};

struct GreenContext {
  int device = 0;
  unsigned int sms = 0;
  unsigned long long id = 0;
  bool live = true;
};

struct GreenState {
  std::mutex mutex;
  std::map<const void*, Descriptor> descriptors;    // CUdevResourceDesc handles
  std::map<const void*, GreenContext> contexts;     // CUgreenCtx handles
  std::map<const void*, const void*> stream_owner;  // CUstream → CUgreenCtx
  std::uint64_t next_split = 1;
  std::uintptr_t next_handle = 0x47000;  // handles are tags, never dereferenced
  unsigned long long next_id = 1;
  bool reported = false;
};

GreenState& green_state() {
  static auto* s = new GreenState;  // never destroyed
  return *s;
}

// Partition sizes the CUDA programming guide gives per architecture: the smallest group and
// the step its size grows in (SMs of one GPC are co-scheduled on Hopper and later).
void partition_rules(unsigned int flags, unsigned int* minimum, unsigned int* alignment) {
  const detail::Config& c = detail::config();
  const bool ignore = (flags & CU_DEV_SM_RESOURCE_SPLIT_IGNORE_SM_COSCHEDULING) != 0;
  if (c.cc_major >= 9 && !ignore) {
    *minimum = 8;
    *alignment = 8;
  } else if (c.cc_major == 8 && !ignore) {
    *minimum = 4;
    *alignment = 2;
  } else {
    *minimum = 2;
    *alignment = 2;
  }
}

void fill_resource(CUdevResource* out, int device, unsigned int sms, std::uint64_t split) {
  std::memset(static_cast<void*>(out), 0, sizeof *out);
  out->type = CU_DEV_RESOURCE_TYPE_SM;
  out->sm.smCount = sms;
  unsigned int minimum = 0;
  unsigned int alignment = 0;
  partition_rules(0, &minimum, &alignment);
  out->sm.minSmPartitionSize = minimum;
  out->sm.smCoscheduledAlignment = alignment;
  const ResourceTag tag{kResourceMagic, device, split};
  std::memcpy(out->_internal_padding, &tag, sizeof tag);
}

bool read_tag(const CUdevResource& r, ResourceTag* tag) {
  std::memcpy(tag, r._internal_padding, sizeof *tag);
  return r.type == CU_DEV_RESOURCE_TYPE_SM && tag->magic == kResourceMagic &&
         detail::valid_device(tag->device);
}

const GreenContext* live_green(GreenState& s, CUgreenCtx handle) {
  const auto it = s.contexts.find(handle);
  return it != s.contexts.end() && it->second.live ? &it->second : nullptr;
}

}  // namespace

PT_EXPORT CUresult cuDeviceGetDevResource(CUdevice device, CUdevResource* resource,
                                          CUdevResourceType type) {
  if (resource == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!detail::valid_device(device)) return CUDA_ERROR_INVALID_DEVICE;
  if (type != CU_DEV_RESOURCE_TYPE_SM) return CUDA_ERROR_INVALID_RESOURCE_TYPE;
  fill_resource(resource, device, static_cast<unsigned int>(detail::config().sm_count), 0);
  return CUDA_SUCCESS;
}

PT_EXPORT CUresult cuCtxGetDevResource(CUcontext ctx, CUdevResource* resource,
                                       CUdevResourceType type) {
  const int device = detail::driver_context_device(ctx);
  if (device < 0) return CUDA_ERROR_INVALID_CONTEXT;
  return cuDeviceGetDevResource(device, resource, type);
}

// Groups of max(minCount, the architecture's smallest group) SMs rounded up to its step, as many
// as fit (or as asked for); the rest is the remainder.
PT_EXPORT CUresult cuDevSmResourceSplitByCount(CUdevResource* result, unsigned int* nbGroups,
                                               const CUdevResource* input, CUdevResource* remaining,
                                               unsigned int useFlags, unsigned int minCount) {
  const char* api = "cuDevSmResourceSplitByCount";
  if (nbGroups == nullptr || input == nullptr || (result != nullptr && *nbGroups == 0)) {
    return detail::driver_misuse(api, CUDA_ERROR_INVALID_VALUE,
                                 "nbGroups or input NULL, or no room for results");
  }
  ResourceTag tag{};
  if (!read_tag(*input, &tag)) {
    return detail::driver_misuse(
        api, CUDA_ERROR_INVALID_RESOURCE_TYPE,
        "input is not an SM resource from cuDeviceGetDevResource, cuCtxGetDevResource "
        "or cuGreenCtxGetDevResource");
  }
  if (tag.split != 0) {
    return detail::driver_misuse(
        api, CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION,
        "a split's result cannot be split again before a green context is made of it");
  }
  if ((useFlags &
       ~static_cast<unsigned int>(CU_DEV_SM_RESOURCE_SPLIT_IGNORE_SM_COSCHEDULING |
                                  CU_DEV_SM_RESOURCE_SPLIT_MAX_POTENTIAL_CLUSTER_SIZE)) != 0) {
    return detail::driver_misuse(api, CUDA_ERROR_INVALID_VALUE,
                                 "unknown useFlags " + std::to_string(useFlags));
  }
  const unsigned int total = input->sm.smCount;
  if (minCount > total) {
    return detail::driver_misuse(api, CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION,
                                 "minCount " + std::to_string(minCount) + " exceeds the input's " +
                                     std::to_string(total) + " SMs");
  }
  unsigned int minimum = 0;
  unsigned int alignment = 0;
  partition_rules(useFlags, &minimum, &alignment);
  unsigned int group = std::max(minCount, minimum);
  group = (group + alignment - 1) / alignment * alignment;
  const unsigned int fit = group > 0 && group <= total ? total / group : 0;
  if (result == nullptr) {
    *nbGroups = fit;
    return CUDA_SUCCESS;
  }
  const unsigned int made = std::min(*nbGroups, fit);
  std::uint64_t split = 0;
  {
    GreenState& s = green_state();
    std::lock_guard<std::mutex> lock(s.mutex);
    split = s.next_split++;
  }
  for (unsigned int g = 0; g < made; ++g) fill_resource(&result[g], tag.device, group, split);
  if (remaining != nullptr) fill_resource(remaining, tag.device, total - made * group, split);
  *nbGroups = made;
  return CUDA_SUCCESS;
}

PT_EXPORT CUresult cuDevResourceGenerateDesc(CUdevResourceDesc* phDesc, CUdevResource* resources,
                                             unsigned int nbResources) {
  const char* api = "cuDevResourceGenerateDesc";
  if (phDesc == nullptr || resources == nullptr || nbResources == 0) {
    return detail::driver_misuse(api, CUDA_ERROR_INVALID_VALUE,
                                 "phDesc or resources NULL, or nbResources 0");
  }
  Descriptor d;
  ResourceTag first{};
  for (unsigned int i = 0; i < nbResources; ++i) {
    ResourceTag tag{};
    if (!read_tag(resources[i], &tag)) {
      return detail::driver_misuse(api, CUDA_ERROR_INVALID_RESOURCE_TYPE,
                                   "resources[" + std::to_string(i) + "] is not an SM resource");
    }
    if (i == 0) first = tag;
    if (tag.device != first.device || (nbResources > 1 && tag.split != first.split)) {
      return detail::driver_misuse(
          api, CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION,
          "resources of one descriptor must come from one device and one split");
    }
    d.sms += resources[i].sm.smCount;
  }
  d.device = first.device;
  GreenState& s = green_state();
  std::lock_guard<std::mutex> lock(s.mutex);
  const auto* handle = reinterpret_cast<const void*>(s.next_handle += 0x10);
  s.descriptors[handle] = d;
  *phDesc = reinterpret_cast<CUdevResourceDesc>(const_cast<void*>(handle));
  return CUDA_SUCCESS;
}

PT_EXPORT CUresult cuGreenCtxCreate(CUgreenCtx* phCtx, CUdevResourceDesc desc, CUdevice dev,
                                    unsigned int flags) {
  const char* api = "cuGreenCtxCreate";
  if (phCtx == nullptr)
    return detail::driver_misuse(api, CUDA_ERROR_INVALID_VALUE, "phCtx is NULL");
  if ((flags & CU_GREEN_CTX_DEFAULT_STREAM) == 0) {
    return detail::driver_misuse(api, CUDA_ERROR_INVALID_VALUE,
                                 "flags must include CU_GREEN_CTX_DEFAULT_STREAM");
  }
  if (!detail::valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
  GreenState& s = green_state();
  bool first = false;
  GreenContext made;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    const auto it = s.descriptors.find(desc);
    if (it == s.descriptors.end()) {
      return detail::driver_misuse(api, CUDA_ERROR_INVALID_VALUE,
                                   "desc was not made by cuDevResourceGenerateDesc");
    }
    if (it->second.device != dev) {
      return detail::driver_misuse(api, CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION,
                                   "desc describes device " + std::to_string(it->second.device) +
                                       ", not " + std::to_string(dev));
    }
    made.device = dev;
    made.sms = it->second.sms;
    made.id = s.next_id++;
    const auto* handle = reinterpret_cast<const void*>(s.next_handle += 0x10);
    s.contexts[handle] = made;
    *phCtx = reinterpret_cast<CUgreenCtx>(const_cast<void*>(handle));
    first = !s.reported;
    s.reported = true;
  }
  if (first) {
    powertrain::emu::report_assumption(
        api, "green contexts keep their SM counts (the first: " + std::to_string(made.sms) +
                 " of " + std::to_string(detail::config().sm_count) +
                 "), but their kernels are timed on the whole device");
  }
  return CUDA_SUCCESS;
}

PT_EXPORT CUresult cuGreenCtxDestroy(CUgreenCtx hCtx) {
  GreenState& s = green_state();
  std::lock_guard<std::mutex> lock(s.mutex);
  const auto it = s.contexts.find(hCtx);
  if (it == s.contexts.end() || !it->second.live) {
    return detail::driver_misuse("cuGreenCtxDestroy", CUDA_ERROR_INVALID_CONTEXT,
                                 "not a live green context: " + detail::pointer_text(hCtx));
  }
  it->second.live = false;
  return CUDA_SUCCESS;
}

// The green context as a CUcontext: its device's context (one per emulated device), so making
// it current selects the device.
PT_EXPORT CUresult cuCtxFromGreenCtx(CUcontext* pContext, CUgreenCtx hCtx) {
  if (pContext == nullptr) return CUDA_ERROR_INVALID_VALUE;
  GreenState& s = green_state();
  std::lock_guard<std::mutex> lock(s.mutex);
  const GreenContext* g = live_green(s, hCtx);
  if (g == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  *pContext = detail::driver_primary_context(g->device);
  return CUDA_SUCCESS;
}

PT_EXPORT CUresult cuGreenCtxGetDevResource(CUgreenCtx hCtx, CUdevResource* resource,
                                            CUdevResourceType type) {
  if (resource == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (type != CU_DEV_RESOURCE_TYPE_SM) return CUDA_ERROR_INVALID_RESOURCE_TYPE;
  GreenState& s = green_state();
  std::lock_guard<std::mutex> lock(s.mutex);
  const GreenContext* g = live_green(s, hCtx);
  if (g == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  fill_resource(resource, g->device, g->sms, 0);
  return CUDA_SUCCESS;
}

PT_EXPORT CUresult cuGreenCtxGetId(CUgreenCtx greenCtx, unsigned long long* greenCtxId) {
  if (greenCtxId == nullptr) return CUDA_ERROR_INVALID_VALUE;
  GreenState& s = green_state();
  std::lock_guard<std::mutex> lock(s.mutex);
  const GreenContext* g = live_green(s, greenCtx);
  if (g == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  *greenCtxId = g->id;
  return CUDA_SUCCESS;
}

// A stream of the green context's device (non-blocking, as CUDA requires), remembered as the
// green context's.
PT_EXPORT CUresult cuGreenCtxStreamCreate(CUstream* phStream, CUgreenCtx greenCtx,
                                          unsigned int flags, int priority) {
  const char* api = "cuGreenCtxStreamCreate";
  if (phStream == nullptr)
    return detail::driver_misuse(api, CUDA_ERROR_INVALID_VALUE, "phStream is NULL");
  if ((flags & CU_STREAM_NON_BLOCKING) == 0) {
    return detail::driver_misuse(api, CUDA_ERROR_INVALID_VALUE,
                                 "flags must include CU_STREAM_NON_BLOCKING");
  }
  int device = 0;
  {
    GreenState& s = green_state();
    std::lock_guard<std::mutex> lock(s.mutex);
    const GreenContext* g = live_green(s, greenCtx);
    if (g == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
    device = g->device;
  }
  if (const CUresult pushed = cuCtxPushCurrent(detail::driver_primary_context(device));
      pushed != CUDA_SUCCESS) {
    return pushed;
  }
  const CUresult made = cuStreamCreateWithPriority(phStream, flags, priority);
  cuCtxPopCurrent(nullptr);
  if (made != CUDA_SUCCESS) return made;
  GreenState& s = green_state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.stream_owner[*phStream] = greenCtx;
  return CUDA_SUCCESS;
}

PT_EXPORT CUresult cuStreamGetGreenCtx(CUstream hStream, CUgreenCtx* phCtx) {
  if (phCtx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  GreenState& s = green_state();
  std::lock_guard<std::mutex> lock(s.mutex);
  const auto it = s.stream_owner.find(hStream);
  *phCtx = it != s.stream_owner.end() ? reinterpret_cast<CUgreenCtx>(const_cast<void*>(it->second))
                                      : nullptr;
  return CUDA_SUCCESS;
}
