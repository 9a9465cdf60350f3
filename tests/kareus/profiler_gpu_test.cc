// The GPU profiler against a fake libcuda (tests/kareus/fake_cuda.cc) and the fake NVML
// (tests/client/fake_nvml.cc): clock locking and reset, the energy window, cooldown, launch order,
// and one-line errors. Tiny windows: the fake NVML integrates P(f) = 50 + 350 (f / 1410)² W over
// wall-clock time.
#include "kareus/profiler_gpu.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <sstream>
#include <thread>

#include "kareus/search.h"
#include "kareus_test_jobs.h"
#include "profile/model_profile.h"

namespace powertrain::kareus {
namespace {

std::string read_log(const char* library, const char* symbol) {
  void* dl = ::dlopen(library, RTLD_NOW);
  if (dl == nullptr) return "";
  auto fn = reinterpret_cast<size_t (*)(char*, size_t)>(::dlsym(dl, symbol));
  std::string out;
  if (fn != nullptr) {
    out.resize(fn(nullptr, 0) + 1);
    fn(out.data(), out.size());
    out.resize(out.size() - 1);
  }
  ::dlclose(dl);
  return out;
}
void clear_log(const char* library, const char* symbol) {
  void* dl = ::dlopen(library, RTLD_NOW);
  if (dl == nullptr) return;
  if (auto fn = reinterpret_cast<void (*)()>(::dlsym(dl, symbol))) fn();
  ::dlclose(dl);
}
std::string nvml_log() { return read_log(POWERTRAIN_FAKE_NVML_PATH, "powertrain_fake_nvml_log"); }
std::string cuda_log() { return read_log(POWERTRAIN_FAKE_CUDA_PATH, "powertrain_fake_cuda_log"); }
void clear_logs() {
  clear_log(POWERTRAIN_FAKE_NVML_PATH, "powertrain_fake_nvml_clear_log");
  clear_log(POWERTRAIN_FAKE_CUDA_PATH, "powertrain_fake_cuda_clear_log");
}
std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}
bool starts_with(const std::string& s, const std::string& prefix) {
  return s.rfind(prefix, 0) == 0;
}

PartitionType attention_partition() {
  const MicrobatchWork mb = test_jobs::llama_tp8_stage1_forward();
  for (const PartitionType& p : mb.partitions)
    if (p.count > 10 && p.compute.size() >= 4) return p;
  ADD_FAILURE() << "no attention partition";
  return {};
}

GpuProfilerOptions fake_options(std::vector<double>* sleeps) {
  GpuProfilerOptions o;
  o.cuda_library = POWERTRAIN_FAKE_CUDA_PATH;
  o.nvml_library = POWERTRAIN_FAKE_NVML_PATH;
  o.window_s = 0.06;
  o.cooldown_s = 0.01;
  o.warmup_runs = 1;
  o.gpu = *device::find_gpu("a100-sxm");
  o.sleep_s = [sleeps](double s) {
    if (sleeps != nullptr) sleeps->push_back(s);
    std::this_thread::sleep_for(std::chrono::duration<double>(s));
  };
  return o;
}

TEST(KareusGpuProfiler, MissingDriverOrNvmlIsOneClearLine) {
  GpuProfilerOptions o = fake_options(nullptr);
  o.cuda_library = "/nonexistent/libcuda.so.1";
  auto missing_cuda = GpuProfiler::open(o);
  ASSERT_FALSE(missing_cuda);
  EXPECT_TRUE(starts_with(missing_cuda.error().message,
                          "GPU profiler: CUDA driver not found (/nonexistent/libcuda.so.1): "))
      << missing_cuda.error().message;
  EXPECT_EQ(missing_cuda.error().message.find('\n'), std::string::npos);

  o = fake_options(nullptr);
  o.nvml_library = "/nonexistent/libnvidia-ml.so.1";
  auto missing_nvml = GpuProfiler::open(o);
  ASSERT_FALSE(missing_nvml);
  EXPECT_EQ(missing_nvml.error().message,
            "GPU profiler: NVML not found (/nonexistent/libnvidia-ml.so.1): clock control "
            "disabled");
}

TEST(KareusGpuProfiler, LocksTheClockMeasuresTheWindowResetsAndCoolsDown) {
  std::vector<double> sleeps;
  auto opened = GpuProfiler::open(fake_options(&sleeps));
  ASSERT_TRUE(opened) << opened.error().message;
  GpuProfiler& gpu = **opened;
  EXPECT_NE(gpu.name().find("Fake A100, 108 SMs"), std::string::npos) << gpu.name();
  EXPECT_EQ(gpu.static_power_source(), "catalog 96.4 W (a100-sxm)");
  const PartitionType p = attention_partition();
  const Schedule schedule{1200, 12, 2};
  clear_logs();
  sleeps.clear();
  auto cost = gpu.measure(p, schedule);
  ASSERT_TRUE(cost) << cost.error().message;
  const GpuReading& r = gpu.last_reading();

  // NVML: lock at the candidate's clock, two counter readings, reset — in that order.
  std::vector<std::string> calls;
  for (const std::string& line : lines(nvml_log()))
    calls.push_back(line.substr(0, line.find(" thread=")));
  ASSERT_EQ(calls.size(), 4u) << nvml_log();
  EXPECT_EQ(calls[0], "nvmlDeviceSetGpuLockedClocks 1200 1200");
  EXPECT_EQ(calls[1], "nvmlDeviceGetTotalEnergyConsumption " + std::to_string(r.energy_start_mj));
  EXPECT_EQ(calls[2], "nvmlDeviceGetTotalEnergyConsumption " + std::to_string(r.energy_end_mj));
  EXPECT_EQ(calls[3], "nvmlDeviceResetGpuLockedClocks");

  // The window: at least window_s long; energy = counter difference / runs; time = window / runs.
  EXPECT_GE(r.window_s, 0.06);
  EXPECT_GE(r.runs, 2);
  EXPECT_DOUBLE_EQ(cost->time_s, r.window_s / r.runs);
  EXPECT_DOUBLE_EQ(cost->energy_j, double(r.energy_end_mj - r.energy_start_mj) / 1000.0 / r.runs);
  // The fake draws 50 + 350 × (1200/1410)² = 303.5 W while locked at 1200 MHz.
  const double watts = cost->energy_j / cost->time_s;
  EXPECT_NEAR(watts, 50.0 + 350.0 * (1200.0 / 1410.0) * (1200.0 / 1410.0), 0.1 * 303.5);
  EXPECT_NEAR(cost->static_j, gpu.static_power_w() * cost->time_s, 1e-12);
  EXPECT_NEAR(gpu.static_power_w(), 96.4, 0.05);  // A100 SXM catalog (calibrated)
  EXPECT_NEAR(cost->static_j + cost->dynamic_j, cost->energy_j, 1e-9);
  // Cooldown after the reset, exactly once per candidate.
  ASSERT_EQ(sleeps.size(), 1u);
  EXPECT_EQ(sleeps[0], 0.01);
  EXPECT_EQ(r.cooldown_s, 0.01);

  // CUDA: per run, compute kernels 0 and 1, an event recorded on the compute stream, the comm
  // stream waiting on it, the comm kernel on 12 blocks of 1024 threads, then kernels 2...
  const std::vector<std::string> launches = lines(cuda_log());
  const int per_run = static_cast<int>(p.compute.size()) + 3;
  ASSERT_EQ(static_cast<int>(launches.size()), per_run * (r.runs + 1)) << cuda_log();
  int compute_before_comm = 0;
  for (int i = 0; i < per_run; ++i) {
    const std::string& l = launches[static_cast<std::size_t>(i)];
    if (starts_with(l, "record event")) {
      EXPECT_EQ(compute_before_comm, 2);
      EXPECT_TRUE(starts_with(launches[i + 1], "wait stream ")) << launches[i + 1];
      EXPECT_TRUE(starts_with(launches[i + 2], "launch kareus_copy grid 12 block 1024 shared "))
          << launches[i + 2];
      // ... on the stream that waited, which is not the compute stream.
      const std::string comm_stream =
          launches[i + 1].substr(12, launches[i + 1].find(" event") - 12);
      EXPECT_NE(launches[i + 2].find(" stream " + comm_stream + " "), std::string::npos);
      EXPECT_EQ(launches[i + 2].find(" stream " + l.substr(l.rfind(' ') + 1) + " "),
                std::string::npos);
      break;
    }
    if (starts_with(l, "launch ")) ++compute_before_comm;
  }
  EXPECT_EQ(compute_before_comm, 2);
  // GEMMs become FMA kernels, memory-bound kernels copies.
  EXPECT_NE(cuda_log().find("launch kareus_fma grid 864 block 256 shared 0"), std::string::npos);
}

TEST(KareusGpuProfiler, ErrorsNameTheCallAndTheClockIsStillReset) {
  const PartitionType p = attention_partition();
  ::setenv("POWERTRAIN_FAKE_CUDA_FAIL", "cuModuleLoadData", 1);
  auto bad_ptx = GpuProfiler::open(fake_options(nullptr));
  ::unsetenv("POWERTRAIN_FAKE_CUDA_FAIL");
  ASSERT_FALSE(bad_ptx);
  EXPECT_EQ(bad_ptx.error().message,
            "GPU profiler: cuModuleLoadData: CUDA_ERROR_INVALID_PTX (code 218)");

  auto opened = GpuProfiler::open(fake_options(nullptr));
  ASSERT_TRUE(opened) << opened.error().message;
  clear_logs();
  ::setenv("POWERTRAIN_FAKE_CUDA_FAIL", "cuLaunchKernel", 1);
  auto failed = (*opened)->measure(p, {1200, 12, 0});
  ::unsetenv("POWERTRAIN_FAKE_CUDA_FAIL");
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().message, "GPU profiler: cuLaunchKernel: CUDA_ERROR_UNKNOWN (code 999)");
  const std::string log = nvml_log();
  EXPECT_NE(log.find("nvmlDeviceSetGpuLockedClocks 1200 1200"), std::string::npos);
  EXPECT_NE(log.find("nvmlDeviceResetGpuLockedClocks"), std::string::npos) << log;

