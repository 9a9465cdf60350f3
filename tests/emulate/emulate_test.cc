// The emulation pipeline end to end on hand-written traces: the GEMM roofline, a 1F1B pipeline's
// analytic step time, cross-stream event waits, iteration detection, multi-device processes,
// out-of-memory reports, kernel-table precedence and the written outputs.
#include "emulate/emulate.h"

#include <fmt/core.h>
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "emulate/collective_model.h"
#include "emulate/synthetic_programs.h"
#include "emulate/trace_writer.h"
#include "emulate_test_util.h"
#include "graph/execution_graph.h"
#include "report/emulation_report.h"

namespace powertrain::emulate {
namespace {

using testing::parse_all;
using testing::TempDir;

EmulationResult run(const std::vector<std::string>& texts, EmulateOptions options = {}) {
  const auto traces = parse_all(texts);
  auto result = emulate_traces(traces, options);
  EXPECT_TRUE(result.ok()) << (result.ok() ? "" : result.error().message);
  return result.ok() ? std::move(*result) : EmulationResult{};
}

// GPU tasks of graph rank index `r` whose name starts with `prefix`, in start order.
std::vector<std::int32_t> tasks_named(const EmulationResult& res, int r, std::string_view prefix) {
  std::vector<std::int32_t> out;
  const graph::RankInfo& rank = res.graph.ranks[r];
  for (std::int32_t t = rank.first_task; t < rank.end_task; ++t) {
    if (graph::is_gpu(res.graph.kind[t]) && res.graph.task_name(t).rfind(prefix, 0) == 0) {
      out.push_back(t);
    }
  }
  std::sort(out.begin(), out.end(), [&](std::int32_t a, std::int32_t b) {
    return res.replay.start_ns[a] < res.replay.start_ns[b];
  });
  return out;
}

TEST(Emulate, ComputeBoundGemmChainMatchesTheDeviceModelRoofline) {
  TraceWriter w(0, 1);
  const std::vector<std::array<std::int64_t, 3>> shapes = {
      {8192, 8192, 8192}, {16384, 8192, 4096}, {8192, 4096, 16384}, {12288, 12288, 6144}};
  for (const auto& s : shapes) w.host_work(1'000).gemm(s[0], s[1], s[2], "bfloat16");
  w.device_sync();
  EmulateOptions options;
  const EmulationResult res = run({w.finish()}, options);
  ASSERT_EQ(res.ranks.size(), 1u);

  // The roofline: Σ device::estimate_work of each GEMM's work at the top clock.
  const device::GpuSpec gpu = *device::find_gpu("h100");
  double roofline_s = 0.0;
  for (const auto& s : shapes) {
    device::Work work;
    work.kind = device::WorkKind::kMatmul;
    work.precision = device::Precision::kBf16;
    work.flops = 2.0 * s[0] * s[1] * s[2];
    work.memory_bytes = 2.0 * (s[0] * s[2] + s[2] * s[1] + s[0] * s[1]);
    roofline_s += device::estimate_work(gpu, std::span(&work, 1), gpu.max_clock_mhz()).time_s;
  }
  const auto gemms = tasks_named(res, 0, "gemm_bfloat16");
  ASSERT_EQ(gemms.size(), shapes.size());
  double busy_s = 0.0;
  for (std::int32_t t : gemms) busy_s += (res.replay.end_ns[t] - res.replay.start_ns[t]) * 1e-9;
  EXPECT_NEAR(busy_s, roofline_s, 1e-9 * static_cast<double>(shapes.size()));
  // Back to back on the stream: the step is the roofline plus the first launch's latency and the
  // final sync's tail (host launches are microseconds, the GEMMs milliseconds).
  const HostCosts costs;
  const double overhead_s = (costs.launch_latency_ns + costs.sync_ns + 1'000) * 1e-9;
  EXPECT_NEAR(res.job_step_s, roofline_s + overhead_s, 2e-6);
  EXPECT_LT(std::abs(res.job_step_s / roofline_s - 1.0), 1e-3);
  EXPECT_GT(res.job_breakdown.exposed_compute, 0.99);
}

// 1F1B with uniform stages: every P2P block is a rendezvous taking c on both sides, so the
// iteration takes (M + P − 1)(F + B) plus (2M + 2P − 5) transfer times on the critical path (P ≥ 3,
// M ≥ 2; derived from the rendezvous model of Megatron's order).
TEST(Emulate, PipelineOf4RanksGivesThe1F1BTimeline) {
  TempDir dir;
  const auto table =
      dir.write("kernels.csv", "name,duration_us\nforward_step,1000\nbackward_step,2000\n");
  for (int microbatches : {4, 8}) {
    PipelineSpec spec;
    spec.microbatches = microbatches;
    std::vector<std::string> texts;
    for (int s = 0; s < spec.stages; ++s) texts.push_back(pipeline_program(s, spec));
    EmulateOptions options;
    options.kernel_table = table.string();
    options.host_costs.comm_init_ns = 1'000;
    const EmulationResult res = run(texts, options);
    ASSERT_EQ(res.ranks.size(), 4u);
    const device::GpuSpec gpu = *device::find_gpu("h100");
    const double bytes = spec.activation_elements * 2.0;
    CollectiveQuery send;
    send.kind = Collective::kSend;
    send.bytes = bytes;
    send.ranks = 2;
    const double c = std::max(model_collective(send, fabric_of(gpu)).seconds, 3e-6);
    const double f = 1e-3, b = 2e-3;
    const int p = spec.stages, m = microbatches;
    const double expected = (m + p - 1) * (f + b) + (2 * m + 2 * p - 5) * c;
    EXPECT_NEAR(res.job_step_s, expected, 60e-6) << "M = " << m;
    EXPECT_EQ(res.replay.collectives_forced, 0);
    EXPECT_GT(res.replay.collectives_joined, 0);
    // The bubble: the last stage's first forward waits for P − 1 forwards and transfers.
    const auto last_forwards = tasks_named(res, p - 1, "forward_step");
    const auto first_forwards = tasks_named(res, 0, "forward_step");
    ASSERT_FALSE(last_forwards.empty());
    const double bubble_s =
        (res.replay.start_ns[last_forwards.front()] - res.replay.start_ns[first_forwards.front()]) *
        1e-9;
    EXPECT_NEAR(bubble_s, (p - 1) * (f + c), 30e-6);
    // Each stage idles (P − 1)(F + B) of the iteration, minus what communication fills.
    EXPECT_GT(res.ranks[0].breakdown.other, 0.0);
  }
}

TEST(Emulate, CrossStreamEventWaitOrdersTheKernels) {
  TempDir dir;
  const auto table =
      dir.write("kernels.csv", "name,duration_us\nproducer,500\nconsumer,100\nside,50\n");
  TraceWriter w(0, 1);
  w.stream_create(1);
  w.stream_create(2);
  w.event_create(1);
  w.kernel("producer", 1, 1, 1);
  w.event_record(1, 1);
  w.kernel("side", 1, 1, 2);  // runs concurrently with the producer
  w.stream_wait_event(2, 1);
  w.kernel("consumer", 1, 1, 2);
  w.stream_sync(2);
  EmulateOptions options;
  options.kernel_table = table.string();
  const EmulationResult res = run({w.finish()}, options);
  const auto producer = tasks_named(res, 0, "producer");
  const auto consumer = tasks_named(res, 0, "consumer");
  const auto side = tasks_named(res, 0, "side");
  ASSERT_EQ(producer.size(), 1u);
  ASSERT_EQ(consumer.size(), 1u);
  EXPECT_GE(res.replay.start_ns[consumer[0]], res.replay.end_ns[producer[0]]);
  EXPECT_LT(res.replay.start_ns[side[0]], res.replay.end_ns[producer[0]]);
  EXPECT_EQ(res.graph.stats.dropped_contradicted, 0);
  EXPECT_EQ(res.graph.stats.inferred_runtime_ops, 0);  // all from cuda_sync records
  // The stream sync waits for the consumer.
  EXPECT_NEAR(res.job_step_s * 1e9,
              static_cast<double>(res.replay.end_ns[consumer[0]]) + HostCosts{}.sync_ns, 2'000);
}

// Work on the legacy default stream waits for earlier work on blocking streams (and the other way
// round); non-blocking streams (cudaStreamNonBlocking) run independently.
TEST(Emulate, LegacyDefaultStreamSynchronizesWithBlockingStreams) {
  TempDir dir;
  const auto table =
      dir.write("kernels.csv", "name,duration_us\nslow,800\nafter,100\nfree_running,2000\n");
  TraceWriter w(0, 1);
  w.raw(R"({"op":"stream_create","t":10,"dt":1,"tid":0,"dev":0,"stream":1,"flags":0})");
  w.raw(R"({"op":"stream_create","t":20,"dt":1,"tid":0,"dev":0,"stream":2,"flags":1})");
  w.kernel("slow", 1, 1, 1);          // blocking stream 1
  w.kernel("free_running", 1, 1, 2);  // non-blocking stream 2
  w.kernel("after", 1, 1, 0);         // legacy: waits for `slow`, not for `free_running`
  w.kernel("slow", 1, 1, 1);          // blocking: waits for `after`
  w.device_sync();
  EmulateOptions options;
  options.kernel_table = table.string();
  const EmulationResult res = run({w.finish()}, options);
  const auto slow = tasks_named(res, 0, "slow");
  const auto after = tasks_named(res, 0, "after");
  const auto free_running = tasks_named(res, 0, "free_running");
  ASSERT_EQ(slow.size(), 2u);
  ASSERT_EQ(after.size(), 1u);
  EXPECT_GE(res.replay.start_ns[after[0]], res.replay.end_ns[slow[0]]);
  EXPECT_GE(res.replay.start_ns[slow[1]], res.replay.end_ns[after[0]]);
  EXPECT_LT(res.replay.start_ns[free_running[0]], res.replay.end_ns[slow[0]]);
  EXPECT_LT(res.replay.start_ns[after[0]], res.replay.end_ns[free_running[0]]);
  EXPECT_EQ(res.graph.stats.dropped_contradicted, 0);
}

TEST(Emulate, RepeatedIterationsAreSteps) {
  TempDir dir;
  const auto table = dir.write("kernels.csv", "name,duration_us\nstep_kernel,300\n");
  TraceWriter w(0, 1);
  w.malloc(1 << 20);
  w.host_work(5'000'000);  // start-up, not part of any step
  for (int it = 0; it < 5; ++it) {
    w.host_work(10'000).kernel("step_kernel", 1, 1);
    w.host_work(10'000).kernel("step_kernel", 1, 1);
    w.memcpy("DtoH", 4, false);
  }
  EmulateOptions options;
  options.kernel_table = table.string();
  const EmulationResult res = run({w.finish()}, options);
  ASSERT_EQ(res.ranks.size(), 1u);
  EXPECT_TRUE(res.ranks[0].steps_detected);
  EXPECT_EQ(res.ranks[0].steps, 5);
  // Per iteration: host work 10 µs, launch, host 10 µs, second launch; the two kernels run
  // back to back from the first launch + latency; the blocking copy waits for them.
  const double step = res.job_step_s;
  EXPECT_GT(step, 600e-6);
  EXPECT_LT(step, 700e-6);
  options.detect_steps = false;
  const EmulationResult whole = run({w.finish()}, options);
  EXPECT_EQ(whole.ranks[0].steps, 1);
  EXPECT_GT(whole.job_step_s, 5e-3);
}

TEST(Emulate, OutOfMemoryIsReportedWithApiAndBytes) {
  TraceWriter w(0, 1);
  w.malloc(40LL << 30);
  w.malloc(60LL << 30, /*fail=*/true);
  w.kernel("k", 1, 1);
  w.device_sync();
  const EmulationResult res = run({w.finish()});
  ASSERT_EQ(res.out_of_memory.size(), 1u);
  EXPECT_EQ(res.out_of_memory[0].api, "cudaMalloc");
  EXPECT_EQ(res.out_of_memory[0].bytes, 60LL << 30);
  EXPECT_EQ(res.out_of_memory[0].used_bytes, 40LL << 30);
  EXPECT_EQ(res.out_of_memory[0].where, "trace-0.jsonl:3");
  EXPECT_EQ(res.ranks[0].peak_memory_bytes[0], 40LL << 30);
  EXPECT_EQ(res.ranks[0].out_of_memory, 1);
}

TEST(Emulate, KernelTableTakesPrecedenceOverTheDeviceModel) {
  TempDir dir;
  TraceWriter w(0, 1);
  w.register_kernel("_Z6scaleiPf", "scale(int, float*)");
  w.kernel("_Z6scaleiPf", 1 << 16, 256);
  w.kernel("other_kernel", 1 << 16, 256);
  w.device_sync();
  const std::string text = w.finish();
  const EmulationResult model = run({text});
  const auto scale_model = tasks_named(model, 0, "scale(int, float*)");
  ASSERT_EQ(scale_model.size(), 1u);
  // Device model: 2^24 threads × 16 B at 3350 GB/s × 0.8 (HBM) ≈ 100 µs.
  EXPECT_NEAR(model.graph.duration_ns[scale_model[0]], 16.0 * (1 << 24) / (3350e9 * 0.8) * 1e9,
              2.0);
  const auto table = dir.write("k.csv", "kernel,duration_us\n\"scale(int, float*)\",123.5\n");
  EmulateOptions options;
  options.kernel_table = table.string();
  const EmulationResult tabled = run({text}, options);
  const auto scale = tasks_named(tabled, 0, "scale(int, float*)");
  const auto other = tasks_named(tabled, 0, "other_kernel");
  ASSERT_EQ(scale.size(), 1u);
  EXPECT_EQ(tabled.graph.duration_ns[scale[0]], 123'500);
  EXPECT_EQ(tabled.graph.duration_ns[other[0]],
            model.graph.duration_ns[tasks_named(model, 0, "other_kernel")[0]]);
  ASSERT_EQ(tabled.estimators.size(), 2u);
  EXPECT_EQ(tabled.estimators[0].name, "table");
  EXPECT_EQ(tabled.estimators[0].tasks, 1);
  EXPECT_EQ(tabled.estimators[1].tasks, 1);
  // Also by mangled name.
  const auto mangled = dir.write("m.csv", "name,duration_us\n_Z6scaleiPf,7\n");
  options.kernel_table = mangled.string();
  const EmulationResult by_mangled = run({text}, options);
  EXPECT_EQ(by_mangled.graph.duration_ns[tasks_named(by_mangled, 0, "scale")[0]], 7'000);
}

TEST(Emulate, OneProcessDrivingTwoDevicesJoinsItsOwnCollectives) {
  TraceWriter w(0, 1, /*devices=*/2);
  w.comm_init("all", 0, 2);
  w.set_device(1);
  w.comm_init("all", 1, 2);
  w.set_device(0);
  w.kernel("long_kernel", 1 << 20, 1024);  // device 0 only: device 1 waits in the all-reduce
  for (int d = 0; d < 2; ++d) {
    w.device(d).nccl("allreduce", "all", d, 2, 1 << 20, "float32", 0, -1, /*group=*/1);
  }
  w.device(0).device_sync();
  w.device(1).device_sync();
  const EmulationResult res = run({w.finish()});
  EXPECT_EQ(res.replay.collectives_joined, 1);
  const auto reduces = tasks_named(res, 0, "ncclDevKernel_AllReduce");
  ASSERT_EQ(reduces.size(), 2u);
  EXPECT_EQ(res.replay.end_ns[reduces[0]], res.replay.end_ns[reduces[1]]);
  EXPECT_EQ(res.ranks[0].device_energy_j_per_step.size(), 2u);
  EXPECT_EQ(res.collation.first_gpu[0], 0);
}

// ncclCommInitAll writes one record per device with the call's entry time, and per-device
// ncclCommSplit calls inside a group follow each other: each batch costs one bootstrap.
TEST(Emulate, CommunicatorInitOfSeveralDevicesIsChargedOnce) {
  TraceWriter w(0, 1, /*devices=*/4);
  for (int d = 0; d < 4; ++d) {
    w.raw(fmt::format(R"({{"op":"comm_init","t":1000,"dt":500,"tid":0,"dev":{},"comm":"all",)"
                      R"("rank":{},"size":4,"api":"ncclCommInitAll"}})",
                      d, d));
  }
  w.host_work(10'000).kernel("k", 1, 1);  // ends the first batch
  for (int d = 0; d < 4; ++d) {
    w.set_device(d);
    w.comm_init("split", d, 4);
  }
  w.device(0).kernel("k", 1, 1);
  w.device_sync();
  EmulateOptions options;
  const EmulationResult res = run({w.finish()}, options);
  const double init_s = options.host_costs.comm_init_ns * 1e-9;
  EXPECT_GT(res.job_step_s, 2 * init_s);
  EXPECT_LT(res.job_step_s, 2 * init_s + 100e-6);
}

// 8 independent processes (no RANK) that each call ncclCommInitAll on their one device: traces
// of interposers before the per-process nonce gave every clique the same id. A clique built by
// ncclCommInitAll lives in one process, so the analysis keeps them apart (issue 18).
TEST(Emulate, IndependentProcessesCallingCommInitAllDoNotCollide) {
  std::vector<std::string> texts;
  for (int p = 0; p < 8; ++p) {
    TraceWriter w(-1, -1, 1, "h100", 2000 + p);
    w.raw(R"({"op":"comm_init","t":1000,"dt":500,"tid":0,"dev":0,"comm":"c0ffee","rank":0,)"
          R"("size":1,"api":"ncclCommInitAll"})");
    w.host_work(1'000);
    w.kernel("k", 1024, 256);
    w.nccl("allreduce", "c0ffee", 0, 1, 1 << 20, "float32");
    w.device_sync();
    texts.push_back(w.finish());
  }
  const EmulationResult res = run(texts);
  ASSERT_EQ(res.ranks.size(), 8u);
  ASSERT_EQ(res.collation.communicators.size(), 8u);
  for (const auto& comm : res.collation.communicators) {
    EXPECT_EQ(comm.members.size(), 1u);
    EXPECT_TRUE(comm.complete());
  }
  for (const auto& w : res.warnings)
    EXPECT_EQ(w.kind.find("initialized twice"), std::string::npos) << w.kind << ": " << w.example;
  // Each process's all-reduce runs alone (one member): all ranks predict the same step.
  for (const auto& rank : res.ranks) EXPECT_DOUBLE_EQ(rank.step_s, res.ranks[0].step_s);
}

// cudaDeviceReset's record is known: no "unknown op" warning, and it waits for the device's work.
TEST(Emulate, DeviceResetIsKnownAndSynchronizes) {
  TraceWriter w(0, 1);
  w.kernel("long_kernel", 1 << 20, 1024);
  w.raw(R"({"op":"device_reset","t":5000,"dt":100,"tid":0,"dev":0})");
  const EmulationResult res = run({w.finish()});
  for (const auto& warning : res.warnings)
    EXPECT_EQ(warning.kind.find("unknown"), std::string::npos)
        << warning.kind << ": " << warning.example;
  const auto kernels = tasks_named(res, 0, "long_kernel");
  ASSERT_EQ(kernels.size(), 1u);
  // The step ends after the kernel: the reset waited for it.
  EXPECT_GE(res.job_step_s * 1e9, static_cast<double>(res.graph.duration_ns[kernels[0]]));
}

TEST(Emulate, UnsupportedAndMisuseAreCountedByApi) {
  TraceWriter w(0, 1);
  w.unsupported("cudaGraphLaunch");
  w.unsupported("cudaGraphLaunch");
  w.misuse("cudaFree", "double free of 0x7f00");
  w.kernel("k", 1, 1);
  const EmulationResult res = run({w.finish()});
  EXPECT_EQ(res.unsupported.at("cudaGraphLaunch"), 2);
  EXPECT_EQ(res.misuse.at("cudaFree: double free of 0x7f00"), 1);
  EXPECT_EQ(res.ranks[0].unsupported_calls, 2);
  EXPECT_EQ(res.ranks[0].misuse_calls, 1);
}

TEST(Emulate, WritesSummaryAndPerfettoTraceAtomically) {
  TempDir dir;
  std::vector<std::string> texts;
  for (int r = 0; r < 2; ++r) texts.push_back(data_parallel_program(r, 2));
  const EmulationResult res = run(texts);
  const auto out = dir.path() / "out";
  ASSERT_TRUE(report::write_emulation_outputs(res, out).ok());
  std::ifstream in(out / "summary.json");
  const auto summary = nlohmann::json::parse(in);
  EXPECT_GT(summary["job"]["predicted_step_s"].get<double>(), 0.0);
  EXPECT_EQ(summary["ranks"].size(), 2u);
  EXPECT_EQ(summary["job"]["steps"].get<int>(), 3);
  EXPECT_GT(summary["job"]["modelled_energy_j_per_step"].get<double>(), 0.0);
  EXPECT_NE(summary["basis"].get<std::string>().find("modelled/predicted"), std::string::npos);
  std::ifstream trace(out / "emulated_trace.json");
  const auto chrome = nlohmann::json::parse(trace);
  EXPECT_GT(chrome["traceEvents"].size(), 100u);
}

TEST(Emulate, ErrorsAreOneLine) {
  TraceWriter w(0, 1);
  w.kernel("k", 1, 1);
  const auto traces = parse_all({w.finish()});
  EmulateOptions options;
  options.gpu = "b300";
  auto bad_gpu = emulate_traces(traces, options);
  ASSERT_FALSE(bad_gpu.ok());
  EXPECT_NE(bad_gpu.error().message.find("unknown GPU 'b300'"), std::string::npos);
  options = {};
  options.kernel_table = "/nonexistent/table.csv";
  EXPECT_FALSE(emulate_traces(traces, options).ok());
  options = {};
  options.nodes = 1;
  options.gpus_per_node = 1;
  std::vector<std::string> texts = {TraceWriter(0, 2).finish(), TraceWriter(1, 2).finish()};
  auto small = emulate_traces(parse_all(texts), options);
  ASSERT_FALSE(small.ok());
  EXPECT_EQ(small.error().message,
            "the traces use global GPU index 1 but the topology has 1 GPU(s) (1 node(s) x 1 GPU(s) "
            "per node)");
}

}  // namespace
}  // namespace powertrain::emulate
