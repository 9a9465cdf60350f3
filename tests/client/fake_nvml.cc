// A fake libnvidia-ml for tests (built as libnvidia-ml-fake.so; select it with
// POWERTRAIN_NVML_LIBRARY). It records every call with the calling thread id, in memory
// (powertrain_fake_nvml_log) and, when POWERTRAIN_FAKE_NVML_LOG names a file, appended there.
// One device, an A100-like clock table (210..1410 MHz in 15 MHz steps). Simulation:
//  - the GPU is taken as busy: power P(f) = 50 W + 350 W x (f / 1410 MHz)^2 at the locked clock
//    (1410 MHz when unlocked); the energy counter integrates P over wall-clock time since init;
//  - the temperature cools from POWERTRAIN_FAKE_NVML_TEMP_C (default 30) toward 25 C with time
//    constant POWERTRAIN_FAKE_NVML_COOL_TAU_S (default 1 s);
//  - POWERTRAIN_FAKE_NVML_NO_ENERGY=1 makes the energy counter unsupported (power sampling path).
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kSuccess = 0;
constexpr int kUninitialized = 1;
constexpr int kInvalidArgument = 2;
constexpr int kNotSupported = 3;
constexpr int kInsufficientSize = 7;
constexpr unsigned kMaxMhz = 1410;
constexpr unsigned kMinMhz = 210;
constexpr unsigned kStepMhz = 15;
constexpr unsigned kNumClocks = (kMaxMhz - kMinMhz) / kStepMhz + 1;

struct State {
  std::mutex mutex;
  int init_count = 0;
  Clock::time_point start;
  Clock::time_point last;
  double energy_j = 0.0;
  unsigned locked_mhz = 0;  // 0: unlocked
  double start_temp_c = 30.0;
  double cool_tau_s = 1.0;
  std::string log;
};

State& state() {
  static State s;
  return s;
}

// A non-null, never dereferenced device handle.
struct nvmlDevice_st {
  int index;
};
nvmlDevice_st g_device{0};

double env_number(const char* name, double fallback) {
  const char* text = std::getenv(name);
  return text != nullptr && *text != '\0' ? std::atof(text) : fallback;
}

double power_w(unsigned mhz) {
  const double f = (mhz == 0 ? kMaxMhz : mhz) / static_cast<double>(kMaxMhz);
  return 50.0 + 350.0 * f * f;
}

// Integrates power up to now. Caller holds the mutex.
void advance(State& s) {
  const auto now = Clock::now();
  s.energy_j += power_w(s.locked_mhz) * std::chrono::duration<double>(now - s.last).count();
  s.last = now;
}

void record(State& s, const std::string& line) {
  const std::string full =
      line + " thread=" + std::to_string(static_cast<long>(::syscall(SYS_gettid))) + "\n";
  s.log += full;
  if (const char* path = std::getenv("POWERTRAIN_FAKE_NVML_LOG"); path != nullptr && *path) {
    if (FILE* f = std::fopen(path, "a")) {
      std::fputs(full.c_str(), f);
      std::fclose(f);
    }
  }
}

bool valid(nvmlDevice_st* device) { return device == &g_device; }

}  // namespace

