// The emulation trace reader: one simdjson DOM parse per line (lines are slices of one padded
// buffer, so nothing is copied per line), typed field accessors that remember the first error
// with its file:line and field, and string interning for names, APIs and communicator ids.
#include "emulate/emulation_trace.h"

#include <fmt/core.h>
#include <simdjson.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <unordered_map>

#include "core/input_limits.h"
#include "graph/execution_graph.h"
#include "interposer/trace_schema.h"

namespace powertrain::emulate {
namespace {

namespace ops = trace_schema::op;
namespace field = trace_schema::field;

constexpr std::int64_t kMaxQuantity = std::int64_t{1} << 50;  // bytes, counts, GEMM dimensions
constexpr std::int64_t kMaxTime = std::int64_t{1} << 53;      // ns (104 days)
constexpr std::int64_t kMaxRanks = std::int64_t{1} << 20;

struct OpName {
  std::string_view name;
  OpKind kind;
};
constexpr OpName kOps[] = {
    {ops::kRegister, OpKind::kRegister},
    {ops::kKernel, OpKind::kKernel},
    {ops::kMemcpy, OpKind::kMemcpy},
    {ops::kMemset, OpKind::kMemset},
    {ops::kMalloc, OpKind::kMalloc},
    {ops::kFree, OpKind::kFree},
    {ops::kStreamCreate, OpKind::kStreamCreate},
    {ops::kStreamDestroy, OpKind::kStreamDestroy},
    {ops::kEventCreate, OpKind::kEventCreate},
    {ops::kEventDestroy, OpKind::kEventDestroy},
    {ops::kEventRecord, OpKind::kEventRecord},
    {ops::kStreamWaitEvent, OpKind::kStreamWaitEvent},
    {ops::kStreamSync, OpKind::kStreamSync},
    {ops::kEventSync, OpKind::kEventSync},
    {ops::kDeviceSync, OpKind::kDeviceSync},
    {ops::kSetDevice, OpKind::kSetDevice},
    {ops::kCommInit, OpKind::kCommInit},
    {ops::kNccl, OpKind::kNccl},
    {ops::kGemm, OpKind::kGemm},
    {ops::kHostFunc, OpKind::kHostFunc},
    {ops::kUnsupported, OpKind::kUnsupported},
    {ops::kMisuse, OpKind::kMisuse},
    {ops::kAssumption, OpKind::kAssumption},
    {ops::kDeviceReset, OpKind::kDeviceReset},
    {ops::kGraphLaunch, OpKind::kGraphLaunch},
    {ops::kClockLock, OpKind::kClockLock},
};

// Records that describe the process but carry no work or dependency for the timeline: driver
// module loads and virtual-memory mappings (the physical allocations are malloc/free records),
// and cuRAND, cuFFT, cuSPARSE and cuDNN-graph calls (their work is the kernel or gemm records
// that follow). NVTX records are kept apart as annotations (annotation_line).
constexpr std::string_view kInformationalOps[] = {ops::kModuleLoad, ops::kMemMap, ops::kMemUnmap,
                                                  ops::kCurand,     ops::kFft,    ops::kSparse,
                                                  ops::kDnnGraph};

struct DtypeName {
  std::string_view name;
  Dtype dtype;
  int bytes;
};
constexpr DtypeName kDtypes[] = {
    {"float32", Dtype::kFloat32, 4},
    {"float16", Dtype::kFloat16, 2},
    {"bfloat16", Dtype::kBfloat16, 2},
    {"float64", Dtype::kFloat64, 8},
    {"int8", Dtype::kInt8, 1},
    {"uint8", Dtype::kUint8, 1},
    {"int32", Dtype::kInt32, 4},
    {"int64", Dtype::kInt64, 8},
    {"uint32", Dtype::kUint32, 4},
    {"uint64", Dtype::kUint64, 8},
    {"float8_e4m3", Dtype::kFloat8E4m3, 1},
    {"float8_e5m2", Dtype::kFloat8E5m2, 1},
    {"complex64", Dtype::kComplex64, 8},
    {"complex128", Dtype::kComplex128, 16},
};

using trace_schema::kCollectives;
using trace_schema::kCopyKinds;
using trace_schema::kMemoryKinds;
// The schema's name lists are indexed by these enums.
static_assert(std::size(kCopyKinds) == static_cast<std::size_t>(CopyKind::kPtoP) + 1);
static_assert(std::size(kMemoryKinds) == static_cast<std::size_t>(MemoryKind::kAsync) + 1);
static_assert(std::size(kCollectives) == static_cast<std::size_t>(Collective::kAllToAll) + 1);

std::string_view type_name(const simdjson::dom::element& value) {
  switch (value.type()) {
    case simdjson::dom::element_type::ARRAY:
      return "an array";
    case simdjson::dom::element_type::OBJECT:
      return "an object";
    case simdjson::dom::element_type::INT64:
    case simdjson::dom::element_type::UINT64:
      return "an integer";
    case simdjson::dom::element_type::DOUBLE:
      return "a number";
    case simdjson::dom::element_type::STRING:
      return "a string";
    case simdjson::dom::element_type::BOOL:
      return "a boolean";
    case simdjson::dom::element_type::NULL_VALUE:
      return "null";
  }
  return "a value";
}

// Reads fields of one JSON object; the first problem is kept in `error` (later reads are no-ops
// that return defaults), so a record is parsed straight through and checked once.
class Fields {
 public:
  Fields(simdjson::dom::object object, const std::string& source, std::int64_t line,
         std::string_view op)
      : object_(object), source_(source), line_(line), op_(op) {}

