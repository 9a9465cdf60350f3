// Processes of one rank that ran one after another (a script running several CUDA programs under
// one `powertrain emulate`) are joined into one timeline; processes of one rank that overlapped
// are refused with the reason.
#include "emulate/sequential_processes.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "emulate/emulate.h"
#include "emulate/trace_writer.h"
#include "emulate_test_util.h"
#include "graph/execution_graph.h"

namespace powertrain::emulate {
namespace {

using testing::parse_all;

constexpr std::int64_t kStart = 1'700'000'000'000'000'000;

// A short program: host work, one kernel named `kernel`, a synchronize.
std::string program(std::int64_t pid, std::int64_t start_unix_ns, const std::string& kernel,
                    int rank = 0, int devices = 1, int world_size = 1) {
  TraceWriter w(rank, world_size, devices, "h100", pid);
  w.program("./" + kernel).start_unix_ns(start_unix_ns);
  w.host_work(10'000).kernel(kernel, 132, 256);
  w.host_work(1'000).device_sync();
  return w.finish();
}

std::vector<std::string> kernel_names(const ProcessTrace& trace) {
  std::vector<std::string> names;
  for (const Record& r : trace.records) {
    if (r.op == OpKind::kKernel) names.emplace_back(trace.str(r.name));
  }
  return names;
}

TEST(SequentialProcesses, OneRankRunInSequenceIsJoinedInStartOrder) {
  // Given out of order: the third program first.
  std::vector<ProcessTrace> traces =
      parse_all({program(30, kStart + 9'000'000, "third"), program(10, kStart, "first"),
                 program(20, kStart + 4'000'000, "second")});
  const std::size_t first_records = traces[1].records.size();
  std::vector<trace::TraceWarning> warnings;
  auto joined = join_sequential_processes(std::move(traces), warnings);
  ASSERT_TRUE(joined.ok()) << joined.error().message;
  ASSERT_EQ(joined->size(), 1u);
  const ProcessTrace& trace = joined->front();
  EXPECT_EQ(trace.process.pid, 10);
  EXPECT_EQ(trace.source, "trace-1.jsonl then trace-2.jsonl then trace-0.jsonl");
  // Names resolve to each program's own strings after the rebase.
  EXPECT_EQ(kernel_names(trace), (std::vector<std::string>{"first", "second", "third"}));
  // The second program's calls sit 4 ms after the first's start, on the first's clock; an exit
  // (one device reset) separates the programs.
  const Record& exit = trace.records[first_records];
  EXPECT_EQ(exit.op, OpKind::kDeviceReset);
  EXPECT_EQ(trace.str(exit.name), "process exit (pid 10)");
  const Record& second_first_call = trace.records[first_records + 1];
  EXPECT_GE(second_first_call.t_ns, 4'000'000);
  EXPECT_LT(second_first_call.t_ns, 4'000'000 + 100'000);
  for (std::size_t i = 1; i < trace.records.size(); ++i) {
    EXPECT_GE(trace.records[i].t_ns, trace.records[i - 1].t_ns) << "record " << i;
  }
  // Correlations stay unique across the joined programs.
  std::vector<std::int64_t> correlations;
  for (const Record& r : trace.records) {
    if (r.correlation >= 0) correlations.push_back(r.correlation);
  }
  std::sort(correlations.begin(), correlations.end());
  EXPECT_EQ(std::adjacent_find(correlations.begin(), correlations.end()), correlations.end());
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0].count, 2);
  EXPECT_NE(warnings[0].example.find("rank 0: 'trace-1.jsonl' (pid 10, ./first) then"),
            std::string::npos)
      << warnings[0].example;
}

TEST(SequentialProcesses, RanksOfAJobPassThrough) {
  std::vector<ProcessTrace> traces =
      parse_all({program(1, kStart, "a", 0, 1, 3), program(2, kStart, "b", 1, 1, 3),
                 program(3, kStart, "c", 2, 1, 3)});
  std::vector<trace::TraceWarning> warnings;
  auto joined = join_sequential_processes(std::move(traces), warnings);
  ASSERT_TRUE(joined.ok());
  ASSERT_EQ(joined->size(), 3u);
  EXPECT_EQ((*joined)[1].process.pid, 2);
  EXPECT_TRUE(warnings.empty());
}

// Two programs of one rank at the same time on one device (a background job): a GPU
// time-shared by processes is not modelled, so the one with more GPU work is kept and the other
// left out with a warning that names both.
TEST(SequentialProcesses, OverlappingProcessesOnOneDeviceKeepTheBusiestWithAWarning) {
  TraceWriter busier(0, 1, 1, "h100", 2);
  busier.program("./b").start_unix_ns(kStart + 5'000);
  busier.host_work(1'000).kernel("b1", 1, 32);
  busier.kernel("b2", 1, 32);
  // The second starts 5 us after the first, which runs for about 12 us.
  std::vector<ProcessTrace> traces = parse_all({program(1, kStart, "a"), busier.finish()});
  std::vector<trace::TraceWarning> warnings;
  auto joined = join_sequential_processes(std::move(traces), warnings);
  ASSERT_TRUE(joined.ok()) << joined.error().message;
  ASSERT_EQ(joined->size(), 1u);
  EXPECT_EQ(joined->front().process.pid, 2);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].kind.find("ran at the same time on the same device(s)"), std::string::npos);
  EXPECT_NE(warnings[0].example.find("(pid 2, ./b) kept, 'trace-0.jsonl' (pid 1, ./a) left out (1 "
                                     "GPU task(s))"),
            std::string::npos)
      << warnings[0].example;
}

TEST(SequentialProcesses, ProcessesThatCannotBeJoinedAreRefused) {
  std::vector<trace::TraceWarning> warnings;
  auto devices = join_sequential_processes(
      parse_all({program(1, kStart, "a", 0, 1), program(2, kStart + 9'000'000, "b", 0, 2)}),
      warnings);
  ASSERT_FALSE(devices.ok());
  EXPECT_NE(devices.error().message.find("emulate different GPUs (1 x h100 and 2 x h100)"),
            std::string::npos)
      << devices.error().message;
  auto unordered =
      join_sequential_processes(parse_all({program(1, kStart, "a"), program(2, 0, "b")}), warnings);
  ASSERT_FALSE(unordered.ok());
  EXPECT_NE(unordered.error().message.find("has no start time"), std::string::npos)
      << unordered.error().message;
  // Starts 100 days apart: not one run (and the joined times would leave the reader's range).
  auto far = join_sequential_processes(
      parse_all({program(1, kStart, "a"), program(2, kStart + 100 * 86'400'000'000'000, "b")}),
      warnings);
  ASSERT_FALSE(far.ok());
  EXPECT_NE(far.error().message.find("started 100.0 days apart: not one run"), std::string::npos)
      << far.error().message;
}

// A script running a program on device 0, then one on device 1: one after another, sharing no
// communicator, so joined in sequence (their times add), not split into two ranks.
TEST(SequentialProcesses, ProgramsOnDifferentDevicesOneAfterAnotherAreJoined) {
  TraceWriter on_zero(0, 1, 2, "h100", 1);
  on_zero.program("./bench").start_unix_ns(kStart);
  on_zero.host_work(1'000).kernel("a", 132, 256);
  on_zero.device_sync();
  TraceWriter on_one(0, 1, 2, "h100", 2);
  on_one.program("./bench").start_unix_ns(kStart + 5'000'000);
  on_one.host_work(1'000).set_device(1);
  on_one.device(1).kernel("b", 132, 256);
  on_one.device_sync();
  std::vector<trace::TraceWarning> warnings;
  auto joined = join_sequential_processes(parse_all({on_zero.finish(), on_one.finish()}), warnings);
  ASSERT_TRUE(joined.ok()) << joined.error().message;
  ASSERT_EQ(joined->size(), 1u);
  EXPECT_EQ(joined->front().process.devices, 2);
  EXPECT_EQ(kernel_names(joined->front()), (std::vector<std::string>{"a", "b"}));
  // Each exit names its own process.
  std::vector<std::string> exits;
  for (const Record& r : joined->front().records) {
    if (r.op == OpKind::kDeviceReset) exits.emplace_back(joined->front().str(r.name));
  }
  EXPECT_EQ(exits, (std::vector<std::string>{"process exit (pid 1)", "process exit (pid 1)"}));
}

// NVTX range ids restart in every process: the later program's range 1 is not the earlier one's
// (left open at its exit).
TEST(SequentialProcesses, NvtxRangeIdsOfAJoinedProgramAreItsOwn) {
  auto with_range = [](std::int64_t pid, std::int64_t start, bool close) {
    TraceWriter w(0, 1, 1, "h100", pid);
    w.program("./p").start_unix_ns(start);
    w.raw(R"({"op":"nvtx","t":1500,"tid":0,"kind":"start","name":"range","id":1})");
    w.host_work(1'000).kernel("k", 1, 32);
    if (close) w.raw(R"({"op":"nvtx","t":3000,"tid":0,"kind":"end","id":1})");
    return w.finish();
  };
  std::vector<trace::TraceWarning> warnings;
  auto joined = join_sequential_processes(
      parse_all({with_range(1, kStart, false), with_range(2, kStart + 1'000'000, true),
                 with_range(3, kStart + 2'000'000, true)}),
      warnings);
  ASSERT_TRUE(joined.ok()) << joined.error().message;
  std::vector<std::pair<int, std::int64_t>> ranges;  // (kind, id)
  for (const Annotation& a : joined->front().annotations) {
    ranges.emplace_back(static_cast<int>(a.kind), a.id);
  }
  const int start = static_cast<int>(Annotation::Kind::kStart);
  const int end = static_cast<int>(Annotation::Kind::kEnd);
  // Each later program's ids move past the highest before it.
  EXPECT_EQ(ranges, (std::vector<std::pair<int, std::int64_t>>{
                        {start, 1}, {start, 3}, {end, 3}, {start, 5}, {end, 5}}));
  // The exits name the process that ended.
  std::vector<std::string> exits;
  for (const Record& r : joined->front().records) {
    if (r.op == OpKind::kDeviceReset) exits.emplace_back(joined->front().str(r.name));
  }
  EXPECT_EQ(exits, (std::vector<std::string>{"process exit (pid 1)", "process exit (pid 2)"}));
}

// torch.multiprocessing.spawn-style workers of one launcher: one process of rank 0 sees 4
// devices, its 4 workers run at the same time, worker k on device k, and all-reduce over a
// 4-rank communicator. The launcher (no GPU work) is left out; each worker is its device's rank.
std::vector<std::string> spawned_workers(int workers, std::int64_t count,
                                         std::int64_t stagger_ns = 1'000) {
  std::vector<std::string> texts;
  TraceWriter launcher(0, 1, workers, "h100", 100);
  launcher.program("python").start_unix_ns(kStart);
  launcher.host_work(50'000'000).misuse("cudaGetDeviceCount", "a query, no work");
  texts.push_back(launcher.finish());
  for (int k = 0; k < workers; ++k) {
    TraceWriter w(0, 1, workers, "h100", 101 + k);
    w.program("python").start_unix_ns(kStart + 1'000'000 + stagger_ns * k);
    w.host_work(10'000).set_device(k);
    w.device(k).comm_init("world", k, workers);
    w.host_work(5'000).kernel("forward", 132, 256);
    w.nccl("allreduce", "world", k, workers, count, "float32");
    w.device_sync();
    texts.push_back(w.finish());
  }
  return texts;
}

TEST(SequentialProcesses, ConcurrentWorkersEachOnTheirOwnDeviceAreOneRankPerDevice) {
  std::vector<trace::TraceWarning> warnings;
  auto split = join_sequential_processes(parse_all(spawned_workers(4, 1 << 20)), warnings);
  ASSERT_TRUE(split.ok()) << split.error().message;
  ASSERT_EQ(split->size(), 4u);
  for (int k = 0; k < 4; ++k) {
    const ProcessTrace& worker = (*split)[k];
    EXPECT_EQ(worker.process.pid, 101 + k);
    EXPECT_EQ(worker.process.rank, k);
    EXPECT_EQ(worker.process.devices, 1);
    for (const Record& r : worker.records) EXPECT_EQ(r.device, 0) << "line " << r.line;
  }
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_NE(warnings[0].kind.find("without GPU work is left out"), std::string::npos);
  EXPECT_EQ(warnings[0].count, 1);
  EXPECT_NE(warnings[1].kind.find("one rank per device"), std::string::npos);
  EXPECT_EQ(warnings[1].count, 4);

  // Workers started so far apart that none overlaps the next on the host clock (an emulated
  // collective does not wait for its peers) still ran together: they share a communicator.
  warnings.clear();
  auto apart = join_sequential_processes(
      parse_all(spawned_workers(4, 1 << 20, /*stagger_ns=*/100'000'000)), warnings);
  ASSERT_TRUE(apart.ok()) << apart.error().message;
  EXPECT_EQ(apart->size(), 4u);

  // End to end: a 4-GPU job whose all-reduce joins the four workers.
  auto result = emulate_traces(parse_all(spawned_workers(4, 1 << 24)), EmulateOptions{});
  ASSERT_TRUE(result.ok()) << result.error().message;
  ASSERT_EQ(result->ranks.size(), 4u);
  EXPECT_EQ(result->gpu_count, 4);
  EXPECT_EQ(result->collation.communicators.size(), 1u);
  for (const RankReport& rank : result->ranks) EXPECT_GT(rank.breakdown.exposed_communication, 0.0);
}

// One rank's workers split into device ranks 0 and 1 while the job's rank 1 is one process of
// its own: the numbers meet, and the mixed layout is refused with the reason.
TEST(SequentialProcesses, SplitWorkersBesideUnsplitRanksAreRefused) {
  std::vector<std::string> texts;
  for (int k = 0; k < 2; ++k) {
    TraceWriter w(0, 2, 2, "h100", 10 + k);
    w.program("python").start_unix_ns(kStart + 1'000 * k);
    w.host_work(10'000).set_device(k);
    w.device(k).comm_init("workers", k, 2);
    w.kernel("forward", 132, 256);
    texts.push_back(w.finish());
  }
  TraceWriter other(1, 2, 2, "h100", 20);
  other.program("python").start_unix_ns(kStart);
  other.host_work(10'000).kernel("forward", 132, 256);
  other.device(1).kernel("forward", 132, 256);
  texts.push_back(other.finish());
  std::vector<trace::TraceWarning> warnings;
  auto split = join_sequential_processes(parse_all(texts), warnings);
  ASSERT_FALSE(split.ok());
  EXPECT_NE(split.error().message.find("mixed layouts are not modelled"), std::string::npos)
      << split.error().message;
}

// Among processes running together, one drives two devices: they are not workers of one
// device each, so only the busiest is modelled.
TEST(SequentialProcesses, ConcurrentProcessesWithOneDrivingSeveralDevicesKeepTheBusiest) {
  std::vector<std::string> texts = spawned_workers(2, 1024);
  TraceWriter both(0, 1, 2, "h100", 200);
  both.program("python").start_unix_ns(kStart + 1'000'000);
  both.host_work(10'000).kernel("on_zero", 1, 32);
  both.kernel("on_zero", 1, 32);
  both.device(1).kernel("on_one", 1, 32);
  texts.push_back(both.finish());
  std::vector<trace::TraceWarning> warnings;
  auto resolved = join_sequential_processes(parse_all(texts), warnings);
  ASSERT_TRUE(resolved.ok()) << resolved.error().message;
  ASSERT_EQ(resolved->size(), 1u);
  EXPECT_EQ(resolved->front().process.pid, 200);
  EXPECT_EQ(resolved->front().process.devices, 2);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0].count, 3);
}

// End to end: the first program leaves a long GEMM running when it exits; the second program's
// kernel starts only after it (the exit waits for the device), and the job is one rank.
TEST(SequentialProcesses, TheNextProgramsWorkStartsAfterTheExitedProgramsWork) {
  TraceWriter first(0, 1, 1, "h100", 10);
  first.program("./first").start_unix_ns(kStart);
  first.host_work(1'000).gemm(16384, 16384, 16384, "bfloat16");            // ~10 ms on an H100
  const std::string second = program(20, kStart + 200'000, "after_exit");  // 0.2 ms later
  auto result = emulate_traces(parse_all({first.finish(), second}), EmulateOptions{});
  ASSERT_TRUE(result.ok()) << result.error().message;
  ASSERT_EQ(result->ranks.size(), 1u);
  const graph::ExecutionGraph& g = result->graph;
  std::int64_t gemm_end = -1;
  std::int64_t kernel_start = -1;
  for (std::int32_t t = 0; t < static_cast<std::int32_t>(g.kind.size()); ++t) {
    if (!graph::is_gpu(g.kind[t])) continue;
    if (g.task_name(t) == "after_exit") {
      kernel_start = result->replay.start_ns[t];
    } else {
      gemm_end = std::max(gemm_end, result->replay.end_ns[t]);
    }
  }
  ASSERT_GE(gemm_end, 0);
  ASSERT_GE(kernel_start, 0);
  EXPECT_GE(kernel_start, gemm_end);
  EXPECT_GT(result->ranks[0].step_s, 0.005);  // the GEMM's ~10 ms, not the 0.2 ms host gap
  EXPECT_TRUE(std::any_of(result->warnings.begin(), result->warnings.end(),
                          [](const trace::TraceWarning& w) {
                            return w.kind.find("joined into one timeline") != std::string::npos;
                          }));
}

}  // namespace
}  // namespace powertrain::emulate
