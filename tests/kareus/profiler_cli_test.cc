// `powertrain kareus --profiler` and `powertrain kareus-cluster` end to end.
#include <cstdlib>

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

  const CliRun bad = run({"kareus-cluster", "--gpus", "100"});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_EQ(bad.err,
            "powertrain kareus-cluster: error: large-scale emulation: 100 GPUs: not a whole "
            "number of pipelines of tp x pp = 8 x 10 = 80 GPUs\n");
}

}  // namespace
}  // namespace powertrain::testing_cli
