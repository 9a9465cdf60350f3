// emulate::program_request: the checks `powertrain emulate` makes before running anything, and
// the run request (layout, options) the settings turn into.
#include "emulate/program_settings.h"

#include <gtest/gtest.h>

namespace powertrain::emulate {
namespace {

TEST(ProgramSettingsTest, NeedsExactlyOneOfAProgramAndTraces) {
  ProgramSettings neither;
  EXPECT_FALSE(program_request(neither));
  ProgramSettings both;
  both.command = {"./prog"};
  both.traces = {"traces/"};
  EXPECT_FALSE(program_request(both));
  ProgramSettings two_pass_traces;
  two_pass_traces.traces = {"traces/"};
  two_pass_traces.two_pass = true;
  ASSERT_FALSE(program_request(two_pass_traces));
  EXPECT_EQ(program_request(two_pass_traces).error().message,
            "--two-pass runs a program twice: give one after --");
}

TEST(ProgramSettingsTest, RefusesLayoutsThatDoNotDivideAndNegativeRanges) {
  ProgramSettings uneven;
  uneven.command = {"./prog"};
  uneven.gpus = 3;
  uneven.gpus_per_node = 2;
  EXPECT_FALSE(program_request(uneven));
  ProgramSettings gap;
  gap.command = {"./prog"};
  gap.max_host_gap_us = -1.0;
  ASSERT_FALSE(program_request(gap));
  EXPECT_EQ(program_request(gap).error().message,
            "--max-host-gap-us must be in [0, 1e9] microseconds");
}

TEST(ProgramSettingsTest, ProgramRunsGetTheirLayoutAndTracesWithoutTopologyGetNodesOfEight) {
  ProgramSettings program;
  program.command = {"./prog", "--steps", "2"};
  program.gpus = 16;
  program.gpus_per_node = 8;
  program.max_host_gap_us = 2.5;
  program.host_time = "model";
  program.modelled_host_gap_us = 3.0;
  program.no_dedup = true;
  auto request = program_request(program);
  ASSERT_TRUE(request) << request.error().message;
  EXPECT_EQ(request->options.nodes, 2);
  EXPECT_EQ(request->options.gpus_per_node, 8);
  EXPECT_EQ(request->options.host_costs.max_host_gap_ns, 2500);
  EXPECT_EQ(request->options.host_costs.modelled_host_gap_ns, 3000);
  EXPECT_FALSE(request->options.dedup);
  EXPECT_EQ(request->command, program.command);

  ProgramSettings traces;
  traces.traces = {"traces/"};
  traces.whole_trace = true;
  auto analysed = program_request(traces);
  ASSERT_TRUE(analysed) << analysed.error().message;
  EXPECT_EQ(analysed->options.nodes, 0);  // as many nodes of 8 as the traces' GPUs need
  EXPECT_EQ(analysed->options.gpus_per_node, 8);
  EXPECT_FALSE(analysed->options.detect_steps);
  // Measured host time keeps the default modelled gap untouched.
  EXPECT_EQ(analysed->options.host_costs.modelled_host_gap_ns,
            EmulateOptions{}.host_costs.modelled_host_gap_ns);
}

}  // namespace
}  // namespace powertrain::emulate
