// The Kineto reader on small hand-written traces: every normalization rule, warning and error.
#include "trace/kineto_reader.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "../support/synthetic_trace.h"

namespace powertrain::trace {
namespace {

// A trace document with one event per line (as Kineto writes them) and optional top-level keys.
std::string trace_json(const std::vector<std::string>& events, const std::string& extra = "") {
  std::string json = "{\n  \"schemaVersion\": 1,\n  \"traceEvents\": [\n";
  for (std::size_t i = 0; i < events.size(); ++i) {
    json += "  " + events[i] + (i + 1 < events.size() ? ",\n" : "\n");
  }
  json += "  ]";
  if (!extra.empty()) json += ",\n  " + extra;
  json += "\n}\n";
  return json;
}

RankTrace parse_ok(const std::string& json, const ReadOptions& options = {}) {
  auto trace = parse_kineto_json(json, "test.json", 3, options);
  EXPECT_TRUE(trace.ok()) << trace.error().message;
  return trace.ok() ? std::move(*trace) : RankTrace{};
}

const TraceWarning* warning(const RankTrace& trace, std::string_view kind_part) {
  for (const TraceWarning& w : trace.warnings) {
    if (w.kind.find(kind_part) != std::string::npos) return &w;
  }
  return nullptr;
}

const TraceEvent* by_name(const RankTrace& trace, std::string_view name) {
  for (const TraceEvent& e : trace.events) {
    if (trace.name_of(e) == name) return &e;
  }
  return nullptr;
}

std::string error_of(const std::string& json) {
  auto trace = parse_kineto_json(json, "bad.json", 0);
  EXPECT_FALSE(trace.ok());
  return trace.ok() ? std::string() : trace.error().message;
}

// cpu_op → cudaLaunchKernel → kernel, an event record on stream 7 and a wait on stream 20 (with
// its cuda_sync record), a memcpy, a stream sync, inside ProfilerStep#3.
const std::vector<std::string> kTinyTrace = {
    R"j({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#3", "pid": 10, "tid": 11, "ts": 1000, "dur": 500, "args": {"External id": 1}})j",
    R"j({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 10, "tid": 11, "ts": 1010, "dur": 50, "args": {"External id": 2, "Sequence number": 9}})j",
    R"j({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 10, "tid": 11, "ts": 1020, "dur": 10, "args": {"External id": 2, "cbid": 211, "correlation": 100}})j",
    R"j({"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 1040, "dur": 100, "args": {"External id": 2, "device": 0, "stream": 7, "correlation": 100, "grid": [1, 1, 1]}})j",
    R"j({"ph": "X", "cat": "cuda_runtime", "name": "cudaEventRecord", "pid": 10, "tid": 11, "ts": 1070, "dur": 2, "args": {"External id": 3, "correlation": 101, "cuda_event": 55}})j",
    R"j({"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamWaitEvent", "pid": 10, "tid": 11, "ts": 1080, "dur": 3, "args": {"External id": 4, "correlation": 102, "cuda_event": 55}})j",
    R"j({"ph": "X", "cat": "cuda_sync", "name": "Stream Wait Event", "pid": 0, "tid": 20, "ts": 1081, "dur": 0, "args": {"External id": 4, "cuda_sync_kind": "Stream Wait Event", "wait_on_stream": 7, "wait_on_cuda_event_record_corr_id": 101, "wait_on_cuda_event_id": 55, "stream": 20, "correlation": 102}})j",
    R"j({"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpyAsync", "pid": 10, "tid": 11, "ts": 1090, "dur": 5, "args": {"External id": 5, "correlation": 103}})j",
    R"j({"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoH (Device -> Pinned)", "pid": 0, "tid": 20, "ts": 1150, "dur": 4, "args": {"device": 0, "stream": 20, "correlation": 103, "bytes": 64}})j",
    R"j({"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamSynchronize", "pid": 10, "tid": 11, "ts": 1100, "dur": 60, "args": {"External id": 6, "correlation": 104}})j",
    R"j({"ph": "X", "cat": "cuda_sync", "name": "Stream Sync", "pid": 0, "tid": 20, "ts": 1155, "dur": 1, "args": {"cuda_sync_kind": "Stream Sync", "stream": 20, "correlation": 104}})j",
    R"j({"ph": "s", "id": 100, "pid": 10, "tid": 11, "ts": 1020, "cat": "ac2g", "name": "ac2g"})j",
    R"j({"ph": "f", "id": 100, "pid": 0, "tid": 7, "ts": 1040, "cat": "ac2g", "name": "ac2g", "bp": "e"})j",
    R"j({"name": "process_name", "ph": "M", "ts": 1000, "pid": 10, "tid": 0, "args": {"name": "python"}})j",
};

