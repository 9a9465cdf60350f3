// Process-wide emulator state (emulator.h): configuration from the environment, the clock,
// thread indexes, correlation ids, per-thread last error, unsupported/misuse reporting, the
// record builder used by the NCCL/cuBLAS parts, and the library's load/exit/fork hooks.
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <string>

#include "interposer/cudart_internal.h"
#include "interposer/trace_log.h"
#include "interposer/trace_schema.h"

namespace trace_schema = powertrain::trace_schema;

namespace powertrain::emu {
namespace detail {
namespace {

std::int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::atomic<std::int64_t> g_paused_ns{0};
std::atomic<int> g_next_thread{0};
std::atomic<std::int64_t> g_next_correlation{1};
constinit thread_local ThreadState t_state;
std::atomic<std::int64_t> g_last_issued_ns{0};  // the latest time now_ns() has returned

std::int64_t start_steady_ns() {
  static const std::int64_t start = steady_ns();
  return start;
}

// Environment parsing: a bad value is reported once and the default kept (never exit).
void warn_env(const char* name, const char* value, const char* expected) {
  std::fprintf(stderr, "powertrain-emu: ignoring %s=%s (expected %s)\n", name, value, expected);
}

void env_string(const char* name, std::string* out) {
  const char* value = std::getenv(name);
  if (value != nullptr && *value != '\0') *out = value;
}

template <typename Int>
void env_int(const char* name, Int* out, long long min, long long max) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return;
  char* end = nullptr;
  errno = 0;
  const long long parsed = std::strtoll(value, &end, 10);
  if (errno != 0 || end == value || *end != '\0' || parsed < min || parsed > max) {
    char expected[96];
    std::snprintf(expected, sizeof expected, "an integer in [%lld, %lld]", min, max);
    warn_env(name, value, expected);
    return;
  }
  *out = static_cast<Int>(parsed);
}

Config load_config() {
  Config c;
  env_string("POWERTRAIN_EMU_DIR", &c.dir);
  env_string("POWERTRAIN_EMU_GPU", &c.gpu);
  env_string("POWERTRAIN_EMU_GPU_NAME", &c.gpu_name);
  if (c.gpu_name.size() > 255) c.gpu_name.resize(255);  // cudaDeviceProp::name is char[256]
  env_string("POWERTRAIN_EMU_JOB", &c.job);
  env_int("POWERTRAIN_EMU_MEMORY_BYTES", &c.memory_bytes, 1 << 20, 1ll << 50);
  env_int("POWERTRAIN_EMU_BACKED_LIMIT", &c.backed_limit, 0, 1ll << 40);
  env_int("POWERTRAIN_EMU_RESERVED_BYTES", &c.reserved_bytes, 0, 1ll << 50);
  if (c.reserved_bytes >= c.memory_bytes) c.reserved_bytes = c.memory_bytes / 2;
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page = ::sysconf(_SC_PAGESIZE);
  c.host_memory_bytes =
      pages > 0 && page > 0 ? static_cast<std::int64_t>(pages) * page : (std::int64_t{1} << 40);
  env_int("POWERTRAIN_EMU_HOST_MEMORY_BYTES", &c.host_memory_bytes, 1 << 20, 1ll << 50);
  env_int("POWERTRAIN_EMU_SM_COUNT", &c.sm_count, 1, 100000);
  env_int("POWERTRAIN_EMU_CLOCK_MHZ", &c.clock_mhz, 1, 100000);
  env_int("POWERTRAIN_EMU_MIN_CLOCK_MHZ", &c.min_clock_mhz, 1, 100000);
  env_int("POWERTRAIN_EMU_CLOCK_STEP_MHZ", &c.clock_step_mhz, 1, 100000);
  env_int("POWERTRAIN_EMU_POWER_LIMIT_W", &c.power_limit_w, 1, 100000);
  if (c.min_clock_mhz > c.clock_mhz) c.min_clock_mhz = c.clock_mhz;
  env_int("POWERTRAIN_EMU_DEVICES", &c.devices, 1, 1024);
  env_int("POWERTRAIN_EMU_NODE_GPUS", &c.node_gpus, 1, 1024);
  env_int("POWERTRAIN_EMU_FIRST_NODE_GPU", &c.first_node_gpu, 0, 1023);
  if (c.node_gpus < c.first_node_gpu + c.devices) {  // absent or inconsistent: the process's own
    c.node_gpus = c.devices;
    c.first_node_gpu = 0;
  }
  env_int("RANK", &c.rank, 0, 1 << 24);
  env_int("WORLD_SIZE", &c.world_size, 1, 1 << 24);
  env_int("LOCAL_RANK", &c.local_rank, 0, 1 << 24);
  if (const char* cc = std::getenv("POWERTRAIN_EMU_CC"); cc != nullptr && *cc != '\0') {
    int major = 0;
    int minor = 0;
    char tail = 0;
    if (std::sscanf(cc, "%d.%d%c", &major, &minor, &tail) == 2 && major > 0 && major < 100 &&
        minor >= 0 && minor < 10) {
      c.cc_major = major;
      c.cc_minor = minor;
    } else {
      warn_env("POWERTRAIN_EMU_CC", cc, "MAJOR.MINOR, e.g. 9.0");
    }
  }
  return c;
}

std::string read_cmdline() {
  // /proc/self/cmdline: NUL-separated argv. Read with POSIX calls (no iostreams).
  std::string data;
  if (FILE* f = std::fopen("/proc/self/cmdline", "rb")) {
    char buffer[4096];
    std::size_t n = 0;
    while ((n = std::fread(buffer, 1, sizeof buffer, f)) > 0 && data.size() < (1 << 20)) {
      data.append(buffer, n);
    }
    std::fclose(f);
  }
  return data;
}

std::int64_t unix_ns_at_start() {
  static const std::int64_t value = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::system_clock::now().time_since_epoch())
                                        .count() -
                                    (steady_ns() - start_steady_ns());
  return value;
}

struct Reports {
  std::mutex mutex;
  std::set<std::string, std::less<>> unsupported_named;  // names (and assumptions) printed
  std::int64_t misuse_count = 0;
};
Reports& reports() {
  static Reports* r = new Reports;  // never destroyed (used during exit)
  return *r;
}
constexpr std::int64_t kMisusePrintLimit = 20;

void text_record(std::string_view op, std::string_view key, std::string_view value,
                 std::string_view key2 = {}, std::string_view value2 = {}) {
  RecordBuilder r = begin_record(op, now_ns(), current_device());
  r.field(key, value);
  if (!key2.empty()) r.field(key2, value2);
  end_record(r);
}

// A forked child's trace names its parent (the analysis keeps one process per rank).
std::atomic<long> g_forked_from{0};

void before_fork() { lock_for_fork(); }
void after_fork_parent() { unlock_after_fork(); }
void after_fork_child() {
  g_forked_from.store(static_cast<long>(::getppid()));
  reset_error_log_after_fork();
  reset_after_fork();
  unlock_after_fork();
}

}  // namespace