  bool failed() const { return !error_.empty(); }
  const std::string& error() const { return error_; }
  void fail(std::string_view field, std::string_view what) {
    if (error_.empty()) {
      error_ =
          fmt::format("{}:{}: field '{}' in '{}' record: {}", source_, line_, field, op_, what);
    }
  }

  bool has(std::string_view key) {
    simdjson::dom::element value;
    return object_.at_key(key).get(value) == simdjson::SUCCESS && !value.is_null();
  }

  std::int64_t integer(std::string_view key, bool required = true, std::int64_t fallback = 0) {
    simdjson::dom::element value;
    if (!lookup(key, required, value)) return fallback;
    std::int64_t out = 0;
    if (value.get_int64().get(out) != simdjson::SUCCESS) {
      fail(key, fmt::format("expected an integer, got {}", type_name(value)));
      return fallback;
    }
    return out;
  }
  // A non-negative integer (bytes, counts, times) up to `highest`, so that sums of a trace's
  // values cannot overflow.
  std::int64_t count(std::string_view key, bool required = true, std::int64_t fallback = 0,
                     std::int64_t highest = kMaxQuantity) {
    const std::int64_t value = integer(key, required, fallback);
    if (failed()) return fallback;
    if (value < 0) {
      fail(key, fmt::format("expected a non-negative integer, got {}", value));
      return fallback;
    }
    if (value > highest) {
      fail(key, fmt::format("{} is larger than the limit of {}", value, highest));
      return fallback;
    }
    return value;
  }
  std::int32_t small(std::string_view key, bool required = true, std::int32_t fallback = 0,
                     std::int64_t lowest = std::numeric_limits<std::int32_t>::min(),
                     std::int64_t highest = std::numeric_limits<std::int32_t>::max()) {
    const std::int64_t value = integer(key, required, fallback);
    if (failed()) return fallback;
    if (value < lowest || value > highest) {
      fail(key, fmt::format("{} is out of range [{}, {}]", value, lowest, highest));
      return fallback;
    }
    return static_cast<std::int32_t>(value);
  }
  double number(std::string_view key, bool required = true) {
    simdjson::dom::element value;
    if (!lookup(key, required, value)) return 0.0;
    double out = 0.0;
    if (value.get_double().get(out) != simdjson::SUCCESS || !(out == out)) {
      fail(key, fmt::format("expected a number, got {}", type_name(value)));
      return 0.0;
    }
    return out;
  }
  bool boolean(std::string_view key, bool required = true, bool fallback = false) {
    simdjson::dom::element value;
    if (!lookup(key, required, value)) return fallback;
    bool out = false;
    if (value.get_bool().get(out) != simdjson::SUCCESS) {
      fail(key, fmt::format("expected true or false, got {}", type_name(value)));
      return fallback;
    }
    return out;
  }
  std::string_view string(std::string_view key, bool required = true) {
    simdjson::dom::element value;
    if (!lookup(key, required, value)) return {};
    std::string_view out;
    if (value.get_string().get(out) != simdjson::SUCCESS) {
      fail(key, fmt::format("expected a string, got {}", type_name(value)));
      return {};
    }
    return out;
  }
  // A fixed-size integer array such as grid[3].
  void triple(std::string_view key, std::int64_t out[3]) {
    simdjson::dom::element value;
    if (!lookup(key, true, value)) return;
    simdjson::dom::array array;
    if (value.get_array().get(array) != simdjson::SUCCESS || array.size() != 3) {
      fail(key, fmt::format("expected an array of 3 integers, got {}", type_name(value)));
      return;
    }
    int i = 0;
    for (simdjson::dom::element item : array) {
      std::int64_t v = 0;
      if (item.get_int64().get(v) != simdjson::SUCCESS || v < 0 || v > (std::int64_t{1} << 31)) {
        fail(key, "expected an array of 3 integers in [0, 2^31]");
        return;
      }
      out[i++] = v;
    }
  }
  std::vector<std::int64_t> integers(std::string_view key, bool required, std::size_t max_items) {
    std::vector<std::int64_t> out;
    simdjson::dom::element value;
    if (!lookup(key, required, value)) return out;
    simdjson::dom::array array;
    if (value.get_array().get(array) != simdjson::SUCCESS) {
      fail(key, fmt::format("expected an array of integers, got {}", type_name(value)));
      return out;
    }
    for (simdjson::dom::element item : array) {
      std::int64_t v = 0;
      if (item.get_int64().get(v) != simdjson::SUCCESS || out.size() >= max_items) {
        fail(key, fmt::format("expected an array of at most {} integers", max_items));
        return {};
      }
      out.push_back(v);
    }
    return out;
  }
  std::vector<std::string> strings(std::string_view key, bool required, std::size_t max_items) {
    std::vector<std::string> out;
    simdjson::dom::element value;
    if (!lookup(key, required, value)) return out;
    simdjson::dom::array array;
    if (value.get_array().get(array) != simdjson::SUCCESS) {
      fail(key, fmt::format("expected an array of strings, got {}", type_name(value)));
      return out;
    }
    for (simdjson::dom::element item : array) {
      std::string_view v;
      if (item.get_string().get(v) != simdjson::SUCCESS || out.size() >= max_items) {
        fail(key, fmt::format("expected an array of at most {} strings", max_items));
        return {};
      }
      out.emplace_back(v);
    }
    return out;
  }

