// A fake libnvidia-ml for tests (built as libnvidia-ml-fake.so; select it with
// POWERTRAIN_NVML_LIBRARY). It records every call with the calling thread id, in memory
// (powertrain_fake_nvml_log) and, when POWERTRAIN_FAKE_NVML_LOG names a file, appended there.
// One device (POWERTRAIN_FAKE_NVML_DEVICE_COUNT, 1..8, for several ranks in one process), each
// with an A100-like clock table (210..1410 MHz in 15 MHz steps) and its own state. Simulation:
//  - the GPU is taken as busy: power P(f) = 50 W + 350 W x (f / 1410 MHz)^2 at the locked clock
//    (1410 MHz when unlocked); the energy counter integrates P over wall-clock time since init;
//  - powertrain_fake_nvml_set_blocked(d, 1) makes device d a GPU blocked on P2P communication:
//    POWERTRAIN_FAKE_NVML_BLOCKED_W (default 75 W) whatever its clock, until set back to 0;
//  - powertrain_fake_nvml_run_kernel(d, s) is a compute-bound kernel of s seconds at 1410 MHz:
//    it progresses at rate f / 1410 at the clock locked while it runs (sleeping in short slices),
//    so its time scales as 1 / f and its energy as P(f) / f;
//  - the temperature cools from POWERTRAIN_FAKE_NVML_TEMP_C (default 30) toward 25 C with time
//    constant POWERTRAIN_FAKE_NVML_COOL_TAU_S (default 1 s);
//  - POWERTRAIN_FAKE_NVML_NO_ENERGY=1 makes the energy counter unsupported (power sampling path);
//  - POWERTRAIN_FAKE_NVML_ENERGY_PERIOD_S=T makes the counter move at most every T seconds, as
//    real NVML's (about 0.1 s): a read returns the value of the last update.
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
#include <thread>

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

constexpr unsigned kMaxDevices = 8;

struct DeviceState {
  Clock::time_point last;
  double energy_j = 0.0;
  unsigned locked_mhz = 0;  // 0: unlocked
  bool blocked = false;
  double reported_j = 0.0;  // the counter's value at its last update
  Clock::time_point next_update;
};

struct State {
  std::mutex mutex;
  int init_count = 0;
  Clock::time_point start;
  DeviceState devices[kMaxDevices];
  double blocked_w = 75.0;
  double start_temp_c = 30.0;
  double cool_tau_s = 1.0;
  std::string log;
};

State& state() {
  static State s;
  return s;
}

// Non-null device handles; `index` says which DeviceState.
struct nvmlDevice_st {
  unsigned index;
};
nvmlDevice_st g_devices[kMaxDevices] = {{0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}};

double env_number(const char* name, double fallback) {
  const char* text = std::getenv(name);
  return text != nullptr && *text != '\0' ? std::atof(text) : fallback;
}

unsigned device_count() {
  const double n = env_number("POWERTRAIN_FAKE_NVML_DEVICE_COUNT", 1.0);
  return n >= 1.0 && n <= kMaxDevices ? static_cast<unsigned>(n) : 1u;
}

unsigned effective_mhz(const DeviceState& d) { return d.locked_mhz == 0 ? kMaxMhz : d.locked_mhz; }

double power_w(unsigned mhz) {
  const double f = (mhz == 0 ? kMaxMhz : mhz) / static_cast<double>(kMaxMhz);
  return 50.0 + 350.0 * f * f;
}

double device_power_w(const State& s, const DeviceState& d) {
  return d.blocked ? s.blocked_w : power_w(d.locked_mhz);
}

// Integrates the device's power up to now. Caller holds the mutex.
void advance(State& s, DeviceState& d) {
  const auto now = Clock::now();
  d.energy_j += device_power_w(s, d) * std::chrono::duration<double>(now - d.last).count();
  d.last = now;
}

// " device=N" for devices other than 0 (device 0's lines keep the one-device format).
std::string device_tag(unsigned index) {
  return index == 0 ? std::string() : " device=" + std::to_string(index);
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

bool valid(nvmlDevice_st* device) {
  for (unsigned i = 0; i < device_count(); ++i)
    if (device == &g_devices[i]) return true;
  return false;
}

}  // namespace

