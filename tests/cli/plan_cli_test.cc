// `powertrain plan` (issue 17 item 4, must-show 4): plans from pipeline-parallel Kineto traces and
// from an emulated 4-stage 1F1B program; the fastest planned point must reproduce the replayed
// step within 1 % and the frontier must be monotone; traces without a pipeline fail with one line.
#include <fmt/core.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli_runner.h"
#include "whatif/restage.h"

namespace powertrain {
namespace {

namespace fs = std::filesystem;
using testing_cli::CliRun;
using testing_cli::slurp;

const fs::path kTraces = fs::path(POWERTRAIN_SOURCE_DIR) / ".." / "shared" / "data" / "traces";

// Checks the outputs of a successful plan: T_min within 1 % of the step, monotone frontier.
void check_plan(const fs::path& out, double tolerance_pct = 1.0) {
  const nlohmann::json plan = nlohmann::json::parse(slurp(out / "trace_plan.json"));
  EXPECT_LT(std::abs(plan["planned_t_min_error_pct"].get<double>()), tolerance_pct) << plan.dump();
  EXPECT_NEAR(plan["realized_t_min_s"].get<double>(), plan["step_s"].get<double>(),
              0.01 * plan["step_s"].get<double>());
  std::istringstream csv(slurp(out / "frontier.csv"));
  std::string line;
  std::getline(csv, line);
  EXPECT_EQ(line.rfind("time,energy", 0), 0u);
  std::vector<std::pair<double, double>> points;
  while (std::getline(csv, line)) {
    double time = 0.0, energy = 0.0;
    ASSERT_EQ(std::sscanf(line.c_str(), "%lf,%lf", &time, &energy), 2) << line;
    points.emplace_back(time, energy);
  }
  const int rows = static_cast<int>(points.size());
  // Slowest first. Monotone from T_min up to the least-energy point (time up ⇒ energy down); the
  // slower points beyond it are dominated (blocking power over a longer iteration), as in the
  // reference solver's frontiers.
  std::size_t least = 0;
  for (std::size_t i = 0; i < points.size(); ++i) {
    if (i > 0) {
      EXPECT_LT(points[i].first, points[i - 1].first) << i;
    }
    if (points[i].second < points[least].second) least = i;
  }
  for (std::size_t i = least + 1; i < points.size(); ++i)
    EXPECT_GE(points[i].second, points[i - 1].second - 1e-9) << i;
  EXPECT_GE(rows, 1);
  for (const char* file : {"plans.csv", "summary.json", "frontier.svg", "instructions.csv",
                           "profile.csv", "baselines.csv"})
    EXPECT_TRUE(fs::exists(out / file)) << file;
}

// A 1F1B pipeline job (whatif's rebuild of a transformer layer profile) written as one Kineto
// trace per rank: GPU kernels, and NCCL send/recv kernels with process-group metadata.
void write_pipeline_traces(const fs::path& dir, int stages, int microbatches) {
  whatif::LayerProfile profile;
  profile.layers = 2 * stages;
  profile.forward = {{"layer_norm_kernel", 10'000, 0},
                     {"sm90_xmma_gemm_qkv", 30'000, 0},
                     {"flash_fwd_kernel", 20'000, 0},
                     {"sm90_xmma_gemm_mlp", 40'000, 0}};
  profile.backward = {{"flash_bwd_kernel", 40'000, 0},
                      {"sm90_xmma_gemm_dgrad", 50'000, 0},
                      {"sm90_xmma_gemm_wgrad", 50'000, 0},
                      {"layer_norm_bwd", 20'000, 0},
                      {"elementwise_bwd", 40'000, 0}};
  whatif::RestageSpec spec;
  spec.stages = stages;
  spec.microbatches = microbatches;
  spec.p2p_s = 25e-6;
  auto job = whatif::build_pipeline_job(profile, spec);
  ASSERT_TRUE(job) << job.error().message;
  const graph::ExecutionGraph& g = job->graph;
  fs::create_directories(dir);
  std::map<std::string, int> next_sequence;
  std::vector<int> sequence_of_group(g.collectives.size(), -1);
  for (const graph::RankInfo& rank : g.ranks) {
    nlohmann::json events = nlohmann::json::array();
    for (std::int32_t t = rank.first_task; t < rank.end_task; ++t) {
      const graph::Processor& p = g.processors[g.processor[t]];
      nlohmann::json args = {{"device", 0}, {"stream", p.tid}, {"correlation", t + 1}};
      const std::int32_t group = g.collective[t];
      if (group != graph::kNone) {
        const std::int32_t x = g.collective_members[g.collectives[group].first_member];
        const std::int32_t y = g.collective_members[g.collectives[group].first_member + 1];
        const int rx = g.rank_index_of(x), ry = g.rank_index_of(y);
        const std::string pg = fmt::format("pp{}-{}", std::min(rx, ry), std::max(rx, ry));
        if (sequence_of_group[group] < 0) sequence_of_group[group] = next_sequence[pg]++;
        args["Collective name"] = t == x ? "send" : "recv";
        args["Group size"] = 2;
        args["Process Group Name"] = pg;
        args["Process Group Ranks"] = fmt::format("[{}, {}]", std::min(rx, ry), std::max(rx, ry));
        args["Seq"] = sequence_of_group[group];
      }
      events.push_back({{"ph", "X"},
                        {"cat", "kernel"},
                        {"name", rank.names[g.name[t]]},
                        {"pid", 0},
                        {"tid", p.tid},
                        {"ts", 1.7e15 / 1e3 + g.input_start_ns[t] / 1e3},
                        {"dur", g.input_duration_ns[t] / 1e3},
                        {"args", args}});
    }
    const nlohmann::json doc = {
        {"schemaVersion", 1},
        {"distributedInfo", {{"backend", "nccl"}, {"rank", rank.rank}, {"world_size", stages}}},
        {"traceEvents", events}};
    std::ofstream(dir / fmt::format("rank{}.json", rank.rank)) << doc.dump();
  }
}

class PlanCliTest : public testing_cli::CliTest {};

TEST_F(PlanCliTest, PipelineTracePlansTheReplayedStep) {
  for (auto [stages, microbatches] : {std::pair{4, 8}, std::pair{2, 6}}) {
    SCOPED_TRACE(testing::Message() << stages << " x " << microbatches);
    const fs::path traces = dir_ / fmt::format("traces{}x{}", stages, microbatches);
    write_pipeline_traces(traces, stages, microbatches);
    const fs::path out = dir_ / fmt::format("out{}x{}", stages, microbatches);
    const CliRun r = run({"plan", "--trace", traces.string(), "--out", out.string(), "--quiet"});
    ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
    EXPECT_NE(r.out.find(fmt::format("{} stages x {} microbatches", stages, microbatches)),
              std::string::npos)
        << r.out;
    check_plan(out);
    const nlohmann::json plan = nlohmann::json::parse(slurp(out / "trace_plan.json"));
    EXPECT_GT(plan["frontier_points"].get<int>(), 10);  // GEMM time scales with the clock
    std::cout << "  " << stages << " x " << microbatches << ": step "
              << plan["step_s"].get<double>() << " s (replayed), planned T_min "
              << plan["planned_t_min_s"].get<double>() << " s ("
              << plan["planned_t_min_error_pct"].get<double>() << " %), "
              << plan["frontier_points"].get<int>() << " frontier points\n";
  }
}

TEST_F(PlanCliTest, SharedTracesWithoutPipelineFailWithOneLine) {
  // None of the real traces is pipeline-parallel (README: DLRM is data-parallel with all-to-all
  // and all-reduce; the others are single ranks).
  int tried = 0;
  for (const char* name : {"param/dlrm_kineto_8ranks.tar.gz", "hta/nccl_data.json.gz",
                           "tracelens/b200_eager_rank0.json.gz"}) {
    const fs::path path = kTraces / name;
    if (!fs::exists(path)) continue;
    ++tried;
    const CliRun r =
        run({"plan", "--trace", path.string(), "--out", (dir_ / "out").string(), "--quiet"});
    EXPECT_EQ(r.exit_code, 1) << name << r.out;
    EXPECT_NE(r.err.find("no pipeline structure"), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_FALSE(fs::exists(dir_ / "out"));
  }
  if (tried == 0) GTEST_SKIP() << "real traces not found in " << kTraces;
}

TEST_F(PlanCliTest, UsageErrors) {
  EXPECT_EQ(run({"plan"}).exit_code, 2);
  EXPECT_EQ(run({"plan", "--trace", "x", "--emulated", "y"}).exit_code, 2);
  const CliRun r = run({"plan", "--emulated", (dir_ / "missing").string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--keep-traces"), std::string::npos) << r.err;
}

TEST_F(PlanCliTest, EmulatedFourStage1F1BProgram) {
#ifndef POWERTRAIN_HAVE_EMULATION
  GTEST_SKIP() << "GPU emulation not built (no CUDA headers or nvcc at configure time)";
#else
  const fs::path program = fs::path(POWERTRAIN_EMU_PROGRAM_DIR) / "nccl_pipeline";
  if (!fs::exists(program)) GTEST_SKIP() << "emulation test program not built: " << program;
  std::ofstream(dir_ / "kernels.csv") << "name,duration_us\nfwd_stage,1000\nbwd_stage,2000\n";
  const fs::path emulated = dir_ / "emu";
  const CliRun e =
      run({"emulate", "--interposer", POWERTRAIN_INTERPOSER_PATH, "--quiet", "--gpu", "h100",
           "--ranks", "4", "--kernel-table", (dir_ / "kernels.csv").string(), "--max-host-gap-us",
           "10", "--keep-traces", "--out", emulated.string(), "--", program.string()});
  ASSERT_EQ(e.exit_code, 0) << e.err << e.out;
  const fs::path out = dir_ / "plan";
  const CliRun r = run({"plan", "--emulated", emulated.string(), "--gpu", "h100", "--kernel-table",
                        (dir_ / "kernels.csv").string(), "--max-host-gap-us", "10", "--out",
                        out.string(), "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("4 stages x 8 microbatches"), std::string::npos) << r.out;
  check_plan(out);
  // The instructions alone (without the constant start-up outside them) also match: the makespan
  // of the 1F1B instructions is (M + S − 1)(F + B) plus transfers = 33 ms + ~0.2 ms.
  const nlohmann::json plan = nlohmann::json::parse(slurp(out / "trace_plan.json"));
  const double dag_s =
      plan["planned_t_min_s"].get<double>() - plan["outside_instructions_s"].get<double>();
  EXPECT_NEAR(dag_s, plan["instruction_makespan_s"].get<double>(),
              0.01 * plan["instruction_makespan_s"].get<double>());
  EXPECT_NEAR(plan["instruction_makespan_s"].get<double>(), 0.033, 0.0005);
#endif
}

}  // namespace
}  // namespace powertrain