 private:
  bool lookup(std::string_view key, bool required, simdjson::dom::element& value) {
    if (failed()) return false;
    if (object_.at_key(key).get(value) != simdjson::SUCCESS || value.is_null()) {
      if (required) {
        error_ = fmt::format("{}:{}: field '{}' missing in '{}' record", source_, line_, key, op_);
      }
      return false;
    }
    return true;
  }

  simdjson::dom::object object_;
  const std::string& source_;
  std::int64_t line_;
  std::string_view op_;
  std::string error_;
};

template <typename Enum, std::size_t N>
bool parse_enum(std::string_view text, const std::string_view (&names)[N], Enum& out) {
  for (std::size_t i = 0; i < N; ++i) {
    if (names[i] == text) {
      out = static_cast<Enum>(i);
      return true;
    }
  }
  return false;
}

class Parser {
 public:
  Parser(const std::string& source, const TraceReadOptions& options)
      : source_(source), options_(options) {
    trace_.source = source;
  }

  core::Result<ProcessTrace> run(std::string_view text) {
    if (text.empty()) return core::Error{fmt::format("{}: empty trace", source_)};
    simdjson::padded_string buffer(text);
    const char* data = buffer.data();
    const std::size_t size = buffer.size();
    std::size_t begin = 0;
    std::int64_t line = 0;
    while (begin < size) {
      std::size_t end = std::string_view(data + begin, size - begin).find('\n');
      const bool has_newline = end != std::string_view::npos;
      end = has_newline ? begin + end : size;
      ++line;
      std::string_view slice(data + begin, end - begin);
      if (!slice.empty() && slice.back() == '\r') slice.remove_suffix(1);
      begin = end + 1;
      if (slice.find_first_not_of(" \t") == std::string_view::npos) {
        if (line == 1)
          return core::Error{fmt::format("{}:1: expected a 'process' record", source_)};
        continue;
      }
      if (slice.size() > options_.max_line_bytes) {
        return core::Error{fmt::format("{}:{}: line of {} bytes is longer than the limit of {}",
                                       source_, line, slice.size(), options_.max_line_bytes)};
      }
      if (line > std::numeric_limits<std::int32_t>::max()) {
        return core::Error{fmt::format("{}: more than 2^31 lines", source_)};
      }
      simdjson::dom::element root;
      const simdjson::error_code code = parser_.parse(slice.data(), slice.size(), false).get(root);
      if (code != simdjson::SUCCESS) {
        // A process killed while writing leaves a partial last line without its newline.
        if (!has_newline && line > 1) {
          graph::add_warning(trace_.warnings, "truncated last line",
                             fmt::format("{}:{}: ignored ({} bytes)", source_, line, slice.size()));
          break;
        }
        return core::Error{
            fmt::format("{}:{}: invalid JSON ({})", source_, line, simdjson::error_message(code))};
      }
      simdjson::dom::object object;
      if (root.get_object().get(object) != simdjson::SUCCESS) {
        return core::Error{
            fmt::format("{}:{}: expected a JSON object, got {}", source_, line, type_name(root))};
      }
      std::string_view op;
      simdjson::dom::element op_value;
      if (object.at_key(field::kOp).get(op_value) != simdjson::SUCCESS) {
        return core::Error{fmt::format("{}:{}: field 'op' missing", source_, line)};
      }
      if (op_value.get_string().get(op) != simdjson::SUCCESS) {
        return core::Error{fmt::format("{}:{}: field 'op': expected a string, got {}", source_,
                                       line, type_name(op_value))};
      }
      std::string error;
      if (line == 1) {
        error = process_line(object, op, line);
      } else if (op == ops::kProcess) {
        error = fmt::format("{}:{}: a second 'process' record", source_, line);
      } else if (op == ops::kExit) {
        error = exit_line(object, line);
      } else {
        error = record_line(object, op, line);
      }
      if (!error.empty()) return core::Error{std::move(error)};
      if (trace_.records.size() > options_.max_records) {
        return core::Error{fmt::format("{}: more than {} records", source_, options_.max_records)};
      }
    }
    if (line == 0) return core::Error{fmt::format("{}: empty trace", source_)};
    scope_process_local_communicators();
    if (!trace_.has_exit) {
      graph::add_warning(trace_.warnings, "no 'exit' record (the process did not exit normally)",
                         source_);
    }
    return std::move(trace_);
  }

