// NVML (libnvidia-ml.so.1) on the emulated devices, for the programs that ask it what GPUs they
// have and lock their clocks (Zeus, the powertrain client, benchmark scripts). The build makes a
// thin driver/libnvidia-ml.so.1 that needs libpowertrain_cuda.so (as driver/libcuda.so.1 does),
// so dlopen("libnvidia-ml.so.1") finds these functions.
//
// Answered from the emulator's configuration: the node's GPUs (the process's CUDA devices are a
// slice of them: POWERTRAIN_EMU_NODE_GPUS, POWERTRAIN_EMU_FIRST_NODE_GPU), names, UUIDs (the
// driver's, for the GPUs the process sees), memory in use (the emulator's own accounting), compute
// capability, the supported SM clocks (the GPU model's range and step, highest first as NVML
// lists them) and memory clock, power limits. Clock locks (nvmlDeviceSetGpuLockedClocks,
// nvmlDeviceSetApplicationsClocks and their resets) are kept per device and written as
// `clock_lock` records: the analysis times the work launched afterwards, and models its energy,
// at the locked clock. Measurements the emulator does not have — power draw, the energy
// counter, temperature, utilization — return NVML_ERROR_NOT_SUPPORTED and are reported as
// unsupported by name: the analysis's energy is modelled, never measured.
#include <cuda.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <string_view>

#include "interposer/cudart_internal.h"
#include "interposer/emulator.h"
#include "interposer/trace_schema.h"

namespace {

namespace emu = powertrain::emu;
namespace detail = powertrain::emu::detail;
namespace schema = powertrain::trace_schema;

// nvml.h's values (the header is not part of the CUDA toolkit here).
using nvmlReturn_t = int;
constexpr nvmlReturn_t kSuccess = 0;
constexpr nvmlReturn_t kUninitialized = 1;
constexpr nvmlReturn_t kInvalidArgument = 2;
constexpr nvmlReturn_t kNotSupported = 3;
constexpr nvmlReturn_t kNotFound = 6;
constexpr nvmlReturn_t kInsufficientSize = 7;
constexpr int kClockGraphics = 0;  // nvmlClockType_t
constexpr int kClockSm = 1;
constexpr int kClockMem = 2;
constexpr int kClockVideo = 3;
constexpr int kClockIdCurrent = 0;  // nvmlClockId_t
constexpr int kClockIdAppTarget = 1;
constexpr int kClockIdAppDefault = 2;
constexpr int kClockIdBoostMax = 3;

struct Memory {  // nvmlMemory_t
  unsigned long long total, free, used;
};

struct Device {  // what an nvmlDevice_t points to
  unsigned index = 0;
  unsigned locked_min_mhz = 0;  // 0: not locked
  unsigned locked_max_mhz = 0;
  unsigned app_mhz = 0;         // 0: the default applications clock
  unsigned power_limit_mw = 0;  // 0: the default limit
};

constexpr unsigned kMaxDevices = 1024;

struct State {
  std::mutex mutex;
  int init_count = 0;
  std::array<Device, kMaxDevices> devices{};
};

State& state() {
  static auto* s = new State;  // never destroyed
  return *s;
}

// NVML lists the node's GPUs, whatever the process sees through CUDA.
unsigned device_count() {
  return static_cast<unsigned>(std::min<int>(detail::config().node_gpus, kMaxDevices));
}

// The process's CUDA ordinal of NVML device `d`, or -1 when the process does not see it.
int cuda_ordinal(const Device& d) {
  const int ordinal = static_cast<int>(d.index) - detail::config().first_node_gpu;
  return ordinal >= 0 && ordinal < detail::config().devices ? ordinal : -1;
}

unsigned max_mhz() { return static_cast<unsigned>(detail::config().clock_mhz); }
unsigned min_mhz() { return static_cast<unsigned>(detail::config().min_clock_mhz); }
unsigned step_mhz() { return static_cast<unsigned>(std::max(1, detail::config().clock_step_mhz)); }
unsigned memory_mhz() { return static_cast<unsigned>(detail::sm_limits().memory_clock_khz / 1000); }
unsigned default_power_mw() { return static_cast<unsigned>(detail::config().power_limit_w) * 1000; }

// The device behind a handle, or nullptr (reported) for anything else.
Device* device_of(void* handle, const char* api) {
  State& s = state();
  auto* d = static_cast<Device*>(handle);
  if (d < s.devices.data() || d >= s.devices.data() + device_count()) {
    emu::report_misuse(api, "invalid device handle " + detail::pointer_text(handle));
    return nullptr;
  }
  return d;
}

bool initialized() {
  std::lock_guard<std::mutex> lock(state().mutex);
  return state().init_count > 0;
}

// The SM clock the device runs at: the top of a locked range, else the applications clock, else
// the highest (a busy GPU boosts to it).
unsigned current_sm_mhz(const Device& d) {
  if (d.locked_max_mhz > 0) return d.locked_max_mhz;
  return d.app_mhz > 0 ? d.app_mhz : max_mhz();
}

// A clock within the supported range, rounded down to the supported step (as the driver does).
unsigned supported(unsigned mhz) {
  const unsigned clamped = std::clamp(mhz, min_mhz(), max_mhz());
  return min_mhz() + (clamped - min_mhz()) / step_mhz() * step_mhz();
}

// A clock change of a GPU the process sees is written for the analysis (on its CUDA ordinal);
// one of another process's GPUs changes only what NVML answers here.
void record_lock(const char* api, const Device& d) {
  const int ordinal = cuda_ordinal(d);
  if (ordinal < 0) return;
  auto record = emu::begin_record(schema::op::kClockLock, emu::now_ns(), ordinal);
  const bool locked = d.locked_max_mhz > 0 || d.app_mhz > 0;
  record.field(schema::field::kMinMhz,
               static_cast<std::int64_t>(d.locked_max_mhz > 0 ? d.locked_min_mhz
                                         : locked             ? d.app_mhz
                                                              : 0));
  record.field(schema::field::kMaxMhz, static_cast<std::int64_t>(locked ? current_sm_mhz(d) : 0));
  record.field(schema::field::kApi, std::string_view(api));
  emu::end_record(record);
}

nvmlReturn_t copy_text(const std::string& text, char* out, unsigned length) {
  if (out == nullptr) return kInvalidArgument;
  if (text.size() + 1 > length) return kInsufficientSize;
  std::memcpy(out, text.c_str(), text.size() + 1);
  return kSuccess;
}

nvmlReturn_t measurement(const char* api) {
  emu::report_unsupported(api);
  return kNotSupported;
}

}  // namespace