  // An NVML failure names the NVML call (the fake supports clocks up to 1410 MHz).
  auto too_fast = (*opened)->measure(p, {1500, 12, 0});
  ASSERT_FALSE(too_fast);
  EXPECT_TRUE(starts_with(too_fast.error().message, "GPU profiler: NVML "));
  EXPECT_NE(too_fast.error().message.find("nvmlDeviceSetGpuLockedClocks: Invalid Argument"),
            std::string::npos)
      << too_fast.error().message;
  // Out-of-range schedules are rejected before touching the GPU.
  EXPECT_FALSE((*opened)->measure(p, {1200, 0, 0}));
  EXPECT_FALSE((*opened)->measure(p, {1200, 12, 99}));
}

// §5.3's defaults (5 s window, 5 s cooldown) on the profiler's own clock: a virtual clock that
// advances 0.75 s per reading, so the window closes after the 7th run (5.25 s ≥ 5 s) and each
// candidate sleeps exactly one 5 s cooldown, also when it fails; nothing waits for real.
TEST(KareusGpuProfiler, FiveSecondWindowAndFiveSecondCooldownOnTheProfilersClock) {
  const GpuProfilerOptions defaults;
  EXPECT_EQ(defaults.window_s, 5.0);
  EXPECT_EQ(defaults.cooldown_s, 5.0);
  auto virtual_s = std::make_shared<double>(0.0);
  auto sleeps = std::make_shared<std::vector<double>>();
  GpuProfilerOptions o = fake_options(nullptr);
  o.window_s = defaults.window_s;
  o.cooldown_s = defaults.cooldown_s;
  o.now_s = [virtual_s] { return *virtual_s += 0.75; };
  o.sleep_s = [virtual_s, sleeps](double s) {
    sleeps->push_back(s);
    *virtual_s += s;
  };
  auto opened = GpuProfiler::open(o);
  ASSERT_TRUE(opened) << opened.error().message;
  const PartitionType p = attention_partition();
  auto cost = (*opened)->measure(p, {1200, 12, 2});
  ASSERT_TRUE(cost) << cost.error().message;
  const GpuReading& r = (*opened)->last_reading();
  EXPECT_EQ(r.runs, 7);                  // 0.75 s × 7 = 5.25 s is the first reading ≥ 5 s
  EXPECT_DOUBLE_EQ(r.window_s, 5.25);    // the window is what the clock says, not the option
  EXPECT_DOUBLE_EQ(cost->time_s, 0.75);  // window ÷ runs
  EXPECT_EQ(*sleeps, std::vector<double>({5.0}));
  EXPECT_EQ(r.cooldown_s, 5.0);
  // Energy is the counter difference ÷ runs whatever the clock says (the fake integrates wall
  // time, so it is small here but never negative), and static = P_static × time.
  EXPECT_GE(cost->energy_j, 0.0);
  EXPECT_NEAR(cost->static_j, (*opened)->static_power_w() * 0.75, 1e-9);

  // A failing run mid-window: the clock is reset and the GPU still cools down for 5 s.
  clear_logs();
  ::setenv("POWERTRAIN_FAKE_CUDA_FAIL", "cuLaunchKernel", 1);
  auto failed = (*opened)->measure(p, {1200, 12, 2});
  ::unsetenv("POWERTRAIN_FAKE_CUDA_FAIL");
  ASSERT_FALSE(failed);
  EXPECT_EQ(*sleeps, std::vector<double>({5.0, 5.0}));
  EXPECT_NE(nvml_log().find("nvmlDeviceResetGpuLockedClocks"), std::string::npos);

  // No energy counter (NVML_ERROR_NOT_SUPPORTED): one line naming the call, clock reset, cooled.
  clear_logs();
  ::setenv("POWERTRAIN_FAKE_NVML_NO_ENERGY", "1", 1);
  auto no_energy = (*opened)->measure(p, {1200, 12, 2});
  ::unsetenv("POWERTRAIN_FAKE_NVML_NO_ENERGY");
  ASSERT_FALSE(no_energy);
  EXPECT_TRUE(starts_with(no_energy.error().message, "GPU profiler: NVML "))
      << no_energy.error().message;
  EXPECT_NE(no_energy.error().message.find("nvmlDeviceGetTotalEnergyConsumption"),
            std::string::npos)
      << no_energy.error().message;
  EXPECT_EQ(no_energy.error().message.find('\n'), std::string::npos);
  EXPECT_NE(nvml_log().find("nvmlDeviceResetGpuLockedClocks"), std::string::npos);
  EXPECT_EQ(*sleeps, std::vector<double>({5.0, 5.0, 5.0}));

  // A clock the GPU refuses: nothing ran, so nothing to cool down from.
  auto refused = (*opened)->measure(p, {1500, 12, 2});
  ASSERT_FALSE(refused);
  EXPECT_EQ(sleeps->size(), 3u);
}

