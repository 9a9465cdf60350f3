// Chrome-trace "B"/"E" duration pairs (written by exporters other than Kineto) are read as the
// "X" events they describe; unmatched halves are counted, never replayed; other backends' runtime
// categories are named in a warning (issue 13).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "trace/kineto_reader.h"

namespace powertrain::trace {
namespace {

std::string document(const std::vector<std::string>& events) {
  std::string json = "{\"traceEvents\": [";
  for (std::size_t i = 0; i < events.size(); ++i) json += (i ? ",\n" : "\n") + events[i];
  return json + "\n], \"baseTimeNanoseconds\": 1000000000}";
}

RankTrace parse_ok(const std::string& json) {
  auto t = parse_kineto_bytes(json, "pairs.json", 0);
  EXPECT_TRUE(t.ok()) << (t.ok() ? "" : t.error().message);
  return t.ok() ? std::move(*t) : RankTrace{};
}

const TraceEvent* named(const RankTrace& t, const std::string& name) {
  for (const TraceEvent& e : t.events) {
    if (t.names[e.name] == name) return &e;
  }
  return nullptr;
}

const TraceWarning* warning_with(const RankTrace& t, const std::string& part) {
  for (const TraceWarning& w : t.warnings) {
    if (w.kind.find(part) != std::string::npos) return &w;
  }
  return nullptr;
}

TEST(DurationPairs, NestedPairsBecomeCompleteEventsWithTheBeginsArgs) {
  const RankTrace t = parse_ok(document({
      R"({"ph": "B", "cat": "cpu_op", "name": "aten::linear", "pid": 1, "tid": 2, "ts": 10})",
      R"({"ph": "B", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 2, "ts": "12.5", "args": {"correlation": 7}})",
      R"({"ph": "i", "s": "t", "name": "mark", "pid": 1, "tid": 2, "ts": 13})",
      R"({"ph": "b", "cat": "user_annotation", "name": "fetch", "id": 3, "pid": 1, "tid": 2, "ts": 13})",
      R"({"ph": "E", "pid": 1, "tid": 2, "ts": 1.75e1})",
      R"({"ph": "C", "name": "Memory", "pid": 1, "ts": 18, "args": {"bytes": 5}})",
      R"({"ph": "e", "cat": "user_annotation", "name": "fetch", "id": 3, "pid": 1, "tid": 2, "ts": 30})",
      R"({"ph": "E", "pid": 1, "tid": 2, "ts": 20})",
      R"({"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 15, "dur": 4, "args": {"correlation": 7, "stream": 7}})",
  }));
  const TraceEvent* op = named(t, "aten::linear");
  const TraceEvent* call = named(t, "cudaLaunchKernel");
  const TraceEvent* kernel = named(t, "k");
  ASSERT_NE(op, nullptr);
  ASSERT_NE(call, nullptr);
  ASSERT_NE(kernel, nullptr);
  EXPECT_EQ(op->kind, EventKind::kCpuOp);
  EXPECT_EQ(op->duration_ns, 10'000);
  EXPECT_EQ(call->kind, EventKind::kCudaRuntime);
  EXPECT_EQ(call->start_ns, 1'000'012'500);
  EXPECT_EQ(call->duration_ns, 5'000);
  EXPECT_EQ(call->correlation, 7);  // the args of the "B"
  EXPECT_EQ(t.events.size(), 3u);   // i, b/e and C rows are not events
  EXPECT_EQ(warning_with(t, "\"E\""), nullptr);
  EXPECT_EQ(warning_with(t, "\"B\""), nullptr);
}

TEST(DurationPairs, ANamedEndClosesItsOwnBeginAndUnmatchedHalvesAreCounted) {
  const RankTrace t = parse_ok(document({
      R"({"ph": "E", "pid": 1, "tid": 2, "ts": 1})",  // nothing open
      R"({"ph": "B", "cat": "cpu_op", "name": "outer", "pid": 1, "tid": 2, "ts": 10})",
      R"({"ph": "B", "cat": "cpu_op", "name": "inner", "pid": 1, "tid": 2, "ts": 11})",
      R"({"ph": "B", "cat": "cpu_op", "name": "other_thread", "pid": 1, "tid": 3, "ts": 11})",
      R"({"ph": "E", "name": "outer", "pid": 1, "tid": 2, "ts": 30})",  // closes outer, not inner
      R"({"ph": "E", "pid": 1, "tid": 2, "ts": 20})",
  }));
  const TraceEvent* outer = named(t, "outer");
  const TraceEvent* inner = named(t, "inner");
  ASSERT_NE(outer, nullptr);
  ASSERT_NE(inner, nullptr);
  EXPECT_EQ(outer->duration_ns, 20'000);
  EXPECT_EQ(inner->duration_ns, 9'000);
  EXPECT_EQ(named(t, "other_thread"), nullptr);  // never closed: not an event
  const TraceWarning* unmatched = warning_with(t, "\"E\" event without an open \"B\"");
  ASSERT_NE(unmatched, nullptr);
  EXPECT_EQ(unmatched->count, 1);
  const TraceWarning* open = warning_with(t, "\"B\" event without its \"E\"");
  ASSERT_NE(open, nullptr);
  EXPECT_EQ(open->count, 1);
  EXPECT_NE(open->example.find("other_thread"), std::string::npos) << open->example;
}

// Halves are paired in time order (stable), as Chrome's viewer does: a file written out of order
// still pairs, and an "E" earlier than every "B" of its thread closes nothing.
TEST(DurationPairs, HalvesArePairedInTimeOrderNotFileOrder) {
  const RankTrace t = parse_ok(document({
      R"({"ph": "E", "pid": 1, "tid": 2, "ts": 20})",
      R"({"ph": "E", "pid": 1, "tid": 2, "ts": 30})",
      R"({"ph": "B", "cat": "cpu_op", "name": "inner", "pid": 1, "tid": 2, "ts": 11})",
      R"({"ph": "B", "cat": "cpu_op", "name": "outer", "pid": 1, "tid": 2, "ts": 10})",
      R"({"ph": "B", "cat": "cpu_op", "name": "backwards", "pid": 1, "tid": 5, "ts": 10})",
      R"({"ph": "E", "pid": 1, "tid": 5, "ts": 9})",
  }));
  ASSERT_NE(named(t, "outer"), nullptr);
  ASSERT_NE(named(t, "inner"), nullptr);
  EXPECT_EQ(named(t, "outer")->duration_ns, 20'000);
  EXPECT_EQ(named(t, "inner")->duration_ns, 9'000);
  EXPECT_EQ(named(t, "backwards"), nullptr);
  EXPECT_NE(warning_with(t, "\"E\" event without an open \"B\""), nullptr);
  EXPECT_NE(warning_with(t, "\"B\" event without its \"E\""), nullptr);
}

TEST(OtherBackends, XpuRuntimeCallsAreNamedInAWarning) {
  const RankTrace t = parse_ok(document({
      R"({"ph": "X", "cat": "xpu_runtime", "name": "urEnqueueKernelLaunch", "pid": 1, "tid": 2, "ts": 10, "dur": 3, "args": {"correlation": 9}})",
      R"({"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 94371245057792, "ts": 14, "dur": 3, "args": {"correlation": 9, "queue": 94371245057792}})",
  }));
  const TraceWarning* w = warning_with(t, "'xpu_runtime' calls not recognised");
  ASSERT_NE(w, nullptr);
  EXPECT_NE(w->example.find("urEnqueueKernelLaunch"), std::string::npos) << w->example;
}

}  // namespace
}  // namespace powertrain::trace
