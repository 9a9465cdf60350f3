// The emulation-trace schema joins the writer and the reader: every binary record kind formatted
// by the interposer's own formatter (interposer/trace_format.h) parses in src/emulate's reader
// with its fields intact, and every op name of the schema is known to the reader.
#include "interposer/trace_schema.h"

#include <gtest/gtest.h>

#include <string>

#include "emulate/emulation_trace.h"
#include "interposer/trace_format.h"

namespace powertrain::emulate {
namespace {

namespace detail = emu::detail;
namespace ops = trace_schema::op;

std::string process_line() {
  return std::string(R"({"op":")") + ops::kProcess +
         R"(","version":1,"pid":7,"rank":0,"world_size":1,"devices":2,"gpu":"h100"})" + "\n";
}

void kernel_name(std::string& out, std::int64_t index) {
  out += "\"_Z6kernel" + std::to_string(index) + "v\"";
}

detail::Record record(detail::Op op) {
  detail::Record r;
  r.op = op;
  r.t = 1000;
  r.dt = 20;
  r.tid = 3;
  r.dev = 1;
  return r;
}

// Formats `r` with the writer and parses it (after a process line) with the reader.
Record round_trip(const detail::Record& r, ProcessTrace* trace_out = nullptr) {
  std::string text = process_line();
  detail::format_record(r, text, kernel_name);
  auto trace = parse_emulation_trace(text, "trace-7.jsonl");
  EXPECT_TRUE(trace.ok()) << (trace.ok() ? "" : trace.error().message) << "\n" << text;
  if (!trace.ok()) return {};
  EXPECT_EQ(trace->records.size(), 1u) << text;
  // The only warning is the missing exit line.
  EXPECT_EQ(trace->warnings.size(), 1u) << text;
  if (trace->records.empty()) return {};
  const Record out = trace->records.front();
  EXPECT_EQ(out.t_ns, 1000);
  EXPECT_EQ(out.dt_ns, 20);
  EXPECT_EQ(out.tid, 3);
  EXPECT_EQ(out.device, 1);
  if (trace_out != nullptr) *trace_out = std::move(*trace);
  return out;
}

TEST(TraceSchema, KernelRoundTrips) {
  detail::Record r = record(detail::Op::kKernel);
  r.a[0] = 4;   // stream
  r.a[1] = 9;   // corr
  r.a[2] = 12;  // kernel index
  r.a[3] = 256;
  for (int i = 0; i < 6; ++i) r.g[i] = static_cast<std::uint32_t>(i + 2);
  r.api = "cudaLaunchKernel";
  ProcessTrace trace;
  const Record k = round_trip(r, &trace);
  EXPECT_EQ(k.op, OpKind::kKernel);
  EXPECT_EQ(k.stream, 4);
  EXPECT_EQ(k.correlation, 9);
  EXPECT_EQ(trace.str(k.name), "_Z6kernel12v");
  EXPECT_EQ(trace.str(k.detail), "cudaLaunchKernel");
  EXPECT_EQ(k.grid[0], 2);
  EXPECT_EQ(k.grid[2], 4);
  EXPECT_EQ(k.block[0], 5);
  EXPECT_EQ(k.block[2], 7);
  EXPECT_EQ(k.shared_bytes, 256);
}

TEST(TraceSchema, CopiesAndMemsetsRoundTrip) {
  for (int kind = 0; kind <= static_cast<int>(detail::CopyKind::kPtoP); ++kind) {
    detail::Record r = record(detail::Op::kMemcpy);
    r.a[0] = 2;
    r.a[1] = 5;
    r.a[2] = 4096;
    r.sub = static_cast<std::uint8_t>(kind);
    r.flag = kind % 2 == 0;
    r.api = "cudaMemcpyAsync";
    const Record c = round_trip(r);
    EXPECT_EQ(c.op, OpKind::kMemcpy);
    EXPECT_EQ(static_cast<int>(c.copy), kind);
    EXPECT_EQ(c.bytes, 4096);
    EXPECT_EQ(c.async, kind % 2 == 0);
  }
  detail::Record m = record(detail::Op::kMemset);
  m.a[0] = 2;
  m.a[1] = 6;
  m.a[2] = 100;
  const Record s = round_trip(m);
  EXPECT_EQ(s.op, OpKind::kMemset);
  EXPECT_EQ(s.bytes, 100);
  EXPECT_FALSE(s.async);
}