TEST(KareusGpuProfiler, MeasuredIdleStaticPowerIsTheCounterOverItsWindow) {
  GpuProfilerOptions o = fake_options(nullptr);
  o.static_power = StaticPowerSource::kMeasuredIdle;
  o.idle_sample_s = 0.05;
  auto opened = GpuProfiler::open(o);
  ASSERT_TRUE(opened) << opened.error().message;
  // The fake GPU is "busy" at 1410 MHz when unlocked: 400 W.
  EXPECT_NEAR((*opened)->static_power_w(), 400.0, 40.0);
  EXPECT_TRUE(starts_with((*opened)->static_power_source(), "measured idle "));
}

TEST(KareusGpuProfiler, MboRunsThroughTheGpuBackend) {
  GpuProfilerOptions o = fake_options(nullptr);
  o.window_s = 0.004;
  o.cooldown_s = 0.0;
  o.warmup_runs = 0;
  ::setenv("POWERTRAIN_FAKE_CUDA_SYNC_US", "200", 1);
  auto opened = GpuProfiler::open(o);
  ASSERT_TRUE(opened) << opened.error().message;
  const PartitionType p = attention_partition();
  SearchSpace space{{1005, 1410}, {6, 24}, {0, 1}};
  auto mbo = run_mbo(**opened, p, space,
                     MboOptions{.initial_samples = 4, .batch_size = 2, .max_batches = 1});
  ::unsetenv("POWERTRAIN_FAKE_CUDA_SYNC_US");
  ASSERT_TRUE(mbo) << mbo.error().message;
  EXPECT_EQ(mbo->evaluated.size(), 6u);
  for (const Evaluated& e : mbo->evaluated) {
    EXPECT_GT(e.cost.time_s, 0.0);
    EXPECT_GT(e.cost.energy_j, 0.0);
  }
}

}  // namespace
}  // namespace powertrain::kareus
