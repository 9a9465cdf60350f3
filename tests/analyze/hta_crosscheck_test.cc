// HTA-definition quantities of analyze_rank on every shared real trace against an independent
// pandas computation (tests/python/hta_reference.py): idle / compute / non-compute %, kernel-type
// state %, communication–computation overlap %, within 0.5 percentage points.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "analyze/analyze.h"
#include "trace/kineto_reader.h"

#include "../support/run_command.h"

namespace powertrain::analyze {
namespace {

namespace fs = std::filesystem;

using testing_support::run_command;

class HtaCrossCheck : public ::testing::TestWithParam<const char*> {};

TEST_P(HtaCrossCheck, MatchesIndependentPandasWithinHalfAPoint) {
  const fs::path data = fs::path(POWERTRAIN_SOURCE_DIR) / ".." / "shared" / "data" / "traces";
  const fs::path path = data / GetParam();
  const fs::path script = fs::path(POWERTRAIN_SOURCE_DIR) / "tests" / "python" / "hta_reference.py";
  if (!fs::exists(path)) GTEST_SKIP() << "real data not found at " << path;
  if (!fs::exists("/usr/bin/python3")) GTEST_SKIP() << "no /usr/bin/python3";
  const auto [out, status] =
      run_command("/usr/bin/python3 '" + script.string() + "' '" + path.string() + "' 2>/dev/null");
  if (status == 2) GTEST_SKIP() << "python3-pandas not installed";
  ASSERT_EQ(status, 0) << out;
  const nlohmann::json reference = nlohmann::json::parse(out);

  auto traces = trace::read_kineto_traces({path.string()});
  ASSERT_TRUE(traces.ok()) << traces.error().message;
  ASSERT_EQ(traces->size(), reference["ranks"].size());
  std::map<int, const trace::RankTrace*> by_rank;
  for (const auto& t : *traces) by_rank[t.rank] = &t;

  for (const auto& ref : reference["ranks"]) {
    const int rank = ref["rank"].get<int>();
    ASSERT_TRUE(by_rank.count(rank)) << "rank " << rank;
    const RankAnalysis r = analyze_rank(*by_rank[rank]);  // gpu-span, HTA's default
    SCOPED_TRACE("rank " + std::to_string(rank));
    EXPECT_EQ(r.window.used, WindowKind::kGpuSpan);
    EXPECT_EQ(r.gpu_events, ref["gpu_events"].get<std::int64_t>());
    const TemporalBreakdown& t = r.temporal;
    EXPECT_NEAR(t.pct(t.idle_ns), ref["idle_pct"].get<double>(), 0.5);
    EXPECT_NEAR(t.pct(t.compute_ns), ref["compute_pct"].get<double>(), 0.5);
    EXPECT_NEAR(t.pct(t.non_compute_ns), ref["non_compute_pct"].get<double>(), 0.5);
    EXPECT_NEAR(r.comm_comp_overlap_pct(), ref["overlap_pct"].get<double>(), 0.5);
    for (int mask = 1; mask < 8; ++mask) {
      const std::string key = std::to_string(mask);
      const double expected = ref["states"].contains(key) ? ref["states"][key].get<double>() : 0.0;
      EXPECT_NEAR(r.types.state_pct(mask), expected, 0.5) << state_name(mask);
    }
    // The sums the definitions promise.
    EXPECT_EQ(t.idle_ns + t.compute_ns + t.non_compute_ns, t.window_ns);
    EXPECT_EQ(r.types.busy_ns(), t.window_ns - t.idle_ns);
    // Report the numbers (they are the "must show" of docs/analyze.md).
    std::printf(
        "  %-40s rank %d: idle %.3f %% (pandas %.3f), compute %.3f %% (%.3f), non-compute %.3f "
        "%% (%.3f), overlap %.3f %% (%.3f)\n",
        GetParam(), rank, t.pct(t.idle_ns), ref["idle_pct"].get<double>(), t.pct(t.compute_ns),
        ref["compute_pct"].get<double>(), t.pct(t.non_compute_ns),
        ref["non_compute_pct"].get<double>(), r.comm_comp_overlap_pct(),
        ref["overlap_pct"].get<double>());
  }
}

INSTANTIATE_TEST_SUITE_P(
    SharedTraces, HtaCrossCheck,
    ::testing::Values("hta/alexnet_critical_path.json.gz", "hta/cuda_event_sync.json.gz",
                      "hta/cuda_event_sync_multi_stream.json.gz", "hta/nccl_data.json.gz",
                      "hta/simple_add.json.gz", "param/dlrm_kineto_8ranks.tar.gz",
                      "param/resnet_kineto.json.gz", "tracelens/b200_eager_rank0.json.gz"));

}  // namespace
}  // namespace powertrain::analyze