// ---- library
// -------------------------------------------------------------------------------------

PT_EXPORT nvmlReturn_t nvmlInit_v2() {
  std::lock_guard<std::mutex> lock(state().mutex);
  State& s = state();
  for (unsigned i = 0; i < kMaxDevices; ++i) s.devices[i].index = i;
  ++s.init_count;
  return kSuccess;
}
PT_EXPORT nvmlReturn_t nvmlInit() { return nvmlInit_v2(); }
PT_EXPORT nvmlReturn_t nvmlInitWithFlags(unsigned int) { return nvmlInit_v2(); }

PT_EXPORT nvmlReturn_t nvmlShutdown() {
  std::lock_guard<std::mutex> lock(state().mutex);
  if (state().init_count == 0) return kUninitialized;
  --state().init_count;
  return kSuccess;
}

PT_EXPORT const char* nvmlErrorString(nvmlReturn_t result) {
  switch (result) {
    case kSuccess:
      return "Success";
    case kUninitialized:
      return "Uninitialized";
    case kInvalidArgument:
      return "Invalid Argument";
    case kNotSupported:
      return "Not Supported";
    case kNotFound:
      return "Not Found";
    case kInsufficientSize:
      return "Insufficient Size";
    default:
      return "Unknown Error";
  }
}

PT_EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length) {
  return copy_text("580.65.06", version, length);  // a CUDA 13.0 driver
}

PT_EXPORT nvmlReturn_t nvmlSystemGetNVMLVersion(char* version, unsigned int length) {
  return copy_text("13.580.65.06", version, length);
}

PT_EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion(int* version) {
  if (version == nullptr) return kInvalidArgument;
  *version = 13000;
  return kSuccess;
}
PT_EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int* version) {
  return nvmlSystemGetCudaDriverVersion(version);
}

// ---- devices
// -------------------------------------------------------------------------------------

PT_EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* count) {
  if (!initialized()) return kUninitialized;
  if (count == nullptr) return kInvalidArgument;
  *count = device_count();
  return kSuccess;
}
PT_EXPORT nvmlReturn_t nvmlDeviceGetCount(unsigned int* count) {
  return nvmlDeviceGetCount_v2(count);
}