extern "C" {

int nvmlInit_v2() {
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (s.init_count++ == 0) {
    s.start = Clock::now();
    for (DeviceState& d : s.devices) d = DeviceState{s.start, 0.0, 0, false, 0.0, s.start};
    s.blocked_w = env_number("POWERTRAIN_FAKE_NVML_BLOCKED_W", 75.0);
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
  *count = device_count();
  return kSuccess;
}

int nvmlDeviceGetHandleByIndex_v2(unsigned index, nvmlDevice_st** device) {
  if (device == nullptr || index >= device_count()) return kInvalidArgument;
  *device = &g_devices[index];
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
  DeviceState& d = s.devices[device->index];
  advance(s, d);
  d.locked_mhz = max_mhz;
  record(s, "nvmlDeviceSetGpuLockedClocks " + std::to_string(min_mhz) + " " +
                std::to_string(max_mhz) + device_tag(device->index));
  return kSuccess;
}

int nvmlDeviceResetGpuLockedClocks(nvmlDevice_st* device) {
  if (!valid(device)) return kInvalidArgument;
  State& s = state();
  std::lock_guard lock(s.mutex);
  DeviceState& d = s.devices[device->index];
  advance(s, d);
  d.locked_mhz = 0;
  record(s, "nvmlDeviceResetGpuLockedClocks" + device_tag(device->index));
  return kSuccess;
}

int nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_st* device, unsigned long long* mj) {
  if (!valid(device) || mj == nullptr) return kInvalidArgument;
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (std::getenv("POWERTRAIN_FAKE_NVML_NO_ENERGY") != nullptr) return kNotSupported;
  DeviceState& d = s.devices[device->index];
  advance(s, d);
  const double period_s = env_number("POWERTRAIN_FAKE_NVML_ENERGY_PERIOD_S", 0.0);
  if (!(period_s > 0.0) || d.last >= d.next_update) {
    d.reported_j = d.energy_j;
    d.next_update = d.last + std::chrono::duration_cast<Clock::duration>(
                                 std::chrono::duration<double>(std::max(0.0, period_s)));
  }
  *mj = static_cast<unsigned long long>(d.reported_j * 1000.0);
  record(s,
         "nvmlDeviceGetTotalEnergyConsumption " + std::to_string(*mj) + device_tag(device->index));
  return kSuccess;
}

int nvmlDeviceGetPowerUsage(nvmlDevice_st* device, unsigned* mw) {
  if (!valid(device) || mw == nullptr) return kInvalidArgument;
  State& s = state();
  std::lock_guard lock(s.mutex);
  *mw = static_cast<unsigned>(device_power_w(s, s.devices[device->index]) * 1000.0);
  record(s, "nvmlDeviceGetPowerUsage " + std::to_string(*mw) + device_tag(device->index));
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

/// Test hook: the clock device `index` runs at now (MHz; 1410 when unlocked), 0 for no device.
unsigned powertrain_fake_nvml_clock_mhz(unsigned index) {
  if (index >= kMaxDevices) return 0;
  State& s = state();
  std::lock_guard lock(s.mutex);
  return effective_mhz(s.devices[index]);
}

/// Test hook: device `index` blocked on P2P communication (1; power POWERTRAIN_FAKE_NVML_BLOCKED_W)
/// or computing again (0).
void powertrain_fake_nvml_set_blocked(unsigned index, int blocked) {
  if (index >= kMaxDevices) return;
  State& s = state();
  std::lock_guard lock(s.mutex);
  advance(s, s.devices[index]);
  s.devices[index].blocked = blocked != 0;
}

/// Test hook: a compute-bound kernel of `seconds_at_max_clock` on device `index`. Sleeps in slices
/// of at most 0.5 ms, crediting each slice's measured length at the clock locked when it began,
/// until the work is done; returns the wall time it took (s).
double powertrain_fake_nvml_run_kernel(unsigned index, double seconds_at_max_clock) {
  if (index >= kMaxDevices || !(seconds_at_max_clock > 0.0)) return 0.0;
  const auto begin = Clock::now();
  double remaining = seconds_at_max_clock;  // seconds of work at 1410 MHz
  while (remaining > 0.0) {
    const double rate = powertrain_fake_nvml_clock_mhz(index) / static_cast<double>(kMaxMhz);
    const double slice = std::min(5e-4, remaining / rate);
    const auto start = Clock::now();
    std::this_thread::sleep_for(std::chrono::duration<double>(slice));
    remaining -= rate * std::chrono::duration<double>(Clock::now() - start).count();
  }
  return std::chrono::duration<double>(Clock::now() - begin).count();
}

/// Test hook: clears the call log.
void powertrain_fake_nvml_clear_log() {
  State& s = state();
  std::lock_guard lock(s.mutex);
  s.log.clear();
}

}  // extern "C"