extern "C" {

int nvmlInit_v2() {
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (s.init_count++ == 0) {
    s.start = s.last = Clock::now();
    s.energy_j = 0.0;
    s.locked_mhz = 0;
    s.start_temp_c = env_number("POWERTRAIN_FAKE_NVML_TEMP_C", 30.0);
    s.cool_tau_s = env_number("POWERTRAIN_FAKE_NVML_COOL_TAU_S", 1.0);
  }
  record(s, "nvmlInit_v2");
  return kSuccess;
}

int nvmlShutdown() {
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (s.init_count == 0) return kUninitialized;
  --s.init_count;
  record(s, "nvmlShutdown");
  return kSuccess;
}

const char* nvmlErrorString(int status) {
  switch (status) {
    case kSuccess:
      return "Success";
    case kUninitialized:
      return "Uninitialized";
    case kInvalidArgument:
      return "Invalid Argument";
    case kNotSupported:
      return "Not Supported";
    case kInsufficientSize:
      return "Insufficient Size";
    default:
      return "Unknown Error";
  }
}

int nvmlDeviceGetCount_v2(unsigned* count) {
  if (count == nullptr) return kInvalidArgument;
  *count = 1;
  return kSuccess;
}

int nvmlDeviceGetHandleByIndex_v2(unsigned index, nvmlDevice_st** device) {
  if (device == nullptr || index != 0) return kInvalidArgument;
  *device = &g_device;
  return kSuccess;
}

int nvmlDeviceGetSupportedMemoryClocks(nvmlDevice_st* device, unsigned* count, unsigned* mhz) {
  if (!valid(device) || count == nullptr) return kInvalidArgument;
  if (*count < 1) {
    *count = 1;
    return kInsufficientSize;
  }
  *count = 1;
  mhz[0] = 1215;
  return kSuccess;
}

int nvmlDeviceGetSupportedGraphicsClocks(nvmlDevice_st* device, unsigned memory_mhz,
                                         unsigned* count, unsigned* mhz) {
  if (!valid(device) || count == nullptr || memory_mhz != 1215) return kInvalidArgument;
  if (*count < kNumClocks) {
    *count = kNumClocks;
    return kInsufficientSize;
  }
  *count = kNumClocks;
  for (unsigned i = 0; i < kNumClocks; ++i) mhz[i] = kMaxMhz - i * kStepMhz;  // highest first
  return kSuccess;
}

int nvmlDeviceSetGpuLockedClocks(nvmlDevice_st* device, unsigned min_mhz, unsigned max_mhz) {
  if (!valid(device) || min_mhz > max_mhz || max_mhz > kMaxMhz) return kInvalidArgument;
  State& s = state();
  std::lock_guard lock(s.mutex);
  advance(s);
  s.locked_mhz = max_mhz;
  record(s,
         "nvmlDeviceSetGpuLockedClocks " + std::to_string(min_mhz) + " " + std::to_string(max_mhz));
  return kSuccess;
}

int nvmlDeviceResetGpuLockedClocks(nvmlDevice_st* device) {
  if (!valid(device)) return kInvalidArgument;
  State& s = state();
  std::lock_guard lock(s.mutex);
  advance(s);
  s.locked_mhz = 0;
  record(s, "nvmlDeviceResetGpuLockedClocks");
  return kSuccess;
}

int nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_st* device, unsigned long long* mj) {
  if (!valid(device) || mj == nullptr) return kInvalidArgument;
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (std::getenv("POWERTRAIN_FAKE_NVML_NO_ENERGY") != nullptr) return kNotSupported;
  advance(s);
  *mj = static_cast<unsigned long long>(s.energy_j * 1000.0);
  record(s, "nvmlDeviceGetTotalEnergyConsumption " + std::to_string(*mj));
  return kSuccess;
}

int nvmlDeviceGetPowerUsage(nvmlDevice_st* device, unsigned* mw) {
  if (!valid(device) || mw == nullptr) return kInvalidArgument;
  State& s = state();
  std::lock_guard lock(s.mutex);
  *mw = static_cast<unsigned>(power_w(s.locked_mhz) * 1000.0);
  record(s, "nvmlDeviceGetPowerUsage " + std::to_string(*mw));
  return kSuccess;
}

int nvmlDeviceGetTemperature(nvmlDevice_st* device, int sensor, unsigned* celsius) {
  if (!valid(device) || sensor != 0 || celsius == nullptr) return kInvalidArgument;
  State& s = state();
  std::lock_guard lock(s.mutex);
  const double t = std::chrono::duration<double>(Clock::now() - s.start).count();
  const double temp = 25.0 + (s.start_temp_c - 25.0) * std::exp(-t / std::max(1e-6, s.cool_tau_s));
  *celsius = static_cast<unsigned>(std::lround(temp));
  record(s, "nvmlDeviceGetTemperature " + std::to_string(*celsius));
  return kSuccess;
}

/// Test hook: copies the call log (NUL-terminated, truncated to size) and returns its full length.
size_t powertrain_fake_nvml_log(char* buffer, size_t size) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (buffer != nullptr && size > 0) {
    const size_t n = std::min(size - 1, s.log.size());
    std::memcpy(buffer, s.log.data(), n);
    buffer[n] = '\0';
  }
  return s.log.size();
}

/// Test hook: clears the call log.
void powertrain_fake_nvml_clear_log() {
  State& s = state();
  std::lock_guard lock(s.mutex);
  s.log.clear();
}

}  // extern "C"
