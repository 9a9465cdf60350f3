// The interposer's trace log: records are kept in memory and written as JSON lines to
// $POWERTRAIN_EMU_DIR/trace-<pid>.jsonl in chunks and at exit. Formatting happens here, off the
// intercepted call's fast path. Uses POSIX I/O only (no iostreams: the library must not depend
// on anything the host program might not have initialised).
#include "interposer/trace_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <utility>
#include <vector>

#include "interposer/cudart_internal.h"

namespace powertrain::emu::detail {
namespace {

// Records kept before a chunk is written (~10 MB); bounds memory of long-running programs.
constexpr std::size_t kChunkRecords = 1 << 16;

struct LogState {
  std::mutex records_mutex;  // guards pending, closed, dropped
  std::vector<Record> pending;
  bool closed = false;  // exit line written
  std::int64_t dropped = 0;

  std::mutex write_mutex;  // serialises formatting + writing so chunks stay in order
  bool header_written = false;
  bool warned = false;
  std::int64_t written = 0;
};

LogState& state() {
  static LogState* log = new LogState;  // never destroyed: records arrive during exit
  return *log;
}

void put_int(std::string& out, std::int64_t value) {
  char buffer[24];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  out.append(buffer, result.ptr);
}

// Appends a string literal without strlen (formatting is most of an intercepted call's cost).
template <std::size_t N>
void put_literal(std::string& out, const char (&text)[N]) {
  out.append(text, N - 1);
}

// `,"key":` as one literal.
#define PT_KEY(name) ",\"" name "\":"

const char* op_name(Op op) {
  switch (op) {
    case Op::kText:
      return "";
    case Op::kKernel:
      return "kernel";
    case Op::kMemcpy:
      return "memcpy";
    case Op::kMemset:
      return "memset";
    case Op::kMalloc:
      return "malloc";
    case Op::kFree:
      return "free";
    case Op::kStreamCreate:
      return "stream_create";
    case Op::kStreamDestroy:
      return "stream_destroy";
    case Op::kEventCreate:
      return "event_create";
    case Op::kEventDestroy:
      return "event_destroy";
    case Op::kEventRecord:
      return "event_record";
    case Op::kStreamWaitEvent:
      return "stream_wait_event";
    case Op::kStreamSync:
      return "stream_sync";
    case Op::kEventSync:
      return "event_sync";
    case Op::kDeviceSync:
      return "device_sync";
    case Op::kSetDevice:
      return "set_device";
    case Op::kHostFunc:
      return "host_func";
    case Op::kWork:
      return "";
  }
  return "unknown";
}

void format(const Record& r, std::string& out) {
  if (r.op == Op::kText) {
    out += r.text;
    out += '\n';
    return;
  }
  if (r.op == Op::kWork) {
    out += '{';
    out += r.text;
    put_literal(out, PT_KEY("t"));
    put_int(out, r.t);
    put_literal(out, PT_KEY("dt"));
    put_int(out, r.dt);
    put_literal(out, PT_KEY("tid"));
    put_int(out, r.tid);
    put_literal(out, PT_KEY("dev"));
    put_int(out, r.dev);
    if (r.graph != 0) {
      put_literal(out, PT_KEY("graph"));
      put_int(out, r.graph);
    }
    put_literal(out, PT_KEY("stream"));
    put_int(out, r.a[0]);
    put_literal(out, PT_KEY("corr"));
    put_int(out, r.a[1]);
    put_literal(out, "}\n");
    return;
  }
  put_literal(out, "{\"op\":\"");
  out += op_name(r.op);
  put_literal(out, "\"" PT_KEY("t"));
  put_int(out, r.t);
  put_literal(out, PT_KEY("dt"));
  put_int(out, r.dt);
  put_literal(out, PT_KEY("tid"));
  put_int(out, r.tid);
  put_literal(out, PT_KEY("dev"));
  put_int(out, r.dev);
  if (r.graph != 0) {
    put_literal(out, PT_KEY("graph"));
    put_int(out, r.graph);
  }
  switch (r.op) {
    case Op::kKernel:
      put_literal(out, PT_KEY("stream"));
      put_int(out, r.a[0]);
      put_literal(out, PT_KEY("corr"));
      put_int(out, r.a[1]);
      put_literal(out, PT_KEY("name"));
      append_kernel_json_name(out, r.a[2]);
      put_literal(out, PT_KEY("grid") "[");
      put_int(out, r.g[0]);
      out += ',';
      put_int(out, r.g[1]);
      out += ',';
      put_int(out, r.g[2]);
      put_literal(out, "]" PT_KEY("block") "[");
      put_int(out, r.g[3]);
      out += ',';
      put_int(out, r.g[4]);
      out += ',';
      put_int(out, r.g[5]);
      put_literal(out, "]" PT_KEY("shmem"));
      put_int(out, r.a[3]);
      break;
    case Op::kMemcpy:
      put_literal(out, PT_KEY("stream"));
      put_int(out, r.a[0]);
      put_literal(out, PT_KEY("corr"));
      put_int(out, r.a[1]);
      put_literal(out, PT_KEY("kind") "\"");
      out += copy_kind_name(static_cast<CopyKind>(r.sub));
      put_literal(out, "\"" PT_KEY("bytes"));
      put_int(out, r.a[2]);
      out += r.flag ? PT_KEY("async") "true" : PT_KEY("async") "false";
      break;
    case Op::kMemset:
      put_literal(out, PT_KEY("stream"));
      put_int(out, r.a[0]);
      put_literal(out, PT_KEY("corr"));
      put_int(out, r.a[1]);
      put_literal(out, PT_KEY("bytes"));
      put_int(out, r.a[2]);
      out += r.flag ? PT_KEY("async") "true" : PT_KEY("async") "false";
      break;
    case Op::kMalloc:
    case Op::kFree:
      put_literal(out, PT_KEY("ptr"));
      put_int(out, r.a[0]);
      put_literal(out, PT_KEY("bytes"));
      put_int(out, r.a[1]);
      if (r.op == Op::kMalloc) out += r.flag ? PT_KEY("ok") "true" : PT_KEY("ok") "false";
      put_literal(out, PT_KEY("kind") "\"");
      out += alloc_kind_name(static_cast<AllocKind>(r.sub));
      put_literal(out, "\"" PT_KEY("used"));
      put_int(out, r.a[2]);
      if (r.a[3] != kInvalidStream) {
        put_literal(out, PT_KEY("stream"));
        put_int(out, r.a[3]);
        put_literal(out, PT_KEY("corr"));
        put_int(out, r.a[4]);
      }
      break;
    case Op::kStreamCreate:
      put_literal(out, PT_KEY("stream"));
      put_int(out, r.a[0]);
      put_literal(out, PT_KEY("flags"));
      put_int(out, r.a[1]);
      put_literal(out, PT_KEY("priority"));
      put_int(out, r.a[2]);
      break;
    case Op::kStreamDestroy:
    case Op::kStreamSync:
      put_literal(out, PT_KEY("stream"));
      put_int(out, r.a[0]);
      break;
    case Op::kEventCreate:
      put_literal(out, PT_KEY("event"));
      put_int(out, r.a[0]);
      put_literal(out, PT_KEY("flags"));
      put_int(out, r.a[1]);
      break;
    case Op::kEventDestroy:
    case Op::kEventSync:
      put_literal(out, PT_KEY("event"));
      put_int(out, r.a[0]);
      break;
    case Op::kEventRecord:
    case Op::kStreamWaitEvent:
      put_literal(out, PT_KEY("stream"));
      put_int(out, r.a[0]);
      put_literal(out, PT_KEY("event"));
      put_int(out, r.a[1]);
      put_literal(out, PT_KEY("corr"));
      put_int(out, r.a[2]);
      break;
    case Op::kHostFunc:
      put_literal(out, PT_KEY("stream"));
      put_int(out, r.a[0]);
      put_literal(out, PT_KEY("corr"));
      put_int(out, r.a[1]);
      break;
    case Op::kDeviceSync:
    case Op::kSetDevice:
    case Op::kText:
    case Op::kWork:
      break;
  }
  if (r.api != nullptr) {
    put_literal(out, PT_KEY("api") "\"");
    out += r.api;  // exported API names need no escaping
    out += '"';
  }
  put_literal(out, "}\n");
}

void make_directories(const std::string& dir) {
  // mkdir -p: create each prefix; EEXIST is fine, other errors surface when opening the file.
  for (std::size_t i = 1; i <= dir.size(); ++i) {
    if (i == dir.size() || dir[i] == '/') ::mkdir(dir.substr(0, i).c_str(), 0777);
  }
}

bool write_all(int fd, const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

// Formats `records` (and the process/exit lines) and appends them to the trace file. Called
// with write_mutex held.
void write_chunk(LogState& log, std::vector<Record>& records, bool final) {
  std::string text;
  text.reserve(records.size() * 256 + 1024);
  if (!log.header_written) {
    text += process_line_json();
    text += '\n';
  }
  for (const Record& record : records) format(record, text);
  log.written += static_cast<std::int64_t>(records.size());
  if (final) {
    put_literal(text, "{\"op\":\"exit\"" PT_KEY("t"));
    put_int(text, now_ns());
    put_literal(text, PT_KEY("records"));
    put_int(text, log.written);
    text += exit_line_fields();
    text += "}\n";
  }
  const std::string dir = config().dir;
  // POWERTRAIN_EMU_DIR=/dev/null formats everything and keeps nothing (overhead measurements).
  const bool discard = dir == "/dev/null";
  if (!discard) make_directories(dir);
  const std::string path = discard ? dir : dir + "/trace-" + std::to_string(::getpid()) + ".jsonl";
  const int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (log.header_written ? O_APPEND : O_TRUNC);
  const int fd = ::open(path.c_str(), flags, 0644);
  bool ok = fd >= 0 && write_all(fd, text);
  const int saved_errno = errno;
  if (fd >= 0) ok = (::close(fd) == 0) && ok;
  if (!ok && !log.warned) {
    log.warned = true;
    std::fprintf(stderr, "powertrain-emu: cannot write the trace %s: %s (records are lost)\n",
                 path.c_str(), std::strerror(saved_errno));
  }
  log.header_written = true;
}

std::int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

const char* copy_kind_name(CopyKind kind) {
  switch (kind) {
    case CopyKind::kHtoD:
      return "HtoD";
    case CopyKind::kDtoH:
      return "DtoH";
    case CopyKind::kDtoD:
      return "DtoD";
    case CopyKind::kHtoH:
      return "HtoH";
    case CopyKind::kPtoP:
      return "PtoP";
  }
  return "?";
}

const char* alloc_kind_name(AllocKind kind) {
  switch (kind) {
    case AllocKind::kDevice:
      return "device";
    case AllocKind::kHost:
      return "host";
    case AllocKind::kManaged:
      return "managed";
    case AllocKind::kAsync:
      return "async";
  }
  return "?";
}

Record make_record(Op op, std::int64_t start_ns, int device) {
  Record record;
  record.op = op;
  record.t = start_ns;
  record.dt = now_ns() - start_ns;
  record.tid = thread_index();
  record.dev = device;
  return record;
}

void append_json_string(std::string& out, std::string_view text) {
  out += '"';
  std::size_t clean = 0;  // start of the run of characters that need no escaping
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    const auto u = static_cast<unsigned char>(c);
    if (c != '"' && c != '\\' && u >= 0x20) continue;
    out.append(text.data() + clean, i - clean);
    clean = i + 1;
    if (u < 0x20) {
      char buffer[8];
      std::snprintf(buffer, sizeof buffer, "\\u%04x", u);
      out += buffer;
    } else {
      out += '\\';
      out += c;
    }
  }
  out.append(text.data() + clean, text.size() - clean);
  out += '"';
}

void append(Record&& record) {
  if (g_capturing_streams.load(std::memory_order_relaxed) > 0 && capture_record(record)) return;
  LogState& log = state();
  std::vector<Record> chunk;
  {
    std::lock_guard<std::mutex> lock(log.records_mutex);
    if (log.closed) {
      ++log.dropped;
      return;
    }
    if (log.pending.capacity() == 0) log.pending.reserve(1024);
    log.pending.push_back(std::move(record));
    if (log.pending.size() < kChunkRecords) return;
    chunk.swap(log.pending);
    log.pending.reserve(kChunkRecords);
  }
  // Write the full chunk outside the records lock; its duration is not the program's time.
  const std::int64_t start = steady_ns();
  {
    std::lock_guard<std::mutex> lock(log.write_mutex);
    write_chunk(log, chunk, false);
  }
  add_paused_ns(steady_ns() - start);
}

void write_log(bool final) {
  LogState& log = state();
  std::lock_guard<std::mutex> write_lock(log.write_mutex);
  std::vector<Record> chunk;
  {
    std::lock_guard<std::mutex> lock(log.records_mutex);
    if (log.closed) return;
    chunk.swap(log.pending);
    if (final) log.closed = true;
  }
  // Nothing new to write; and a process that never called CUDA (a shell or a compiler that
  // inherited LD_PRELOAD) leaves no trace file at all.
  if (chunk.empty() && (!final || !log.header_written)) return;
  write_chunk(log, chunk, final);
}

void reset_after_fork() {
  // The child gets a fresh file; the mutexes were taken by the fork handlers in the parent's
  // forking thread (the child's only thread), so they are released here.
  LogState& log = state();
  log.pending.clear();
  log.closed = false;
  log.dropped = 0;
  log.header_written = false;
  log.written = 0;
}

void lock_for_fork() {
  state().write_mutex.lock();
  state().records_mutex.lock();
}

void unlock_after_fork() {
  state().records_mutex.unlock();
  state().write_mutex.unlock();
}

}  // namespace powertrain::emu::detail