const Config& config() {
  static const Config* c = new Config(load_config());
  return *c;
}

ThreadState& thread_state() { return t_state; }

void add_paused_ns(std::int64_t ns) { g_paused_ns.fetch_add(ns, std::memory_order_relaxed); }

cudaError_t misuse(std::string_view api, cudaError_t error, std::string_view what) {
  report_misuse(api, what);
  return fail(error);
}

std::string pointer_text(const void* pointer) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%p", pointer);
  return buffer;
}

int unsupported_stub(const char* api) {
  const int error = report_unsupported(api);
  set_last_error(error);
  return error;
}

std::string process_line_json() {
  const Config& c = config();
  std::string out = "{\"op\":\"process\",\"version\":1";
  out += ",\"pid\":" + std::to_string(::getpid());
  if (const long parent = g_forked_from.load(); parent != 0) {
    out += ",\"forked_from\":" + std::to_string(parent);
  }
  out += ",\"rank\":" + std::to_string(c.rank);
  out += ",\"world_size\":" + std::to_string(c.world_size);
  out += ",\"local_rank\":" + std::to_string(c.local_rank);
  out += ",\"devices\":" + std::to_string(c.devices);
  out += ",\"gpu\":";
  append_json_string(out, c.gpu);
  out += ",\"gpu_name\":";
  append_json_string(out, c.gpu_name);
  out += ",\"memory_bytes\":" + std::to_string(c.memory_bytes);
  out += ",\"job\":";
  append_json_string(out, c.job);
  out += ",\"abi\":" + std::to_string(cudart_abi());
  const std::string cmdline = read_cmdline();
  std::string program;
  std::string argv = "[";
  std::size_t begin = 0;
  while (begin < cmdline.size()) {
    std::size_t end = cmdline.find('\0', begin);
    if (end == std::string::npos) end = cmdline.size();
    const std::string_view arg(cmdline.data() + begin, end - begin);
    if (argv.size() > 1) argv += ',';
    append_json_string(argv, arg);
    if (program.empty()) program = arg;
    begin = end + 1;
  }
  argv += ']';
  out += ",\"program\":";
  append_json_string(out, program);
  out += ",\"argv\":" + argv;
  out += ",\"start_unix_ns\":" + std::to_string(unix_ns_at_start());
  out += '}';
  return out;
}

