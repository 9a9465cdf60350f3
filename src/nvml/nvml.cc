// dlopen-based NVML binding. The prototypes below are NVML's public C API (nvml.h): every call
// returns nvmlReturn_t (0 = NVML_SUCCESS); devices are opaque pointers.
#include "nvml/nvml.h"

#include <dlfcn.h>
#include <fmt/core.h>

#include <algorithm>
#include <cstdlib>

namespace powertrain::nvml {
namespace {

using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDevice_st*;
constexpr nvmlReturn_t kSuccess = 0;
constexpr nvmlReturn_t kInsufficientSize = 7;
constexpr int kTemperatureGpu = 0;  // NVML_TEMPERATURE_GPU
constexpr unsigned kMaxClocks = 512;

}  // namespace

struct Nvml::Api {
  nvmlReturn_t (*init)() = nullptr;
  nvmlReturn_t (*shutdown)() = nullptr;
  const char* (*error_string)(nvmlReturn_t) = nullptr;
  nvmlReturn_t (*device_count)(unsigned*) = nullptr;
  nvmlReturn_t (*handle_by_index)(unsigned, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*memory_clocks)(nvmlDevice_t, unsigned*, unsigned*) = nullptr;
  nvmlReturn_t (*graphics_clocks)(nvmlDevice_t, unsigned, unsigned*, unsigned*) = nullptr;
  nvmlReturn_t (*set_locked)(nvmlDevice_t, unsigned, unsigned) = nullptr;
  nvmlReturn_t (*reset_locked)(nvmlDevice_t) = nullptr;
  nvmlReturn_t (*total_energy)(nvmlDevice_t, unsigned long long*) = nullptr;
  nvmlReturn_t (*power_usage)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*temperature)(nvmlDevice_t, int, unsigned*) = nullptr;
};

std::string library_to_load(const std::string& explicit_path) {
  if (!explicit_path.empty()) return explicit_path;
  if (const char* env = std::getenv("POWERTRAIN_NVML_LIBRARY"); env != nullptr && *env != '\0')
    return env;
  return kDefaultLibrary;
}

std::string not_found_message(const std::string& library) {
  return fmt::format("NVML not found ({}): clock control disabled", library);
}

core::Result<std::shared_ptr<Nvml>> Nvml::load(const std::string& path) {
  const std::string library = library_to_load(path);
  void* dl = ::dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (dl == nullptr) return core::Error{not_found_message(library)};
  auto api = std::make_unique<Api>();
  std::string missing;
  auto bind = [&](auto& fn, const char* name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(::dlsym(dl, name));
    if (fn == nullptr && missing.empty()) missing = name;
  };
  bind(api->init, "nvmlInit_v2");
  bind(api->shutdown, "nvmlShutdown");
  bind(api->error_string, "nvmlErrorString");
  bind(api->device_count, "nvmlDeviceGetCount_v2");
  bind(api->handle_by_index, "nvmlDeviceGetHandleByIndex_v2");
  bind(api->memory_clocks, "nvmlDeviceGetSupportedMemoryClocks");
  bind(api->graphics_clocks, "nvmlDeviceGetSupportedGraphicsClocks");
  bind(api->set_locked, "nvmlDeviceSetGpuLockedClocks");
  bind(api->reset_locked, "nvmlDeviceResetGpuLockedClocks");
  bind(api->total_energy, "nvmlDeviceGetTotalEnergyConsumption");
  bind(api->power_usage, "nvmlDeviceGetPowerUsage");
  bind(api->temperature, "nvmlDeviceGetTemperature");
  if (!missing.empty()) {
    ::dlclose(dl);
    return core::Error{
        fmt::format("NVML {}: symbol {} missing (driver too old?)", library, missing)};
  }
  if (nvmlReturn_t status = api->init(); status != kSuccess) {
    const char* text = api->error_string(status);
    ::dlclose(dl);
    return core::Error{fmt::format("NVML {}: nvmlInit_v2: {} (code {})", library,
                                   text != nullptr ? text : "unknown error", status)};
  }
  return std::shared_ptr<Nvml>(new Nvml(dl, library, std::move(api)));
}

Nvml::Nvml(void* handle, std::string library, std::unique_ptr<Api> api)
    : dl_(handle), library_(std::move(library)), api_(std::move(api)) {}

Nvml::~Nvml() {
  api_->shutdown();
  ::dlclose(dl_);
}