 private:
  // ncclCommInitAll builds a clique inside one process, so its id means something only there: it
  // is qualified with the trace ("<id>@<source>"). Interposers before the per-process nonce
  // derived it from RANK and a call counter, and independent processes without distinct RANKs
  // then wrote the same id ("communicator ... rank 0 initialized twice").
  void scope_process_local_communicators() {
    std::unordered_map<std::uint32_t, std::uint32_t> scoped;
    for (std::int32_t i : trace_.comm_records) {
      const Record& r = trace_.records[i];
      if (r.op == OpKind::kCommInit && trace_.str(r.name) == "ncclCommInitAll")
        scoped.emplace(r.detail, kNoString);
    }
    if (scoped.empty()) return;
    for (auto& [from, to] : scoped) {
      to = intern(fmt::format("{}@{}", std::string(trace_.str(from)), source_));
    }
    for (std::int32_t i : trace_.comm_records) {
      Record& r = trace_.records[i];
      if (const auto it = scoped.find(r.detail); it != scoped.end()) r.detail = it->second;
    }
  }

  std::uint32_t intern(std::string_view text) {
    auto it = interned_.find(std::string(text));
    if (it != interned_.end()) return it->second;
    const auto index = static_cast<std::uint32_t>(trace_.strings.size());
    trace_.strings.emplace_back(text);
    interned_.emplace(trace_.strings.back(), index);
    return index;
  }

  std::string process_line(simdjson::dom::object object, std::string_view op, std::int64_t line) {
    if (op != ops::kProcess) {
      return fmt::format("{}:1: expected a 'process' record first, got '{}'", source_, op);
    }
    Fields f(object, source_, line, op);
    ProcessInfo& p = trace_.process;
    p.version = f.small(field::kVersion);
    if (!f.failed() && p.version != trace_schema::kVersion) {
      return fmt::format(
          "{}:1: trace version {} is not supported (this powertrain reads version 1)", source_,
          p.version);
    }
    p.pid = f.integer(field::kPid);
    p.forked_from = f.integer(field::kForkedFrom, false);
    p.rank = f.small(field::kRank, true, -1, -1, kMaxRanks);
    p.world_size = f.small(field::kWorldSize, true, -1, -1, kMaxRanks);
    p.local_rank = f.small(field::kLocalRank, false, -1, -1, kMaxRanks);
    p.devices = f.small(field::kDevices, true, 1, 1);
    if (!f.failed() && p.devices > options_.max_devices) {
      f.fail(field::kDevices,
             fmt::format("{} is more than the limit of {}", p.devices, options_.max_devices));
    }
    p.gpu = std::string(f.string(field::kGpu, false));
    p.program = std::string(f.string(field::kProgram, false));
    p.argv = f.strings(field::kArgv, false, 4096);
    // Non-negative and below 2^62, so the differences of two processes' starts cannot overflow.
    p.start_unix_ns = f.count(field::kStartUnixNs, false, 0, std::int64_t{1} << 62);
    if (!f.failed() && p.world_size >= 0 && p.rank >= p.world_size) {
      f.fail(field::kRank, fmt::format("rank {} is not below world_size {}", p.rank, p.world_size));
    }
    return f.error();
  }