std::string exit_line_fields() {
  std::string out = ",\"peak_used\":[";
  const std::vector<std::int64_t> peaks = peak_used_per_device();
  for (std::size_t i = 0; i < peaks.size(); ++i) {
    if (i > 0) out += ',';
    out += std::to_string(peaks[i]);
  }
  out += "],\"used\":[";
  for (int d = 0; d < config().devices; ++d) {
    if (d > 0) out += ',';
    out += std::to_string(used_bytes(d));
  }
  out += ']';
  std::int64_t misuses = 0;
  {
    std::lock_guard<std::mutex> lock(reports().mutex);
    misuses = reports().misuse_count;
  }
  out += ",\"misuse\":" + std::to_string(misuses);
  return out;
}

}  // namespace detail

using detail::t_state;

std::int64_t now_ns() {
  std::int64_t value = detail::steady_ns() - detail::start_steady_ns() -
                       detail::g_paused_ns.load(std::memory_order_relaxed);
  // Excluding pauses (the writer's, host computation) can step the clock back below a time
  // another thread has already been given; the predictor orders records by time across threads
  // (an event record before the wait on it), so the clock never goes below any time issued.
  std::int64_t issued = detail::g_last_issued_ns.load(std::memory_order_relaxed);
  while (true) {
    if (value <= issued) return issued;
    if (detail::g_last_issued_ns.compare_exchange_weak(issued, value, std::memory_order_relaxed)) {
      return value;
    }
  }
}

HostComputeScope::HostComputeScope() : start_ns_(detail::steady_ns()) {}
HostComputeScope::~HostComputeScope() { detail::add_paused_ns(detail::steady_ns() - start_ns_); }

int thread_index() {
  if (t_state.index < 0) {
    t_state.index = detail::g_next_thread.fetch_add(1, std::memory_order_relaxed);
  }
  return t_state.index;
}

int current_device() { return t_state.device; }

int device_count() { return detail::config().devices; }

std::int64_t stream_id(const void* stream, bool per_thread, int* device) {
  const detail::StreamRef ref = detail::resolve_stream(stream, per_thread);
  if (device != nullptr) *device = ref.device;
  return ref.id;
}

std::int64_t next_correlation() {
  return detail::g_next_correlation.fetch_add(1, std::memory_order_relaxed);
}