TEST(KinetoReader, TinyTraceParsedExactly) {
  const RankTrace trace = parse_ok(trace_json(
      kTinyTrace, R"j("distributedInfo": {"backend": "nccl", "rank": 2, "world_size": 4})j"));
  EXPECT_EQ(trace.source, "test.json");
  EXPECT_EQ(trace.rank, 2);
  EXPECT_EQ(trace.world_size, 4);
  EXPECT_TRUE(trace.warnings.empty()) << trace.warnings.front().kind;
  ASSERT_EQ(trace.events.size(), 11u);
  const std::vector<std::string> order = {"ProfilerStep#3",
                                          "aten::mm",
                                          "cudaLaunchKernel",
                                          "gemm",
                                          "cudaEventRecord",
                                          "cudaStreamWaitEvent",
                                          "Stream Wait Event",
                                          "cudaMemcpyAsync",
                                          "cudaStreamSynchronize",
                                          "Memcpy DtoH (Device -> Pinned)",
                                          "Stream Sync"};
  for (std::size_t i = 0; i < order.size(); ++i)
    EXPECT_EQ(trace.name_of(trace.events[i]), order[i]);

  const TraceEvent& step = trace.events[0];
  EXPECT_EQ(step.kind, EventKind::kUserAnnotation);
  EXPECT_EQ(step.start_ns, 1'000'000);
  EXPECT_EQ(step.duration_ns, 500'000);
  EXPECT_EQ(trace.step_starts_ns, std::vector<std::int64_t>{1'000'000});
  EXPECT_EQ(trace.step_ends_ns, std::vector<std::int64_t>{1'500'000});

  const TraceEvent& op = trace.events[1];
  EXPECT_EQ(op.kind, EventKind::kCpuOp);
  EXPECT_EQ(op.external_id, 2);
  EXPECT_EQ(op.correlation, -1);
  EXPECT_EQ(op.pid, 10);
  EXPECT_EQ(op.tid, 11);

  const TraceEvent& launch = trace.events[2];
  EXPECT_EQ(launch.kind, EventKind::kCudaRuntime);
  EXPECT_EQ(launch.correlation, 100);
  EXPECT_EQ(launch.external_id, 2);
  EXPECT_EQ(launch.sync, SyncKind::kNone);

  const TraceEvent& kernel = trace.events[3];
  EXPECT_EQ(kernel.kind, EventKind::kKernel);
  EXPECT_TRUE(is_gpu_work(kernel.kind));
  EXPECT_EQ(kernel.pid, 0);
  EXPECT_EQ(kernel.tid, 7);
  EXPECT_EQ(kernel.correlation, 100);
  EXPECT_EQ(kernel.start_ns, 1'040'000);
  EXPECT_EQ(kernel.duration_ns, 100'000);
  EXPECT_FALSE(kernel.nccl);
  EXPECT_EQ(kernel.collective, -1);

  const TraceEvent& record = trace.events[4];
  EXPECT_EQ(record.cuda_event, 55);
  EXPECT_EQ(record.sync, SyncKind::kNone);
  const TraceEvent& wait = trace.events[5];
  EXPECT_EQ(wait.sync, SyncKind::kStreamWaitEvent);
  EXPECT_EQ(wait.cuda_event, 55);
  EXPECT_EQ(wait.correlation, 102);

  const TraceEvent& wait_record = trace.events[6];
  EXPECT_EQ(wait_record.kind, EventKind::kCudaSync);
  EXPECT_EQ(wait_record.sync, SyncKind::kStreamWaitEvent);
  EXPECT_EQ(wait_record.tid, 20);
  EXPECT_EQ(wait_record.wait_on_stream, 7);
  EXPECT_EQ(wait_record.wait_on_event_correlation, 101);
  EXPECT_EQ(wait_record.cuda_event, 55);
  EXPECT_EQ(wait_record.correlation, 102);
  EXPECT_EQ(wait_record.duration_ns, 0);

  const TraceEvent& stream_sync = trace.events[8];
  EXPECT_EQ(stream_sync.sync, SyncKind::kStreamSync);
  const TraceEvent& memcpy = trace.events[9];
  EXPECT_EQ(memcpy.kind, EventKind::kGpuMemcpy);
  EXPECT_EQ(memcpy.correlation, 103);
  EXPECT_EQ(memcpy.external_id, -1);
  const TraceEvent& sync_record = trace.events[10];
  EXPECT_EQ(sync_record.sync, SyncKind::kStreamSync);
  EXPECT_EQ(sync_record.wait_on_stream, -1);
}

TEST(KinetoReader, RelativeAndAbsoluteTimesGiveTheSameAbsoluteNanoseconds) {
  // Absolute epoch µs (integer and float) versus µs relative to baseTimeNanoseconds.
  const RankTrace absolute = parse_ok(trace_json({
      R"j({"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 1711964646123456, "dur": 10})j",
      R"j({"ph": "X", "cat": "cpu_op", "name": "b", "pid": 1, "tid": 1, "ts": 1711964646123470.125, "dur": 2.5})j",
  }));
  const RankTrace relative = parse_ok(trace_json(
      {
          R"j({"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 123456.000, "dur": 10.000})j",
          R"j({"ph": "X", "cat": "cpu_op", "name": "b", "pid": 1, "tid": 1, "ts": "123470.125", "dur": "2.500"})j",
      },
      R"j("displayTimeUnit": "ms", "baseTimeNanoseconds": 1711964646000000000)j"));
  ASSERT_EQ(absolute.events.size(), 2u);
  ASSERT_EQ(relative.events.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(absolute.events[i].start_ns, relative.events[i].start_ns);
    EXPECT_EQ(absolute.events[i].duration_ns, relative.events[i].duration_ns);
  }
  EXPECT_EQ(relative.events[0].start_ns, 1'711'964'646'123'456'000);
  EXPECT_EQ(relative.events[1].start_ns, 1'711'964'646'123'470'125);
  EXPECT_EQ(relative.events[1].duration_ns, 2'500);
}

