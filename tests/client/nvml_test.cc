// The dlopen NVML binding against the fake libnvidia-ml.
#include "nvml/nvml.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <thread>

namespace powertrain::nvml {
namespace {

TEST(Nvml, MissingLibraryIsOneClearLine) {
  auto loaded = Nvml::load("/nonexistent/libnvidia-ml.so.1");
  ASSERT_FALSE(loaded);
  EXPECT_EQ(loaded.error().message,
            "NVML not found (/nonexistent/libnvidia-ml.so.1): clock control disabled");
  EXPECT_EQ(not_found_message(kDefaultLibrary),
            "NVML not found (libnvidia-ml.so.1): clock control disabled");
}

TEST(Nvml, LibraryChoice) {
  ::setenv("POWERTRAIN_NVML_LIBRARY", "/x/libfake.so", 1);
  EXPECT_EQ(library_to_load(""), "/x/libfake.so");
  EXPECT_EQ(library_to_load("/y.so"), "/y.so");
  ::unsetenv("POWERTRAIN_NVML_LIBRARY");
  EXPECT_EQ(library_to_load(""), "libnvidia-ml.so.1");
}

TEST(Nvml, FakeClocksEnergyPowerTemperature) {
  auto loaded = Nvml::load(POWERTRAIN_FAKE_NVML_PATH);
  ASSERT_TRUE(loaded) << loaded.error().message;
  const Nvml& nvml = **loaded;
  EXPECT_EQ(*nvml.device_count(), 1);
  auto clocks = nvml.supported_graphics_clocks_mhz(0);
  ASSERT_TRUE(clocks);
  ASSERT_EQ(clocks->size(), 81u);
  EXPECT_EQ(clocks->front(), 1410);
  EXPECT_EQ(clocks->back(), 210);
  EXPECT_FALSE(nvml.supported_graphics_clocks_mhz(3));
  ASSERT_TRUE(nvml.set_locked_clocks_mhz(0, 705, 705));
  EXPECT_EQ(*nvml.power_mw(0), 137500u);  // 50 + 350 x (705/1410)^2 W
  auto bad = nvml.set_locked_clocks_mhz(0, 1500, 1500);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("nvmlDeviceSetGpuLockedClocks: Invalid Argument (code 2)"),
            std::string::npos);
  const unsigned long long e0 = *nvml.total_energy_mj(0);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const unsigned long long e1 = *nvml.total_energy_mj(0);
  const double watts = (e1 - e0) / 1000.0 / 0.1;
  EXPECT_GT(watts, 137.5 * 0.95);
  EXPECT_LT(watts, 137.5 * 1.5);  // sleep may overshoot
  ASSERT_TRUE(nvml.reset_locked_clocks(0));
  EXPECT_EQ(*nvml.power_mw(0), 400000u);
  auto temperature = nvml.temperature_c(0);
  ASSERT_TRUE(temperature);
  EXPECT_GE(*temperature, 25u);
  EXPECT_LE(*temperature, 30u);
}

}  // namespace
}  // namespace powertrain::nvml