  std::string exit_line(simdjson::dom::object object, std::int64_t line) {
    if (trace_.has_exit) return fmt::format("{}:{}: a second 'exit' record", source_, line);
    Fields f(object, source_, line, ops::kExit);
    trace_.exit_peak_used_bytes =
        f.integers(field::kPeakUsed, false, static_cast<std::size_t>(options_.max_devices));
    trace_.has_exit = true;
    return f.error();
  }

  Dtype dtype(Fields& f, std::string_view key, bool required = true) {
    const std::string_view name = f.string(key, required);
    if (f.failed() || name.empty()) return Dtype::kUnknown;
    for (const DtypeName& d : kDtypes) {
      if (d.name == name) return d.dtype;
    }
    graph::add_warning(trace_.warnings, "unknown dtype",
                       fmt::format("{}: '{}' (estimated as 2 bytes per element)", source_, name));
    return Dtype::kUnknown;
  }

  // An `nvtx` record: kind, t, tid, and name (push/start/mark) or id (start/end).
  std::string annotation_line(simdjson::dom::object object, std::int64_t line) {
    Fields f(object, source_, line, ops::kNvtx);
    Annotation a;
    a.t_ns = f.count(field::kT, true, 0, kMaxTime);
    a.tid = static_cast<std::int32_t>(f.small(field::kTid, true, 0, 0, kMaxRanks));
    std::string_view kind;
    if (object.at_key(field::kKind).get_string().get(kind) != simdjson::SUCCESS) {
      return fmt::format("{}:{}: field 'kind' missing in 'nvtx' record", source_, line);
    }
    if (kind == "push") {
      a.kind = Annotation::Kind::kPush;
    } else if (kind == "pop") {
      a.kind = Annotation::Kind::kPop;
    } else if (kind == "start") {
      a.kind = Annotation::Kind::kStart;
    } else if (kind == "end") {
      a.kind = Annotation::Kind::kEnd;
    } else if (kind == "mark") {
      a.kind = Annotation::Kind::kMark;
    } else {
      graph::add_warning(trace_.warnings, "unknown nvtx kind",
                         fmt::format("{}:{}: '{}' ignored", source_, line, kind));
      return {};
    }
    if (a.kind == Annotation::Kind::kStart || a.kind == Annotation::Kind::kEnd) {
      a.id = f.count(field::kId, true, 0, kMaxTime);
    }
    std::string_view name;
    if (object.at_key(field::kName).get_string().get(name) == simdjson::SUCCESS) {
      a.name = intern(name);
    }
    if (f.failed()) return f.error();
    trace_.annotations.push_back(a);
    return {};
  }

  std::string record_line(simdjson::dom::object object, std::string_view op, std::int64_t line) {
    const OpName* known = nullptr;
    for (const OpName& o : kOps) {
      if (o.name == op) {
        known = &o;
        break;
      }
    }
    if (known == nullptr) return other_line(object, op, line);
    const OpKind kind = known->kind;
    Fields f(object, source_, line, op);
    Record r;
    r.op = kind;
    r.line = static_cast<std::int32_t>(line);
    read_common(f, r);
    if (!read_fields(object, f, r)) return {};  // skipped with a warning
    if (f.failed()) return f.error();
    if (enqueues_gpu_work(kind) && r.stream < 0) {
      // Invalid handles are reported as misuse records by the interposer; work records carry
      // valid stream ids.
      return fmt::format("{}:{}: field 'stream' in '{}' record: expected a stream id >= 0, got {}",
                         source_, line, op, r.stream);
    }
    if (kind == OpKind::kCommInit || kind == OpKind::kNccl) {
      trace_.comm_records.push_back(static_cast<std::int32_t>(trace_.records.size()));
    }
    trace_.records.push_back(r);
    return {};
  }

  // An op that is not a record of work: an annotation, an informational record (skipped) or an
  // unknown op (counted warning).
  std::string other_line(simdjson::dom::object object, std::string_view op, std::int64_t line) {
    if (op == ops::kNvtx) return annotation_line(object, line);
    for (std::string_view informational : kInformationalOps) {
      if (op == informational) return {};
    }
    graph::add_warning(trace_.warnings, "unknown op",
                       fmt::format("{}:{}: '{}' ignored", source_, line, op));
    return {};
  }