TEST(KinetoReader, BaseTimeMayComeBeforeTheEvents) {
  const RankTrace trace = parse_ok(R"j({"baseTimeNanoseconds": 5000000000, "traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 1.5, "dur": 1}
  ]})j");
  ASSERT_EQ(trace.events.size(), 1u);
  EXPECT_EQ(trace.events[0].start_ns, 5'000'001'500);
}

TEST(KinetoReader, StringAndNegativePidsAndTids) {
  const RankTrace trace = parse_ok(trace_json({
      R"j({"ph": "X", "cat": "Trace", "name": "PyTorch Profiler (0)", "pid": "Spans", "tid": "PyTorch Profiler", "ts": 1, "dur": 100})j",
      R"j({"ph": "X", "cat": "overhead", "name": "Activity Buffer Request", "pid": -1, "tid": 0, "ts": 2, "dur": 1})j",
      R"j({"ph": "X", "cat": "cuda_runtime", "name": "cudaEventQuery", "pid": 77, "tid": -549452224, "ts": 3, "dur": 1, "args": {"correlation": 5}})j",
      R"j({"ph": "X", "cat": "cpu_op", "name": "x", "pid": "77", "tid": 3.0, "ts": 4, "dur": 1})j",
      R"j({"ph": "X", "cat": "Trace", "name": "again", "pid": "Spans", "tid": "Spans", "ts": 5, "dur": 1})j",
  }));
  ASSERT_EQ(trace.events.size(), 5u);
  ASSERT_EQ(trace.string_ids, (std::vector<std::string>{"Spans", "PyTorch Profiler"}));
  EXPECT_EQ(trace.events[0].pid, string_id(0));
  EXPECT_EQ(trace.events[0].tid, string_id(1));
  EXPECT_EQ(trace.events[0].kind, EventKind::kOther);
  EXPECT_EQ(trace.events[1].pid, -1);
  EXPECT_EQ(trace.events[2].tid, -549452224);
  EXPECT_EQ(trace.events[3].pid, 77);
  EXPECT_EQ(trace.events[3].tid, 3);
  EXPECT_EQ(trace.events[4].pid, string_id(0));  // the same string, the same id
  EXPECT_EQ(trace.events[4].tid, string_id(0));
  EXPECT_LT(string_id(0), std::int64_t{-(1LL << 32)});  // far from any numeric id
  EXPECT_TRUE(trace.warnings.empty());
}

TEST(KinetoReader, CategoriesIncludingThe2021NamesAndUnknownOnes) {
  const RankTrace trace = parse_ok(trace_json({
      R"j({"ph": "X", "cat": "Operator", "name": "aten::add", "pid": 1, "tid": 1, "ts": 1, "dur": 9})j",
      R"j({"ph": "X", "cat": "Runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 2, "dur": 1, "args": {"correlation": 1}})j",
      R"j({"ph": "X", "cat": "Kernel", "name": "k", "pid": 0, "tid": 7, "ts": 3, "dur": 1, "args": {"correlation": 1}})j",
      R"j({"ph": "X", "cat": "Memcpy", "name": "m", "pid": 0, "tid": 7, "ts": 4, "dur": 1, "args": {"correlation": 2}})j",
      R"j({"ph": "X", "cat": "Memset", "name": "s", "pid": 0, "tid": 7, "ts": 5, "dur": 1, "args": {"correlation": 3}})j",
      R"j({"ph": "X", "cat": "cuda_driver", "name": "cuLaunchKernelEx", "pid": 1, "tid": 1, "ts": 6, "dur": 1, "args": {"correlation": 2}})j",
      R"j({"ph": "X", "cat": "python_function", "name": "f.py(1): g", "pid": 1, "tid": 1, "ts": 7, "dur": 1})j",
      R"j({"ph": "X", "cat": "gpu_user_annotation", "name": "## fwd ##", "pid": 0, "tid": 7, "ts": 8, "dur": 1})j",
      R"j({"ph": "X", "cat": "mystery", "name": "m1", "pid": 1, "tid": 1, "ts": 9, "dur": 1})j",
      R"j({"ph": "X", "cat": "mystery", "name": "m2", "pid": 1, "tid": 1, "ts": 10, "dur": 1})j",
      R"j({"ph": "X", "cat": "Runtime", "name": "cudaMemsetAsync", "pid": 1, "tid": 1, "ts": 11, "dur": 1, "args": {"correlation": 3}})j",
  }));
  ASSERT_EQ(trace.events.size(), 11u);
  EXPECT_EQ(trace.events[0].kind, EventKind::kCpuOp);
  EXPECT_EQ(trace.events[1].kind, EventKind::kCudaRuntime);
  EXPECT_EQ(trace.events[2].kind, EventKind::kKernel);
  EXPECT_EQ(trace.events[3].kind, EventKind::kGpuMemcpy);
  EXPECT_EQ(trace.events[4].kind, EventKind::kGpuMemset);
  EXPECT_EQ(trace.events[5].kind, EventKind::kCudaDriver);
  EXPECT_EQ(trace.events[6].kind, EventKind::kPythonFunction);
  EXPECT_EQ(trace.events[7].kind, EventKind::kGpuUserAnnotation);
  EXPECT_EQ(trace.events[8].kind, EventKind::kOther);
  const TraceWarning* unknown = warning(trace, "unknown category 'mystery'");
  ASSERT_NE(unknown, nullptr);
  EXPECT_EQ(unknown->count, 2);
  EXPECT_EQ(unknown->example, "event 'm1'");
  EXPECT_EQ(trace.warnings.size(), 1u);  // every launch found its GPU work
}