TEST(TraceSchema, AllocationsRoundTrip) {
  for (const detail::Op op : {detail::Op::kMalloc, detail::Op::kFree}) {
    for (int kind = 0; kind <= static_cast<int>(detail::AllocKind::kAsync); ++kind) {
      detail::Record r = record(op);
      r.a[0] = 0x7000;
      r.a[1] = 1 << 20;
      r.a[2] = 3 << 20;
      r.a[3] = kind == static_cast<int>(detail::AllocKind::kAsync) ? 2 : emu::kInvalidStream;
      r.a[4] = 11;
      r.sub = static_cast<std::uint8_t>(kind);
      r.flag = true;
      const Record a = round_trip(r);
      EXPECT_EQ(a.op, op == detail::Op::kMalloc ? OpKind::kMalloc : OpKind::kFree);
      EXPECT_EQ(static_cast<int>(a.memory), kind);
      EXPECT_EQ(a.bytes, 1 << 20);
      EXPECT_EQ(a.used_bytes, 3 << 20);
      EXPECT_TRUE(a.ok);
      EXPECT_EQ(a.stream, kind == static_cast<int>(detail::AllocKind::kAsync) ? 2 : -1);
    }
  }
}

TEST(TraceSchema, StreamAndEventRecordsRoundTrip) {
  struct Case {
    detail::Op op;
    OpKind kind;
  };
  const Case cases[] = {
      {detail::Op::kStreamCreate, OpKind::kStreamCreate},
      {detail::Op::kStreamDestroy, OpKind::kStreamDestroy},
      {detail::Op::kStreamSync, OpKind::kStreamSync},
      {detail::Op::kEventCreate, OpKind::kEventCreate},
      {detail::Op::kEventDestroy, OpKind::kEventDestroy},
      {detail::Op::kEventSync, OpKind::kEventSync},
      {detail::Op::kEventRecord, OpKind::kEventRecord},
      {detail::Op::kStreamWaitEvent, OpKind::kStreamWaitEvent},
      {detail::Op::kDeviceSync, OpKind::kDeviceSync},
      {detail::Op::kSetDevice, OpKind::kSetDevice},
      {detail::Op::kHostFunc, OpKind::kHostFunc},
  };
  for (const Case& c : cases) {
    detail::Record r = record(c.op);
    r.a[0] = 3;  // the stream, or the event of event-only records
    r.a[1] = 1;  // flags, or the event of event_record/stream_wait_event, or corr
    r.a[2] = 8;
    const Record out = round_trip(r);
    EXPECT_EQ(out.op, c.kind) << detail::op_name(c.op);
    EXPECT_EQ(to_string(out.op), detail::op_name(c.op));
    switch (c.kind) {
      case OpKind::kStreamCreate:
        EXPECT_EQ(out.flags, 1);
        [[fallthrough]];
      case OpKind::kStreamDestroy:
      case OpKind::kStreamSync:
      case OpKind::kHostFunc:
        EXPECT_EQ(out.stream, 3);
        break;
      case OpKind::kEventCreate:
      case OpKind::kEventDestroy:
      case OpKind::kEventSync:
        EXPECT_EQ(out.event, 3);
        break;
      case OpKind::kEventRecord:
      case OpKind::kStreamWaitEvent:
        EXPECT_EQ(out.stream, 3);
        EXPECT_EQ(out.event, 1);
        EXPECT_EQ(out.correlation, 8);
        break;
      default:
        break;
    }
  }
}