  // t, dt, tid, dev: the fields of every record.
  void read_common(Fields& f, Record& r) const {
    r.t_ns = f.count(field::kT, true, 0, kMaxTime);
    r.dt_ns = f.count(field::kDt, false, 0, kMaxTime);
    r.tid = f.small(field::kTid, true, 0, 0, kMaxRanks);
    r.device = f.small(field::kDev, true, 0, 0);
    if (!f.failed() && r.device >= trace_.process.devices) {
      f.fail(field::kDev, fmt::format("device {} but the process has {} device(s)", r.device,
                                      trace_.process.devices));
    }
  }

  void read_api(Fields& f, Record& r, bool required) {
    const std::string_view name = f.string(field::kApi, required);
    if (!name.empty()) r.name = intern(name);
  }

  static void read_stream_and_corr(Fields& f, Record& r) {
    r.stream = f.integer(field::kStream);
    r.correlation = f.integer(field::kCorr);
  }

  // The fields of r.op; false when the record is skipped (an unknown collective, warned).
  bool read_fields(simdjson::dom::object object, Fields& f, Record& r) {
    switch (r.op) {
      case OpKind::kRegister:
        r.name = intern(f.string(field::kName));
        if (const std::string_view display = f.string(field::kDisplay, false); !display.empty()) {
          r.detail = intern(display);
        }
        break;
      case OpKind::kKernel:
        read_kernel(f, r);
        break;
      case OpKind::kMemcpy:
      case OpKind::kMemset:
        read_copy(f, r);
        break;
      case OpKind::kMalloc:
      case OpKind::kFree:
        read_allocation(f, r);
        break;
      case OpKind::kStreamCreate:
        r.stream = f.integer(field::kStream);
        r.flags = f.integer(field::kFlags, false, 0);
        break;
      case OpKind::kStreamDestroy:
        r.stream = f.integer(field::kStream);
        break;
      case OpKind::kStreamSync:  // api: cudaStreamQuery when a query answered "ready"
        r.stream = f.integer(field::kStream);
        read_api(f, r, false);
        break;
      case OpKind::kEventCreate:
      case OpKind::kEventDestroy:
      case OpKind::kEventSync:
        r.event = f.integer(field::kEvent);
        break;
      case OpKind::kEventRecord:
      case OpKind::kStreamWaitEvent:
        r.event = f.integer(field::kEvent);
        r.stream = f.integer(field::kStream);
        r.correlation = f.integer(field::kCorr, false, -1);
        break;
      case OpKind::kDeviceSync:
      case OpKind::kDeviceReset:
      case OpKind::kSetDevice:
        break;
      case OpKind::kCommInit:
        read_comm_init(f, r);
        break;
      case OpKind::kNccl:
        return read_collective(f, r);
      case OpKind::kGemm:
        read_gemm(object, f, r);
        break;
      case OpKind::kHostFunc:
        read_stream_and_corr(f, r);
        break;
      case OpKind::kGraphLaunch:
        read_stream_and_corr(f, r);
        read_api(f, r, false);
        break;
      case OpKind::kClockLock:
        r.m = f.integer(field::kMinMhz);
        r.n = f.integer(field::kMaxMhz);
        read_api(f, r, false);
        break;
      case OpKind::kUnsupported:
        read_api(f, r, true);
        break;
      case OpKind::kMisuse:
      case OpKind::kAssumption:
        read_api(f, r, true);
        r.detail = intern(f.string(field::kWhat, false));
        break;
    }
    return true;
  }

  void read_kernel(Fields& f, Record& r) {
    read_stream_and_corr(f, r);
    r.name = intern(f.string(field::kName));
    f.triple(field::kGrid, r.grid);
    f.triple(field::kBlock, r.block);
    r.shared_bytes = f.count(field::kShmem, false);
    // Optional: a library kernel's modelled work (cuFFT, cuSPARSE), timed by its roofline.
    r.flops = f.has(field::kFlops) ? f.number(field::kFlops) : 0.0;
    if (!f.failed() && !(r.flops >= 0.0 && r.flops < 1e30)) {
      f.fail(field::kFlops, fmt::format("{} is out of range", r.flops));
    }
    r.bytes = f.count(field::kBytes, false);
    if (const std::string_view launch_api = f.string(field::kApi, false); !launch_api.empty()) {
      r.detail = intern(launch_api);
    }
  }

  // memcpy (with its copy kind) and memset.
  void read_copy(Fields& f, Record& r) {
    read_stream_and_corr(f, r);
    if (r.op == OpKind::kMemcpy) {
      const std::string_view copy = f.string(field::kKind);
      if (!f.failed() && !parse_enum(copy, kCopyKinds, r.copy)) {
        f.fail(field::kKind, fmt::format("unknown copy kind '{}'", copy));
      }
    }
    r.bytes = f.count(field::kBytes);
    r.async = f.boolean(field::kAsync);
    read_api(f, r, false);
  }