TEST(KinetoReader, MissingAndBadFieldsBecomeCountedWarnings) {
  const RankTrace trace = parse_ok(trace_json({
      R"j({"ph": "X", "cat": "cpu_op", "name": "no_ts_1", "pid": 1, "tid": 1, "dur": 1})j",
      R"j({"ph": "X", "cat": "cpu_op", "name": "no_ts_2", "pid": 1, "tid": 1, "dur": 1})j",
      R"j({"ph": "X", "cat": "cpu_op", "name": "bad_ts", "pid": 1, "tid": 1, "ts": "soon", "dur": 1})j",
      R"j({"ph": "X", "cat": "cpu_op", "name": "no_dur", "pid": 1, "tid": 1, "ts": 5})j",
      R"j({"ph": "X", "cat": "cpu_op", "name": "negative_dur", "pid": 1, "tid": 1, "ts": 6, "dur": -3})j",
      R"j({"ph": "X", "cat": "cpu_op", "name": "no_pid", "tid": 1, "ts": 7, "dur": 1})j",
      R"j({"ph": "X", "name": "no_cat", "pid": 1, "tid": 1, "ts": 8, "dur": 1})j",
      R"j({"ph": "X", "cat": "cpu_op", "pid": 1, "tid": 1, "ts": 9, "dur": 1})j",
      R"j(42)j",
      R"j("not an event")j",
      R"j({"ph": "X", "cat": "cpu_op", "name": "fine", "pid": {"a": 1}, "tid": 1, "ts": 10, "dur": 1})j",
      R"j({"ph": "i", "name": "instant", "pid": 1, "tid": 1, "ts": 11, "s": "g"})j",
  }));
  EXPECT_EQ(trace.events.size(), 6u);  // the three without a usable ts are skipped
  const auto count = [&](std::string_view kind) {
    const TraceWarning* w = warning(trace, kind);
    return w == nullptr ? 0 : w->count;
  };
  EXPECT_EQ(count("X event without ts"), 2);
  EXPECT_EQ(warning(trace, "X event without ts")->example, "event 'no_ts_1'");
  EXPECT_EQ(count("non-numeric or out-of-range ts"), 1);
  EXPECT_EQ(count("without dur"), 1);
  EXPECT_EQ(count("negative dur"), 1);
  EXPECT_EQ(count("event without pid"), 1);
  EXPECT_EQ(count("without a string cat"), 1);
  EXPECT_EQ(count("without a string name"), 1);
  EXPECT_EQ(count("not an object"), 2);
  EXPECT_EQ(count("pid is neither a number nor a string"), 1);
  EXPECT_EQ(by_name(trace, "no_dur")->duration_ns, 0);
  EXPECT_EQ(by_name(trace, "negative_dur")->duration_ns, 0);
  EXPECT_EQ(by_name(trace, "no_pid")->pid, 0);
  EXPECT_EQ(by_name(trace, "no_cat")->kind, EventKind::kOther);
  EXPECT_NE(by_name(trace, ""), nullptr);
}

TEST(KinetoReader, DanglingCorrelationsAreCounted) {
  const RankTrace trace = parse_ok(trace_json({
      R"j({"ph": "X", "cat": "kernel", "name": "orphan", "pid": 0, "tid": 7, "ts": 1, "dur": 1, "args": {"correlation": 99}})j",
      R"j({"ph": "X", "cat": "kernel", "name": "orphan", "pid": 0, "tid": 7, "ts": 2, "dur": 1, "args": {"correlation": 98}})j",
      R"j({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 3, "dur": 1, "args": {"correlation": 100}})j",
      R"j({"ph": "X", "cat": "gpu_memset", "name": "Memset (Device)", "pid": 0, "tid": 7, "ts": 4, "dur": 1})j",
      R"j({"ph": "X", "cat": "cuda_sync", "name": "Context Sync", "pid": 0, "tid": -1, "ts": 5, "dur": 1, "args": {"cuda_sync_kind": "Context Sync", "correlation": 500}})j",
      R"j({"ph": "X", "cat": "cuda_runtime", "name": "cudaGetDevice", "pid": 1, "tid": 1, "ts": 6, "dur": 1, "args": {"correlation": 101}})j",
  }));
  ASSERT_NE(warning(trace, "GPU work without a launch"), nullptr);
  EXPECT_EQ(warning(trace, "GPU work without a launch")->count, 2);
  EXPECT_EQ(warning(trace, "GPU work without a launch")->example, "correlation 99 on 'orphan'");
  ASSERT_NE(warning(trace, "launch without GPU work"), nullptr);
  EXPECT_EQ(warning(trace, "launch without GPU work")->count, 1);  // not cudaGetDevice
  ASSERT_NE(warning(trace, "GPU work without a correlation"), nullptr);
  EXPECT_EQ(warning(trace, "GPU work without a correlation")->count, 1);
  ASSERT_NE(warning(trace, "cuda_sync record without its runtime call"), nullptr);
  EXPECT_EQ(by_name(trace, "Context Sync")->sync, SyncKind::kContextSync);
}