PT_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, void** device) {
  if (!initialized()) return kUninitialized;
  if (device == nullptr || index >= device_count()) return kInvalidArgument;
  *device = &state().devices[index];
  return kSuccess;
}
PT_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, void** device) {
  return nvmlDeviceGetHandleByIndex_v2(index, device);
}

PT_EXPORT nvmlReturn_t nvmlDeviceGetIndex(void* device, unsigned int* index) {
  const Device* d = device_of(device, "nvmlDeviceGetIndex");
  if (d == nullptr || index == nullptr) return kInvalidArgument;
  *index = d->index;
  return kSuccess;
}

PT_EXPORT nvmlReturn_t nvmlDeviceGetName(void* device, char* name, unsigned int length) {
  if (device_of(device, "nvmlDeviceGetName") == nullptr) return kInvalidArgument;
  return copy_text(detail::config().gpu_name, name, length);
}

PT_EXPORT nvmlReturn_t nvmlDeviceGetUUID(void* device, char* uuid, unsigned int length) {
  const Device* d = device_of(device, "nvmlDeviceGetUUID");
  if (d == nullptr) return kInvalidArgument;
  // The driver's UUID of the process's CUDA device (independent of the runtime ABI's structs).
  const int ordinal = cuda_ordinal(*d);
  CUuuid id{};
  if (ordinal < 0) {
    std::snprintf(id.bytes, sizeof id.bytes, "pt-nvml-%07u", d->index);  // not this process's
  } else if (cuDeviceGetUuid_v2(&id, ordinal) != CUDA_SUCCESS) {
    return kInvalidArgument;
  }
  char text[48];
  const auto* b = reinterpret_cast<const unsigned char*>(id.bytes);
  std::snprintf(text, sizeof text,
                "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
                b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
                b[14], b[15]);
  return copy_text(text, uuid, length);
}

PT_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(void* device, Memory* memory) {
  const Device* d = device_of(device, "nvmlDeviceGetMemoryInfo");
  if (d == nullptr || memory == nullptr) return kInvalidArgument;
  // As cudaMemGetInfo counts it: this process's allocations and its context's reservation (a GPU
  // the process does not see: nothing known in use).
  const std::int64_t total = detail::config().memory_bytes;
  const int ordinal = cuda_ordinal(*d);
  const std::int64_t used =
      ordinal < 0 ? 0 : detail::used_bytes(ordinal) + detail::config().reserved_bytes;
  const std::int64_t free = std::max<std::int64_t>(0, total - used);
  memory->total = static_cast<unsigned long long>(total);
  memory->free = static_cast<unsigned long long>(free);
  memory->used = static_cast<unsigned long long>(total - free);
  return kSuccess;
}

PT_EXPORT nvmlReturn_t nvmlDeviceGetCudaComputeCapability(void* device, int* major, int* minor) {
  if (device_of(device, "nvmlDeviceGetCudaComputeCapability") == nullptr || major == nullptr ||
      minor == nullptr) {
    return kInvalidArgument;
  }
  *major = detail::config().cc_major;
  *minor = detail::config().cc_minor;
  return kSuccess;
}

PT_EXPORT nvmlReturn_t nvmlDeviceGetPersistenceMode(void* device, int* mode) {
  if (device_of(device, "nvmlDeviceGetPersistenceMode") == nullptr || mode == nullptr) {
    return kInvalidArgument;
  }
  *mode = 1;  // NVML_FEATURE_ENABLED, as on data-center nodes
  return kSuccess;
}

PT_EXPORT nvmlReturn_t nvmlDeviceGetComputeMode(void* device, int* mode) {
  if (device_of(device, "nvmlDeviceGetComputeMode") == nullptr || mode == nullptr) {
    return kInvalidArgument;
  }
  *mode = 0;  // NVML_COMPUTEMODE_DEFAULT
  return kSuccess;
}

// ---- clocks
// ----------------------------------------------------------------------------------------

PT_EXPORT nvmlReturn_t nvmlDeviceGetSupportedMemoryClocks(void* device, unsigned int* count,
                                                          unsigned int* clocks_mhz) {
  if (device_of(device, "nvmlDeviceGetSupportedMemoryClocks") == nullptr || count == nullptr) {
    return kInvalidArgument;
  }
  const unsigned capacity = *count;
  *count = 1;
  if (capacity < 1 || clocks_mhz == nullptr) return kInsufficientSize;
  clocks_mhz[0] = memory_mhz();
  return kSuccess;
}

