// The emulation trace reader: typed records, one-line errors naming file:line and field, a
// truncated last line and unknown ops as counted warnings.
#include "emulate/emulation_trace.h"

#include <gtest/gtest.h>

#include "emulate/trace_writer.h"
#include "emulate_test_util.h"

namespace powertrain::emulate {
namespace {

using testing::TempDir;

const std::string kProcess =
    R"({"op":"process","version":1,"pid":7,"rank":3,"world_size":8,"local_rank":3,"devices":1,)"
    R"("gpu":"h100","program":"./prog","argv":["./prog","--x"],"start_unix_ns":1})"
    "\n";

std::string error_of(const std::string& text, const std::string& source = "trace-12.jsonl") {
  auto trace = parse_emulation_trace(text, source);
  return trace.ok() ? "no error" : trace.error().message;
}

TEST(EmulationTrace, ParsesEveryRecordKind) {
  TraceWriter w(2, 4, 2);
  w.register_kernel("_Z1kv", "k()");
  w.kernel("_Z1kv", 3, 128, 0);
  w.gemm(64, 32, 16, "bfloat16", 0, 2);
  w.memcpy("HtoD", 4096, true);
  w.memset(100, false);
  const std::int64_t ptr = w.malloc(1 << 20);
  w.free(ptr);
  w.stream_create(5);
  w.event_create(1);
  w.event_record(1, 5);
  w.stream_wait_event(0, 1);
  w.stream_sync(5);
  w.event_sync(1);
  w.device_sync();
  w.set_device(1);
  w.comm_init("abc", 1, 4);
  w.nccl("send", "abc", 1, 4, 10, "float16", 0, 3, 7);
  w.unsupported("cudaGraphLaunch");
  w.misuse("cudaFree", "double free");
  auto trace = parse_emulation_trace(w.finish(), "t.jsonl");
  ASSERT_TRUE(trace.ok()) << trace.error().message;
  EXPECT_EQ(trace->process.rank, 2);
  EXPECT_EQ(trace->process.devices, 2);
  EXPECT_EQ(trace->process.argv.size(), 1u);
  ASSERT_EQ(trace->records.size(), 19u);
  EXPECT_TRUE(trace->has_exit);
  EXPECT_TRUE(trace->warnings.empty());
  const Record& k = trace->records[1];
  EXPECT_EQ(k.op, OpKind::kKernel);
  EXPECT_EQ(trace->str(k.name), "_Z1kv");
  EXPECT_DOUBLE_EQ(k.threads(), 3 * 128);
  EXPECT_EQ(k.line, 3);
  const Record& g = trace->records[2];
  EXPECT_EQ(g.op, OpKind::kGemm);
  EXPECT_EQ(g.m, 64);
  EXPECT_EQ(g.batch, 2);
  EXPECT_EQ(g.dtype_a, Dtype::kBfloat16);
  EXPECT_DOUBLE_EQ(g.flops, 2.0 * 64 * 32 * 16 * 2);
  EXPECT_EQ(trace->records[3].copy, CopyKind::kHtoD);
  EXPECT_TRUE(trace->records[3].async);
  EXPECT_FALSE(trace->records[4].async);
  EXPECT_EQ(trace->records[5].used_bytes, 1 << 20);
  EXPECT_EQ(trace->records[6].used_bytes, 0);
  const Record& n = trace->records[16];
  EXPECT_EQ(n.op, OpKind::kNccl);
  EXPECT_EQ(n.collective, Collective::kSend);
  EXPECT_EQ(n.peer, 3);
  EXPECT_EQ(n.group, 7);
  EXPECT_EQ(n.bytes, 20);
  EXPECT_EQ(n.device, 1);
  EXPECT_EQ(trace->str(n.detail), "abc");
  EXPECT_EQ(trace->str(trace->records[18].detail), "double free");
}

TEST(EmulationTrace, MissingFieldNamesFileLineAndField) {
  const std::string text = kProcess +
                           R"({"op":"kernel","t":1,"dt":1,"tid":0,"dev":0,"corr":1,"name":"k",)"
                           R"("grid":[1,1,1],"block":[1,1,1]})"
                           "\n";
  EXPECT_EQ(error_of(text), "trace-12.jsonl:2: field 'stream' missing in 'kernel' record");
}

TEST(EmulationTrace, WrongTypesAndRangesAreOneLineErrors) {
  EXPECT_EQ(error_of(kProcess + R"({"op":"stream_sync","t":"1","tid":0,"dev":0,"stream":0})"
                                "\n"),
            "trace-12.jsonl:2: field 't' in 'stream_sync' record: expected an integer, got a "
            "string");
  EXPECT_EQ(error_of(kProcess + R"({"op":"memset","t":1,"tid":0,"dev":0,"stream":0,"corr":1,)"
                                R"("bytes":-5,"async":true})"
                                "\n"),
            "trace-12.jsonl:2: field 'bytes' in 'memset' record: expected a non-negative "
            "integer, got -5");
  EXPECT_EQ(error_of(kProcess + R"({"op":"device_sync","t":1,"tid":0,"dev":3})"
                                "\n"),
            "trace-12.jsonl:2: field 'dev' in 'device_sync' record: device 3 but the process has "
            "1 device(s)");
  EXPECT_EQ(error_of(kProcess + R"({"op":"memcpy","t":1,"tid":0,"dev":0,"stream":0,"corr":1,)"
                                R"("kind":"sideways","bytes":1,"async":true})"
                                "\n"),
            "trace-12.jsonl:2: field 'kind' in 'memcpy' record: unknown copy kind 'sideways'");
  EXPECT_EQ(error_of(kProcess + R"({"op":"nccl","t":1,"tid":0,"dev":0,"stream":0,"corr":1,)"
                                R"("coll":"send","comm":"c","comm_rank":0,"comm_size":2,"count":1,)"
                                R"("dtype":"float32","bytes":4,"seq":0,"peer":0})"
                                "\n"),
            "trace-12.jsonl:2: field 'peer' in 'nccl' record: 0 is not another rank of a "
            "communicator of 2");
  EXPECT_EQ(error_of(kProcess + R"({"op":"kernel","t":1,"tid":0,"dev":0,"stream":0,"corr":1,)"
                                R"("name":"k","grid":[1,1],"block":[1,1,1]})"
                                "\n"),
            "trace-12.jsonl:2: field 'grid' in 'kernel' record: expected an array of 3 "
            "integers, got an array");
}

TEST(EmulationTrace, BadStructureIsAnError) {
  EXPECT_EQ(error_of(""), "trace-12.jsonl: empty trace");
  EXPECT_EQ(error_of(R"({"op":"kernel"})"
                     "\n"),
            "trace-12.jsonl:1: expected a 'process' record first, got 'kernel'");
  std::string v2 = kProcess;
  v2.replace(v2.find("\"version\":1"), 11, "\"version\":2");
  EXPECT_EQ(error_of(v2),
            "trace-12.jsonl:1: trace version 2 is not supported (this powertrain reads version 1)");
  EXPECT_EQ(error_of(kProcess + "{\"op\":\"device_sync\",\"t\":1,\n{\"op\":\"exit\"}\n"),
            "trace-12.jsonl:2: invalid JSON (The JSON document has an improper "
            "structure: missing or superfluous commas, braces, missing keys, etc.)");
  EXPECT_EQ(error_of(kProcess + "[1,2]\n"),
            "trace-12.jsonl:2: expected a JSON object, got an array");
  EXPECT_EQ(error_of(kProcess + R"({"t":1})"
                                "\n"),
            "trace-12.jsonl:2: field 'op' missing");
  EXPECT_EQ(error_of(kProcess + kProcess), "trace-12.jsonl:2: a second 'process' record");
  std::string bad_rank = kProcess;
  bad_rank.replace(bad_rank.find("\"rank\":3"), 8, "\"rank\":9");
  EXPECT_EQ(error_of(bad_rank),
            "trace-12.jsonl:1: field 'rank' in 'process' record: rank 9 is not below world_size 8");
}

TEST(EmulationTrace, TruncatedLastLineIsACountedWarning) {
  TraceWriter w(0, 1);
  w.kernel("k", 1, 1);
  w.kernel("k", 1, 1);
  std::string text = w.finish(false);
  text += R"({"op":"kernel","t":99,"tid":0,"dev":0,"str)";  // killed while writing
  auto trace = parse_emulation_trace(text, "trace-1.jsonl");
  ASSERT_TRUE(trace.ok()) << trace.error().message;
  EXPECT_EQ(trace->records.size(), 2u);
  ASSERT_EQ(trace->warnings.size(), 2u);
  EXPECT_EQ(trace->warnings[0].kind, "truncated last line");
  EXPECT_EQ(trace->warnings[0].count, 1);
  EXPECT_EQ(trace->warnings[0].example, "trace-1.jsonl:4: ignored (42 bytes)");
  EXPECT_EQ(trace->warnings[1].kind, "no 'exit' record (the process did not exit normally)");
}

TEST(EmulationTrace, UnknownOpsAndDtypesAreCountedWarnings) {
  TraceWriter w(0, 1);
  w.raw(R"({"op":"texture_bind","t":5,"tid":0,"dev":0})");
  w.raw(R"({"op":"texture_bind","t":6,"tid":0,"dev":0})");
  w.raw(R"({"op":"nccl","t":7,"tid":0,"dev":0,"stream":0,"corr":1,"coll":"allreduce","comm":"c",)"
        R"("comm_rank":0,"comm_size":1,"count":1,"dtype":"float4","bytes":1,"seq":0})");
  auto trace = parse_emulation_trace(w.finish(), "t.jsonl");
  ASSERT_TRUE(trace.ok()) << trace.error().message;
  ASSERT_EQ(trace->warnings.size(), 2u);
  EXPECT_EQ(trace->warnings[0].kind, "unknown op");
  EXPECT_EQ(trace->warnings[0].count, 2);
  EXPECT_EQ(trace->warnings[0].example, "t.jsonl:2: 'texture_bind' ignored");
  EXPECT_EQ(trace->warnings[1].kind, "unknown dtype");
  EXPECT_EQ(trace->records.size(), 1u);
  EXPECT_EQ(trace->records[0].dtype, Dtype::kUnknown);
}

TEST(EmulationTrace, ReadsDirectoriesInNameOrder) {
  TempDir dir;
  dir.write("trace-20.jsonl", TraceWriter(1, 2).finish());
  dir.write("trace-10.jsonl", TraceWriter(0, 2).finish());
  dir.write("notes.txt", "not a trace");
  auto traces = read_emulation_traces({dir.path().string()});
  ASSERT_TRUE(traces.ok()) << traces.error().message;
  ASSERT_EQ(traces->size(), 2u);
  EXPECT_EQ((*traces)[0].source, "trace-10.jsonl");
  EXPECT_EQ((*traces)[1].process.rank, 1);

  TempDir empty;
  auto none = read_emulation_traces({empty.path().string()});
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message.find("no trace-*.jsonl files"), std::string::npos);
  auto missing = read_emulation_traces({"/nonexistent/trace-1.jsonl"});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().message, "/nonexistent/trace-1.jsonl: no such file or directory");
  EXPECT_FALSE(read_emulation_traces({}).ok());
}