TEST(KinetoReader, FlowsFillMissingCorrelations) {
  // The 2021 layout: no args.correlation, only the async flow pair.
  const RankTrace trace = parse_ok(trace_json({
      R"j({"ph": "X", "cat": "Runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 2, "ts": 10, "dur": 5, "args": {"external id": 3}})j",
      R"j({"ph": "X", "cat": "Kernel", "name": "k", "pid": 0, "tid": 7, "ts": 20, "dur": 5, "args": {"stream": 7}})j",
      R"j({"ph": "s", "id": 41, "pid": 1, "tid": 2, "ts": 10, "cat": "async", "name": "launch"})j",
      R"j({"ph": "f", "id": 41, "pid": 0, "tid": 7, "ts": 20, "cat": "async", "name": "launch", "bp": "e"})j",
      R"j({"ph": "s", "id": 9, "pid": 1, "tid": 2, "ts": 10, "cat": "fwdbwd", "name": "fwdbwd"})j",
  }));
  ASSERT_EQ(trace.events.size(), 2u);
  EXPECT_EQ(trace.events[0].correlation, 41);
  EXPECT_EQ(trace.events[1].correlation, 41);
  ASSERT_NE(warning(trace, "correlation taken from an ac2g flow"), nullptr);
  EXPECT_EQ(warning(trace, "correlation taken from an ac2g flow")->count, 2);
  EXPECT_EQ(warning(trace, "GPU work without"), nullptr);
}

TEST(KinetoReader, InvalidRuntimeRecordsAreKeptWhereTheirTimingIsUsable) {
  const RankTrace trace = parse_ok(trace_json({
      R"j({"ph": "X", "cat": "cuda_runtime", "name": "INVALID", "pid": 1, "tid": 1, "ts": 1, "dur": 0, "args": {"cbid": 409, "correlation": 7}})j",
      R"j({"ph": "X", "cat": "cuda_runtime", "name": "INVALID", "pid": 1, "tid": 1, "ts": 3, "args": {"correlation": 8}})j",
      R"j({"ph": "X", "cat": "cpu_op", "name": "INVALID", "pid": 1, "tid": 1, "ts": 2, "dur": 0})j",
  }));
  ASSERT_EQ(trace.events.size(), 2u);
  EXPECT_EQ(trace.events[0].kind, EventKind::kCudaRuntime);
  EXPECT_EQ(trace.events[0].correlation, 7);
  EXPECT_EQ(trace.events[1].kind, EventKind::kCpuOp);
  ASSERT_NE(warning(trace, "'INVALID' records kept"), nullptr);
  EXPECT_EQ(warning(trace, "'INVALID' records kept")->count, 1);
  ASSERT_NE(warning(trace, "'INVALID' records without usable timing ignored"), nullptr);
  EXPECT_EQ(warning(trace, "'INVALID' records without usable timing ignored")->count, 1);
}