PT_EXPORT nvmlReturn_t nvmlDeviceGetSupportedGraphicsClocks(void* device, unsigned int memory,
                                                            unsigned int* count,
                                                            unsigned int* clocks_mhz) {
  if (device_of(device, "nvmlDeviceGetSupportedGraphicsClocks") == nullptr || count == nullptr) {
    return kInvalidArgument;
  }
  if (memory != memory_mhz()) return kNotFound;
  const unsigned n = (max_mhz() - min_mhz()) / step_mhz() + 1;
  const unsigned capacity = *count;
  *count = n;
  if (capacity < n || clocks_mhz == nullptr) return kInsufficientSize;
  for (unsigned i = 0; i < n; ++i) clocks_mhz[i] = supported(max_mhz() - i * step_mhz());
  return kSuccess;
}

PT_EXPORT nvmlReturn_t nvmlDeviceGetMaxClockInfo(void* device, int type, unsigned int* mhz) {
  if (device_of(device, "nvmlDeviceGetMaxClockInfo") == nullptr || mhz == nullptr) {
    return kInvalidArgument;
  }
  *mhz = type == kClockMem ? memory_mhz() : max_mhz();
  return kSuccess;
}

PT_EXPORT nvmlReturn_t nvmlDeviceGetClock(void* device, int type, int id, unsigned int* mhz) {
  Device* d = device_of(device, "nvmlDeviceGetClock");
  if (d == nullptr || mhz == nullptr || type < kClockGraphics || type > kClockVideo) {
    return kInvalidArgument;
  }
  std::lock_guard<std::mutex> lock(state().mutex);
  if (type == kClockMem) {
    *mhz = memory_mhz();
    return kSuccess;
  }
  switch (id) {
    case kClockIdCurrent:
      *mhz = current_sm_mhz(*d);
      return kSuccess;
    case kClockIdAppTarget:
      *mhz = d->app_mhz > 0 ? d->app_mhz : max_mhz();
      return kSuccess;
    case kClockIdAppDefault:
    case kClockIdBoostMax:
      *mhz = max_mhz();
      return kSuccess;
    default:
      return kInvalidArgument;
  }
}

PT_EXPORT nvmlReturn_t nvmlDeviceGetClockInfo(void* device, int type, unsigned int* mhz) {
  return nvmlDeviceGetClock(device, type, kClockIdCurrent, mhz);
}

PT_EXPORT nvmlReturn_t nvmlDeviceGetApplicationsClock(void* device, int type, unsigned int* mhz) {
  return nvmlDeviceGetClock(device, type, kClockIdAppTarget, mhz);
}

PT_EXPORT nvmlReturn_t nvmlDeviceGetDefaultApplicationsClock(void* device, int type,
                                                             unsigned int* mhz) {
  return nvmlDeviceGetClock(device, type, kClockIdAppDefault, mhz);
}

PT_EXPORT nvmlReturn_t nvmlDeviceSetGpuLockedClocks(void* device, unsigned int min_clock,
                                                    unsigned int max_clock) {
  const char* api = "nvmlDeviceSetGpuLockedClocks";
  Device* d = device_of(device, api);
  if (d == nullptr) return kInvalidArgument;
  if (min_clock > max_clock || max_clock < min_mhz()) {
    emu::report_misuse(api, "locked range " + std::to_string(min_clock) + "-" +
                                std::to_string(max_clock) + " MHz is empty or below the " +
                                std::to_string(min_mhz()) + " MHz the GPU supports");
    return kInvalidArgument;
  }
  std::lock_guard<std::mutex> lock(state().mutex);
  d->locked_min_mhz = supported(min_clock);
  d->locked_max_mhz = supported(max_clock);
  record_lock(api, *d);
  return kSuccess;
}

PT_EXPORT nvmlReturn_t nvmlDeviceResetGpuLockedClocks(void* device) {
  const char* api = "nvmlDeviceResetGpuLockedClocks";
  Device* d = device_of(device, api);
  if (d == nullptr) return kInvalidArgument;
  std::lock_guard<std::mutex> lock(state().mutex);
  d->locked_min_mhz = d->locked_max_mhz = 0;
  record_lock(api, *d);
  return kSuccess;
}

