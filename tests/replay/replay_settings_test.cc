// replay::replay_options: the checks `powertrain replay` / `whatif` make before reading a trace,
// and the options the settings turn into.
#include "replay/replay_settings.h"

#include <gtest/gtest.h>

namespace powertrain::replay {
namespace {

ReplaySettings one_trace() {
  ReplaySettings settings;
  settings.traces = {"rank0.json"};
  return settings;
}

TEST(ReplaySettingsTest, ReplayWithoutChangesIsFineButWhatIfNeedsOne) {
  ASSERT_TRUE(replay_options(one_trace(), false));
  auto options = replay_options(one_trace(), true);
  ASSERT_FALSE(options);
  EXPECT_NE(options.error().message.find("give at least one change"), std::string::npos);
  ReplaySettings none;
  ASSERT_FALSE(replay_options(none, false));
  EXPECT_EQ(replay_options(none, false).error().message,
            "give one or more trace files or directories");
}

TEST(ReplaySettingsTest, RefusesContradictoryWhatIfs) {
  ReplaySettings dp_and_pp = one_trace();
  dp_and_pp.data_parallel = 4;
  dp_and_pp.pipeline_stages = 2;
  ASSERT_FALSE(replay_options(dp_and_pp, true));
  EXPECT_NE(replay_options(dp_and_pp, true).error().message.find("--dp applies"),
            std::string::npos);
  ReplaySettings hidden_and_bus = one_trace();
  hidden_and_bus.hidden_ratio = 2.0;
  hidden_and_bus.bus_bandwidth_gb_s = 10.0;
  ASSERT_FALSE(replay_options(hidden_and_bus, true));
  ReplaySettings bad_scale = one_trace();
  bad_scale.scales = {"nonsense=2"};
  EXPECT_FALSE(replay_options(bad_scale, true));
  ReplaySettings far_p2p = one_trace();
  far_p2p.pipeline_stages = 2;
  far_p2p.p2p_s = 2e3;
  ASSERT_FALSE(replay_options(far_p2p, true));
  EXPECT_EQ(replay_options(far_p2p, true).error().message, "--p2p-s must be in [0, 1000] seconds");
}

TEST(ReplaySettingsTest, CarriesEveryChangeIntoTheOptions) {
  ReplaySettings settings = one_trace();
  settings.scales = {"gpu=0.5", "collective=2"};
  settings.pipeline_stages = 4;
  settings.microbatches = 8;
  settings.layers = 24;
  settings.input_microbatches = 2;
  settings.p2p_s = 0.25;
  auto options = replay_options(settings, true);
  ASSERT_TRUE(options) << options.error().message;
  EXPECT_EQ(options->scalings.size(), 2u);
  EXPECT_EQ(options->restage.stages, 4);
  EXPECT_EQ(options->restage.microbatches, 8);
  EXPECT_EQ(options->restage.layers, 24);
  EXPECT_DOUBLE_EQ(options->restage.p2p_s, 0.25);
  EXPECT_EQ(options->input_microbatches, 2);
  EXPECT_TRUE(options->restages());
  // Collectives stay measured unless a bus bandwidth is given.
  EXPECT_NE(options->replay.collective_time, sim::ReplayOptions::CollectiveTime::kBandwidthLatency);

  ReplaySettings modelled = one_trace();
  modelled.bus_bandwidth_gb_s = 100.0;
  modelled.collective_latency_s = 1e-5;
  auto bus = replay_options(modelled, false);
  ASSERT_TRUE(bus) << bus.error().message;
  EXPECT_EQ(bus->replay.collective_time, sim::ReplayOptions::CollectiveTime::kBandwidthLatency);
  EXPECT_DOUBLE_EQ(bus->replay.bus_bandwidth_gb_s, 100.0);
  EXPECT_DOUBLE_EQ(bus->replay.collective_latency_s, 1e-5);
}

}  // namespace
}  // namespace powertrain::replay