TEST(KinetoReader, NcclKernelsOpsAndCollectiveMetadata) {
  const RankTrace trace = parse_ok(trace_json({
      // 2023 style: metadata only on the nccl:* annotation (shapes), kernel named by NCCL.
      R"j({"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 1, "tid": 2, "ts": 100, "dur": 80, "args": {"External id": 1, "Input Dims": [[], []], "Input type": ["TensorList", "Scalar"]}})j",
      R"j({"ph": "X", "cat": "user_annotation", "name": "nccl:all_reduce", "pid": 1, "tid": 2, "ts": 110, "dur": 60, "args": {"External id": 2, "Input Dims": [[4, 256]], "Input type": ["float"]}})j",
      R"j({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 2, "ts": 120, "dur": 10, "args": {"correlation": 10}})j",
      R"j({"ph": "X", "cat": "kernel", "name": "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)", "pid": 0, "tid": 40, "ts": 150, "dur": 500, "args": {"correlation": 10}})j",
      // 2024 style: full metadata on both the op and the kernel.
      R"j({"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 1, "tid": 2, "ts": 1000, "dur": 90, "args": {"External id": 5, "Collective name": "_allgather_base", "In msg nelems": 25136, "Out msg nelems": 201088, "Group size": 8, "dtype": "BFloat16", "Process Group Name": "3", "Process Group Description": "undefined", "Process Group Ranks": "[0, 1, 2, 3, 4, 5, 6, 7]", "Seq": 12}})j",
      R"j({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernelExC", "pid": 1, "tid": 2, "ts": 1010, "dur": 10, "args": {"External id": 5, "correlation": 11}})j",
      R"j({"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "pid": 0, "tid": 41, "ts": 1100, "dur": 20, "args": {"External id": 5, "correlation": 11, "Collective name": "_allgather_base", "In msg nelems": "25136", "Out msg nelems": 201088, "Group size": 8, "dtype": "BFloat16", "Process Group Name": "3", "Process Group Ranks": [0, 1, 2, 3, 4, 5, 6, 7]}})j",
      // A bare NCCL kernel: only its name.
      R"j({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 3, "ts": 2000, "dur": 10, "args": {"correlation": 12}})j",
      R"j({"ph": "X", "cat": "kernel", "name": "ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(x)", "pid": 0, "tid": 41, "ts": 2100, "dur": 20, "args": {"correlation": 12}})j",
      R"j({"ph": "X", "cat": "gpu_user_annotation", "name": "nccl:all_reduce", "pid": 0, "tid": 40, "ts": 150, "dur": 500})j",
  }));
  ASSERT_EQ(trace.events.size(), 10u);
  EXPECT_TRUE(trace.warnings.empty()) << trace.warnings.front().kind;
  for (std::size_t i = 0; i < trace.collectives.size(); ++i) {  // links both ways
    ASSERT_GE(trace.collectives[i].event, 0);
    EXPECT_EQ(trace.events[trace.collectives[i].event].collective, static_cast<int>(i));
  }
  const auto info = [&](const TraceEvent* e) -> const CollectiveInfo& {
    EXPECT_NE(e, nullptr);
    EXPECT_GE(e->collective, 0);
    return trace.collectives[e->collective];
  };
  EXPECT_TRUE(by_name(trace, "record_param_comms")->nccl);
  EXPECT_EQ(by_name(trace, "record_param_comms")->collective, -1);  // shapes only, no metadata
  const CollectiveInfo& annotation = info(by_name(trace, "nccl:all_reduce"));
  EXPECT_EQ(annotation.name, "all_reduce");
  EXPECT_EQ(annotation.in_elements, 1024);
  EXPECT_EQ(annotation.element_bytes, 4);
  const TraceEvent* ring = by_name(
      trace, "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)");
  EXPECT_TRUE(ring->nccl);
  const CollectiveInfo& ring_info = info(ring);  // inherited from the annotation around its launch
  EXPECT_EQ(ring_info.name, "all_reduce");
  EXPECT_EQ(ring_info.in_elements, 1024);
  EXPECT_EQ(ring_info.element_bytes, 4);

  const TraceEvent* gather =
      by_name(trace, "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)");
  const CollectiveInfo& gather_info = info(gather);
  EXPECT_EQ(gather_info.name, "_allgather_base");
  EXPECT_EQ(gather_info.in_elements, 25136);
  EXPECT_EQ(gather_info.out_elements, 201088);
  EXPECT_EQ(gather_info.element_bytes, 2);
  EXPECT_EQ(gather_info.group_size, 8);
  EXPECT_EQ(gather_info.process_group, "3");
  EXPECT_EQ(gather_info.process_group_ranks, (std::vector<std::int64_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  const TraceEvent* op = nullptr;
  for (const TraceEvent& e : trace.events) {
    if (trace.name_of(e) == "record_param_comms" && e.collective >= 0) op = &e;
  }
  const CollectiveInfo& op_info = info(op);
  EXPECT_EQ(op_info.process_group_description, "undefined");
  EXPECT_EQ(op_info.sequence, 12);
  EXPECT_EQ(op_info.process_group_ranks.size(), 8u);

  const CollectiveInfo& bare =
      info(by_name(trace, "ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(x)"));
  EXPECT_EQ(bare.name, "reducescatter");
  EXPECT_EQ(bare.element_bytes, 2);
  EXPECT_EQ(bare.in_elements, -1);

  int gpu_annotations = 0;
  for (const TraceEvent& e : trace.events) {
    if (e.kind == EventKind::kGpuUserAnnotation) {
      ++gpu_annotations;
      EXPECT_TRUE(e.nccl);
      EXPECT_EQ(e.collective, -1);
    }
  }
  EXPECT_EQ(gpu_annotations, 1);
  EXPECT_EQ(trace.collectives.size(), 5u);  // annotation, 3 kernels, 1 op with metadata
}

TEST(KinetoReader, EventsSortedByStartThenLongerFirst) {
  const RankTrace trace = parse_ok(trace_json({
      R"j({"ph": "X", "cat": "cpu_op", "name": "c", "pid": 1, "tid": 1, "ts": 5, "dur": 1})j",
      R"j({"ph": "X", "cat": "cpu_op", "name": "inner", "pid": 1, "tid": 1, "ts": 1, "dur": 2})j",
      R"j({"ph": "X", "cat": "cpu_op", "name": "outer", "pid": 1, "tid": 1, "ts": 1, "dur": 3})j",
      R"j({"ph": "X", "cat": "cpu_op", "name": "tie1", "pid": 1, "tid": 1, "ts": 9, "dur": 1})j",
      R"j({"ph": "X", "cat": "cpu_op", "name": "tie2", "pid": 1, "tid": 1, "ts": 9, "dur": 1})j",
  }));
  std::vector<std::string> names;
  for (const TraceEvent& e : trace.events) names.push_back(trace.name_of(e));
  EXPECT_EQ(names, (std::vector<std::string>{"outer", "inner", "c", "tie1", "tie2"}));
}

TEST(KinetoReader, FieldOrderDoesNotMatter) {
  // args before cat and name, ph last: every arg must still be read.
  const RankTrace trace = parse_ok(trace_json({
      R"j({"args": {"correlation": 8, "External id": 4, "Collective name": "allreduce", "In msg nelems": 16, "dtype": "Float"}, "dur": 2, "ts": 1, "tid": 7, "pid": 0, "name": "ncclKernel_AllReduce_RING_LL_Sum_float", "cat": "kernel", "ph": "X"})j",
      R"j({"args": {"correlation": 8}, "name": "cudaLaunchKernel", "cat": "cuda_runtime", "ts": 0, "dur": 1, "pid": 1, "tid": 1, "ph": "X"})j",
  }));
  ASSERT_EQ(trace.events.size(), 2u);
  const TraceEvent& kernel = trace.events[1];
  EXPECT_EQ(kernel.correlation, 8);
  EXPECT_EQ(kernel.external_id, 4);
  ASSERT_GE(kernel.collective, 0);
  EXPECT_EQ(trace.collectives[kernel.collective].in_elements, 16);
  EXPECT_TRUE(trace.warnings.empty());
}

TEST(KinetoReader, CorrelationIdAndLowerCaseExternalIdAreAliases) {
  // Converters and some PyTorch versions spell the keys "correlationId" and "external id".
  const RankTrace trace = parse_ok(trace_json({
      R"j({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 0, "dur": 1, "args": {"external id": 4, "correlationId": 8}})j",
      R"j({"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 2, "dur": 2, "args": {"correlationId": 8, "external id": 4}})j",
  }));
  ASSERT_EQ(trace.events.size(), 2u);
  for (const TraceEvent& e : trace.events) {
    EXPECT_EQ(e.correlation, 8);
    EXPECT_EQ(e.external_id, 4);
  }
  EXPECT_EQ(warning(trace, "launch"), nullptr);  // the kernel has its launch
}