void set_last_error(int cuda_error) {
  if (cuda_error != 0) t_state.last_error = cuda_error;
}

void RecordBuilder::field(std::string_view key, std::int64_t value) {
  text_ += ",\"";
  text_ += key;
  text_ += "\":";
  text_ += std::to_string(value);
}

void RecordBuilder::field(std::string_view key, double value) {
  char buffer[40];
  std::snprintf(buffer, sizeof buffer, "%.17g", value);
  text_ += ",\"";
  text_ += key;
  text_ += "\":";
  // JSON has no NaN/Inf: write null instead of an unparsable token.
  const bool finite = value == value && value - value == 0;
  text_ += finite ? buffer : "null";
}

void RecordBuilder::field(std::string_view key, std::string_view value) {
  text_ += ",\"";
  text_ += key;
  text_ += "\":";
  detail::append_json_string(text_, value);
}

void RecordBuilder::field_bool(std::string_view key, bool value) {
  text_ += ",\"";
  text_ += key;
  text_ += "\":";
  text_ += value ? "true" : "false";
}

void RecordBuilder::raw(std::string_view key, std::string_view json) {
  text_ += ",\"";
  text_ += key;
  text_ += "\":";
  text_ += json;
}

RecordBuilder begin_record(std::string_view op, std::int64_t start_ns, int device) {
  RecordBuilder r;
  r.start_ns_ = start_ns;
  r.text_.reserve(256);
  r.text_ += "{\"op\":";
  detail::append_json_string(r.text_, op);
  r.field("t", start_ns);
  r.field("tid", static_cast<std::int64_t>(thread_index()));
  r.field("dev", static_cast<std::int64_t>(device));
  return r;
}

RecordBuilder begin_work(std::string_view op, std::int64_t start_ns) {
  RecordBuilder r;
  r.start_ns_ = start_ns;
  r.text_.reserve(256);
  r.text_ += "\"op\":";
  detail::append_json_string(r.text_, op);
  return r;
}

void end_work(RecordBuilder& record, int device, std::int64_t stream, std::int64_t corr) {
  detail::Record r = detail::make_record(detail::Op::kWork, record.start_ns_, device);
  r.a[0] = stream;
  r.a[1] = corr != 0 ? corr : next_correlation();
  r.text = std::move(record.text_);
  record.text_.clear();
  detail::append(std::move(r));
}

void end_record(RecordBuilder& record) {
  record.field("dt", now_ns() - record.start_ns_);
  record.text_ += '}';
  detail::Record r;
  r.op = detail::Op::kText;
  r.text = std::move(record.text_);
  record.text_.clear();
  detail::append(std::move(r));
}

namespace {
// What the stub of `api` returns, for its message: the libraries' stubs return their own
// "unsupported" status (cublas_nccl_stubs.cc), the runtime's return cudaErrorNotSupported.
const char* unsupported_return_text(std::string_view api) {
  // "NAME (what)": a call that succeeds but whose effect the emulation does not model.
  if (!api.empty() && api.back() == ')') {
    return "success, but this effect is not modelled (the trace and the prediction lack it)";
  }
  const auto ends_with = [&](std::string_view tail) {
    return api.size() >= tail.size() && api.substr(api.size() - tail.size()) == tail;
  };
  const bool library = api.rfind("cublas", 0) == 0 || api.rfind("nccl", 0) == 0 ||
                       api.rfind("pnccl", 0) == 0 || api.rfind("cudnn", 0) == 0 ||
                       api.rfind("cusparse", 0) == 0;
  if (library && (ends_with("String") || ends_with("Name") || ends_with("GetLastError"))) {
    return "a placeholder string";
  }
  if (api.rfind("cublas", 0) == 0) return "CUBLAS_STATUS_NOT_SUPPORTED (15)";
  if (api.rfind("curand", 0) == 0) return "CURAND_STATUS_INTERNAL_ERROR (999)";
  if (api.rfind("cudnn", 0) == 0) return "CUDNN_STATUS_NOT_SUPPORTED (3000)";
  if (api.rfind("cufft", 0) == 0) return "CUFFT_NOT_SUPPORTED (16)";
  if (api.rfind("cusparse", 0) == 0) return "CUSPARSE_STATUS_NOT_SUPPORTED (10)";
  if (api.rfind("cusolver", 0) == 0) return "CUSOLVER_STATUS_NOT_SUPPORTED (9)";
  if (api.rfind("cupti", 0) == 0) return "CUPTI_ERROR_NOT_SUPPORTED (27): no profiler";
  if (api.rfind("cuda", 0) != 0 && api.rfind("cu", 0) == 0) return "CUDA_ERROR_NOT_SUPPORTED (801)";
  if (api.rfind("nccl", 0) == 0 || api.rfind("pnccl", 0) == 0) return "ncclInvalidUsage (5)";
  if (api.rfind("nvml", 0) == 0) {
    return "NVML_ERROR_NOT_SUPPORTED (3): an emulated GPU has no sensors, energy is modelled";
  }
  return "cudaErrorNotSupported (801)";
}
}  // namespace

