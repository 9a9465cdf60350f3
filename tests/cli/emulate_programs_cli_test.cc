// `powertrain emulate` end to end on the CUDA test programs built with nvcc (issue 5, must-show
// 1): real programs, run with no GPU through the launcher and the interposer, predicted by the
// pipeline. Skips when the emulation (CUDA headers, nvcc) was not built.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "cli_runner.h"
#include "device/gpu.h"
#include "emulation_cli_test.h"

namespace powertrain {
namespace {

namespace fs = std::filesystem;
using testing_cli::CliRun;
using testing_cli::slurp;

struct Kernel {
  std::string name;
  double start_us = 0.0;
  double duration_us = 0.0;
};

class EmulateProgramsTest : public testing_cli::EmulationCliTest {
 protected:
  const char* required_program() const override { return "nccl_pipeline"; }

  CliRun emulate(std::vector<std::string> flags, const std::vector<std::string>& program) {
    std::vector<std::string> args = {"emulate", "--interposer", interposer_.string(), "--quiet"};
    args.insert(args.end(), flags.begin(), flags.end());
    args.push_back("--");
    args.insert(args.end(), program.begin(), program.end());
    return run(args);
  }

  // Kernels named `prefix*` of each emulated rank in the Perfetto trace, in time order.
  std::map<int, std::vector<Kernel>> kernels(const fs::path& out, const std::string& prefix) {
    const nlohmann::json trace = nlohmann::json::parse(slurp(out / "emulated_trace.json"));
    std::map<int, std::vector<Kernel>> by_rank;
    for (const auto& e : trace["traceEvents"]) {
      if (e.value("ph", "") != "X") continue;
      const std::string name = e.value("name", "");
      if (name.rfind(prefix, 0) != 0) continue;
      by_rank[e["pid"].get<int>()].push_back(
          {name.substr(0, name.find('(')), e["ts"].get<double>(), e["dur"].get<double>()});
    }
    for (auto& [rank, list] : by_rank)
      std::sort(list.begin(), list.end(),
                [](const Kernel& a, const Kernel& b) { return a.start_us < b.start_us; });
    return by_rank;
  }