std::string Nvml::describe(const char* call, int status) const {
  const char* text = api_->error_string(status);
  return fmt::format("NVML {}: {}: {} (code {})", library_, call,
                     text != nullptr ? text : "unknown error", status);
}

core::Result<int> Nvml::device_count() const {
  unsigned count = 0;
  if (auto s = api_->device_count(&count); s != kSuccess)
    return core::Error{describe("nvmlDeviceGetCount_v2", s)};
  return static_cast<int>(count);
}

core::Result<void*> Nvml::handle(int device) const {
  nvmlDevice_t dev = nullptr;
  if (device < 0) return core::Error{fmt::format("NVML: device {} is negative", device)};
  if (auto s = api_->handle_by_index(static_cast<unsigned>(device), &dev); s != kSuccess)
    return core::Error{
        describe(fmt::format("nvmlDeviceGetHandleByIndex_v2({})", device).c_str(), s)};
  return static_cast<void*>(dev);
}

core::Result<std::vector<int>> Nvml::supported_graphics_clocks_mhz(int device) const {
  auto dev = handle(device);
  if (!dev) return dev.error();
  auto* d = static_cast<nvmlDevice_t>(*dev);
  std::vector<unsigned> memory(kMaxClocks);
  unsigned count = kMaxClocks;
  if (auto s = api_->memory_clocks(d, &count, memory.data()); s != kSuccess || count == 0)
    return core::Error{describe("nvmlDeviceGetSupportedMemoryClocks", s)};
  const unsigned max_memory = *std::max_element(memory.begin(), memory.begin() + count);
  std::vector<unsigned> clocks(kMaxClocks);
  count = kMaxClocks;
  nvmlReturn_t s = api_->graphics_clocks(d, max_memory, &count, clocks.data());
  if (s == kInsufficientSize) {
    clocks.resize(count);
    s = api_->graphics_clocks(d, max_memory, &count, clocks.data());
  }
  if (s != kSuccess) return core::Error{describe("nvmlDeviceGetSupportedGraphicsClocks", s)};
  std::vector<int> mhz(clocks.begin(),
                       clocks.begin() + std::min<std::size_t>(count, clocks.size()));
  std::sort(mhz.rbegin(), mhz.rend());
  return mhz;
}

core::Status Nvml::set_locked_clocks_mhz(int device, int min_mhz, int max_mhz) const {
  auto dev = handle(device);
  if (!dev) return dev.error();
  if (min_mhz < 0 || max_mhz < min_mhz)
    return core::Error{
        fmt::format("NVML: locked clock range [{}, {}] MHz is invalid", min_mhz, max_mhz)};
  if (auto s = api_->set_locked(static_cast<nvmlDevice_t>(*dev), static_cast<unsigned>(min_mhz),
                                static_cast<unsigned>(max_mhz));
      s != kSuccess)
    return core::Error{describe("nvmlDeviceSetGpuLockedClocks", s)};
  return core::Ok{};
}

core::Status Nvml::reset_locked_clocks(int device) const {
  auto dev = handle(device);
  if (!dev) return dev.error();
  if (auto s = api_->reset_locked(static_cast<nvmlDevice_t>(*dev)); s != kSuccess)
    return core::Error{describe("nvmlDeviceResetGpuLockedClocks", s)};
  return core::Ok{};
}

core::Result<unsigned long long> Nvml::total_energy_mj(int device) const {
  auto dev = handle(device);
  if (!dev) return dev.error();
  unsigned long long mj = 0;
  if (auto s = api_->total_energy(static_cast<nvmlDevice_t>(*dev), &mj); s != kSuccess)
    return core::Error{describe("nvmlDeviceGetTotalEnergyConsumption", s)};
  return mj;
}

core::Result<unsigned> Nvml::power_mw(int device) const {
  auto dev = handle(device);
  if (!dev) return dev.error();
  unsigned mw = 0;
  if (auto s = api_->power_usage(static_cast<nvmlDevice_t>(*dev), &mw); s != kSuccess)
    return core::Error{describe("nvmlDeviceGetPowerUsage", s)};
  return mw;
}

core::Result<unsigned> Nvml::temperature_c(int device) const {
  auto dev = handle(device);
  if (!dev) return dev.error();
  unsigned c = 0;
  if (auto s = api_->temperature(static_cast<nvmlDevice_t>(*dev), kTemperatureGpu, &c);
      s != kSuccess)
    return core::Error{describe("nvmlDeviceGetTemperature", s)};
  return c;
}

}  // namespace powertrain::nvml
