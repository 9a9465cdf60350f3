// NVML (the NVIDIA management library) loaded at run time with dlopen: energy counter, power,
// supported and locked clocks, temperature. No NVML header or link-time dependency; the few types
// and prototypes used are declared in nvml.cc. Tests load a fake (tests/client/fake_nvml.cc).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/result.h"

namespace powertrain::nvml {

/// The soname loaded when no path is given and POWERTRAIN_NVML_LIBRARY is unset.
inline constexpr const char* kDefaultLibrary = "libnvidia-ml.so.1";

/// The library to load: `explicit_path` if not empty, else $POWERTRAIN_NVML_LIBRARY if set, else
/// kDefaultLibrary.
std::string library_to_load(const std::string& explicit_path = "");

/// "NVML not found (<library>): clock control disabled" — the one line printed when NVML is absent.
std::string not_found_message(const std::string& library);

/// One loaded NVML, initialized (nvmlInit_v2) until destroyed (nvmlShutdown). Thread-safe as NVML
/// itself is; every call is a driver call (microseconds to a millisecond), so training threads
/// should not make them (src/client does them on its clock thread).
class Nvml {
 public:
  /// Loads and initializes `library_to_load(path)`. Errors: the not_found_message when dlopen
  /// fails; "NVML <lib>: symbol X missing" or "NVML <lib>: nvmlInit_v2: <nvml error>" otherwise.
  static core::Result<std::shared_ptr<Nvml>> load(const std::string& path = "");
  ~Nvml();
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;

  const std::string& library() const { return library_; }
  core::Result<int> device_count() const;

  /// Graphics clocks (MHz) supported at the highest memory clock, highest first (as Zeus sends
  /// them).
  core::Result<std::vector<int>> supported_graphics_clocks_mhz(int device) const;
  /// Locks the graphics clock to [min_mhz, max_mhz] (needs root or the clock permission).
  core::Status set_locked_clocks_mhz(int device, int min_mhz, int max_mhz) const;
  core::Status reset_locked_clocks(int device) const;
  /// Total energy since the driver loaded, millijoules (Volta and newer; NVML updates it about
  /// every 100 ms). An error on GPUs without the counter: use power_mw sampling instead.
  core::Result<unsigned long long> total_energy_mj(int device) const;
  /// Current board power, milliwatts.
  core::Result<unsigned> power_mw(int device) const;
  /// GPU die temperature, degrees Celsius.
  core::Result<unsigned> temperature_c(int device) const;

 private:
  struct Api;
  Nvml(void* handle, std::string library, std::unique_ptr<Api> api);
  core::Result<void*> handle(int device) const;
  std::string describe(const char* call, int status) const;

  void* dl_ = nullptr;
  std::string library_;
  std::unique_ptr<Api> api_;
};

}  // namespace powertrain::nvml
