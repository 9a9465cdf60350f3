// Shared by the in-vivo client tests (in_vivo_test.cc, in_vivo_restart_test.cc): the fake NVML's
// test hooks and the client options that point a rank at the in-process plan server and the fake.
#pragma once

#include <dlfcn.h>

#include <cstddef>
#include <string>
#include <vector>

#include "client/client.h"

namespace powertrain::client {

// The fake NVML's test hooks (the same handle the clients dlopened).
struct FakeNvml {
  void* dl = ::dlopen(POWERTRAIN_FAKE_NVML_PATH, RTLD_NOW | RTLD_LOCAL);
  double (*run_kernel)(unsigned, double) = nullptr;
  void (*set_blocked)(unsigned, int) = nullptr;
  size_t (*log)(char*, size_t) = nullptr;
  void (*clear_log)() = nullptr;
  FakeNvml() {
    if (dl == nullptr) return;
    run_kernel = reinterpret_cast<double (*)(unsigned, double)>(
        ::dlsym(dl, "powertrain_fake_nvml_run_kernel"));
    set_blocked =
        reinterpret_cast<void (*)(unsigned, int)>(::dlsym(dl, "powertrain_fake_nvml_set_blocked"));
    log = reinterpret_cast<size_t (*)(char*, size_t)>(::dlsym(dl, "powertrain_fake_nvml_log"));
    clear_log = reinterpret_cast<void (*)()>(::dlsym(dl, "powertrain_fake_nvml_clear_log"));
  }
  FakeNvml(const FakeNvml&) = delete;
  FakeNvml& operator=(const FakeNvml&) = delete;
  ~FakeNvml() {
    if (dl != nullptr) ::dlclose(dl);
  }
  std::string text() const {
    std::string out(log(nullptr, 0) + 1, '\0');
    log(out.data(), out.size());
    out.pop_back();
    return out;
  }
};

/// Options for rank 0 of a `world_size`-stage pipeline job against the server at `url`, measuring
/// with the fake NVML at `clocks_mhz`, that starts profiling with 2 microbatches and 2 iterations
/// per clock (the caller adds what its test needs).
inline ClientOptions fake_nvml_options(const std::string& url, int world_size,
                                       const std::vector<int>& clocks_mhz) {
  ClientOptions o;
  o.server_url = url;
  o.pp_degree = o.world_size = world_size;
  o.nvml_library = POWERTRAIN_FAKE_NVML_PATH;
  o.available_frequencies_mhz = clocks_mhz;
  o.job_poll_period_s = 0.05;
  o.request_timeout_s = 30.0;
  ProfilingRequest request;
  request.microbatches = 2;
  request.iterations_per_clock = 2;
  o.start_profiling = request;
  return o;
}

}  // namespace powertrain::client