TEST(KinetoReader, ChromeArrayFormatAndEscapedNames) {
  const RankTrace trace = parse_ok(
      R"j([{"ph": "X", "cat": "cpu_op", "name": "a\"b\u00e9", "pid": 1, "tid": 1, "ts": 1, "dur": 1},
          {"ph": "X", "cat": "cpu_op", "name": "a\u0022b\u00E9", "pid": 1, "tid": 1, "ts": 2, "dur": 1}])j");
  ASSERT_EQ(trace.events.size(), 2u);
  EXPECT_EQ(trace.name_of(trace.events[0]), "a\"b\xc3\xa9");
  EXPECT_EQ(trace.events[0].name, trace.events[1].name);  // one name, however escaped
  EXPECT_EQ(trace.rank, 3);                               // the default rank
}

TEST(KinetoReader, OptionsDropPythonFunctionsAndCapEvents) {
  const std::string json = trace_json({
      R"j({"ph": "X", "cat": "python_function", "name": "f", "pid": 1, "tid": 1, "ts": 1, "dur": 1})j",
      R"j({"ph": "X", "cat": "cpu_op", "name": "op", "pid": 1, "tid": 1, "ts": 2, "dur": 1})j",
  });
  ReadOptions options;
  options.keep_python_functions = false;
  EXPECT_EQ(parse_ok(json, options).events.size(), 1u);
  options.max_events = 1;
  options.keep_python_functions = true;
  auto capped = parse_kineto_json(json, "big.json", 0, options);
  ASSERT_FALSE(capped.ok());
  EXPECT_EQ(capped.error().message, "big.json: more than 1 events (ReadOptions::max_events)");
  options.max_json_bytes = 10;
  auto too_big = parse_kineto_json(json, "big.json", 0, options);
  ASSERT_FALSE(too_big.ok());
  EXPECT_NE(too_big.error().message.find("more than the limit of 10 bytes"), std::string::npos);
}

TEST(KinetoReader, ErrorsNameTheFileAndSayWhatIsWrong) {
  EXPECT_EQ(error_of(""), "bad.json: empty file (no JSON)");
  EXPECT_EQ(error_of(" \n\t"), "bad.json: empty file (no JSON)");
  EXPECT_EQ(error_of(R"j({"schemaVersion": 1, "deviceProperties": []})j"),
            "bad.json: no traceEvents array");
  EXPECT_EQ(error_of(R"j({"traceEvents": {"a": 1}})j"),
            "bad.json: traceEvents is not an array (got {)");
  EXPECT_EQ(error_of("42"),
            "bad.json: invalid JSON at byte 0: the top-level JSON value is not an object");
  // A syntax error inside an event: the byte offset of the problem.
  const std::string broken = R"j({"traceEvents": [
  {"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 1},
  {"ph": "X", "cat": "cpu_op" "name": "b"}
]})j";
  const std::string message = error_of(broken);
  EXPECT_EQ(message.rfind("bad.json: invalid JSON at byte ", 0), 0u) << message;
  // Truncated documents (a cut download) and trailing garbage.
  const std::string whole = trace_json(kTinyTrace);
  EXPECT_NE(error_of(whole.substr(0, whole.size() / 2)).find("bad.json: invalid JSON"),
            std::string::npos);
  EXPECT_NE(error_of(whole.substr(0, whole.rfind(']'))).find("bad.json: invalid JSON"),
            std::string::npos);
  EXPECT_NE(error_of(whole.substr(0, whole.rfind('}'))).find("truncated"), std::string::npos);
  EXPECT_NE(error_of(whole + "x").find("unexpected content after the top-level object"),
            std::string::npos);
  EXPECT_NE(error_of("[{\"ph\": \"X\"}] [").find("unexpected content"), std::string::npos);
  EXPECT_NE(error_of("{\"traceEvents\": [\"\xff\"]}").find("bad.json: invalid JSON"),
            std::string::npos);  // not UTF-8
}