PT_EXPORT nvmlReturn_t nvmlDeviceSetApplicationsClocks(void* device, unsigned int memory_clock,
                                                       unsigned int graphics_clock) {
  const char* api = "nvmlDeviceSetApplicationsClocks";
  Device* d = device_of(device, api);
  if (d == nullptr) return kInvalidArgument;
  if (memory_clock != memory_mhz() || graphics_clock < min_mhz() || graphics_clock > max_mhz()) {
    emu::report_misuse(api, "no supported clock pair " + std::to_string(memory_clock) + "/" +
                                std::to_string(graphics_clock) + " MHz");
    return kInvalidArgument;
  }
  std::lock_guard<std::mutex> lock(state().mutex);
  d->app_mhz = supported(graphics_clock);
  record_lock(api, *d);
  return kSuccess;
}

PT_EXPORT nvmlReturn_t nvmlDeviceResetApplicationsClocks(void* device) {
  const char* api = "nvmlDeviceResetApplicationsClocks";
  Device* d = device_of(device, api);
  if (d == nullptr) return kInvalidArgument;
  std::lock_guard<std::mutex> lock(state().mutex);
  d->app_mhz = 0;
  record_lock(api, *d);
  return kSuccess;
}

// ---- power limits (configuration, not measurement) ----------------------------------------------

PT_EXPORT nvmlReturn_t nvmlDeviceGetPowerManagementLimit(void* device, unsigned int* milliwatts) {
  const Device* d = device_of(device, "nvmlDeviceGetPowerManagementLimit");
  if (d == nullptr || milliwatts == nullptr) return kInvalidArgument;
  std::lock_guard<std::mutex> lock(state().mutex);
  *milliwatts = d->power_limit_mw > 0 ? d->power_limit_mw : default_power_mw();
  return kSuccess;
}

PT_EXPORT nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(void* device, unsigned int* milliwatts) {
  return nvmlDeviceGetPowerManagementLimit(device, milliwatts);
}

PT_EXPORT nvmlReturn_t nvmlDeviceGetPowerManagementDefaultLimit(void* device,
                                                                unsigned int* milliwatts) {
  if (device_of(device, "nvmlDeviceGetPowerManagementDefaultLimit") == nullptr ||
      milliwatts == nullptr) {
    return kInvalidArgument;
  }
  *milliwatts = default_power_mw();
  return kSuccess;
}

// Half the default to the default, about what data-center boards allow.
PT_EXPORT nvmlReturn_t nvmlDeviceGetPowerManagementLimitConstraints(void* device,
                                                                    unsigned int* min_milliwatts,
                                                                    unsigned int* max_milliwatts) {
  if (device_of(device, "nvmlDeviceGetPowerManagementLimitConstraints") == nullptr ||
      min_milliwatts == nullptr || max_milliwatts == nullptr) {
    return kInvalidArgument;
  }
  *min_milliwatts = default_power_mw() / 2;
  *max_milliwatts = default_power_mw();
  return kSuccess;
}

// Kept and read back; the analysis does not cap power by it (it reports a modelled average above
// the GPU's limit instead).
PT_EXPORT nvmlReturn_t nvmlDeviceSetPowerManagementLimit(void* device, unsigned int milliwatts) {
  const char* api = "nvmlDeviceSetPowerManagementLimit";
  Device* d = device_of(device, api);
  if (d == nullptr) return kInvalidArgument;
  if (milliwatts < default_power_mw() / 2 || milliwatts > default_power_mw()) {
    emu::report_misuse(api, std::to_string(milliwatts) + " mW is outside " +
                                std::to_string(default_power_mw() / 2) + "-" +
                                std::to_string(default_power_mw()) + " mW");
    return kInvalidArgument;
  }
  std::lock_guard<std::mutex> lock(state().mutex);
  d->power_limit_mw = milliwatts;
  return kSuccess;
}

// ---- measurements (none on an emulated device)
// ---------------------------------------------------

PT_EXPORT nvmlReturn_t nvmlDeviceGetPowerUsage(void*, unsigned int*) {
  return measurement("nvmlDeviceGetPowerUsage");
}
PT_EXPORT nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(void*, unsigned long long*) {
  return measurement("nvmlDeviceGetTotalEnergyConsumption");
}
PT_EXPORT nvmlReturn_t nvmlDeviceGetTemperature(void*, int, unsigned int*) {
  return measurement("nvmlDeviceGetTemperature");
}
PT_EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(void*, void*) {
  return measurement("nvmlDeviceGetUtilizationRates");
}