  void read_allocation(Fields& f, Record& r) {
    const bool is_malloc = r.op == OpKind::kMalloc;
    f.integer(field::kPtr);
    r.bytes = f.count(field::kBytes);
    if (is_malloc) r.ok = f.boolean(field::kOk);
    r.used_bytes = f.count(field::kUsed, !is_malloc, -1);
    const std::string_view memory = f.string(field::kKind, is_malloc);
    if (!f.failed() && !memory.empty() && !parse_enum(memory, kMemoryKinds, r.memory)) {
      f.fail(field::kKind, fmt::format("unknown allocation kind '{}'", memory));
    }
    r.stream = f.integer(field::kStream, false, -1);
    r.correlation = f.integer(field::kCorr, false, -1);
    read_api(f, r, false);
  }

  void read_comm_init(Fields& f, Record& r) {
    r.detail = intern(f.string(field::kComm));
    r.comm_rank = f.small(field::kRank, true, -1, 0, kMaxRanks);
    r.comm_size = f.small(field::kSize, true, -1, 1, kMaxRanks);
    read_api(f, r, false);
    if (!f.failed() && r.comm_rank >= r.comm_size) {
      f.fail(field::kRank, fmt::format("rank {} is not below size {}", r.comm_rank, r.comm_size));
    }
  }

  // An nccl record; false (with a warning) for a collective the reader does not model.
  bool read_collective(Fields& f, Record& r) {
    read_stream_and_corr(f, r);
    const std::string_view coll = f.string(field::kColl);
    if (!f.failed() && !parse_enum(coll, kCollectives, r.collective)) {
      graph::add_warning(trace_.warnings, "unknown collective",
                         fmt::format("{}:{}: '{}' ignored", source_, r.line, coll));
      return false;
    }
    r.detail = intern(f.string(field::kComm));
    r.comm_rank = f.small(field::kCommRank, true, -1, 0, kMaxRanks);
    r.comm_size = f.small(field::kCommSize, true, -1, 1, kMaxRanks);
    r.count = f.count(field::kCount);
    r.dtype = dtype(f, field::kDtype);
    r.bytes = f.count(field::kBytes);
    r.peer = f.small(field::kPeer, is_p2p(r.collective), -1, -1, kMaxRanks);
    r.root = f.small(field::kRoot, false, -1, -1, kMaxRanks);
    r.sequence = f.count(field::kSeq, true, 0, std::numeric_limits<std::int64_t>::max());
    r.group = f.count(field::kGroup, false, 0, std::numeric_limits<std::int64_t>::max());
    read_api(f, r, false);
    if (!f.failed() && r.comm_rank >= r.comm_size) {
      f.fail(field::kCommRank,
             fmt::format("{} is not below comm_size {}", r.comm_rank, r.comm_size));
    }
    if (!f.failed() && is_p2p(r.collective) &&
        (r.peer < 0 || r.peer >= r.comm_size || r.peer == r.comm_rank)) {
      f.fail(field::kPeer,
             fmt::format("{} is not another rank of a communicator of {}", r.peer, r.comm_size));
    }
    return true;
  }

  void read_gemm(simdjson::dom::object object, Fields& f, Record& r) {
    read_stream_and_corr(f, r);
    read_api(f, r, true);
    r.m = f.count(field::kM);
    r.n = f.count(field::kN);
    r.k = f.count(field::kK);
    r.batch = f.count(field::kBatch, false, 1);
    r.dtype_a = dtype(f, field::kDtypeA);
    r.dtype_b = dtype(f, field::kDtypeB, false);
    r.dtype_c = dtype(f, field::kDtypeC, false);
    if (r.dtype_b == Dtype::kUnknown) r.dtype_b = r.dtype_a;
    if (r.dtype_c == Dtype::kUnknown) r.dtype_c = r.dtype_a;
    // A name ("32F_FAST_TF32") or the cublasComputeType_t value; anything else is ignored.
    simdjson::dom::element value;
    std::string_view text;
    std::int64_t number = 0;
    if (object.at_key(field::kCompute).get(value) == simdjson::SUCCESS) {
      if (value.get_string().get(text) == simdjson::SUCCESS) {
        r.compute = intern(text);
      } else if (value.get_int64().get(number) == simdjson::SUCCESS) {
        r.compute = intern(std::to_string(number));
      }
    }
    r.flops = f.has(field::kFlops) ? f.number(field::kFlops)
                                   : 2.0 * static_cast<double>(r.m) * static_cast<double>(r.n) *
                                         static_cast<double>(r.k) * static_cast<double>(r.batch);
    if (!f.failed() && !(r.flops >= 0.0 && r.flops < 1e30)) {
      f.fail(field::kFlops, fmt::format("{} is out of range", r.flops));
    }
    // Optional: the bytes a fused operation really moves (a cuDNN graph's matmul whose operands
    // or result stay on chip); absent, the estimator counts A, B and C once.
    r.bytes = f.count(field::kBytes, false, 0);
  }

