// Records the trace links by nothing but time (issue 13): cuda_sync records whose call is missing
// or lost its correlation, and GPU work next to launch calls whose correlations disagree with it.
#include <gtest/gtest.h>

#include <optional>

#include "graph/graph_builder.h"
#include "graph/trace_builder.h"
#include "sim/metrics.h"
#include "sim/simulator.h"

namespace powertrain::graph {
namespace {

using trace::SyncKind;

ExecutionGraph build(std::vector<trace::RankTrace> traces) {
  auto graph = build_execution_graph(traces);
  EXPECT_TRUE(graph.ok()) << graph.error().message;
  return std::move(graph).value();
}

std::optional<EdgeKind> edge_kind(const ExecutionGraph& g, std::int32_t src, std::int32_t dst) {
  for (std::uint32_t e = g.edge_begin[src]; e < g.edge_begin[src + 1]; ++e) {
    if (g.edge_dst[e] == dst) return g.edge_kind[e];
  }
  return std::nullopt;
}

void expect_exact(const ExecutionGraph& g, const sim::ReplayResult& r) {
  EXPECT_EQ(r.stalled_tasks, 0);
  EXPECT_EQ(r.tasks_run, g.task_count());
  for (std::int32_t t = 0; t < g.task_count(); ++t) {
    EXPECT_EQ(r.start_ns[t], g.input_start_ns[t]) << g.task_name(t);
    EXPECT_EQ(r.end_ns[t], g.input_end_ns(t)) << g.task_name(t);
  }
}

// loss.item() without its cudaStreamSynchronize call: the record (41..106) sits inside the op
// after the launch. It becomes the host wait: an unchanged replay is exact, and when k1 gets
// shorter the host goes on earlier (with the wait lost, after_sync would stay at 110).
TEST(UnlinkedRecords, SyncRecordWithoutItsCallBecomesTheHostWait) {
  RankTraceBuilder b;
  b.op("aten::_local_scalar_dense", 0, 130);
  b.runtime("cudaLaunchKernel", 0, 5, 1);
  b.kernel("k1", 5, 100, 1);
  b.sync_record(SyncKind::kStreamSync, 41, 65, /*correlation=*/2, /*stream=*/7);
  b.op("after_sync", 110, 10);
  ExecutionGraph g = build({b.build()});
  const std::int32_t wait = find_task(g, 0, "Stream Sync");
  ASSERT_NE(wait, kNone);
  ASSERT_NE(g.runtime_op[wait], kNone);
  const RuntimeOp& op = g.runtime_ops[g.runtime_op[wait]];
  EXPECT_EQ(op.kind, RuntimeOpKind::kStreamSync);
  EXPECT_FALSE(op.inferred);
  EXPECT_EQ(op.tail_ns, 1);  // the record ends 1 ns after k1
  expect_exact(g, sim::replay(g));

  g.duration_ns[find_task(g, 0, "k1")] = 50;  // k1 ends at 55
  const sim::ReplayResult r = sim::replay(g);
  EXPECT_EQ(r.end_ns[wait], 56);
  EXPECT_EQ(r.start_ns[find_task(g, 0, "after_sync")], 60);  // the measured 4 ns gap after it
}

// A context sync recorded only by its record, with no op around it: placed on the thread that
// was last active before it.
TEST(UnlinkedRecords, ContextSyncRecordOutsideAnyOpIsPlacedOnTheLastActiveThread) {
  RankTraceBuilder b;
  b.op("idle_thread_work", 0, 2, /*tid=*/4);
  b.runtime("cudaLaunchKernel", 3, 5, 1, /*tid=*/3);
  b.kernel("k1", 8, 100, 1);
  b.sync_record(SyncKind::kContextSync, 20, 90, 2, /*stream=*/-1);
  b.op("after_sync", 115, 10, 3);
  ExecutionGraph g = build({b.build()});
  const std::int32_t wait = find_task(g, 0, "Context Sync");
  ASSERT_NE(wait, kNone);
  EXPECT_EQ(g.processors[g.processor[wait]].tid, 3);
  ASSERT_NE(g.runtime_op[wait], kNone);
  EXPECT_EQ(g.runtime_ops[g.runtime_op[wait]].kind, RuntimeOpKind::kContextSync);
  expect_exact(g, sim::replay(g));
  g.duration_ns[find_task(g, 0, "k1")] = 40;  // ends at 48: the wait ends at 50, host at 55
  const sim::ReplayResult r = sim::replay(g);
  EXPECT_EQ(r.start_ns[find_task(g, 0, "after_sync")], 55);
}

// The call is there but lost its correlation; its record (inside it in time) names stream 20,
// where the rule (the thread's last launch) would guess stream 7.
TEST(UnlinkedRecords, SyncCallWithoutCorrelationTakesTheRecordInsideIt) {
  RankTraceBuilder b;
  b.runtime("cudaLaunchKernel", 0, 5, 1, /*tid=*/2);
  b.gpu(trace::EventKind::kKernel, "side", 10, 200, 1, /*stream=*/20);
  b.runtime("cudaLaunchKernel", 20, 5, 3, /*tid=*/1);
  b.kernel("main", 30, 20, 3);
  b.runtime("cudaStreamSynchronize", 40, 175, /*correlation=*/-1, 1);
  b.sync_record(SyncKind::kStreamSync, 41, 173, 9, /*stream=*/20);
  b.op("after_sync", 220, 10, 1);
  ExecutionGraph g = build({b.build()});
  const std::int32_t call = find_task(g, 0, "cudaStreamSynchronize");
  ASSERT_NE(call, kNone);
  ASSERT_NE(g.runtime_op[call], kNone);
  const RuntimeOp& op = g.runtime_ops[g.runtime_op[call]];
  EXPECT_FALSE(op.inferred);
  EXPECT_EQ(g.processors[op.stream].tid, 20);
  EXPECT_EQ(find_task(g, 0, "Stream Sync"), kNone);  // attached, not a task of its own
  expect_exact(g, sim::replay(g));
}

// Launch calls whose correlations match no GPU record, and GPU records whose correlations match
// no call: paired by stream FIFO order and time, a graph launch's kernels (one correlation) with
// one call, a copy with a copy call.
TEST(UnlinkedRecords, OrphanLaunchesArePairedWithWorkWithoutLaunchByStreamOrder) {
  RankTraceBuilder b;
  b.runtime("cudaLaunchKernel", 100, 10, 1);
  b.runtime("cudaMemcpyAsync", 120, 10, 2);
  b.runtime("cudaGraphLaunch", 140, 10, 3);
  b.runtime("cudaLaunchKernel", 160, 10, 4);
  b.kernel("a", 105, 100, 901);  // runs first; the stream is then busy
  b.gpu(trace::EventKind::kGpuMemcpy, "Memcpy HtoD", 205, 10, 902);
  b.kernel("g1", 215, 10, 903);
  b.kernel("g2", 225, 10, 903);
  b.kernel("b", 235, 10, 904);
  ExecutionGraph g = build({b.build()});
  EXPECT_EQ(g.stats.gpu_tasks_without_launch, 5);
  EXPECT_EQ(g.stats.gpu_tasks_paired, 5);
  EXPECT_EQ(g.stats.gpu_tasks_anchored, 0);
  const auto launch = [&](std::int64_t start) {
    for (std::int32_t t = 0; t < g.task_count(); ++t) {
      if (g.kind[t] == TaskKind::kCpu && g.input_start_ns[t] == start) return t;
    }
    return kNone;
  };
  EXPECT_EQ(edge_kind(g, launch(100), find_task(g, 0, "a")), EdgeKind::kLaunch);
  EXPECT_EQ(edge_kind(g, launch(120), find_task(g, 0, "Memcpy HtoD")), EdgeKind::kLaunch);
  EXPECT_EQ(edge_kind(g, launch(140), find_task(g, 0, "g1")), EdgeKind::kLaunch);
  EXPECT_EQ(edge_kind(g, launch(140), find_task(g, 0, "g2")), EdgeKind::kLaunch);
  EXPECT_EQ(edge_kind(g, launch(160), find_task(g, 0, "b")), EdgeKind::kLaunch);
  expect_exact(g, sim::replay(g));
  // A faster host launches b earlier, but it still waits for its stream.
  g.duration_ns[find_task(g, 0, "a")] = 20;  // a ends at 125
  const sim::ReplayResult r = sim::replay(g);
  EXPECT_EQ(r.start_ns[find_task(g, 0, "Memcpy HtoD")], 125);
}

// Work whose correlation matches nothing and no orphan call that can have issued it (a kernel
// next to a copy call only): not paired, anchored by time nesting as before.
TEST(UnlinkedRecords, WorkIsNotPairedWithACallOfAnotherKind) {
  RankTraceBuilder b;
  b.runtime("cudaLaunchKernel", 100, 10, 1);
  b.runtime("cudaMemsetAsync", 120, 10, 2);
  b.kernel("a", 105, 100, 1);
  b.kernel("b", 205, 10, 902);
  const ExecutionGraph g = build({b.build()});
  EXPECT_EQ(g.stats.gpu_tasks_paired, 0);
  EXPECT_EQ(g.stats.gpu_tasks_anchored, 1);
}

}  // namespace
}  // namespace powertrain::graph
