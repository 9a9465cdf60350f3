// Which stream a cudaEventSynchronize waits for when no cuda_sync record names it (issue 13):
// the event's record took the thread's current stream by rule, wrong when the event is recorded
// on the NCCL stream after compute work was launched; the sync call's own timing says which
// stream's work it waited for.
#include <gtest/gtest.h>

#include "graph/graph_builder.h"
#include "graph/trace_builder.h"
#include "sim/simulator.h"

namespace powertrain::graph {
namespace {

constexpr std::int64_t kUs = 1000;

// Host thread (µs): launch comm (stream 13, kernel 10–200), launch comp (stream 7, kernel
// 12–300), [record event 9], cudaEventSynchronize(event 9) from 16 to 205 (it returned 5 µs
// after the comm kernel ended), then an op at 206.
trace::RankTrace nccl_event_sync(bool with_record) {
  RankTraceBuilder b;
  b.runtime("cudaLaunchKernel", 0, 5 * kUs, 1);
  b.nccl_kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 10 * kUs, 190 * kUs, 1, 13);
  b.runtime("cudaLaunchKernel", 6 * kUs, 5 * kUs, 2);
  b.kernel("gemm", 12 * kUs, 288 * kUs, 2, 7);
  if (with_record) {
    b.runtime("cudaEventRecord", 12 * kUs, 3 * kUs, 3);
    b.last().cuda_event = 9;
  }
  b.runtime("cudaEventSynchronize", 16 * kUs, 189 * kUs, 4);
  b.last().cuda_event = 9;
  b.op("after", 206 * kUs, 10 * kUs);
  return b.build();
}

void expect_waits_for_the_nccl_kernel(bool with_record) {
  auto built = build_execution_graph({nccl_event_sync(with_record)});
  ASSERT_TRUE(built.ok()) << built.error().message;
  ExecutionGraph& g = *built;
  EXPECT_EQ(g.stats.dropped_contradicted, 0);  // was 1: the rule's gemm ended after the return
  const std::int32_t sync = find_task(g, 0, "cudaEventSynchronize");
  const std::int32_t nccl = find_task(g, 0, "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
  const std::int32_t after = find_task(g, 0, "after");
  ASSERT_NE(sync, kNone);
  ASSERT_NE(g.runtime_op[sync], kNone);
  const RuntimeOp& op = g.runtime_ops[g.runtime_op[sync]];
  EXPECT_EQ(op.kind, RuntimeOpKind::kEventSync);
  if (with_record) {
    ASSERT_NE(op.record, kNone);
    EXPECT_EQ(g.runtime_ops[op.record].stream, g.processor[nccl]);
  } else {
    EXPECT_EQ(op.record, kNone);
    EXPECT_EQ(op.stream, g.processor[nccl]);
  }
  EXPECT_EQ(op.tail_ns, 5 * kUs);
  sim::ReplayResult r = sim::replay(g);
  EXPECT_EQ(r.stalled_tasks, 0);
  EXPECT_EQ(r.start_ns[after], 206 * kUs);
  // The all-reduce 90 µs shorter: the host goes on 90 µs earlier (a dropped wait kept 206 µs).
  g.duration_ns[nccl] -= 90 * kUs;
  r = sim::replay(g);
  EXPECT_EQ(r.start_ns[after], 116 * kUs);
}

TEST(EventSyncStreams, RecordOnTheNcclStreamAfterComputeLaunchesIsFoundByTheSync) {
  expect_waits_for_the_nccl_kernel(true);
}

TEST(EventSyncStreams, WithoutARecordTheSyncWaitsForTheWorkThatEndedInsideIt) {
  expect_waits_for_the_nccl_kernel(false);
}

}  // namespace
}  // namespace powertrain::graph
