// The replay simulator on hand-built traces: each dependency kind, runtime resolution of syncs
// and event records, collective joins across ranks, determinism and faithful replays.
#include "sim/simulator.h"

#include <gtest/gtest.h>

#include "../support/synthetic_job.h"
#include "graph/graph_builder.h"
#include "graph/trace_builder.h"
#include "sim/metrics.h"

namespace powertrain::sim {
namespace {

using graph::ExecutionGraph;
using graph::find_task;
using graph::RankTraceBuilder;
using trace::SyncKind;

ExecutionGraph build(std::vector<trace::RankTrace> traces) {
  auto graph = graph::build_execution_graph(traces);
  EXPECT_TRUE(graph.ok()) << graph.error().message;
  return std::move(graph).value();
}

// Every task at its measured start and end.
void expect_faithful(const ExecutionGraph& g, const ReplayResult& r) {
  ASSERT_EQ(r.outcome, ReplayOutcome::kComplete);
  for (std::int32_t v = 0; v < g.task_count(); ++v) {
    EXPECT_EQ(r.start_ns[v], g.input_start_ns[v]) << g.task_name(v);
    EXPECT_EQ(r.end_ns[v], g.input_end_ns(v)) << g.task_name(v);
  }
}

TEST(Replay, CpuThreadKeepsItsGapsAndShiftsWhenATaskGrows) {
  RankTraceBuilder b;
  b.op("a", 0, 10).op("b", 25, 5).op("c", 31, 4);
  ExecutionGraph g = build({b.build()});
  expect_faithful(g, replay(g));
  g.duration_ns[find_task(g, 0, "a")] = 110;  // 100 ns longer
  const ReplayResult r = replay(g);
  EXPECT_EQ(r.start_ns[find_task(g, 0, "b")], 125);
  EXPECT_EQ(r.start_ns[find_task(g, 0, "c")], 131);
}

TEST(Replay, KernelStartsAfterItsLaunchAndItsStreamPredecessor) {
  RankTraceBuilder b;
  b.runtime("cudaLaunchKernel", 0, 5, 1).runtime("cudaLaunchKernel", 10, 5, 2);
  b.kernel("k1", 3, 100, 1).kernel("k2", 105, 50, 2);
  ExecutionGraph g = build({b.build()});
  expect_faithful(g, replay(g));
  const std::int32_t k1 = find_task(g, 0, "k1"), k2 = find_task(g, 0, "k2");
  g.duration_ns[k1] = 20;  // k1 now ends at 23: k2 starts 2 ns later (its queue gap)
  ReplayResult r = replay(g);
  EXPECT_EQ(r.start_ns[k2], 25);
  g.duration_ns[k1] = 1;  // k1 ends at 4: k2 is bound by its launch (10) + the 3 ns launch lag
  r = replay(g);
  EXPECT_EQ(r.start_ns[k2], 13);
  EXPECT_EQ(r.critical_pred[k2], find_task(g, 0, "cudaLaunchKernel", 1));
}

// Thread 1 launches k1 and synchronizes; thread 2 launches k3 on the same stream after the sync
// call in the input. When thread 2 gets faster, k3 is launched before the sync call, and the sync
// must now wait for it: resolution at the simulated moment, not at build time.
TEST(Replay, StreamSyncWaitsForTheLastKernelLaunchedAtCallTime) {
  RankTraceBuilder b;
  b.runtime("cudaLaunchKernel", 0, 5, 1, /*tid=*/1);
  b.kernel("k1", 5, 100, 1);
  b.runtime("cudaStreamSynchronize", 40, 67, 2, 1);  // returns at 107 = k1 end + 2
  b.sync_record(SyncKind::kStreamSync, 40, 67, 2, 7);
  b.op("after_sync", 110, 10, 1);
  b.op("busy", 0, 50, /*tid=*/2);
  b.runtime("cudaLaunchKernel", 50, 5, 3, 2);
  b.kernel("k3", 106, 100, 3);
  ExecutionGraph g = build({b.build()});
  const std::int32_t sync = find_task(g, 0, "cudaStreamSynchronize");
  ASSERT_NE(g.runtime_op[sync], graph::kNone);
  EXPECT_EQ(g.runtime_ops[g.runtime_op[sync]].tail_ns, 2);
  expect_faithful(g, replay(g));

  g.duration_ns[find_task(g, 0, "busy")] = 10;  // k3's launch moves to 10, before the sync call
  const ReplayResult r = replay(g);
  const std::int32_t k3 = find_task(g, 0, "k3");
  EXPECT_EQ(r.start_ns[k3], 106);  // still after k1 on the stream
  EXPECT_EQ(r.end_ns[sync], r.end_ns[k3] + 2);
  EXPECT_EQ(r.critical_pred[sync], k3);
  EXPECT_EQ(r.start_ns[find_task(g, 0, "after_sync")], r.end_ns[sync] + 3);
}

// k4 on stream 20 waits (cudaEventRecord + cudaStreamWaitEvent) for k1 on stream 7, but not for
// k5 launched on stream 7 after the record.
void check_event_record_and_wait(bool with_sync_record) {
  RankTraceBuilder b;
  b.runtime("cudaLaunchKernel", 0, 5, 1);
  b.runtime("cudaEventRecord", 10, 2, 2);
  b.runtime("cudaStreamWaitEvent", 15, 2, 3);
  if (with_sync_record) b.sync_record(SyncKind::kStreamWaitEvent, 15, 1, 3, 20, 7, 2);
  b.runtime("cudaLaunchKernel", 20, 5, 4);
  b.runtime("cudaLaunchKernel", 30, 5, 5);
  b.kernel("k1", 4, 100, 1, 7).kernel("k4", 105, 10, 4, 20).kernel("k5", 105, 200, 5, 7);
  ExecutionGraph g = build({b.build()});
  ASSERT_EQ(g.runtime_ops.size(), 2u);
  EXPECT_EQ(g.runtime_ops[1].inferred, !with_sync_record);
  expect_faithful(g, replay(g));
  const std::int32_t k1 = find_task(g, 0, "k1"), k4 = find_task(g, 0, "k4");
  g.duration_ns[k1] = 300;  // k4 follows k1's end
  ReplayResult r = replay(g);
  EXPECT_EQ(r.start_ns[k4], r.end_ns[k1] + 1);
  EXPECT_EQ(r.critical_pred[k4], k1);
  g.duration_ns[k1] = 100;
  g.duration_ns[find_task(g, 0, "k5")] = 5000;  // recorded before k5: no effect on k4
  r = replay(g);
  EXPECT_EQ(r.start_ns[k4], 105);
}

TEST(Replay, EventRecordAndStreamWaitFromCudaSyncRecords) { check_event_record_and_wait(true); }
TEST(Replay, EventRecordAndStreamWaitFromNamingRules) { check_event_record_and_wait(false); }

// Issue 13 (DLRM rank 3 with correlations dropped: +25 % step): a copy and a kernel without a
// launch link run while their thread is blocked in cudaStreamSynchronize. The thread issued
// them before the sync, so they must not be anchored to the sync itself: the builder would not
// count them as awaited (issued at the call) while the simulator would, and the sync would wait
// for the copy and then add its whole measured duration again as tail.
TEST(Replay, WorkWithoutLaunchRunningDuringASyncIsIssuedBeforeIt) {
  RankTraceBuilder b;
  b.kernel("before_window", 0, 5'000, 900);  // launched before the window, holds the stream
  b.op("host_work", 50, 30);
  b.runtime("cudaMemcpyAsync", 100, 10, 1);                            // its copy lost the link
  b.runtime("cudaStreamSynchronize", 200, 4'820, 2);                   // returns at copy end + 10
  b.kernel("lost_link", 3'000, 100, 901, /*stream=*/8);                // issued before the sync
  b.gpu(trace::EventKind::kGpuMemcpy, "Memcpy HtoD", 5'000, 10, 902);  // awaited by the sync
  b.sync_record(SyncKind::kStreamSync, 200, 4'820, 2, 7);
  b.op("after_sync", 5'030, 5);
  b.runtime("cudaLaunchKernel", 5'040, 5, 3);  // later launches bound both streams' issue order
  b.kernel("next", 5'050, 10, 3);
  b.runtime("cudaLaunchKernel", 5'046, 5, 4);
  b.kernel("next_on_8", 5'100, 10, 4, /*stream=*/8);
  ExecutionGraph g = build({b.build()});
  const std::int32_t sync = find_task(g, 0, "cudaStreamSynchronize");
  const std::int32_t copy = find_task(g, 0, "Memcpy HtoD");
  const std::int32_t kernel = find_task(g, 0, "lost_link");
  // The copy pairs with the cudaMemcpyAsync whose correlation matches nothing (stream order and
  // time); the kernel, with no such call, is anchored.
  EXPECT_EQ(g.stats.gpu_tasks_paired, 1);
  EXPECT_EQ(g.stats.gpu_tasks_anchored, 1);
  for (std::uint32_t e = g.edge_begin[sync]; e < g.edge_begin[sync + 1]; ++e) {
    EXPECT_NE(g.edge_dst[e], copy) << "a blocked thread issued the copy";
    EXPECT_NE(g.edge_dst[e], kernel) << "a blocked thread issued the kernel";
  }
  ASSERT_NE(g.runtime_op[sync], graph::kNone);
  EXPECT_EQ(g.runtime_ops[g.runtime_op[sync]].tail_ns, 10);  // the sync waited for the copy
  const ReplayResult r = replay(g);
  expect_faithful(g, r);
  // What-if: the copy takes 1 µs longer, the sync returns 1 µs later (it waits for it).
  ExecutionGraph slower = g;
  slower.duration_ns[copy] += 1'000;
  const ReplayResult s = replay(slower);
  EXPECT_EQ(s.end_ns[sync], g.input_end_ns(sync) + 1'000);
}

TEST(Replay, StreamWaitWithoutAnyEventRecordUsesTheClosestLaunchOnAnotherStream) {
  RankTraceBuilder b;  // 2022 style: waits, no records, no cuda_sync
  b.runtime("cudaLaunchKernel", 0, 5, 1);
  b.runtime("cudaStreamWaitEvent", 15, 2, 3);
  b.runtime("cudaLaunchKernel", 20, 5, 4);
  b.kernel("k1", 4, 100, 1, 7).kernel("k4", 105, 10, 4, 20);
  ExecutionGraph g = build({b.build()});
  ASSERT_EQ(g.runtime_ops.size(), 1u);
  EXPECT_TRUE(g.runtime_ops[0].inferred);
  EXPECT_EQ(g.processors[g.runtime_ops[0].stream].tid, 7);
  expect_faithful(g, replay(g));
  g.duration_ns[find_task(g, 0, "k1")] = 200;
  EXPECT_EQ(replay(g).start_ns[find_task(g, 0, "k4")], 205);
}

TEST(Replay, StreamSyncRecordNamesTheStreamEvenWhenTheLastLaunchWasElsewhere) {
  RankTraceBuilder b;
  b.runtime("cudaLaunchKernel", 0, 5, 1).runtime("cudaLaunchKernel", 10, 5, 2);
  b.kernel("long", 5, 1000, 1, 7).kernel("short", 15, 10, 2, 20);
  b.runtime("cudaStreamSynchronize", 30, 977, 3);  // returns at 1007: waited for stream 7
  b.sync_record(SyncKind::kStreamSync, 30, 977, 3, 7);
  b.op("next", 1010, 5);
  ExecutionGraph g = build({b.build()});
  expect_faithful(g, replay(g));
  g.duration_ns[find_task(g, 0, "long")] = 2000;
  const ReplayResult r = replay(g);
  EXPECT_EQ(r.end_ns[find_task(g, 0, "cudaStreamSynchronize")], 2005 + 2);
}

TEST(Replay, DeviceSynchronizeWaitsForEveryStream) {
  RankTraceBuilder b;
  b.runtime("cudaLaunchKernel", 0, 5, 1).runtime("cudaLaunchKernel", 10, 5, 2);
  b.kernel("a", 5, 100, 1, 7).kernel("b", 15, 300, 2, 20);
  b.runtime("cudaDeviceSynchronize", 30, 287, 3);  // returns at 317 = b's end + 2
  ExecutionGraph g = build({b.build()});
  expect_faithful(g, replay(g));
  const std::int32_t sync = find_task(g, 0, "cudaDeviceSynchronize");
  g.duration_ns[find_task(g, 0, "a")] = 1000;
  ReplayResult r = replay(g);
  EXPECT_EQ(r.end_ns[sync], 1005 + 2);
  g.duration_ns[find_task(g, 0, "a")] = 100;
  g.duration_ns[find_task(g, 0, "b")] = 10;  // nothing left to wait for at the call: just the tail
  r = replay(g);
  EXPECT_EQ(r.end_ns[sync], 105 + 2);
}

TEST(Replay, EventSynchronizeWaitsForTheRecordedTask) {
  RankTraceBuilder b;
  b.runtime("cudaLaunchKernel", 0, 5, 1);
  b.runtime("cudaEventRecord", 10, 2, 2);
  b.runtime("cudaLaunchKernel", 20, 5, 3);
  b.runtime("cudaEventSynchronize", 30, 77, 4);  // returns at 107: k1 ends at 105
  b.sync_record(SyncKind::kEventSync, 30, 77, 4, -1, 7, 2);
  b.kernel("k1", 5, 100, 1, 7).kernel("k2", 105, 500, 3, 7);
  ExecutionGraph g = build({b.build()});
  expect_faithful(g, replay(g));
  g.duration_ns[find_task(g, 0, "k1")] = 200;
  EXPECT_EQ(replay(g).end_ns[find_task(g, 0, "cudaEventSynchronize")], 207);
}

TEST(Replay, BlockingCopyWaitsForItsOwnCopy) {
  RankTraceBuilder b;
  b.runtime("cudaMemcpy", 0, 60, 1);  // returns 2 ns after its copy
  b.gpu(trace::EventKind::kGpuMemcpy, "Memcpy DtoH", 8, 50, 1);
  b.op("next", 62, 5);
  ExecutionGraph g = build({b.build()});
  expect_faithful(g, replay(g));
  g.duration_ns[find_task(g, 0, "Memcpy DtoH")] = 500;
  const ReplayResult r = replay(g);
  EXPECT_EQ(r.end_ns[find_task(g, 0, "cudaMemcpy")], 510);
  EXPECT_EQ(r.start_ns[find_task(g, 0, "next")], 512);
}

// Rank 1 reaches the all-reduce 700 ns after rank 0; rank 0's kernel spans the wait.
std::vector<trace::RankTrace> late_rank_pair() {
  RankTraceBuilder r0(0, 2), r1(1, 2);
  r0.runtime("cudaLaunchKernel", 0, 5, 1).nccl_kernel("ncclKernel_AllReduce", 10, 1000, 1, 20);
  r0.runtime("cudaStreamSynchronize", 20, 992, 2)
      .sync_record(SyncKind::kStreamSync, 20, 992, 2, 20);
  r1.op("slow_op", 0, 700);
  r1.runtime("cudaLaunchKernel", 700, 5, 1).nccl_kernel("ncclKernel_AllReduce", 710, 303, 1, 20);
  return {r0.build(), r1.build()};
}

TEST(Replay, CollectiveEndsTogetherOnAllRanksAfterTheLastArrivalPlusTheShortestDuration) {
  ExecutionGraph g = build(late_rank_pair());
  ASSERT_EQ(g.collectives.size(), 1u);
  ASSERT_TRUE(g.collectives[0].joined);
  const std::int32_t c0 = g.collective_members[0], c1 = g.collective_members[1];
  ReplayResult r = replay(g);
  EXPECT_EQ(r.start_ns[c0], 10);
  EXPECT_EQ(r.start_ns[c1], 710);
  EXPECT_EQ(r.end_ns[c0], 710 + 303);  // wire time = rank 1's shorter 303 ns
  EXPECT_EQ(r.end_ns[c1], r.end_ns[c0]);
  EXPECT_EQ(r.critical_pred[c0], c1);
  EXPECT_EQ(r.collectives_joined, 1);

  g.duration_ns[find_task(g, 1, "slow_op")] = 200;  // rank 1 arrives 500 ns earlier
  r = replay(g);
  EXPECT_EQ(r.end_ns[c0], 210 + 303);
  EXPECT_EQ(r.end_ns[c1], 210 + 303);
  // Rank 0's synchronize follows the collective.
  EXPECT_EQ(r.end_ns[find_task(g, 0, "cudaStreamSynchronize")], 210 + 303 + 2);

  ReplayOptions measured;
  measured.join_collectives = false;
  r = replay(g, measured);
  EXPECT_EQ(r.end_ns[c0], 10 + 1000);
  EXPECT_EQ(r.collectives_measured, 2);
}

TEST(Replay, BandwidthLatencyWireTimeWhenTold) {
  std::vector<trace::RankTrace> traces = late_rank_pair();
  for (trace::RankTrace& t : traces) {
    trace::CollectiveInfo info;
    info.name = "allreduce";
    info.in_elements = info.out_elements = 1000;
    info.element_bytes = 4;
    t.collectives.push_back(info);
    for (trace::TraceEvent& e : t.events) {
      if (e.nccl) e.collective = 0;
    }
  }
  const ExecutionGraph g = build(traces);
  ReplayOptions options;
  options.collective_time = ReplayOptions::CollectiveTime::kBandwidthLatency;
  options.bus_bandwidth_gb_s = 4.0;  // 4000 B × 2(n−1)/n = 4000 B at 4 GB/s = 1000 ns
  options.collective_latency_s = 50e-9;
  const ReplayResult r = replay(g, options);
  EXPECT_EQ(r.end_ns[g.collective_members[0]], 710 + 1050);
}

TEST(Replay, MismatchedCollectiveOrderIsReleasedInsteadOfDeadlocking) {
  // Rank 0 runs group A then B on one stream, rank 1 runs B then A: a real deadlock.
  RankTraceBuilder r0(0, 2), r1(1, 2);
  r0.runtime("cudaLaunchKernel", 0, 5, 1).runtime("cudaLaunchKernel", 10, 5, 2);
  r0.nccl_kernel("ncclKernel_AllReduce", 5, 50, 1, 20, "A", 0);
  r0.nccl_kernel("ncclKernel_AllReduce", 60, 50, 2, 20, "B", 0);
  r1.runtime("cudaLaunchKernel", 0, 5, 1).runtime("cudaLaunchKernel", 10, 5, 2);
  r1.nccl_kernel("ncclKernel_AllReduce", 5, 50, 1, 20, "B", 0);
  r1.nccl_kernel("ncclKernel_AllReduce", 60, 50, 2, 20, "A", 0);
  const ExecutionGraph g = build({r0.build(), r1.build()});
  const ReplayResult r = replay(g);
  EXPECT_EQ(r.outcome, ReplayOutcome::kComplete);
  EXPECT_GE(r.collectives_forced, 1);
  ASSERT_FALSE(r.warnings.empty());
  EXPECT_EQ(r.warnings[0].kind, "deadlock: collective join released");
  EXPECT_EQ(r.released[static_cast<int>(ReleasedKind::kCollectiveJoin)], r.collectives_forced);
  EXPECT_EQ(r.stalled_tasks, 0);
}

// A blocking copy whose copy sits behind work the same thread launches only after the call: the
// call waits for the copy, the copy for the later launch, the launch for the call. With the
// input check disabled the graph keeps that cycle; the replay releases the copy's wait (the call
// ends at its measured duration) and loses nothing, and the timing stays the measured one.
TEST(Replay, DeadlockOnABlockingCopyIsReleasedAndNoTaskIsLost) {
  RankTraceBuilder b;
  b.runtime("cudaMemcpy", 0, 50, 1);
  b.runtime("cudaLaunchKernel", 60, 4, 2);
  b.gpu(trace::EventKind::kKernel, "j", 65, 5, 2);
  b.gpu(trace::EventKind::kGpuMemcpy, "Memcpy DtoH", 75, 5, 1);
  b.op("after", 90, 10);
  graph::GraphOptions options;
  options.contradiction_tolerance_ns = 1'000'000;  // keep the contradicting sync
  auto built = graph::build_execution_graph({b.build()}, options);
  ASSERT_TRUE(built.ok());
  const ExecutionGraph& g = *built;
  ASSERT_NE(g.runtime_op[find_task(g, 0, "cudaMemcpy")], graph::kNone);
  const ReplayResult r = replay(g);
  EXPECT_EQ(r.stalled_tasks, 0);
  EXPECT_EQ(r.released[static_cast<int>(ReleasedKind::kBlockingCopy)], 1);
  EXPECT_EQ(r.released_total(), 1);
  EXPECT_EQ(r.released_shift_ns, 0);
  expect_faithful(g, r);
}

TEST(Replay, CriticalPathFollowsTheBindingDependencies) {
  RankTraceBuilder b;
  b.op("setup", 0, 10);
  b.runtime("cudaLaunchKernel", 12, 5, 1);
  b.kernel("gemm", 15, 1000, 1);
  b.runtime("cudaStreamSynchronize", 20, 997, 2).sync_record(SyncKind::kStreamSync, 20, 997, 2, 7);
  b.op("after", 1020, 10);
  const ExecutionGraph g = build({b.build()});
  const ReplayResult r = replay(g);
  const CriticalPath path = critical_path(g, r);
  std::vector<std::string> names;
  for (std::int32_t v : path.tasks) names.push_back(g.task_name(v));
  EXPECT_EQ(names, (std::vector<std::string>{"setup", "cudaLaunchKernel", "gemm",
                                             "cudaStreamSynchronize", "after"}));
  EXPECT_EQ(path.length_ns, 1030);
  EXPECT_EQ(path.gpu_compute_ns, 1000);
}

TEST(Replay, IsDeterministic) {
  test_support::SyntheticJobSpec spec;
  spec.ranks = 3;
  const ExecutionGraph g = build(test_support::make_synthetic_job(spec));
  const ReplayResult a = replay(g), b = replay(g);
  EXPECT_EQ(a.start_ns, b.start_ns);
  EXPECT_EQ(a.end_ns, b.end_ns);
  EXPECT_EQ(a.critical_pred, b.critical_pred);
}

// The synthetic job is generated with the hardware's rules (joins included), so an unchanged
// replay must reproduce it to the nanosecond, on every rank.
TEST(Replay, UnchangedSyntheticJobReplaysExactly) {
  for (bool records : {true, false}) {
    test_support::SyntheticJobSpec spec;
    spec.ranks = 4;
    spec.steps = 3;
    spec.sync_records = records;
    const ExecutionGraph g = build(test_support::make_synthetic_job(spec));
    EXPECT_EQ(g.stats.collective_groups_joined, spec.steps * spec.layers);
    const ReplayResult r = replay(g);
    expect_faithful(g, r);
    const StepMetrics in = metrics_of_input(g), out = metrics_of_replay(g, r);
    const ReplayAccuracy accuracy = compare_replay(g, r, in, out);
    EXPECT_EQ(accuracy.job_step_time_error_pct, 0.0);
    EXPECT_EQ(accuracy.max_collective_end_spread_replay_ns, 0);
  }
}

// A what-if that slows one rank's host down: every collective still ends at the same time on all
// ranks, and the other ranks' steps get longer because they wait for it.
TEST(Replay, SlowRankDelaysEveryRankThroughCollectives) {
  test_support::SyntheticJobSpec spec;
  spec.ranks = 4;
  spec.rank_skew = 0.0;
  ExecutionGraph g = build(test_support::make_synthetic_job(spec));
  const StepMetrics before = metrics_of_replay(g, replay(g));
  for (std::int32_t v = g.ranks[3].first_task; v < g.ranks[3].end_task; ++v) {
    if (!graph::is_gpu(g.kind[v])) g.duration_ns[v] *= 5;
  }
  const ReplayResult r = replay(g);
  const StepMetrics after = metrics_of_replay(g, r);
  EXPECT_EQ(compare_replay(g, r, before, after).max_collective_end_spread_replay_ns, 0);
  for (std::size_t rank = 0; rank < 4; ++rank) {
    EXPECT_GT(after.ranks[rank].step_time_ns, before.ranks[rank].step_time_ns * 1.05) << rank;
  }
}

}  // namespace
}  // namespace powertrain::sim