TEST(EmulationTrace, LimitsAreEnforced) {
  TraceReadOptions options;
  options.max_line_bytes = 64;
  TraceWriter w(0, 1);
  w.kernel(std::string(100, 'k'), 1, 1);
  auto trace = parse_emulation_trace(w.finish(), "t.jsonl", options);
  ASSERT_FALSE(trace.ok());
  EXPECT_NE(trace.error().message.find("longer than the limit of 64"), std::string::npos);
  options = {};
  options.max_records = 1;
  TraceWriter two(0, 1);
  two.kernel("a", 1, 1);
  two.kernel("b", 1, 1);
  EXPECT_FALSE(parse_emulation_trace(two.finish(), "t.jsonl", options).ok());
}

}  // namespace
}  // namespace powertrain::emulate

namespace powertrain::emulate {
namespace {

// The records of the driver API, cuRAND and NVTX: module loads, mappings and cuRAND calls are
// informational (no record, no warning); NVTX records become annotations; a bad one is an error
// naming its line, an unknown NVTX kind a counted warning.
TEST(EmulationTrace, DriverLibraryAndNvtxRecords) {
  const std::string text =
      kProcess +
      R"({"op":"module_load","t":1,"tid":0,"dev":0,"api":"cuModuleLoadData","format":"ptx","kernels":["k"],"names_known":true,"dt":1})"
      "\n"
      R"({"op":"mem_map","t":2,"tid":0,"dev":0,"ptr":4096,"bytes":2097152,"offset":0,"handle":8192,"api":"cuMemMap","dt":1})"
      "\n"
      R"({"op":"curand","t":3,"tid":0,"dev":0,"api":"curandGenerateUniform","distribution":"uniform","dtype":"float32","count":4,"generator":100,"stream":0,"dt":1})"
      "\n"
      R"({"op":"nvtx","t":4,"tid":0,"dev":0,"kind":"push","name":"step","depth":0,"dt":1})"
      "\n"
      R"({"op":"nvtx","t":5,"tid":0,"dev":0,"kind":"start","name":"io","id":7,"dt":1})"
      "\n"
      R"({"op":"nvtx","t":6,"tid":0,"dev":0,"kind":"end","id":7,"dt":1})"
      "\n"
      R"({"op":"nvtx","t":7,"tid":0,"dev":0,"kind":"pop","depth":0,"dt":1})"
      "\n"
      R"({"op":"nvtx","t":8,"tid":0,"dev":0,"kind":"sparkle","dt":1})"
      "\n"
      R"({"op":"mem_unmap","t":9,"tid":0,"dev":0,"ptr":4096,"bytes":2097152,"api":"cuMemUnmap","dt":1})"
      "\n"
      R"({"op":"exit","t":10,"records":9,"peak_used":[0],"used":[0],"misuse":0})"
      "\n";
  auto trace = parse_emulation_trace(text, "t.jsonl");
  ASSERT_TRUE(trace.ok()) << trace.error().message;
  EXPECT_TRUE(trace->records.empty());
  ASSERT_EQ(trace->annotations.size(), 4u);
  EXPECT_EQ(trace->annotations[0].kind, Annotation::Kind::kPush);
  EXPECT_EQ(trace->str(trace->annotations[0].name), "step");
  EXPECT_EQ(trace->annotations[1].kind, Annotation::Kind::kStart);
  EXPECT_EQ(trace->annotations[1].id, 7);
  EXPECT_EQ(trace->annotations[2].kind, Annotation::Kind::kEnd);
  EXPECT_EQ(trace->annotations[3].kind, Annotation::Kind::kPop);
  EXPECT_EQ(trace->annotations[3].t_ns, 7);
  ASSERT_EQ(trace->warnings.size(), 1u);
  EXPECT_EQ(trace->warnings[0].kind, "unknown nvtx kind");

  EXPECT_EQ(error_of(kProcess + R"({"op":"nvtx","t":4,"tid":0,"dev":0,"name":"x","dt":1})"
                                "\n",
                     "t.jsonl"),
            "t.jsonl:2: field 'kind' missing in 'nvtx' record");
  EXPECT_NE(error_of(kProcess + R"({"op":"nvtx","t":4,"tid":0,"dev":0,"kind":"end","dt":1})"
                                "\n",
                     "t.jsonl")
                .find("t.jsonl:2: field 'id'"),
            std::string::npos);
}

}  // namespace
}  // namespace powertrain::emulate