  // Records of `op` in the one trace kept in OUT/traces (--keep-traces), in file order.
  static std::vector<nlohmann::json> kept(const fs::path& out, const std::string& op) {
    std::vector<nlohmann::json> records;
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(out / "traces")) {
      if (entry.path().extension() == ".jsonl") files.push_back(entry.path());
    }
    EXPECT_EQ(files.size(), 1u);
    if (files.empty()) return records;
    std::ifstream in(files.front());
    std::string line;
    while (std::getline(in, line)) {
      const nlohmann::json record = nlohmann::json::parse(line);
      if (record.value("op", "") == op) records.push_back(record);
    }
    return records;
  }
};

TEST_F(EmulateProgramsTest, PipelineOfFourRanksHasThe1F1BOrderAndBubbles) {
  // Profiled durations for the two stage kernels: forward F = 1 ms, backward B = 2 ms.
  std::ofstream(dir_ / "kernels.csv") << "name,duration_us\nfwd_stage,1000\nbwd_stage,2000\n";
  const fs::path out = dir_ / "out";
  // Host gaps capped at 10 µs: the timing checks below are about the pipeline's structure, not
  // about how busy the test machine's cores were while the 4 processes ran.
  const CliRun r =
      emulate({"--gpu", "h100", "--ranks", "4", "--kernel-table", (dir_ / "kernels.csv").string(),
               "--max-host-gap-us", "10", "--out", out.string()},
              {(programs_ / "nccl_pipeline").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const nlohmann::json summary = nlohmann::json::parse(slurp(out / "summary.json"));
  ASSERT_EQ(summary["ranks"].size(), 4u);
  EXPECT_EQ(summary["warnings"].size(), 0u) << summary["warnings"].dump();

  constexpr int kStages = 4, kMicrobatches = 8;
  constexpr double kF = 1000.0, kB = 2000.0;  // µs
  const auto by_rank = kernels(out, "");
  for (int s = 0; s < kStages; ++s) {
    // Megatron's 1F1B order: S − s − 1 warm-up forwards, alternating, then the cool-down.
    std::vector<std::string> expected;
    const int warmup = std::min(kStages - s - 1, kMicrobatches);
    for (int i = 0; i < warmup; ++i) expected.push_back("fwd_stage");
    for (int i = 0; i < kMicrobatches - warmup; ++i) {
      expected.push_back("fwd_stage");
      expected.push_back("bwd_stage");
    }
    for (int i = 0; i < warmup; ++i) expected.push_back("bwd_stage");
    std::vector<std::string> seen;
    ASSERT_TRUE(by_rank.count(s)) << "rank " << s;
    for (const Kernel& k : by_rank.at(s))
      if (k.name == "fwd_stage" || k.name == "bwd_stage") seen.push_back(k.name);
    EXPECT_EQ(seen, expected) << "stage " << s;
  }

  // Timing: the span of the stage kernels is the 1F1B makespan (M + S − 1)(F + B) plus the
  // transfers on the fill/drain path (~11 µs each on NVLink); each stage idles for the bubble
  // (S − 1)(F + B) inside it, and stage s starts s forwards (plus transfers) after stage 0.
  double first = 1e300, last = 0.0;
  std::map<int, double> busy, first_forward;
  for (const auto& [rank, list] : by_rank)
    for (const Kernel& k : list) {
      if (k.name != "fwd_stage" && k.name != "bwd_stage") continue;
      first = std::min(first, k.start_us);
      last = std::max(last, k.start_us + k.duration_us);
      busy[rank] += k.duration_us;
      if (!first_forward.count(rank)) first_forward[rank] = k.start_us;
    }
  const double makespan = (kMicrobatches + kStages - 1) * (kF + kB);
  EXPECT_GE(last - first, makespan - 1.0);
  EXPECT_LE(last - first, makespan + 40 * 15.0);  // at most 40 transfers of ≤ 15 µs
  for (int s = 0; s < kStages; ++s) {
    EXPECT_DOUBLE_EQ(busy[s], kMicrobatches * (kF + kB));
    const double offset = first_forward[s] - first_forward[0];
    EXPECT_GE(offset, s * kF - 1.0) << "stage " << s;
    // ncclCommInitRank is a barrier: start-up skew of the emulated processes does not leak in.
    EXPECT_LE(offset, s * (kF + 15.0) + 1.0) << "stage " << s;
  }
  // The job's GPU span also holds the start-up copies, whose timing follows the host's.
  EXPECT_GE(summary["job"]["predicted_gpu_span_s"].get<double>() * 1e6, last - first - 1.0);
}

TEST_F(EmulateProgramsTest, CublasGemmChainIsPredictedAtTheDeviceModelRoofline) {
  if (!fs::exists(programs_ / "cublas_gemm_chain")) GTEST_SKIP() << "program not built";
  const fs::path out = dir_ / "out";
  const CliRun r = emulate({"--gpu", "h100", "--gpus-per-node", "1", "--out", out.string()},
                           {(programs_ / "cublas_gemm_chain").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  // The roofline of each GEMM: device::estimate_work of its FLOPs and bytes at the top clock.
  const device::GpuSpec gpu = *device::find_gpu("h100");
  const std::vector<std::array<double, 3>> shapes = {
      {8192, 8192, 8192}, {16384, 8192, 4096}, {8192, 4096, 16384}, {12288, 12288, 6144}};
  double roofline_us = 0.0;
  for (const auto& [m, n, k] : shapes) {
    device::Work work;
    work.kind = device::WorkKind::kMatmul;
    work.precision = device::Precision::kBf16;
    work.flops = 2.0 * m * n * k;
    work.memory_bytes = 2.0 * (m * k + k * n + m * n);
    roofline_us +=
        device::estimate_work(gpu, std::span(&work, 1), gpu.max_clock_mhz()).time_s * 1e6;
  }
  const auto gemms = kernels(out, "gemm_bfloat16").at(0);
  ASSERT_EQ(gemms.size(), shapes.size());
  double busy_us = 0.0;
  for (const Kernel& g : gemms) busy_us += g.duration_us;
  EXPECT_NEAR(busy_us, roofline_us, 0.01);
  // Back to back on one stream: the chain's span is the roofline.
  const double span_us = gemms.back().start_us + gemms.back().duration_us - gemms.front().start_us;
  EXPECT_NEAR(span_us, roofline_us, 0.01);
  const nlohmann::json summary = nlohmann::json::parse(slurp(out / "summary.json"));
  EXPECT_GT(summary["job"]["predicted_breakdown"]["exposed_compute"].get<double>(), 0.9);
}

TEST_F(EmulateProgramsTest, EightProcessesOfCollectivesAreMatchedAndDedupChangesNothing) {
  const fs::path out = dir_ / "out";
  const CliRun r =
      emulate({"--gpu", "h100", "--ranks", "8", "--keep-traces", "--out", out.string()},
              {(programs_ / "nccl_multiproc").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const nlohmann::json summary = nlohmann::json::parse(slurp(out / "summary.json"));
  ASSERT_EQ(summary["ranks"].size(), 8u);
  EXPECT_EQ(summary["warnings"].size(), 0u) << summary["warnings"].dump();
  // Every rank does the same work: one class, its collectives run with the full group's wire
  // time instead of a join.
  EXPECT_EQ(summary["dedup"]["classes"].size(), 1u);
  // The same traces with every rank simulated give the same prediction, up to the ranks' own
  // host timing: each process's measured gaps after the init barrier differ (< 0.1 % here) and
  // dedup replays one rank's. Exact equality on identical ranks is in tests/emulate/dedup_test.
  const fs::path full = dir_ / "full";
  const CliRun again =
      run({"emulate", "--traces", (out / "traces").string(), "--gpu", "h100", "--gpus-per-node",
           "8", "--no-dedup", "--max-host-gap-us", "10", "--quiet", "--out", full.string()});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  const nlohmann::json without = nlohmann::json::parse(slurp(full / "summary.json"));
  const fs::path dedup = dir_ / "dedup";
  ASSERT_EQ(
      run({"emulate", "--traces", (out / "traces").string(), "--gpu", "h100", "--gpus-per-node",
           "8", "--max-host-gap-us", "10", "--quiet", "--out", dedup.string()})
          .exit_code,
      0);
  const nlohmann::json with = nlohmann::json::parse(slurp(dedup / "summary.json"));
  EXPECT_EQ(without["dedup"]["classes"].size(), 8u);
  EXPECT_GT(without["job"]["collectives_joined"].get<int>(), 0);
  const double full_step = without["job"]["predicted_step_s"].get<double>();
  EXPECT_NEAR(with["job"]["predicted_step_s"].get<double>() / full_step, 1.0, 0.02);
}

TEST_F(EmulateProgramsTest, OneProcessDrivingEightDevices) {
  // The default layout: --gpus 8 is one process that sees 8 devices.
  const CliRun plain = emulate({"--gpu", "h100", "--gpus", "8", "--out", (dir_ / "plain").string()},
                               {(programs_ / "nccl_multidev").string()});
  ASSERT_EQ(plain.exit_code, 0) << plain.err << plain.out;
  const nlohmann::json s = nlohmann::json::parse(slurp(dir_ / "plain" / "summary.json"));
  ASSERT_EQ(s["ranks"].size(), 1u);
  EXPECT_EQ(s["ranks"][0]["devices"], 8);
  // The older spelling still works.
  const fs::path out = dir_ / "out";
  const CliRun r = emulate({"--gpu", "h100", "--gpus-per-node", "8", "--devices-per-process", "8",
                            "--out", out.string()},
                           {(programs_ / "nccl_multidev").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const nlohmann::json summary = nlohmann::json::parse(slurp(out / "summary.json"));
  ASSERT_EQ(summary["ranks"].size(), 1u);
  EXPECT_EQ(summary["ranks"][0]["devices"], 8);
  EXPECT_GT(summary["job"]["collectives_joined"].get<int>(), 0);
}

// Stream capture + cudaGraphLaunch (issue 18): the graph's kernels are predicted like the same
// work launched call by call, minus the per-call launch overheads. Model (HostCosts, kernels 3 us
// from the table, host gaps capped at 1 ns), per iteration of N = 8 kernels on each of two
// branches and a tail kernel: plain, the host issues record + wait (1.5 us each), 2N launches
// (3 us each), record + wait, the tail launch: host-bound, the tail ends 13 + 6N us after the
// iteration starts and the sync returns 2 us later: 15 + 6N = 63 us. Graph: one 3 us launch, the
// nodes are ready 4 us later and the two branches run side by side (3N us), then the tail (3 us)
// and the sync (2 us): 12 + 3N = 36 us. The difference, 3 + 3N us, is the launch overheads the
// graph removes (the 2N + 5 enqueue calls less its own launch, beyond what the GPU hid).
TEST_F(EmulateProgramsTest, GraphLaunchReplaysCapturedWorkWithoutPerCallOverheads) {
  if (!fs::exists(programs_ / "graph_capture")) GTEST_SKIP() << "program not built";
  std::ofstream(dir_ / "kernels.csv") << "name,duration_us\nbranch_a,3\nbranch_b,3\ntail_c,3\n";
  std::map<std::string, double> step_us;
  for (const std::string mode : {"plain", "graph"}) {
    const fs::path out = dir_ / mode;
    const CliRun r = emulate({"--kernel-table", (dir_ / "kernels.csv").string(),
                              "--max-host-gap-us", "0.001", "--out", out.string()},
                             {(programs_ / "graph_capture").string(), mode});
    ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
    const nlohmann::json summary = nlohmann::json::parse(slurp(out / "summary.json"));
    EXPECT_EQ(summary["warnings"].size(), 0u) << summary["warnings"].dump();
    EXPECT_TRUE(summary["unsupported_calls"].empty()) << summary["unsupported_calls"].dump();
    EXPECT_EQ(summary["job"]["steps"].get<int>(), 6) << mode;
    step_us[mode] = summary["job"]["predicted_step_s"].get<double>() * 1e6;
    // Every launch's kernels are in the timeline: 6 iterations x 8 per branch (+1 of the small
    // graph's two launches for branch_a in graph mode).
    const auto by_rank = kernels(out, "");
    ASSERT_EQ(by_rank.size(), 1u);
    std::map<std::string, int> count;
    for (const Kernel& k : by_rank.begin()->second) ++count[k.name];
    EXPECT_EQ(count["branch_a"], mode == "graph" ? 6 * 8 + 2 : 6 * 8) << mode;
    EXPECT_EQ(count["branch_b"], 6 * 8) << mode;
    EXPECT_EQ(count["tail_c"], 6) << mode;
  }
  constexpr double kN = 8;
  EXPECT_NEAR(step_us["plain"], 15 + 6 * kN, 0.1);
  EXPECT_NEAR(step_us["graph"], 12 + 3 * kN, 0.1);
  EXPECT_NEAR(step_us["plain"] - step_us["graph"], 3 + 3 * kN, 0.1);
}

// The same iteration built node by node (graph_explicit) is predicted exactly like the captured
// graph: 12 µs of launch, sync and latency + 3 µs per kernel of the longer branch (8) = 36 µs.
TEST_F(EmulateProgramsTest, ExplicitGraphIsPredictedLikeTheCapturedOne) {
  if (!fs::exists(programs_ / "graph_explicit")) GTEST_SKIP() << "program not built";
  std::ofstream(dir_ / "kernels.csv") << "name,duration_us\nbranch_a,3\nbranch_b,3\ntail_c,3\n";
  const fs::path out = dir_ / "out";
  const CliRun r = emulate({"--kernel-table", (dir_ / "kernels.csv").string(), "--max-host-gap-us",
                            "0.001", "--keep-traces", "--out", out.string()},
                           {(programs_ / "graph_explicit").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const nlohmann::json summary = nlohmann::json::parse(slurp(out / "summary.json"));
  EXPECT_EQ(summary["warnings"].size(), 0u) << summary["warnings"].dump();
  EXPECT_EQ(summary["job"]["steps"].get<int>(), 6);
  EXPECT_NEAR(summary["job"]["predicted_step_s"].get<double>() * 1e6, 12 + 3 * 8, 0.1);
  const auto by_rank = kernels(out, "");
  ASSERT_EQ(by_rank.size(), 1u);
  std::map<std::string, int> count;
  for (const Kernel& k : by_rank.begin()->second) ++count[k.name];
  EXPECT_EQ(count["branch_a"], 6 * 8);
  EXPECT_EQ(count["branch_b"], 6 * 8);
  EXPECT_EQ(count["tail_c"], 6);
  // Recorded: 7 launches (setup + 6), each iteration's 17 kernels, the setup's copy and memset,
  // and the refused handle-less conditional node (misuse).
  EXPECT_EQ(kept(out, "graph_launch").size(), 7u);
  const auto recorded = kept(out, "kernel");
  ASSERT_EQ(recorded.size(), 6u * 17u);
  for (const auto& k : recorded) EXPECT_TRUE(k.contains("graph")) << k.dump();
  EXPECT_EQ(kept(out, "memcpy").size(), 1u);
  EXPECT_EQ(kept(out, "memset").size(), 1u);
  EXPECT_TRUE(kept(out, "unsupported").empty());
  const auto misuse = kept(out, "misuse");
  ASSERT_EQ(misuse.size(), 1u);
  EXPECT_EQ(misuse[0]["api"], "cudaGraphAddNode");
}

// graphMemoryNodes-style program: explicit alloc/free nodes (and the generic cudaGraphAddNode
// forms) are allocated and counted when added, their parameters read back; the graph is
// uploaded and launched 3 times; a capture with cudaMallocAsync/cudaFreeAsync is launched twice.
// Nothing is unsupported; the kernels replay at every launch. After the launches the free node
// has unmapped the 1 MiB (used 0) while the pool keeps it (reserved); destroying the graphs and
// execs leaves both alloc nodes' memory reserved in the pool, and cudaDeviceGraphMemTrim gives it
// back (free records named after the trim).
TEST_F(EmulateProgramsTest, GraphMemoryNodesAreAllocatedAndTheGraphsRun) {
  if (!fs::exists(programs_ / "graph_memory_nodes")) GTEST_SKIP() << "program not built";
  const fs::path out = dir_ / "out";
  const CliRun r = emulate({"--keep-traces", "--out", out.string()},
                           {(programs_ / "graph_memory_nodes").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("graph_memory_nodes: used 0 reserved 1048576 params_match 1 "
                       "generic_dptr 1 captured_launches 2"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("graph_memory_nodes: after destroy used 0 reserved 1052672 used_high 0"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("graph_memory_nodes: after trim reserved 0"), std::string::npos) << r.out;
  const nlohmann::json summary = nlohmann::json::parse(slurp(out / "summary.json"));
  EXPECT_EQ(summary["warnings"].size(), 0u) << summary["warnings"].dump();
  EXPECT_TRUE(summary["unsupported_calls"].empty()) << summary["unsupported_calls"].dump();
  EXPECT_TRUE(kept(out, "misuse").empty());
  std::vector<std::pair<std::string, std::int64_t>> mallocs;
  for (const auto& m : kept(out, "malloc")) mallocs.emplace_back(m["api"], m["bytes"]);
  EXPECT_EQ(mallocs, (std::vector<std::pair<std::string, std::int64_t>>{
                         {"cudaGraphAddMemAllocNode", 1 << 20},
                         {"cudaGraphAddMemAllocNode", 4096},  // the generic form
                         {"cudaMallocAsync", 1 << 20}}));
  std::vector<std::pair<std::string, std::int64_t>> frees;
  for (const auto& f : kept(out, "free")) frees.emplace_back(f["api"], f["bytes"]);
  std::sort(frees.begin(), frees.end());  // the trim walks the pool in address order
  EXPECT_EQ(frees, (std::vector<std::pair<std::string, std::int64_t>>{
                       {"cudaDeviceGraphMemTrim", 4096},     // the generic graph: never launched
                       {"cudaDeviceGraphMemTrim", 1 << 20},  // unmapped by the free node
                       {"cudaFreeAsync", 1 << 20}}));
  EXPECT_EQ(kept(out, "graph_launch").size(), 5u);
  const auto launched = kept(out, "kernel");
  ASSERT_EQ(launched.size(), 5u);
  for (const auto& k : launched) EXPECT_TRUE(k.contains("graph")) << k.dump();
}

// Runtime calls of real programs beyond the other test programs (runtime_breadth.cu): copy nodes
// to and from __device__ variables replay with the sizes last set (graph edits at the first
// launch, exec edits at the second), an exec's child graph node runs its new child graph's memset
// from then on (also after a refused update), the multi-device cooperative launch puts one grid on
// each device, and every refused call is a misuse record naming what was wrong. Nothing is
// unsupported.
TEST_F(EmulateProgramsTest, RuntimeBreadthCallsAreEmulated) {
  if (!fs::exists(programs_ / "runtime_breadth")) GTEST_SKIP() << "program not built";
  const fs::path out = dir_ / "breadth";
  const CliRun r = emulate({"--gpus", "2", "--keep-traces", "--out", out.string()},
                           {(programs_ / "runtime_breadth").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("runtime_breadth: 16 checks passed on 2 devices"), std::string::npos)
      << r.out;
  const nlohmann::json summary = nlohmann::json::parse(slurp(out / "summary.json"));
  EXPECT_TRUE(summary["unsupported_calls"].empty()) << summary["unsupported_calls"].dump();
  std::vector<std::pair<std::string, std::int64_t>> copies;
  for (const auto& m : kept(out, "memcpy")) copies.emplace_back(m["api"], m["bytes"]);
  EXPECT_EQ(copies, (std::vector<std::pair<std::string, std::int64_t>>{
                        {"cudaGraphMemcpyNodeSetParamsToSymbol", 16},
                        {"cudaGraphMemcpyNodeSetParamsFromSymbol", 8},
                        {"cudaGraphExecMemcpyNodeSetParamsToSymbol", 64},
                        {"cudaGraphExecMemcpyNodeSetParamsFromSymbol", 32},
                        {"cudaMemcpy3DBatchAsync", 64},  // 8 x 4 x 2 bytes into 16-byte rows
                        {"cudaMemcpy", 128},             // the pitched image read back
                        {"cudaMemcpy3DBatchAsync", 64},  // and out again
                        {"cudaMemcpy3D", 128},           // the array's sentinel
                        {"cudaMemcpy3DBatchAsync", 64},  // 2 x 4 x 2 floats into the array
                        {"cudaMemcpy3D", 128}}));        // the array read back
  std::vector<std::int64_t> memsets;
  for (const auto& m : kept(out, "memset")) memsets.push_back(m["bytes"]);
  EXPECT_EQ(memsets, (std::vector<std::int64_t>{1000, 3000, 3000, 128}));  // + the sentinel
  std::vector<int> cooperative_devices;
  for (const auto& k : kept(out, "kernel")) {
    if (k["api"] == "cudaLaunchCooperativeKernelMultiDevice") {
      cooperative_devices.push_back(k["dev"]);
    }
  }
  EXPECT_EQ(cooperative_devices, (std::vector<int>{0, 1}));
  std::vector<std::string> misuse;
  for (const auto& m : kept(out, "misuse")) misuse.push_back(m["api"]);
  std::sort(misuse.begin(), misuse.end());
  EXPECT_EQ(misuse,
            (std::vector<std::string>{
                "cudaDeviceGetHostAtomicCapabilities", "cudaDeviceGetP2PAtomicCapabilities",
                "cudaDeviceGetTexture1DLinearMaxWidth", "cudaDeviceGetTexture1DLinearMaxWidth",
                "cudaDeviceUnregisterAsyncNotification", "cudaEventElapsedTime_v2",
                "cudaGraphAddMemcpyNodeFromSymbol", "cudaGraphAddMemcpyNodeToSymbol",
                "cudaGraphAddMemcpyNodeToSymbol", "cudaGraphExecChildGraphNodeSetParams",
                "cudaGraphExecChildGraphNodeSetParams", "cudaLaunchCooperativeKernelMultiDevice",
                "cudaMemcpy3DBatchAsync", "cudaMemcpy3DBatchAsync", "cudaMemcpy3DBatchAsync",
                "cudaMemcpy3DBatchAsync", "cudaMemcpy3DBatchAsync"}));
}

// Conditional graph nodes (graph_conditional.cu): each runs the body its handle's default value
// selects, since no device code runs under the emulator (an IF without a default runs nothing,
// a WHILE with default 1 its body once per launch, IF/ELSE with 0 the ELSE body, SWITCH with 2
// body 2); a WHILE node added by hand to a graph under capture sits between the captured
// kernels. Each conditional node is one counted warning naming the assumption; nothing is
// unsupported.
TEST_F(EmulateProgramsTest, ConditionalGraphNodesRunTheBodyTheirDefaultValueSelects) {
  if (!fs::exists(programs_ / "graph_conditional")) GTEST_SKIP() << "program not built";
  const fs::path out = dir_ / "conditional";
  const CliRun r = emulate({"--keep-traces", "--out", out.string()},
                           {(programs_ / "graph_conditional").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("graph_conditional: done"), std::string::npos) << r.out;
  const nlohmann::json summary = nlohmann::json::parse(slurp(out / "summary.json"));
  EXPECT_TRUE(summary["unsupported_calls"].empty()) << summary["unsupported_calls"].dump();
  // What each conditional node ran, from its warning "cudaGraphInstantiate: conditional KIND
  // node RAN: its condition is taken as the handle's default value N (...)".
  std::vector<std::string> assumed;
  std::vector<std::string> taken;
  const std::string prefix = "cudaGraphInstantiate: conditional ";
  for (const auto& w : summary["warnings"]) {
    const std::string kind = w["kind"];
    if (kind.rfind(prefix, 0) != 0) continue;
    EXPECT_NE(kind.find("device code that sets it does not run under the emulator"),
              std::string::npos)
        << kind;
    assumed.push_back(kind.substr(prefix.size(), kind.find(':', prefix.size()) - prefix.size()));
    const std::size_t as = kind.find("taken as ");
    taken.push_back(as == std::string::npos ? "" : kind.substr(as + 9, kind.find(';') - as - 9));
  }
  // Without cudaGraphCondAssignDefault the default value (1 for the IF) is never applied.
  EXPECT_EQ(taken,
            (std::vector<std::string>{"0 (no cudaGraphCondAssignDefault)",
                                      "the handle's default value 1 (assigned at each launch)",
                                      "0 (no cudaGraphCondAssignDefault)",
                                      "the handle's default value 0 (assigned at each launch)",
                                      "the handle's default value 2 (assigned at each launch)"}));
  EXPECT_EQ(assumed,
            (std::vector<std::string>{
                "IF node ran no body", "WHILE node ran its body once per launch",
                "WHILE node ran no body", "IF node ran body 1", "SWITCH node ran body 2"}));
  // Kernels per graph launch, in order (two launches of each of the four graphs).
  std::map<std::int64_t, std::vector<std::string>> by_graph;
  for (const auto& k : kept(out, "kernel")) {
    if (!k.contains("graph")) continue;
    std::string name = k["name"];
    if (name.find("case_body") != std::string::npos) {
      name += std::to_string(k["grid"][0].get<int>());
    }
    by_graph[k["graph"]].push_back(name);
  }
  const auto twice = [](std::vector<std::string> once) {
    std::vector<std::string> both = once;
    both.insert(both.end(), once.begin(), once.end());
    return both;
  };
  ASSERT_EQ(by_graph.size(), 4u);
  auto it = by_graph.begin();
  EXPECT_EQ(it->second, twice({"_Z13set_conditionPcy"}));
  EXPECT_EQ((++it)->second, twice({"_Z9then_bodyv", "_Z9then_bodyv", "_Z9loop_bodyPcy"}));
  EXPECT_EQ((++it)->second, twice({"_Z9loop_bodyPcy", "_Z10after_loopv"}));
  EXPECT_EQ((++it)->second, twice({"_Z9else_bodyv", "_Z9case_bodyi3"}));
  std::vector<std::string> misuse;
  for (const auto& m : kept(out, "misuse")) misuse.push_back(m["api"]);
  EXPECT_EQ(misuse,
            (std::vector<std::string>{
                "cudaGraphDestroy", "cudaGraphClone", "cudaGraphAddNode", "cudaGraphAddNode",
                "cudaGraphInstantiate", "cudaGraphInstantiate", "cudaGraphDestroyNode",
                "cudaGraphDestroy", "cudaGraphAddNode", "cudaGraphInstantiate"}));
  std::vector<std::string> why;
  for (const auto& m : kept(out, "misuse")) {
    if (m["api"] == "cudaGraphInstantiate") why.push_back(m["what"]);
  }
  ASSERT_EQ(why.size(), 3u);
  EXPECT_NE(why[0].find("a conditional body holds a node of type 3"), std::string::npos) << why[0];
  EXPECT_EQ(why[1], "a conditional body is still being captured");
  // The host node two bodies down, on a branch the default value does not take.
  EXPECT_NE(why[2].find("a conditional body holds a node of type 3"), std::string::npos) << why[2];
}

// cuDNN convolutions are predicted as their implicit GEMMs at the device model's roofline
// (TF32 for the fp32 layer, FP16 for the grouped one), 4 per step; cuRAND kernels and NVTX ranges
// (the launcher sets NVTX_INJECTION64_PATH) pass through the pipeline without warnings, the
// ranges as user annotations of the timeline.
TEST_F(EmulateProgramsTest, CudnnConvolutionsAndCurandArePredicted) {
  if (!fs::exists(programs_ / "cudnn_conv") || !fs::exists(programs_ / "curand_nvtx")) {
    GTEST_SKIP() << "programs not built";
  }
  const fs::path out = dir_ / "conv";
  const CliRun r = emulate({"--gpu", "h100", "--keep-traces", "--out", out.string()},
                           {(programs_ / "cudnn_conv").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const nlohmann::json summary = nlohmann::json::parse(slurp(out / "summary.json"));
  EXPECT_EQ(summary["warnings"].size(), 0u) << summary["warnings"].dump();
  EXPECT_EQ(summary["job"]["steps"].get<int>(), 3);
  const device::GpuSpec gpu = *device::find_gpu("h100");
  const auto roofline_us = [&](double m, double n, double k, double batch, device::Precision p,
                               double bytes) {
    device::Work work;
    work.kind = device::WorkKind::kMatmul;
    work.precision = p;
    work.flops = 2.0 * m * n * k * batch;
    work.memory_bytes = bytes * batch * (m * k + k * n + m * n);
    return device::estimate_work(gpu, std::span(&work, 1), gpu.max_clock_mhz()).time_s * 1e6;
  };
  const double dense_fwd = roofline_us(25088, 128, 576, 1, device::Precision::kTf32, 4);
  const double grouped = roofline_us(6272, 32, 288, 4, device::Precision::kFp16, 2);
  // Recorded, one by one: per step forward, grouped forward, backward data, backward filter.
  const auto convs = kept(out, "gemm");
  ASSERT_EQ(convs.size(), 12u);
  const char* directions[] = {"forward", "forward", "backward_data", "backward_filter"};
  for (std::size_t i = 0; i < convs.size(); ++i) {
    EXPECT_EQ(convs[i]["conv"]["direction"], directions[i % 4]) << i;
    EXPECT_EQ(convs[i]["flops"].get<std::int64_t>(), i % 4 == 1 ? 462422016LL : 3699376128LL) << i;
  }
  EXPECT_EQ(kept(out, "kernel").size(), 12u);  // bias, ReLU, pooling, softmax per step
  const auto dense = kernels(out, "gemm_float32_m25088_n128_k576").at(0);
  ASSERT_EQ(dense.size(), 3u);
  for (const Kernel& k : dense) EXPECT_NEAR(k.duration_us, dense_fwd, 0.01);
  const auto small = kernels(out, "gemm_float16_m6272_n32_k288_b4").at(0);
  ASSERT_EQ(small.size(), 3u);
  for (const Kernel& k : small) EXPECT_NEAR(k.duration_us, grouped, 0.01);
  std::printf(
      "predicted (H100 model): 3x3 conv fwd %.1f us, grouped fp16 conv %.1f us, step %.1f us\n",
      dense_fwd, grouped, summary["job"]["predicted_step_s"].get<double>() * 1e6);

  const fs::path rand_out = dir_ / "rand";
  const CliRun rr = emulate({"--gpu", "h100", "--out", rand_out.string()},
                            {(programs_ / "curand_nvtx").string()});
  ASSERT_EQ(rr.exit_code, 0) << rr.err << rr.out;
  const nlohmann::json rand_summary = nlohmann::json::parse(slurp(rand_out / "summary.json"));
  EXPECT_EQ(rand_summary["warnings"].size(), 0u) << rand_summary["warnings"].dump();
  const auto uniform = kernels(rand_out, "curand_uniform_float32").at(0);
  EXPECT_EQ(uniform.size(), 3u);
  EXPECT_EQ(kernels(rand_out, "curand_normal_float32").at(0).size(), 3u);
  // NVTX ranges are user annotations of the emulated timeline, nested as in the program: each
  // "step" holds one "dropout" (domain range) and one "sync" (start/end range), and the
  // dropout range holds the cuRAND calls.
  const nlohmann::json trace = nlohmann::json::parse(slurp(rand_out / "emulated_trace.json"));
  std::map<std::string, std::vector<std::pair<double, double>>> ranges;  // name → [start, end]
  std::vector<std::pair<double, double>> curand_calls;
  for (const auto& e : trace["traceEvents"]) {
    if (e.value("ph", "") != "X") continue;
    const double start = e["ts"].get<double>(), end = start + e["dur"].get<double>();
    if (e.value("cat", "") == "user_annotation") ranges[e["name"]].emplace_back(start, end);
    if (e.value("name", "").rfind("curandGenerate", 0) == 0) curand_calls.emplace_back(start, end);
  }
  ASSERT_EQ(ranges["setup"].size(), 1u);
  ASSERT_EQ(ranges["step"].size(), 3u);
  ASSERT_EQ(ranges["dropout"].size(), 3u);
  ASSERT_EQ(ranges["sync"].size(), 3u);
  // The 6 generating calls, then the refused odd-length one (a misuse record, after the loop).
  std::sort(curand_calls.begin(), curand_calls.end());
  ASSERT_EQ(curand_calls.size(), 7u);
  EXPECT_GE(curand_calls[6].first, ranges["step"][2].second);
  const auto inside = [](std::pair<double, double> a, std::pair<double, double> b) {
    return a.first >= b.first - 1e-6 && a.second <= b.second + 1e-6;
  };
  for (int s = 0; s < 3; ++s) {
    EXPECT_TRUE(inside(ranges["dropout"][s], ranges["step"][s])) << s;
    EXPECT_TRUE(inside(ranges["sync"][s], ranges["step"][s])) << s;
    EXPECT_LE(ranges["dropout"][s].second, ranges["sync"][s].first + 1e-6) << s;
    for (int c = 0; c < 2; ++c) {
      EXPECT_TRUE(inside(curand_calls[2 * s + c], ranges["dropout"][s])) << s << " " << c;
    }
  }
  EXPECT_LE(ranges["setup"][0].second, ranges["step"][0].first + 1e-6);
}

// GEMMs captured into a CUDA graph are predicted at every launch: 3 launches x 2 GEMMs.
TEST_F(EmulateProgramsTest, CapturedCublasGemmsArePredictedAtEachLaunch) {
  if (!fs::exists(programs_ / "cublas_graph")) GTEST_SKIP() << "program not built";
  const fs::path out = dir_ / "out";
  const CliRun r =
      emulate({"--gpu", "h100", "--out", out.string()}, {(programs_ / "cublas_graph").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const nlohmann::json summary = nlohmann::json::parse(slurp(out / "summary.json"));
  EXPECT_EQ(summary["warnings"].size(), 0u) << summary["warnings"].dump();
  EXPECT_EQ(kernels(out, "gemm_float32_m1024_n512_k256").at(0).size(), 3u);
  EXPECT_EQ(kernels(out, "gemm_float32_m1024_n512_k512").at(0).size(), 3u);
  EXPECT_EQ(kernels(out, "add_bias").at(0).size(), 3u);
}

// The launcher puts the fake libcuda.so.1 on the library path: a program linked with -lcuda runs
// to its end, its cuLaunchKernel kernels are in the predicted timeline and its cuMemCreate
// allocation in the peak memory.
// A program that forks a child after using CUDA (fork_child): the child's trace names its parent
// (`forked_from`); the analysis keeps the parent as rank 0 and leaves the child out with a
// warning. Before (2026-11-27) it stopped with "traces ... are both rank 0".
TEST_F(EmulateProgramsTest, ForkedChildIsLeftOutWithAWarning) {
  if (!fs::exists(programs_ / "fork_child")) GTEST_SKIP() << "program not built";
  const fs::path out = dir_ / "out";
  const CliRun r =
      emulate({"--whole-trace", "--out", out.string()}, {(programs_ / "fork_child").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const nlohmann::json summary = nlohmann::json::parse(slurp(out / "summary.json"));
  ASSERT_EQ(summary["warnings"].size(), 1u) << summary["warnings"].dump();
  EXPECT_NE(summary["warnings"][0]["kind"].get<std::string>().find("forked by a traced process"),
            std::string::npos);
  EXPECT_NE(summary["warnings"][0]["example"].get<std::string>().find("1 record(s)"),
            std::string::npos);
  // Only the parent's kernels are in the prediction (the child's child_kernel is not).
  const auto by_rank = kernels(out, "");
  ASSERT_EQ(by_rank.size(), 1u);
  std::vector<std::string> names;
  for (const Kernel& k : by_rank.begin()->second) {
    if (k.name.find("_kernel") != std::string::npos) names.push_back(k.name);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"parent_kernel", "parent_kernel"}));
}

// A shell running two CUDA programs one after another under one `powertrain emulate`: both
// traces are rank 0; they are one GPU's work in sequence, so they are joined into one timeline
// (the second program's GEMMs after the first's kernels) with a warning naming both. Before
// (2026-11-27) the analysis stopped with "traces ... are both rank 0". (Programs run at the same
// time on one device are in sequential_processes_test.cc: whether two real processes overlap
// depends on this machine's load.)
TEST_F(EmulateProgramsTest, ProgramsRunOneAfterAnotherByAScriptAreOneTimeline) {
  if (!fs::exists(programs_ / "cublas_gemm_chain") || !fs::exists(programs_ / "fork_child")) {
    GTEST_SKIP() << "program not built";
  }
  const std::string first = (programs_ / "fork_child").string();
  const std::string second = (programs_ / "cublas_gemm_chain").string();
  const fs::path out = dir_ / "out";
  const CliRun r = emulate({"--whole-trace", "--out", out.string()},
                           {"sh", "-c", "'" + first + "' >/dev/null; '" + second + "' >/dev/null"});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const nlohmann::json summary = nlohmann::json::parse(slurp(out / "summary.json"));
  EXPECT_EQ(summary["ranks"].size(), 1u);
  bool joined = false;
  for (const auto& w : summary["warnings"]) {
    if (w["kind"].get<std::string>().find("joined into one timeline") == std::string::npos)
      continue;
    joined = true;
    const std::string example = w["example"].get<std::string>();
    EXPECT_NE(example.find("fork_child) then"), std::string::npos) << example;
    EXPECT_NE(example.find("cublas_gemm_chain)"), std::string::npos) << example;
  }
  EXPECT_TRUE(joined) << summary["warnings"].dump();
  const auto by_rank = kernels(out, "");
  ASSERT_EQ(by_rank.size(), 1u);
  const std::vector<Kernel>& all = by_rank.begin()->second;
  double last_parent_end = -1.0;
  double first_gemm_start = -1.0;
  int gemms = 0;
  for (const Kernel& k : all) {
    if (k.name == "parent_kernel")
      last_parent_end = std::max(last_parent_end, k.start_us + k.duration_us);
    if (k.name.rfind("gemm_bfloat16", 0) == 0) {
      if (gemms++ == 0) first_gemm_start = k.start_us;
    }
  }
  EXPECT_EQ(gemms, 4);
  ASSERT_GE(last_parent_end, 0.0);
  EXPECT_GT(first_gemm_start, last_parent_end);
}

// torch.multiprocessing.spawn's pattern: one launched process (rank 0, 2 devices) fork+execs two
// workers that inherit RANK=0, each driving its own device and all-reducing over a 2-rank NCCL
// communicator. They ran at the same time on different devices, so each is modelled as its
// device's rank and the all-reduce pairs them (before 2026-11-27: "traces ... are both rank 0").
TEST_F(EmulateProgramsTest, SpawnedWorkersOnTheirOwnDevicesAreOneRankEach) {
  if (!fs::exists(programs_ / "nccl_spawn_workers")) GTEST_SKIP() << "program not built";
  const fs::path out = dir_ / "out";
  const CliRun r = emulate({"--gpus", "2", "--whole-trace", "--out", out.string()},
                           {(programs_ / "nccl_spawn_workers").string(), "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const nlohmann::json summary = nlohmann::json::parse(slurp(out / "summary.json"));
  ASSERT_EQ(summary["ranks"].size(), 2u) << summary.dump();
  bool per_device = false;
  for (const auto& w : summary["warnings"]) {
    if (w["kind"].get<std::string>().find("one rank per device") != std::string::npos) {
      per_device = true;
      EXPECT_EQ(w["count"].get<int>(), 2);
    }
  }
  EXPECT_TRUE(per_device) << summary["warnings"].dump();
  const auto by_rank = kernels(out, "ncclDevKernel_AllReduce");
  ASSERT_EQ(by_rank.size(), 2u);
  for (const auto& [rank, reduces] : by_rank) EXPECT_EQ(reduces.size(), 1u) << "rank " << rank;

  // A second pass would have both workers read rank 0's predicted times: it is skipped, saying so.
  std::vector<std::string> args = {"emulate",
                                   "--interposer",
                                   interposer_.string(),
                                   "--gpus",
                                   "2",
                                   "--whole-trace",
                                   "--two-pass",
                                   "--out",
                                   (dir_ / "two_pass").string(),
                                   "--",
                                   (programs_ / "nccl_spawn_workers").string(),
                                   "2"};
  const CliRun two_pass = run(args);
  ASSERT_EQ(two_pass.exit_code, 0) << two_pass.err << two_pass.out;
  EXPECT_NE(two_pass.err.find("pass 2 skipped: several processes share a rank"), std::string::npos)
      << two_pass.err;
  const nlohmann::json skipped = nlohmann::json::parse(slurp(dir_ / "two_pass" / "summary.json"));
  bool warned = false;
  for (const auto& w : skipped["warnings"]) {
    warned = warned || w["kind"].get<std::string>().rfind("--two-pass skipped", 0) == 0;
  }
  EXPECT_TRUE(warned) << skipped["warnings"].dump();
}

TEST_F(EmulateProgramsTest, DriverApiProgramRunsThroughTheLauncher) {
  if (!fs::exists(programs_ / "driver_api")) GTEST_SKIP() << "program not built";
  std::ofstream(dir_ / "kernels.csv") << "name,duration_us\nscale_kernel,7\nadd_one_kernel,5\n";
  const fs::path out = dir_ / "out";
  const CliRun r = emulate({"--kernel-table", (dir_ / "kernels.csv").string(), "--whole-trace",
                            "--keep-traces", "--out", out.string()},
                           {(programs_ / "driver_api").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const nlohmann::json summary = nlohmann::json::parse(slurp(out / "summary.json"));
  EXPECT_EQ(summary["warnings"].size(), 0u) << summary["warnings"].dump();
  EXPECT_TRUE(summary["unsupported_calls"].empty()) << summary["unsupported_calls"].dump();
  const auto by_rank = kernels(out, "");
  ASSERT_EQ(by_rank.size(), 1u);
  std::map<std::string, std::vector<double>> durations;
  for (const Kernel& k : by_rank.begin()->second) durations[k.name].push_back(k.duration_us);
  EXPECT_EQ(durations["scale_kernel"], (std::vector<double>{7, 7}));
  EXPECT_EQ(durations["add_one_kernel"], (std::vector<double>{5, 5, 5}));
  // The recorded launches, one by one (name, grid, stream), as the launcher's run wrote them.
  const auto launches = kept(out, "kernel");
  const std::vector<std::tuple<std::string, int, int>> expected = {{"scale_kernel", 4, 0},
                                                                   {"add_one_kernel", 8, 1},
                                                                   {"scale_kernel", 2, 2},
                                                                   {"add_one_kernel", 1, 2},
                                                                   {"add_one_kernel", 16, 0}};
  ASSERT_EQ(launches.size(), expected.size());
  for (std::size_t i = 0; i < launches.size(); ++i) {
    EXPECT_EQ(launches[i]["name"], std::get<0>(expected[i])) << i;
    EXPECT_EQ(launches[i]["grid"][0], std::get<1>(expected[i])) << i;
    EXPECT_EQ(launches[i]["stream"], std::get<2>(expected[i])) << i;
    EXPECT_EQ(launches[i]["api"], "cuLaunchKernel") << i;
  }
  const auto maps = kept(out, "mem_map");
  ASSERT_EQ(maps.size(), 1u);
  EXPECT_EQ(maps[0]["bytes"], 4 << 20);
  EXPECT_EQ(summary["ranks"][0]["peak_memory_bytes"][0].get<std::int64_t>(), 4096 + (4 << 20))
      << summary["ranks"][0].dump();
}

TEST_F(EmulateProgramsTest, OutOfMemoryAndMisuseAreReported) {
  const CliRun oom =
      emulate({"--gpu", "h100", "--gpus-per-node", "1", "--out", (dir_ / "oom").string()},
              {(programs_ / "oom").string()});
  ASSERT_EQ(oom.exit_code, 0) << oom.err << oom.out;
  const nlohmann::json summary = nlohmann::json::parse(slurp(dir_ / "oom" / "summary.json"));
  ASSERT_FALSE(summary["out_of_memory"].empty());
  EXPECT_EQ(summary["out_of_memory"][0]["api"], "cudaMalloc");
  EXPECT_NE(oom.out.find("out of memory"), std::string::npos) << oom.out;

  const CliRun misuse =
      emulate({"--gpu", "h100", "--gpus-per-node", "1", "--out", (dir_ / "misuse").string()},
              {(programs_ / "misuse").string()});
  ASSERT_EQ(misuse.exit_code, 0) << misuse.err << misuse.out;
  const nlohmann::json m = nlohmann::json::parse(slurp(dir_ / "misuse" / "summary.json"));
  EXPECT_FALSE(m["misuse"].empty());
  EXPECT_FALSE(m["unsupported_calls"].empty());
}

}  // namespace
}  // namespace powertrain
