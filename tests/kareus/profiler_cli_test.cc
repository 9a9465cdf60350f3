// `powertrain kareus --profiler` and `powertrain kareus-cluster` end to end.
#include <algorithm>
#include <cstdlib>
#include <sstream>

#include "../cli/cli_runner.h"

namespace powertrain::testing_cli {
namespace {

class KareusProfilerCliTest : public CliTest {};

TEST_F(KareusProfilerCliTest, GpuProfilerWithoutADriverIsOneLineAndExitOne) {
  ::setenv("POWERTRAIN_CUDA_LIBRARY", "/nonexistent/libcuda.so.1", 1);
  const CliRun run_gpu = run({"kareus", "--profiler", "gpu"});
  const CliRun run_cluster = run({"kareus-cluster", "--profiler", "gpu", "--gpus", "10240"});
  ::unsetenv("POWERTRAIN_CUDA_LIBRARY");
  for (const auto& [r, name] : {std::pair{run_gpu, "kareus"}, {run_cluster, "kareus-cluster"}}) {
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_EQ(r.err.rfind(std::string("powertrain ") + name +
                              ": error: GPU profiler: CUDA driver not found "
                              "(/nonexistent/libcuda.so.1): ",
                          0),
              0u)
        << r.err;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;  // one line
  }
  EXPECT_EQ(run({"kareus", "--profiler", "tpu"}).exit_code, 2);
}

TEST_F(KareusProfilerCliTest, LargeScaleSmallSliceWritesItsFrontiers) {
  const CliRun r =
      run({"kareus-cluster", "--num-layers", "10", "--seq-len", "1024", "--global-batch", "128",
           "--gpus", "160,320", "--search", "exhaustive", "--out", (dir_ / "out").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Table 7 (max throughput vs Megatron-LM, %)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Table 8 (Kareus vs Megatron-LM + Perseus, %)"), std::string::npos);
  const std::string csv = slurp(dir_ / "out" / "large_scale.csv");
  EXPECT_EQ(csv.rfind("gpus,pipelines,microbatches,method,time_s,energy_j\n", 0), 0u);
  EXPECT_NE(csv.find("\n160,2,16,Megatron-LM,"), std::string::npos) << csv.substr(0, 400);
  EXPECT_NE(csv.find("\n320,4,8,Kareus,"), std::string::npos);

  // Kareus's per-pipeline options are a plan source for the straggler cluster emulation: its
  // fastest planned iteration is Kareus's fastest realized one (same options, same solver; the
  // plan is ceil-quantized to τ = 0.1 ms per instruction on the critical path).
  const CliRun cluster = run(
      {"cluster", "--profile", (dir_ / "out" / "kareus_profile.csv").string(), "--tp", "8", "--pp",
       "10", "--gpus", "160", "--global-batch", "128", "--microbatch-size", "4", "--p-blocking-w",
       "83.64", "--unit-time-s", "0.0001", "--out", (dir_ / "cluster").string()});
  ASSERT_EQ(cluster.exit_code, 0) << cluster.err;
  const auto t_min_at = cluster.out.find("T_min = ");
  ASSERT_NE(t_min_at, std::string::npos) << cluster.out;
  const double t_min = std::stod(cluster.out.substr(t_min_at + 8));
  double kareus_fastest = 1e300;
  std::istringstream lines(csv);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("160,2,16,Kareus,", 0) == 0)
      kareus_fastest = std::min(kareus_fastest, std::stod(line.substr(16)));
  EXPECT_NEAR(t_min, kareus_fastest, 0.01 * kareus_fastest);

  const CliRun bad = run({"kareus-cluster", "--gpus", "100"});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_EQ(bad.err,
            "powertrain kareus-cluster: error: large-scale emulation: 100 GPUs: not a whole "
            "number of pipelines of tp x pp = 8 x 10 = 80 GPUs\n");
}

}  // namespace
}  // namespace powertrain::testing_cli