TEST(TraceSchema, LibraryWorkRecordRoundTrips) {
  // A cuBLAS GEMM: the library writes its own fields, the log adds the common ones.
  detail::Record r = record(detail::Op::kWork);
  r.text = std::string(R"("op":")") + ops::kGemm +
           R"(","api":"cublasGemmEx","m":64,"n":32,"k":16,"batch":1,"dtype_a":"bfloat16",)"
           R"("compute":"float32","flops":65536)";
  r.a[0] = 2;
  r.a[1] = 40;
  r.graph = 3;
  const Record g = round_trip(r);
  EXPECT_EQ(g.op, OpKind::kGemm);
  EXPECT_EQ(g.stream, 2);
  EXPECT_EQ(g.correlation, 40);
  EXPECT_EQ(g.m, 64);
  EXPECT_EQ(g.dtype_c, Dtype::kBfloat16);
  EXPECT_DOUBLE_EQ(g.flops, 65536.0);
}

TEST(TraceSchema, EveryWrittenOpIsKnownToTheReader) {
  // Minimal records of the ops written as text (RecordBuilder): the reader must neither warn
  // "unknown op" nor fail on a name taken from the schema.
  const std::string common = R"(,"t":5,"tid":0,"dev":0)";
  const std::string lines[] = {
      std::string(R"({"op":")") + ops::kRegister + R"(","name":"_Z1kv")" + common + "}",
      std::string(R"({"op":")") + ops::kCommInit + R"(","comm":"ab","rank":0,"size":2)" + common +
          "}",
      std::string(R"({"op":")") + ops::kNccl +
          R"(","coll":"allreduce","comm":"ab","comm_rank":0,"comm_size":2,"count":4,)"
          R"("dtype":"float32","bytes":16,"stream":0,"seq":0,"corr":1)" +
          common + "}",
      std::string(R"({"op":")") + ops::kGraphLaunch + R"(","stream":0,"corr":2)" + common + "}",
      std::string(R"({"op":")") + ops::kDeviceReset + R"(")" + common + "}",
      std::string(R"({"op":")") + ops::kUnsupported + R"(","api":"cudaFoo")" + common + "}",
      std::string(R"({"op":")") + ops::kMisuse + R"(","api":"cudaFree","what":"double free")" +
          common + "}",
      std::string(R"({"op":")") + ops::kNvtx + R"(","kind":"mark","name":"step")" + common + "}",
      std::string(R"({"op":")") + ops::kModuleLoad + R"(")" + common + "}",
      std::string(R"({"op":")") + ops::kMemMap + R"(")" + common + "}",
      std::string(R"({"op":")") + ops::kMemUnmap + R"(")" + common + "}",
      std::string(R"({"op":")") + ops::kCurand + R"(")" + common + "}",
  };
  for (const std::string& line : lines) {
    const std::string text = process_line() + line + "\n" + R"({"op":")" + ops::kExit +
                             R"(","t":9,"peak_used":[0,0]})" + "\n";
    auto trace = parse_emulation_trace(text, "trace-7.jsonl");
    ASSERT_TRUE(trace.ok()) << trace.error().message << "\n" << line;
    EXPECT_TRUE(trace->warnings.empty()) << line << ": " << trace->warnings.front().kind;
  }
}

TEST(TraceSchema, NamesMatchTheReaderEnums) {
  for (int i = 0; i <= static_cast<int>(CopyKind::kPtoP); ++i) {
    EXPECT_EQ(to_string(static_cast<CopyKind>(i)),
              detail::copy_kind_name(static_cast<detail::CopyKind>(i)));
  }
  for (int i = 0; i <= static_cast<int>(MemoryKind::kAsync); ++i) {
    EXPECT_EQ(to_string(static_cast<MemoryKind>(i)),
              detail::alloc_kind_name(static_cast<detail::AllocKind>(i)));
  }
}

}  // namespace
}  // namespace powertrain::emulate
