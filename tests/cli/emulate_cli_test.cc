// End-to-end tests of `powertrain emulate` (issue 5): analysing traces of an earlier run, and
// running a program through the launcher — here a shell script that stands in for an emulated
// program by writing its trace where the interposer would.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_runner.h"
#include "emulate/synthetic_programs.h"

namespace powertrain {
namespace {

namespace fs = std::filesystem;
using testing_cli::CliRun;
using testing_cli::slurp;

class EmulateCliTest : public testing_cli::CliTest {
 protected:
  fs::path write_pipeline(int microbatches) {
    const fs::path traces = dir_ / "traces";
    fs::create_directories(traces);
    emulate::PipelineSpec spec;
    spec.microbatches = microbatches;
    for (int s = 0; s < spec.stages; ++s) {
      std::ofstream(traces / ("trace-" + std::to_string(100 + s) + ".jsonl"))
          << emulate::pipeline_program(s, spec);
    }
    std::ofstream(dir_ / "kernels.csv")
        << "name,duration_us\nforward_step,1000\nbackward_step,2000\n";
    return traces;
  }
  void expect_error(const CliRun& r, const std::string& part) {
    EXPECT_NE(r.exit_code, 0);
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find("powertrain emulate: error: "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(part), std::string::npos) << "missing '" << part << "' in " << r.err;
    EXPECT_FALSE(fs::exists(dir_ / "out")) << "partial output left behind";
  }
};

TEST_F(EmulateCliTest, AnalysesTracesOfAnEarlierRun) {
  const fs::path traces = write_pipeline(4);
  const CliRun r = run({"emulate", "--traces", traces.string(), "--gpu", "h100", "--nodes", "1",
                        "--gpus-per-node", "4", "--kernel-table", (dir_ / "kernels.csv").string(),
                        "--out", (dir_ / "out").string(), "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.err.empty()) << r.err;
  EXPECT_NE(r.out.find("s per step, predicted"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("J per step on 4 GPU(s)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("modelled"), std::string::npos);
  const auto summary = nlohmann::json::parse(slurp(dir_ / "out" / "summary.json"));
  EXPECT_EQ(summary["ranks"].size(), 4u);
  EXPECT_EQ(summary["topology"]["gpus_per_node"], 4);
  EXPECT_GT(summary["job"]["predicted_step_s"].get<double>(), 0.021);
  EXPECT_EQ(summary["estimators"][0]["name"], "table");
  EXPECT_TRUE(fs::exists(dir_ / "out" / "emulated_trace.json"));
}

TEST_F(EmulateCliTest, BadInputGivesOneLineErrors) {
  expect_error(run({"emulate", "--out", (dir_ / "out").string(), "--quiet"}),
               "give a program after -- (e.g. powertrain emulate --gpu h100 -- ./prog)");
  const fs::path traces = write_pipeline(2);
  expect_error(run({"emulate", "--traces", traces.string(), "--out", (dir_ / "out").string(),
                    "--quiet", "--", "./prog"}),
               "not both");
  expect_error(run({"emulate", "--traces", traces.string(), "--gpu", "tpu", "--out",
                    (dir_ / "out").string(), "--quiet"}),
               "unknown GPU 'tpu'");
  std::ofstream(traces / "trace-999.jsonl")
      << R"({"op":"process","version":1,"pid":1,"rank":9,"world_size":10,"devices":1})"
         "\n"
      << R"({"op":"kernel","t":1,"dt":1,"tid":0,"dev":0,"corr":1,"name":"k"})"
         "\n";
  expect_error(
      run({"emulate", "--traces", traces.string(), "--out", (dir_ / "out").string(), "--quiet"}),
      "trace-999.jsonl:2: field 'stream' missing in 'kernel' record");
  expect_error(run({"emulate", "--interposer", "/nonexistent/libpowertrain_cuda.so", "--out",
                    (dir_ / "out").string(), "--quiet", "--", "true"}),
               "--interposer /nonexistent/libpowertrain_cuda.so: no such file");
}

// The launcher end to end: 4 ranks, each "program" writes the trace its rank would have produced.
TEST_F(EmulateCliTest, RunsAProgramPerRankAndPredictsIt) {
  std::string preload;
  for (const char* path : {"/lib/x86_64-linux-gnu/libm.so.6", "/usr/lib/x86_64-linux-gnu/libm.so.6",
                           "/lib64/libm.so.6", "/lib/aarch64-linux-gnu/libm.so.6"}) {
    if (fs::exists(path)) preload = path;
  }
  if (preload.empty()) GTEST_SKIP() << "no libm to stand in for the interposer";
  const fs::path traces = write_pipeline(4);
  const std::string script = "echo rank $RANK of $WORLD_SIZE; cp " + traces.string() +
                             "/trace-10$RANK.jsonl \"$POWERTRAIN_EMU_DIR/trace-$$.jsonl\"";
  const CliRun r = run({"emulate", "--ranks", "4", "--interposer", preload, "--kernel-table",
                        (dir_ / "kernels.csv").string(), "--keep-traces", "--out",
                        (dir_ / "out").string(), "--", "sh", "-c", script});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  for (int rank = 0; rank < 4; ++rank) {
    EXPECT_NE(
        r.out.find("[rank " + std::to_string(rank) + "] rank " + std::to_string(rank) + " of 4"),
        std::string::npos)
        << r.out;
  }
  EXPECT_NE(r.err.find("emulate: starting 4 processes x 1 device = 4 GPU(s) on 1 node(s) x 4 "
                       "(--ranks)"),
            std::string::npos)
      << r.err;
  const auto summary = nlohmann::json::parse(slurp(dir_ / "out" / "summary.json"));
  EXPECT_EQ(summary["ranks"].size(), 4u);
  int kept = 0;
  for (const auto& entry : fs::directory_iterator(dir_ / "out" / "traces"))
    kept += entry.is_regular_file();
  EXPECT_EQ(kept, 4);

  // A failing rank is reported and the exit code says so; the rest is still analysed.
  const CliRun failed = run({"emulate", "--ranks", "4", "--interposer", preload, "--kernel-table",
                             (dir_ / "kernels.csv").string(), "--out", (dir_ / "out2").string(),
                             "--quiet", "--", "sh", "-c", script + "; exit $RANK"});
  EXPECT_EQ(failed.exit_code, 1);
  EXPECT_NE(failed.err.find("emulate: rank 3 (pid"), std::string::npos) << failed.err;
  EXPECT_NE(failed.err.find("ended with exit code 3"), std::string::npos) << failed.err;
  EXPECT_TRUE(fs::exists(dir_ / "out2" / "summary.json"));
  EXPECT_FALSE(fs::exists(dir_ / "out2" / "traces"));
}

// The default starts one process that sees --gpus devices (a single-GPU program prints its
// output once, not once per GPU of a node); the first line says why.
TEST_F(EmulateCliTest, DefaultIsOneProcessSeeingAllGpus) {
  std::string preload;
  for (const char* path : {"/lib/x86_64-linux-gnu/libm.so.6", "/usr/lib/x86_64-linux-gnu/libm.so.6",
                           "/lib64/libm.so.6", "/lib/aarch64-linux-gnu/libm.so.6"}) {
    if (fs::exists(path)) preload = path;
  }
  if (preload.empty()) GTEST_SKIP() << "no libm to stand in for the interposer";
  const fs::path traces = write_pipeline(4);
  const std::string script = "echo hello $WORLD_SIZE $POWERTRAIN_EMU_DEVICES; cp " +
                             traces.string() +
                             "/trace-100.jsonl \"$POWERTRAIN_EMU_DIR/trace-1.jsonl\"";
  const CliRun r = run({"emulate", "--gpus", "4", "--interposer", preload, "--kernel-table",
                        (dir_ / "kernels.csv").string(), "--out", (dir_ / "out").string(), "--",
                        "sh", "-c", script});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("[rank 0] hello 1 4"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("[rank 1]"), std::string::npos) << r.out;
  EXPECT_EQ(r.err.rfind("emulate: starting 1 process x 4 devices = 4 GPU(s) on 1 node(s) x 4 "
                        "(the default: one process sees every GPU",
                        0),
            0u)
      << r.err;
  // Contradictory counts are a usage error naming the flags.
  const CliRun bad = run({"emulate", "--gpus", "6", "--ranks", "4", "--interposer", preload,
                          "--out", (dir_ / "bad").string(), "--", "true"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--ranks 4: the job's 6 GPU(s) do not divide among them"),
            std::string::npos)
      << bad.err;
}

}  // namespace
}  // namespace powertrain