  const std::string& source_;
  const TraceReadOptions& options_;
  ProcessTrace trace_;
  simdjson::dom::parser parser_;
  std::unordered_map<std::string, std::uint32_t> interned_;
};

}  // namespace

std::string_view to_string(OpKind kind) {
  for (const OpName& o : kOps) {
    if (o.kind == kind) return o.name;
  }
  return "?";
}

bool enqueues_gpu_work(OpKind kind) {
  return kind == OpKind::kKernel || kind == OpKind::kMemcpy || kind == OpKind::kMemset ||
         kind == OpKind::kNccl || kind == OpKind::kGemm || kind == OpKind::kHostFunc;
}

std::string_view to_string(CopyKind kind) { return kCopyKinds[static_cast<int>(kind)]; }
std::string_view to_string(MemoryKind kind) { return kMemoryKinds[static_cast<int>(kind)]; }
std::string_view to_string(Collective kind) { return kCollectives[static_cast<int>(kind)]; }

std::string_view to_string(Dtype dtype) {
  for (const DtypeName& d : kDtypes) {
    if (d.dtype == dtype) return d.name;
  }
  return "unknown";
}

int dtype_bytes(Dtype dtype) {
  for (const DtypeName& d : kDtypes) {
    if (d.dtype == dtype) return d.bytes;
  }
  return 0;
}

core::Result<ProcessTrace> parse_emulation_trace(std::string_view text, const std::string& source,
                                                 const TraceReadOptions& options) {
  return Parser(source, options).run(text);
}

core::Result<ProcessTrace> read_emulation_trace(const std::string& path,
                                                const TraceReadOptions& options) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) return core::Error{fmt::format("{}: cannot read ({})", path, ec.message())};
  const std::size_t max_bytes =
      options.max_file_bytes > 0 ? options.max_file_bytes : core::input_limits().max_trace_bytes;
  if (size > max_bytes) {
    return core::Error{
        fmt::format("{}: file is {} bytes, {}", path, size, core::limit_text(max_bytes))};
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return core::Error{fmt::format("{}: cannot open", path)};
  std::string text(static_cast<std::size_t>(size), '\0');
  in.read(text.data(), static_cast<std::streamsize>(size));
  if (static_cast<std::size_t>(in.gcount()) != size) {
    return core::Error{fmt::format("{}: short read", path)};
  }
  return parse_emulation_trace(text, std::filesystem::path(path).filename().string(), options);
}

core::Result<std::vector<ProcessTrace>> read_emulation_traces(
    const std::vector<std::string>& paths_or_dirs, const TraceReadOptions& options) {
  namespace fs = std::filesystem;
  if (paths_or_dirs.empty()) return core::Error{"emulation traces: no paths given"};
  std::vector<std::string> files;
  for (const std::string& path : paths_or_dirs) {
    std::error_code ec;
    if (fs::is_directory(path, ec)) {
      std::vector<std::string> found;
      for (const auto& entry : fs::directory_iterator(path, ec)) {
        const std::string name = entry.path().filename().string();
        if (entry.is_regular_file() && name.rfind("trace-", 0) == 0 && name.size() > 12 &&
            name.substr(name.size() - 6) == ".jsonl") {
          found.push_back(entry.path().string());
        }
      }
      if (ec) return core::Error{fmt::format("{}: cannot list ({})", path, ec.message())};
      if (found.empty()) {
        return core::Error{fmt::format("{}: no trace-*.jsonl files in this directory", path)};
      }
      std::sort(found.begin(), found.end());
      files.insert(files.end(), found.begin(), found.end());
    } else if (fs::exists(path, ec)) {
      files.push_back(path);
    } else {
      return core::Error{fmt::format("{}: no such file or directory", path)};
    }
  }
  std::vector<ProcessTrace> traces;
  traces.reserve(files.size());
  for (const std::string& file : files) {
    auto trace = read_emulation_trace(file, options);
    if (!trace) return trace.error();
    traces.push_back(std::move(*trace));
  }
  return traces;
}

}  // namespace powertrain::emulate