// A profiler that died mid-write leaves a document cut inside an event: one line naming the
// file, that it is truncated and the byte where it ends (never a shorter trace replayed).
TEST(KinetoReader, FileCutInsideAnEventNamesWhereItEnds) {
  const std::string whole =
      "{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 0, "
      "\"tid\": 7, \"ts\": 10, \"dur\": 5}, {\"ph\": \"X\", \"cat\": \"kernel\", \"name\": "
      "\"a_long_kernel_name\", \"pid\": 0, \"tid\": 7, \"ts\": 20, \"dur\": 5}]}";
  const std::string cut = whole.substr(0, whole.find("long_kernel"));
  auto t = parse_kineto_bytes(cut, "died.json", 0);
  ASSERT_FALSE(t.ok());
  const std::string& message = t.error().message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  EXPECT_EQ(message.rfind("died.json: invalid JSON, truncated: the document ends at byte " +
                              std::to_string(cut.size()),
                          0),
            0u)
      << message;
}

// The windowed walk must give exactly what a whole-document walk gives, wherever it cuts.
TEST(KinetoReader, WindowSizeDoesNotChangeTheResult) {
  SyntheticTraceSpec spec;
  spec.target_events = 3000;
  spec.ops_per_step = 100;
  spec.ops_per_collective = 7;
  const std::string json = make_synthetic_kineto_trace(spec);
  ReadOptions whole;
  whole.window_bytes = SIZE_MAX / 4;
  const RankTrace reference = parse_ok(json, whole);
  ASSERT_GT(reference.events.size(), 1500u);
  for (std::size_t window : {std::size_t{64}, std::size_t{300}, std::size_t{1000},
                             std::size_t{4096}, std::size_t{65536}}) {
    ReadOptions options;
    options.window_bytes = window;
    const RankTrace trace = parse_ok(json, options);
    ASSERT_EQ(trace.events.size(), reference.events.size()) << window;
    for (std::size_t i = 0; i < trace.events.size(); ++i) {
      const TraceEvent& a = trace.events[i];
      const TraceEvent& b = reference.events[i];
      ASSERT_TRUE(a.start_ns == b.start_ns && a.duration_ns == b.duration_ns && a.name == b.name &&
                  a.correlation == b.correlation && a.tid == b.tid && a.collective == b.collective)
          << "window " << window << " event " << i;
    }
    EXPECT_EQ(trace.names, reference.names);
    EXPECT_EQ(trace.collectives.size(), reference.collectives.size());
    EXPECT_EQ(trace.step_starts_ns, reference.step_starts_ns);
    EXPECT_EQ(trace.warnings.size(), reference.warnings.size());
  }
  // Errors are found wherever the window falls, too.
  const std::string cut = json.substr(0, json.size() * 2 / 3);
  for (std::size_t window : {std::size_t{64}, std::size_t{4096}, SIZE_MAX / 4}) {
    ReadOptions options;
    options.window_bytes = window;
    EXPECT_FALSE(parse_kineto_json(cut, "cut.json", 0, options).ok()) << window;
  }
}

// Found by fuzzing: a window cut between "traceEvents": and its '[' once made the window's own
// closing brace look like the value of traceEvents.
TEST(KinetoReader, WindowCutBeforeTheEventsArrayIsNotAnError) {
  const std::string json =
      "{\"traceEvents\":\n[ {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"a\", \"pid\": 1, "
      "\"tid\": 1, \"ts\": 1.5, \"dur\": 2}\n],\n\"distributedInfo\": {\"rank\": 5}}\n";
  for (std::size_t window : {std::size_t{64}, std::size_t{128}, SIZE_MAX / 4}) {
    ReadOptions options;
    options.window_bytes = window;
    const RankTrace trace = parse_ok(json, options);
    ASSERT_EQ(trace.events.size(), 1u) << window;
    EXPECT_EQ(trace.events[0].start_ns, 1'500);
    EXPECT_EQ(trace.rank, 5);
  }
}

TEST(KinetoReader, SyntheticTraceHasTheExpectedShape) {
  SyntheticTraceSpec spec;
  spec.target_events = 12'000;
  spec.world_size = 4;
  spec.rank = 1;
  spec.ops_per_step = 500;
  spec.ops_per_collective = 50;
  const RankTrace trace = parse_ok(make_synthetic_kineto_trace(spec));
  // 6 records per op: python_function, cpu_op, launch, kernel (X) + 2 flows.
  EXPECT_EQ(trace.events.size(), 8'000u + 4);  // + 4 ProfilerStep annotations
  EXPECT_EQ(trace.rank, 1);
  EXPECT_EQ(trace.world_size, 4);
  EXPECT_EQ(trace.step_starts_ns.size(), 4u);  // after ops 500, 1000, 1500, 2000
  EXPECT_EQ(trace.collectives.size(), 80u);    // 40 all-reduces: the op and the kernel
  EXPECT_TRUE(trace.warnings.empty());
  std::size_t kernels = 0;
  for (const TraceEvent& e : trace.events) kernels += e.kind == EventKind::kKernel;
  EXPECT_EQ(kernels, 2'000u);
  spec.relative_time = false;
  const RankTrace absolute = parse_ok(make_synthetic_kineto_trace(spec));
  ASSERT_EQ(absolute.events.size(), trace.events.size());
  EXPECT_EQ(absolute.events.front().start_ns / 1000, trace.events.front().start_ns / 1000);
}

}  // namespace
}  // namespace powertrain::trace
