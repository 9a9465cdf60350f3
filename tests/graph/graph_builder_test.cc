// The graph builder: which events become tasks, the dependency kinds and their lags, bad input.
#include "graph/graph_builder.h"

#include <gtest/gtest.h>

#include <optional>

#include "graph/trace_builder.h"

namespace powertrain::graph {
namespace {

using trace::EventKind;
using trace::SyncKind;

// The out-edge of `src` to `dst`, if any.
struct EdgeView {
  EdgeKind kind;
  std::int64_t lag_ns;
};
std::optional<EdgeView> edge(const ExecutionGraph& g, std::int32_t src, std::int32_t dst) {
  for (std::uint32_t e = g.edge_begin[src]; e < g.edge_begin[src + 1]; ++e) {
    if (g.edge_dst[e] == dst) return EdgeView{g.edge_kind[e], g.edge_lag_ns[e]};
  }
  return std::nullopt;
}

ExecutionGraph build(std::vector<trace::RankTrace> traces, const GraphOptions& options = {}) {
  auto graph = build_execution_graph(traces, options);
  EXPECT_TRUE(graph.ok()) << graph.error().message;
  return std::move(graph).value();
}

TEST(GraphBuilder, OnlyLeavesAreTasksAndParentsSpanThem) {
  RankTraceBuilder b;
  b.op("aten::linear", 0, 100);              // parent
  b.runtime("cudaLaunchKernel", 10, 20, 1);  // leaf
  b.op("aten::view", 40, 30);                // leaf
  b.op("aten::relu", 200, 50);               // leaf (no children)
  b.kernel("sgemm", 15, 80, 1);
  const ExecutionGraph g = build({b.build()});
  EXPECT_EQ(g.stats.cpu_tasks, 3);
  EXPECT_EQ(g.stats.gpu_tasks, 1);
  EXPECT_EQ(find_task(g, 0, "aten::linear"), kNone);
  ASSERT_EQ(g.parents.size(), 1u);
  const ParentSpan& span = g.parents[0];
  EXPECT_EQ(g.ranks[0].names[span.name], "aten::linear");
  EXPECT_EQ(span.first_leaf, find_task(g, 0, "cudaLaunchKernel"));
  EXPECT_EQ(span.last_leaf, find_task(g, 0, "aten::view"));
  EXPECT_EQ(span.lead_ns, 10);   // parent starts 10 ns before its first leaf
  EXPECT_EQ(span.trail_ns, 30);  // and ends 30 ns after its last leaf (70 → 100)
}

TEST(GraphBuilder, ThreadOrderKeepsTheMeasuredGaps) {
  RankTraceBuilder b;
  b.op("a", 0, 10).op("b", 25, 5).op("c", 31, 4);
  const ExecutionGraph g = build({b.build()});
  const std::int32_t a = find_task(g, 0, "a"), bb = find_task(g, 0, "b"), c = find_task(g, 0, "c");
  ASSERT_TRUE(edge(g, a, bb));
  EXPECT_EQ(edge(g, a, bb)->kind, EdgeKind::kThreadOrder);
  EXPECT_EQ(edge(g, a, bb)->lag_ns, 15);
  EXPECT_EQ(edge(g, bb, c)->lag_ns, 1);
  EXPECT_FALSE(edge(g, a, c));
}

TEST(GraphBuilder, LaunchEdgeIsAnchoredAtTheLaunchStartWithItsMeasuredDelay) {
  RankTraceBuilder b;
  b.runtime("cudaLaunchKernel", 100, 10, 42);
  b.kernel("k", 104, 50, 42);
  b.kernel("orphan", 500, 10, 999);  // no launch with correlation 999
  const ExecutionGraph g = build({b.build()});
  const std::int32_t launch = find_task(g, 0, "cudaLaunchKernel");
  const std::int32_t k = find_task(g, 0, "k");
  ASSERT_TRUE(edge(g, launch, k));
  EXPECT_EQ(edge(g, launch, k)->kind, EdgeKind::kLaunch);
  EXPECT_EQ(edge(g, launch, k)->lag_ns, 4);
  EXPECT_EQ(g.stats.gpu_tasks_without_launch, 1);
  ASSERT_FALSE(g.warnings.empty());
  EXPECT_EQ(g.warnings[0].kind, "GPU task without launch");
  EXPECT_NE(g.warnings[0].example.find("999"), std::string::npos);
}

// GPU work without a launch is anchored to the host leaf running when it must have been issued:
// no later than its start and than the launch of the next launched task on its stream (FIFO).
// Work that starts before any host activity was launched before the window and stays free.
TEST(GraphBuilder, WorkWithoutLaunchIsAnchoredByStreamOrderAndTimeNesting) {
  RankTraceBuilder b;
  b.kernel("before_window", 0, 300, 900);  // running when the window opened
  b.runtime("cudaLaunchKernel", 100, 10, 1);
  b.op("host_work", 120, 30);
  b.runtime("cudaLaunchKernel", 160, 10, 2);
  b.kernel("k1", 300, 50, 1);
  b.gpu(trace::EventKind::kGpuMemcpy, "Memcpy DtoD", 350, 20, 901);  // issued before k2's launch
  b.kernel("k2", 370, 50, 2);
  const ExecutionGraph g = build({b.build()});
  const std::int32_t copy = find_task(g, 0, "Memcpy DtoD");
  const std::int32_t host = find_task(g, 0, "host_work");
  ASSERT_TRUE(edge(g, host, copy));
  EXPECT_EQ(edge(g, host, copy)->kind, EdgeKind::kAnchor);
  EXPECT_EQ(g.stats.gpu_tasks_without_launch, 2);
  EXPECT_EQ(g.stats.gpu_tasks_anchored, 1);
  const std::int32_t early = find_task(g, 0, "before_window");
  for (std::uint32_t e = 0; e < g.edge_dst.size(); ++e) EXPECT_NE(g.edge_dst[e], early);
}

// cudaMemcpyAsync to pageable memory blocks: a call that returned after its copy ended is a
// blocking copy (the host waits for the copy); one that returned before it is not.
TEST(GraphBuilder, AsyncCopyThatOutlastedItsCopyIsABlockingCopy) {
  RankTraceBuilder b;
  b.runtime("cudaMemcpyAsync", 0, 200, 1);
  b.gpu(trace::EventKind::kGpuMemcpy, "Memcpy DtoH", 150, 40, 1);
  b.runtime("cudaMemcpyAsync", 300, 10, 2);
  b.gpu(trace::EventKind::kGpuMemcpy, "Memcpy HtoD", 320, 40, 2);
  const ExecutionGraph g = build({b.build()});
  const std::int32_t blocking = find_task(g, 0, "cudaMemcpyAsync");
  const std::int32_t async = find_task(g, 0, "cudaMemcpyAsync", blocking + 1);
  ASSERT_NE(g.runtime_op[blocking], graph::kNone);
  EXPECT_EQ(g.runtime_ops[g.runtime_op[blocking]].kind, graph::RuntimeOpKind::kSyncCopy);
  EXPECT_EQ(g.runtime_ops[g.runtime_op[blocking]].tail_ns, 10);
  EXPECT_EQ(g.runtime_op[async], graph::kNone);
  EXPECT_EQ(g.stats.blocking_async_copies, 1);
}

TEST(GraphBuilder, QueuedKernelKeepsItsStreamGapNotItsLaunchDelay) {
  RankTraceBuilder b;
  b.runtime("cudaLaunchKernel", 0, 5, 1).runtime("cudaLaunchKernel", 10, 5, 2);
  b.runtime("cudaLaunchKernel", 20, 5, 3);
  b.kernel("k1", 3, 100, 1).kernel("k2", 105, 50, 2).kernel("k3", 157, 50, 3);
  const ExecutionGraph g = build({b.build()});
  const std::int32_t k1 = find_task(g, 0, "k1"), k2 = find_task(g, 0, "k2");
  const std::int32_t l2 =
      find_task(g, 0, "cudaLaunchKernel", find_task(g, 0, "cudaLaunchKernel") + 1);
  EXPECT_EQ(edge(g, k1, k2)->kind, EdgeKind::kStreamOrder);
  EXPECT_EQ(edge(g, k1, k2)->lag_ns, 2);  // binding: k2 waited for k1
  // Not binding: the launch keeps the rank's median launch delay (only k1's 3 ns was binding).
  EXPECT_EQ(g.ranks[0].default_launch_lag_ns, 3);
  EXPECT_EQ(edge(g, l2, k2)->lag_ns, 3);
}

TEST(GraphBuilder, CrossThreadRuleLinksATaskAfterAGapToAnotherThread) {
  RankTraceBuilder b;
  b.op("forward", 0, 100, /*tid=*/1);
  b.op("backward", 150, 400, /*tid=*/2);   // first on its thread, after forward ended
  b.op("optimizer", 1000, 10, /*tid=*/1);  // 900 ns idle on thread 1; backward ended at 550
  GraphOptions options;
  options.cross_thread_gap_ns = 200;
  const ExecutionGraph g = build({b.build()}, options);
  const std::int32_t fwd = find_task(g, 0, "forward"), bwd = find_task(g, 0, "backward"),
                     opt = find_task(g, 0, "optimizer");
  ASSERT_TRUE(edge(g, fwd, bwd));
  EXPECT_EQ(edge(g, fwd, bwd)->kind, EdgeKind::kCrossThread);
  EXPECT_EQ(edge(g, fwd, bwd)->lag_ns, 50);
  ASSERT_TRUE(edge(g, bwd, opt));
  EXPECT_EQ(edge(g, bwd, opt)->kind, EdgeKind::kCrossThread);
  EXPECT_EQ(edge(g, bwd, opt)->lag_ns, 450);  // binding: the latest anchor
  EXPECT_EQ(edge(g, fwd, opt)->lag_ns, 0);    // thread order no longer carries the gap
}

TEST(GraphBuilder, StreamWaitFromACudaSyncRecordTargetsTheNextTaskOnTheWaitingStream) {
  RankTraceBuilder b;
  b.runtime("cudaLaunchKernel", 0, 5, 1);
  b.runtime("cudaEventRecord", 10, 2, 2);
  b.runtime("cudaStreamWaitEvent", 15, 2, 3);
  b.sync_record(SyncKind::kStreamWaitEvent, 15, 1, 3, /*stream=*/20, /*wait_on_stream=*/7, 2);
  b.runtime("cudaLaunchKernel", 20, 5, 4);
  b.kernel("producer", 4, 100, 1, 7).kernel("consumer", 106, 10, 4, 20);
  const ExecutionGraph g = build({b.build()});
  ASSERT_EQ(g.runtime_ops.size(), 2u);
  const RuntimeOp& record = g.runtime_ops[0];
  const RuntimeOp& wait = g.runtime_ops[1];
  EXPECT_EQ(record.kind, RuntimeOpKind::kEventRecord);
  EXPECT_FALSE(record.inferred);  // the wait's record names the stream
  EXPECT_EQ(g.processors[record.stream].tid, 7);
  EXPECT_EQ(wait.kind, RuntimeOpKind::kStreamWait);
  EXPECT_FALSE(wait.inferred);
  EXPECT_EQ(wait.record, 0);
  EXPECT_EQ(wait.target, find_task(g, 0, "consumer"));
  EXPECT_EQ(wait.lag_ns, 2);  // binding: consumer started 2 ns after producer ended
}

TEST(GraphBuilder, RuleBasedSyncContradictedByTheInputIsDropped) {
  RankTraceBuilder b;
  b.runtime("cudaLaunchKernel", 0, 5, 1);
  b.kernel("long", 5, 10'000, 1);
  // Returns at 50, long before the kernel ends: not a wait for this stream (wrong guess).
  b.runtime("cudaStreamSynchronize", 40, 10, 2);
  const ExecutionGraph g = build({b.build()});
  EXPECT_TRUE(g.runtime_ops.empty());
  EXPECT_EQ(g.stats.dropped_contradicted, 1);
}

TEST(GraphBuilder, ProfilerStepsAreKeptEvenWithoutParentSpans) {
  RankTraceBuilder b;
  b.step(1, 0, 100).op("a", 10, 10).step(2, 100, 100).op("b", 110, 10);
  GraphOptions options;
  options.keep_parent_spans = false;
  const ExecutionGraph g = build({b.build()}, options);
  ASSERT_EQ(g.ranks[0].profiler_steps.size(), 2u);
  EXPECT_EQ(g.parents.size(), 2u);
  EXPECT_EQ(g.parents[g.ranks[0].profiler_steps[1]].lead_ns, 10);
}

TEST(GraphBuilder, ProfilerStepsWrittenAsCpuOpsAreSteps) {
  // Older PyTorch writes ProfilerStep#N with cat "cpu_op"; the reader takes them as steps, so
  // must the step windows (before: the window fell back to first-to-last task).
  RankTraceBuilder b;
  b.host(EventKind::kCpuOp, "ProfilerStep#7", 0, 100).op("a", 10, 10);
  b.host(EventKind::kCpuOp, "ProfilerStep#8", 100, 100).op("b", 110, 10);
  const ExecutionGraph g = build({b.build()});
  ASSERT_EQ(g.ranks[0].profiler_steps.size(), 2u);
  EXPECT_EQ(g.parents[g.ranks[0].profiler_steps[0]].input_start_ns, 0);
  EXPECT_EQ(g.parents[g.ranks[0].profiler_steps[1]].input_duration_ns, 100);
}

TEST(GraphBuilder, UnsortedEventsAreSortedWithAWarning) {
  trace::RankTrace t = RankTraceBuilder().op("late", 100, 10).op("early", 0, 10).build();
  std::swap(t.events[0], t.events[1]);  // late first
  const ExecutionGraph g = build({t});
  EXPECT_LT(find_task(g, 0, "early"), find_task(g, 0, "late"));
  ASSERT_FALSE(g.warnings.empty());
  EXPECT_EQ(g.warnings[0].kind, "events not sorted by time");
}

TEST(GraphBuilder, RejectsNoTracesAndDuplicateRanks) {
  EXPECT_EQ(build_execution_graph({}).error().message, "execution graph: no traces");
  auto dup = build_execution_graph(
      {RankTraceBuilder(3, 4, "a.json").build(), RankTraceBuilder(3, 4, "b.json").build()});
  ASSERT_FALSE(dup.ok());
  EXPECT_EQ(dup.error().message, "execution graph: traces 'a.json' and 'b.json' are both rank 3");
}

TEST(GraphBuilder, CollectivesMatchByProcessGroupAndSequenceNotByPosition) {
  // Rank 1 sees the two groups' collectives in the opposite order; Seq decides, not position.
  RankTraceBuilder r0(0, 2), r1(1, 2);
  r0.runtime("cudaLaunchKernel", 0, 5, 1).runtime("cudaLaunchKernel", 10, 5, 2);
  r0.nccl_kernel("ncclKernel_AllReduce", 5, 50, 1, 20, "pg-a", 0);
  r0.nccl_kernel("ncclKernel_AllGather", 60, 50, 2, 21, "pg-b", 0);
  r1.runtime("cudaLaunchKernel", 0, 5, 1).runtime("cudaLaunchKernel", 10, 5, 2);
  r1.nccl_kernel("ncclKernel_AllGather", 5, 50, 1, 21, "pg-b", 0);
  r1.nccl_kernel("ncclKernel_AllReduce", 60, 50, 2, 20, "pg-a", 0);
  const ExecutionGraph g = build({r0.build(), r1.build()});
  ASSERT_EQ(g.collectives.size(), 2u);
  for (const CollectiveGroup& group : g.collectives) {
    EXPECT_TRUE(group.joined);
    ASSERT_EQ(group.member_count, 2);
    EXPECT_EQ(g.task_name(g.collective_members[group.first_member]),
              g.task_name(g.collective_members[group.first_member + 1]));
  }
  EXPECT_TRUE(g.warnings.empty());
}

TEST(GraphBuilder, CollectiveSeenOnOneRankOnlyIsCountedAndNotJoined) {
  RankTraceBuilder r0(0, 2), r1(1, 2);
  r0.runtime("cudaLaunchKernel", 0, 5, 1).runtime("cudaLaunchKernel", 100, 5, 2);
  r0.nccl_kernel("ncclKernel_AllReduce", 5, 50, 1, 20)
      .nccl_kernel("ncclKernel_AllReduce", 105, 50, 2, 20);
  r1.runtime("cudaLaunchKernel", 0, 5, 1);
  r1.nccl_kernel("ncclKernel_AllReduce", 5, 50, 1, 20);
  const ExecutionGraph g = build({r0.build(), r1.build()});
  ASSERT_EQ(g.collectives.size(), 2u);
  EXPECT_TRUE(g.collectives[0].joined);
  EXPECT_FALSE(g.collectives[1].joined);
  EXPECT_EQ(g.stats.collectives_measured, 1);
  ASSERT_EQ(g.warnings.size(), 2u);
  EXPECT_EQ(g.warnings[0].kind,
            "collectives matched across ranks by end time (a rank's trace lacks some)");
  EXPECT_EQ(g.warnings[1].kind, "unmatched collective (replayed with its measured duration)");
}

// Rank 1's trace lacks a collective (its window opened later, or the profiler lost the kernel)
// and its clock is 30 µs ahead: by plain order its n-th collective would join rank 0's n-th and
// every later join would pair different collectives. Matching by end time pairs the right ones.
TEST(GraphBuilder, CollectivesMissingOnARankAreMatchedByEndTime) {
  for (int missing : {0, 2}) {
    SCOPED_TRACE(missing);
    RankTraceBuilder r0(0, 2), r1(1, 2);
    const std::int64_t skew = 30'000;
    for (int i = 0; i < 4; ++i) {
      const std::int64_t t = 1'000'000 * i;
      r0.runtime("cudaLaunchKernel", t, 5, i + 1);
      r0.nccl_kernel("ncclKernel_AllReduce", t + 5'000, 200'000 - 1'000 * i, i + 1, 20);
      if (i == missing) continue;
      r1.runtime("cudaLaunchKernel", t + skew + 50'000, 5, i + 1);
      // Ends with rank 0's (+ skew, + a few µs of jitter), as NCCL members do.
      r1.nccl_kernel("ncclKernel_AllReduce", t + skew + 60'000, 145'000 - 1'000 * i + 3 * i, i + 1,
                     20);
    }
    const ExecutionGraph g = build({r0.build(), r1.build()});
    std::int64_t joined = 0;
    for (const CollectiveGroup& c : g.collectives) {
      if (!c.joined) continue;
      ++joined;
      const std::int32_t a = g.collective_members[c.first_member];
      const std::int32_t b = g.collective_members[c.first_member + 1];
      // The right pairs end together once rank 1's clock offset is removed.
      EXPECT_NEAR(static_cast<double>(g.input_end_ns(b) - g.input_end_ns(a)), 0.0, 10.0);
    }
    EXPECT_EQ(joined, 3);
  }
}

// Rank 1 recorded on a clock 1.5 ms ahead (another host): its collectives end 1.5 ms after rank
// 0's on the trace's clocks. Its measured times move onto rank 0's clock, so the joins do not
// turn the offset into waiting; ranks whose ends agree within 20 µs are left as they are.
TEST(GraphBuilder, RankClockOffsetIsRemovedByCollectiveEnds) {
  for (std::int64_t skew : {1'500'000, 5'000}) {
    SCOPED_TRACE(skew);
    RankTraceBuilder r0(0, 2), r1(1, 2);
    for (int i = 0; i < 3; ++i) {
      const std::int64_t t = 1'000'000 * i;
      r0.runtime("cudaLaunchKernel", t, 5, i + 1).step(i, t, 900'000);
      r0.nccl_kernel("ncclKernel_AllReduce", t + 5'000, 200'000, i + 1, 20);
      r1.runtime("cudaLaunchKernel", t + skew + 50'000, 5, i + 1).step(i, t + skew, 900'000);
      r1.nccl_kernel("ncclKernel_AllReduce", t + skew + 60'000, 145'000 + 2 * i, i + 1, 20);
    }
    const ExecutionGraph g = build({r0.build(), r1.build()});
    const std::int64_t moved = skew > 20'000 ? skew : 0;
    const std::int32_t first1 = g.ranks[1].first_task;
    // Within the collectives' few ns of end jitter.
    EXPECT_NEAR(static_cast<double>(g.input_start_ns[first1]), 50'000 + skew - moved, 10.0);
    EXPECT_NEAR(static_cast<double>(g.parents[g.ranks[1].profiler_steps[0]].input_start_ns),
                skew - moved, 10.0);
    EXPECT_EQ(g.input_start_ns[g.ranks[0].first_task], 0);
  }
}

// Rank 1's clock is 1.5 ms ahead, but one of its four collectives ends 4 ms after rank 0's (a
// clock step or a bad match): the median of the four offsets moves it by 1.5 ms, and a warning
// says that one collective disagrees, by 2.5 ms (issue 13: one match is not trusted blindly).
TEST(GraphBuilder, DisagreeingCollectiveClockOffsetsUseTheMedianAndWarn) {
  RankTraceBuilder r0(0, 2), r1(1, 2);
  const std::int64_t skew = 1'500'000;
  for (int i = 0; i < 4; ++i) {
    const std::int64_t t = 10'000'000 * i;
    const std::int64_t off = i == 2 ? 4'000'000 : skew;
    r0.runtime("cudaLaunchKernel", t, 5, i + 1).step(i, t, 9'000'000);
    r0.nccl_kernel("ncclKernel_AllReduce", t + 5'000, 200'000, i + 1, 20);
    r1.runtime("cudaLaunchKernel", t + skew + 50'000, 5, i + 1).step(i, t + skew, 9'000'000);
    // Ends at rank 0's end (205 µs) + its clock offset.
    r1.nccl_kernel("ncclKernel_AllReduce", t + skew + 60'000, 145'000 + off - skew, i + 1, 20);
  }
  const ExecutionGraph g = build({r0.build(), r1.build()});
  EXPECT_NEAR(static_cast<double>(g.input_start_ns[g.ranks[1].first_task]), 50'000, 10.0);
  const trace::TraceWarning* disagree = nullptr;
  for (const trace::TraceWarning& w : g.warnings) {
    if (w.kind == "collective ends disagree on a rank's clock offset (median used)") disagree = &w;
  }
  ASSERT_NE(disagree, nullptr);
  EXPECT_NE(disagree->example.find("1 of 4"), std::string::npos) << disagree->example;
  EXPECT_NE(disagree->example.find("2.500 ms"), std::string::npos) << disagree->example;
}

// A member written with a zero duration (a lost timestamp) has no wire time to join on: joined,
// it would end every member at the last arrival (0 wire time), well before their measured ends.
TEST(GraphBuilder, CollectiveWithAZeroDurationMemberIsReplayedMeasured) {
  RankTraceBuilder r0(0, 2), r1(1, 2);
  r0.runtime("cudaLaunchKernel", 0, 5, 1).nccl_kernel("ncclKernel_AllReduce", 20, 50, 1, 20);
  r1.runtime("cudaLaunchKernel", 0, 5, 1).nccl_kernel("ncclKernel_AllReduce", 5, 0, 1, 20);
  const ExecutionGraph g = build({r0.build(), r1.build()});
  ASSERT_EQ(g.collectives.size(), 1u);
  EXPECT_FALSE(g.collectives[0].joined);  // rank 1's ended (5) before rank 0's started (20)
  // A zero-length last arrival (a zero-time transfer) is consistent and joins.
  RankTraceBuilder q0(0, 2), q1(1, 2);
  q0.runtime("cudaLaunchKernel", 0, 5, 1).nccl_kernel("ncclKernel_AllReduce", 5, 50, 1, 20);
  q1.runtime("cudaLaunchKernel", 0, 5, 1).nccl_kernel("ncclKernel_AllReduce", 55, 0, 1, 20);
  EXPECT_TRUE(build({q0.build(), q1.build()}).collectives[0].joined);
  EXPECT_EQ(g.stats.collectives_measured, 2);
  ASSERT_FALSE(g.warnings.empty());
  EXPECT_EQ(g.warnings[0].kind,
            "collective with a zero-duration member (replayed with measured durations)");
}

TEST(GraphBuilder, OneRankOfALargerJobReplaysItsCollectivesMeasured) {
  RankTraceBuilder r(5, 8);
  r.runtime("cudaLaunchKernel", 0, 5, 1).nccl_kernel("ncclKernel_AllReduce", 5, 50, 1, 20);
  const ExecutionGraph g = build({r.build()});
  ASSERT_EQ(g.collectives.size(), 1u);
  EXPECT_FALSE(g.collectives[0].joined);
  EXPECT_EQ(g.collectives[0].expected_members, 8);
  EXPECT_TRUE(g.warnings.empty());  // peers are simply not in the input
}

}  // namespace
}  // namespace powertrain::graph