int report_unsupported(std::string_view api) {
  bool first = false;
  {
    std::lock_guard<std::mutex> lock(detail::reports().mutex);
    first = detail::reports().unsupported_named.emplace(api).second;
  }
  if (first) {
    std::fprintf(stderr,
                 "powertrain-emu: %.*s is not supported by the GPU emulator; it returns %s and "
                 "is recorded in the trace\n",
                 static_cast<int>(api.size()), api.data(), unsupported_return_text(api));
  }
  detail::text_record(trace_schema::op::kUnsupported, trace_schema::field::kApi, api);
  detail::log_error_message(std::string(api) +
                            " is not supported by the GPU emulator: it returns " +
                            unsupported_return_text(api));
  return 801;  // cudaErrorNotSupported
}

void report_misuse(std::string_view api, std::string_view what) {
  std::int64_t count = 0;
  {
    std::lock_guard<std::mutex> lock(detail::reports().mutex);
    count = ++detail::reports().misuse_count;
  }
  if (count <= detail::kMisusePrintLimit) {
    std::fprintf(
        stderr, "powertrain-emu: %.*s: %.*s%s\n", static_cast<int>(api.size()), api.data(),
        static_cast<int>(what.size()), what.data(),
        count == detail::kMisusePrintLimit ? " (further misuse is only in the trace)" : "");
  }
  detail::text_record(trace_schema::op::kMisuse, trace_schema::field::kApi, api,
                      trace_schema::field::kWhat, what);
  detail::log_error_message(std::string(api) + ": " + std::string(what));
}

void report_assumption(std::string_view api, std::string_view what) {
  const std::string text = std::string(api) + ": " + std::string(what);
  bool first = false;
  {
    std::lock_guard<std::mutex> lock(detail::reports().mutex);
    first = detail::reports().unsupported_named.emplace("assumption " + text).second;
  }
  if (first) std::fprintf(stderr, "powertrain-emu: %s\n", text.c_str());
  detail::text_record(trace_schema::op::kAssumption, trace_schema::field::kApi, api,
                      trace_schema::field::kWhat, what);
}

void flush() { detail::write_log(false); }

namespace detail {
void check_static_runtime();  // static_guard.cc

namespace {
__attribute__((constructor)) void on_load() {
  start_steady_ns();
  unix_ns_at_start();
  config();
  pthread_atfork(before_fork, after_fork_parent, after_fork_child);
  check_static_runtime();
}

// ELF destructors run after the program's atexit handlers (which unregister fat binaries and
// may free memory), so the exit line really is last.
__attribute__((destructor)) void on_unload() { write_log(true); }
}  // namespace
}  // namespace detail

}  // namespace powertrain::emu
